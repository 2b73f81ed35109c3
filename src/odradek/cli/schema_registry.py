"""`odradek schema-registry schema-registry.properties`: Confluent's `schema-registry-start`. The registry keeps
its schemas in `kafkastore.topic` of the cluster at `kafkastore.bootstrap.servers`, joins the registry group to
elect its primary and serves Confluent's REST API on `listeners` until SIGINT or SIGTERM; then it leaves the group
and exits 0. `run_in_broker()` starts the same registry inside `odradek server-start` when the broker's
`schema_registry` key names a listener (and makes it the broker's Schema ID Validation lookup)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
from collections.abc import Mapping

from odradek.cli.service import run_service, until_signalled
from odradek.config import read_properties_file
from odradek.config_keys import ConfigError

log = logging.getLogger("odradek.schema_registry")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="odradek schema-registry", allow_abbrev=False,
                                description="Run a schema registry with Confluent Schema Registry's REST API "
                                            "(Confluent's schema-registry-start).")
    p.add_argument("config", metavar="schema-registry.properties",
                   help="Confluent's schema-registry.properties (listeners, kafkastore.bootstrap.servers, "
                        "kafkastore.topic, schema.compatibility.level, host.name, leader.eligibility, "
                        "kafkastore.security.protocol and its sasl./ssl. keys, ssl.* of https listeners, "
                        "authentication.method=BASIC)")
    return p


async def start_registry(props: Mapping[str, str]) -> object:
    """A started RegistryNode (raises RegistryConfigError, OSError or a Kafka error when it cannot start)."""
    from odradek.schema_registry.config import RegistryConfig
    from odradek.schema_registry.server import RegistryNode

    node = RegistryNode(RegistryConfig(props))
    try:
        urls = await node.start()
    except BaseException:
        await node.stop()
        raise
    log.info("Schema registry listening on %s, advertising %s to group %s", ", ".join(urls),
             node.primary_url() or f"{node.identity['scheme']}://{node.identity['host']}:{node.identity['port']}",
             node.config.props["schema.registry.group.id"])
    return node


def broker_registry_props(config: object) -> dict[str, str]:
    """The registry's properties inside a broker: `schema_registry_api` as its listeners, the broker's first
    PLAINTEXT listener as the store's bootstrap server, Confluent's defaults for the rest."""
    plaintext = [lst for lst in config.listeners if lst.security_protocol == "PLAINTEXT"]  # type: ignore[attr-defined]
    if not plaintext:
        raise ValueError("schema_registry_api needs a PLAINTEXT listener of the broker to keep its schemas through")
    host = plaintext[0].host if plaintext[0].host not in ("", "0.0.0.0", "::") else "127.0.0.1"
    listeners = str(config.get("schema_registry_api"))  # type: ignore[attr-defined]
    props = {"listeners": listeners, "kafkastore.bootstrap.servers": f"{host}:{plaintext[0].port}"}
    first_host = listeners.split(",")[0].split("//")[-1].rsplit(":", 1)[0]
    if first_host in ("", "0.0.0.0", "::", "[::]"):
        advertised = config.advertised_listeners  # type: ignore[attr-defined]
        if advertised and advertised[0].host:
            props["host.name"] = advertised[0].host
    return props


async def run_in_broker(config: object, broker: object = None) -> None:
    """Run the registry beside the broker of `config` until cancelled; the broker goes on if it cannot start
    (one error line), and a start that finds the cluster not ready yet is retried. Once started, it is what
    the broker's Schema ID Validation asks (in process) unless `confluent.schema.registry.url` names another."""
    from odradek.schema_registry.config import RegistryConfigError

    try:
        props = broker_registry_props(config)
    except ValueError as exc:
        log.error("Schema registry not started: %s", exc)
        return
    node = None
    try:
        while node is None:
            try:
                node = await start_registry(props)
            except (RegistryConfigError, OSError) as exc:
                log.error("Schema registry not started: %s", exc)
                return
            except Exception as exc:  # the cluster not ready yet (topic creation, reading it): try again
                log.warning("Schema registry start failed (%s); retrying", exc)
                await asyncio.sleep(2)
        validation = getattr(broker, "schema_validation", None)
        if validation is not None and validation.lookup is None:
            from odradek.schema_registry.validation import StateLookup

            validation.lookup = StateLookup(node.state)  # type: ignore[attr-defined]
        await asyncio.Event().wait()
    finally:
        if node is not None:
            await node.stop()  # type: ignore[attr-defined]


async def run(args: argparse.Namespace) -> int:
    from confluent_kafka import KafkaException

    from odradek.schema_registry.config import RegistryConfigError
    from odradek.schema_registry.store import StoreError

    try:
        props = read_properties_file(args.config)
    except (ConfigError, OSError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    try:
        node = await start_registry(props)
    except (RegistryConfigError, StoreError, KafkaException, OSError) as exc:
        print(f"Error: cannot start the schema registry: {exc}", file=sys.stderr)
        return 1
    log.info("Schema registry started")
    try:
        await until_signalled()
        log.info("Schema registry stopping")
    finally:
        with contextlib.suppress(Exception):
            await node.stop()  # type: ignore[attr-defined]
        log.info("Schema registry stopped")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_service(run, build_parser().parse_args(argv))
