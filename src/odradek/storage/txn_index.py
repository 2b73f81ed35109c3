"""The aborted-transaction index of a log: which producers' transactions were aborted over which offset
ranges, so a read_committed fetch can tell the consumer what to skip (FetchResponse aborted_transactions).

Kafka's `.txnindex` file format, one file per segment (`<base offset>.txnindex`, holding the
transactions whose abort marker is in that segment): entries of version int16 (0), producer id int64,
first offset int64, last offset int64 (the marker's), last stable offset int64 — 34 bytes, big-endian.
A log keeps every entry in memory (aborts are few next to records) and appends to the file of the
active segment when an abort marker is written. A torn tail (a crash mid-append) is ignored on load.
"""

from __future__ import annotations

import bisect
import logging
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

from odradek.fsutil import atomic_write

log = logging.getLogger("odradek.storage")

TXN_INDEX_SUFFIX = ".txnindex"
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


@dataclass(frozen=True, slots=True, order=True)
class AbortedTxn:
    """One aborted transaction; equal when the marker, producer and first offset are (the last stable
    offset at the time is informational: a rebuild after a restart cannot know it)."""

    last_offset: int  # first field: entries sort by where their abort marker is
    producer_id: int
    first_offset: int
    last_stable_offset: int = field(default=-1, compare=False)

    def encode(self) -> bytes:
        return _ENTRY.pack(0, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset)


def index_name(base_offset: int) -> str:
    return f"{base_offset:020d}{TXN_INDEX_SUFFIX}"


def _base(name: str) -> int | None:
    stem = name.removesuffix(TXN_INDEX_SUFFIX)
    return int(stem) if stem != name and len(stem) == 20 and stem.isdigit() else None


def read_index(path: Path) -> list[AbortedTxn]:
    data = path.read_bytes()
    out = []
    for pos in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
        version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        if version != 0:
            log.warning("Ignoring %s from position %d: unknown entry version %d", path, pos, version)
            break
        out.append(AbortedTxn(last, pid, first, lso))
    return out


class AbortedTxnIndex:
    """All aborted transactions of one log directory, in memory, persisted in per-segment files."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.entries: list[AbortedTxn] = []  # sorted by last offset

    def load(self, segment_bases: list[int], log_end_offset: int) -> None:
        """Read every `.txnindex` file; entries at or past the log end (a truncated tail) are dropped, and
        files are rewritten so that each entry sits in the file of its marker's segment."""
        found: dict[AbortedTxn, AbortedTxn] = {}
        stray = False
        for name in os.listdir(self.dir):
            if _base(name) is not None:
                path = self.dir / name
                entries = read_index(path)
                for e in entries:
                    if e.last_offset < log_end_offset:
                        found.setdefault(e, e)
                base = _base(name)
                stray = stray or base not in segment_bases or len(entries) != len(
                    [e for e in entries if e.last_offset < log_end_offset])
        self.entries = sorted(found)
        if stray:
            self.rewrite(segment_bases)

    def add(self, txn: AbortedTxn, segment_base: int) -> None:
        if self.entries and txn <= self.entries[-1]:
            i = bisect.bisect_left(self.entries, txn)
            if i < len(self.entries) and self.entries[i] == txn:
                return  # re-found by a rebuild (a restart, a truncation)
            self.entries.insert(i, txn)
        else:
            self.entries.append(txn)
        with open(self.dir / index_name(segment_base), "ab") as f:
            f.write(txn.encode())

    def collect(self, start_offset: int, upper_offset: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of aborted transactions overlapping [start_offset, upper_offset)."""
        i = bisect.bisect_left(self.entries, AbortedTxn(start_offset, -(2**63), -(2**63)))
        return [(e.producer_id, e.first_offset) for e in self.entries[i:] if e.first_offset < upper_offset]

    def truncate_to(self, offset: int, segment_bases: list[int]) -> None:
        """Forget entries whose marker is at or above `offset`."""
        keep = [e for e in self.entries if e.last_offset < offset]
        if len(keep) != len(self.entries):
            self.entries = keep
            self.rewrite(segment_bases)

    def drop_before(self, offset: int, segment_bases: list[int]) -> None:
        """Segments below `offset` were deleted: their entries and files go."""
        keep = [e for e in self.entries if e.last_offset >= offset]
        if len(keep) != len(self.entries):
            self.entries = keep
            self.rewrite(segment_bases)

    def rewrite(self, segment_bases: list[int]) -> None:
        """Each segment's file holds exactly the entries whose marker lies in it (none: no file)."""
        by_base: dict[int, list[AbortedTxn]] = {}
        for e in self.entries:
            i = bisect.bisect_right(segment_bases, e.last_offset) - 1
            by_base.setdefault(segment_bases[max(i, 0)], []).append(e)
        for name in os.listdir(self.dir):
            base = _base(name)
            if base is not None and base not in by_base:
                os.unlink(self.dir / name)
        for base, entries in by_base.items():
            # no fsync (rewrites happen under the log's lock), but never torn: a load finds the old or the new
            atomic_write(self.dir / index_name(base), b"".join(e.encode() for e in entries), durable=False)
