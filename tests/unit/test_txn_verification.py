"""Transaction verification (KIP-890 part 1) in the log's producer state: the first transactional append
of a transaction needs the guard of its verification, later ones ride on the ongoing transaction, and a
marker in between voids a guard (Kafka's ABA case); how failed verifications read in Produce responses."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.records import build_batch, build_marker, transactional_batches
from odradek.storage import producer_state
from odradek.storage.log import Log
from odradek.storage.log_validator import AppendOrigin
from odradek.storage.producer_state import NO_GUARD
from odradek.txn.verification import PartitionVerifier, produce_error


def _txn(pid: int, seq: int, epoch: int = 0) -> bytes:
    return build_batch([(None, b"v")], producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                       is_transactional=True)


def _refused(log: Log, batch: bytes, guard: int | None) -> int:
    with pytest.raises(KafkaError) as e:
        log.append_as_leader(batch, 0, verification_guard=guard)
    return e.value.code


def test_first_append_needs_its_guard_later_ones_none(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0")
    assert _refused(log, _txn(7, 0), NO_GUARD) == ErrorCode.INVALID_TXN_STATE
    guard = log.start_transaction_verification(7, 0, 0)
    assert guard != NO_GUARD
    assert log.start_transaction_verification(7, 0, 0) == guard  # cached: one verification per transaction
    assert _refused(log, _txn(7, 0), guard + 1) == ErrorCode.INVALID_TXN_STATE  # someone else's guard
    log.append_as_leader(_txn(7, 0), 0, verification_guard=guard)
    assert 7 not in log.producer_state.verifications  # the transaction's first offset replaces it
    assert log.start_transaction_verification(7, 1, 0) == NO_GUARD  # ongoing: nothing to verify
    log.append_as_leader(_txn(7, 1), 0, verification_guard=NO_GUARD)
    assert log.last_stable_offset == 0


def test_a_marker_between_verification_and_append_voids_the_guard(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0")
    guard = log.start_transaction_verification(7, 0, 0)
    # the coordinator aborted the transaction meanwhile: its marker lands first
    log.append_as_leader(build_marker(7, 0, False, 0), 0, origin=AppendOrigin.COORDINATOR)
    assert _refused(log, _txn(7, 0), guard) == ErrorCode.INVALID_TXN_STATE
    assert log.producer_state.ongoing() == {}  # nothing left open


def test_a_next_epoch_batch_is_the_next_transactions_and_needs_its_guard(tmp_path: Path) -> None:
    """Transaction version 2: a batch of the bumped epoch arriving before the old transaction's marker is
    not part of that transaction; it needs the coordinator's add (a guard), which survives the marker
    (the marker carries the bumped epoch, the guard is the next transaction's)."""
    log = Log(tmp_path / "t-0")
    log.append_as_leader(_txn(7, 0), 0, verification_guard=log.start_transaction_verification(7, 0, 0))
    guard = log.start_transaction_verification(7, 0, 1)
    assert guard != NO_GUARD
    assert _refused(log, _txn(7, 0, epoch=1), NO_GUARD) == ErrorCode.INVALID_TXN_STATE
    log.append_as_leader(build_marker(7, 1, True, 0), 0, origin=AppendOrigin.COORDINATOR, transaction_version=2)
    assert log.producer_state.ongoing() == {}
    log.append_as_leader(_txn(7, 0, epoch=1), 0, verification_guard=guard)
    assert log.producer_state.ongoing() == {7: 2}


def test_no_guard_means_no_check(tmp_path: Path) -> None:
    """Verification off (None): the append is not checked, as before KIP-890; plain batches never are."""
    log = Log(tmp_path / "t-0")
    log.append_as_leader(build_batch([(None, b"p")], producer_id=8, producer_epoch=0, base_sequence=0), 0,
                         verification_guard=NO_GUARD)
    log.append_as_leader(_txn(7, 0), 0)
    assert log.producer_state.ongoing() == {7: 1}


def test_lowest_sequence_blocks_later_batches(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0")
    guard = log.start_transaction_verification(7, 5, 0)
    assert log.start_transaction_verification(7, 3, 0) == guard  # a lower sequence of the same epoch
    assert _refused(log, _txn(7, 5), guard) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    log.start_transaction_verification(7, 0, 1)  # a new epoch starts over
    log.append_as_leader(_txn(7, 0, epoch=1), 0, verification_guard=guard)


def test_verifications_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(producer_state, "MAX_VERIFICATIONS", 3)
    log = Log(tmp_path / "t-0")
    guards = {pid: log.start_transaction_verification(pid, 0, 0) for pid in range(1, 6)}
    assert sorted(log.producer_state.verifications) == [3, 4, 5]  # the oldest went
    assert _refused(log, _txn(1, 0), guards[1]) == ErrorCode.INVALID_TXN_STATE
    log.append_as_leader(_txn(5, 0), 0, verification_guard=guards[5])


def test_transactional_batches_from_headers() -> None:
    data = build_batch([(None, b"p")]) + _txn(7, 4, epoch=2) + _txn(7, 5, epoch=2)
    assert list(transactional_batches(data)) == [(7, 2, 4), (7, 2, 5)]
    assert list(transactional_batches(data[:30])) == []  # too short for a header: nothing read


@pytest.mark.parametrize(("code", "version", "expected"), [
    (ErrorCode.TRANSACTION_ABORTABLE, 9, ErrorCode.INVALID_TXN_STATE),
    (ErrorCode.TRANSACTION_ABORTABLE, 11, ErrorCode.TRANSACTION_ABORTABLE),
    (ErrorCode.NOT_COORDINATOR, 9, ErrorCode.NOT_ENOUGH_REPLICAS),
    (ErrorCode.NETWORK_EXCEPTION, 12, ErrorCode.NOT_ENOUGH_REPLICAS),
    (ErrorCode.CONCURRENT_TRANSACTIONS, 11, ErrorCode.NOT_ENOUGH_REPLICAS),
    (ErrorCode.CONCURRENT_TRANSACTIONS, 12, ErrorCode.CONCURRENT_TRANSACTIONS),
    (ErrorCode.INVALID_PRODUCER_ID_MAPPING, 9, ErrorCode.INVALID_PRODUCER_ID_MAPPING),
])
def test_produce_errors_by_version(code: ErrorCode, version: int, expected: ErrorCode) -> None:
    assert produce_error(code, version)[0] == expected


# ---- the leader's side: local answers, one request in flight per coordinator, batching ----------------

class _Verifier(PartitionVerifier):
    """Requests to the remote coordinator (broker 1) answered by the test, one at a time."""

    def __init__(self) -> None:
        metadata = SimpleNamespace(leader_of=lambda topic, index: 1, brokers={0: object(), 1: object()})
        coordinator = SimpleNamespace(runtime=SimpleNamespace(partition_for=lambda tid: 0))
        super().__init__(0, metadata, coordinator, None, 5.0)  # type: ignore[arg-type]
        self.sent: list[dict[str, tuple[int, int]]] = []
        self.release = asyncio.Event()

    async def _request(self, leader: int, batch: dict[str, Any]) -> dict[str, Any]:
        self.sent.append({tid: (ask.producer_id, ask.producer_epoch) for tid, ask in batch.items()})
        await self.release.wait()
        self.release.clear()
        return {tid: {} for tid in batch}


def test_verifications_wait_for_the_request_in_flight_then_go_together() -> None:
    async def scenario() -> None:
        v = _Verifier()
        tp = [("t", 0)]
        first = asyncio.create_task(v.verify("a", 1, 0, tp))
        await asyncio.sleep(0)
        later = [asyncio.create_task(v.verify(tid, pid, 0, tp)) for tid, pid in (("b", 2), ("c", 3))]
        retried = asyncio.create_task(v.verify("c", 3, 0, tp))  # the same id and epoch again
        fenced = asyncio.create_task(v.verify("b", 2, 1, tp))  # a newer epoch of b
        await asyncio.sleep(0)  # all four waiting, in that order
        stale = await v.verify("b", 2, 0, tp)  # older than the one waiting
        assert stale == {("t", 0): ErrorCode.INVALID_PRODUCER_EPOCH}
        await asyncio.sleep(0)
        assert v.sent == [{"a": (1, 0)}]  # one request in flight to the coordinator
        v.release.set()
        assert await first == {}
        assert await later[0] == {("t", 0): ErrorCode.INVALID_PRODUCER_EPOCH}  # displaced by epoch 1
        assert await later[1] == {("t", 0): ErrorCode.NETWORK_EXCEPTION}  # displaced by its retry
        await asyncio.sleep(0)
        assert v.sent[1] == {"b": (2, 1), "c": (3, 0)}  # the rest in one request
        v.release.set()
        assert await retried == {} and await fenced == {}
        await v.close()

    asyncio.run(scenario())


def test_a_failed_request_answers_everyone() -> None:
    async def scenario() -> None:
        v = _Verifier()

        async def broken(leader: int, batch: dict[str, Any]) -> dict[str, Any]:
            raise ValueError("an answer that does not decode")

        v._request = broken  # type: ignore[method-assign]
        assert await v.verify("a", 1, 0, [("t", 0)]) == {("t", 0): ErrorCode.NETWORK_EXCEPTION}
        await v.close()

    asyncio.run(scenario())
