"""Hostile requests to the schema registry's REST API: a body nested a hundred thousand deep (Python's json
parser raises RecursionError, which once escaped as a 500 with a traceback), a body over the 16 MiB bound,
bytes that are not UTF-8, JSON that is not an object, absurd ids and versions. Each gets one error answer in
Confluent's shape and the registry keeps serving.

And a client flooding the registry with heavy requests, large schemas to register and to look up (each a new
text, so nothing comes from the parse cache), from a dozen connections at once: it gets its share of the
parsing threads and 429s in Confluent's error shape beyond it, while another client's lookups by id keep
answering about as fast as they did before the flood. (Parsing once ran on the default thread pool without a
bound per client, so the flood took every thread.)"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from tests.harness import BrokerProcess
from tests.schema_registry.helpers import Registry, big_schema, wait_primary
from tests.waiting import wait_until

FLOODERS = 12  # the flooding client's connections
LOOKUPS = 20  # the other client's lookups by id, before and during the flood


@pytest.fixture(scope="module")
def registry(broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    node = Registry(tmp_path_factory.mktemp("registry"), broker).start()
    try:
        wait_primary(node)
        yield node
    finally:
        node.stop()


@pytest.mark.parametrize("body, status", [
    (b"[" * 100_000 + b"]" * 100_000, 400),
    (b'{"schema": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", 400),
    (b"\xff\xfe{not utf-8", 400),
    (b'["a", "list"]', 422),
    (b'"text"', 422),
])
def test_bad_bodies_get_one_error(registry: Registry, body: bytes, status: int) -> None:
    for path in ("/subjects/hostile/versions", "/subjects/hostile", "/config", "/mode",
                 "/compatibility/subjects/hostile/versions/latest"):
        method = "PUT" if path in ("/config", "/mode") else "POST"
        got, answer = registry.call(method, path, raw_body=body)
        assert got == status, (path, answer)
        assert set(answer) == {"error_code", "message"} and len(answer["message"]) < 1000
    assert registry.call("GET", "/") == (200, {})


def test_oversized_body_is_refused(registry: Registry) -> None:
    body = b'{"schema": "' + b"x" * (17 * 1024 * 1024) + b'"}'
    status, answer = registry.call("POST", "/subjects/big/versions", raw_body=body)
    assert (status, answer["error_code"]) == (413, 413)
    assert registry.call("GET", "/") == (200, {})


@pytest.mark.parametrize("path, code", [
    ("/schemas/ids/99999999999999999999999", 40403),
    ("/schemas/ids/-1", 40403),
    ("/subjects/x/versions/99999999999999999999", 42202),
    ("/subjects/x/versions/1e3", 42202),
    ("/subjects/x/versions/-2", 42202),
])
def test_absurd_ids_and_versions(registry: Registry, path: str, code: int) -> None:
    status, answer = registry.call("GET", path)
    assert answer["error_code"] == code


def test_a_flood_of_heavy_requests_cannot_starve_lookups_by_id(registry: Registry) -> None:
    first = {"schema": json.dumps({"type": "record", "name": "Flood", "fields": [{"name": "a", "type": "int"}]})}
    status, answer = registry.call("POST", "/subjects/flooded/versions", first)
    assert status == 200, answer
    schema_id = answer["id"]

    def by_id() -> float:
        start = time.monotonic()
        status, answer = registry.call("GET", f"/schemas/ids/{schema_id}")
        assert status == 200, answer
        return time.monotonic() - start

    baseline = max(by_id() for _ in range(LOOKUPS))
    answers: Counter[int] = Counter()
    refusals: list[dict[str, object]] = []
    lock, stop = threading.Lock(), threading.Event()

    def flood(n: int) -> None:
        i = 0
        while not stop.is_set():
            path = "/subjects/flooded/versions" if n % 2 else "/subjects/flooded"  # register / look up
            status, answer = registry.call("POST", path, {"schema": big_schema(f"{n}_{i}")})
            with lock:
                answers[status] += 1
                if status == 429:
                    refusals.append(answer)
            i += 1

    threads = [threading.Thread(target=flood, args=(n,), daemon=True) for n in range(FLOODERS)]
    for t in threads:
        t.start()
    try:
        wait_until(lambda: sum(answers.values()) >= FLOODERS, 60, "the flood under way")
        during = [by_id() for _ in range(LOOKUPS)]  # the flood goes on until `stop`
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    print(f"lookups by id: {baseline * 1000:.1f} ms before the flood, at most {max(during) * 1000:.1f} ms during "
          f"it; the flood's answers: {dict(answers)}")
    assert set(answers) <= {404, 409, 429}, answers  # 40403 for a lookup, 409 for a registration
    assert answers[429] > 0, f"the flood was never refused: {answers}"
    assert all(r["error_code"] == 429 and "rate limit" in str(r["message"]) for r in refusals), refusals[:3]
    assert answers[404] + answers[409] > 0, answers  # refused beyond its share, not shut out
    # lookups by id were served while the flood ran, each within a generous multiple of the unloaded ones
    assert max(during) < max(2.0, 50 * baseline), (baseline, during)
