"""The schema registry's rates: registrations/s (new Avro schemas, each checked for BACKWARD compatibility with
its subject's previous version and written to `_schemas`), lookups/s by id (GET /schemas/ids/{id}, what a
deserializer asks) and by schema (POST /subjects/{s}, what a serializer asks), over keep-alive HTTP
connections from `--clients` threads, against one `odradek schema-registry` process on one broker.

    python bench/schema_registry.py                    # 500 registrations, 5,000 lookups of each kind, 4 clients
    python bench/schema_registry.py --schemas 2000 --lookups 20000 --clients 8
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.schema_registry.conftest import wait_primary  # noqa: E402
from tests.schema_registry.helpers import CONTENT_TYPE, Registry  # noqa: E402

from bench.common import running_broker  # noqa: E402


def schema(subject: int, version: int) -> str:
    fields = [{"name": "id", "type": "long"}] + [
        {"name": f"f{v}", "type": "string", "default": ""} for v in range(1, version + 1)]
    return json.dumps({"type": "record", "name": f"Rec{subject}", "namespace": "bench", "fields": fields})


def rate(count: int, clients: int, work: Callable[[http.client.HTTPConnection, int], None], port: int) -> float:
    """Requests per second of `count` calls of `work(conn, i)` shared by `clients` threads."""
    def run(first: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for i in range(first, count, clients):
            work(conn, i)
        conn.close()

    threads = [threading.Thread(target=run, args=(c,)) for c in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return count / (time.perf_counter() - start)


def call(conn: http.client.HTTPConnection, method: str, path: str, body: object | None = None) -> object:
    conn.request(method, path, body=None if body is None else json.dumps(body),
                 headers={"Content-Type": CONTENT_TYPE})
    resp = conn.getresponse()
    data = resp.read()
    if resp.status != 200:
        raise RuntimeError(f"{method} {path}: {resp.status} {data[:200]!r}")
    return json.loads(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--schemas", type=int, default=500, help="registrations (50 subjects, versions in turn)")
    parser.add_argument("--lookups", type=int, default=5000, help="lookups of each kind")
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    subjects = 50
    with tempfile.TemporaryDirectory(prefix="bench-sr-") as tmp, \
            running_broker(Path(tmp) / "broker", {"group.initial.rebalance.delay.ms": "0"}) as broker:
        registry = Registry(Path(tmp) / "registry", broker).start()
        try:
            wait_primary(registry)
            ids: dict[int, int] = {}

            def register(conn: http.client.HTTPConnection, i: int) -> None:
                # client c registers subjects c, c+clients, ...: each subject's versions in order
                subject, version = i % subjects, i // subjects + 1
                answer = call(conn, "POST", f"/subjects/bench-{subject}/versions",
                              {"schema": schema(subject, version)})
                ids[i] = answer["id"]  # type: ignore[index]

            # one client per subject group keeps each subject's versions in order
            reg_clients = min(args.clients, subjects)
            registrations = rate(args.schemas, reg_clients, register, registry.port) \
                if subjects % reg_clients == 0 else rate(args.schemas, 1, register, registry.port)
            known = sorted(ids.items())

            def by_id(conn: http.client.HTTPConnection, i: int) -> None:
                call(conn, "GET", f"/schemas/ids/{known[i % len(known)][1]}")

            def by_schema(conn: http.client.HTTPConnection, i: int) -> None:
                n = known[i % len(known)][0]
                call(conn, "POST", f"/subjects/bench-{n % subjects}", {"schema": schema(n % subjects,
                                                                                          n // subjects + 1)})

            id_rate = rate(args.lookups, args.clients, by_id, registry.port)
            schema_rate = rate(args.lookups, args.clients, by_schema, registry.port)
        finally:
            registry.stop()
    print(f"registrations: {registrations:,.0f}/s ({args.schemas} new Avro schemas, BACKWARD-checked, "
          f"{reg_clients} clients)")
    print(f"lookups by id (GET /schemas/ids/N): {id_rate:,.0f}/s ({args.lookups}, {args.clients} clients)")
    print(f"lookups by schema (POST /subjects/S): {schema_rate:,.0f}/s ({args.lookups}, {args.clients} clients)")


if __name__ == "__main__":
    main()
