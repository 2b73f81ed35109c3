"""A registry client flooding it with heavy requests, large schemas to register and to look up (each a new text,
so nothing comes from the parse cache), from a dozen connections at once: it gets its share of the parsing
threads and 429s in Confluent's error shape beyond it, while another client's lookups by id keep answering
about as fast as they did before the flood. (Parsing once ran on the default thread pool without a bound per
client, so the flood took every thread.)"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from tests.harness import BrokerProcess
from tests.schema_registry.conftest import wait_primary
from tests.schema_registry.helpers import Registry, big_schema
from tests.waiting import wait_until

FLOODERS = 12
LOOKUPS = 20


@pytest.fixture(scope="module")
def registry(broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    node = Registry(tmp_path_factory.mktemp("registry"), broker).start()
    try:
        wait_primary(node)
        yield node
    finally:
        node.stop()


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
        before = sum(answers.values())
        during = [by_id() for _ in range(LOOKUPS)]
        after = sum(answers.values())
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
    # lookups by id were served while the flood ran (and was answered), each within a generous multiple of the
    # unloaded ones
    assert after > before, answers
    assert max(during) < max(2.0, 50 * baseline), (baseline, during)
