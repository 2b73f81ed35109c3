"""The one way tests wait: poll a predicate until it returns something truthy, or fail saying what was
awaited and what was seen last. Tests wait on events this way, never on a sleep of a guessed length."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float = 30.0, message: str | Callable[[], str] = "the condition",
               *, interval: float = 0.2, ignoring: tuple[type[BaseException], ...] = ()) -> T:
    """Call `predicate` every `interval` seconds until it returns a truthy value, and return that value.

    After `timeout` seconds raise AssertionError naming `message` (a callable: what it says then) and the
    last value seen. Exceptions of the types in `ignoring` count as "not yet" (a broker that is still
    starting refuses connections); the last one is reported when time runs out.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            last: object = predicate()
        except ignoring as exc:
            last = exc
        else:
            if last:
                return last  # type: ignore[return-value]
        if time.monotonic() >= deadline:
            what = message() if callable(message) else message
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}; last seen: {last!r}")
        time.sleep(interval)


def interrupt_at_line(proc: subprocess.Popen[str], marker: Callable[[str], bool], timeout: float = 300,
                      before: Callable[[], object] | None = None) -> tuple[str, str]:
    """Read the stdout of `proc` (started with `start_new_session=True`, text pipes) until a line for which
    `marker` is true, call `before` (more waiting, if any), then send SIGINT to its process group as a
    terminal's Ctrl-C would; return all its stdout and stderr once it exits (SIGKILL if it does not)."""
    assert proc.stdout is not None
    seen: list[str] = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if marker(line):
                break
        else:
            raise AssertionError("the process ended before the awaited line:\n" + "".join(seen))
        if before is not None:
            before()
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return "".join(seen) + out, err
