"""What the long-running commands (`connect-standalone`, `connect-distributed`, `schema-registry`) share: Kafka's
log line format (`[time] LEVEL message (logger)`), the wait for SIGINT or SIGTERM, and their `main`: logging set
up, then the command's coroutine run to its exit status."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any

LOG_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"


async def until_signalled() -> None:
    """Return at SIGINT or SIGTERM."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


def run_service(run: Callable[[argparse.Namespace], Coroutine[Any, Any, int]], args: argparse.Namespace) -> int:
    """Log as Kafka's services do (aiohttp's access lines left out) and run the command to its exit status."""
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stdout, force=True)
    logging.getLogger("aiohttp").setLevel(logging.WARNING)
    return asyncio.run(run(args))
