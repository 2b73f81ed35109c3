"""Running a step over and over in a thread while a test works on the same object (a cleaner or retention
pass racing appends), with the thread's first error re-raised in the test."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def repeatedly_in_background(step: Callable[[], object]) -> Iterator[None]:
    """Call `step` in a loop in another thread for as long as the block runs; then stop and join the
    thread, and re-raise the exception that ended the loop early, if any."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def loop() -> None:
        try:
            while not stop.is_set():
                step()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread below
            errors.append(exc)

    worker = threading.Thread(target=loop)
    worker.start()
    try:
        yield
    finally:
        stop.set()
        worker.join()
    if errors:
        raise errors[0]
