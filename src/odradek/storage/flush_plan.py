"""One flush of a log, in three steps so that no fsync runs under the log's lock: planned under the lock
(which segments were written since the recovery point, duplicates of their descriptors, whether the
directory has entries to make durable), run without it (the fsyncs), completed under it again (the
segments marked synced; the log then moves its recovery point up to what the flush covered, unless it was
truncated meanwhile, and the inactive segments now on disk close their index files).

The `Log` decides when to flush (a roll, flush.messages / flush.ms, an explicit flush, close) and keeps
the counts a plan is checked against; this module only knows segments, descriptors and the directory.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from odradek.fsutil import fsync_dir
from odradek.storage.segment import LogSegment


@dataclass
class FlushPlan:
    """One flush, planned under the log's lock, run without it, completed under it again."""

    first: int  # base offset of the first segment it considered
    upto: int  # it covers the segments with a base offset below this
    target: int  # the recovery point it earns
    truncations: int  # the log's truncation count when planned
    segments: list[tuple[LogSegment, int]] = field(default_factory=list)  # with their write counts
    fds: list[int] = field(default_factory=list)  # duplicated descriptors to fsync (and close)
    dir_changes: int | None = None  # the directory change count to fsync up to, if any

    @classmethod
    def make(
        cls,
        segments: Sequence[LogSegment],
        bases: Sequence[int],
        *,
        recovery_point: int,
        upto: int,
        log_end_offset: int,
        truncations: int,
        dir_changes: int,
        dir_synced: int,
    ) -> FlushPlan:
        """Under the lock: what a flush of the segments below `upto` must fsync. Segments below the
        recovery point's segment are all on disk already."""
        i = max(bisect_right(bases, recovery_point) - 1, 0)
        plan = cls(bases[i], upto, min(upto, log_end_offset), truncations)
        try:
            for seg in segments[i:]:
                if seg.base_offset >= upto:
                    break
                if seg.dirty:
                    writes, fds = seg.sync_handles()
                    plan.segments.append((seg, writes))
                    plan.fds += fds
        except OSError:
            plan.close_fds()
            raise
        # the directory too when there is data to make durable: a segment holding records must not be
        # lost with its directory entry (an empty one lost is harmless: load creates the first segment)
        if dir_changes != dir_synced and plan.fds:
            plan.dir_changes = dir_changes
        return plan

    def run(self, dir: Path) -> None:
        """The fsyncs, without the lock: segment files, then the directory."""
        try:
            for fd in self.fds:
                os.fsync(fd)
        finally:
            self.close_fds()
        if self.dir_changes is not None:
            fsync_dir(dir)

    def close_fds(self) -> None:
        fds, self.fds = self.fds, []
        for fd in fds:
            os.close(fd)

    def mark_synced(self) -> None:
        """Under the lock, after the fsyncs: the segments know what of them is on disk."""
        for seg, writes in self.segments:
            seg.mark_synced(writes)

    def close_synced_indexes(self, segments: Sequence[LogSegment], bases: Sequence[int]) -> None:
        """Under the lock, once the recovery point moved: inactive segments on disk need no index
        descriptors any more (fewer open files)."""
        last = len(segments) - 1
        for k in range(max(bisect_right(bases, self.first) - 1, 0), last):
            seg = segments[k]
            if seg.base_offset >= self.upto:
                break
            if not seg.dirty:
                seg.close_index_files()
