"""A log's producer snapshot files (`<offset>.snapshot` in the partition directory, the format is
`ProducerStateManager.write_snapshot`'s): which exist, restoring the producer state from the newest valid
one and the batch headers after it, taking one for the disk worker to write, pruning and removing them.

The log restores its producer state at load and after a truncation, takes a snapshot when a segment
rolls at the log end offset and writes one at close; a truncation of the whole log removes them all.
Without a snapshot the state comes from the batch headers of every segment (and the markers' control
records): an open transaction can start anywhere.
"""

from __future__ import annotations

import copy
import logging
import os
from bisect import bisect_right
from collections.abc import Callable, Sequence
from pathlib import Path

from odradek.protocol.records import read_marker
from odradek.storage.producer_state import (
    SNAPSHOT_SUFFIX,
    CompletedTxn,
    ProducerStateManager,
    snapshot_name,
)
from odradek.storage.segment import LogSegment, parse_base_offset

log = logging.getLogger("odradek.storage")


def snapshot_offsets(dir: Path) -> list[int]:
    """Offsets of the producer snapshots in the directory, ascending."""
    out = []
    for name in os.listdir(dir):
        if name.endswith(SNAPSHOT_SUFFIX):
            base = parse_base_offset(name, SNAPSHOT_SUFFIX)
            if base is not None:
                out.append(base)
    return sorted(out)


def delete_snapshots(dir: Path) -> None:
    """Remove every producer snapshot of the directory (the log was truncated fully)."""
    for offset in snapshot_offsets(dir):
        (dir / snapshot_name(offset)).unlink(missing_ok=True)


def restore_producer_state(
    state: ProducerStateManager,
    dir: Path,
    segments: Sequence[LogSegment],
    bases: Sequence[int],
    log_start_offset: int,
    upto: int,
    on_completed: Callable[[CompletedTxn], None],
    prefix: str,
) -> None:
    """The producer state as of `upto` (the log end offset): from the newest valid snapshot at or below
    it (after a clean shutdown, the one written at the end), then the batch headers after it. Snapshots
    above `upto` are removed; ones below the log start offset are not used. Transactions that the
    scanned markers complete go to `on_completed`."""
    state.clear()
    start = log_start_offset
    for offset in reversed(snapshot_offsets(dir)):
        path = dir / snapshot_name(offset)
        if offset > upto or offset < log_start_offset:
            if offset > upto:
                path.unlink(missing_ok=True)
            continue
        try:
            state.read_snapshot(path)
        except (OSError, ValueError) as exc:
            log.warning("%s Ignoring producer snapshot %s: %s", prefix, path.name, exc)
            state.clear()
            continue
        start = offset
        break
    if start < upto:
        scan_producers(state, segments, bases, start, upto, on_completed)


def scan_producers(
    state: ProducerStateManager,
    segments: Sequence[LogSegment],
    bases: Sequence[int],
    start: int,
    upto: int,
    on_completed: Callable[[CompletedTxn], None],
) -> None:
    """Apply the batches in [start, upto) to the producer state from their headers (and the control
    records of markers); each transaction a marker completes goes to `on_completed`."""
    first = max(bisect_right(bases, start) - 1, 0)
    for seg in segments[first:]:
        if seg.base_offset >= upto:
            break
        for pos, h in seg.iter_headers():
            if h.next_offset <= start or h.base_offset >= upto:
                continue
            if h.producer_id < 0:
                continue
            if h.is_control:
                kind, coordinator_epoch = read_marker(seg.pread(h.size, pos))
                done = state.update(h, h.base_offset, kind, coordinator_epoch)
                if done is not None:
                    on_completed(done)
            else:
                state.update(h, h.base_offset)


def frozen_copy(state: ProducerStateManager) -> ProducerStateManager:
    """The producers of `state` as they are now, for the disk worker to write while appends go on."""
    copied = ProducerStateManager()
    copied.producers = {pid: copy.copy(e) for pid, e in state.producers.items()}
    for e in copied.producers.values():
        e.batches = e.batches.copy()
    return copied


def write_and_prune(state: ProducerStateManager, path: Path, dir: Path, log_start_offset: int) -> None:
    """Write a snapshot (on the disk worker), then remove those below the log start offset except the
    newest two."""
    state.write_snapshot(path)
    keep = set(snapshot_offsets(dir)[-2:])
    for offset in snapshot_offsets(dir):
        if offset not in keep and offset < log_start_offset:
            (dir / snapshot_name(offset)).unlink(missing_ok=True)
