"""Keeps the console serving: runs the serving process as a child and starts it again when it dies.

Why a second process: librdkafka aborts the whole process when one of its internal assertions fails (seen
while a broker was flooded: `rd_kafka_enq_once_del_source_return: Assertion 'eonce->refcnt > 0' failed`,
a SIGABRT no Python code can catch), and a console that stays down is no console. That abort (and the
SIGSEGV of issue #36, the same use of freed memory) came from librdkafka's coordinator admin calls, which
the console no longer makes (see admin_client/consumer_groups.py); this process stays as the backstop
for the next such bug. So every librdkafka client lives in the child (`serving`), and this parent holds
only what must outlive a crash and touches no client library:

- the listening socket, bound once and handed down: the port never changes, and connections that arrive
  while a new child starts wait in its backlog instead of being refused;
- the access token and the session key, handed down in the environment: the same token logs in after a
  restart, and browsers that were logged in stay logged in;
- a control socket pair: the child says `ready` on it once it serves, and sees it close if this process
  is killed outright, then stops by itself.

A child that dies from a signal (or exits with an error after it once served) is logged as an ERROR and
started again at once; after several crashes within a minute the restarts back off (up to 30 s). A child
that fails before it ever served (say, the cluster does not answer) ends the console with its exit code;
its one-line error is already on stderr. SIGINT or SIGTERM stop the child (SIGTERM, SIGKILL after 20 s)
and then this process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import subprocess
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

log = logging.getLogger("odradek.console")

SESSION_KEY_ENV = "ODRADEK_CONSOLE_SESSION_KEY"
LISTEN_FD_ENV = "ODRADEK_CONSOLE_LISTEN_FD"
CONTROL_FD_ENV = "ODRADEK_CONSOLE_CONTROL_FD"
START_ENV = "ODRADEK_CONSOLE_START"  # 0 for the first child, then how many were started before it
READY = b"ready\n"
STOP_TIMEOUT_S = 20.0
CRASH_WINDOW_S = 60.0
FREE_RESTARTS = 3
MAX_BACKOFF_S = 30.0


def how_it_ended(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"from {signal.Signals(-returncode).name}"
        except ValueError:
            return f"from signal {-returncode}"
    return f"with exit code {returncode}"


def restart_delay(crashes: deque[float], now: float) -> float:
    """Seconds to wait before starting a child again after a crash at `now` (recorded in `crashes`): none for
    the first few crashes within a minute, then doubling up to MAX_BACKOFF_S."""
    crashes.append(now)
    while crashes and crashes[0] < now - CRASH_WINDOW_S:
        crashes.popleft()
    extra = len(crashes) - FREE_RESTARTS
    return 0.0 if extra <= 0 else min(MAX_BACKOFF_S, 2.0 ** (extra - 1))


async def first_of(*aws: Awaitable[Any]) -> None:
    """Wait until one of `aws` is done; cancel the others."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class Supervisor:
    """Runs `command` (the serving process) with the listening socket and a control socket handed down."""

    def __init__(self, command: list[str], env: Mapping[str, str], listener: socket.socket,
                 on_ready: Callable[[int], None]) -> None:
        self.command = command
        self.env = dict(env)
        self.listener = listener
        self.on_ready = on_ready  # called with the start count each time a child serves
        self.crashes: deque[float] = deque()
        self.stop = asyncio.Event()

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.stop.set)
        starts = 0
        served = False
        while True:
            proc, control = await self.spawn(starts)
            try:
                if await self.until_ready(proc, control):
                    served = True
                    self.on_ready(starts)
                    await first_of(proc.wait(), self.stop.wait())
                if self.stop.is_set():
                    return await self.terminate(proc)
            finally:
                control.close()  # after a stop: a child that outlives terminate() sees it and stops
            code = await proc.wait()
            if code == 0:
                log.info("The console's serving process stopped; the console stops too")
                return 0
            if code > 0 and not served:
                return code  # it could not start: its error is on stderr
            delay = restart_delay(self.crashes, time.monotonic())
            log.error("The console's serving process (pid %d) died %s; starting it again%s", proc.pid,
                      how_it_ended(code), f" in {delay:g} s" if delay else "")
            if delay:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stop.wait(), delay)
            if self.stop.is_set():
                return 0
            starts += 1

    async def spawn(self, starts: int) -> tuple[asyncio.subprocess.Process, socket.socket]:
        ours, theirs = socket.socketpair()
        env = {**self.env, LISTEN_FD_ENV: str(self.listener.fileno()), CONTROL_FD_ENV: str(theirs.fileno()),
               START_ENV: str(starts)}
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.command, env=env, stdin=subprocess.DEVNULL, start_new_session=True,
                pass_fds=(self.listener.fileno(), theirs.fileno()))
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.setblocking(False)
        log.info("Started the console's serving process (pid %d)", proc.pid)
        return proc, ours

    async def until_ready(self, proc: asyncio.subprocess.Process, control: socket.socket) -> bool:
        """Whether the child said it serves (False: it ended first, or a stop was asked for)."""
        loop = asyncio.get_running_loop()
        said = asyncio.ensure_future(loop.sock_recv(control, len(READY)))
        await first_of(said, proc.wait(), self.stop.wait())
        if said.cancelled() or said.exception() is not None:
            return False
        return said.result() == READY

    async def terminate(self, proc: asyncio.subprocess.Process) -> int:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), STOP_TIMEOUT_S)
            except TimeoutError:
                log.warning("The console's serving process (pid %d) did not stop in %g s; killing it", proc.pid,
                            STOP_TIMEOUT_S)
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        return 0



def child_handles() -> tuple[socket.socket, socket.socket, int]:
    """In the serving process: the listening socket, the control socket and the start count handed down."""
    listener = socket.socket(fileno=int(os.environ[LISTEN_FD_ENV]))
    control = socket.socket(fileno=int(os.environ[CONTROL_FD_ENV]))
    return listener, control, int(os.environ.get(START_ENV, "0"))
