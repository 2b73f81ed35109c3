"""cli/processes: find processes by command line, tell a live one from a zombie, stop them."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from odradek.cli import processes

Spawn = Callable[..., "subprocess.Popen[str]"]
SLEEP = "import signal, sys, time\nif sys.argv[1] == 'stubborn': signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" \
        "print('ready', flush=True)\ntime.sleep(60)"


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    children: list[subprocess.Popen[str]] = []

    def start(*args: str, stubborn: bool = False) -> subprocess.Popen[str]:
        mode = "stubborn" if stubborn else "polite"
        proc = subprocess.Popen([sys.executable, "-c", SLEEP, mode, *args], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"  # its handlers are set
        children.append(proc)
        return proc

    yield start
    for proc in children:
        proc.kill()
        proc.wait()


def test_odradek_tool_matches_tool_and_config(tmp_path: Path, spawn: Spawn) -> None:
    config = tmp_path / "server.properties"
    config.write_text("")
    broker = spawn("odradek.cli.main", "server-start", str(config))
    spawn("odradek.cli.main", "server-start", str(tmp_path / "other.properties"))
    spawn("not-odradek", "server-start", str(config))

    found = processes.find(processes.odradek_tool("server-start", tmp_path / "." / "server.properties"))
    assert [p.pid for p in found] == [broker.pid]
    assert len(processes.find(processes.odradek_tool("server-start", None))) >= 2
    assert processes.find(processes.odradek_tool("console-consumer", config)) == []


def test_terminate_waits_and_kills_only_when_asked(spawn: Spawn) -> None:
    polite, stubborn = spawn("a"), spawn("b", stubborn=True)
    procs = [psutil.Process(polite.pid), psutil.Process(stubborn.pid)]

    left = processes.terminate(procs, 1.0)
    assert left == [procs[1]]
    assert not processes.alive(procs[0])  # exited: a zombie until reaped, which counts as gone
    assert processes.alive(procs[1])

    started = time.monotonic()
    assert processes.terminate([procs[1]], 0.3, kill=True) == [procs[1]]
    assert not processes.alive(procs[1])
    assert time.monotonic() - started < processes.KILL_WAIT_S


def test_a_zombie_is_neither_alive_nor_found(spawn: Spawn) -> None:
    child = spawn("zombie-to-be")
    proc = psutil.Process(child.pid)
    child.kill()
    deadline = time.monotonic() + 5
    while proc.status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not processes.alive(proc)
    assert processes.find(lambda args: "zombie-to-be" in args) == []
