"""One status line for a long-running command: redrawn in place on a terminal, printed as a plain line
every few seconds when the output is a file or a pipe (so logs stay readable).

On a terminal the line is cut to the terminal's width: a line that wrapped would leave its first rows
behind at every redraw (the carriage return goes back only to the start of the last row)."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from typing import TextIO

PLAIN_INTERVAL_S = 5.0


class ProgressLine:
    def __init__(self, stream: TextIO | None = None, plain_interval_s: float = PLAIN_INTERVAL_S,
                 columns: Callable[[], int] = lambda: shutil.get_terminal_size().columns) -> None:
        self.stream = stream or sys.stdout
        self.columns = columns
        self.tty = self.stream.isatty()
        self.plain_interval_s = plain_interval_s
        self._last_plain = float("-inf")
        self._drawn = False

    def update(self, text: str, force: bool = False) -> None:
        """Show `text` as the current status (on a terminal at once; else at most every interval)."""
        if self.tty:
            width = max(self.columns() - 1, 10)  # the last column would move the cursor to a new row
            if len(text) > width:
                text = text[:width - 1] + "…"
            self.stream.write(f"\r\x1b[2K{text}")
            self.stream.flush()
            self._drawn = True
            return
        now = time.monotonic()
        if force or now - self._last_plain >= self.plain_interval_s:
            self._last_plain = now
            print(text, file=self.stream, flush=True)

    def done(self) -> None:
        """End the redrawn line so what follows starts on a line of its own."""
        if self.tty and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
