"""The processes the tools start and stop on this host (brokers, ZooKeeper servers), through psutil.

`server-stop`, `zookeeper-server-stop` and `cluster` find them by command line and stop them with
SIGTERM, a grace period, then optionally SIGKILL. A :class:`psutil.Process` remembers its start time,
so a pid the kernel has handed to another process meanwhile is neither signalled nor taken for ours;
a zombie (exited, not yet reaped by a parent that is not us) counts as gone.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import psutil

Match = Callable[[list[str]], bool]
POLL_INTERVAL_S = 0.1
KILL_WAIT_S = 5.0


def odradek_tool(tool: str, config: str | Path | None = None) -> Match:
    """Matches the command line of `odradek <tool> ...` (the console script or ``python -m
    odradek.cli.main``), and when `config` is given only one naming that file (compared resolved)."""
    wanted = str(Path(config).resolve()) if config is not None else None

    def match(args: list[str]) -> bool:
        if tool not in args or not any("odradek.cli.main" in a or a.endswith("/odradek") for a in args):
            return False
        return wanted is None or any(str(Path(a).resolve()) == wanted for a in args if a and not a.startswith("-"))

    return match


def find(match: Match) -> list[psutil.Process]:
    """The live processes (never this one) whose command line `match`es, by pid."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        args = proc.info["cmdline"]
        if proc.pid != os.getpid() and args and proc.info["status"] != psutil.STATUS_ZOMBIE and match(args):
            found.append(proc)
    return sorted(found, key=lambda p: p.pid)


def alive(proc: psutil.Process) -> bool:
    """Whether `proc` still runs: the very process found (not a reused pid), and not a zombie."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def terminate(procs: Iterable[psutil.Process], grace_s: float, *, kill: bool = False) -> list[psutil.Process]:
    """SIGTERM each process and wait up to `grace_s` seconds for all to exit; with `kill`, SIGKILL the
    ones still running and wait for those too. Returns the processes SIGTERM did not stop in time."""
    procs = list(procs)
    for proc in procs:
        _signal(proc.terminate)
    left = _wait_gone(procs, grace_s)
    if kill and left:
        for proc in left:
            _signal(proc.kill)
        _wait_gone(left, KILL_WAIT_S)
    return left


def _wait_gone(procs: list[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    """Wait up to `timeout_s` seconds for `procs` to exit; returns those still running."""
    deadline = time.monotonic() + timeout_s
    left = [p for p in procs if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(POLL_INTERVAL_S)
        left = [p for p in left if alive(p)]
    return left


def _signal(send: Callable[[], None]) -> None:
    try:
        send()
    except psutil.NoSuchProcess:  # exited (or its pid was reused) since it was found
        pass
