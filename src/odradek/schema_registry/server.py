"""One registry node: it reads the `_schemas` topic into its state, joins the registry group to learn (or be) the
primary, and serves the REST API on its listeners (https ones with the `ssl.*` keys, PEM files; HTTP basic
auth with `authentication.method=BASIC`). Becoming the primary waits until the topic is read to its end, so the
next id is above every id written before."""

from __future__ import annotations

import asyncio
import logging
import ssl
import threading
import uuid

from aiohttp import web

from odradek.schema_registry.auth import basic_auth_middleware, listener_ssl_context
from odradek.schema_registry.config import RegistryConfig
from odradek.schema_registry.election import Election, Identity, identity_url
from odradek.schema_registry.registry import Registry, RegistryError
from odradek.schema_registry.rest import Node, RegistryRest
from odradek.schema_registry.state import RegistryState
from odradek.schema_registry.store import KafkaStore, StoreError, ensure_topic

log = logging.getLogger("odradek.schema_registry")


class RegistryNode(Node):
    def __init__(self, config: RegistryConfig) -> None:
        self.config = config
        self.state = RegistryState()
        self.registry = Registry(self.state, config.level)
        self._primary: Identity | None = None
        self._is_primary = False
        self._lock = threading.Lock()
        advertised = config.advertised()
        self.identity: Identity = {"version": 1, "host": advertised.host, "port": advertised.port,
                                   "master_eligibility": config.eligible, "scheme": advertised.scheme}
        self.store: KafkaStore | None = None
        self.election: Election | None = None
        self.runner: web.AppRunner | None = None

    # ---- Node ------------------------------------------------------------------------------------------

    def is_primary(self) -> bool:
        return self._is_primary

    def primary_url(self) -> str | None:
        primary = self._primary
        return identity_url(primary) if primary else None

    def write(self, items: list[tuple[bytes, bytes | None]]) -> None:
        if not self._is_primary or self.store is None:
            raise RegistryError(500, 50004, "Unknown leader: this node is no longer the primary")
        try:
            self.store.send(items)
        except StoreError as exc:
            raise RegistryError(500, 50001, f"Error in the backend data store: {exc}") from None

    def catch_up(self) -> None:
        if self.store is not None:
            self.store.read_to_end(10)

    def _on_revoke(self) -> None:
        """A rebalance began: writes wait for the group's choice (forwarded to the last primary meanwhile)."""
        with self._lock:
            if self._is_primary:
                self._is_primary = False
                self._primary = None
                log.info("Rebalance of the registry group: this node stops writing until a primary is chosen")

    def _on_primary(self, primary: Identity | None, is_self: bool) -> None:
        with self._lock:
            self._is_primary = False
            self._primary = primary
            if is_self and self.store is not None:
                try:
                    self.store.read_to_end()
                except StoreError as exc:
                    log.error("Cannot take over as the primary: %s", exc)
                    return
                self._is_primary = True
                log.info("This node (%s) is the schema registry's primary", identity_url(self.identity))

    # ---- life ------------------------------------------------------------------------------------------

    def start_store(self) -> None:
        """Blocking: the topic, the reader (read to its end) and the group membership."""
        config = self.config
        client = config.client_props()
        wanted = config.props.get("kafkastore.topic.replication.factor")
        ensure_topic(config.bootstrap, client, config.topic, int(wanted) if wanted and wanted.isdigit() else None)
        self.store = KafkaStore(config.bootstrap, client, config.topic, self.state.apply,
                                f"schema-registry-{uuid.uuid4().hex[:8]}")
        self.store.start(config.ms("kafkastore.init.timeout.ms") / 1000)
        log.info("Read the schemas topic %s to its end: %d subjects, highest id %d", config.topic,
                 len(self.state.subjects), self.state.max_id)
        self.election = Election(config.bootstrap, client, config.props["schema.registry.group.id"], self.identity,
                                 config.ms("kafkagroup.session.timeout.ms"),
                                 config.ms("kafkagroup.heartbeat.interval.ms"),
                                 config.ms("kafkagroup.rebalance.timeout.ms"), self._on_primary, self._on_revoke)
        self.election.start()

    async def start(self) -> list[str]:
        """Start everything; the URLs listened on. Raises OSError when a listener cannot bind."""
        await asyncio.to_thread(self.start_store)
        middlewares = []
        if self.config.props["authentication.method"].upper() == "BASIC":
            middlewares.append(basic_auth_middleware(self.config))
        trust = self.config.props.get("ssl.truststore.location")
        forward_ssl = ssl.create_default_context(cafile=trust) if trust else None
        self.runner = web.AppRunner(RegistryRest(self, forward_ssl).app(middlewares), access_log=None)
        await self.runner.setup()
        urls = []
        for listener in self.config.listeners:
            ssl_context = listener_ssl_context(self.config) if listener.scheme == "https" else None
            host = None if listener.host in ("0.0.0.0", "") else listener.host
            site = web.TCPSite(self.runner, host, listener.port, ssl_context=ssl_context)
            await site.start()
            urls.append(f"{listener.scheme}://{listener.host}:{listener.port}")
        return urls

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
        if self.election is not None:
            await asyncio.to_thread(self.election.stop)
        if self.store is not None:
            await asyncio.to_thread(self.store.stop)
