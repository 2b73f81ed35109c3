"""Dynamic broker configs in the metadata store (KIP-226): `/config/brokers/<id>` for one broker and
`/config/brokers/<default>` for the cluster default, in Kafka's JSON ({"version":1,"config":{...}}); each
write is followed by a change notification `/config/changes/config_change_NNNNNNNNNN` in Kafka's layout
({"version":2,"entity_path":"brokers/<id>"}), so Kafka's own tooling sees the change as it would from a
Kafka broker. Brokers act on the config znodes themselves, which they watch (as they do topic configs):
BrokerConfigWatcher reads this broker's two znodes, keeps a watch on each, and reports every change.
Notifications older than Kafka's 15 minutes are purged by the writer of the next one.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from odradek.aio import TaskSet
from odradek.cluster import znodes as zn
from odradek.cluster.store import MetadataStore, NodeExistsError, NoNodeError, StoreError, WatchEvent, to_json

log = logging.getLogger("odradek.metadata")

CHANGE_EXPIRATION_MS = 15 * 60 * 1000  # Kafka's ZkNodeChangeNotificationListener.changeExpirationMs

# (per-broker layer, cluster-default layer)
ConfigListener = Callable[[dict[str, str], dict[str, str]], Awaitable[None]]


def entity_of(broker_id: int | None) -> str:
    """The znode name of a broker's own configs, or of the cluster default when `broker_id` is None."""
    return zn.DEFAULT_ENTITY if broker_id is None else str(broker_id)


async def read_broker_config(store: MetadataStore, entity: str) -> dict[str, str]:
    """The configs stored for `entity` ({} when there is no znode); malformed JSON is a StoreError."""
    return await read_entity_config(store, zn.broker_config_path(entity))


async def read_entity_config(store: MetadataStore, path: str) -> dict[str, str]:
    """The configs of the config znode at `path` ({} when there is none); malformed JSON is a StoreError."""
    try:
        data, _ = await store.get_json(path)
    except NoNodeError:
        return {}
    return zn.config_from_json(data)


async def write_broker_config(store: MetadataStore, entity: str, config: dict[str, str]) -> None:
    """Replace the stored configs of `entity`, then announce the change under /config/changes."""
    await write_entity_config(store, zn.broker_config_path(entity), f"brokers/{entity}", config)


async def write_entity_config(store: MetadataStore, path: str, entity_path: str, config: dict[str, str]) -> None:
    """Replace the config znode at `path` (created if missing), then announce the change of
    `entity_path` ("brokers/0", "users/alice") under /config/changes, as Kafka does."""
    data = to_json(zn.config_json(config))
    try:
        await store.set(path, data)
    except NoNodeError:
        try:
            await store.create(path, data, makepath=True)
        except NodeExistsError:
            await store.set(path, data)
    notice = to_json(zn.config_change_json(entity_path))
    await store.create(f"{zn.CONFIG_CHANGES}/{zn.CONFIG_CHANGE_PREFIX}", notice, makepath=True, sequence=True)
    await purge_changes(store, zn.now_ms())


async def bootstrap_cluster_configs(store: MetadataStore, min_insync_replicas: str) -> None:
    """What a new cluster starts with, as Kafka 4.1+ does: a cluster-level `min.insync.replicas` with the
    creating broker's own (static) value, unless one is stored. Kafka writes it when a cluster starts
    with eligible leader replicas on (KIP-966, the default from 4.1), so that every broker agrees on the
    value; DescribeConfigs then reports it on every topic without an override as a dynamic cluster
    default (confluent-kafka's test_incremental_alter_configs expects it)."""
    current = await read_broker_config(store, zn.DEFAULT_ENTITY)
    if "min.insync.replicas" in current:
        return
    await write_broker_config(store, zn.DEFAULT_ENTITY, {**current, "min.insync.replicas": min_insync_replicas})


async def purge_changes(store: MetadataStore, now_ms: int) -> None:
    """Delete change notifications older than CHANGE_EXPIRATION_MS (every broker's writes add some)."""
    try:
        children = await store.get_children(zn.CONFIG_CHANGES)
    except NoNodeError:
        return
    for child in children:
        if not child.startswith(zn.CONFIG_CHANGE_PREFIX):
            continue
        path = f"{zn.CONFIG_CHANGES}/{child}"
        try:
            stat = await store.exists(path)
            if stat is not None and now_ms - stat.ctime > CHANGE_EXPIRATION_MS:
                await store.delete(path)
        except NoNodeError:
            continue


class BrokerConfigWatcher:
    """Keeps a broker's two dynamic config layers current from the store and reports each change."""

    def __init__(self, store: MetadataStore, broker_id: int, listener: ConfigListener) -> None:
        self.store = store
        self.entities = (entity_of(broker_id), entity_of(None))
        self.listener = listener
        self.layers: dict[str, dict[str, str]] = {e: {} for e in self.entities}
        self._tasks = TaskSet(log, "Broker config refresh", expected=(StoreError,))

    async def start(self) -> None:
        """Read both layers, leave a watch on each, and report them once (also after a new session)."""
        for entity in self.entities:
            self.layers[entity] = await self._read(entity)
        await self.listener(*self._both())

    def close(self) -> None:
        self._tasks.close()

    async def refresh(self) -> None:
        """Re-read both layers now (after a write of our own), reporting a change; the watches stay as
        they are and find nothing new when they fire."""
        changed = False
        for entity in self.entities:
            try:
                config = await read_broker_config(self.store, entity)
            except StoreError as exc:
                log.warning("Ignoring malformed broker config %s: %s", zn.broker_config_path(entity), exc)
                continue
            if config != self.layers[entity]:
                self.layers[entity], changed = config, True
        if changed:
            await self.listener(*self._both())

    def _both(self) -> tuple[dict[str, str], dict[str, str]]:
        return dict(self.layers[self.entities[0]]), dict(self.layers[self.entities[1]])

    async def _read(self, entity: str) -> dict[str, str]:
        """The layer's configs, with a watch left on its znode (which may not exist yet)."""
        path = zn.broker_config_path(entity)

        def fire(_ev: WatchEvent) -> None:
            self._tasks.spawn(self._reload(entity))

        stat = await self.store.exists(path, watch=fire)
        if stat is None:
            return {}
        try:
            return await read_broker_config(self.store, entity)
        except StoreError as exc:
            log.warning("Ignoring malformed broker config %s: %s", path, exc)
            return {}

    async def _reload(self, entity: str) -> None:
        config = await self._read(entity)
        if config != self.layers[entity]:
            self.layers[entity] = config
            await self.listener(*self._both())
