"""Log lines a client can make the broker repeat (one per connection refused, per failed login, per
connection closed) written at most `burst` times per `window_s` each; the rest are counted and summed up
in one line when the window ends: "… and 3,999 more like it in the last 10 s: <the line's template>".
A flood of connections then costs a few log lines, not one per connection, and the operator still sees
how many there were.

Lines are told apart by level, format string and an optional `kind` the caller gives (e.g. which limit
refused a connection), not by their arguments: the peer differs every time, and arguments a client
chooses must not buy it lines of their own. The summary is scheduled on the running event loop; without one it is written with the next line
of the same kind after the window."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

BURST = 10
WINDOW_S = 10.0
MAX_KINDS = 1024  # distinct lines tracked at once (format strings are few; this only bounds a bug)


@dataclass(slots=True)
class _Window:
    start: float
    count: int = 0
    suppressed: int = 0
    flush: asyncio.TimerHandle | None = None


class LimitedLog:
    """Wraps a logger: `info`, `warning`, `error` and `log` as the logger's, each kind of line at most
    `burst` times per `window_s`."""

    def __init__(self, logger: logging.Logger, burst: int = BURST, window_s: float = WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.burst = burst
        self.window_s = window_s
        self._clock = clock
        self._windows: dict[tuple[int, str, str], _Window] = {}

    def info(self, msg: str, *args: object, kind: str = "") -> None:
        self.log(logging.INFO, msg, *args, kind=kind)

    def warning(self, msg: str, *args: object, kind: str = "") -> None:
        self.log(logging.WARNING, msg, *args, kind=kind)

    def error(self, msg: str, *args: object, kind: str = "") -> None:
        self.log(logging.ERROR, msg, *args, kind=kind)

    def log(self, level: int, msg: str, *args: object, kind: str = "") -> None:
        if not self.logger.isEnabledFor(level):
            return
        key = (level, msg, kind)
        now = self._clock()
        window = self._windows.get(key)
        if window is None or now - window.start >= self.window_s:
            if window is not None:
                self._summarize(key, window)
            elif len(self._windows) >= MAX_KINDS:
                self._windows.clear()
            window = self._windows[key] = _Window(now)
        window.count += 1
        if window.count <= self.burst:
            self.logger.log(level, msg, *args, stacklevel=3)
            return
        window.suppressed += 1
        if window.suppressed == 1:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            window.flush = loop.call_at(loop.time() + max(0.0, window.start + self.window_s - now),
                                        self._flush, key, window)

    def _flush(self, key: tuple[int, str, str], window: _Window) -> None:
        window.flush = None
        self._summarize(key, window)
        if self._windows.get(key) is window:
            del self._windows[key]

    def _summarize(self, key: tuple[int, str, str], window: _Window) -> None:
        if window.flush is not None:
            window.flush.cancel()
            window.flush = None
        if window.suppressed:
            level, msg, kind = key
            self.logger.log(level, "... and %s more like it in the last %s s: %s%s", f"{window.suppressed:,}",
                            f"{self.window_s:g}", msg, f" ({kind})" if kind else "")
            window.suppressed = 0
