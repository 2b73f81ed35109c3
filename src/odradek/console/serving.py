"""The console's serving process: `python -m odradek.console.serving ARGS`, ARGS being `odradek console`'s.

The supervisor (supervisor.py, run by server.py) starts it with the listening socket and a control socket
as inherited descriptors, and the access token and session key in its environment. It holds every
librdkafka client of the console (the AdminClient, the message browser's consumers, the lag sampler's
calls), so a librdkafka abort ends this process only and the supervisor starts another like it.

Started first, it fails (one line on stderr, exit code 1) unless the cluster answers within --timeout, as
the command always did. Started again after a crash, it serves at once, even while the cluster is away:
pages say "cluster unreachable" until it answers. It tells the supervisor `ready` once it serves, and
stops (exit code 0) on SIGTERM or SIGINT, or when the supervisor's end of the control socket closes.
faulthandler dumps every thread's stack on stderr if it dies from SIGABRT or SIGSEGV.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import faulthandler
import logging
import os
import signal
import sys
from concurrent.futures import ThreadPoolExecutor

from aiohttp import web

from odradek.admin_client.command import run_tool
from odradek.admin_client.connect import bootstrap_of, read_properties_file
from odradek.console.app import Settings, create_app
from odradek.console.auth import TOKEN_ENV, HostAllowlist, Sessions
from odradek.console.cluster import ClusterAdmin, ClusterError
from odradek.console.gate import Gate
from odradek.console.sampler import LagHistory, sample_forever
from odradek.console.server import LOG_FORMAT, build_parser, registry_settings, url_host
from odradek.console.supervisor import READY, SESSION_KEY_ENV, child_handles

log = logging.getLogger("odradek.console")

WORKER_THREADS = 32


async def learn_cluster_id(cluster: ClusterAdmin) -> None:
    """After a restart: fetch the cluster's metadata once (its id for the pages), without waiting for it."""
    try:
        await asyncio.to_thread(cluster.metadata)
    except ClusterError as exc:
        log.warning("The cluster at %s does not answer yet (%s); pages say so until it does", cluster.bootstrap, exc)


async def serve(opts: argparse.Namespace, bootstrap: str) -> int:
    listener, control, starts = child_handles()
    # Protocol calls run on worker threads; while a cluster stalls each may hold one until its timeout, so
    # keep enough that pages still get a thread (and answer "unreachable" at their deadline).
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(WORKER_THREADS, "console-call"))
    token, key = os.environ[TOKEN_ENV], bytes.fromhex(os.environ[SESSION_KEY_ENV])
    timeout_ms, refresh_ms, sample_ms = int(opts.timeout), int(opts.refresh_ms), int(opts.lag_sample_ms)
    properties = read_properties_file(opts.command_config)
    cluster = await asyncio.to_thread(ClusterAdmin, bootstrap, properties, timeout_ms, starts == 0)
    history = LagHistory()
    settings = Settings(refresh_ms=refresh_ms, metrics_url_template=opts.metrics_url_template,
                        connect_url=opts.connect_url, schema_registry=registry_settings(opts))
    port = listener.getsockname()[1]
    access = Gate(Sessions(token, key), HostAllowlist(opts.host, opts.allowed_host), f"odradek_console_{port}",
                  read_only=opts.read_only)
    runner = web.AppRunner(create_app(cluster, history, settings, access), access_log=None, handle_signals=False)
    await runner.setup()
    await web.SockSite(runner, listener).start()
    log.info("Odradek console listening on http://%s:%d (cluster %s at %s)%s", url_host(opts.host), port,
             cluster.cluster_id, bootstrap, ", read-only" if opts.read_only else "")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    def supervisor_spoke() -> None:
        try:
            gone = control.recv(64) == b""
        except BlockingIOError:
            return
        except OSError:
            gone = True
        if gone:
            log.warning("The console's supervisor is gone; stopping")
            loop.remove_reader(control.fileno())
            stop.set()

    control.sendall(READY)
    control.setblocking(False)
    loop.add_reader(control.fileno(), supervisor_spoke)
    background = [asyncio.create_task(sample_forever(cluster, history, sample_ms / 1000))]
    if starts:
        background.append(asyncio.create_task(learn_cluster_id(cluster)))
    try:
        await stop.wait()
    finally:
        log.info("Odradek console shutting down")
        for task in background:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await runner.cleanup()
    log.info("Odradek console stopped")
    return 0


def execute(argv: list[str]) -> int:
    faulthandler.enable()
    opts = build_parser().parse_args(argv)
    bootstrap = bootstrap_of(opts)
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stdout, force=True)
    logging.getLogger("aiohttp").setLevel(logging.WARNING)
    return asyncio.run(serve(opts, bootstrap))


def main(argv: list[str]) -> int:
    return run_tool(lambda: execute(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
