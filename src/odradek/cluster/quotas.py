"""Client quotas (KIP-13, KIP-55, KIP-124) in the metadata store, where and as Kafka keeps them:
`/config/users/<user>/clients/<client-id>`, `/config/users/<user>`, `/config/clients/<client-id>`, each
name URL-encoded and `<default>` for the default entity, holding {"version":1,"config":{...}} (a user's
znode also holds its SCRAM credentials), each write announced under /config/changes with its entity_path
("users/alice/clients/c1"). The precedence rules are pure functions here; QuotaWatcher keeps a broker's
copy of every quota current from the change notifications.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote, unquote

from odradek.aio import TaskSet
from odradek.cluster import znodes as zn
from odradek.cluster.broker_configs import read_entity_config, write_entity_config
from odradek.cluster.store import MetadataStore, NoNodeError, StoreError, WatchEvent

log = logging.getLogger("odradek.metadata")

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
QUOTA_KEYS = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE, CONTROLLER_MUTATION_RATE)
CONFIG_CLIENTS = "/config/clients"

# An entity: (user, client-id), each None when the entity does not name that part, DEFAULT for <default>.
DEFAULT = zn.DEFAULT_ENTITY
Entity = tuple[str | None, str | None]
Quotas = dict[Entity, dict[str, float]]


def entity_path(entity: Entity) -> str:
    """The entity's path under /config ("users/alice/clients/c1"), names URL-encoded as Kafka does."""
    user, client = entity
    parts = []
    if user is not None:
        parts.append(f"users/{user if user == DEFAULT else quote(user, safe='')}")
    if client is not None:
        parts.append(f"clients/{client if client == DEFAULT else quote(client, safe='')}")
    if not parts:
        raise ValueError("a quota entity names a user, a client id or both")
    return "/".join(parts)


def znode_path(entity: Entity) -> str:
    return f"/config/{entity_path(entity)}"


@dataclass(frozen=True, slots=True)
class Resolved:
    """The quota that applies to a (user, client-id) and the metric entity whose rate it bounds, as
    Kafka's default quota callback tags it: (user, client-id) with "" for the part the quota ignores."""

    bound: float
    metric: tuple[str, str]


def resolve(quotas: Quotas, key: str, user: str, client_id: str) -> Resolved | None:
    """Kafka's precedence: user+client, user+default client, user, default user+client, default
    user+default client, default user, client, default client; None when no level sets `key`."""
    d = DEFAULT
    order: tuple[tuple[Entity, tuple[str, str]], ...] = (
        ((user, client_id), (user, client_id)),
        ((user, d), (user, client_id)),
        ((user, None), (user, "")),
        ((d, client_id), (user, client_id)),
        ((d, d), (user, client_id)),
        ((d, None), (user, "")),
        ((None, client_id), ("", client_id)),
        ((None, d), ("", client_id)),
    )
    for entity, metric in order:
        config = quotas.get(entity)
        if config is not None and key in config:
            return Resolved(config[key], metric)
    return None


def quota_values(config: dict[str, str]) -> dict[str, float]:
    """The quota keys of a stored config (a user's also holds SCRAM credentials), as numbers."""
    out: dict[str, float] = {}
    for key in QUOTA_KEYS:
        if key in config:
            try:
                out[key] = float(config[key])
            except ValueError:
                log.warning("Ignoring quota %s=%r: not a number", key, config[key])
    return out


def _name(child: str) -> str:
    return child if child == DEFAULT else unquote(child)


async def _children(store: MetadataStore, path: str) -> list[str]:
    try:
        return await store.get_children(path)
    except NoNodeError:
        return []


async def read_all(store: MetadataStore) -> Quotas:
    """Every quota entity in the store with at least one quota set."""
    entities: list[Entity] = []
    for u in await _children(store, zn.CONFIG_USERS):
        user = _name(u)
        entities.append((user, None))
        for c in await _children(store, f"{zn.CONFIG_USERS}/{u}/clients"):
            entities.append((user, _name(c)))
    for c in await _children(store, CONFIG_CLIENTS):
        entities.append((None, _name(c)))
    out: Quotas = {}
    for entity in entities:
        try:
            values = quota_values(await read_entity_config(store, znode_path(entity)))
        except StoreError as exc:
            log.warning("Ignoring malformed quota config %s: %s", znode_path(entity), exc)
            continue
        if values:
            out[entity] = values
    return out


def format_value(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


async def alter(store: MetadataStore, entity: Entity, changes: dict[str, float | None]) -> None:
    """Set (a number) or remove (None) quotas of `entity`, keeping the znode's other keys (SCRAM
    credentials), then announce the change."""
    config = await read_entity_config(store, znode_path(entity))
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = format_value(value)
    await write_entity_config(store, znode_path(entity), entity_path(entity), config)


class QuotaWatcher:
    """Keeps a copy of every quota current: each new /config/changes notification re-reads them all
    (quota entities are few; a notification may name a user, a client or a broker)."""

    def __init__(self, store: MetadataStore, listener: Callable[[Quotas], None]) -> None:
        self.store = store
        self.listener = listener
        self.quotas: Quotas = {}
        self._tasks = TaskSet(log, "Quota refresh", expected=(StoreError,))

    async def start(self) -> None:
        await self.store.ensure_path(zn.CONFIG_CHANGES)
        await self._reload()

    def close(self) -> None:
        self._tasks.close()

    def _fire(self, _ev: WatchEvent) -> None:
        self._tasks.spawn(self._reload())

    async def _reload(self) -> None:
        await self.store.get_children(zn.CONFIG_CHANGES, watch=self._fire)
        quotas = await read_all(self.store)
        if quotas != self.quotas:
            self.quotas = quotas
            self.listener(quotas)
