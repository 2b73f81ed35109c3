"""Group configs (Kafka's GROUP config resource, type 32: KIP-848, KIP-932 and KIP-1071 groups) in the
metadata store, laid out as Kafka lays out a topic's configs in ZooKeeper: `/config/groups/<group id>`
holding {"version":1,"config":{...}} (the id URL-encoded as Kafka's Sanitizer encodes quota entity names),
each write or deletion announced by a `/config/changes/config_change_N` notification with entity_path
"groups/<group id>". Kafka keeps group configs only in KRaft's metadata log; this is the layout a
ZooKeeper-mode Kafka would have given them.

GroupConfigs is every broker's copy: it reads every group's configs at start-up, then follows the change
notifications (each new one that names a group re-reads that group; notifications are purged only after
15 minutes, and a new ZooKeeper session reads everything again), and answers the coordinators' typed look-ups: a group's
override, or the broker's current value of the key it inherits from (dynamic broker configs included).
Validation is Kafka's (GroupConfig.validate): known names, each value of its type and range, then the
bounds the broker keys set and each session timeout above its heartbeat interval.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, overload
from urllib.parse import quote, unquote

from odradek.aio import TaskSet
from odradek.cluster import znodes as zn
from odradek.cluster.broker_configs import purge_changes, read_entity_config, write_entity_config
from odradek.cluster.store import MetadataStore, NoNodeError, StoreError, WatchEvent, to_json
from odradek.config import BrokerConfig
from odradek.config_key_types import GroupIntKey, GroupStrKey
from odradek.config_keys import GROUP_CONFIG_BOUNDS, GROUP_CONFIGS, ConfigError, check_group_configs

log = logging.getLogger("odradek.metadata")

CONFIG_GROUPS = "/config/groups"
ENTITY_TYPE = "groups"


def group_entity(group_id: str) -> str:
    """The znode name of a group: its id URL-encoded (Kafka's Sanitizer: every byte but letters, digits
    and `._-` escaped, `*` too); "." and ".." (which ZooKeeper refuses as names) escaped as well."""
    name = quote(group_id, safe="")
    return name.replace(".", "%2E") if name in (".", "..") else name


def group_of(entity: str) -> str:
    return unquote(entity)


def group_config_path(group_id: str) -> str:
    return f"{CONFIG_GROUPS}/{group_entity(group_id)}"


def check_group_id(group_id: str | None) -> str:
    """A group config resource must name a group (Kafka: "Default group resources are not allowed.")."""
    if not group_id:
        raise ConfigError("Default group resources are not allowed.")
    return group_id


def parse_group_configs(config: BrokerConfig, overrides: Mapping[str, str]) -> dict[str, Any]:
    """Kafka's GroupConfig.validate over a group's overrides: an unknown name first, then each value by its
    key's type and validator, then the rules across keys on every group key's value (the overrides over
    the broker's). Returns the typed overrides; raises ConfigError in Kafka's words."""
    for name in overrides:
        if name not in GROUP_CONFIGS:
            raise ConfigError(f"Unknown group config name: {name}")
    typed = {name: GROUP_CONFIGS[name].parse(raw) for name, raw in overrides.items()}
    check_group_configs({**inherited(config), **typed}, config.value)
    return typed


def inherited(config: BrokerConfig) -> dict[str, Any]:
    """Each group key's value when the group does not override it (see `inherited_value`)."""
    return {name: inherited_value(config, name) for name in GROUP_CONFIGS}


def inherited_value(config: BrokerConfig, name: str) -> Any:
    """A group key's value for a group that does not override it: the broker's current value of the key it
    inherits from, within the bounds the broker keys set (Kafka refuses to start with a value outside
    them; Odradek's coordinators clamp it, as here), or the group key's own default when it inherits from
    none."""
    key = GROUP_CONFIGS[name]
    if key.server_default is None:
        return key.default_value
    value = _broker_int(config, key.server_default)
    lower, upper = GROUP_CONFIG_BOUNDS.get(name, (None, None))
    if upper is not None:
        value = min(value, _broker_int(config, upper))
    if lower is not None:
        value = max(value, _broker_int(config, lower))
    return value


def _broker_int(config: BrokerConfig, name: str) -> int:
    value = config.value(name)  # every broker key a group key inherits from, or is bounded by, is an int
    assert isinstance(value, int), name
    return value


async def read_group_config(store: MetadataStore, group_id: str) -> dict[str, str]:
    """The overrides stored for a group ({} when it has none)."""
    return await read_entity_config(store, group_config_path(group_id))


async def write_group_config(store: MetadataStore, group_id: str, config: dict[str, str]) -> None:
    """Replace a group's overrides (none left: its znode is deleted), then announce the change."""
    if config:
        await write_entity_config(store, group_config_path(group_id), f"{ENTITY_TYPE}/{group_entity(group_id)}",
                                  config)
        return
    await delete_group_config(store, group_id)


async def delete_group_config(store: MetadataStore, group_id: str) -> bool:
    """Delete a group's configs (DeleteGroups, or its last override deleted) and announce it; False when
    it had none."""
    try:
        await store.delete(group_config_path(group_id))
    except NoNodeError:
        return False
    notice = to_json(zn.config_change_json(f"{ENTITY_TYPE}/{group_entity(group_id)}"))
    await store.create(f"{zn.CONFIG_CHANGES}/{zn.CONFIG_CHANGE_PREFIX}", notice, makepath=True, sequence=True)
    await purge_changes(store, zn.now_ms())
    return True


def _sequence(child: str) -> int | None:
    if not child.startswith(zn.CONFIG_CHANGE_PREFIX):
        return None
    digits = child[len(zn.CONFIG_CHANGE_PREFIX):]
    return int(digits) if digits.isdigit() else None


class GroupConfigs:
    """A broker's copy of every group's configs, kept current from the store, and the typed look-up the
    group coordinators make: `value(group_id, "consumer.session.timeout.ms")` is the group's override or
    the broker's current `group.consumer.session.timeout.ms`."""

    def __init__(self, store: MetadataStore, config: BrokerConfig) -> None:
        self.store = store
        self.config = config
        self._raw: dict[str, dict[str, str]] = {}  # group id -> its stored overrides
        self._typed: dict[str, dict[str, Any]] = {}  # group id -> the overrides parsed
        self._last = -1  # the newest change notification seen
        self._tasks = TaskSet(log, "Group config refresh", expected=(StoreError,))

    # ---- the look-ups ----------------------------------------------------------------------------
    @overload
    def value(self, group_id: str, name: GroupIntKey) -> int: ...
    @overload
    def value(self, group_id: str, name: GroupStrKey) -> str: ...
    @overload
    def value(self, group_id: str, name: str) -> object: ...

    def value(self, group_id: str, name: str) -> object:
        """The value of group config `name` for `group_id`: its override, else the broker's current value
        of the key it inherits from (or the key's default when it inherits from none)."""
        override = self._typed.get(group_id, {})
        if name in override:
            return override[name]
        return inherited_value(self.config, name)

    def overrides(self, group_id: str) -> dict[str, str]:
        """The group's stored overrides, as stored."""
        return dict(self._raw.get(group_id, {}))

    def groups(self) -> list[str]:
        """Every group with at least one override."""
        return sorted(self._raw)

    def check(self, group_id: str, overrides: Mapping[str, str]) -> dict[str, Any]:
        """Validate a group's would-be overrides as Kafka does (ConfigError in Kafka's words)."""
        check_group_id(group_id)
        return parse_group_configs(self.config, overrides)

    # ---- changing them ---------------------------------------------------------------------------
    async def write(self, group_id: str, overrides: dict[str, str]) -> None:
        """Store a group's overrides (validated by `check`), none left deleting them; this broker's copy
        follows at once, every other broker's from the notification."""
        await write_group_config(self.store, group_id, overrides)
        await self.refresh(group_id)

    async def delete(self, group_id: str) -> bool:
        """Delete a group's configs (the group was deleted); False when it had none."""
        deleted = await delete_group_config(self.store, group_id)
        self._forget(group_id)
        return deleted

    # ---- following the store ---------------------------------------------------------------------
    async def start(self) -> None:
        """Read every group's configs and watch the change notifications (again after a new session)."""
        await self.store.ensure_path(zn.CONFIG_CHANGES)
        children = await self.store.get_children(zn.CONFIG_CHANGES, watch=self._fire)
        self._last = max((s for s in map(_sequence, children) if s is not None), default=-1)
        await self._read_all()

    def close(self) -> None:
        self._tasks.close()

    async def refresh(self, group_id: str) -> None:
        """Re-read one group now (after a write of our own, before its notification arrives)."""
        await self._read_group(group_id)

    def _fire(self, _ev: WatchEvent) -> None:
        self._tasks.spawn(self._follow())

    async def _follow(self) -> None:
        children = await self.store.get_children(zn.CONFIG_CHANGES, watch=self._fire)
        new = sorted((s, c) for c in children if (s := _sequence(c)) is not None and s > self._last)
        if not new:
            return
        self._last = new[-1][0]
        for _seq, child in new:
            try:
                data, _ = await self.store.get_json(f"{zn.CONFIG_CHANGES}/{child}")
            except (NoNodeError, StoreError):
                continue
            entity = str(data.get("entity_path", "")) if isinstance(data, dict) else ""
            kind, _, name = entity.partition("/")
            if kind == ENTITY_TYPE and name:
                await self._read_group(group_of(name))

    async def _read_all(self) -> None:
        try:
            entities = await self.store.get_children(CONFIG_GROUPS)
        except NoNodeError:
            entities = []
        groups = {group_of(e) for e in entities}
        for gone in set(self._raw) - groups:
            self._forget(gone)
        for group in sorted(groups):
            await self._read_group(group)

    async def _read_group(self, group_id: str) -> None:
        try:
            raw = await read_group_config(self.store, group_id)
        except StoreError as exc:
            log.warning("Ignoring malformed group config %s: %s", group_config_path(group_id), exc)
            return
        if not raw:
            self._forget(group_id)
            return
        typed: dict[str, Any] = {}
        for name, text in raw.items():
            key = GROUP_CONFIGS.get(name)
            if key is None:
                log.warning("Ignoring unknown config %s of group %s", name, group_id)
                continue
            try:
                typed[name] = key.parse(text)
            except ConfigError as exc:
                log.warning("Ignoring config of group %s: %s", group_id, exc)
        self._raw[group_id], self._typed[group_id] = raw, typed

    def _forget(self, group_id: str) -> None:
        self._raw.pop(group_id, None)
        self._typed.pop(group_id, None)
