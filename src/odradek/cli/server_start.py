"""`odradek server-start PATH/server.properties [--override k=v ...] [--daemon|-daemon]`: run a broker."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import faulthandler
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from odradek.cli.service import LOG_FORMAT


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="odradek server-start",
        description="Start an Odradek broker with a Kafka server.properties file.",
        allow_abbrev=False,
    )
    p.add_argument("config", metavar="server.properties", help="path to the broker's properties file")
    p.add_argument("--override", action="append", default=[], metavar="key=value",
                   help="override a property of the file (repeatable)")
    p.add_argument("--daemon", "-daemon", action="store_true", help="run in the background, output to $LOG_DIR")
    return p


def setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stdout, force=True)
    logging.getLogger("kazoo").setLevel(logging.WARNING)


def _daemonize(args: argparse.Namespace) -> int:
    log_dir = Path(os.environ.get("LOG_DIR", "logs"))
    log_dir.mkdir(parents=True, exist_ok=True)
    out_path = log_dir / "odradek-server.out"
    cmd = [sys.executable, "-m", "odradek.cli.main", "server-start", str(Path(args.config).resolve())]
    for o in args.override:
        cmd += ["--override", o]
    start_at = out_path.stat().st_size if out_path.exists() else 0  # earlier runs' output is not ours
    with open(out_path, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    deadline = time.monotonic() + 60
    marker = b"started (cluster id"
    while time.monotonic() < deadline:
        ours = out_path.read_bytes()[start_at:]
        if proc.poll() is not None:
            lines = ours.decode(errors="replace").strip().splitlines()
            errors = [ln for ln in lines if ln.startswith("Error:")] or lines[-1:]
            print(f"Error: broker exited with status {proc.returncode}: {errors[0] if errors else ''}", file=sys.stderr)
            return 1
        if marker in ours:
            print(f"Odradek broker started in the background (pid {proc.pid}); output in {out_path}")
            return 0
        time.sleep(0.1)
    print(f"Odradek broker (pid {proc.pid}) still starting; output in {out_path}")
    return 0


def _same_terminal() -> bool:
    """stdout (the log) and stderr are one terminal."""
    try:
        return os.isatty(1) and os.isatty(2) and os.path.samestat(os.fstat(1), os.fstat(2))
    except OSError:
        return False


async def _run(config: object) -> int:
    from odradek.server.broker import Broker, StartupError

    broker = Broker(config)  # type: ignore[arg-type]
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: loop.create_task(broker.shutdown()))
    try:
        await broker.start()
    except StartupError as exc:
        logging.getLogger("odradek.server").error("Fatal error during broker start-up: %s", exc)
        if not _same_terminal():  # the log line above is already on the screen: say it once
            print(f"Error: {exc}", file=sys.stderr)
        await broker.shutdown()
        return 1
    registry = None
    if config.get("schema_registry_api"):  # type: ignore[attr-defined]
        from odradek.cli.schema_registry import run_in_broker

        registry = loop.create_task(run_in_broker(config, broker))
    await broker.wait_stopped()
    if registry is not None:
        registry.cancel()
        with contextlib.suppress(BaseException):
            await registry
    return 0


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from odradek.config import BrokerConfig, ConfigError

    try:
        config = BrokerConfig.load(args.config, args.override)
    except ConfigError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"Error: cannot read {args.config}: {exc.strerror}", file=sys.stderr)
        return 1
    if args.daemon:
        return _daemonize(args)
    setup_logging()
    # `kill -USR1 <pid>` prints every thread's stack on stderr: how a broker that stopped answering is
    # told apart from one that is merely slow (the fault tests ask for it when a wait gives up)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        import uvloop

        return uvloop.run(_run(config))
    except ImportError:
        return asyncio.run(_run(config))
