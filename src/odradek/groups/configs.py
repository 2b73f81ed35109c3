"""The group configs the coordinators read (GROUP config resources, KIP-848/KIP-932): the protocol they
read them through, which `odradek.cluster.group_configs.GroupConfigs` serves in the broker (a group's
override, else the broker's value), and fixed values for a coordinator built without one (unit tests)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, overload

from odradek.config_key_types import GroupIntKey, GroupStrKey


class GroupConfigLookup(Protocol):
    @overload
    def value(self, group_id: str, name: GroupIntKey) -> int: ...
    @overload
    def value(self, group_id: str, name: GroupStrKey) -> str: ...


class FixedGroupConfigs:
    """The same values for every group."""

    def __init__(self, values: Mapping[str, int | str]) -> None:
        self.values = dict(values)

    @overload
    def value(self, group_id: str, name: GroupIntKey) -> int: ...
    @overload
    def value(self, group_id: str, name: GroupStrKey) -> str: ...

    def value(self, group_id: str, name: str) -> int | str:
        return self.values[name]


def bounded_ms(get: Callable[..., Any], kind: str, name: str) -> int:
    """The broker's `group.{kind}.{name}` (session.timeout.ms, heartbeat.interval.ms) held within its
    `group.{kind}.min.{name}` and `group.{kind}.max.{name}`, as the coordinators apply it."""
    value = int(get(f"group.{kind}.{name}"))
    return min(max(value, int(get(f"group.{kind}.min.{name}"))), int(get(f"group.{kind}.max.{name}")))


def protocol_enabled(get: Callable[..., Any], protocol: str) -> bool:
    """Whether `group.coordinator.rebalance.protocols` names `protocol` (consumer, streams, share)."""
    protocols = get("group.coordinator.rebalance.protocols")
    protocols = protocols if isinstance(protocols, list | tuple) else str(protocols).split(",")
    return protocol in [str(p).strip().lower() for p in protocols]
