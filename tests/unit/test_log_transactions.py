"""Transactions in one partition's log, on real files: the last stable offset (open transactions, markers
not yet below the high watermark), the aborted-transaction index in Kafka's `.txnindex` format, producer
snapshots, and their rebuild after a restart, a crash (torn tail) and a truncation; clients cannot
write control batches."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.records import build_batch, build_marker
from odradek.storage.log import Log
from odradek.storage.log_config import LogConfig
from odradek.storage.log_validator import AppendOrigin
from odradek.storage.producer_state import ProducerStateManager
from odradek.storage.txn_index import ENTRY_SIZE, read_index

PID, OTHER = 1000, 2000


def txn_batch(pid: int, seq: int, n: int = 2, epoch: int = 0) -> bytes:
    return build_batch([(None, b"v%d" % i) for i in range(n)], producer_id=pid, producer_epoch=epoch,
                       base_sequence=seq, is_transactional=True)


def marker(pid: int, commit: bool, epoch: int = 0) -> bytes:
    return build_marker(pid, epoch, commit, coordinator_epoch=3)


def plain(n: int = 1) -> bytes:
    return build_batch([(None, b"p")] * n)


def lso(log: Log) -> int:
    log.high_watermark = log.log_end_offset
    return log.last_stable_offset


def test_open_transactions_hold_the_lso_until_their_marker_is_replicated(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0")
    log.append_as_leader(plain(), 0)  # 0
    log.append_as_leader(txn_batch(PID, 0), 0)  # 1-2
    log.append_as_leader(plain(), 0)  # 3
    log.append_as_leader(txn_batch(OTHER, 0), 0)  # 4-5
    assert lso(log) == 1
    log.append_as_leader(marker(PID, commit=True), 0, origin=AppendOrigin.COORDINATOR)  # 6
    log.high_watermark = 6  # the marker itself not yet replicated: PID's transaction is still unstable
    assert log.last_stable_offset == 1
    assert lso(log) == 4  # now only OTHER's open transaction holds it
    log.append_as_leader(marker(OTHER, commit=False), 0, origin=AppendOrigin.COORDINATOR)  # 7
    assert lso(log) == 8 == log.log_end_offset
    assert log.collect_aborted(0, 8) == [(OTHER, 4)]
    assert log.collect_aborted(8, 9) == []  # the abort marker is below the fetch
    log.close()


def test_clients_may_not_write_markers(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0")
    with pytest.raises(KafkaError) as info:
        log.append_as_leader(marker(PID, commit=True), 0)
    assert info.value.code == ErrorCode.INVALID_RECORD
    log.close()


def test_markers_of_an_older_epoch_are_fenced(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0")
    log.append_as_leader(txn_batch(PID, 0, epoch=5), 0)
    with pytest.raises(KafkaError) as info:
        log.append_as_leader(marker(PID, commit=True, epoch=4), 0, origin=AppendOrigin.COORDINATOR)
    assert info.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    log.append_as_leader(marker(PID, commit=False, epoch=6), 0, origin=AppendOrigin.COORDINATOR)  # a fencing abort
    assert lso(log) == log.log_end_offset
    log.close()


def test_txnindex_is_kafkas_format_and_survives_restart_crash_and_truncation(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = Log(d, LogConfig.from_props({"segment.bytes": "400"}))
    log.append_as_leader(txn_batch(PID, 0), 0)  # 0-1
    log.append_as_leader(marker(PID, commit=False), 0, origin=AppendOrigin.COORDINATOR)  # 2
    for _ in range(6):
        log.append_as_leader(plain(3), 0)  # rolls segments
    log.append_as_leader(txn_batch(PID, 2), 0)
    first_open = log.log_end_offset - 2
    log.close()
    files = sorted(d.glob("*.txnindex"))
    assert [f.name for f in files] == ["00000000000000000000.txnindex"]
    raw = files[0].read_bytes()
    assert len(raw) == ENTRY_SIZE and struct.unpack(">hqqq", raw[:26]) == (0, PID, 0, 2)
    assert list(d.glob("*.snapshot"))  # written at rolls and at close

    reopened = Log(d, LogConfig.from_props({"segment.bytes": "400"}))
    assert reopened.collect_aborted(0, 100) == [(PID, 0)]
    assert lso(reopened) == first_open  # the open transaction was restored (from the close snapshot)
    reopened.close()

    for snap in d.glob("*.snapshot"):  # a crash with no usable snapshot: everything from the headers
        snap.write_bytes(b"garbage")
    crashed = Log(d, LogConfig.from_props({"segment.bytes": "400"}), clean_shutdown=False)
    assert crashed.collect_aborted(0, 100) == [(PID, 0)]
    assert lso(crashed) == first_open
    crashed.truncate_to(1)  # the abort marker and everything after go
    assert crashed.collect_aborted(0, 100) == []
    index = d / "00000000000000000000.txnindex"
    assert not index.exists() or not read_index(index)
    assert lso(crashed) == 0  # PID's first transaction is open again
    crashed.close()


def test_snapshots_round_trip_and_reject_corruption(tmp_path: Path) -> None:
    state = ProducerStateManager()
    log = Log(tmp_path / "t-0")
    log.append_as_leader(txn_batch(PID, 0, n=3), 0)
    log.append_as_leader(build_batch([(None, b"i")], producer_id=OTHER, producer_epoch=2, base_sequence=7), 0)
    path = tmp_path / "x.snapshot"
    log.producer_state.write_snapshot(path)
    state.read_snapshot(path)
    assert state.ongoing() == {PID: 0}
    assert state.producers[OTHER].epoch == 2 and state.producers[OTHER].last_seq == 7
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="CRC"):
        state.read_snapshot(path)
    log.close()


def test_dump_log_shows_the_txnindex_and_snapshots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from odradek.cli import dump_log

    d = tmp_path / "t-0"
    log = Log(d)
    log.append_as_leader(txn_batch(PID, 0), 0)
    log.append_as_leader(marker(PID, commit=False), 0, origin=AppendOrigin.COORDINATOR)
    log.append_as_leader(txn_batch(PID, 2, n=1), 0)
    log.close()
    files = [str(d / "00000000000000000000.txnindex"), str(next(d.glob("*.snapshot")))]
    assert dump_log.main(["--files", ",".join(files)]) == 0
    out = capsys.readouterr().out
    assert f"version: 0 producerId: {PID} firstOffset: 0 lastOffset: 2" in out
    assert f"producerId: {PID} producerEpoch: 0 coordinatorEpoch: 3 currentTxnFirstOffset: 3" in out


def test_a_marker_from_an_older_coordinator_epoch_is_fenced(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0")
    log.append_as_leader(txn_batch(PID, 0), 0)
    log.append_as_leader(build_marker(PID, 0, True, coordinator_epoch=5), 0, origin=AppendOrigin.COORDINATOR)
    log.append_as_leader(txn_batch(PID, 2), 0)
    with pytest.raises(KafkaError) as info:  # a zombie coordinator's late marker
        log.append_as_leader(build_marker(PID, 0, False, coordinator_epoch=4), 0, origin=AppendOrigin.COORDINATOR)
    assert info.value.code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    log.append_as_leader(build_marker(PID, 0, True, coordinator_epoch=6), 0, origin=AppendOrigin.COORDINATOR)
    assert lso(log) == log.log_end_offset
    log.close()


def test_a_plain_write_inside_an_open_transaction_is_refused(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0")
    log.append_as_leader(txn_batch(PID, 0), 0)
    idempotent = build_batch([(None, b"x")], producer_id=PID, producer_epoch=0, base_sequence=2)
    with pytest.raises(KafkaError) as info:
        log.append_as_leader(idempotent, 0)
    assert info.value.code == ErrorCode.INVALID_TXN_STATE
    log.close()
