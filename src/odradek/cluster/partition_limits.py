"""Partition limits of topic administration, under KIP-578's names: ``max.partitions`` (partitions in
the cluster) and ``max.broker.partitions`` (partition replicas hosted by one broker). They are checked
before an assignment is computed or anything is written, so asking for a million partitions costs a
few comparisons: a count that no cluster under these limits could hold is INVALID_PARTITIONS, a count
that does not fit beside the partitions that exist is POLICY_VIOLATION."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from odradek.protocol.errors import ErrorCode, KafkaError


@dataclass(frozen=True, slots=True)
class PartitionLimits:
    max_partitions: int
    max_broker_partitions: int

    def check_size(self, partitions: int, replication_factor: int | None, live_brokers: int) -> None:
        """A topic of `partitions` partitions must be possible at all: positive, within max.partitions,
        and (when the broker assigns the replicas: `replication_factor` given) a replication factor the
        live brokers can hold with replicas within max.broker.partitions on each."""
        if partitions <= 0:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
        if partitions > self.max_partitions:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             f"Number of partitions {partitions} is larger than max.partitions "
                             f"({self.max_partitions}).")
        if replication_factor is None:
            return
        if replication_factor <= 0:
            raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
        if replication_factor > live_brokers:
            raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             f"Replication factor: {replication_factor} larger than available brokers: "
                             f"{live_brokers}.")
        if partitions * replication_factor > self.max_broker_partitions * live_brokers:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             f"{partitions} partitions with replication factor {replication_factor} need more "
                             f"replicas than {live_brokers} broker(s) may host (max.broker.partitions="
                             f"{self.max_broker_partitions}).")

    def check_room(self, existing: Iterable[Mapping[int, Sequence[int]]], live: Sequence[int], added: int,
                   replication_factor: int, assignment: Mapping[int, Sequence[int]] | None = None) -> None:
        """`added` new partitions must fit beside the `existing` topics' assignments. With an explicit
        `assignment` the replicas per broker are counted exactly; otherwise each live broker is taken
        to receive its even share, rounded up."""
        total = 0
        per_broker: Counter[int] = Counter()
        for topic in existing:
            total += len(topic)
            for replicas in topic.values():
                per_broker.update(replicas)
        if total + added > self.max_partitions:
            raise KafkaError(ErrorCode.POLICY_VIOLATION,
                             f"Adding {added} partitions would exceed max.partitions ({self.max_partitions}): "
                             f"the cluster has {total}.")
        if assignment is not None:
            new: Counter[int] = Counter(b for replicas in assignment.values() for b in replicas)
        else:
            share = -(-added * replication_factor // max(len(live), 1))
            new = Counter(dict.fromkeys(live, share))
        for broker, count in sorted(new.items()):
            if per_broker[broker] + count > self.max_broker_partitions:
                raise KafkaError(ErrorCode.POLICY_VIOLATION,
                                 f"Adding {count} partition replicas to broker {broker} would exceed "
                                 f"max.broker.partitions ({self.max_broker_partitions}): it hosts "
                                 f"{per_broker[broker]}.")
