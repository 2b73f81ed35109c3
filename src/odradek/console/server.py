"""`odradek console --bootstrap-server H:P`: the web console, a process of its own that speaks the Kafka
protocol to any Kafka-compatible cluster (Odradek or not) and serves pages about it over HTTP.

    odradek console --bootstrap-server 127.0.0.1:9092 [--command-config FILE] [--port 8080] [--host 127.0.0.1]

It checks that the cluster answers (one line on stderr and exit code 1 when it does not), starts sampling
consumer-group lag, and serves until SIGINT or SIGTERM, logging like the broker does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys

from odradek.cli.common import (
    ArgParser,
    CliError,
    add_bootstrap_flags,
    bootstrap_of,
    parse_int,
    read_properties_file,
    run_tool,
)

LOG_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"
log = logging.getLogger("odradek.console")


def build_parser() -> ArgParser:
    p = ArgParser("console", __doc__ or "")
    add_bootstrap_flags(p)
    p.add_argument("--command-config", metavar="FILE",
                   help="property file with client configs (security settings, ...) for the console's clients")
    p.add_argument("--port", default="8080", help="HTTP port to listen on (default 8080; 0 picks a free one)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--metrics-url-template", metavar="URL",
                   help="link each broker to its metrics, e.g. 'http://{host}:9404/metrics' "
                        "({id}, {host} and {port} are the broker's)")
    p.add_argument("--refresh-ms", default="5000", help="how often pages refresh their values (default 5000)")
    p.add_argument("--lag-sample-ms", default="10000",
                   help="how often consumer-group lag is sampled for the lag charts (default 10000)")
    p.add_argument("--timeout", metavar="MS", default="10000",
                   help="timeout of each request to the cluster, and of the first connection (default 10000)")
    return p


async def serve(opts: argparse.Namespace, bootstrap: str) -> int:
    from aiohttp import web

    from odradek.console.app import Settings, create_app
    from odradek.console.cluster import Cluster
    from odradek.console.sampler import LagHistory, sample_forever

    timeout_ms = parse_int(opts.timeout, "--timeout", minimum=1)
    port = parse_int(opts.port, "--port", minimum=0)
    refresh_ms = parse_int(opts.refresh_ms, "--refresh-ms", minimum=100)
    sample_ms = parse_int(opts.lag_sample_ms, "--lag-sample-ms", minimum=100)
    host: str = opts.host
    properties = read_properties_file(opts.command_config)
    cluster = await asyncio.to_thread(Cluster, bootstrap, properties, timeout_ms)
    history = LagHistory()
    settings = Settings(refresh_ms=refresh_ms, metrics_url_template=opts.metrics_url_template)
    runner = web.AppRunner(create_app(cluster, history, settings), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise CliError(f"Error: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    bound = port
    server = getattr(site, "_server", None)
    if server is not None and server.sockets:
        bound = server.sockets[0].getsockname()[1]
    shown_host = f"[{host}]" if ":" in host else host
    log.info("Odradek console listening on http://%s:%d (cluster %s at %s)", shown_host, bound,
             cluster.cluster_id, bootstrap)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    sampler = asyncio.create_task(sample_forever(cluster, history, sample_ms / 1000))
    try:
        await stop.wait()
    finally:
        log.info("Odradek console shutting down")
        sampler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampler
        await runner.cleanup()
    log.info("Odradek console stopped")
    return 0


def execute(argv: list[str]) -> int:
    opts = build_parser().parse_args(argv)
    bootstrap = bootstrap_of(opts)
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stdout, force=True)
    logging.getLogger("aiohttp").setLevel(logging.WARNING)
    return asyncio.run(serve(opts, bootstrap))


def main(argv: list[str]) -> int:
    return run_tool(lambda: execute(argv))
