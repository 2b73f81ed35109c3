"""Segments and the partition log: append, roll, index lookups, reads, offsets by time, retention,
DeleteRecords, truncation, follower appends, configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.protocol.errors import CorruptRecordError, ErrorCode, KafkaError
from odradek.protocol.records import (
    COMPRESSION_CODECS,
    Record,
    build_batch,
    decode_records,
    iter_batches,
    read_header,
)
from odradek.storage.cleaner import run_cleanup
from odradek.storage.log import Log, delete_dir_name, parse_topic_partition
from tests.storage_helpers import T0, Clock, batch, open_log
from tests.unit.background import repeatedly_in_background


def read_all(log: Log, start: int | None = None, max_offset: int | None = None) -> list[Record]:
    """Every record from `start` by repeated reads, as a consumer would fetch."""
    offset = log.log_start_offset if start is None else start
    out: list[Record] = []
    while offset < (log.log_end_offset if max_offset is None else max_offset):
        data = log.read(offset, 1000, max_offset).records
        assert data, f"no data at {offset}"
        for _, h in iter_batches(data):
            out += [r for r in decode_records(memoryview(data)[_ : _ + h.size]) if r.offset >= offset]
        offset = out[-1].offset + 1
    return out


@pytest.fixture
def multi(tmp_path: Path) -> Log:
    """A log of 60 three-record batches over several small segments."""
    log = open_log(tmp_path / "orders-0", {"segment.bytes": "2000", "index.interval.bytes": "300"})
    for i in range(60):
        log.append_as_leader(batch(i, ts=T0 + i * 10), leader_epoch=4)
    return log


# --- append, roll, indexes ------------------------------------------------------------------------


def test_append_assigns_dense_offsets_and_leader_epoch(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    first = log.append_as_leader(batch(0) + batch(1, n=2), leader_epoch=7)
    assert (first.first_offset, first.last_offset, first.num_batches) == (0, 4, 2)
    assert first.num_records == 5 and first.log_append_time == -1
    second = log.append_as_leader(batch(2), leader_epoch=8)
    assert (second.first_offset, second.last_offset) == (5, 7)
    assert log.log_end_offset == 8
    headers = [h for _, h in iter_batches(log.read(0, 1 << 20).records)]
    assert [(h.base_offset, h.last_offset, h.partition_leader_epoch) for h in headers] == [
        (0, 2, 7),
        (3, 4, 7),
        (5, 7, 8),
    ]


def test_multi_segment_layout_and_reads(multi: Log) -> None:
    assert len(multi.segments) > 4
    names = sorted(p.name for p in multi.dir.iterdir())
    for seg in multi.segments:
        assert f"{seg.base_offset:020d}.log" in names
        assert seg.size <= 2000
    assert [s.base_offset for s in multi.segments] == sorted(s.base_offset for s in multi.segments)
    records = read_all(multi)
    assert [r.offset for r in records] == list(range(180))
    assert records[100].value == b"value-33-1" * 4


def test_index_entries_point_at_their_batches(multi: Log) -> None:
    checked = 0
    for seg in multi.segments:
        for offset, position in seg.index_entries:
            header = read_header(seg.pread(61, position))
            assert header.last_offset == offset  # Kafka keys entries by the batch's last offset
            checked += 1
        for ts, offset in seg.timeindex_entries:
            assert seg.base_offset <= offset < multi.log_end_offset and ts >= T0
    assert checked > 5


def test_every_offset_reads_the_batch_containing_it(multi: Log) -> None:
    for offset in range(multi.log_end_offset):
        data = multi.read(offset, 1).records  # min_one_message: exactly the first batch
        header = read_header(data)
        assert header.base_offset <= offset <= header.last_offset
        assert len(data) == header.size


def test_read_bounds(multi: Log) -> None:
    one = read_header(multi.read(0, 1).records).size
    data = multi.read(0, one * 3 + 10).records
    assert len(data) == one * 3
    assert multi.read(0, one - 1, min_one_message=False).records == b""
    bounded = multi.read(0, 1 << 20, max_offset=7).records
    assert [h.base_offset for _, h in iter_batches(bounded)] == [0, 3, 6]  # base 6 < 7 is returned whole
    assert multi.read(9, 1 << 20, max_offset=9).records == b""
    assert multi.read(multi.log_end_offset, 100).records == b""
    for bad in (-1, multi.log_end_offset + 1):
        with pytest.raises(KafkaError) as info:
            multi.read(bad, 100)
        assert info.value.code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_read_stays_within_one_segment(multi: Log) -> None:
    second = multi.segments[1]
    data = multi.read(second.base_offset - 1, 1 << 20).records
    last = [h for _, h in iter_batches(data)][-1]
    assert last.next_offset == second.base_offset
    assert read_header(multi.read(second.base_offset, 10).records).base_offset == second.base_offset


def test_sequential_consumer_reads(multi: Log) -> None:
    # exercises the cached batch boundaries: each read starts where the previous one ended
    offset, seen = 0, 0
    while offset < multi.log_end_offset:
        data = multi.read(offset, 500).records
        headers = [h for _, h in iter_batches(data)]
        assert headers[0].base_offset == offset
        offset = headers[-1].next_offset
        seen += sum(h.records_count for h in headers)
    assert seen == 180


def test_roll_by_segment_ms(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", {"segment.ms": "1000"})
    log.append_as_leader(batch(0, ts=T0), 0)
    log.append_as_leader(batch(1, ts=T0 + 1000), 0)
    assert len(log.segments) == 1
    log.append_as_leader(batch(2, ts=T0 + 1001), 0)
    assert [s.base_offset for s in log.segments] == [0, 6]


def test_roll_when_index_full(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", {"segment.index.bytes": "24", "index.interval.bytes": "1"})
    for i in range(12):
        log.append_as_leader(batch(i), 0)
    assert len(log.segments) > 2
    assert all(len(s.index_entries) <= 3 for s in log.segments)
    assert [r.offset for r in read_all(log)] == list(range(36))


def test_explicit_roll_and_empty_roll_is_noop(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(batch(0), 0)
    seg = log.roll()
    assert seg.base_offset == 3 and log.roll() is seg
    log.wait_for_background()  # the rolled segment is flushed by the disk worker
    assert log.recovery_point == 3


def test_failed_validation_writes_nothing(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", {"max.message.bytes": "400"})
    log.append_as_leader(batch(0), 0)
    size = log.size_in_bytes
    corrupt = bytearray(batch(2))
    corrupt[-1] ^= 0xFF
    for bad, code in (
        (batch(1) + bytes(corrupt), ErrorCode.CORRUPT_MESSAGE),
        (batch(1) + batch(2, n=30), ErrorCode.MESSAGE_TOO_LARGE),
    ):
        with pytest.raises(KafkaError) as info:
            log.append_as_leader(bad, 0)
        assert info.value.code == code
    assert (log.log_end_offset, log.size_in_bytes) == (3, size)


def test_log_append_time(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path / "t-0", {"message.timestamp.type": "LogAppendTime"}, clock)
    clock.now = T0 + 5000
    info = log.append_as_leader(batch(0, ts=1) + batch(1, ts=2), 0)
    assert (info.log_append_time, info.max_timestamp, info.offset_of_max_timestamp) == (
        T0 + 5000,
        T0 + 5000,
        0,
    )
    data = log.read(0, 1 << 20).records
    for _, h in iter_batches(data):
        assert h.timestamp_type == 1 and h.max_timestamp == T0 + 5000
    assert {r.timestamp for r in decode_records(data)} == {T0 + 5000}


def test_create_time_bounds(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", {"message.timestamp.difference.max.ms": "1000"})
    log.append_as_leader(batch(0, ts=T0 - 1000), 0)
    with pytest.raises(KafkaError) as info:
        log.append_as_leader(batch(1, ts=T0 + 1001), 0)
    assert info.value.code == ErrorCode.INVALID_TIMESTAMP


def test_topic_compression_type_recompresses(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", {"compression.type": "zstd"})
    log.append_as_leader(batch(0, codec=1) + batch(1, codec=0), 0)
    data = log.read(0, 1 << 20).records
    assert [h.compression for _, h in iter_batches(data)] == [4, 4]
    assert [r.value for r in read_all(log)][3] == b"value-1-0" * 4


@pytest.mark.parametrize(("codec_name", "low", "high"), [("gzip", "1", "9"), ("lz4", "1", "12"), ("zstd", "-20", "19")])
def test_recompression_uses_the_topic_level(tmp_path: Path, codec_name: str, low: str, high: str) -> None:
    """A batch the broker recompresses for the topic's compression.type is written at the topic's level."""
    words = [f"w{i % 97}x{i % 13}".encode() for i in range(4000)]
    records = [(None, b" ".join(words[j : j + 60])) for j in range(0, 3000, 30)]
    sizes = []
    for level in (low, high):
        log = open_log(
            tmp_path / f"t{level}-0", {"compression.type": codec_name, f"compression.{codec_name}.level": level}
        )
        log.append_as_leader(build_batch(records, timestamp=T0), 0)
        data = log.read(0, 1 << 20).records
        assert [h.compression for _, h in iter_batches(data)] == [COMPRESSION_CODECS[codec_name]]
        assert [r.value for r in read_all(log)] == [value for _, value in records]
        sizes.append(log.size_in_bytes)
    assert sizes[1] < sizes[0]


def test_flush_messages_advances_recovery_point(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", {"flush.messages": "5"})
    log.append_as_leader(batch(0), 0)
    assert log.recovery_point == 0
    info = log.append_as_leader(batch(1), 0)
    assert info.durable is not None
    info.durable.result()  # flushed by the disk worker; the recovery point moves once it is done
    assert log.recovery_point == 6


# --- offsets by time ------------------------------------------------------------------------------


def test_fetch_offset_by_timestamp(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", {"segment.bytes": "400", "index.interval.bytes": "100"})
    # batch i holds records with timestamps T0+100i, T0+100i+10, T0+100i+20, except batch 8 which
    # holds the largest timestamp of the log in its middle record (offset 25)
    for i in range(10):
        base = log.log_end_offset
        stamps = [T0 + 100 * i, T0 + 100 * i + 10, T0 + 100 * i + 20]
        if i == 8:
            stamps[1] = T0 + 50_000
        recs = [Record(base + j, ts, b"k", b"v%d" % j, []) for j, ts in enumerate(stamps)]
        log.append_as_leader(build_batch(recs, base_offset=base), 0)
    assert len(log.segments) > 2
    assert log.fetch_offset_by_timestamp(-2) == (0, -1)
    assert log.fetch_offset_by_timestamp(-1) == (30, -1)
    assert log.fetch_offset_by_timestamp(-3) == (25, T0 + 50_000)
    assert log.fetch_offset_by_timestamp(T0) == (0, T0)
    assert log.fetch_offset_by_timestamp(T0 + 305) == (10, T0 + 310)
    assert log.fetch_offset_by_timestamp(T0 + 721) == (24, T0 + 800)
    # the first record in offset order whose timestamp is >= the target, as Kafka answers
    assert log.fetch_offset_by_timestamp(T0 + 820) == (25, T0 + 50_000)
    assert log.fetch_offset_by_timestamp(T0 + 50_000) == (25, T0 + 50_000)
    assert log.fetch_offset_by_timestamp(T0 + 50_001) is None
    log.high_watermark = 30
    log.delete_records_before(-1)
    assert log.fetch_offset_by_timestamp(-2) == (30, -1)


def test_fetch_offset_by_timestamp_empty_log(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    assert log.fetch_offset_by_timestamp(-3) is None
    assert log.fetch_offset_by_timestamp(T0) is None


# --- retention, DeleteRecords, truncation ---------------------------------------------------------


def test_retention_by_time(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path / "t-0", {"segment.bytes": "600", "retention.ms": "10000"}, clock)
    for i in range(12):
        log.append_as_leader(batch(i, ts=T0 + i * 1000), 0)
    log.high_watermark = log.log_end_offset
    n = len(log.segments)
    clock.now = T0 + 10_000
    assert run_cleanup(log, clock.now) == 0
    clock.now = T0 + 14_500
    deleted = run_cleanup(log, clock.now)
    assert deleted >= 1 and len(log.segments) == n - deleted
    assert log.log_start_offset == log.segments[0].base_offset
    assert all(T0 + 14_500 - s.largest_timestamp <= 10_000 for s in log.segments[:-1])
    clock.now = T0 + 10**9
    run_cleanup(log, clock.now)
    assert len(log.segments) == 1  # never the active segment
    assert read_all(log)[0].offset == log.log_start_offset


def test_retention_by_size(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", {"segment.bytes": "600", "retention.bytes": "1500"})
    for i in range(20):
        log.append_as_leader(batch(i), 0)
    log.high_watermark = log.log_end_offset
    run_cleanup(log, T0)
    assert log.size_in_bytes >= 1500
    assert log.size_in_bytes - log.segments[0].size < 1500


def test_retention_respects_high_watermark_and_policy(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", {"segment.bytes": "600", "retention.ms": "1"})
    for i in range(10):
        log.append_as_leader(batch(i), 0)
    log.high_watermark = log.segments[1].base_offset
    assert run_cleanup(log, T0 + 10**6) == 1
    compact = open_log(
        tmp_path / "c-0", {"segment.bytes": "600", "retention.ms": "1", "cleanup.policy": "compact"}
    )
    for i in range(10):
        compact.append_as_leader(batch(i), 0)
    compact.high_watermark = compact.log_end_offset
    assert run_cleanup(compact, T0 + 10**6) == 0


def test_delete_records_before(multi: Log) -> None:
    multi.high_watermark = 100
    with pytest.raises(KafkaError) as info:
        multi.delete_records_before(101)
    assert info.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    n = len(multi.segments)
    assert multi.delete_records_before(50) == 50
    assert len(multi.segments) < n and multi.segments[0].base_offset <= 50
    with pytest.raises(KafkaError):
        multi.read(49, 100)
    assert read_header(multi.read(50, 1).records).base_offset == 48  # the batch containing 50
    assert multi.delete_records_before(10) == 50
    assert multi.delete_records_before(-1) == 100
    assert multi.high_watermark == 100


def test_high_watermark_is_clamped(multi: Log) -> None:
    multi.high_watermark = 10**9
    assert multi.high_watermark == multi.log_end_offset
    multi.high_watermark = -5
    assert multi.high_watermark == 0


def test_truncate_to(multi: Log) -> None:
    boundary = multi.segments[2].base_offset
    multi.truncate_to(boundary + 4)  # mid-batch: the straddling batch goes entirely
    assert multi.log_end_offset == boundary + 3
    assert len(multi.segments) == 3
    assert all(off < boundary + 3 for off, _ in multi.segments[-1].index_entries)
    assert [r.offset for r in read_all(multi)] == list(range(boundary + 3))
    info = multi.append_as_leader(batch(99), 0)
    assert info.first_offset == boundary + 3
    multi.truncate_to(boundary)
    assert multi.log_end_offset == boundary and multi.active_segment.size == 0
    multi.truncate_to(1)
    assert multi.log_end_offset == 0 and len(multi.segments) == 1
    assert multi.append_as_leader(batch(1), 0).first_offset == 0


def test_truncate_then_reopen(multi: Log) -> None:
    multi.truncate_to(100)
    entries = multi.active_segment.index_entries
    multi.close()
    reopened = open_log(multi.dir, {"segment.bytes": "2000", "index.interval.bytes": "300"})
    assert reopened.log_end_offset == 99
    assert reopened.active_segment.index_entries == entries


def test_truncate_fully_and_start_at(multi: Log) -> None:
    multi.truncate_fully_and_start_at(5000)
    assert (multi.log_start_offset, multi.log_end_offset, len(multi.segments)) == (5000, 5000, 1)
    assert multi.append_as_leader(batch(0), 0).first_offset == 5000
    assert (multi.dir / f"{5000:020d}.log").exists()


# --- follower appends -----------------------------------------------------------------------------


def test_append_as_follower_keeps_offsets_and_rolls_at_gaps(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    data = build_batch([(b"a", b"1")] * 3, base_offset=0, partition_leader_epoch=2)
    data += build_batch([(b"b", b"2")] * 2, base_offset=3, partition_leader_epoch=2)
    data += build_batch([(b"c", b"3")], base_offset=10, partition_leader_epoch=3)
    info = log.append_as_follower(data)
    assert (info.first_offset, info.last_offset, info.num_batches) == (0, 10, 3)
    assert log.log_end_offset == 11
    assert [s.base_offset for s in log.segments] == [0, 10]
    headers = [h for _, h in iter_batches(log.read(10, 100).records)]
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [(10, 3)]
    with pytest.raises(KafkaError) as info_err:
        log.append_as_follower(build_batch([(b"x", b"y")], base_offset=5))
    assert info_err.value.code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_follower_gap_into_empty_log(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_as_follower(build_batch([(b"a", b"1")], base_offset=100))
    assert [s.base_offset for s in log.segments] == [100]
    assert (log.log_start_offset, log.log_end_offset) == (100, 101)


# --- concurrency ----------------------------------------------------------------------------------


def test_retention_thread_concurrent_with_appends(tmp_path: Path) -> None:
    clock = Clock()
    log = open_log(tmp_path / "t-0", {"segment.bytes": "500", "retention.bytes": "2000"}, clock)
    with repeatedly_in_background(lambda: run_cleanup(log, clock.now)):
        for i in range(200):
            log.append_as_leader(batch(i), 0)
            log.high_watermark = log.log_end_offset
            with log.lock:  # the log start offset moves under us otherwise
                start = log.log_start_offset
                data = log.read(start, 300).records
            assert read_header(data).last_offset >= start
    run_cleanup(log, clock.now)
    assert log.log_end_offset == 600 and log.size_in_bytes < 2600
    assert [r.offset for r in read_all(log)][-1] == 599


# --- partition names, corrupt headers, topic configs applied ------------------------------------


def test_parse_topic_partition() -> None:
    assert parse_topic_partition("my-topic-with-dashes-12") == ("my-topic-with-dashes", 12)
    assert parse_topic_partition("__consumer_offsets-49") == ("__consumer_offsets", 49)
    for bad in ("nodash", "-3", "topic-x"):
        with pytest.raises(ValueError):
            parse_topic_partition(bad)


def test_corrupt_header_in_segment_read_is_reported(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(batch(0) + batch(1), 0)
    seg = log.active_segment
    import os

    os.pwrite(seg.fd, b"\x00\x00\x00\x01", 8)  # batch_length of the first batch
    with pytest.raises(CorruptRecordError):
        log.read(3, 100)


def test_delete_dir_name_fits_a_file_name_for_the_longest_topic() -> None:
    name = delete_dir_name("t" * 249, 12345)
    assert len(name.encode()) <= 255 and name.endswith("-delete") and "-12345." in name
    short = delete_dir_name("orders", 3)
    assert short.startswith("orders-3.") and short.endswith("-delete")
