"""Topic administration through the metadata store, from any broker: the znode writes behind CreateTopics,
DeleteTopics, CreatePartitions and topic config changes. The controller acts on what is written here."""

from __future__ import annotations

from odradek.cluster import znodes as zn
from odradek.cluster.store import MetadataStore, NodeExistsError, NoNodeError, to_json
from odradek.protocol.errors import ErrorCode, KafkaError


async def create_topic(
    store: MetadataStore, name: str, assignment: dict[int, list[int]], config: dict[str, str]
) -> bytes:
    """Write the config then the assignment (Kafka's order); returns the new topic id."""
    if await store.exists(zn.topic_path(name)) is not None:
        raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    await _write_config(store, name, config)
    topic = zn.TopicAssignment(assignment)
    try:
        await store.create(zn.topic_path(name), to_json(topic.to_json()), makepath=True)
    except NodeExistsError:
        raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.") from None
    return topic.topic_id


async def _write_config(store: MetadataStore, name: str, config: dict[str, str]) -> None:
    path = zn.topic_config_path(name)
    data = to_json(zn.config_json(config))
    try:
        await store.set(path, data)
    except NoNodeError:
        await store.create(path, data, makepath=True)


async def set_topic_config(store: MetadataStore, name: str, config: dict[str, str]) -> None:
    if await store.exists(zn.topic_path(name)) is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
    await _write_config(store, name, config)


async def mark_topic_for_deletion(store: MetadataStore, name: str) -> None:
    if await store.exists(zn.topic_path(name)) is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
    try:
        await store.create(f"{zn.DELETE_TOPICS}/{name}", b"", makepath=True)
    except NodeExistsError:
        pass


async def add_partitions(store: MetadataStore, name: str, new: dict[int, list[int]]) -> None:
    """Append partitions to the topic's assignment with a conditional write."""
    try:
        data, stat = await store.get_json(zn.topic_path(name))
    except NoNodeError:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.") from None
    topic = zn.TopicAssignment.from_json(data)
    topic.partitions.update(new)
    await store.set(zn.topic_path(name), to_json(topic.to_json()), version=stat.version)
