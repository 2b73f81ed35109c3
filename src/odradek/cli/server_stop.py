"""`odradek server-stop [PATH/server.properties]`: stop brokers on this host with SIGTERM, like
kafka-server-stop.sh; with a config path, only the broker started with that file."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path


def find_processes(marker: str, config: str | None) -> list[int]:
    """Pids of `odradek <marker>` processes (optionally started with `config`), from /proc."""
    me = os.getpid()
    wanted = str(Path(config).resolve()) if config else None
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            args = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if "odradek.cli.main" not in " ".join(args) and not any(a.endswith("/odradek") for a in args):
            continue
        if marker not in args:
            continue
        if wanted is not None:
            resolved = {str(Path(a).resolve()) for a in args if a and not a.startswith("-")}
            if wanted not in resolved:
                continue
        pids.append(int(entry.name))
    return sorted(pids)


def stop(marker: str, config: str | None, what: str, timeout: float = 60.0) -> int:
    pids = find_processes(marker, config)
    if not pids:
        print(f"No {what} to stop", file=sys.stderr)
        return 1
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    left = [p for p in pids if _alive(p)]
    if left:
        print(f"{what} still running after {timeout:.0f}s: pid {', '.join(map(str, left))}", file=sys.stderr)
        return 1
    print(f"Stopped {what} (pid {', '.join(map(str, pids))})")
    return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        return state != "Z"
    except OSError:
        return False


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="odradek server-stop", description="Stop Odradek brokers on this host (SIGTERM).")
    p.add_argument("config", nargs="?", help="only the broker started with this server.properties")
    args = p.parse_args(argv)
    return stop("server-start", args.config, "Odradek broker")
