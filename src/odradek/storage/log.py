"""One partition's log, the facade over its parts: segments, append (leader and follower), read, roll,
log start/end offsets, high watermark, retention, truncation, the cleaner's swap, flushes, close.

The parts it delegates to, one job each: loading and recovery (storage/log_loader.py), batch checks,
recompression, keys and timestamps before an append (storage/log_validator.py, with `AppendOrigin`),
the producer snapshots (storage/producer_snapshots.py; the producer state itself is
storage/producer_state.py), the steps of one flush (storage/flush_plan.py), the names of partition
directories (storage/dir_names.py).

Every public method takes the log's lock: the broker's event loop thread appends and reads, while
retention and the log cleaner run in worker threads. The cleaner (storage/cleaner.py) builds cleaned
segments without the lock and takes it only to swap them in (`replace_segments`); a swap interrupted by a
crash is completed when the log is next loaded.

No fsync happens under the lock on the append path (anyone holding the lock stalls the event loop):
a roll only opens the new segment's files and hands the flush of the old one, and of the directory,
to the disk worker (storage/background.py); flushes asked for by flush.messages / flush.ms go there
too, and the appender learns from `AppendInfo.durable` when its records are on disk. A flush takes
duplicates of the descriptors under the lock, fsyncs them without it, and only then, under the lock
again, moves the recovery point up to what it covered (unless the log was truncated meanwhile), so the
recovery point never passes data that is not on disk. Changes to non-active segments (retention,
truncation, the cleaner's swap, close) also take `swap_lock`, before the lock, which lets the cleaner
fsync the directory between the steps of a swap without holding the lock.

An I/O error met by an operation (an append, a roll, a flush, a truncation, a checkpoint write on the disk
worker...) is reported to the log dir failure channel (storage/failure.py), which takes the whole dir
offline and marks this log offline (`mark_offline`): from then on it refuses every operation with
KAFKA_STORAGE_ERROR and the disk worker skips its jobs. The operation itself fails with a StorageError.
"""

from __future__ import annotations

import errno
import logging
import os
import random
import shutil
import threading
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Literal, TypeVar, overload

from odradek.fsutil import fsync_dir
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.records import (
    LOG_OVERHEAD,
    BatchHeader,
    decode_records,
    read_marker,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)
from odradek.storage.background import disk_worker
from odradek.storage.dir_names import delete_dir_name, parse_future_dir, parse_topic_partition
from odradek.storage.epoch_cache import LeaderEpochCache
from odradek.storage.failure import LogDirFailureChannel, io_error_of
from odradek.storage.flush_plan import FlushPlan
from odradek.storage.log_config import LogConfig
from odradek.storage.log_loader import LogLoader, rebuild_epochs
from odradek.storage.log_validator import (
    AppendOrigin,
    check_increasing,
    check_timestamps,
    dense_runs,
    validate_as_follower,
    validate_as_leader,
)
from odradek.storage.producer_snapshots import (
    delete_snapshots,
    frozen_copy,
    restore_producer_state,
    write_and_prune,
)
from odradek.storage.producer_state import (
    CompletedTxn,
    ProducerStateManager,
    last_sequence,
    snapshot_name,
)
from odradek.storage.region import FileRegion
from odradek.storage.segment import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    MAX_RELATIVE_OFFSET,
    SWAP_SUFFIX,
    TIMEINDEX_SUFFIX,
    BatchEntry,
    LogSegment,
    StorageError,
)
from odradek.storage.txn_index import AbortedTxn, AbortedTxnIndex

log = logging.getLogger("odradek.storage")

_BOUNDARY_CACHE_SIZE = 64
# what the disk worker's jobs do, for the message of an I/O error they meet (Kafka's wording)
_JOB_ACTIONS = {
    "_flush_rolled": "flushing log for",
    "_requested_flush": "flushing log for",
    "_scheduled_flush": "writing the leader-epoch-checkpoint of",
    "_write_snapshot": "writing a producer snapshot of",
    "delete": "deleting segments of",
}


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# --- results -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    num_batches: int
    valid_bytes: int
    num_records: int = 0
    # set when the append asked for a flush (flush.messages / flush.ms): done once the records are on
    # disk (with the error, if the flush failed); an acknowledgement must wait for it
    durable: Future[None] | None = None


_Records = TypeVar("_Records", bytes, bytes | FileRegion)


@dataclass(frozen=True, slots=True)
class FetchDataInfo(Generic[_Records]):
    fetch_offset: int
    records: _Records  # bytes, or with zero_copy a FileRegion of the segment file


def _out_of_range(message: str) -> KafkaError:
    return KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, message)


# --- the log -------------------------------------------------------------------------------------


class Log:
    """The log of one partition, in directory `<topic>-<partition>`."""

    def __init__(
        self,
        dir: Path | str,
        config: LogConfig | None = None,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        high_watermark: int | None = None,
        clean_shutdown: bool = True,
        time_ms: Callable[[], int] = now_ms,
        cleaner_checkpoint: int | None = None,
        background: Executor | None = None,
        failures: LogDirFailureChannel | None = None,
    ) -> None:
        self.dir = Path(dir)
        future = parse_future_dir(self.dir.name)
        self.topic, self.partition = future or parse_topic_partition(self.dir.name)
        self._name = f"{self.topic}-{self.partition}"
        self.config = config or LogConfig.from_props()
        self.lock = threading.RLock()
        self.closed = False
        # where I/O errors are reported (None: they only fail the operation); offline: its dir failed
        self.failures = failures
        self.offline = False
        # set when a move to another log dir retired this log (closed): flushes asked of it go there
        self.successor: Log | None = None
        # told (under the lock) of every truncation, with the new log end offset and whether it was a full
        # one: a move to another log dir (storage/log_mover.py) repeats it on the future replica
        self.truncation_listener: Callable[[int, bool], None] | None = None
        self._time = time_ms
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        self._boundaries: dict[int, tuple[LogSegment, int]] = {}
        self._unflushed_messages = 0
        self._last_flush_ms = time_ms()
        self.swap_lock = threading.RLock()  # taken before `lock` (see the module docstring)
        self._worker = background or disk_worker()
        self._jobs: set[Future[None]] = set()
        self._flush_request: Future[None] | None = None  # a flush queued that has not planned yet
        self._truncations = 0
        self._dir_changes = 0  # entries created or renamed in the directory, and how many are fsynced
        self._dir_synced = 0
        self._prefix = f"[Log partition={self.topic}-{self.partition}, dir={self.dir.parent}]"
        self.log_start_offset = log_start_offset
        self.recovery_point = recovery_point
        self._leo = log_start_offset
        # the cleaner's bookkeeping: its checkpoint (first dirty offset; cleaner-offset-checkpoint, kept
        # by the LogManager) and the latest delete horizon it stamped on tombstones (-1: none pending)
        self.cleaner_checkpoint = cleaner_checkpoint
        self.latest_delete_horizon = -1
        self.producer_state = ProducerStateManager()
        self.txn_index = AbortedTxnIndex(self.dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._load(clean_shutdown)
        self.epochs = LeaderEpochCache(self.dir, self._submit)
        if not self.epochs.loaded or not clean_shutdown:
            rebuild_epochs(self._segments, self.epochs)
        self.txn_index.load(self._bases, self._leo)
        self._restore_producer_state(self._leo)
        self._high_watermark = self._leo
        if high_watermark is not None:
            self.high_watermark = high_watermark

    def __repr__(self) -> str:
        return f"Log({self.topic}-{self.partition}, start={self.log_start_offset}, end={self._leo})"

    # --- properties --------------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        return self._leo

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, value: int) -> None:
        self._high_watermark = min(max(value, self.log_start_offset), self._leo)

    @property
    def last_stable_offset(self) -> int:
        """What read_committed consumers may read up to: the high watermark, or the first offset of the
        oldest transaction not yet completed (or completed by a marker not yet replicated) below it."""
        hw = self._high_watermark
        first = self.producer_state.first_unstable_offset(hw)
        return hw if first is None else min(hw, first)

    def collect_aborted(self, start_offset: int, upper_offset: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of the aborted transactions overlapping [start_offset, upper_offset)."""
        with self.lock:
            return self.txn_index.collect(start_offset, upper_offset)

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def size_in_bytes(self) -> int:
        return sum(seg.size for seg in self._segments)

    @property
    def _dense(self) -> bool:
        """Whether offsets must be dense within each segment, as recovery checks: not once compaction may
        have left gaps (a compacted topic, or a log the cleaner ever processed, with its checkpoint)."""
        return not (self.config.compact or self.cleaner_checkpoint is not None)

    @property
    def unflushed_messages(self) -> int:
        return self._unflushed_messages

    @property
    def last_flush_ms(self) -> int:
        return self._last_flush_ms

    # --- loading and recovery ----------------------------------------------------------------

    def _new_segment(self, base_offset: int) -> LogSegment:
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIMEINDEX_SUFFIX):
            stale = self.dir / f"{base_offset:020d}{suffix}"
            if stale.exists():
                log.warning("%s Deleting stale file %s before creating a segment", self._prefix, stale.name)
                stale.unlink()
        self._dir_changes += 1
        return self.open_segment(base_offset, self._time(), create=True)

    def open_segment(self, base_offset: int, now_ms: int, *, create: bool = False, suffix: str = "") -> LogSegment:
        """A segment of this log's directory with the topic's index settings and a random roll jitter."""
        seg = LogSegment(
            self.dir,
            base_offset,
            index_interval_bytes=self.config.index_interval_bytes,
            max_index_bytes=self.config.segment_index_bytes,
            now_ms=now_ms,
            create=create,
            suffix=suffix,
        )
        jitter = self.config.segment_jitter_ms
        seg.roll_jitter_ms = random.randrange(min(jitter, self.config.segment_ms)) if jitter > 0 else 0
        return seg

    def _load(self, clean_shutdown: bool) -> None:
        """The segments and offsets from the directory (storage/log_loader.py)."""
        started = time.monotonic()
        loader = LogLoader(self.dir, self._prefix, dense=self._dense, open_segment=self.open_segment,
                           new_segment=self._new_segment, time_ms=self._time)
        loaded = loader.load(clean_shutdown, self.log_start_offset, self.recovery_point)
        for seg in loaded.segments:
            self._add_segment(seg)
        self._leo = loaded.next_offset
        self.log_start_offset = loaded.log_start_offset
        if self._leo < self.log_start_offset:
            log.warning(
                "%s Log end offset %d is below the log start offset %d; starting the log at %d",
                self._prefix,
                self._leo,
                self.log_start_offset,
                self.log_start_offset,
            )
            self._truncate_fully_locked(self.log_start_offset)
        self.recovery_point = self._leo
        log.info(
            "%s Completed load of log with %d segments, log start offset %d and log end offset %d in %d ms",
            self._prefix,
            len(self._segments),
            self.log_start_offset,
            self._leo,
            int((time.monotonic() - started) * 1000),
        )

    def _add_segment(self, seg: LogSegment) -> None:
        self._segments.append(seg)
        self._bases.append(seg.base_offset)

    # --- append ------------------------------------------------------------------------------

    def append_as_leader(self, records: bytes | bytearray | memoryview, leader_epoch: int,
                         origin: AppendOrigin = AppendOrigin.CLIENT, transaction_version: int = 0,
                         verification_guard: int | None = None) -> AppendInfo:
        """Validate, assign offsets from the log end offset, stamp the leader epoch, write;
        `transaction_version` is that of a marker's transaction (WriteTxnMarkers v2, KIP-1228);
        `verification_guard`, when transaction verification applies, the guard of the producer's
        verification (`start_transaction_verification`; NO_GUARD if none was needed)."""
        data, batches = validate_as_leader(records, self.config, origin, self._name)
        with self._io("appending records to"), self.lock:
            self._check_open()
            now = self._time()
            check_timestamps(data, batches, self.config, now)
            duplicate = self._check_producers(batches, data, transaction_version, verification_guard)
            if duplicate is not None:
                return duplicate
            log_append = self.config.message_timestamp_type == "LogAppendTime"
            first = offset = self._leo
            entries: list[BatchEntry] = []
            max_ts = off_max = -1
            n_records = 0
            completed: list[CompletedTxn] = []
            for pos, h in batches:
                done = self._update_producer(h, offset, data, pos)
                if done is not None:
                    completed.append(done)
                set_base_offset(data, pos, offset)
                set_partition_leader_epoch(data, pos, leader_epoch)
                batch_ts = h.max_timestamp
                if log_append:
                    set_log_append_time(data, pos, now)
                    batch_ts = now
                last = offset + h.last_offset_delta
                if batch_ts > max_ts:
                    max_ts, off_max = batch_ts, last
                entries.append(BatchEntry(pos, h.batch_length + LOG_OVERHEAD, last, batch_ts))
                n_records += h.records_count
                offset = last + 1
            if log_append:
                off_max = first  # every record carries the same append time: the first one is the earliest
            durable = self._append(data, entries, max_ts, n_records)
            self._index_aborted(completed)
            self.epochs.assign(leader_epoch, first)
            return AppendInfo(
                first,
                offset - 1,
                max_ts,
                off_max,
                now if log_append else -1,
                len(batches),
                len(data),
                n_records,
                durable,
            )

    def append_as_follower(self, records: bytes | bytearray | memoryview, keep_start: bool = False) -> AppendInfo:
        """Append replicated batches keeping their offsets (>= log end offset, increasing). Gaps in offsets,
        as compaction leaves on the leader, stay inside the segment for a compacted log, as in Kafka; in a
        log that was never compacted (its recovery checks dense offsets) a gap starts a new segment. A gap
        after an empty active segment replaces it (moving the log start up), unless `keep_start` (a copy
        into a future log must keep the log start offset of the log it copies)."""
        data, batches = validate_as_follower(records)
        with self._io("appending records to"), self.lock:
            self._check_open()
            if batches[0][1].base_offset < self._leo:
                raise _out_of_range(
                    f"Follower append at offset {batches[0][1].base_offset} below the log end offset {self._leo}"
                )
            view = memoryview(data)
            max_ts = off_max = -1
            n_records = 0
            runs = dense_runs(batches) if self._dense else [(0, len(data), check_increasing(batches))]
            durable: Future[None] | None = None
            for start, end, run in runs:
                entries = [BatchEntry(pos - start, h.size, h.last_offset, h.max_timestamp) for pos, h in run]
                completed: list[CompletedTxn] = []
                for pos, h in run:
                    if h.max_timestamp > max_ts:
                        max_ts, off_max = h.max_timestamp, h.last_offset
                    done = self._update_producer(h, h.base_offset, data, pos)
                    if done is not None:
                        completed.append(done)
                    self.epochs.assign(h.partition_leader_epoch, h.base_offset)
                run_records = sum(h.records_count for _, h in run)
                n_records += run_records
                first = run[0][1].base_offset
                empty = self.active_segment.size == 0
                if first != self._leo and (self._dense or (empty and not keep_start)
                                           or run[-1][1].last_offset - self.active_segment.base_offset
                                           > MAX_RELATIVE_OFFSET):
                    self._roll_locked(first)
                durable = self._append(
                    view[start:end], entries, max(e.max_timestamp for e in entries), run_records, first
                ) or durable
                self._index_aborted(completed)
            return AppendInfo(
                batches[0][1].base_offset,
                batches[-1][1].last_offset,
                max_ts,
                off_max,
                -1,
                len(batches),
                len(data),
                n_records,
                durable,
            )

    def start_transaction_verification(self, producer_id: int, sequence: int, epoch: int) -> int:
        """The guard a transactional append of the producer must present (NO_GUARD: it has a transaction
        ongoing here, nothing to verify); see `ProducerStateManager.start_verification`."""
        with self.lock:
            return self.producer_state.start_verification(producer_id, sequence, epoch)

    def _check_producers(self, batches: list[tuple[int, BatchHeader]], data: bytearray,
                         transaction_version: int = 0, verification_guard: int | None = None) -> AppendInfo | None:
        """Reject out-of-order or fenced idempotent batches, and markers of a fenced producer epoch or
        coordinator epoch; a retried batch already in the log is answered with its original offsets instead
        of being written twice."""
        if len(batches) == 1:
            dup = self.producer_state.find_duplicate(batches[0][1])
            if dup is not None:
                return AppendInfo(dup.first_offset, dup.last_offset, dup.max_timestamp, dup.last_offset, -1, 0, 0, 0)
        pending: dict[int, int] = {}
        for pos, h in batches:
            if h.producer_id >= 0:
                coordinator_epoch = read_marker(memoryview(data)[pos : pos + h.size])[1] if h.is_control else -1
                self.producer_state.check(h, pending, coordinator_epoch, transaction_version, verification_guard)
                pending[h.producer_id] = last_sequence(h)
        return None

    # --- producer state and transactions -------------------------------------------------------

    def _update_producer(self, h: BatchHeader, offset: int, data: bytes | bytearray | memoryview,
                         pos: int) -> CompletedTxn | None:
        if h.producer_id < 0:
            return None
        if not h.is_control:
            return self.producer_state.update(h, offset)
        kind, coordinator_epoch = read_marker(memoryview(data)[pos : pos + h.size])
        return self.producer_state.update(h, offset, kind, coordinator_epoch)

    def _index_aborted(self, completed: list[CompletedTxn], last_stable_offset: int | None = None) -> None:
        """Aborted transactions into the index, in the file of the segment holding their markers, with the
        last stable offset as of their marker (unknown, -1, when found again by a rebuild)."""
        for txn in completed:
            if txn.aborted:
                lso = self.last_stable_offset if last_stable_offset is None else last_stable_offset
                i = bisect_right(self._bases, txn.last_offset) - 1
                self.txn_index.add(AbortedTxn(txn.last_offset, txn.producer_id, txn.first_offset, lso),
                                   self._bases[max(i, 0)])

    def _restore_producer_state(self, upto: int) -> None:
        """The producer state as of `upto`, from the newest snapshot and the batches after it; aborted
        transactions found in those batches are (re)indexed."""
        restore_producer_state(self.producer_state, self.dir, self._segments, self._bases, self.log_start_offset,
                               upto, lambda done: self._index_aborted([done], -1), self._prefix)

    def _take_snapshot(self, offset: int) -> None:
        """Write the producer state as of `offset` (the log end offset now) on the disk worker."""
        self._submit(self._write_snapshot, frozen_copy(self.producer_state), self.dir / snapshot_name(offset))

    def _write_snapshot(self, state: ProducerStateManager, path: Path) -> None:
        """On the disk worker; an I/O error is reported by `_run_job`."""
        if self.closed:
            return
        write_and_prune(state, path, self.dir, self.log_start_offset)

    def _append(
        self,
        data: bytes | bytearray | memoryview,
        entries: list[BatchEntry],
        max_ts: int,
        n_records: int,
        first_offset: int | None = None,
    ) -> Future[None] | None:
        """Write whole batches at the end; `first_offset` (default: the log end offset) is the first
        batch's base offset, above the log end offset when a follower copies a compacted gap. Returns
        the flush that flush.messages / flush.ms asked for, if they did."""
        if len(data) > self.config.segment_bytes:
            raise KafkaError(
                ErrorCode.RECORD_LIST_TOO_LARGE,
                f"Message batch size is {len(data)} bytes which exceeds the maximum configured segment size of "
                f"{self.config.segment_bytes}",
            )
        first = self._leo
        if first_offset is None:
            first_offset = first
        seg = self._maybe_roll(len(data), first_offset, entries[-1].last_offset, max_ts)
        position = seg.size
        seg.append(data, entries)
        self._leo = entries[-1].last_offset + 1
        self._remember_boundary(first, seg, position)
        if n_records:
            self._unflushed_messages += n_records
            return self._maybe_flush()
        return None

    def _maybe_flush(self) -> Future[None] | None:
        now = self._time()
        if (
            self._unflushed_messages >= self.config.flush_messages
            or now - self._last_flush_ms >= self.config.flush_ms
        ):
            return self._request_flush()
        return None

    def _check_open(self) -> None:
        if self.closed:
            if self.offline:
                raise StorageError(message=f"Log {self.topic}-{self.partition} in dir {self.dir.parent} is offline "
                                           "(the log dir failed)")
            raise StorageError(message=f"Log {self.topic}-{self.partition} is closed")

    # --- I/O errors --------------------------------------------------------------------------

    def _io_failure(self, action: str, exc: BaseException) -> StorageError | None:
        """For an exception met while `action` (e.g. "appending records to"): the StorageError to raise
        instead if it is an I/O error, after reporting it to the failure channel (which takes the log dir
        offline); None if it is not one, or the log was closed or deleted under the operation."""
        cause = io_error_of(exc)
        if cause is None or (self.closed and not self.offline):
            return None
        parent = self.dir.parent
        message = f"Error while {action} {self.topic}-{self.partition} in dir {parent}: {cause}"
        if self.failures is not None and not self.offline:
            self.failures.report(parent, message)
        return StorageError(message=message)

    @contextmanager
    def _io(self, action: str) -> Iterator[None]:
        """An I/O error in the block becomes a reported StorageError (see `_io_failure`)."""
        try:
            yield
        except (OSError, StorageError) as exc:
            failure = self._io_failure(action, exc)
            if failure is None:
                raise
            raise failure from exc

    def mark_offline(self) -> None:
        """Its log dir failed: from now on every operation fails with KAFKA_STORAGE_ERROR and the disk worker
        skips its jobs. Any thread, no lock (an operation under way fails or finishes on its own); the files
        are closed later, by `close_files`."""
        self.offline = True
        self.closed = True

    # --- roll --------------------------------------------------------------------------------

    def _maybe_roll(self, size: int, first_offset: int, last_offset: int, max_ts: int) -> LogSegment:
        seg = self.active_segment
        if seg.size == 0:
            return seg
        cfg = self.config
        rolling_ts = seg.rolling_base_timestamp
        if rolling_ts is not None and rolling_ts >= 0:
            waited = max_ts - rolling_ts
        else:
            waited = self._time() - seg.created_ms
        if (
            seg.size > cfg.segment_bytes - size
            or waited > cfg.max_segment_ms - seg.roll_jitter_ms
            or seg.index_full
            or last_offset - seg.base_offset > MAX_RELATIVE_OFFSET
        ):
            return self._roll_locked(first_offset)
        return seg

    def roll(self) -> LogSegment:
        """Start a new active segment at the log end offset (no-op when the active one is empty)."""
        with self._io("rolling log segment for"), self.lock:
            self._check_open()
            return self._roll_locked(self._leo)

    def _roll_locked(self, base_offset: int) -> LogSegment:
        started = time.monotonic()
        old = self.active_segment
        if old.size == 0:
            if old.base_offset == base_offset:
                return old
            # an empty active segment cannot hold a batch at another offset: replace it
            old.delete()
            self._segments.pop()
            self._bases.pop()
        else:
            old.on_become_inactive()
        seg = self._new_segment(base_offset)
        self._add_segment(seg)
        self.log_start_offset = max(self.log_start_offset, self._segments[0].base_offset)
        if self.producer_state.producers and base_offset == self._leo:
            self._take_snapshot(base_offset)
        # The old segment and the directory are fsynced by the disk worker, which then moves the recovery
        # point up to the new segment (Kafka's roll does the same). The old segment's index descriptors
        # stay open until then: what was written through them must be fsynced through them.
        self._submit(self._flush_rolled, base_offset)
        log.info(
            "%s Rolled new log segment at offset %d in %d ms.",
            self._prefix,
            base_offset,
            int((time.monotonic() - started) * 1000),
        )
        return seg

    # --- read --------------------------------------------------------------------------------

    @overload
    def read(self, start_offset: int, max_bytes: int, max_offset: int | None = None, min_one_message: bool = True,
             zero_copy: Literal[False] = False) -> FetchDataInfo[bytes]: ...

    @overload
    def read(self, start_offset: int, max_bytes: int, max_offset: int | None = None, min_one_message: bool = True,
             *, zero_copy: bool) -> FetchDataInfo[bytes | FileRegion]: ...

    def read(
        self, start_offset: int, max_bytes: int, max_offset: int | None = None, min_one_message: bool = True,
        zero_copy: bool = False,
    ) -> FetchDataInfo[bytes] | FetchDataInfo[bytes | FileRegion]:
        """Whole batches from the one containing `start_offset`, from one segment, at most `max_bytes`
        (unless min_one_message and the first batch alone is larger), none with base offset >= max_offset.
        With `zero_copy` the records are a FileRegion of the segment file (empty ones stay b"")."""
        successor = self.successor
        if successor is not None:  # moved to another log dir while a reader held on to this log
            return successor.read(start_offset, max_bytes, max_offset, min_one_message, zero_copy=zero_copy)
        with self._io("reading from"), self.lock:
            self._check_open()
            if start_offset < self.log_start_offset or start_offset > self._leo:
                raise _out_of_range(
                    f"Received request for offset {start_offset} for partition {self.topic}-{self.partition}, "
                    f"but we only have log segments in the range {self.log_start_offset} to {self._leo}."
                )
            if start_offset == self._leo or (max_offset is not None and start_offset >= max_offset):
                return FetchDataInfo(start_offset, b"")
            i = bisect_right(self._bases, start_offset) - 1
            hit = self._boundaries.get(start_offset)
            position = hit[1] if hit is not None and hit[0] is self._segments[i] else None
            if zero_copy:
                return self._read_region(i, start_offset, max_bytes, max_offset, min_one_message, position)
            result = self._segments[i].read(start_offset, max_bytes, max_offset, min_one_message, position)
            while result is None and i + 1 < len(self._segments):
                i += 1
                result = self._segments[i].read(start_offset, max_bytes, max_offset, min_one_message, 0)
            if result is None or not result.data:
                return FetchDataInfo(start_offset, b"")
            self._remember_boundary(result.next_offset, self._segments[i], result.end_position)
            return FetchDataInfo(start_offset, result.data)

    def _read_region(self, i: int, start_offset: int, max_bytes: int, max_offset: int | None,
                     min_one_message: bool, position: int | None) -> FetchDataInfo[bytes | FileRegion]:
        span = self._segments[i].span(start_offset, max_bytes, max_offset, min_one_message, position)
        while span is None and i + 1 < len(self._segments):
            i += 1
            span = self._segments[i].span(start_offset, max_bytes, max_offset, min_one_message, 0)
        if span is None or span.end_position == span.position:
            return FetchDataInfo(start_offset, b"")
        seg = self._segments[i]
        self._remember_boundary(span.next_offset, seg, span.end_position)
        size = span.end_position - span.position
        try:
            return FetchDataInfo(start_offset, FileRegion.of(seg.fd, span.position, size))
        except OSError as exc:
            # out of descriptors (a fetch of very many partitions): these bytes take the copying path
            if exc.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            return FetchDataInfo(start_offset, seg.pread(size, span.position))

    def _remember_boundary(self, offset: int, seg: LogSegment, position: int) -> None:
        """Cache `offset` -> batch start, so a consumer's next fetch needs no index lookup or scan."""
        cache = self._boundaries
        cache[offset] = (seg, position)
        if len(cache) > _BOUNDARY_CACHE_SIZE:
            del cache[next(iter(cache))]

    # --- offsets by time ---------------------------------------------------------------------

    def fetch_offset_by_timestamp(self, ts: int) -> tuple[int, int] | None:
        """ListOffsets: -2 earliest (and -4 earliest-local: all data is local) -> (log start, -1);
        -1 latest -> (log end, -1); -3 -> the record with the largest timestamp; ts >= 0 -> the first
        record (in offset order) with timestamp >= ts. None when no record qualifies. For -3 and ts >= 0
        batch headers and the indexes find the batch, then that one batch is decoded to name the exact
        record, as Kafka does."""
        with self.lock:
            self._check_open()
            if ts in (-2, -4):
                return self.log_start_offset, -1
            if ts == -1:
                return self._leo, -1
            if ts == -3:
                return self._max_timestamp_offset()
            return self._offset_for_time(ts) if ts >= 0 else None

    def _max_timestamp_offset(self) -> tuple[int, int] | None:
        best: LogSegment | None = None
        for seg in self._segments:
            seg.load_indexes()
            if seg.max_timestamp >= 0 and (best is None or seg.max_timestamp > best.max_timestamp):
                best = seg
        if best is None:
            return None
        found = best.find_batch(best.offset_of_max_timestamp)
        if found is None:
            return best.offset_of_max_timestamp, best.max_timestamp
        return self._first_record_at_or_after(best, *found, best.max_timestamp)

    def _offset_for_time(self, ts: int) -> tuple[int, int] | None:
        for seg in self._segments:
            seg.load_indexes()
            if seg.max_timestamp < ts or seg.size == 0:
                continue
            start = seg.lookup_position(seg.lookup_timestamp(ts))
            for position, header in seg.iter_headers(start):
                if header.max_timestamp >= ts and header.last_offset >= self.log_start_offset:
                    return self._first_record_at_or_after(seg, position, header, ts)
        return None

    def _first_record_at_or_after(
        self, seg: LogSegment, position: int, header: BatchHeader, ts: int
    ) -> tuple[int, int]:
        if header.timestamp_type == 1:
            return max(header.base_offset, self.log_start_offset), header.max_timestamp
        for record in decode_records(seg.pread(header.size, position)):
            if record.timestamp >= ts and record.offset >= self.log_start_offset:
                return record.offset, record.timestamp
        return header.last_offset, header.max_timestamp

    # --- deletion and truncation -------------------------------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to `offset` (-1 = high watermark), drop the
        segments entirely below it; returns the new low watermark."""
        with self._io("moving the log start offset of"), self.lock:
            self._check_open()
            if offset == -1:
                offset = self._high_watermark
            if offset < 0 or offset > self._high_watermark:
                raise _out_of_range(
                    f"Cannot delete records of partition {self.topic}-{self.partition} before offset {offset}: "
                    f"the high watermark is {self._high_watermark}"
                )
            if offset > self.log_start_offset:
                log.info(
                    "%s Incremented log start offset to %d due to client delete records request",
                    self._prefix,
                    offset,
                )
                self.log_start_offset = offset
                self.epochs.truncate_from_start(offset)
                # Not when the cleaner is swapping segments (waiting for it here could stall the event
                # loop): retention deletes what lies below the log start offset at its next pass.
                if self.swap_lock.acquire(blocking=False):
                    try:
                        self.delete_old_segments(
                            lambda seg, nxt: nxt.base_offset <= offset, "log start offset breach"
                        )
                    finally:
                        self.swap_lock.release()
            return self.log_start_offset

    def delete_old_segments(self, predicate: Callable[[LogSegment, LogSegment], bool], reason: str) -> int:
        """Delete the oldest non-active segments while `predicate(segment, next_segment)` holds and the
        segment lies wholly below the high watermark. Returns how many were deleted."""
        with self._io("deleting segments of"), self.swap_lock, self.lock:
            if self.closed:
                return 0
            doomed: list[LogSegment] = []
            for seg, nxt in zip(self._segments, self._segments[1:], strict=False):
                if nxt.base_offset > self._high_watermark or not predicate(seg, nxt):
                    break
                doomed.append(seg)
            for seg in doomed:
                log.info("%s Deleting segment %s due to %s", self._prefix, seg.log_path.name, reason)
                self._retire(seg)
            if doomed:
                del self._segments[: len(doomed)]
                del self._bases[: len(doomed)]
                self.log_start_offset = max(self.log_start_offset, self._segments[0].base_offset)
                self._boundaries.clear()
                self.txn_index.drop_before(self._segments[0].base_offset, self._bases)
            return len(doomed)

    def _retire(self, seg: LogSegment) -> None:
        """Delete a segment that left the log: renamed to `.deleted` under the lock (cheap; load sweeps
        such names), unlinked by the disk worker (freeing a large file's blocks can take a while)."""
        seg.close()
        seg.change_suffix(DELETED_SUFFIX)
        self._dir_changes += 1
        self._submit(seg.delete)

    def replace_segments(self, old: Sequence[LogSegment], sizes: Sequence[int], cleaned: LogSegment) -> bool:
        """Swap in `cleaned` (a segment the cleaner wrote and fsynced as `<base>.log.cleaned`, base offset
        that of old[0]) for the consecutive non-active segments `old`, which must still be in the log with
        the given sizes; False, changing nothing, when they are not (retention or truncation got there
        first). Kafka's order: rename to `.swap` (the commit), delete the old segments, rename to the final
        names; a crash after the commit is completed at load by `LogLoader`.

        The directory fsyncs happen outside the log's lock (appends go on meanwhile); `swap_lock`, held
        throughout, keeps retention, truncation and close away from the segments being swapped, and appends
        only touch the active segment, so the checked position still holds at each step:
        1. rename to `.swap`, fsync: the commit is on disk before any old segment goes. A crash before the
           fsync leaves `.cleaned` (swept at load: the old segments are all there) or `.swap` (completed).
        2. under the lock: the old segments' files renamed to `.deleted`, `cleaned` takes their place in
           memory (still named `.swap`). Then fsync: those renames are on disk before the final one, so no
           crash can leave a final `<base>.log` beside an old segment it overlaps (without relying on the
           file system to journal renames in order).
        3. under the lock: rename `cleaned` to its final names. Then fsync (a crash before it just leaves
           the `.swap` for the next load to complete). The `.deleted` files are unlinked by the disk worker.
        """
        with self._io("replacing cleaned segments of"), self.swap_lock:
            with self.lock:
                if self._position_of(old, sizes) is None:
                    return False
            cleaned.change_suffix(SWAP_SUFFIX)
            fsync_dir(self.dir)
            with self.lock:
                i = self._position_of(old, sizes)
                if i is None:  # swap_lock keeps the segments in place: the log went offline meanwhile
                    self._check_open()
                    raise AssertionError("the cleaned segments moved during their swap")
                for seg in old:
                    self._retire(seg)
                self._segments[i : i + len(old)] = [cleaned]
                self._bases[i : i + len(old)] = [cleaned.base_offset]
                self._boundaries.clear()
                self.txn_index.rewrite(self._bases)
            fsync_dir(self.dir)
            with self.lock:
                cleaned.change_suffix("")
            fsync_dir(self.dir)
            return True

    def _position_of(self, old: Sequence[LogSegment], sizes: Sequence[int]) -> int | None:
        if self.closed or not old:
            return None
        i = next((k for k, seg in enumerate(self._segments) if seg is old[0]), None)
        if i is None or i + len(old) >= len(self._segments):  # gone, or reaching the active segment
            return None
        current = self._segments[i : i + len(old)]
        if any(a is not b or a.size != size for a, b, size in zip(current, old, sizes, strict=True)):
            return None
        return i

    def truncate_to(self, offset: int) -> None:
        """Remove everything at or above `offset`; a batch straddling it goes entirely, so the log end
        offset becomes that batch's base offset."""
        with self._io("truncating"), self.swap_lock, self.lock:
            self._check_open()
            if offset < 0:
                raise ValueError(f"Cannot truncate to negative offset {offset}")
            if offset >= self._leo:
                # Nothing to drop, but an epoch that starts at the log end (this broker led it without
                # appending, then lost the leadership) conflicts with the new leader's history, and a
                # follower that keeps naming it as its last fetched epoch is told it diverged forever:
                # forget it, as Kafka's truncateTo does.
                self.epochs.truncate_from_end(self._leo)
                return
            log.info("%s Truncating to offset %d", self._prefix, offset)
            if offset < self._segments[0].base_offset:
                self._truncate_fully_locked(offset)
                return
            self._truncations += 1
            while len(self._segments) > 1 and self._segments[-1].base_offset > offset:
                self._retire(self._segments.pop())
                self._bases.pop()
            seg = self.active_segment
            seg.truncate_to(offset)
            if seg.next_offset is None and not seg.scan_tail(self._dense):
                seg.recover(self._dense)
            # On the caller's thread (a follower's fetcher, on the event loop), unlike other fsyncs: the
            # shorter file must be on disk before records the leader sends next land at the same offsets,
            # or a crash could bring back the divergent tail behind them. Truncations are rare.
            seg.flush()
            assert seg.next_offset is not None, "scanned or recovered just above"
            self._leo = seg.next_offset
            self.log_start_offset = min(self.log_start_offset, self._leo)
            self.recovery_point = min(self.recovery_point, self._leo)
            self._high_watermark = min(self._high_watermark, self._leo)
            if self.cleaner_checkpoint is not None:
                self.cleaner_checkpoint = min(self.cleaner_checkpoint, self._leo)
            self._boundaries.clear()
            self.epochs.truncate_from_end(self._leo)
            self.txn_index.truncate_to(self._leo, self._bases)
            self._restore_producer_state(self._leo)
            if self.truncation_listener is not None:
                self.truncation_listener(self._leo, False)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and restart the (empty) log at `offset`."""
        with self._io("truncating"), self.swap_lock, self.lock:
            self._check_open()
            self._truncate_fully_locked(offset)
            self._request_flush()  # the directory, on disk

    def _truncate_fully_locked(self, offset: int) -> None:
        log.info("%s Truncating fully and starting at offset %d", self._prefix, offset)
        self._truncations += 1
        for seg in self._segments:
            self._retire(seg)
        self._segments.clear()
        self._bases.clear()
        self._add_segment(self._new_segment(offset))
        self._leo = self.log_start_offset = self.recovery_point = self._high_watermark = offset
        if self.cleaner_checkpoint is not None:
            self.cleaner_checkpoint = offset
        self._boundaries.clear()
        self.producer_state.clear()
        self.txn_index.truncate_to(-1, self._bases)
        delete_snapshots(self.dir)
        if hasattr(self, "epochs"):
            self.epochs.clear()
        if self.truncation_listener is not None:
            self.truncation_listener(offset, True)

    # --- lifecycle ---------------------------------------------------------------------------

    def flush(self) -> None:
        """fsync every segment written since the recovery point (without holding the lock while the
        fsyncs run); the recovery point becomes the log end offset the flush started from."""
        with self._io("flushing log for"):
            with self.lock:
                if self.closed:
                    return
                sync = self._plan_sync(self._leo)
            try:
                self._run_sync(sync)
            except OSError:
                if self.closed and not self.offline:  # deleted meanwhile (its directory renamed away)
                    return
                raise
            with self.lock:
                self._complete_sync(sync)

    def _flush_locked(self) -> None:
        """flush(), all under the lock (at close)."""
        sync = self._plan_sync(self._leo)
        self._run_sync(sync)
        self._complete_sync(sync)

    def _request_flush(self) -> Future[None]:
        """A flush on the disk worker that will cover everything written so far (call under the lock):
        the queued one, if it has not planned yet, else a new one."""
        if self._flush_request is None:
            self._flush_request = self._submit(self._requested_flush)
        return self._flush_request

    def _requested_flush(self) -> None:
        with self.lock:
            self._flush_request = None  # appends from now on are not covered: they queue another flush
            successor = self.successor
            if self.closed:
                if successor is not None:  # the records it was asked to make durable are there now
                    successor.flush()
                self._check_open()  # an offline log did not make them durable: the flush fails
                return
            sync = self._plan_sync(self._leo)
        self._run_sync(sync)
        with self.lock:
            self._complete_sync(sync)

    def _flush_rolled(self, upto: int) -> None:
        """The disk worker's part of a roll: fsync the segments below the new one and the directory."""
        with self.lock:
            if self.closed:
                return
            sync = self._plan_sync(upto)
        self._run_sync(sync)
        with self.lock:
            self._complete_sync(sync)

    def _plan_sync(self, upto: int) -> FlushPlan:
        """Under the lock: the flush of the segments below `upto` (storage/flush_plan.py)."""
        sync = FlushPlan.make(self._segments, self._bases, recovery_point=self.recovery_point, upto=upto,
                              log_end_offset=self._leo, truncations=self._truncations,
                              dir_changes=self._dir_changes, dir_synced=self._dir_synced)
        if upto >= self._leo:
            self._unflushed_messages = 0
            self._last_flush_ms = self._time()
        return sync

    def _run_sync(self, sync: FlushPlan) -> None:
        """The fsyncs of a planned flush, without the lock."""
        sync.run(self.dir)

    def _complete_sync(self, sync: FlushPlan) -> None:
        """Under the lock, after the fsyncs: record them and move the recovery point up, unless the log
        was truncated since the flush was planned (what it covered may be gone, or rewritten)."""
        sync.mark_synced()
        if sync.dir_changes is not None:
            self._dir_synced = max(self._dir_synced, sync.dir_changes)
        if self.closed or sync.truncations != self._truncations:
            return
        self.recovery_point = max(self.recovery_point, min(sync.target, self._leo))
        sync.close_synced_indexes(self._segments, self._bases)

    # --- the disk worker ---------------------------------------------------------------------

    def _submit(self, fn: Callable[..., object], *args: object) -> Future[None]:
        """Run `fn(*args)` on the disk worker. Its failure is logged (and set on the future), unless the
        log was closed or deleted under it."""
        job = self._worker.submit(self._run_job, fn, args)
        self._jobs.add(job)
        job.add_done_callback(self._jobs.discard)
        return job

    def _run_job(self, fn: Callable[..., object], args: tuple[object, ...]) -> None:
        if self.offline:  # no more disk work in a failed dir; whoever waits for it learns so
            self._check_open()
        dir_before = self.dir
        try:
            try:
                fn(*args)
            except FileNotFoundError:
                if self.dir == dir_before or self.closed:
                    raise
                # the partition directory was renamed under the job (a moved log taking its final name,
                # see rename_dir): its paths follow the log, so once more at the new ones; not an I/O error
                fn(*args)
        except Exception as exc:
            name = getattr(fn, "__name__", str(fn))
            failure = self._io_failure(_JOB_ACTIONS.get(name, f"running {name} for"), exc)
            if failure is not None:  # reported: the failure channel logged it
                raise failure from exc
            if self.closed:
                if isinstance(exc, StorageError):  # offline: whoever waits for the job must not take it as done
                    raise
                return
            log.exception("%s Background disk work %s failed", self._prefix, name)
            raise

    def wait_for_background(self) -> None:
        """Wait until the disk worker has done every job this log gave it so far. Never call it holding
        the log's lock (the jobs take it)."""
        while self._jobs:
            for job in list(self._jobs):
                try:
                    job.result()
                except Exception:  # logged by the job
                    pass

    def update_config(self, config: LogConfig) -> None:
        with self.lock:
            self.config = config
            for seg in self._segments:
                seg.index_interval_bytes = config.index_interval_bytes
                seg.max_index_bytes = config.segment_index_bytes

    def close(self) -> None:
        """Finish the disk worker's jobs, record the active segment's final max timestamp, fsync, write
        the leader epoch checkpoint, close every file."""
        self.wait_for_background()
        with self.swap_lock, self.lock:
            if self.closed:
                return
            self.active_segment.on_become_inactive()
            self._flush_locked()
            self.epochs.flush_if_changed()
            if self.producer_state.producers:
                try:
                    self.producer_state.write_snapshot(self.dir / snapshot_name(self._leo))
                except OSError as exc:
                    log.warning("%s Writing the producer snapshot failed: %s", self._prefix, exc)
            for seg in self._segments:
                seg.close()
            self.closed = True

    def retire(self, successor: Log) -> None:
        """The replica moved to another log dir and `successor` (holding the same records) serves it now:
        this log is closed without a flush (its directory is about to be deleted); reads and flushes still
        asked of it go to the successor. Call holding `swap_lock` and the lock; `close_files` later."""
        self.closed = True
        self.successor = successor
        self.truncation_listener = None

    def close_files(self) -> None:
        """Close the segment files of a retired log."""
        with self.lock:
            for seg in self._segments:
                seg.close()

    def rename_dir(self, new_dir: Path) -> None:
        """Rename the partition directory (a future replica taking its final name) while the log stays
        open: the files keep their descriptors, and every path the log derives from its directory
        follows. A rename, no fsync: the caller fsyncs the parent directory."""
        with self.swap_lock, self.lock:
            os.rename(self.dir, new_dir)
            self.dir = new_dir
            for seg in self._segments:
                seg.change_dir(new_dir)
            self.epochs.path = new_dir / self.epochs.path.name
            self.txn_index.dir = new_dir
            self._prefix = f"[Log partition={self.topic}-{self.partition}, dir={self.dir.parent}]"

    def delete(self) -> None:
        """Close the files and remove the partition directory: first renamed to
        `<topic>-<partition>.<uuid>-delete` (so a crash mid-way leaves a name startup sweeps), then removed
        by the disk worker."""
        with self.swap_lock, self.lock:
            for seg in self._segments:
                seg.close()
            self.closed = True
            doomed = self.dir.with_name(delete_dir_name(self.topic, self.partition))
            try:
                os.rename(self.dir, doomed)
            except FileNotFoundError:
                return
            log.info("%s Deleting log directory (renamed to %s)", self._prefix, doomed.name)
            self._submit(shutil.rmtree, doomed, True)

    def batch_header_at(self, offset: int) -> BatchHeader | None:
        """Header of the batch containing `offset` (for tools and tests)."""
        with self.lock:
            i = bisect_right(self._bases, offset) - 1
            if i < 0:
                return None
            found = self._segments[i].find_batch(offset)
            return None if found is None else found[1]
