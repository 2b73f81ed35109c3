"""The group configs the coordinators read (GROUP config resources, KIP-848/KIP-932): the protocol they
read them through, which `odradek.cluster.group_configs.GroupConfigs` serves in the broker (a group's
override, else the broker's value), and fixed values for a coordinator built without one (unit tests)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, overload

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
