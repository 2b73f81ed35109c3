"""Ctrl-C and SIGTERM as a request to stop: long-running commands (the demo, `pipeline run`, the generator)
poll an event instead of being torn down by KeyboardInterrupt wherever it lands (inside a Py4J call, a
librdkafka poll, a rich Live refresh), which left tracebacks and temporary directories behind.

The first signal sets the event and says "stopping" once on stderr (os.write: safe inside a handler);
later ones only repeat that the command is stopping."""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType


class StopRequest:
    """Installs SIGINT and SIGTERM handlers (main thread only) that set `event`."""

    def __init__(self, what: str = "stopping") -> None:
        self.event = threading.Event()
        self.what = what
        self.signalled = False  # a signal (not the command itself) asked to stop
        self.pid = os.getpid()
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if os.getpid() != self.pid:
            # a child between fork and exec (subprocess runs Python there, e.g. pyspark's preexec_fn that
            # ignores SIGINT) still has this handler: Ctrl-C is the parent's to handle
            return
        first = not self.event.is_set()
        self.signalled = True
        self.event.set()
        text = f"\n{self.what} ...\n" if first else f"\nstill {self.what}; please wait ...\n"
        try:
            os.write(2, text.encode())
        except OSError:
            pass

    def is_set(self) -> bool:
        return self.event.is_set()

    def set(self) -> None:
        self.event.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self.event.wait(timeout)
