"""Record batch v2: header parsing, validation, patching, and wire compatibility with kafka-python."""

from __future__ import annotations

import struct

import cramjam
import pytest
from crc32c import crc32c
from kafka import codec as kafka_codec
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from odradek.protocol.errors import CorruptRecordError, ErrorCode, InvalidRecordError, KafkaError
from odradek.protocol.records import (
    BATCH_OVERHEAD,
    Record,
    build_batch,
    decode_records,
    iter_batches,
    read_header,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    validate_batches,
)

CODECS = [0, 1, 2, 3, 4]
_KAFKA_PYTHON_HAS = {
    0: True,
    1: True,
    2: kafka_codec.has_snappy(),
    3: kafka_codec.has_lz4(),
    4: kafka_codec.has_zstd(),
}


def sample_records(n: int = 20) -> list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]]:
    out: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]] = []
    for i in range(n):
        key = None if i % 5 == 0 else f"key-{i}".encode()
        value = None if i % 7 == 3 else bytes([i % 256]) * (i * 37)
        headers = [("trace", f"t{i}".encode()), ("empty", None)] if i % 3 == 0 else []
        out.append((key, value, headers))
    return out


def kafka_python_batch(codec: int, records: list, base_ts: int = 1_600_000_000_000) -> bytes:
    builder = MemoryRecordsBuilder(magic=2, compression_type=codec, batch_size=1 << 22)
    for i, (key, value, headers) in enumerate(records):
        builder.append(timestamp=base_ts + i, key=key, value=value, headers=headers)
    builder.close()
    return bytes(builder.buffer())


def with_crc(batch: bytearray) -> bytearray:
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return batch


# --- header ---------------------------------------------------------------------------------------


def test_header_fields_and_properties() -> None:
    batch = build_batch(
        [(b"k", b"v"), (b"k2", b"v2")],
        base_offset=100,
        compression=1,
        timestamp=12345,
        producer_id=7,
        producer_epoch=3,
        base_sequence=11,
        partition_leader_epoch=9,
        is_transactional=True,
    )
    h = read_header(batch)
    assert (h.base_offset, h.partition_leader_epoch, h.magic) == (100, 9, 2)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.records_count) == (7, 3, 11, 2)
    assert (h.base_timestamp, h.max_timestamp) == (12345, 12345)
    assert h.size == len(batch) == h.batch_length + 12
    assert (h.last_offset_delta, h.last_offset, h.next_offset) == (1, 101, 102)
    assert h.compression == 1 and h.timestamp_type == 0
    assert h.is_transactional and not h.is_control
    assert read_header(build_batch([(None, b"x")], is_control=True)).is_control


def test_read_header_rejects_short_and_implausible() -> None:
    batch = bytearray(build_batch([(b"k", b"v")]))
    with pytest.raises(CorruptRecordError):
        read_header(batch[:60])
    struct.pack_into(">i", batch, 8, 10)
    with pytest.raises(CorruptRecordError):
        read_header(batch)


# --- round trips ----------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_build_decode_round_trip(codec: int) -> None:
    records = sample_records()
    batch = build_batch(records, base_offset=40, compression=codec, timestamp=1000)
    (pos, header), *_ = validate_batches(batch, None)
    assert pos == 0 and header.compression == codec
    decoded = decode_records(batch)
    assert [(r.key, r.value, r.headers) for r in decoded] == records
    assert [r.offset for r in decoded] == list(range(40, 60))
    assert {r.timestamp for r in decoded} == {1000}


@pytest.mark.parametrize("codec", CODECS)
def test_large_payload_spans_compression_blocks(codec: int) -> None:
    # > 64 KB: several LZ4 blocks and several xerial snappy blocks
    value = bytes(range(256)) * 1200
    batch = build_batch([(b"a", value), (b"b", value[::-1])], compression=codec)
    assert [r.value for r in decode_records(batch)] == [value, value[::-1]]


def test_record_likes_keep_offsets_and_timestamps() -> None:
    recs = [
        Record(offset=10, timestamp=500, key=b"a", value=b"1", headers=[]),
        Record(offset=12, timestamp=400, key=b"b", value=None, headers=[("h", b"x")]),
    ]
    batch = build_batch(recs, base_offset=10)
    h = read_header(batch)
    assert (h.last_offset_delta, h.records_count, h.base_timestamp, h.max_timestamp) == (2, 2, 500, 500)
    assert decode_records(batch) == recs
    validate_batches(batch, None, producer=False)
    with pytest.raises(InvalidRecordError):
        validate_batches(batch, None)  # a producer never leaves offset gaps


def test_uncompressed_batch_is_byte_identical_to_kafka_python() -> None:
    records = sample_records(10)
    theirs = kafka_python_batch(0, records, base_ts=5000)
    ours = build_batch(
        [Record(i, 5000 + i, k, v, h) for i, (k, v, h) in enumerate(records)],
        partition_leader_epoch=0,  # kafka-python writes 0 where the Java producer writes -1
    )
    assert ours == theirs


@pytest.mark.parametrize("codec", CODECS)
def test_decodes_kafka_python_batches(codec: int) -> None:
    if not _KAFKA_PYTHON_HAS[codec]:
        pytest.skip("kafka-python lacks this codec's library here")
    records = sample_records(30)
    batch = kafka_python_batch(codec, records)
    [(_, header)] = validate_batches(batch, None)
    assert header.compression == codec and header.records_count == 30
    decoded = decode_records(batch)
    assert [(r.key, r.value, r.headers) for r in decoded] == [(k, v, h) for k, v, h in records]
    assert [r.timestamp for r in decoded] == [1_600_000_000_000 + i for i in range(30)]


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_reads_our_batches(codec: int) -> None:
    if not _KAFKA_PYTHON_HAS[codec]:
        pytest.skip("kafka-python lacks this codec's library here")
    records = sample_records(30)
    batch = build_batch(records, base_offset=5, compression=codec, timestamp=777)
    theirs = MemoryRecords(batch).next_batch()
    assert theirs.validate_crc()
    got = [(r.offset, r.key, r.value, [(k, v) for k, v in r.headers], r.timestamp) for r in theirs]
    assert got == [(5 + i, k, v, h, 777) for i, (k, v, h) in enumerate(records)]


def _rewrap(batch: bytes, codec: int, payload: bytes) -> bytes:
    """Same header as `batch` but another codec and records payload; fixes length and CRC."""
    out = bytearray(batch[:BATCH_OVERHEAD]) + payload
    struct.pack_into(">i", out, 8, len(out) - 12)
    attributes = struct.unpack_from(">h", out, 21)[0]
    struct.pack_into(">h", out, 21, (attributes & ~7) | codec)
    return bytes(with_crc(out))


def test_decodes_raw_snappy_and_any_lz4_frame() -> None:
    records = sample_records(8)
    plain = build_batch(records)
    payload = plain[BATCH_OVERHEAD:]
    raw_snappy = _rewrap(plain, 2, bytes(cramjam.snappy.compress_raw(payload)))
    assert [(r.key, r.value, r.headers) for r in decode_records(raw_snappy)] == records
    lz4_default_frame = _rewrap(plain, 3, bytes(cramjam.lz4.compress(payload)))
    assert [(r.key, r.value, r.headers) for r in decode_records(lz4_default_frame)] == records


def test_lz4_frame_header_matches_java_descriptor() -> None:
    batch = build_batch([(b"k", b"v" * 100)], compression=3)
    # magic, FLG (v01, independent blocks), BD (64 KB), descriptor checksum
    assert batch[BATCH_OVERHEAD : BATCH_OVERHEAD + 7] == bytes.fromhex("04224d18604082")


def test_snappy_uses_xerial_framing() -> None:
    batch = build_batch([(b"k", b"v" * 100)], compression=2)
    assert batch[BATCH_OVERHEAD : BATCH_OVERHEAD + 16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)


def test_negative_timestamp_deltas_and_long_varints() -> None:
    recs = [
        Record(0, 10_000, b"k" * 300, b"v" * 70_000, [("h" * 200, b"x" * 129)]),
        Record(1, 5, None, b"", []),
    ]
    decoded = decode_records(build_batch(recs))
    assert decoded == recs


def test_decode_rejects_garbage_payload() -> None:
    plain = build_batch(sample_records(3))
    broken = _rewrap(plain, 0, plain[BATCH_OVERHEAD:-3])
    with pytest.raises(CorruptRecordError):
        decode_records(broken)
    with pytest.raises(CorruptRecordError):
        decode_records(_rewrap(plain, 1, b"not gzip at all"))


# --- validation -----------------------------------------------------------------------------------


def test_validate_walks_concatenated_batches() -> None:
    batches = [build_batch([(b"k", b"v" * i)] * (i + 1), compression=i % 5) for i in range(5)]
    buf = b"".join(batches)
    result = validate_batches(memoryview(buf), 1 << 20)
    positions = [0]
    for b in batches[:-1]:
        positions.append(positions[-1] + len(b))
    assert [pos for pos, _ in result] == positions
    assert [h.records_count for _, h in result] == [1, 2, 3, 4, 5]


def test_crc_mismatch_is_detected() -> None:
    buf = bytearray(build_batch([(b"k", b"v")]) + build_batch([(b"k", b"value")]))
    buf[-2] ^= 0x01
    with pytest.raises(
        CorruptRecordError, match=r"Record batch at position \d+ has CRC 0x[0-9a-f]{8} but computed"
    ):
        validate_batches(buf, None)


@pytest.mark.parametrize("magic", [0, 1])
def test_old_message_formats_are_rejected(magic: int) -> None:
    builder = MemoryRecordsBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
    builder.append(timestamp=1000 if magic else None, key=b"k", value=b"v")
    builder.close()
    with pytest.raises(KafkaError) as info:
        validate_batches(bytes(builder.buffer()), None)
    assert info.value.code == ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT


def test_truncated_batches_and_trailing_garbage_are_corrupt() -> None:
    batch = build_batch([(b"k", b"v" * 50)])
    for cut in (5, 17, 40, len(batch) - 1):
        with pytest.raises(CorruptRecordError):
            validate_batches(batch[:cut], None)
    with pytest.raises(CorruptRecordError):
        validate_batches(batch + b"\x00\x00\x00", None)


def test_empty_buffer_is_invalid() -> None:
    with pytest.raises(InvalidRecordError):
        validate_batches(b"", None)


def test_oversized_batch_is_rejected() -> None:
    batch = build_batch([(b"k", b"v" * 500)])
    validate_batches(batch, len(batch))
    with pytest.raises(KafkaError) as info:
        validate_batches(batch, len(batch) - 1)
    assert info.value.code == ErrorCode.MESSAGE_TOO_LARGE


def test_unknown_codec_is_rejected() -> None:
    batch = bytearray(build_batch([(b"k", b"v")]))
    struct.pack_into(">h", batch, 21, 5)
    with pytest.raises(KafkaError) as info:
        validate_batches(with_crc(batch), None)
    assert info.value.code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


def test_record_count_must_match_offset_range() -> None:
    batch = bytearray(build_batch([(b"k", b"v"), (b"k", b"w")]))
    struct.pack_into(">i", batch, 57, 3)
    with pytest.raises(InvalidRecordError):
        validate_batches(with_crc(batch), None)


# --- patching -------------------------------------------------------------------------------------


def test_offset_and_epoch_patches_keep_crc_valid() -> None:
    buf = bytearray(build_batch([(b"k", b"v")] * 3) + build_batch([(b"k", b"w")]))
    second = read_header(buf).size
    set_base_offset(buf, 0, 1000)
    set_base_offset(buf, second, 1003)
    set_partition_leader_epoch(buf, second, 42)
    result = validate_batches(buf, None)
    assert [(h.base_offset, h.partition_leader_epoch) for _, h in result] == [(1000, -1), (1003, 42)]
    assert [r.offset for r in decode_records(memoryview(buf)[second:])] == [1003]


def test_log_append_time_patch() -> None:
    buf = bytearray(build_batch([(b"k", b"v"), (b"k", b"w")], timestamp=100))
    set_log_append_time(buf, 0, 999_999)
    [(_, h)] = validate_batches(buf, None)
    assert h.timestamp_type == 1 and h.max_timestamp == 999_999 and h.base_timestamp == 100
    assert [r.timestamp for r in decode_records(buf)] == [999_999, 999_999]


def test_iter_batches_stops_at_partial_tail() -> None:
    batches = [build_batch([(b"k", b"v" * i)]) for i in range(1, 4)]
    buf = b"".join(batches)
    assert len(list(iter_batches(buf))) == 3
    assert len(list(iter_batches(buf[:-1]))) == 2
    assert len(list(iter_batches(buf[: len(batches[0]) + 30]))) == 1
