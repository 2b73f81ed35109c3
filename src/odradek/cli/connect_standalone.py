"""`odradek connect-standalone WORKER.properties [CONNECTOR.properties|CONNECTOR.json ...]`: Kafka's
`connect-standalone.sh`. One worker runs the connectors of the files given (Kafka's properties, or JSON as the
REST API takes it: `{"name": ..., "config": {...}}` or the config alone) and serves the REST API on `listeners`;
source offsets are kept in `offset.storage.file.filename`. It runs until SIGINT or SIGTERM, then stops every task
(committing what they did) and exits 0."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
from pathlib import Path

from odradek.cli.service import run_service, until_signalled
from odradek.config import read_properties_file
from odradek.config_keys import ConfigError

log = logging.getLogger("odradek.connect")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="odradek connect-standalone", allow_abbrev=False,
                                description="Run a standalone Kafka Connect worker with the connectors of the "
                                            "files given (Kafka's connect-standalone.sh).")
    p.add_argument("worker", metavar="worker.properties", help="the worker's properties file")
    p.add_argument("connectors", metavar="connector.properties|connector.json", nargs="*",
                   help="connector configurations to run (properties or JSON)")
    return p


def read_connector_file(path: str) -> tuple[str, dict[str, str]]:
    """(name, config) of a connector file: properties, or JSON as the REST API's create or config bodies."""
    if path.endswith(".json"):
        try:
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"Cannot read connector configuration {path}: {exc}") from None
        if not isinstance(doc, dict):
            raise ConfigError(f"Connector configuration {path} is not a JSON object")
        config = doc["config"] if isinstance(doc.get("config"), dict) else doc
        props = {str(k): str(v) for k, v in config.items()}
        name = str(doc.get("name") or props.get("name") or "")
    else:
        props = read_properties_file(path)
        name = props.get("name", "")
    if not name.strip():
        raise ConfigError(f"Connector configuration {path} has no name")
    props["name"] = name
    return name, props


async def run(args: argparse.Namespace) -> int:
    from odradek.connect.api import ConfigException
    from odradek.connect.offset_store import FileOffsetStore
    from odradek.connect.plugins import Plugins
    from odradek.connect.rest import ConnectRest
    from odradek.connect.rest_server import ListenError, advertised_worker_id, kafka_cluster_id, start_rest
    from odradek.connect.worker import Worker
    from odradek.connect.worker_config import WorkerConfig

    try:
        config = WorkerConfig.of(read_properties_file(args.worker))
        connectors = [read_connector_file(path) for path in args.connectors]
        host, port = config.rest_listener()
        plugins = Plugins(config.plugin_path)
    except (ConfigError, ConfigException) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    worker_id = advertised_worker_id(config, host, port)
    worker = Worker(config, plugins, FileOffsetStore(config.props["offset.storage.file.filename"]), worker_id)
    cluster_id = await asyncio.to_thread(kafka_cluster_id, config)
    try:
        runner = await start_rest(ConnectRest(worker, cluster_id).app(), config, host, port, worker_id)
    except ListenError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    status = 0
    try:
        for name, props in connectors:
            try:
                await asyncio.to_thread(worker.put_connector, name, props)
                log.info("Created connector %s", name)
            except ConfigException as exc:
                log.error("Failed to create connector for %s", name)
                print(f"Error: {exc}", file=sys.stderr)
                status = 1
                return status
        log.info("Kafka Connect started")
        await until_signalled()
        log.info("Kafka Connect stopping")
    finally:
        await asyncio.to_thread(worker.stop)
        with contextlib.suppress(Exception):
            await runner.cleanup()
        log.info("Kafka Connect stopped")
    return status


def main(argv: list[str] | None = None) -> int:
    return run_service(run, build_parser().parse_args(argv))
