"""The log dir failure channel (Kafka's LogDirFailureChannel): where an I/O error in a log dir is reported,
from whichever thread met it (the event loop appending, the disk worker flushing, the cleaner, a checkpoint
writer). The first report of a dir takes it offline: one ERROR line naming the dir and the cause, then the
listeners are told, once, on the reporting thread (the log manager stops every log in the dir at once; the
broker hands the rest of the handling to its event loop). Later reports of an offline dir are only logged
at debug level: the dir stays offline until the broker restarts, as in Kafka.

An I/O error is an OSError (ENOSPC, EIO, EROFS...), raised directly or as the cause of a StorageError,
except running out of file descriptors (EMFILE, ENFILE), which is the process's problem, not the dir's.
"""

from __future__ import annotations

import errno
import logging
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("odradek.storage")

# errors that say nothing about the dir: the process is out of descriptors
_NOT_DIR_FAILURES = frozenset({errno.EMFILE, errno.ENFILE})


def io_error_of(exc: BaseException) -> OSError | None:
    """The OSError behind `exc` (itself, or the cause of a StorageError) if it is a failure of the disk,
    else None."""
    cause = exc if isinstance(exc, OSError) else exc.__cause__
    if isinstance(cause, OSError) and cause.errno not in _NOT_DIR_FAILURES:
        return cause
    return None


class LogDirFailureChannel:
    """The offline log dirs of one broker, and who to tell when one goes offline. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._offline: dict[Path, str] = {}  # dir -> the message of the error that took it offline
        self.listeners: list[Callable[[Path], None]] = []

    def report(self, log_dir: Path, message: str) -> bool:
        """An I/O error in `log_dir` (`message` names the operation, the dir and the cause). Returns
        whether this report took the dir offline (the first one for it)."""
        with self._lock:
            first = log_dir not in self._offline
            if first:
                self._offline[log_dir] = message
        if not first:
            log.debug("%s (dir already offline)", message)
            return False
        log.error("%s", message)
        for listener in list(self.listeners):
            try:
                listener(log_dir)
            except Exception:
                log.exception("Handling the failure of log dir %s failed", log_dir)
        return True

    def is_offline(self, log_dir: Path) -> bool:
        return log_dir in self._offline

    def offline_dirs(self) -> list[Path]:
        with self._lock:
            return list(self._offline)

    def cause(self, log_dir: Path) -> str | None:
        """The message of the report that took `log_dir` offline."""
        return self._offline.get(log_dir)
