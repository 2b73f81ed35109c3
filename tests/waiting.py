"""The one way tests wait: poll a predicate until it returns something truthy, or fail saying what was
awaited and what was seen last. Tests wait on events this way, never on a sleep of a guessed length."""

from __future__ import annotations

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
