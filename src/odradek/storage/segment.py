"""One log segment: a `.log` file of record batches plus its `.index` and `.timeindex`, Kafka's layout.

Files are named by the segment's base offset, zero-padded to 20 digits. The offset index holds
(4-byte offset relative to the base, 4-byte file position) entries, big-endian, one every
`index.interval.bytes` of log, keyed like Kafka's by the last offset of the indexed batch; the time
index holds (8-byte max timestamp so far, 4-byte relative offset of that timestamp's batch). Both are
kept in memory (arrays + bisect), loaded lazily, and appended to their files; they are never
preallocated or mmapped. Every read is an `os.pread` on the `.log` descriptor, so records are never
decoded here: batch boundaries come from the 61-byte headers alone.

Offsets increase strictly through a segment but need not be dense: compaction removes records and whole
batches (keeping the offsets of the survivors), and a follower copies those gaps from its leader.
A segment being written by the cleaner carries a file suffix (`.cleaned`, then `.swap`) until swapped in.
"""

from __future__ import annotations

import logging
import os
import struct
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from crc32c import crc32c

from odradek.fsutil import atomic_write
from odradek.protocol.errors import CorruptRecordError, ErrorCode, KafkaError
from odradek.protocol.records import (
    ATTRIBUTES_OFFSET,
    BATCH_OVERHEAD,
    COMPRESSION_ZSTD,
    CURRENT_MAGIC,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    BatchHeader,
    read_header,
)

log = logging.getLogger("odradek.storage")

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIMEINDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
INDEX_ENTRY_SIZE = 8
TIMEINDEX_ENTRY_SIZE = 12
MAX_RELATIVE_OFFSET = 0x7FFFFFFF
SCAN_CHUNK = 64 * 1024
HOP_CHUNK = 4096  # bytes read at each batch header a span walks to (small batches share one read)
RECOVERY_CHUNK = 8 * 1024 * 1024

_BASE_AND_LENGTH = struct.Struct(">qi")
_LAST_OFFSET_DELTA = struct.Struct(">i")
_LITTLE_ENDIAN = sys.byteorder == "little"
_BELOW = "base offset falls back:"


class StorageError(KafkaError):
    """A disk-level failure (unwritable dir, I/O error); reaches clients as KAFKA_STORAGE_ERROR."""

    code = ErrorCode.KAFKA_STORAGE_ERROR


def file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


def parse_base_offset(name: str, suffix: str = LOG_SUFFIX) -> int | None:
    """'00000000000000000042.log' -> 42; None when the name is not a segment file name."""
    if not name.endswith(suffix):
        return None
    stem = name[: -len(suffix)]
    return int(stem) if len(stem) == 20 and stem.isdigit() else None


class BatchEntry(NamedTuple):
    """What a segment needs to know about one batch being appended (position is within the buffer)."""

    position: int
    size: int
    last_offset: int
    max_timestamp: int


class SegmentSpan(NamedTuple):
    """Where the batches a read would return lie in the .log, without their bytes (zero-copy reads)."""

    position: int  # file position of the first batch
    end_position: int  # file position just after the last batch (== position when none)
    next_offset: int  # offset after the last batch (== first offset when none)


class SegmentRead(NamedTuple):
    data: bytes
    position: int  # file position of the first returned batch
    end_position: int  # file position just after the last returned batch
    next_offset: int  # offset after the last returned batch (== first offset when data is empty)


def _int_array(typecode: str, data: bytes) -> array:
    arr = array(typecode)
    arr.frombytes(data)
    if _LITTLE_ENDIAN:
        arr.byteswap()
    return arr


def _write_all(fd: int, data: bytes | bytearray | memoryview, position: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, position)
        view = view[n:]
        position += n


class LogSegment:
    """One segment. Not thread-safe: the owning Log serialises access (a flush on another thread works
    on duplicated descriptors, see `sync_handles`)."""

    def __init__(
        self,
        dir: Path,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_bytes: int,
        now_ms: int,
        create: bool = False,
        suffix: str = "",
    ) -> None:
        self.dir = dir
        self.base_offset = base_offset
        self.suffix = suffix
        self._set_paths(suffix)
        self.index_interval_bytes = index_interval_bytes
        self.max_index_bytes = max_index_bytes
        self.created_ms = now_ms
        self.roll_jitter_ms = 0
        self._index_fd: int | None = None
        self._timeindex_fd: int | None = None
        self._fd: int | None = None  # each file is opened when first used: idle partitions hold no descriptors
        if create:
            os.close(os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644))
            self.size = 0
            for path in (self.index_path, self.timeindex_path):
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
        else:
            self.size = self.log_path.stat().st_size
        self._indexes_loaded = create
        self._idx_offsets = array("i")  # offsets relative to base_offset
        self._idx_positions = array("i")
        self._ti_timestamps = array("q")
        self._ti_offsets = array("i")
        self._bytes_since_index = 0
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self._rolling_ts: int | None = None
        self._rolling_ts_known = create
        # writes since creation, and how many of them an fsync has covered (a flush may run on another
        # thread while appends go on: it covers the writes counted when it took its descriptors)
        self._writes = 1 if create else 0
        self._synced = 0
        self.next_offset: int | None = base_offset if create else None

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size})"

    # --- files -------------------------------------------------------------------------------

    @staticmethod
    def paths(dir: Path, base_offset: int, suffix: str = "") -> tuple[Path, Path, Path]:
        """The .log, .index and .timeindex paths of a segment, each name followed by `suffix`."""
        return (
            dir / (file_name(base_offset, LOG_SUFFIX) + suffix),
            dir / (file_name(base_offset, INDEX_SUFFIX) + suffix),
            dir / (file_name(base_offset, TIMEINDEX_SUFFIX) + suffix),
        )

    def _set_paths(self, suffix: str) -> None:
        self.suffix = suffix
        self.log_path, self.index_path, self.timeindex_path = self.paths(self.dir, self.base_offset, suffix)

    def change_dir(self, new_dir: Path) -> None:
        """The directory was renamed (the files moved with it): recompute the paths."""
        self.dir = new_dir
        self._set_paths(self.suffix)

    def change_suffix(self, suffix: str) -> None:
        """Rename the segment's files to carry `suffix` ('' for the final names), replacing files of
        those names. The indexes go first and the .log last: the .log's rename is the step that counts."""
        old = (self.index_path, self.timeindex_path, self.log_path)
        self._set_paths(suffix)
        for src, dst in zip(old, (self.index_path, self.timeindex_path, self.log_path), strict=True):
            if src.exists():
                os.replace(src, dst)

    @property
    def fd(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.log_path, os.O_RDWR)
        return self._fd

    def pread(self, size: int, position: int) -> bytes:
        return os.pread(self.fd, size, position) if size > 0 else b""

    def iter_headers(self, start: int = 0) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each whole batch from `start`, reading chunks; stops at a partial tail."""
        limit = self.size
        pos = start
        buf = b""
        buf_pos = start
        while limit - pos >= BATCH_OVERHEAD:
            off = pos - buf_pos
            if len(buf) - off < BATCH_OVERHEAD:
                buf = self.pread(min(SCAN_CHUNK, limit - pos), pos)
                buf_pos, off = pos, 0
            header = read_header(buf, off)
            if pos + header.size > limit:
                return
            yield pos, header
            pos += header.size

    # --- indexes -----------------------------------------------------------------------------

    @property
    def max_index_entries(self) -> int:
        return self.max_index_bytes // INDEX_ENTRY_SIZE

    @property
    def max_timeindex_entries(self) -> int:
        return self.max_index_bytes // TIMEINDEX_ENTRY_SIZE

    def load_indexes(self) -> None:
        """Load (or rebuild) the indexes now; they are otherwise loaded on first use."""
        self._ensure_indexes()

    def _ensure_indexes(self) -> None:
        if self._indexes_loaded:
            return
        self._indexes_loaded = True
        if not self._load_indexes():
            log.warning("Found a corrupt or missing index for %s, rebuilding it", self.log_path)
            self.rebuild_indexes(validate=False)

    def _load_indexes(self) -> bool:
        """Load both index files; False when they fail the sanity check (the caller rebuilds)."""
        try:
            idx_data = self.index_path.read_bytes()
            ti_data = self.timeindex_path.read_bytes()
        except FileNotFoundError:
            return False
        if len(idx_data) % INDEX_ENTRY_SIZE or len(ti_data) % TIMEINDEX_ENTRY_SIZE:
            return False
        pairs = _int_array("i", idx_data)
        offsets, positions = pairs[0::2], pairs[1::2]
        while offsets and offsets[-1] == 0 and positions[-1] == 0:  # preallocated zero tail
            offsets.pop()
            positions.pop()
        n_ti = len(ti_data) // TIMEINDEX_ENTRY_SIZE
        flat = struct.unpack(">" + "qi" * n_ti, ti_data)
        timestamps, ti_offsets = array("q", flat[0::2]), array("i", flat[1::2])
        while timestamps and timestamps[-1] == 0 and ti_offsets[-1] == 0:
            timestamps.pop()
            ti_offsets.pop()
        if not self._indexes_sane(offsets, positions, timestamps, ti_offsets):
            return False
        self._idx_offsets, self._idx_positions = offsets, positions
        self._ti_timestamps, self._ti_offsets = timestamps, ti_offsets
        if timestamps:
            self.max_timestamp = timestamps[-1]
            self.offset_of_max_timestamp = self.base_offset + ti_offsets[-1]
        self._bytes_since_index = self.size - (positions[-1] if positions else 0)
        return True

    def _indexes_sane(self, offsets: array, positions: array, timestamps: array, ti_offsets: array) -> bool:
        if positions and (positions[-1] >= self.size or min(positions[-1], offsets[-1]) < 0):
            return False
        if len(positions) > 1 and (positions[-1] <= positions[-2] or offsets[-1] < offsets[-2]):
            return False
        if len(timestamps) > 1 and timestamps[-1] < timestamps[-2]:
            return False
        return not (ti_offsets and ti_offsets[-1] < 0)

    def lookup_position(self, offset: int) -> int:
        """File position of the last indexed batch whose last offset is <= `offset` (0 if none)."""
        self._ensure_indexes()
        i = bisect_right(self._idx_offsets, offset - self.base_offset) - 1
        return self._idx_positions[i] if i >= 0 else 0

    def lookup_timestamp(self, timestamp: int) -> int:
        """An offset such that every batch up to it has max timestamp < `timestamp`; base if none."""
        self._ensure_indexes()
        i = bisect_left(self._ti_timestamps, timestamp) - 1
        return self.base_offset + self._ti_offsets[i] if i >= 0 else self.base_offset

    @property
    def index_bytes(self) -> int:
        """Size of the larger of the two index files, as they are in memory."""
        self._ensure_indexes()
        return max(len(self._idx_offsets) * INDEX_ENTRY_SIZE, len(self._ti_timestamps) * TIMEINDEX_ENTRY_SIZE)

    @property
    def index_full(self) -> bool:
        self._ensure_indexes()
        return (
            len(self._idx_positions) >= self.max_index_entries
            or len(self._ti_timestamps) >= self.max_timeindex_entries
        )

    @property
    def index_entries(self) -> list[tuple[int, int]]:
        """(absolute offset, position) of every offset index entry; for tests and tools."""
        self._ensure_indexes()
        return [
            (self.base_offset + o, p) for o, p in zip(self._idx_offsets, self._idx_positions, strict=True)
        ]

    @property
    def timeindex_entries(self) -> list[tuple[int, int]]:
        """(timestamp, absolute offset) of every time index entry; for tests and tools."""
        self._ensure_indexes()
        return [(t, self.base_offset + o) for t, o in zip(self._ti_timestamps, self._ti_offsets, strict=True)]

    def _track(
        self, position: int, entry_offset: int, max_ts: int, size: int, out: bytearray, ti_out: bytearray
    ) -> None:
        """Index bookkeeping for one batch at `position`, Kafka's rule: an index entry when more than
        index.interval.bytes were written since the last one; a time index entry when the max grew."""
        if max_ts > self.max_timestamp:
            self.max_timestamp = max_ts
            self.offset_of_max_timestamp = entry_offset
        if self._bytes_since_index > self.index_interval_bytes:
            rel = entry_offset - self.base_offset
            self._idx_offsets.append(rel)
            self._idx_positions.append(position)
            out += struct.pack(">ii", rel, position)
            self._maybe_append_time_entry(ti_out)
            self._bytes_since_index = 0
        self._bytes_since_index += size

    def _maybe_append_time_entry(self, ti_out: bytearray) -> None:
        ts = self.max_timestamp
        if ts >= 0 and (not self._ti_timestamps or ts > self._ti_timestamps[-1]):
            rel = self.offset_of_max_timestamp - self.base_offset
            self._ti_timestamps.append(ts)
            self._ti_offsets.append(rel)
            ti_out += struct.pack(">qi", ts, rel)

    def _append_index_bytes(self, idx: bytes | bytearray, ti: bytes | bytearray) -> None:
        if idx or ti:
            self._writes += 1
        if idx:
            if self._index_fd is None:
                self._index_fd = os.open(self.index_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.write(self._index_fd, idx)
        if ti:
            if self._timeindex_fd is None:
                self._timeindex_fd = os.open(
                    self.timeindex_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644
                )
            os.write(self._timeindex_fd, ti)

    def _write_index_files(self) -> None:
        """Rewrite both index files from memory (after a rebuild)."""
        self.close_index_files()
        pairs = array("i")
        for o, p in zip(self._idx_offsets, self._idx_positions, strict=True):
            pairs.append(o)
            pairs.append(p)
        if _LITTLE_ENDIAN:
            pairs.byteswap()
        ti = b"".join(
            struct.pack(">qi", t, o) for t, o in zip(self._ti_timestamps, self._ti_offsets, strict=True)
        )
        for path, data in ((self.index_path, pairs.tobytes()), (self.timeindex_path, ti)):
            atomic_write(path, data)

    def _reset_indexes(self) -> None:
        self._indexes_loaded = True
        self._idx_offsets, self._idx_positions = array("i"), array("i")
        self._ti_timestamps, self._ti_offsets = array("q"), array("i")
        self._bytes_since_index = 0
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1

    # --- append ------------------------------------------------------------------------------

    def append(self, data: bytes | bytearray | memoryview, batches: Sequence[BatchEntry]) -> None:
        """Write `data` (whole batches, offsets already assigned) at the end with one write."""
        self._ensure_indexes()
        start = self.size
        try:
            _write_all(self.fd, data, start)
        except OSError as exc:
            self._undo_partial_write(start)
            raise StorageError(message=f"Error while appending to {self.log_path}: {exc}") from exc
        if start == 0:
            self._rolling_ts, self._rolling_ts_known = batches[0].max_timestamp, True
        idx, ti = bytearray(), bytearray()
        for b in batches:
            self._track(start + b.position, b.last_offset, b.max_timestamp, b.size, idx, ti)
        self.size = start + len(data)
        self.next_offset = batches[-1].last_offset + 1
        self._writes += 1
        self._append_index_bytes(idx, ti)

    def _undo_partial_write(self, size: int) -> None:
        try:
            os.ftruncate(self.fd, size)
        except OSError:
            log.exception("Could not undo a partial write to %s", self.log_path)

    @property
    def rolling_base_timestamp(self) -> int | None:
        """Max timestamp of the first batch (the clock segment.ms measures against), None if empty."""
        if not self._rolling_ts_known:
            self._rolling_ts_known = True
            first = next(self.iter_headers(0), None)
            self._rolling_ts = first[1].max_timestamp if first else None
        return self._rolling_ts if self.size else None

    @property
    def largest_timestamp(self) -> int:
        """Max batch timestamp in the segment, or the .log's mtime when it holds no timestamps."""
        self._ensure_indexes()
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return int(self.log_path.stat().st_mtime * 1000)

    # --- read --------------------------------------------------------------------------------

    def find_batch(self, offset: int, start: int | None = None) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset >= `offset`, by header scan."""
        pos = self.lookup_position(offset) if start is None else start
        for position, header in self.iter_headers(pos):
            if header.base_offset + header.last_offset_delta >= offset:
                return position, header
        return None

    def read(
        self,
        offset: int,
        max_bytes: int,
        max_offset: int | None,
        min_one_message: bool,
        start: int | None = None,
    ) -> SegmentRead | None:
        """Whole batches from the one containing `offset`; None if this segment has no such batch.

        `start` is a known batch boundary at or before that batch (else the offset index gives one).
        Usually one pread: the window covers the scan from `start` plus `max_bytes`.
        """
        exact = start is not None
        pos = self.lookup_position(offset) if start is None else start
        slack = 0 if exact else self.index_interval_bytes + SCAN_CHUNK
        window = max(max_bytes, BATCH_OVERHEAD) + slack
        limit = self.size
        buf = self.pread(min(window, limit - pos), pos)
        off = 0
        while True:  # skip to the batch containing `offset`
            if len(buf) - off < BATCH_OVERHEAD:
                pos += off
                if limit - pos < BATCH_OVERHEAD:
                    return None
                buf, off = self.pread(min(window, limit - pos), pos), 0
            base, length = _BASE_AND_LENGTH.unpack_from(buf, off)
            if length < MIN_BATCH_LENGTH:
                raise CorruptRecordError(
                    message=f"Corrupt batch header at position {pos + off} of {self.log_path}"
                )
            if base + _LAST_OFFSET_DELTA.unpack_from(buf, off + 23)[0] >= offset:
                break
            off += length + LOG_OVERHEAD
        first = pos + off
        if off and len(buf) - off < min(max_bytes, limit - first):
            buf, off = self.pread(min(max(max_bytes, BATCH_OVERHEAD), limit - first), first), 0
        return self._collect(buf, off, first, offset, max_bytes, max_offset, min_one_message)

    def span(
        self,
        offset: int,
        max_bytes: int,
        max_offset: int | None,
        min_one_message: bool,
        start: int | None = None,
    ) -> SegmentSpan | None:
        """The batches `read` would return, as file positions: found by hopping from header to header, so
        a batch costs one small read, whatever its size. None if this segment has no batch for `offset`."""
        limit = self.size
        headers = self._hop(self.lookup_position(offset) if start is None else start, limit)
        for hop in headers:  # skip to the batch containing `offset`
            if hop[2] < LOG_OVERHEAD + MIN_BATCH_LENGTH:
                raise CorruptRecordError(message=f"Corrupt batch header at position {hop[0]} of {self.log_path}")
            if hop[3] >= offset:
                break
        else:
            return None
        first, base, size, last = hop
        if (max_offset is not None and base >= max_offset) or first + size > limit:
            return SegmentSpan(first, first, offset)
        if size > max_bytes:
            if min_one_message:
                return SegmentSpan(first, first + size, last + 1)
            return SegmentSpan(first, first, offset)
        end, next_offset = first + size, last + 1
        for pos, base, size, last in headers:
            if (max_offset is not None and base >= max_offset) or pos + size - first > max_bytes:
                break
            if pos + size > limit or size < LOG_OVERHEAD + MIN_BATCH_LENGTH:
                break
            end, next_offset = pos + size, last + 1
        return SegmentSpan(first, end, next_offset)

    def _hop(self, pos: int, limit: int) -> Iterator[tuple[int, int, int, int]]:
        """(position, base offset, size, last offset) of each batch from `pos`, reading only headers."""
        buf, buf_pos = b"", pos
        while limit - pos >= BATCH_OVERHEAD:
            off = pos - buf_pos
            if len(buf) - off < BATCH_OVERHEAD:
                buf, buf_pos, off = self.pread(min(HOP_CHUNK, limit - pos), pos), pos, 0
            base, length = _BASE_AND_LENGTH.unpack_from(buf, off)
            size = length + LOG_OVERHEAD
            yield pos, base, size, base + _LAST_OFFSET_DELTA.unpack_from(buf, off + 23)[0]
            pos += size

    def _collect(
        self,
        buf: bytes,
        start: int,
        first: int,
        offset: int,
        max_bytes: int,
        max_offset: int | None,
        min_one_message: bool,
    ) -> SegmentRead:
        end = start
        next_offset = offset
        while len(buf) - end >= BATCH_OVERHEAD:
            base, length = _BASE_AND_LENGTH.unpack_from(buf, end)
            size = length + LOG_OVERHEAD
            if (max_offset is not None and base >= max_offset) or end + size - start > max_bytes:
                break
            if end + size > len(buf) or length < MIN_BATCH_LENGTH:
                break
            end += size
            next_offset = base + _LAST_OFFSET_DELTA.unpack_from(buf, end - size + 23)[0] + 1
        if end > start:
            data = buf if (start == 0 and end == len(buf)) else buf[start:end]
            return SegmentRead(data, first, first + end - start, next_offset)
        if min_one_message:
            head = buf[start : start + BATCH_OVERHEAD]
            header = read_header(head if len(head) == BATCH_OVERHEAD else self.pread(BATCH_OVERHEAD, first))
            if max_offset is None or header.base_offset < max_offset:
                return SegmentRead(
                    self.pread(header.size, first), first, first + header.size, header.next_offset
                )
        return SegmentRead(b"", first, first, offset)

    # --- recovery, truncation ----------------------------------------------------------------

    def recover(self, dense: bool = True) -> tuple[int, str | None]:
        """Rescan the .log validating every batch (header, CRC, increasing offsets, dense unless `dense` is
        False: a compacted log has gaps); rebuild both indexes; truncate at the first invalid or partial
        batch. Returns (valid bytes, reason if truncated)."""
        valid, reason = self.rebuild_indexes(validate=True, dense=dense)
        if valid < self.size:
            self.truncate_file(valid)
        return valid, reason

    def rebuild_indexes(self, validate: bool, dense: bool = False) -> tuple[int, str | None]:
        """Rebuild the indexes from a scan; with `validate`, check CRCs and stop at the first bad batch.
        Returns (bytes of whole valid batches, why the scan stopped early or None).

        The base offset lies outside the CRC. Where gaps are allowed (not `dense`), a batch entering
        through a gap is accepted only once the next batch does not fall back below its end (or it is the
        last): so a damaged base offset is caught unless it is in the segment's last batch."""
        self._reset_indexes()
        self._rolling_ts, self._rolling_ts_known = None, True
        idx, ti = bytearray(), bytearray()
        expected = self.base_offset
        pos, limit = 0, self.size
        buf, buf_pos = b"", 0
        reason: str | None = None
        pending: tuple[int, BatchHeader, int] | None = None  # a gap batch: position, header, offset before
        while pos < limit:
            off = pos - buf_pos
            if len(buf) - off < BATCH_OVERHEAD:
                buf, buf_pos, off = self.pread(min(RECOVERY_CHUNK, limit - pos), pos), pos, 0
            reason = self._check_header(buf, off, pos, limit, expected, dense)
            if reason is not None:
                if pending is not None and reason.startswith(_BELOW):
                    pos, expected = pending[0], pending[2]
                    reason = f"base offset {pending[1].base_offset} runs past the batch after it"
                    pending = None
                break
            header = read_header(buf, off)
            if validate:
                if len(buf) - off < header.size:
                    buf = self.pread(max(RECOVERY_CHUNK, header.size), pos)
                    buf_pos, off = pos, 0
                computed = crc32c(memoryview(buf)[off + ATTRIBUTES_OFFSET : off + header.size])
                if computed != header.crc:
                    reason = f"CRC 0x{header.crc:08x} but computed 0x{computed:08x}"
                    break
            if pending is not None:
                self._index_scanned(pending[0], pending[1], idx, ti)
                pending = None
            if header.base_offset > expected:
                pending = (pos, header, expected)
            else:
                self._index_scanned(pos, header, idx, ti)
            expected = header.next_offset
            pos += header.size
        if pending is not None:
            self._index_scanned(pending[0], pending[1], idx, ti)
        self.next_offset = expected
        self._write_index_files()
        self._writes += 1
        return pos, reason

    def _index_scanned(self, pos: int, header: BatchHeader, idx: bytearray, ti: bytearray) -> None:
        if pos == 0:
            self._rolling_ts = header.max_timestamp
        self._track(pos, header.last_offset, header.max_timestamp, header.size, idx, ti)

    def _check_header(
        self, buf: bytes, off: int, pos: int, limit: int, expected: int, dense: bool
    ) -> str | None:
        if len(buf) - off < BATCH_OVERHEAD:
            return "partial batch header"
        try:
            header = read_header(buf, off)
        except CorruptRecordError:
            return "implausible batch length"
        if header.magic != CURRENT_MAGIC:
            return f"magic {header.magic}"
        if pos + header.size > limit:
            return f"partial batch of {header.size} bytes"
        # Offsets strictly increase; densely, unless compaction may have removed records
        if header.base_offset < expected:
            return f"{_BELOW} {header.base_offset} below the expected {expected}"
        if dense and header.base_offset != expected:
            return f"base offset {header.base_offset}, expected {expected}"
        if header.last_offset_delta < 0 or not 0 <= header.records_count <= header.last_offset_delta + 1:
            return f"bad offset delta {header.last_offset_delta} / record count {header.records_count}"
        if header.last_offset - self.base_offset > MAX_RELATIVE_OFFSET:
            return f"offset {header.last_offset} out of range for the segment"
        if header.attributes & 0x07 > COMPRESSION_ZSTD:
            return f"unknown compression codec {header.attributes & 0x07}"
        return None

    def truncate_file(self, size: int) -> None:
        os.ftruncate(self.fd, size)
        self.size = size
        self._writes += 1

    def scan_tail(self, dense: bool = True) -> bool:
        """After a clean open: find next_offset (and the max timestamp) by scanning headers from the
        last index entry. False when the tail is not whole batches with increasing offsets (dense ones
        if `dense`): the caller recovers instead."""
        self._ensure_indexes()
        start = self._idx_positions[-1] if self._idx_positions else 0
        expected = None
        pos = start
        try:
            for pos_, header in self.iter_headers(start):
                if expected is not None and (
                    header.base_offset < expected or (dense and header.base_offset != expected)
                ):
                    return False
                if header.max_timestamp > self.max_timestamp:
                    self.max_timestamp, self.offset_of_max_timestamp = (
                        header.max_timestamp,
                        header.last_offset,
                    )
                expected = header.next_offset
                pos = pos_ + header.size
        except CorruptRecordError:
            return False
        if pos != self.size:
            return False
        if expected is None:
            if self.size:
                return False
            expected = self.base_offset
        self.next_offset = expected
        return True

    def scan_next_offset(self) -> int:
        """The offset after the last whole batch, by a header scan (the base offset when none)."""
        end = self.base_offset
        try:
            for _, header in self.iter_headers():
                end = header.next_offset
        except CorruptRecordError:
            pass
        return end

    def truncate_to(self, offset: int) -> int:
        """Drop every batch with last offset >= `offset` (so a batch straddling it goes entirely).
        Returns the number of bytes removed; next_offset becomes the first dropped batch's base."""
        found = self.find_batch(offset)
        if found is None:
            return 0
        cut, header = found
        removed = self.size - cut
        self.truncate_file(cut)
        self.next_offset = header.base_offset
        self._truncate_indexes(cut, header.base_offset)
        return removed

    def _truncate_indexes(self, cut: int, next_offset: int) -> None:
        keep = bisect_left(self._idx_positions, cut)
        del self._idx_offsets[keep:]
        del self._idx_positions[keep:]
        keep_ti = bisect_left(self._ti_offsets, next_offset - self.base_offset)
        del self._ti_timestamps[keep_ti:]
        del self._ti_offsets[keep_ti:]
        self.close_index_files()
        for path, size in (
            (self.index_path, len(self._idx_positions) * INDEX_ENTRY_SIZE),
            (self.timeindex_path, len(self._ti_offsets) * TIMEINDEX_ENTRY_SIZE),
        ):
            if path.exists():
                os.truncate(path, size)
        self.max_timestamp, self.offset_of_max_timestamp = -1, -1
        scan_from = 0
        if self._ti_timestamps:
            self.max_timestamp = self._ti_timestamps[-1]
            self.offset_of_max_timestamp = self.base_offset + self._ti_offsets[-1]
            scan_from = self.lookup_position(self.offset_of_max_timestamp)
        for _, header in self.iter_headers(scan_from):
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = header.max_timestamp, header.last_offset
        self._bytes_since_index = cut - (self._idx_positions[-1] if self._idx_positions else 0)
        if cut == 0:
            self._rolling_ts, self._rolling_ts_known = None, True

    # --- lifecycle ---------------------------------------------------------------------------

    def on_become_inactive(self) -> None:
        """At roll: record the final max timestamp in the time index (Kafka does the same)."""
        self._ensure_indexes()
        ti = bytearray()
        self._maybe_append_time_entry(ti)
        self._append_index_bytes(b"", ti)

    @property
    def dirty(self) -> bool:
        """Whether something was written since the last fsync that covered it."""
        return self._writes != self._synced

    def flush(self) -> None:
        """fsync the segment's open files, here and now."""
        if not self.dirty:
            return
        writes = self._writes
        for fd in (self._fd, self._index_fd, self._timeindex_fd):
            if fd is not None:
                os.fsync(fd)
        self.mark_synced(writes)

    def sync_handles(self) -> tuple[int, list[int]]:
        """For an fsync on another thread: the write count now and duplicates of the open descriptors
        (the caller fsyncs and closes them; the segment may close its own meanwhile). Call under the
        owning log's lock; then `mark_synced` with that count once the fsyncs are done."""
        fds: list[int] = []
        try:
            for fd in (self._fd, self._index_fd, self._timeindex_fd):
                if fd is not None:
                    fds.append(os.dup(fd))
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        return self._writes, fds

    def mark_synced(self, writes: int) -> None:
        self._synced = max(self._synced, writes)

    def close_index_files(self) -> None:
        for name in ("_index_fd", "_timeindex_fd"):
            fd = getattr(self, name)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)

    def close(self) -> None:
        self.close_index_files()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def delete(self) -> None:
        """Close and remove the segment's files (the .log first: orphaned indexes are swept at load)."""
        self.close()
        for path in (self.log_path, self.index_path, self.timeindex_path):
            path.unlink(missing_ok=True)
