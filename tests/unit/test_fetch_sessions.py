"""The fetch session cache: slots, eviction of idle sessions, incremental updates and epochs."""

from __future__ import annotations

from odradek.server.fetch_sessions import FetchSessionCache, Want, next_epoch


def want(partition: int, offset: int = 0, topic: str = "t") -> Want:
    return Want(topic, b"\x00" * 16, partition, offset, 1 << 20)


def test_slots_and_eviction_of_idle_sessions() -> None:
    now = [0.0]
    cache = FetchSessionCache(2, eviction_ms=1000, clock=lambda: now[0])
    a = cache.create([want(0)])
    b = cache.create([want(1)])
    assert a is not None and b is not None and a.session_id != b.session_id and len(cache) == 2
    assert cache.create([want(2)]) is None  # full, nobody idle long enough
    now[0] = 0.5
    assert cache.get(a.session_id) is a  # a used: b is the least recently used
    now[0] = 1.2
    c = cache.create([want(2)])
    assert c is not None and cache.get(b.session_id) is None and cache.get(a.session_id) is a
    assert cache.create([]) is None and FetchSessionCache(0).create([want(0)]) is None


def test_updates_keep_what_was_told_and_advance_the_epoch() -> None:
    cache = FetchSessionCache(10)
    s = cache.create([want(0), want(1)])
    assert s is not None and s.epoch == 1
    assert s.must_answer(s.wants[("t", 0)], 0, high_watermark=5, log_start=0, has_records=False, diverging=False)
    assert not s.must_answer(s.wants[("t", 0)], 0, 5, 0, False, False)  # nothing new
    cache.update(s, [want(0, offset=5), want(2)], forgotten=[("t", 1)])
    assert s.epoch == 2 and sorted(s.wants) == [("t", 0), ("t", 2)]
    assert s.wants[("t", 0)].fetch_offset == 5 and s.wants[("t", 0)].sent_high_watermark == 5
    assert not s.must_answer(s.wants[("t", 0)], 0, 5, 0, False, False)
    assert s.must_answer(s.wants[("t", 2)], 0, 0, 0, False, False)  # new to the session: told once
    assert s.must_answer(s.wants[("t", 0)], 6, 5, 0, False, False)  # an error is always news...
    assert s.must_answer(s.wants[("t", 0)], 0, 5, 0, False, False)  # ...and so is its clearing


def test_epochs_wrap_to_one() -> None:
    assert next_epoch(1) == 2 and next_epoch(2**31 - 1) == 1
