"""The transaction coordinator's EndTxn at transaction version 2 (KIP-890 part 2) on a stand-in runtime:
the epoch bump, the move to a new producer id when the epochs run out, and what a retry of either gets."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.txn.coordinator import TransactionCoordinator, TxnSettings
from odradek.txn.state import MAX_EPOCH, TxnMetadata, TxnState


class _Runtime:
    def __init__(self) -> None:
        self.written: list[Any] = []

    async def wait_ready(self, tid: str, create: bool = False) -> None:
        return None

    async def write(self, tid: str, records: list[Any]) -> None:
        self.written.extend(records)

    def partition_for(self, tid: str) -> int:
        return 0

    def leader_epoch_of(self, index: int) -> int:
        return 0


class _Markers:
    def __init__(self) -> None:
        self.sent: list[tuple[int, int, bool]] = []

    async def send(self, pid: int, epoch: int, commit: bool, coordinator_epoch: int, partitions: Any) -> None:
        self.sent.append((pid, epoch, commit))


class _Ids:
    async def next_id(self) -> int:
        return 77


async def _settle(coordinator: TransactionCoordinator) -> None:
    for task in list(coordinator._completions.values()):
        await task


def _coordinator(md: TxnMetadata) -> tuple[TransactionCoordinator, _Markers]:
    markers = _Markers()
    c = TransactionCoordinator(TxnSettings(), _Runtime(), markers, _Ids())  # type: ignore[arg-type]
    c.txns[md.transactional_id] = md
    return c, markers


def test_end_txn_v5_bumps_and_a_retry_gets_the_same_answer() -> None:
    async def main() -> None:
        c, markers = _coordinator(TxnMetadata("tx", 5, 3, 60000, TxnState.ONGOING, {("t", 0)}))
        assert await c.end_txn("tx", 5, 3, True, txn_version=2) == (5, 4)
        await _settle(c)
        assert markers.sent == [(5, 4, True)]  # the markers carry the bumped epoch
        assert await c.end_txn("tx", 5, 3, True, txn_version=2) == (5, 4)  # the retry
        with pytest.raises(KafkaError) as err:
            await c.end_txn("tx", 5, 3, False, txn_version=2)  # a "retry" of what did not happen
        assert err.value.code == ErrorCode.INVALID_TXN_STATE
        with pytest.raises(KafkaError) as err:
            await c.end_txn("tx", 5, 2, True, txn_version=2)  # older still: fenced
        assert err.value.code == ErrorCode.PRODUCER_FENCED

    asyncio.run(main())


def test_end_txn_v5_moves_to_a_new_producer_id_when_the_epochs_run_out() -> None:
    async def main() -> None:
        c, markers = _coordinator(TxnMetadata("tx", 5, MAX_EPOCH - 1, 60000, TxnState.ONGOING, {("t", 0)}))
        assert await c.end_txn("tx", 5, MAX_EPOCH - 1, True, txn_version=2) == (77, 0)
        await _settle(c)
        assert markers.sent == [(5, MAX_EPOCH, True)]  # the old id's last epoch marks the transaction
        md = c.txns["tx"]
        assert (md.state, md.producer_id, md.producer_epoch, md.previous_producer_id) == (
            TxnState.COMPLETE_COMMIT, 77, 0, 5)
        assert await c.end_txn("tx", 5, MAX_EPOCH - 1, True, txn_version=2) == (77, 0)  # the retry
        with pytest.raises(KafkaError) as err:
            await c.end_txn("tx", 5, 3, True, txn_version=2)
        assert err.value.code == ErrorCode.INVALID_PRODUCER_ID_MAPPING

    asyncio.run(main())


def test_transaction_version_1_is_unchanged() -> None:
    async def main() -> None:
        c, markers = _coordinator(TxnMetadata("tx", 5, 3, 60000, TxnState.ONGOING, {("t", 0)}))
        assert await c.end_txn("tx", 5, 3, True) == (5, 3)
        await _settle(c)
        assert markers.sent == [(5, 3, True)]
        assert await c.end_txn("tx", 5, 3, True) == (5, 3)  # TV1's retry: the same epoch
        with pytest.raises(KafkaError) as err:
            await c.end_txn("tx", 5, 3, False)  # TV1: no abort of a committed transaction, no empty-abort bump
        assert err.value.code == ErrorCode.INVALID_TXN_STATE

    asyncio.run(main())
