"""Record batch v2 (magic 2): Kafka's exact wire and on-disk format, sans-io.

Two very different costs live here. The produce/fetch hot path only ever looks at the fixed 61-byte
batch header (`read_header`, `validate_batches`, the `set_*` patchers): O(batches) Python work plus the
C CRC32C. Decoding individual records (`decode_records`) and building batches (`build_batch`) are for
internal topics, tools, compaction and tests.

Batch layout (big-endian)::

    0  base_offset int64          27 base_timestamp int64
    8  batch_length int32         35 max_timestamp int64
    12 partition_leader_epoch     43 producer_id int64
    16 magic int8                 51 producer_epoch int16
    17 crc uint32 (CRC32C of 21..end)   53 base_sequence int32
    21 attributes int16           57 records_count int32
    23 last_offset_delta int32    61 records (compressed as a whole when attributes & 7 != 0)
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import cramjam
from crc32c import crc32c

from odradek.protocol.errors import CorruptRecordError, ErrorCode, InvalidRecordError, KafkaError

BATCH_OVERHEAD = 61
LOG_OVERHEAD = 12  # base_offset + batch_length: the part of a batch not counted in batch_length
MIN_BATCH_LENGTH = BATCH_OVERHEAD - LOG_OVERHEAD
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21  # CRC32C covers from here to the end of the batch
MAX_TIMESTAMP_OFFSET = 35
PARTITION_LEADER_EPOCH_OFFSET = 12
CURRENT_MAGIC = 2

COMPRESSION_NONE = 0
COMPRESSION_GZIP = 1
COMPRESSION_SNAPPY = 2
COMPRESSION_LZ4 = 3
COMPRESSION_ZSTD = 4
COMPRESSION_CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CODEC_NAMES = {v: k for k, v in COMPRESSION_CODECS.items()}

TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40  # KIP-534: base_timestamp holds the time tombstones in the batch may go
NO_TIMESTAMP = -1

HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
_PREFIX_STRUCT = struct.Struct(">qiibI")
_BODY_HEAD_STRUCT = struct.Struct(">hiqqqhii")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")

assert HEADER_STRUCT.size == BATCH_OVERHEAD


class BatchHeader(NamedTuple):
    """The fixed 61-byte header of one record batch."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & 0x07

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime."""
        return (self.attributes & TIMESTAMP_TYPE_MASK) >> 3

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        """When set by the log cleaner (KIP-534): the time after which the batch's tombstones may go."""
        return self.base_timestamp if self.attributes & DELETE_HORIZON_MASK else None


_make_header = BatchHeader._make
_unpack_header = HEADER_STRUCT.unpack_from


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse the batch header at `pos`; the magic byte is not checked here."""
    if len(buf) - pos < BATCH_OVERHEAD:
        raise CorruptRecordError(
            message=f"Record batch at position {pos} is truncated: "
            f"{max(len(buf) - pos, 0)} bytes, header needs {BATCH_OVERHEAD}"
        )
    header = _make_header(_unpack_header(buf, pos))
    if header.batch_length < MIN_BATCH_LENGTH:
        raise CorruptRecordError(
            message=f"Record batch at position {pos} has implausible length {header.batch_length}"
        )
    return header


_PRODUCER_FIELDS = struct.Struct(">qhi")  # producer id, producer epoch, base sequence (at offset 43)


def transactional_batches(buf: bytes | bytearray | memoryview) -> Iterator[tuple[int, int, int]]:
    """(producer id, producer epoch, base sequence) of each transactional batch, from the headers alone
    and before any validation (a produce request deciding whether it needs a transactional id); stops at
    the first batch that does not fit, which validation refuses later."""
    pos, end = 0, len(buf)
    while end - pos >= BATCH_OVERHEAD:
        (length,) = _INT32.unpack_from(buf, pos + 8)
        (attributes,) = _INT16.unpack_from(buf, pos + ATTRIBUTES_OFFSET)
        if attributes & TRANSACTIONAL_MASK:
            yield _PRODUCER_FIELDS.unpack_from(buf, pos + 43)
        if length < MIN_BATCH_LENGTH:
            return
        pos += length + LOG_OVERHEAD


def validate_batches(
    buf: bytes | bytearray | memoryview, max_batch_size: int | None, *, producer: bool = True
) -> list[tuple[int, BatchHeader]]:
    """Check every batch of a produced MemoryRecords buffer; return (position, header) for each.

    Never decodes records. With `producer` (the default, for client produce requests) each batch must
    also hold exactly last_offset_delta + 1 records, as a producer always writes; replicated or compacted
    data (`producer=False`) may have fewer records than its offset range.
    """
    end = len(buf)
    if end == 0:
        raise InvalidRecordError(message="Produce request contains no record batches")
    batches: list[tuple[int, BatchHeader]] = []
    pos = 0
    while pos < end:
        if end - pos <= MAGIC_OFFSET:
            raise CorruptRecordError(message=f"Truncated record batch at position {pos}")
        magic = buf[pos + MAGIC_OFFSET]
        if magic != CURRENT_MAGIC:
            raise KafkaError(
                ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                f"Record batch at position {pos} has magic {magic}; only magic 2 is supported",
            )
        header = read_header(buf, pos)
        size = header.batch_length + LOG_OVERHEAD
        if pos + size > end:
            raise CorruptRecordError(
                message=f"Record batch at position {pos} claims {size} bytes but only {end - pos} remain"
            )
        if max_batch_size is not None and size > max_batch_size:
            raise KafkaError(
                ErrorCode.MESSAGE_TOO_LARGE,
                f"Record batch at position {pos} is {size} bytes, larger than the maximum {max_batch_size}",
            )
        computed = crc32c(buf[pos + ATTRIBUTES_OFFSET : pos + size])
        if computed != header.crc:
            raise CorruptRecordError(
                message=f"Record batch at position {pos} has CRC 0x{header.crc:08x} but computed 0x{computed:08x}"
            )
        _check_batch_fields(header, pos, producer)
        batches.append((pos, header))
        pos += size
    return batches


def _check_batch_fields(header: BatchHeader, pos: int, producer: bool) -> None:
    if header.attributes & 0x07 > COMPRESSION_ZSTD:
        raise KafkaError(
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
            f"Record batch at position {pos} uses unknown compression codec {header.attributes & 0x07}",
        )
    count, delta = header.records_count, header.last_offset_delta
    if producer:
        if count <= 0 or delta != count - 1:
            raise InvalidRecordError(
                message=f"Record batch at position {pos}: inconsistent offset range "
                f"(last offset delta {delta}) and record count {count}"
            )
    elif count < 0 or delta < 0 or count > delta + 1:
        raise InvalidRecordError(
            message=f"Record batch at position {pos}: invalid last offset delta {delta} "
            f"for record count {count}"
        )


def iter_batches(buf: bytes | bytearray | memoryview, pos: int = 0) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) for each whole batch in `buf`, stopping quietly at a partial tail.

    A header whose length is implausible raises CorruptRecordError. CRCs are not checked.
    """
    end = len(buf)
    while end - pos >= BATCH_OVERHEAD:
        header = read_header(buf, pos)
        size = header.batch_length + LOG_OVERHEAD
        if pos + size > end:
            return
        yield pos, header
        pos += size


# --- patching helpers (hot path: fields outside the CRC, or one CRC recompute) -----------------


def set_base_offset(buf: bytearray | memoryview, pos: int, offset: int) -> None:
    _INT64.pack_into(buf, pos, offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_log_append_time(buf: bytearray | memoryview, pos: int, ts: int) -> None:
    """Mark the batch LogAppendTime with max_timestamp = ts, then recompute its CRC."""
    attributes = _INT16.unpack_from(buf, pos + ATTRIBUTES_OFFSET)[0]
    _INT16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attributes | TIMESTAMP_TYPE_MASK)
    _INT64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, ts)
    size = _INT32.unpack_from(buf, pos + 8)[0] + LOG_OVERHEAD
    _UINT32.pack_into(buf, pos + CRC_OFFSET, crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET : pos + size]))


# --- compression ---------------------------------------------------------------------------------

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)  # version 1, minimum compatible version 1
_XERIAL_BLOCK_SIZE = 32 * 1024  # snappy-java's SnappyOutputStream default, as the Java client uses
_LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_BLOCK_SIZE = 64 * 1024
# FLG: version 01, independent blocks, no block/content checksum, no content size; BD: 64 KB blocks.
# This is the frame descriptor the Java client's LZ4 output stream writes.
_LZ4_DESCRIPTOR = bytes([0x60, 0x40])
_LZ4_UNCOMPRESSED_BIT = 0x80000000
# Kafka's default compression levels (CompressionType): gzip's -1 is Deflater's default, zlib level 6
_GZIP_DEFAULT_LEVEL = -1
_GZIP_ZLIB_DEFAULT = 6
_LZ4_DEFAULT_LEVEL = 9
_ZSTD_DEFAULT_LEVEL = 3


def _xxh32_short(data: bytes, seed: int = 0) -> int:
    """XXH32 for inputs shorter than 16 bytes: only the LZ4 frame-descriptor checksum needs it."""
    p1, p2, p3, p4, p5, mask = 2654435761, 2246822519, 3266489917, 668265263, 374761393, 0xFFFFFFFF
    if len(data) >= 16:
        raise ValueError("_xxh32_short handles inputs under 16 bytes")

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    h = (seed + p5 + len(data)) & mask
    i = 0
    while i + 4 <= len(data):
        h = rotl((h + int.from_bytes(data[i : i + 4], "little") * p3) & mask, 17) * p4 & mask
        i += 4
    for b in data[i:]:
        h = rotl((h + b * p5) & mask, 11) * p1 & mask
    h ^= h >> 15
    h = h * p2 & mask
    h ^= h >> 13
    h = h * p3 & mask
    return h ^ (h >> 16)


_LZ4_FRAME_HEADER = _LZ4_FRAME_MAGIC + _LZ4_DESCRIPTOR + bytes([(_xxh32_short(_LZ4_DESCRIPTOR) >> 8) & 0xFF])


def _snappy_xerial_compress(data: bytes | memoryview) -> bytes:
    view = memoryview(data)
    parts = [_XERIAL_HEADER]
    for start in range(0, len(view), _XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK_SIZE]))
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_decompress(data: bytes | memoryview) -> bytes:
    view = memoryview(data)
    if bytes(view[:8]) != _XERIAL_MAGIC:
        return bytes(cramjam.snappy.decompress_raw(view))
    parts = []
    pos = len(_XERIAL_HEADER)
    while pos < len(view):
        if pos + 4 > len(view):
            raise CorruptRecordError(message="Truncated xerial snappy block length")
        length = _INT32.unpack_from(view, pos)[0]
        pos += 4
        if length < 0 or pos + length > len(view):
            raise CorruptRecordError(message="Truncated xerial snappy block")
        parts.append(bytes(cramjam.snappy.decompress_raw(view[pos : pos + length])))
        pos += length
    return b"".join(parts)


def _lz4_compress(data: bytes | memoryview) -> bytes:
    view = memoryview(data)
    parts = [_LZ4_FRAME_HEADER]
    for start in range(0, len(view), _LZ4_BLOCK_SIZE):
        chunk = view[start : start + _LZ4_BLOCK_SIZE]
        block = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        if len(block) >= len(chunk):
            parts.append(struct.pack("<I", len(chunk) | _LZ4_UNCOMPRESSED_BIT))
            parts.append(bytes(chunk))
        else:
            parts.append(struct.pack("<I", len(block)))
            parts.append(block)
    parts.append(b"\x00\x00\x00\x00")  # end mark
    return b"".join(parts)


def _lz4_compress_at(data: bytes | memoryview, level: int) -> bytes:
    """An LZ4 frame at `level`, for Kafka's non-default compression.lz4.level (the Java client then uses
    LZ4's high compressor; LZ4 itself compresses levels below 3 in its fast mode). Blocks are independent
    and there is no content checksum, as Kafka's reader requires; each block carries the checksum the
    frame format allows, which Kafka's reader verifies."""
    compressor = cramjam.lz4.Compressor(level=level, content_checksum=False, block_linked=False)
    compressor.compress(data)
    return bytes(compressor.finish())


def compress(codec: int, data: bytes | memoryview, level: int | None = None) -> bytes:
    """Compress a records payload the way the Java client does for `codec`, at `level`: Kafka's
    compression.<codec>.level (gzip 1-9 or -1, lz4 1-17, zstd -131072..22), None meaning the codec's
    default level; snappy has no level."""
    if codec == COMPRESSION_NONE:
        return bytes(data)
    if codec == COMPRESSION_GZIP:
        gzip_level = _GZIP_ZLIB_DEFAULT if level is None or level == _GZIP_DEFAULT_LEVEL else level
        return bytes(cramjam.gzip.compress(data, level=gzip_level))
    if codec == COMPRESSION_SNAPPY:
        return _snappy_xerial_compress(data)
    if codec == COMPRESSION_LZ4:
        if level is None or level == _LZ4_DEFAULT_LEVEL:
            return _lz4_compress(data)
        return _lz4_compress_at(data, level)
    if codec == COMPRESSION_ZSTD:
        return bytes(cramjam.zstd.compress(data, level=_ZSTD_DEFAULT_LEVEL if level is None else level))
    raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"Unknown compression codec {codec}")


def decompress(codec: int, data: bytes | memoryview) -> bytes:
    """Inverse of `compress`; also accepts raw snappy and any valid gzip/LZ4-frame/zstd stream."""
    try:
        if codec == COMPRESSION_NONE:
            return bytes(data)
        if codec == COMPRESSION_GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == COMPRESSION_SNAPPY:
            return _snappy_decompress(data)
        if codec == COMPRESSION_LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == COMPRESSION_ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except cramjam.DecompressionError as exc:
        raise CorruptRecordError(message=f"Cannot decompress {CODEC_NAMES[codec]} records: {exc}") from exc
    raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"Unknown compression codec {codec}")


_FIRST_GUESS = 64 * 1024  # the first output buffer of a bounded decompression; doubled up to the limit


def decompress_bounded(codec: int, payload: bytes | memoryview, limit: int) -> bytes | memoryview:
    """The records of a batch payload compressed with `codec`, refused (DecompressedTooLarge, INVALID_RECORD)
    when they inflate past `limit` bytes: what the leader uses on a client's batches (`decompress` trusts its
    input). Snappy declares its sizes up front; the other codecs decompress into a buffer grown by
    doubling up to the limit, so a small compressed bomb costs at most `limit` bytes of memory."""
    if codec == COMPRESSION_NONE:
        if len(payload) > limit:
            raise _too_large(limit)
        return bytes(payload)
    if codec == COMPRESSION_SNAPPY:
        if _snappy_size(payload) > limit:
            raise _too_large(limit)
        return decompress(codec, payload)
    module = {COMPRESSION_GZIP: cramjam.gzip, COMPRESSION_LZ4: cramjam.lz4, COMPRESSION_ZSTD: cramjam.zstd}.get(codec)
    if module is None:
        raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"Unknown compression codec {codec}")
    size = min(limit, max(_FIRST_GUESS, 4 * len(payload)))
    while True:
        out = bytearray(size + 1)  # one byte more than allowed: filling it means "larger than size"
        try:
            written = module.decompress_into(payload, out)
        except cramjam.DecompressionError as exc:
            if "whole buffer" not in str(exc):
                raise CorruptRecordError(message=f"Cannot decompress the records: {exc}") from None
            written = size + 1
        if written <= size:
            return memoryview(out)[:written]
        if size >= limit:
            raise _too_large(limit)
        size = min(limit, size * 2)


def _snappy_size(payload: bytes | memoryview) -> int:
    """The decompressed size snappy data declares (raw snappy, or Kafka's xerial framing of raw blocks)."""
    try:
        if bytes(payload[:8]) != _XERIAL_MAGIC:
            return int(cramjam.snappy.decompress_raw_len(payload))
        total, pos = 0, len(_XERIAL_HEADER)
        while pos + 4 <= len(payload):
            (length,) = _INT32.unpack_from(payload, pos)
            pos += 4
            if length < 0 or pos + length > len(payload):
                raise CorruptRecordError(message="Truncated xerial snappy block")
            total += int(cramjam.snappy.decompress_raw_len(payload[pos : pos + length]))
            pos += length
        return total
    except cramjam.DecompressionError as exc:
        raise CorruptRecordError(message=f"Cannot decompress the records: {exc}") from None


class DecompressedTooLarge(InvalidRecordError):
    """The records of a batch decompress past the budget given (INVALID_RECORD)."""


def _too_large(limit: int) -> DecompressedTooLarge:
    return DecompressedTooLarge(message=f"The records of a batch decompress to more than {limit} bytes, the most "
                                        "the broker inflates to check a produced batch")


# --- records ---------------------------------------------------------------------------------------


@dataclass
class Record:
    """One decoded record; `offset` and `timestamp` are absolute (batch base + delta)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Zigzag varint (up to 64 bits) at pos -> (value, next position)."""
    b = buf[pos]
    pos += 1
    raw = b & 0x7F
    shift = 7
    while b & 0x80:
        if shift > 63:
            raise CorruptRecordError(message="Varint is longer than 10 bytes")
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        shift += 7
    return (raw >> 1) ^ -(raw & 1), pos


def _read_bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = read_varint(buf, pos)
    if length < 0:
        return None, pos
    end = pos + length
    if end > len(buf):
        raise CorruptRecordError(message="Record field runs past the end of the batch")
    return buf[pos:end], end


def _decode_one(buf: bytes, pos: int, header: BatchHeader) -> tuple[Record, int]:
    length, pos = read_varint(buf, pos)
    end = pos + length
    pos += 1  # record attributes: unused
    ts_delta, pos = read_varint(buf, pos)
    offset_delta, pos = read_varint(buf, pos)
    key, pos = _read_bytes(buf, pos)
    value, pos = _read_bytes(buf, pos)
    n_headers, pos = read_varint(buf, pos)
    if n_headers < 0:
        raise CorruptRecordError(message=f"Record has negative header count {n_headers}")
    headers: list[tuple[str, bytes | None]] = []
    for _ in range(n_headers):
        hkey, pos = _read_bytes(buf, pos)
        if hkey is None:
            raise CorruptRecordError(message="Record header key is null")
        hvalue, pos = _read_bytes(buf, pos)
        headers.append((hkey.decode("utf-8", "replace"), hvalue))
    if pos != end:
        raise CorruptRecordError(message=f"Record length {length} does not match its contents")
    if header.attributes & TIMESTAMP_TYPE_MASK:
        timestamp = header.max_timestamp
    else:
        timestamp = header.base_timestamp + ts_delta
    return Record(header.base_offset + offset_delta, timestamp, key, value, headers), pos


class DecompressionBudget:
    """How many more bytes a client's batches may inflate to (`decode_records` of each, one after another)."""

    __slots__ = ("left",)

    def __init__(self, limit: int) -> None:
        self.left = limit

    def take(self, codec: int, payload: bytes | memoryview) -> bytes | memoryview:
        data = decompress_bounded(codec, payload, self.left)
        self.left -= len(data)
        return data


def decode_records(batch: bytes | bytearray | memoryview, budget: DecompressionBudget | None = None) -> list[Record]:
    """Decode every record of the batch at the start of `batch` (not for the hot path); a compressed batch
    inflates within `budget` when one is given (a client's batch: DecompressedTooLarge past it).

    For LogAppendTime batches each record's timestamp is the batch's max_timestamp, as Kafka reports it.
    """
    header = read_header(batch, 0)
    if header.magic != CURRENT_MAGIC:
        raise KafkaError(ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, f"Cannot decode magic {header.magic}")
    if header.size > len(batch):
        raise CorruptRecordError(message=f"Record batch needs {header.size} bytes, only {len(batch)} given")
    payload = memoryview(batch)[BATCH_OVERHEAD : header.size]
    if budget is not None and header.compression:
        data = bytes(budget.take(header.compression, payload))
    else:
        data = decompress(header.compression, payload)
    records: list[Record] = []
    pos = 0
    try:
        for _ in range(header.records_count):
            record, pos = _decode_one(data, pos, header)
            records.append(record)
    except (IndexError, UnicodeDecodeError) as exc:
        raise CorruptRecordError(message=f"Record batch at offset {header.base_offset} is malformed") from exc
    if pos != len(data):
        raise CorruptRecordError(
            message=f"Record batch at offset {header.base_offset} has {len(data) - pos} bytes after its records"
        )
    return records


def _varint(value: int) -> bytes:
    raw = (value << 1) ^ (value >> 63)
    out = bytearray()
    while raw > 0x7F:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def _field(data: bytes | bytearray | memoryview | str | None) -> bytes:
    if data is None:
        return _varint(-1)
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return _varint(len(raw)) + raw


def _encode_record(
    offset_delta: int, ts_delta: int, key: Any, value: Any, headers: Sequence[tuple[Any, Any]]
) -> bytes:
    body = b"".join(
        [
            b"\x00",
            _varint(ts_delta),
            _varint(offset_delta),
            _field(key),
            _field(value),
            _varint(len(headers)),
            *(_field(hk) + _field(hv) for hk, hv in headers),
        ]
    )
    return _varint(len(body)) + body


def _normalise(
    records: Sequence[Any], base_offset: int, timestamp: int
) -> list[tuple[int, int, Any, Any, Sequence[tuple[Any, Any]]]]:
    """-> (offset_delta, timestamp, key, value, headers) per record."""
    out = []
    for i, rec in enumerate(records):
        if isinstance(rec, tuple | list):
            key, value = rec[0], rec[1]
            headers = rec[2] if len(rec) > 2 and rec[2] is not None else ()
            out.append((i, timestamp, key, value, headers))
        else:
            ts = rec.timestamp if rec.timestamp is not None else timestamp
            delta = rec.offset - base_offset
            if not 0 <= delta <= 0x7FFFFFFF:
                raise ValueError(
                    f"Record offset {rec.offset} is not within 2^31 above base offset {base_offset}"
                )
            out.append((delta, ts, rec.key, rec.value, rec.headers or ()))
    return out


def build_batch(
    records: Sequence[Any],
    *,
    base_offset: int = 0,
    compression: int = COMPRESSION_NONE,
    compression_level: int | None = None,
    timestamp: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    is_control: bool = False,
    is_transactional: bool = False,
) -> bytes:
    """Build one v2 batch as the Java client writes it.

    `records` holds `(key, value)`, `(key, value, headers)` or Record-like objects. Tuples get offset
    deltas 0, 1, 2... and `timestamp` (default: now); Record-likes keep their own timestamp and their
    offset relative to `base_offset` (so a decoded batch rebuilds with its original offsets).
    `compression_level` is Kafka's level for the codec (None: the codec's default).
    """
    if not records:
        raise ValueError("A record batch needs at least one record")
    ts_default = int(time.time() * 1000) if timestamp is None else timestamp
    items = _normalise(records, base_offset, ts_default)
    base_ts = items[0][1]
    max_ts = max(item[1] for item in items)
    payload = b"".join(_encode_record(d, ts - base_ts, k, v, h) for d, ts, k, v, h in items)
    payload = compress(compression, payload, compression_level)
    attributes = compression
    if is_transactional:
        attributes |= TRANSACTIONAL_MASK
    if is_control:
        attributes |= CONTROL_MASK
    last_delta = max(item[0] for item in items)
    body = (
        _BODY_HEAD_STRUCT.pack(
            attributes, last_delta, base_ts, max_ts, producer_id, producer_epoch, base_sequence, len(items)
        )
        + payload
    )
    prefix = _PREFIX_STRUCT.pack(
        base_offset,
        len(body) + ATTRIBUTES_OFFSET - LOG_OVERHEAD,
        partition_leader_epoch,
        CURRENT_MAGIC,
        crc32c(body),
    )
    return prefix + body


def rebuild_batch(header: BatchHeader, records: Sequence[Record], *, delete_horizon_ms: int | None = None) -> bytes:
    """A batch holding a subset of `header`'s batch records, as Kafka's log cleaner writes one.

    The batch keeps its base offset and last offset delta (so its offset range, and the producer's
    sequence range, stay those of the original), its attributes (codec, timestamp type, transactional,
    control), producer fields and partition leader epoch; records keep their offsets and timestamps.
    With `delete_horizon_ms` (or when the original had one) the delete horizon flag is set and the base
    timestamp holds the horizon, record timestamps being deltas from it. The records are compressed at
    the codec's default level, as Kafka's cleaner does.
    """
    if not records:
        raise ValueError("A rebuilt batch needs at least one record")
    attributes = header.attributes
    if delete_horizon_ms is None:
        delete_horizon_ms = header.delete_horizon_ms
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_MASK
        base_ts = delete_horizon_ms
    else:
        base_ts = records[0].timestamp
    log_append_time = attributes & TIMESTAMP_TYPE_MASK
    max_ts = header.max_timestamp if log_append_time else max(r.timestamp for r in records)
    payload = b"".join(
        _encode_record(r.offset - header.base_offset, r.timestamp - base_ts, r.key, r.value, r.headers)
        for r in records
    )
    body = _BODY_HEAD_STRUCT.pack(
        attributes,
        header.last_offset_delta,
        base_ts,
        max_ts,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        len(records),
    ) + compress(header.compression, payload)
    prefix = _PREFIX_STRUCT.pack(
        header.base_offset,
        len(body) + ATTRIBUTES_OFFSET - LOG_OVERHEAD,
        header.partition_leader_epoch,
        CURRENT_MAGIC,
        crc32c(body),
    )
    return prefix + body


ABORT_MARKER, COMMIT_MARKER = 0, 1


def read_marker(batch: bytes | bytearray | memoryview) -> tuple[int | None, int]:
    """(control type, coordinator epoch) of a control batch, from its one record: type ABORT_MARKER 0,
    COMMIT_MARKER 1 (others as Kafka numbers them), None when unreadable; epoch -1 when unreadable."""
    try:
        records = decode_records(batch)
    except Exception:
        return None, -1
    key = records[0].key if records else None
    value = records[0].value if records else None
    kind = int(struct.unpack_from(">h", key, 2)[0]) if key is not None and len(key) >= 4 else None
    epoch = int(struct.unpack_from(">i", value, 2)[0]) if value is not None and len(value) >= 6 else -1
    return kind, epoch


def marker_type(batch: bytes | bytearray | memoryview) -> int | None:
    """The control type of a control batch (see `read_marker`)."""
    return read_marker(batch)[0]


def build_marker(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                 timestamp: int | None = None) -> bytes:
    """A commit/abort marker: a control batch of one record (key: version 0, type 1 commit / 0 abort;
    value: version 0, coordinator epoch)."""
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, coordinator_epoch)
    return build_batch([(key, value)], timestamp=timestamp, producer_id=producer_id, producer_epoch=producer_epoch,
                       is_control=True, is_transactional=True)
