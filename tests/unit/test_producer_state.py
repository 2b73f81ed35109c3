"""Idempotent producer checks in the log: retries deduplicated, gaps and fenced epochs rejected."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.records import build_batch
from odradek.storage.log import Log


def _batch(pid: int, epoch: int, seq: int, n: int = 3) -> bytes:
    return build_batch([(None, b"v%d" % i) for i in range(n)], producer_id=pid, producer_epoch=epoch,
                       base_sequence=seq)


def _refused(log: Log, batch: bytes) -> int:
    """The error code of an append that must fail."""
    with pytest.raises(KafkaError) as e:
        log.append_as_leader(batch, 0)
    return e.value.code


def test_in_order_batches_append(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0")
    assert log.append_as_leader(_batch(7, 0, 0), 0).first_offset == 0
    assert log.append_as_leader(_batch(7, 0, 3), 0).first_offset == 3
    assert log.log_end_offset == 6


def test_retried_batch_is_answered_with_its_original_offsets(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0")
    log.append_as_leader(_batch(7, 0, 0), 0)
    log.append_as_leader(_batch(7, 0, 3), 0)
    again = log.append_as_leader(_batch(7, 0, 0), 0)
    assert (again.first_offset, again.last_offset) == (0, 2)
    assert log.log_end_offset == 6


def test_sequence_gap_is_out_of_order(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0")
    log.append_as_leader(_batch(7, 0, 0), 0)
    assert _refused(log, _batch(7, 0, 5)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.log_end_offset == 3


def test_old_epoch_is_fenced_and_new_epoch_restarts_at_zero(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0")
    log.append_as_leader(_batch(7, 1, 0), 0)
    assert _refused(log, _batch(7, 0, 3)) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert _refused(log, _batch(7, 2, 3)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.append_as_leader(_batch(7, 2, 0), 0).first_offset == 3


def test_producer_state_survives_reopen(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0")
    log.append_as_leader(_batch(7, 0, 0), 0)
    log.close()
    log = Log(tmp_path / "t-0", clean_shutdown=False)
    assert log.append_as_leader(_batch(7, 0, 0), 0).first_offset == 0  # still recognised as a retry
    assert log.log_end_offset == 3


def test_non_idempotent_batches_are_not_checked(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0")
    b = build_batch([(None, b"x")])
    log.append_as_leader(b, 0)
    log.append_as_leader(b, 0)
    assert log.log_end_offset == 2


def test_a_transaction_version_2_marker_must_bump_the_epoch(tmp_path: Path) -> None:
    """KIP-1228 (WriteTxnMarkers v2): the coordinator of a transaction-version-2 transaction bumps the
    producer epoch before it writes the markers, so such a marker at the transaction's own epoch (or an
    older one) is refused; an older transaction version's marker may carry the same epoch."""
    from odradek.protocol.records import build_marker
    from odradek.storage.log_validator import AppendOrigin

    log = Log(tmp_path / "t-0")
    for pid in (7, 8):
        log.append_as_leader(build_batch([(None, b"t")], producer_id=pid, producer_epoch=3, base_sequence=0,
                                         is_transactional=True), 0)
    with pytest.raises(KafkaError) as e:
        log.append_as_leader(build_marker(7, 3, True, 0), 0, origin=AppendOrigin.COORDINATOR, transaction_version=2)
    assert e.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert log.last_stable_offset == 0  # the transaction is still open
    log.append_as_leader(build_marker(7, 4, True, 0), 0, origin=AppendOrigin.COORDINATOR, transaction_version=2)
    log.append_as_leader(build_marker(8, 3, True, 0), 0, origin=AppendOrigin.COORDINATOR, transaction_version=1)
    assert log.producer_state.producers[7].epoch == 4 and log.producer_state.producers[8].epoch == 3
