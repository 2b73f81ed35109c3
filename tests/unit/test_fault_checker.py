"""The fault runs' checker (tests/faults/checker.py) on small made-up histories: each kind of violation is
found, and a clean history passes."""

from __future__ import annotations

from typing import Any

from tests.faults.checker import check


def ack(v: str, p: int, o: int) -> dict[str, Any]:
    return {"op": "ack", "v": v, "p": p, "o": o, "t": o}


def read(v: str, p: int, o: int) -> dict[str, Any]:
    return {"op": "read", "v": v, "p": p, "o": o, "t": 100 + o}


def test_a_clean_history_passes() -> None:
    events = [ack("p1-0", 0, 0), ack("p1-1", 0, 1), {"op": "fail", "v": "p1-2", "err": "timed out"},
              read("p1-0", 0, 0), read("p1-1", 0, 1), read("p1-2", 0, 2),  # a failed send may still be there
              {"op": "txn", "id": 0, "values": ["x1-t0-0", "x1-t0-1"], "result": "commit"},
              read("x1-t0-0", 1, 0), read("x1-t0-1", 1, 1),
              {"op": "txn", "id": 1, "values": ["x1-t1-0"], "result": "abort"},
              {"op": "commit", "p": 0, "o": 2}, {"op": "committed", "p": 0, "o": 2}]
    r = check(events)
    assert r.ok, r.violations
    assert r.summary().startswith("acknowledged 2, read 5, lost 0, duplicated 0, out of order 0")


def test_lost_duplicated_and_reordered_records_are_named() -> None:
    events = [ack("p1-0", 0, 0), ack("p1-1", 0, 1), ack("p1-2", 0, 2), ack("p2-0", 1, 0),
              read("p1-1", 0, 0), read("p1-0", 0, 1), read("p1-1", 0, 2)]
    r = check(events)
    assert r.lost == ["p1-2", "p2-0"]
    assert r.duplicated == ["p1-1"]
    assert r.out_of_order == ["p1-0 at 0/1 after p1-1"]
    assert not r.ok
    assert any(v.startswith("lost p1-2:") and '"v": "p1-2"' in v for v in r.violations)  # with the events around


def test_torn_transactions_and_offsets_going_backward() -> None:
    events = [{"op": "txn", "id": 0, "values": ["x-t0-0", "x-t0-1"], "result": "commit"}, read("x-t0-0", 0, 0),
              {"op": "txn", "id": 1, "values": ["x-t1-0"], "result": "abort"}, read("x-t1-0", 0, 1),
              {"op": "txn", "id": 2, "values": ["x-t2-0", "x-t2-1"], "result": "unknown"}, read("x-t2-1", 0, 2),
              {"op": "txn", "id": 3, "values": ["x-t3-0"], "result": "unknown"},
              {"op": "commit", "p": 0, "o": 7}, {"op": "commit", "p": 0, "o": 9}, {"op": "committed", "p": 0, "o": 8}]
    r = check(events)
    assert [t.split(" (")[0] for t in r.torn_transactions] == ["transaction 0", "transaction 1", "transaction 2"]
    assert r.offsets_backward == ["partition 0: committed 8 after a commit of 9 was acknowledged"]
    assert r.transactions == {"commit": 1, "abort": 1, "unknown": 2}
