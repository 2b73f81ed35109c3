"""`odradek server-stop [PATH/server.properties]`: stop brokers on this host with SIGTERM, like
kafka-server-stop.sh; with a config path, only the broker started with that file."""

from __future__ import annotations

import argparse
import sys

import psutil

from odradek.cli import processes


def running(marker: str, config: str | None = None) -> list[psutil.Process]:
    """The `odradek <marker>` processes on this host (only those started with `config`, when given)."""
    return processes.find(processes.odradek_tool(marker, config))


def find_processes(marker: str, config: str | None = None) -> list[int]:
    """The pids of :func:`running` (for showing and recording them)."""
    return [p.pid for p in running(marker, config)]


def stop(marker: str, config: str | None, what: str, timeout: float = 60.0) -> int:
    procs = running(marker, config)
    if not procs:
        print(f"No {what} to stop", file=sys.stderr)
        return 1
    left = processes.terminate(procs, timeout)
    if left:
        print(f"{what} still running after {timeout:.0f}s: pid {', '.join(str(p.pid) for p in left)}", file=sys.stderr)
        return 1
    print(f"Stopped {what} (pid {', '.join(str(p.pid) for p in procs)})")
    return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="odradek server-stop", description="Stop Odradek brokers on this host (SIGTERM).")
    p.add_argument("config", nargs="?", help="only the broker started with this server.properties")
    args = p.parse_args(argv)
    return stop("server-start", args.config, "Odradek broker")
