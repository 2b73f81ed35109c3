"""The transaction coordinator's pure parts: Kafka's `__transaction_state` record formats, replaying a
partition, and the state machine's transitions and fencing errors."""

from __future__ import annotations

import struct

import pytest

from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.txn import schemas
from odradek.txn.coordinator import replay
from odradek.txn.state import TxnMetadata, TxnState


def test_key_and_value_round_trip_in_kafkas_layout() -> None:
    key = schemas.encode_key("orders-tx")
    assert key == struct.pack(">hh", 0, 9) + b"orders-tx"
    assert schemas.decode_key(key) == "orders-tx"
    value = schemas.TxnLogValue(42, 3, 60000, int(TxnState.ONGOING), {"t": [2, 0], "a": [1]}, 1000, 900)
    raw = schemas.encode_value(value)
    # version, producer id, epoch, timeout, status, then partitions sorted by topic
    assert raw[:17] == struct.pack(">hqhib", 0, 42, 3, 60000, 1)
    back = schemas.decode_value(raw)
    assert back is not None and back.partitions == {"a": [1], "t": [0, 2]}
    assert (back.producer_id, back.producer_epoch, back.last_update_ms, back.start_ms) == (42, 3, 1000, 900)
    assert schemas.decode_value(None) is None


@pytest.mark.parametrize("raw", [b"", b"\x00", struct.pack(">hqhib", 0, 1, 0, 1, 0) + b"\x7f\xff\xff\xff",
                                 struct.pack(">hqhib", 5, 1, 0, 1, 0)])
def test_malformed_values_raise_schema_errors(raw: bytes) -> None:
    with pytest.raises(schemas.SchemaError):
        schemas.decode_value(raw)


def test_replay_keeps_the_latest_state_and_drops_tombstones() -> None:
    def rec(tid: str, state: TxnState, epoch: int) -> tuple[bytes, bytes]:
        return schemas.encode_key(tid), schemas.encode_value(schemas.TxnLogValue(7, epoch, 1000, int(state)))

    loaded = replay([rec("a", TxnState.EMPTY, 0), rec("a", TxnState.ONGOING, 0), rec("b", TxnState.EMPTY, 0),
                     (schemas.encode_key("b"), None), (b"\x00", b"junk")])
    assert list(loaded) == ["a"] and loaded["a"].state is TxnState.ONGOING


def _md(state: TxnState = TxnState.EMPTY) -> TxnMetadata:
    return TxnMetadata("tx", 5, 2, 60000, state)


def test_producer_checks_give_kafkas_errors() -> None:
    md = _md()
    md.check_producer(5, 2)
    for pid, epoch, code in ((6, 2, ErrorCode.INVALID_PRODUCER_ID_MAPPING), (5, 1, ErrorCode.PRODUCER_FENCED)):
        with pytest.raises(KafkaError) as info:
            md.check_producer(pid, epoch)
        assert info.value.code == code
    md.pending = True
    with pytest.raises(KafkaError) as info:
        md.check_producer(5, 2)
    assert info.value.code == ErrorCode.CONCURRENT_TRANSACTIONS


def test_a_transaction_runs_empty_ongoing_prepare_complete() -> None:
    md = _md()
    nxt = md.prepare_add_partitions({("t", 0)}, now=100)
    assert md.state is TxnState.EMPTY  # nothing changes until the write succeeded
    md.apply(nxt)
    assert md.state is TxnState.ONGOING and md.start_ms == 100
    md.apply(md.prepare_add_partitions({("t", 1)}, now=200))
    assert md.partitions == {("t", 0), ("t", 1)} and md.start_ms == 100
    md.apply(md.prepare_end(commit=True, now=300))
    assert md.state is TxnState.PREPARE_COMMIT
    with pytest.raises(KafkaError) as info:
        md.prepare_add_partitions({("t", 2)}, now=301)
    assert info.value.code == ErrorCode.CONCURRENT_TRANSACTIONS
    md.apply(md.prepare_complete(now=400))
    assert md.state is TxnState.COMPLETE_COMMIT and md.partitions == set()
    with pytest.raises(KafkaError) as info:
        md.prepare_end(commit=False, now=500)
    assert info.value.code == ErrorCode.INVALID_TXN_STATE


def test_fencing_abort_bumps_the_epoch_and_init_bumps_again() -> None:
    md = _md(TxnState.ONGOING)
    md.apply(md.prepare_fence_abort(now=10))
    assert (md.state, md.producer_epoch, md.last_producer_epoch) == (TxnState.PREPARE_ABORT, 3, 2)
    md.apply(md.prepare_complete(now=20))
    assert md.state is TxnState.COMPLETE_ABORT
    md.apply(md.prepare_epoch_bump(None, 30000, now=30))
    assert (md.state, md.producer_epoch, md.timeout_ms) == (TxnState.EMPTY, 4, 30000)
    md.apply(md.prepare_epoch_bump(99, 30000, now=40))  # epochs exhausted: a new producer id at epoch 0
    assert (md.producer_id, md.producer_epoch) == (99, 0)


def test_metadata_survives_its_log_value() -> None:
    md = _md(TxnState.ONGOING)
    md.partitions = {("t", 1), ("u", 0)}
    md.start_ms, md.update_ms = 5, 6
    back = TxnMetadata.from_value("tx", schemas.decode_value(schemas.encode_value(md.to_value())))  # type: ignore[arg-type]
    assert (back.state, back.partitions, back.start_ms, back.update_ms) == (TxnState.ONGOING, md.partitions, 5, 6)


def test_a_v1_value_carries_the_tagged_fields() -> None:
    """Kafka 4's flexible TransactionLogValue v1: written when a tagged field is not its default."""
    value = schemas.TxnLogValue(42, 32767, 60000, int(TxnState.PREPARE_COMMIT), {"t": [1, 0]}, 1000, 900,
                                previous_producer_id=-1, next_producer_id=43, client_txn_version=2)
    raw = schemas.encode_value(value)
    assert raw[:2] == struct.pack(">h", 1)
    back = schemas.decode_value(raw)
    assert back == schemas.TxnLogValue(42, 32767, 60000, int(TxnState.PREPARE_COMMIT), {"t": [0, 1]}, 1000, 900,
                                       -1, 43, 2)
    plain = schemas.TxnLogValue(42, 3, 60000, int(TxnState.EMPTY))
    assert schemas.encode_value(plain)[:2] == struct.pack(">h", 0)  # v0 while nothing needs more


def test_transaction_version_2_bumps_the_epoch_at_each_end() -> None:
    md = _md(TxnState.ONGOING)
    md.apply(md.prepare_end(True, now=1, txn_version=2))
    assert (md.state, md.producer_epoch, md.last_producer_epoch) == (TxnState.PREPARE_COMMIT, 3, 2)
    md.apply(md.prepare_complete(now=2))
    assert (md.state, md.producer_id, md.producer_epoch) == (TxnState.COMPLETE_COMMIT, 5, 3)
    # nothing open: TV2's abort still bumps (the producer cannot know whether its produce added a partition)
    md.apply(md.prepare_end(False, now=3, txn_version=2))
    assert (md.state, md.partitions, md.producer_epoch) == (TxnState.PREPARE_ABORT, set(), 4)
    with pytest.raises(KafkaError) as err:  # TV1: an end needs an open transaction
        _md(TxnState.COMPLETE_COMMIT).prepare_end(False, now=4)
    assert err.value.code == ErrorCode.INVALID_TXN_STATE


def test_transaction_version_2_moves_to_the_next_producer_id_when_the_epochs_run_out() -> None:
    md = TxnMetadata("tx", 5, 32766, 60000, TxnState.ONGOING, {("t", 0)})
    md.apply(md.prepare_end(True, now=1, txn_version=2, next_producer_id=6))
    assert (md.producer_id, md.producer_epoch, md.next_producer_id) == (5, 32767, 6)  # the markers' epoch
    back = TxnMetadata.from_value("tx", schemas.decode_value(schemas.encode_value(md.to_value())))  # type: ignore[arg-type]
    assert (back.next_producer_id, back.client_txn_version) == (6, 2)  # a new coordinator completes it alike
    md.apply(md.prepare_complete(now=2))
    assert (md.producer_id, md.producer_epoch, md.previous_producer_id, md.next_producer_id) == (6, 0, 5, -1)


def test_a_timed_out_transaction_version_2_transaction_is_fenced_past_a_retry() -> None:
    """The fence's bump and the end's: the fenced producer's epoch is not the one a retried EndTxn names."""
    md = _md(TxnState.ONGOING)
    md.client_txn_version = 2
    assert md.prepare_fence_abort(now=1).producer_epoch == 4
    md.client_txn_version = 0
    assert md.prepare_fence_abort(now=1).producer_epoch == 3
