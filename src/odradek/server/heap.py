"""Giving memory back to the operating system after a flood of connections. Each connection allocates
buffers (a TLS connection's protocol alone takes 256 KiB) that glibc's malloc keeps in its arenas once
they are freed: after thousands of connections come and go the process stays as large as at the peak.
`malloc_trim(0)` hands the free pages back. It walks every arena, so it runs once a flood is over, not
on every close: `TrimSchedule` decides when (pure), `HeapTrimmer` runs it on the event loop. The same
happens once the request memory pool drains after holding many megabytes (large requests answered). Where the
C library has no malloc_trim (musl, macOS) all this is a no-op."""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import time
from collections.abc import Callable

log = logging.getLogger("odradek.network")


def _load_malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_MALLOC_TRIM = _load_malloc_trim()


def malloc_trim() -> bool:
    """Return free heap pages to the OS; whether the C library could (glibc's malloc_trim(0))."""
    if _MALLOC_TRIM is None:
        return False
    _MALLOC_TRIM(0)
    return True


class TrimSchedule:
    """When to trim, from the times connections close. Ordinary churn (a few connections now and then)
    frees too little to matter and never reaches `batch`; a flood does. The trim waits until no
    connection has closed for `quiet_s` (one trim for the whole flood, after it), but no longer than
    `max_wait_s` once `batch` closes have been counted (a flood that never pauses still gets trimmed)."""

    def __init__(self, batch: int = 100, quiet_s: float = 1.0, max_wait_s: float = 10.0) -> None:
        self.batch = batch
        self.quiet_s = quiet_s
        self.max_wait_s = max_wait_s
        self.closed = 0  # connections closed since the last trim
        self._last_close = 0.0
        self._batch_reached: float | None = None  # when `closed` reached `batch`

    def note_close(self, now: float) -> None:
        self.closed += 1
        self._last_close = now
        if self._batch_reached is None and self.closed >= self.batch:
            self._batch_reached = now

    def next_check(self, now: float) -> float | None:
        """Seconds from `now` until a trim may be due; None while too few connections have closed."""
        if self._batch_reached is None:
            return None
        due = min(self._last_close + self.quiet_s, self._batch_reached + self.max_wait_s)
        return max(0.0, due - now)

    def note_flood(self, now: float) -> None:
        """Something other than closing connections freed a lot at once (large requests answered): trim
        as if a batch of connections had closed now."""
        self._last_close = now
        if self._batch_reached is None:
            self._batch_reached = now

    def due(self, now: float) -> bool:
        wait = self.next_check(now)
        return wait is not None and wait <= 0

    def trimmed(self) -> None:
        self.closed = 0
        self._batch_reached = None


class HeapTrimmer:
    """Counts closed connections and calls malloc_trim when the schedule says so. malloc_trim runs on the
    event loop: it takes malloc's locks, so a worker thread would stall the loop's allocations all the
    same, and it runs at most once per flood (milliseconds for a heap of hundreds of MB)."""

    def __init__(self, schedule: TrimSchedule | None = None, trim: Callable[[], bool] = malloc_trim) -> None:
        self.schedule = schedule or TrimSchedule()
        self._trim = trim
        self._timer: asyncio.TimerHandle | None = None
        self.trims = 0

    def connection_closed(self) -> None:
        now = time.monotonic()
        self.schedule.note_close(now)
        if self._timer is None:
            self._arm(now)

    def memory_freed(self) -> None:
        """Request memory that held a lot drained (see RequestMemory.on_drained)."""
        now = time.monotonic()
        self.schedule.note_flood(now)
        if self._timer is None:
            self._arm(now)

    def _arm(self, now: float) -> None:
        wait = self.schedule.next_check(now)
        if wait is not None:
            self._timer = asyncio.get_running_loop().call_later(wait, self._check)

    def _check(self) -> None:
        self._timer = None
        now = time.monotonic()
        if not self.schedule.due(now):
            self._arm(now)  # more connections closed meanwhile: wait for the flood to end
            return
        closed = self.schedule.closed
        self.schedule.trimmed()
        started = time.perf_counter()
        if self._trim():
            self.trims += 1
            log.debug("malloc_trim after %d connections closed took %.1f ms", closed,
                      (time.perf_counter() - started) * 1000)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
