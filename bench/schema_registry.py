"""The schema registry's rates: registrations/s (new Avro schemas, each checked for BACKWARD compatibility with
its subject's previous version and written to `_schemas`), lookups/s by id (GET /schemas/ids/{id}, what a
deserializer asks) and by schema (POST /subjects/{s}, what a serializer asks), over keep-alive HTTP
connections from `--clients` threads, against one `odradek schema-registry` process on one broker.

Then the cost of Schema ID Validation on produce: the broker asks that registry (`confluent.schema.registry.url`)
and one producer (confluent-kafka, linger.ms=5, acks=all) writes the same Avro-serialized records (wire format,
a registered id) to a topic without validation and to one with `confluent.value.schema.validation=true`, in
alternating rounds; each round's on/off ratio of records/s is printed, and their median.

    python bench/schema_registry.py                    # 500 registrations, 5,000 lookups of each kind, 4 clients
    python bench/schema_registry.py --schemas 2000 --lookups 20000 --clients 8
    python bench/schema_registry.py --records 500000 --rounds 8 --compression lz4
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from tests.harness import free_port  # noqa: E402
from tests.schema_registry.conftest import wait_primary  # noqa: E402
from tests.schema_registry.helpers import CONTENT_TYPE, Registry  # noqa: E402

from bench.common import running_broker, send  # noqa: E402


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


def produce_rate(bootstrap: str, topic: str, values: list[bytes], count: int, compression: str) -> float:
    """Records/s of `count` records (the values in turn) produced with acks=all and waited for."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all", "compression.type": compression,
                  "queue.buffering.max.messages": 200_000})
    failed: list[str] = []

    def delivered(err: object, _msg: object) -> None:
        if err is not None:
            failed.append(str(err))

    start = time.perf_counter()
    for i in range(count):
        send(p, topic, values[i % len(values)], on_delivery=delivered)
    if p.flush(120) != 0 or failed:
        raise RuntimeError(f"produce to {topic} failed: {failed[:3]}")
    return count / (time.perf_counter() - start)


def validation_cost(bootstrap: str, registry_port: int, records: int, rounds: int,
                    compression: str) -> list[tuple[float, float]]:
    """(records/s without validation, with it) of each alternating round."""
    plain, validated = "bench-plain", "bench-validated"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(plain, 1, 1), NewTopic(
            validated, 1, 1, config={"confluent.value.schema.validation": "true"})]).values():
        future.result(30)
    conn = http.client.HTTPConnection("127.0.0.1", registry_port, timeout=30)
    user = json.dumps({"type": "record", "name": "User", "namespace": "bench",
                       "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"},
                                  {"name": "email", "type": "string"}]})
    schema_id = int(call(conn, "POST", f"/subjects/{validated}-value/versions", {"schema": user})["id"])  # type: ignore[index]
    conn.close()
    # ~100-byte values as an Avro serializer writes them: magic byte 0, the id, then the record
    values = [b"\x00" + struct.pack(">i", schema_id) + (f"{i:08d}" * 12).encode() for i in range(100)]
    produce_rate(bootstrap, plain, values, 5000, compression)  # warm both paths (connections, the id cache)
    produce_rate(bootstrap, validated, values, 5000, compression)
    out = []
    for r in range(rounds):
        order = (plain, validated) if r % 2 == 0 else (validated, plain)
        rates = {topic: produce_rate(bootstrap, topic, values, records, compression) for topic in order}
        out.append((rates[plain], rates[validated]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--schemas", type=int, default=500, help="registrations (50 subjects, versions in turn)")
    parser.add_argument("--lookups", type=int, default=5000, help="lookups of each kind")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--records", type=int, default=200_000, help="records per topic per produce round")
    parser.add_argument("--rounds", type=int, default=6, help="produce rounds (each: both topics, in turn)")
    parser.add_argument("--compression", default="none", help="the producer's compression.type")
    args = parser.parse_args()
    subjects = 50
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="bench-sr-") as tmp:
        registry = Registry(Path(tmp) / "registry", f"127.0.0.1:{port}")
        with running_broker(Path(tmp) / "broker", {"group.initial.rebalance.delay.ms": "0",
                                                   "confluent.schema.registry.url": registry.url}, port) as broker:
            registry.start()
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
                rounds = validation_cost(broker.bootstrap, registry.port, args.records, args.rounds,
                                         args.compression)
            finally:
                registry.stop()
    print(f"registrations: {registrations:,.0f}/s ({args.schemas} new Avro schemas, BACKWARD-checked, "
          f"{reg_clients} clients)")
    print(f"lookups by id (GET /schemas/ids/N): {id_rate:,.0f}/s ({args.lookups}, {args.clients} clients)")
    print(f"lookups by schema (POST /subjects/S): {schema_rate:,.0f}/s ({args.lookups}, {args.clients} clients)")
    print(f"produce, {args.records:,} records of ~100 bytes per topic and round, compression {args.compression}:")
    for i, (off, on) in enumerate(rounds, 1):
        print(f"  round {i}: validation off {off:,.0f}/s, on {on:,.0f}/s, on/off {on / off:.2f}")
    print(f"produce with value validation on / off: {statistics.median(on / off for off, on in rounds):.2f} "
          f"(median of {len(rounds)} alternating rounds)")


if __name__ == "__main__":
    main()
