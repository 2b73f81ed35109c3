"""Loading one partition's log from its directory (Kafka's LogLoader): segment discovery, sweeping the
leftovers of interrupted deletes and cleanings, completing an interrupted swap of cleaned segments,
recovery (validating the segments past the recovery point and truncating a torn tail), and rebuilding
the leader epoch cache from batch headers.

The loader works on the files alone and hands the `Log` its segments and offsets; the Log then brings
its other state up to them: the epochs (`rebuild_epochs` when the checkpoint is missing or may be
stale), the aborted-transaction index, and the producer state (storage/producer_snapshots.py).
"""

from __future__ import annotations

import logging
import os
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path

from odradek.fsutil import fsync_dir, is_temporary
from odradek.storage.epoch_cache import LeaderEpochCache
from odradek.storage.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIMEINDEX_SUFFIX,
    LogSegment,
    file_name,
    parse_base_offset,
)

log = logging.getLogger("odradek.storage")

_STALE_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX)


@dataclass(frozen=True, slots=True)
class LoadedSegments:
    """What loading found: the segments in offset order (at least one), the log end offset (the next
    offset of the active segment), and the log start offset (at least the first segment's base)."""

    segments: list[LogSegment]
    next_offset: int
    log_start_offset: int


@dataclass
class LogLoader:
    """Loads the segments of the log in `dir`. `open_segment(base, now_ms)` opens an existing segment,
    `new_segment(base)` creates one (the first of an empty log); `dense`: whether recovery requires
    dense offsets within each segment (not in a log compaction may have left gaps in)."""

    dir: Path
    prefix: str
    _: KW_ONLY
    dense: bool
    open_segment: Callable[[int, int], LogSegment]
    new_segment: Callable[[int], LogSegment]
    time_ms: Callable[[], int]
    _segments: list[LogSegment] = field(init=False, default_factory=list)
    _bases: list[int] = field(init=False, default_factory=list)

    def load(self, clean_shutdown: bool, log_start_offset: int, recovery_point: int) -> LoadedSegments:
        """Open every segment; after an unclean shutdown, recover those from the recovery point's on;
        after a clean one, only an active segment whose tail is not whole batches."""
        bases = self._scan_dir()
        now = self.time_ms()
        for base in bases:
            self._add(self.open_segment(base, now))
        if not self._segments:
            self._add(self.new_segment(log_start_offset))
        elif not clean_shutdown:
            first = max(bisect_right(self._bases, recovery_point) - 1, 0)
            self._recover_from(first)
        elif not self._segments[-1].scan_tail(self.dense):
            log.warning(
                "%s The tail of the active segment is not whole batches despite a clean shutdown",
                self.prefix,
            )
            self._recover_from(len(self._segments) - 1)
        leo = self._segments[-1].next_offset
        assert leo is not None, "the active segment's tail is scanned at load"
        return LoadedSegments(self._segments, leo, max(log_start_offset, self._segments[0].base_offset))

    def _add(self, seg: LogSegment) -> None:
        self._segments.append(seg)
        self._bases.append(seg.base_offset)

    def _scan_dir(self) -> list[int]:
        """Sweep leftovers of interrupted deletes and cleanings, complete an interrupted swap of cleaned
        segments, return the base offsets of the .log files."""
        self._complete_swaps()
        bases: list[int] = []
        indexes: list[tuple[int, Path]] = []
        for entry in os.scandir(self.dir):
            name = entry.name
            if name.endswith(_STALE_SUFFIXES) or is_temporary(name):
                log.info("%s Deleting stray file %s", self.prefix, name)
                os.unlink(entry.path)
                continue
            base = parse_base_offset(name, LOG_SUFFIX)
            if base is not None:
                bases.append(base)
                continue
            for suffix in (INDEX_SUFFIX, TIMEINDEX_SUFFIX):
                base = parse_base_offset(name, suffix)
                if base is not None:
                    indexes.append((base, Path(entry.path)))
        known = set(bases)
        for base, path in indexes:
            if base not in known:
                log.warning("%s Deleting index %s without a log file", self.prefix, path.name)
                path.unlink()
        return sorted(bases)

    def _complete_swaps(self) -> None:
        """A `<base>.log.swap` is a cleaned segment whose swap was committed (written and fsynced in full)
        but maybe not finished: it replaces every old segment with a base offset from `base` up to its own
        next offset (the cleaner never lets a merged group end with a segment it emptied, so that range
        covers the whole group). `.cleaned` files (swap not committed) are swept as strays."""
        swaps = sorted(
            base
            for name in os.listdir(self.dir)
            if (base := parse_base_offset(name.removesuffix(SWAP_SUFFIX), LOG_SUFFIX)) is not None
            and name.endswith(SWAP_SUFFIX)
        )
        for base in swaps:
            swap = LogSegment(
                self.dir, base, index_interval_bytes=1, max_index_bytes=0, now_ms=0, suffix=SWAP_SUFFIX
            )
            end = swap.scan_next_offset()
            swap.close()
            for name in os.listdir(self.dir):
                old = parse_base_offset(name, LOG_SUFFIX)
                if old is not None and base < old < end:
                    LogSegment(self.dir, old, index_interval_bytes=1, max_index_bytes=0, now_ms=0).delete()
            # the indexes (old ones and any swapped ones) go first: they are rebuilt from the new .log
            for suffix in (INDEX_SUFFIX, TIMEINDEX_SUFFIX):
                (self.dir / file_name(base, suffix)).unlink(missing_ok=True)
                (self.dir / (file_name(base, suffix) + SWAP_SUFFIX)).unlink(missing_ok=True)
            swap.change_suffix("")
            log.info(
                "%s Completed the interrupted swap of cleaned segment %d (replacing segments below offset %d)",
                self.prefix,
                base,
                end,
            )
        if swaps:
            fsync_dir(self.dir)

    def _recover_from(self, first: int) -> None:
        """Validate segments[first:], truncating at the first bad batch and dropping all after it."""
        for i in range(first, len(self._segments)):
            seg = self._segments[i]
            log.info("%s Recovering unflushed segment %d", self.prefix, seg.base_offset)
            valid, reason = seg.recover(self.dense)
            is_last = i == len(self._segments) - 1
            if reason is not None:
                log.warning(
                    "%s Truncating segment %s to %d bytes after finding a corrupt or partial batch at position %d (%s)",
                    self.prefix,
                    seg.log_path.name,
                    valid,
                    valid,
                    reason,
                )
            elif not is_last:
                seg.on_become_inactive()  # as at roll: the time index ends with the segment's max
            seg.flush()
            if is_last:
                break
            seg.close_index_files()
            following = self._segments[i + 1].base_offset
            if reason is None and seg.next_offset is not None and seg.next_offset <= following:
                continue
            if reason is None:
                log.warning(
                    "%s Segment %s overlaps offset %d of the next one",
                    self.prefix,
                    seg.log_path.name,
                    following,
                )
            self._drop_segments_after(i)
            break
        fsync_dir(self.dir)

    def _drop_segments_after(self, i: int) -> None:
        for dropped in self._segments[i + 1 :]:
            log.warning("%s Deleting segment %s after the corrupt batch", self.prefix, dropped.log_path.name)
            dropped.delete()
        del self._segments[i + 1 :]
        del self._bases[i + 1 :]


def rebuild_epochs(segments: list[LogSegment], epochs: LeaderEpochCache) -> None:
    """The leader epoch cache from batch headers (when its checkpoint is missing or may be stale)."""
    entries: list[tuple[int, int]] = []
    for seg in segments:
        for _pos, h in seg.iter_headers():
            if h.partition_leader_epoch >= 0 and (not entries or h.partition_leader_epoch > entries[-1][0]):
                entries.append((h.partition_leader_epoch, h.base_offset))
    if entries != epochs.entries:
        epochs.entries = entries
        epochs.flush()
