"""The replica manager: keeps this broker's Partition objects in step with the partition states in the
metadata cache (become leader or follower, create or delete logs), and is what the produce and fetch
handlers talk to."""

from __future__ import annotations

import logging

from odradek.cluster.metadata import MetadataCache, TopicMeta
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.replication.partition import Partition
from odradek.storage.manager import LogManager

log = logging.getLogger("odradek.replica")


class ReplicaManager:
    def __init__(self, broker_id: int, logs: LogManager, metadata: MetadataCache, default_min_isr: int = 1) -> None:
        self.broker_id = broker_id
        self.logs = logs
        self.metadata = metadata
        self.default_min_isr = default_min_isr
        self.partitions: dict[tuple[str, int], Partition] = {}
        metadata.partition_listeners.append(self._on_partition_state)
        metadata.topic_removed_listeners.append(self._on_topic_removed)
        metadata.config_listeners.append(self._on_config)

    def start(self) -> None:
        """Apply the states already in the cache (the listeners catch what changes later)."""
        for name, meta in list(self.metadata.topics.items()):
            for p in meta.states:
                self._on_partition_state(name, p, meta)

    def get(self, topic: str, partition: int) -> Partition | None:
        return self.partitions.get((topic, partition))

    def leader_partition(self, topic: str, partition: int) -> Partition:
        """The partition if this broker leads it; otherwise the Kafka error a client should see."""
        p = self.partitions.get((topic, partition))
        if p is not None and p.is_leader:
            return p
        meta = self.metadata.topics.get(topic)
        if meta is None or partition not in meta.assignment:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition} does not exist")
        st = meta.states.get(partition)
        if st is None or st.leader < 0:
            raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{topic}-{partition} has no leader")
        raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"broker {self.broker_id} does not lead {topic}-{partition}")

    def _min_isr(self, meta: TopicMeta) -> int:
        try:
            return int(meta.config.get("min.insync.replicas", self.default_min_isr))
        except ValueError:
            return self.default_min_isr

    def _on_partition_state(self, topic: str, index: int, meta: TopicMeta) -> None:
        state = meta.states.get(index)
        replicas = meta.assignment.get(index, [])
        if state is None or self.broker_id not in replicas:
            return
        part = self.partitions.get((topic, index))
        if part is None:
            log_ = self.logs.get_or_create_log(topic, index, meta.config)
            part = Partition(topic, index, self.broker_id, log_)
            self.partitions[(topic, index)] = part
        part.min_insync_replicas = self._min_isr(meta)
        if state.leader == self.broker_id:
            part.make_leader(state.leader_epoch, state.isr, replicas)
        else:
            part.make_follower(state.leader, state.leader_epoch, state.isr, replicas)

    def _on_topic_removed(self, topic: str, meta: TopicMeta) -> None:
        for key in [k for k in self.partitions if k[0] == topic]:
            part = self.partitions.pop(key)
            part.make_follower(-1, part.leader_epoch, [], [])
            self.logs.delete_log(topic, key[1])
        log.info("Deleted logs of topic %s on broker %d", topic, self.broker_id)

    def _on_config(self, topic: str, meta: TopicMeta) -> None:
        self.logs.update_topic_config(topic, meta.config)
        for (t, _), part in self.partitions.items():
            if t == topic:
                part.min_insync_replicas = self._min_isr(meta)
