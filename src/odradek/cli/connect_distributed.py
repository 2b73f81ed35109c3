"""`odradek connect-distributed WORKER.properties`: Kafka's `connect-distributed.sh`. The worker joins the
Connect group `group.id`, creates its internal topics (`config.storage.topic`, `offset.storage.topic`,
`status.storage.topic`, compacted), runs the connectors and tasks the group's leader gives it and serves the
REST API on `listeners`. It runs until SIGINT or SIGTERM, then stops its tasks, leaves the group and exits 0."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys

from odradek.cli.service import run_service, until_signalled
from odradek.config import read_properties_file
from odradek.config_keys import ConfigError

log = logging.getLogger("odradek.connect")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="odradek connect-distributed", allow_abbrev=False,
                                description="Run a distributed Kafka Connect worker (Kafka's "
                                            "connect-distributed.sh).")
    p.add_argument("worker", metavar="worker.properties", help="the worker's properties file")
    return p


async def run(args: argparse.Namespace) -> int:
    from odradek.connect.api import ConfigException
    from odradek.connect.distributed import DistributedHerder
    from odradek.connect.distributed_rest import DistributedRest
    from odradek.connect.plugins import Plugins
    from odradek.connect.rest_server import ListenError, advertised_worker_id, kafka_cluster_id, start_rest
    from odradek.connect.worker_config import WorkerConfig

    try:
        config = WorkerConfig.of(read_properties_file(args.worker), distributed=True)
        host, port = config.rest_listener()
        plugins = Plugins(config.plugin_path)
    except (ConfigError, ConfigException) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    worker_id = advertised_worker_id(config, host, port)
    herder = DistributedHerder(config, plugins, worker_id, f"http://{worker_id}/")
    try:
        await asyncio.to_thread(herder.start)
    except Exception as exc:
        print(f"Error: cannot start the worker: {exc}", file=sys.stderr)
        return 1
    cluster_id = await asyncio.to_thread(kafka_cluster_id, config)
    try:
        runner = await start_rest(DistributedRest(herder, cluster_id).app(), config, host, port, worker_id)
    except ListenError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        await asyncio.to_thread(herder.stop)
        return 1
    try:
        log.info("Kafka Connect started")
        await until_signalled()
        log.info("Kafka Connect stopping")
    finally:
        await asyncio.to_thread(herder.stop)
        with contextlib.suppress(Exception):
            await runner.cleanup()
        log.info("Kafka Connect stopped")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_service(run, build_parser().parse_args(argv))
