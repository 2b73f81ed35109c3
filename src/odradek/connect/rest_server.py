"""What a Connect worker's process does around its REST API, standalone or distributed alike: the worker id it
advertises, the Kafka cluster id its root resource shows, and the HTTP listener's start (or a one-line reason it
cannot listen)."""

from __future__ import annotations

import logging
import socket

from aiohttp import web

from odradek.connect.worker_config import WorkerConfig

log = logging.getLogger("odradek.connect")


def advertised_worker_id(config: WorkerConfig, host: str, port: int) -> str:
    """HOST:PORT the worker is known by: `rest.advertised.host.name`/`rest.advertised.port`, else the
    listener's (the machine's name for a wildcard listener)."""
    advertised = config.get("rest.advertised.host.name") or (host if host not in ("0.0.0.0", "::", "") else
                                                              socket.gethostname())
    return f"{advertised}:{config.get('rest.advertised.port') or port}"


def kafka_cluster_id(config: WorkerConfig) -> str | None:
    """The Kafka cluster's id, as the worker's root resource shows it (None if the cluster does not answer).
    Blocking: call it in a thread."""
    from confluent_kafka.admin import AdminClient

    from odradek.admin_client.connect import ClientErrors, client_config, create_client

    client = create_client(AdminClient, client_config(config.bootstrap_servers, config.client_props("admin"),
                                                      errors=ClientErrors()))
    try:
        return str(client.describe_cluster(request_timeout=15).result(timeout=20).cluster_id)
    except Exception as exc:  # the worker starts anyway; clients retry
        log.warning("Could not read the Kafka cluster id: %s", exc)
        return None


class ListenError(Exception):
    """The REST listener could not be opened; the message says which and why, in one line."""


async def start_rest(app: web.Application, config: WorkerConfig, host: str, port: int,
                     worker_id: str) -> web.AppRunner:
    """Serve `app` on HOST:PORT (all interfaces for 0.0.0.0); the runner to clean up. Raises ListenError."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host if host != "0.0.0.0" else None, port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise ListenError(f"cannot listen on {config.props['listeners']}: {exc.strerror or exc}") from None
    log.info("REST server listening at http://%s:%d/, advertising URL http://%s/", host, port, worker_id)
    return runner
