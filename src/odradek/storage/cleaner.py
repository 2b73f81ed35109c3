"""Log cleanup per cleanup.policy: retention for `delete`, compaction for `compact` (Kafka's log cleaner).

Retention (`run_cleanup`) deletes whole old segments by time, by size and below the log start offset.

Compaction (`compact`) keeps the latest record of every key, with Kafka's LogCleaner semantics:

- The log has a clean section, below the cleaner checkpoint (`Log.cleaner_checkpoint`, kept by the
  LogManager in `cleaner-offset-checkpoint`), and a dirty section above it. The cleanable part of the
  dirty section ends at the first uncleanable offset: the active segment, the first segment holding a
  record younger than min.compaction.lag.ms (KIP-58), the segment holding the high watermark.
- A log is cleaned when dirty / (clean + dirty) bytes exceeds min.cleanable.dirty.ratio, when its oldest
  dirty record is older than max.compaction.lag.ms (KIP-354), or when tombstones it kept have passed
  their delete horizon.
- An offset map, key -> latest offset, is built over the cleanable dirty records, holding at most as many
  keys as Kafka's map of log.cleaner.dedupe.buffer.size bytes would; what does not fit waits for the
  next round.
- Every segment below the end of the map is rewritten. A record survives if it has a key and no later
  record in the map has that key. A tombstone (null value) survives its first cleaning, which stamps its
  batch with a delete horizon of now + delete.retention.ms (KIP-534), and goes at the first cleaning
  after that. A batch keeps its base offset and last offset delta, producer fields, partition leader
  epoch, codec and timestamp type; records keep their offsets, so offsets get gaps, never renumbered.
  Emptied batches are dropped (Kafka keeps an empty one when it holds a producer's last sequence; not
  here: producer state is rebuilt from the newest segments only anyway).
- Consecutive segments are merged into one, named by the first one's base offset, while what the group
  wrote so far plus the next segment's size stays within segment.bytes (Kafka sums the segments' sizes
  before cleaning; counting what cleaning left lets emptied segments merge away at once). A merged group never ends with a segment that cleaning emptied (such a
  segment starts the next group instead), so a swapped-in segment always reaches into the last segment
  it replaces: crash recovery relies on that (`LogLoader._complete_swaps`, storage/log_loader.py).

The heavy work runs without the log's lock, reading the segments through descriptors of its own (so
retention deleting a segment meanwhile cannot pull the file away); the lock is taken only to plan and to
swap each cleaned segment in (`Log.replace_segments`), which fails harmlessly if the segments changed.
A cleaned segment is fsynced before the swap, and the swap fsyncs the directory without holding the lock
(it holds the log's `swap_lock`), so producers to the log never wait for the cleaner's fsyncs.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from odradek.protocol.records import (
    BATCH_OVERHEAD,
    BatchHeader,
    Record,
    decode_records,
    read_header,
    rebuild_batch,
)
from odradek.storage.log import Log
from odradek.storage.segment import CLEANED_SUFFIX, MAX_RELATIVE_OFFSET, BatchEntry, LogSegment

if TYPE_CHECKING:
    from odradek.config import BrokerConfig

logger = logging.getLogger("odradek.storage.cleaner")

_SLOT_BYTES = 24  # Kafka's SkimpyOffsetMap: a 16-byte MD5 of the key plus an 8-byte offset per slot
_LONG_MAX = 2**63 - 1


# --- retention -----------------------------------------------------------------------------------


def run_cleanup(log: Log, now_ms: int) -> int:
    """Apply the log's retention once (every policy honours DeleteRecords; `delete` adds time and size
    retention); returns how many segments were deleted. Compaction runs separately: `compact`."""
    deleted = delete_log_start_offset_breached(log)
    if log.config.delete:
        deleted += delete_retention_size_breached(log)
        deleted += delete_retention_ms_breached(log, now_ms)
    return deleted


def delete_log_start_offset_breached(log: Log) -> int:
    """Segments wholly below the log start offset (moved up by DeleteRecords)."""
    return log.delete_old_segments(
        lambda seg, nxt: nxt.base_offset <= log.log_start_offset, "log start offset breach"
    )


def delete_retention_ms_breached(log: Log, now_ms: int) -> int:
    """Oldest segments whose largest record timestamp is older than retention.ms."""
    retention_ms = log.config.retention_ms
    if retention_ms < 0:
        return 0
    return log.delete_old_segments(
        lambda seg, nxt: now_ms - seg.largest_timestamp > retention_ms,
        f"retention time {retention_ms}ms breach based on the largest record timestamp in the segment",
    )


def delete_retention_size_breached(log: Log) -> int:
    """Oldest segments while the log, less them, is still at least retention.bytes (Kafka's rule)."""
    retention_bytes = log.config.retention_bytes
    if retention_bytes < 0:
        return 0
    excess: int | None = None

    def breached(seg: LogSegment, nxt: LogSegment) -> bool:
        nonlocal excess
        if excess is None:  # measured here, under the log's lock, not before taking it
            excess = log.size_in_bytes - retention_bytes
        if excess - seg.size >= 0:
            excess -= seg.size
            return True
        return False

    return log.delete_old_segments(breached, f"retention size in bytes {retention_bytes} breach")


# --- compaction: configuration and results -------------------------------------------------------


@dataclass(frozen=True)
class CleanerConfig:
    """The broker's log.cleaner.* settings that compaction uses."""

    enable: bool = True
    threads: int = 1
    dedupe_buffer_size: int = 134217728
    io_buffer_size: int = 524288
    io_buffer_load_factor: float = 0.9
    backoff_ms: int = 15000

    @classmethod
    def from_broker(cls, config: BrokerConfig) -> CleanerConfig:
        """From a broker config's log.cleaner.* keys."""
        return cls(
            enable=config.get("log.cleaner.enable"),
            threads=config.get("log.cleaner.threads"),
            dedupe_buffer_size=config.get("log.cleaner.dedupe.buffer.size"),
            io_buffer_size=config.get("log.cleaner.io.buffer.size"),
            io_buffer_load_factor=config.get("log.cleaner.io.buffer.load.factor"),
            backoff_ms=config.get("log.cleaner.backoff.ms"),
        )

    @property
    def enabled(self) -> bool:
        return self.enable and self.threads > 0

    @property
    def max_map_keys(self) -> int:
        """Keys the offset map may hold: Kafka's slots per thread times the load factor."""
        per_thread = min(self.dedupe_buffer_size // max(self.threads, 1), 2**31 - 1)
        return max(int(per_thread // _SLOT_BYTES * self.io_buffer_load_factor), 1)


@dataclass
class CleanStats:
    """What one cleaning of a log did."""

    reason: str
    first_dirty: int
    end_offset: int  # the new cleaner checkpoint
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_kept: int = 0
    segments_before: int = 0
    segments_after: int = 0
    started: float = field(default_factory=time.monotonic)


class CleaningAborted(Exception):
    """The log was closed or changed under the cleaner, or the broker is stopping."""


# --- compaction: planning (under the log's lock) --------------------------------------------------


@dataclass
class _Source:
    """A segment to clean, as it was when planned: read through a descriptor of the cleaner's own."""

    segment: LogSegment
    size: int
    next_base: int  # base offset of the following segment
    index_bytes: int
    mtime_ns: int
    fd: int = -1

    @property
    def base(self) -> int:
        return self.segment.base_offset


@dataclass
class _Plan:
    reason: str
    first_dirty: int
    first_uncleanable: int
    sources: list[_Source]  # every segment wholly below the first uncleanable offset
    aborted: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # pid -> [(first, marker)]

    def is_aborted(self, header: BatchHeader) -> bool:
        """Whether a transactional data batch belongs to an aborted transaction."""
        if not header.is_transactional or header.is_control:
            return False
        return any(first <= header.base_offset <= last for first, last in self.aborted.get(header.producer_id, ()))

    @property
    def dirty(self) -> list[_Source]:
        return [s for s in self.sources if s.next_base > self.first_dirty]

    def close(self) -> None:
        for s in self.sources:
            if s.fd >= 0:
                os.close(s.fd)
                s.fd = -1


def _plan(log: Log, now_ms: int) -> _Plan | None:
    with log.lock:
        if log.closed:
            return None
        segments = log.segments
        first_dirty = _first_dirty_offset(log)
        uncleanable = _first_uncleanable_offset(log, segments, first_dirty, now_ms)
        sources = [_source(seg, nxt) for seg, nxt in zip(segments, segments[1:], strict=False)]
        sources = [s for s in sources if s.base < uncleanable]
        clean_bytes = sum(seg.size for seg in segments if seg.base_offset < first_dirty)
        dirty = [s for s in sources if s.next_base > first_dirty]
        reason = _reason_to_clean(log, dirty, clean_bytes, now_ms)
        if reason is None or not sources:
            return None
        plan = _Plan(reason, first_dirty, uncleanable, sources)
        for txn in log.txn_index.entries:
            plan.aborted.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))
        try:
            for s in sources:
                s.fd = os.open(s.segment.log_path, os.O_RDONLY)
        except OSError:
            plan.close()
            raise
        return plan


def _source(seg: LogSegment, nxt: LogSegment) -> _Source:
    index_bytes = 0
    for path in (seg.index_path, seg.timeindex_path):
        try:
            index_bytes = max(index_bytes, path.stat().st_size)
        except FileNotFoundError:
            pass
    return _Source(seg, seg.size, nxt.base_offset, index_bytes, seg.log_path.stat().st_mtime_ns)


def _first_dirty_offset(log: Log) -> int:
    """The cleaner checkpoint, or the log start offset when there is none or it is out of range."""
    checkpoint = log.cleaner_checkpoint
    if checkpoint is None or not log.log_start_offset <= checkpoint <= log.log_end_offset:
        if checkpoint is not None:
            logger.debug(
                "Resetting first dirty offset of %s to log start offset %d since the checkpointed offset %d "
                "is invalid",
                f"{log.topic}-{log.partition}",
                log.log_start_offset,
                checkpoint,
            )
        return log.log_start_offset
    return checkpoint


def _first_uncleanable_offset(log: Log, segments: list[LogSegment], first_dirty: int, now_ms: int) -> int:
    """Base offset of the first segment the cleaner may not touch: the active one, the one holding the
    last stable offset (the high watermark, or the start of the oldest open transaction: its records
    may still be aborted), or the first dirty one with a record younger than min.compaction.lag.ms."""
    bound = segments[-1].base_offset
    stable = log.last_stable_offset
    for seg, nxt in zip(segments, segments[1:], strict=False):
        if nxt.base_offset > stable:
            bound = min(bound, seg.base_offset)
            break
    lag = log.config.min_compaction_lag_ms
    if lag > 0:
        for seg, nxt in zip(segments, segments[1:], strict=False):
            if nxt.base_offset > first_dirty and seg.largest_timestamp > now_ms - lag:
                bound = min(bound, seg.base_offset)
                break
    return bound


def _reason_to_clean(log: Log, dirty: list[_Source], clean_bytes: int, now_ms: int) -> str | None:
    cfg = log.config
    dirty_bytes = sum(s.size for s in dirty)
    if dirty_bytes:
        ratio = dirty_bytes / (clean_bytes + dirty_bytes)
        if ratio > cfg.min_cleanable_dirty_ratio:
            return f"dirty ratio {ratio:.2f} > min.cleanable.dirty.ratio {cfg.min_cleanable_dirty_ratio}"
        firsts = [ts for s in dirty if (ts := s.segment.rolling_base_timestamp or -1) > 0]
        if firsts and min(firsts) < now_ms - cfg.max_compaction_lag_ms:
            return f"a dirty record is older than max.compaction.lag.ms {cfg.max_compaction_lag_ms}"
    if 0 <= log.latest_delete_horizon <= now_ms:
        return "tombstones passed their delete horizon"
    return None


# --- compaction: the offset map -------------------------------------------------------------------


def _read_batches(fd: int, size: int, chunk: int) -> Iterator[tuple[BatchHeader, memoryview]]:
    """Every whole batch of a segment file, read `chunk` bytes at a time (more for a larger batch)."""
    pos = 0
    while size - pos >= BATCH_OVERHEAD:
        buf = memoryview(os.pread(fd, min(chunk, size - pos), pos))
        off = 0
        while len(buf) - off >= BATCH_OVERHEAD:
            header = read_header(buf, off)
            if off + header.size > len(buf):
                break
            yield header, buf[off : off + header.size]
            off += header.size
        if off == 0:
            needed = read_header(buf, 0).size
            if pos + needed > size:
                return
            chunk = max(chunk, needed)
        pos += off


def _build_offset_map(
    plan: _Plan, max_keys: int, chunk: int, check: Callable[[], None]
) -> tuple[dict[bytes, int], int]:
    """key -> latest offset over the cleanable dirty records, and the offset the map covers up to (the
    first uncleanable offset, or where the map filled up: at least one batch is always mapped)."""
    offsets: dict[bytes, int] = {}
    for src in plan.dirty:
        for header, raw in _read_batches(src.fd, src.size, chunk):
            check()
            if header.last_offset < plan.first_dirty or header.is_control or plan.is_aborted(header):
                continue  # an aborted record never counts as a key's latest value
            if offsets and len(offsets) + header.records_count > max_keys:
                return offsets, header.base_offset
            for record in decode_records(raw):
                if record.key is not None and record.offset >= plan.first_dirty:
                    offsets[record.key] = record.offset
    return offsets, plan.first_uncleanable


# --- compaction: filtering batches ----------------------------------------------------------------


@dataclass
class _BatchFilter:
    """Decides, record by record, what survives a cleaning, and rebuilds the batches."""

    offsets: dict[bytes, int]
    end: int
    now_ms: int
    delete_retention_ms: int
    stats: CleanStats
    plan: _Plan
    latest_delete_horizon: int = -1

    def filter(self, header: BatchHeader, raw: memoryview) -> bytes | memoryview | None:
        """The batch to write in place of `raw`: itself, a rebuilt batch of its survivors, or None.
        Markers are kept (the producer state of a rebuilt log needs them to close its transactions);
        batches of aborted transactions go."""
        self.stats.bytes_read += header.size
        if header.is_control or header.base_offset >= self.end:
            return raw
        if self.plan.is_aborted(header):
            self.stats.records_read += header.records_count
            return None
        records = decode_records(raw)
        horizon = header.delete_horizon_ms
        kept = [r for r in records if self._retain(r, horizon)]
        self.stats.records_read += len(records)
        self.stats.records_kept += len(kept)
        if not kept:
            return None
        stamp = horizon is None and any(r.value is None for r in kept)
        if stamp:
            horizon = min(self.now_ms + self.delete_retention_ms, _LONG_MAX)
        if horizon is not None and any(r.value is None for r in kept):
            self.latest_delete_horizon = max(self.latest_delete_horizon, horizon)
        if len(kept) == len(records) and not stamp:
            return raw
        return rebuild_batch(header, kept, delete_horizon_ms=horizon)

    def _retain(self, record: Record, horizon: int | None) -> bool:
        if record.offset >= self.end:
            return True
        if record.key is None:  # not valid in a compacted topic: Kafka's cleaner drops it too
            return False
        latest = self.offsets.get(record.key)
        if latest is not None and record.offset < latest:
            return False
        return not (record.value is None and horizon is not None and self.now_ms >= horizon)


# --- compaction: writing and swapping cleaned segments --------------------------------------------


class _CleanedWriter:
    """One cleaned segment being written as `<base>.log.cleaned` (plus its indexes)."""

    def __init__(self, log: Log, base_offset: int, now_ms: int, chunk: int) -> None:
        for path in LogSegment.paths(log.dir, base_offset, CLEANED_SUFFIX):
            path.unlink(missing_ok=True)  # a leftover of an earlier, abandoned cleaning
        self.segment = log.open_segment(base_offset, now_ms, create=True, suffix=CLEANED_SUFFIX)
        self._chunk = chunk
        self._buf = bytearray()
        self._entries: list[BatchEntry] = []

    def add(self, batch: bytes | memoryview) -> None:
        header = read_header(batch)
        self._entries.append(BatchEntry(len(self._buf), header.size, header.last_offset, header.max_timestamp))
        self._buf += batch
        if len(self._buf) >= self._chunk:
            self.write()

    def write(self) -> None:
        """Append what is buffered to the segment."""
        if self._entries:
            self.segment.append(self._buf, self._entries)
            self._buf, self._entries = bytearray(), []

    def finish(self, mtime_ns: int) -> LogSegment:
        """Write the rest, fsync, keep the newest last-modified time of the segments it replaces."""
        self.write()
        self.segment.on_become_inactive()
        self.segment.flush()
        self.segment.close_index_files()
        os.utime(self.segment.log_path, ns=(mtime_ns, mtime_ns))
        return self.segment

    def discard(self) -> None:
        self.segment.delete()


class _Rewriter:
    """Streams the sources through the filter into merged cleaned segments and swaps each one in."""

    def __init__(self, log: Log, now_ms: int, chunk: int, check: Callable[[], None], filt: _BatchFilter) -> None:
        self.log = log
        self.now_ms = now_ms
        self.chunk = chunk
        self.check = check
        self.batch_filter = filt
        self.group: list[_Source] = []
        self.last_with_data = -1  # index in `group` of the last member that kept any batch
        self.writer: _CleanedWriter | None = None
        self.swapped = 0

    def run(self, sources: list[_Source]) -> None:
        try:
            for src in sources:
                if self.group and not self._fits(src):
                    self._finish_group()
                self._add(src)
            while self.group:
                self._finish_group()
        finally:
            if self.writer is not None:
                self.writer.discard()
                self.writer = None

    def _fits(self, src: _Source) -> bool:
        """Whether `src` may join the group: what the group wrote so far plus `src` as it is (its cleaned
        form is no larger) within segment.bytes and segment.index.bytes, offsets within the relative range."""
        cfg = self.log.config
        assert self.writer is not None
        written = self.writer.segment
        return (
            written.size + src.size <= cfg.segment_bytes
            and written.index_bytes + src.index_bytes <= cfg.segment_index_bytes
            and src.next_base - 1 - self.group[0].base <= MAX_RELATIVE_OFFSET
        )

    def _add(self, src: _Source) -> None:
        if self.writer is None:
            self.writer = _CleanedWriter(self.log, src.base, self.now_ms, self.chunk)
        kept_any = False
        for header, raw in _read_batches(src.fd, src.size, self.chunk):
            self.check()
            out = self.batch_filter.filter(header, raw)
            if out is not None:
                self.writer.add(out)
                kept_any = True
        self.writer.write()
        self.group.append(src)
        if kept_any:
            self.last_with_data = len(self.group) - 1

    def _finish_group(self) -> None:
        """Swap in the group up to its last member that kept data (or just its first member, when none
        did); the emptied members after that start the next group, named by the first of them."""
        writer, self.writer = self.writer, None
        assert writer is not None
        keep = self.last_with_data + 1 if self.last_with_data >= 0 else 1
        members, carried = self.group[:keep], self.group[keep:]
        try:
            cleaned = writer.finish(max(s.mtime_ns for s in members))
            self.check()
        except BaseException:
            writer.discard()
            raise
        # past this point the files are the log's: a failure inside the swap is completed at the next load
        if not self.log.replace_segments([s.segment for s in members], [s.size for s in members], cleaned):
            writer.discard()
            raise CleaningAborted(f"the segments of {self.log} changed during cleaning")
        self.swapped += 1
        self.batch_filter.stats.bytes_written += cleaned.size
        self.group, self.last_with_data = carried, -1
        if carried:
            self.writer = _CleanedWriter(self.log, carried[0].base, self.now_ms, self.chunk)


# --- compaction: entry point ----------------------------------------------------------------------


def compact(
    log: Log,
    now_ms: int,
    config: CleanerConfig | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> CleanStats | None:
    """Clean the log once if it is due (see the module docstring); None when it was not. Call from a
    worker thread. Raises CleaningAborted when `should_stop()` turns true, the log closes or its segments
    change under the cleaner; the log is then consistent, only less clean."""
    config = config or CleanerConfig()
    plan = _plan(log, now_ms)
    if plan is None:
        return None

    def check() -> None:
        if log.closed or (should_stop is not None and should_stop()):
            raise CleaningAborted(f"cleaning of {log} aborted")

    try:
        return _clean(log, plan, now_ms, config, check)
    finally:
        plan.close()


def _clean(log: Log, plan: _Plan, now_ms: int, config: CleanerConfig, check: Callable[[], None]) -> CleanStats:
    chunk = max(config.io_buffer_size, BATCH_OVERHEAD)
    log_name = f"{log.topic}-{log.partition}"
    started = time.monotonic()
    offsets, end = _build_offset_map(plan, config.max_map_keys, chunk, check)
    stats = CleanStats(plan.reason, plan.first_dirty, max(plan.first_dirty, end), started=started)
    sources = [s for s in plan.sources if s.base < end]
    stats.segments_before = len(sources)
    logger.info(
        "Cleaning log %s (%s): offset map of %d keys built over offsets [%d, %d) in %.3f s; rewriting %d segments",
        log_name,
        plan.reason,
        len(offsets),
        plan.first_dirty,
        end,
        time.monotonic() - started,
        len(sources),
    )
    filt = _BatchFilter(offsets, end, now_ms, log.config.delete_retention_ms, stats, plan)
    rewriter = _Rewriter(log, now_ms, chunk, check, filt)
    rewriter.run(sources)
    stats.segments_after = rewriter.swapped
    with log.lock:
        if not log.closed:
            log.cleaner_checkpoint = min(stats.end_offset, log.log_end_offset)
            log.latest_delete_horizon = filt.latest_delete_horizon
    _log_done(log_name, stats)
    return stats


def _log_done(name: str, stats: CleanStats) -> None:
    elapsed = time.monotonic() - stats.started
    reduced = 100.0 * (1 - stats.bytes_written / stats.bytes_read) if stats.bytes_read else 0.0
    logger.info(
        "Cleaned log %s (cleaned up to offset %d): %d segments into %d, %.1f MB of log processed in %.1f seconds "
        "(%d of %d records kept). Size reduced by %.1f%%",
        name,
        stats.end_offset,
        stats.segments_before,
        stats.segments_after,
        stats.bytes_read / 1e6,
        elapsed,
        stats.records_kept,
        stats.records_read,
        reduced,
    )
