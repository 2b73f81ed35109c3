"""A topic as a config resource of a confluent-kafka AdminClient: to describe, or to alter incrementally."""

from __future__ import annotations

from collections.abc import Iterable

from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType


def topic_resource(name: str, changes: Iterable[tuple[str, str | None]] | None = None) -> ConfigResource:
    """The topic `name` for DescribeConfigs, or for IncrementalAlterConfigs with `changes`, in their order:
    each key SET to its value, or DELETEd (back to its default) where the value is None."""
    if changes is None:
        return ConfigResource(ResourceType.TOPIC, name)
    entries = [ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET if value is not None
                           else AlterConfigOpType.DELETE)
               for key, value in changes]
    return ConfigResource(ResourceType.TOPIC, name, incremental_configs=entries)
