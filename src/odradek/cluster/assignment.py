"""Replica assignment and topic-name rules, as Kafka applies them (rack-unaware)."""

from __future__ import annotations

import random
import re

from odradek.protocol.errors import ErrorCode, KafkaError

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__share_group_state", "__transaction_state"})


def validate_topic_name(name: str) -> None:
    """Kafka 4.4's rules and words (Topic.validate)."""
    reason = None
    if not name:
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name) > MAX_TOPIC_NAME_LENGTH:
        reason = f"the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}"
    elif not _LEGAL.match(name):
        reason = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    if reason is not None:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: {reason}")


def assign_replicas(
    brokers: list[int],
    num_partitions: int,
    replication_factor: int,
    start_index: int | None = None,
    start_partition: int = 0,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Spread partitions round-robin from a random start; later replicas follow at a shift that grows
    every time the partitions wrap around the brokers, so no broker holds two replicas of a partition."""
    if num_partitions <= 0:
        raise KafkaError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
    n = len(brokers)
    if replication_factor > n:
        raise KafkaError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Replication factor: {replication_factor} larger than available brokers: {n}.",
        )
    ordered = sorted(brokers)
    rng = rng or random.Random()
    first_start = rng.randrange(n) if start_index is None else start_index
    shift = rng.randrange(n) if start_index is None else start_index
    result: dict[int, list[int]] = {}
    for pid in range(start_partition, start_partition + num_partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        first = (pid + first_start) % n
        replicas = [ordered[first]]
        for j in range(replication_factor - 1):
            step = 1 + (shift + j) % (n - 1)
            replicas.append(ordered[(first + step) % n])
        result[pid] = replicas
    return result


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """`--replica-assignment 0:1,1:2` -> {0: [0, 1], 1: [1, 2]} (partition order by position)."""
    result: dict[int, list[int]] = {}
    for pid, group in enumerate(text.split(",")):
        ids = [int(x) for x in group.split(":") if x.strip()]
        if len(set(ids)) != len(ids):
            raise ValueError(f"Duplicate replica assignment found: {group}")
        result[pid] = ids
    return result
