"""The fault runs' checker (tests/faults/checker.py) on small made-up histories: each kind of violation is
found, and a clean history passes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from odradek.protocol.records import build_batch
from tests.faults.checker import check
from tests.faults.provenance import Copy, copies_at


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


def _segment(directory: Path, topic: str, partition: int, batches: list[bytes]) -> None:
    d = directory / f"{topic}-{partition}"
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(b"".join(batches))


def _one(value: str, offset: int, pid: int, epoch: int, seq: int) -> bytes:
    return build_batch([(None, value.encode())], base_offset=offset, producer_id=pid, producer_epoch=epoch,
                       base_sequence=seq)


def test_a_duplicate_from_two_producer_sessions_is_the_clients_and_is_counted_apart(tmp_path: Path) -> None:
    # p1-1 written at 1 in epoch 0, then re-sent by the client under epoch 1 at 3: no broker can recognise it
    _segment(tmp_path, "events", 0, [_one("p1-0", 0, 7, 0, 0), _one("p1-1", 1, 7, 0, 1), _one("p1-2", 2, 7, 0, 2),
                                     _one("p1-1", 3, 7, 1, 0)])
    events = [ack("p1-0", 0, 0), ack("p1-2", 0, 2), ack("p1-1", 0, 3),
              read("p1-0", 0, 0), read("p1-1", 0, 1), read("p1-2", 0, 2), read("p1-1", 0, 3)]
    r = check(events, lambda p, offsets: copies_at([tmp_path], "events", p, offsets))
    assert r.ok, r.violations
    assert (r.duplicated, r.resent, r.out_of_order) == ([], ["p1-1"], [])
    assert "duplicated 0 (+1 re-sent by the client under a new producer epoch)" in r.summary()
    assert r.notes == ["p1-1 re-sent by the client: offset 1 (producer 7 epoch 0 sequence 1), "
                       "offset 3 (producer 7 epoch 1 sequence 0)"]


def test_a_duplicate_within_one_producer_session_is_the_brokers(tmp_path: Path) -> None:
    # the same producer, epoch and sequence twice: a retry the broker should have answered from its cache
    _segment(tmp_path, "events", 0, [_one("p1-0", 0, 7, 0, 0), _one("p1-0", 1, 7, 0, 0)])
    events = [ack("p1-0", 0, 1), read("p1-0", 0, 0), read("p1-0", 0, 1)]
    r = check(events, lambda p, offsets: copies_at([tmp_path], "events", p, offsets))
    assert (r.duplicated, r.resent) == (["p1-0"], [])
    assert not r.ok


def test_a_duplicate_whose_batches_cannot_be_found_stays_a_violation(tmp_path: Path) -> None:
    events = [ack("p1-0", 0, 1), read("p1-0", 0, 0), read("p1-0", 0, 1)]
    r = check(events, lambda p, offsets: copies_at([tmp_path], "events", p, offsets))
    assert r.duplicated == ["p1-0"] and not r.ok


def test_copies_at_reads_the_session_of_each_offset_inside_a_batch(tmp_path: Path) -> None:
    batch = build_batch([(None, b"a"), (None, b"b"), (None, b"c")], base_offset=10, producer_id=3,
                        producer_epoch=2, base_sequence=40)
    _segment(tmp_path, "t", 1, [batch])
    assert copies_at([tmp_path], "t", 1, [11, 12, 99]) == {11: Copy(11, 3, 2, 41), 12: Copy(12, 3, 2, 42)}
