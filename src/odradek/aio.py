"""Background tasks of one component: started with `spawn`, referenced until they finish (asyncio keeps
only weak references to tasks), failures logged, all cancelled by `close`. (asyncio.TaskGroup does not
fit: one failing task would cancel the others, and it lives inside one `async with`.)"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any


class TaskSet:
    def __init__(self, log: logging.Logger, what: str, expected: tuple[type[Exception], ...] = ()) -> None:
        self._log = log
        self._what = what  # names the component in failure messages: "<what> failed: ..."
        self._expected = expected  # failures logged in one line; any other gets its traceback
        self._tasks: set[asyncio.Task[Any]] = set()
        self.closed = False

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any] | None:
        """Run `coro` in the background; once closed, `coro` is discarded and None returned."""
        if self.closed:
            coro.close()
            return None
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def every(self, interval_s: float, step: Callable[[], Awaitable[object]], what: str) -> None:
        """Run `step` every `interval_s` seconds until closed; a failing step is logged ("<what> failed")
        and the next one still runs."""
        async def loop() -> None:
            while not self.closed:
                await asyncio.sleep(interval_s)
                try:
                    await step()
                except Exception as exc:
                    self._log.error("%s failed: %s", what, exc, exc_info=exc)

        self.spawn(loop())

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            traceback = None if isinstance(exc, self._expected) else exc
            self._log.error("%s failed: %s", self._what, exc, exc_info=traceback)

    def close(self) -> None:
        """Cancel every running task; later spawns are discarded."""
        self.closed = True
        for task in list(self._tasks):
            task.cancel()
