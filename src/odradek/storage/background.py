"""The storage layer's disk worker: one thread that runs the fsyncs and file removals the logs hand off
(the flush of a rolled segment, a flush that flush.messages / flush.ms asked for, leader epoch checkpoints,
the unlinking of deleted segments and partition directories), so the thread that appends (the broker's
event loop) never waits on the disk. Jobs run one at a time in submission order: a log's later flush
never overtakes an earlier one."""

from __future__ import annotations

import threading
from concurrent.futures import Executor, ThreadPoolExecutor

_lock = threading.Lock()
_shared: Executor | None = None


def disk_worker() -> Executor:
    """The process-wide disk worker (created on first use)."""
    global _shared
    with _lock:
        if _shared is None:
            _shared = ThreadPoolExecutor(max_workers=1, thread_name_prefix="odradek-disk")
        return _shared
