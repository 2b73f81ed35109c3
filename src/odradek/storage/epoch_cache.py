"""Leader epoch cache of one partition: the start offset of each leader epoch seen in the log, kept in
the partition's `leader-epoch-checkpoint` file (Kafka's format). It answers "where does epoch E end?",
which is how a follower finds the point where its log diverges from a new leader's (KIP-101/279).

A log hands the writes of the file to its disk worker (`schedule`), since a leader change or a truncation
on the event loop must not wait for fsyncs: the file only has to be current after a clean shutdown (the
log writes it at close, `flush_if_changed`), as a log that was not shut down cleanly rebuilds the cache
from its batch headers anyway."""

from __future__ import annotations

import logging
from bisect import bisect_right
from collections.abc import Callable
from pathlib import Path

from odradek.fsutil import atomic_write

log = logging.getLogger("odradek.storage")
CHECKPOINT_FILE = "leader-epoch-checkpoint"


class LeaderEpochCache:
    def __init__(self, partition_dir: Path, schedule: Callable[[Callable[[], None]], object] | None = None) -> None:
        self.path = partition_dir / CHECKPOINT_FILE
        self.entries: list[tuple[int, int]] = []  # (epoch, start offset), both increasing
        self.loaded = self._read()
        self._schedule = schedule  # None: write the file at each change, on the calling thread
        self._write_pending = False
        self._changes = 0  # changes of the entries, and how many of them the file holds
        self._written = 0

    def _read(self) -> bool:
        try:
            lines = self.path.read_text().split("\n")
        except FileNotFoundError:
            return False
        try:
            count = int(lines[1])
            pairs = [line.split() for line in lines[2 : 2 + count]]
            self.entries = [(int(e), int(o)) for e, o in pairs]
            return True
        except (IndexError, ValueError) as exc:
            log.warning("Ignoring malformed %s: %s", self.path, exc)
            self.entries = []
            return False

    def flush(self) -> None:
        """Write the file now, on the calling thread."""
        changes = self._changes
        entries = list(self.entries)
        body = f"0\n{len(entries)}\n" + "".join(f"{e} {o}\n" for e, o in entries)
        # No file yet (a new log): replaced without fsyncs, as a crash can only leave it missing or empty,
        # and then the log's load rebuilds the cache from its batches. Saves a new partition two fsyncs.
        # Either way through a temporary file: a failed write (a full disk) leaves the old file whole.
        atomic_write(self.path, body, durable=self.loaded)
        self.loaded = True
        self._written = max(self._written, changes)

    def flush_if_changed(self) -> None:
        if self._written != self._changes:
            self.flush()

    def _changed(self) -> None:
        self._changes += 1
        if self._schedule is None:
            self.flush()
        elif not self._write_pending:
            self._write_pending = True
            self._schedule(self._scheduled_flush)

    def _scheduled_flush(self) -> None:
        # cleared before the entries are read: a change after this point schedules another write
        self._write_pending = False
        self.flush()

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else -1

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that `epoch` starts at `start_offset` (ignored unless it is a newer epoch)."""
        if epoch < 0 or (self.entries and epoch <= self.entries[-1][0]):
            return
        # an older epoch cannot start after a newer one: drop entries that would
        while self.entries and self.entries[-1][1] >= start_offset and self.entries[-1][0] < epoch:
            self.entries.pop()
        self.entries.append((epoch, start_offset))
        self._changed()

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(largest epoch <= `epoch`, the offset where it ends), or (-1, -1) with no epochs at all. An epoch
        older than every one known answers (`epoch`, the start of the oldest known one), as Kafka's cache
        does: those records are gone from the log (or were never here), and a follower that last fetched
        in that epoch may replicate from there without being told it diverged."""
        if not self.entries:
            return -1, -1
        if epoch < self.entries[0][0]:
            return epoch, self.entries[0][1]
        if epoch >= self.entries[-1][0]:
            return self.entries[-1][0], log_end_offset
        i = bisect_right([e for e, _ in self.entries], epoch)
        return self.entries[i - 1][0], self.entries[i][1]

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs that start at or after `end_offset` (the log was truncated there)."""
        before = len(self.entries)
        self.entries = [(e, o) for e, o in self.entries if o < end_offset]
        if len(self.entries) != before:
            self._changed()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at `start_offset`: the epoch covering it starts there."""
        keep = [(e, o) for e, o in self.entries if o >= start_offset]
        covering = [(e, o) for e, o in self.entries if o < start_offset]
        if covering:
            keep.insert(0, (covering[-1][0], start_offset))
        if keep != self.entries:
            self.entries = keep
            self._changed()

    def replace(self, entries: list[tuple[int, int]]) -> None:
        """Take another replica's entries (a log moved to another log dir keeps its epochs)."""
        if entries != self.entries:
            self.entries = list(entries)
            self._changed()

    def clear(self) -> None:
        self.entries = []
        self._changed()
