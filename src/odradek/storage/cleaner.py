"""Log cleanup per cleanup.policy: retention for `delete` (whole old segments by time, by size and below
the log start offset); `compact` is a placeholder until log compaction lands.

Safe to run in a worker thread: every deletion happens under the log's lock, and only non-active
segments lying wholly below the high watermark are ever deleted.
"""

from __future__ import annotations

from odradek.storage.log import Log
from odradek.storage.segment import LogSegment


def run_cleanup(log: Log, now_ms: int) -> int:
    """Apply the log's cleanup policy once; returns how many segments were deleted."""
    deleted = delete_log_start_offset_breached(log)
    if log.config.delete:
        deleted += delete_retention_size_breached(log)
        deleted += delete_retention_ms_breached(log, now_ms)
    if log.config.compact:
        compact(log, now_ms)
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


def compact(log: Log, now_ms: int) -> int:
    """cleanup.policy=compact: keep only the latest record per key (tombstones for
    delete.retention.ms). Not implemented yet: compacted topics keep all their data until it lands.
    Returns the number of bytes reclaimed."""
    return 0
