"""What a cluster is described as, whoever asks: brokers (with their log dirs), topics and their
partitions, topic configs, consumer groups with their members and partitions, and Kafka's names of the
group states (librdkafka reports an enum)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import ConsumerGroupState

TP = tuple[str, int]

# Kafka's names of the classic group states, and librdkafka's enum for each.
STATES: dict[str, ConsumerGroupState] = {
    "PreparingRebalance": ConsumerGroupState.PREPARING_REBALANCING,
    "CompletingRebalance": ConsumerGroupState.COMPLETING_REBALANCING,
    "Stable": ConsumerGroupState.STABLE,
    "Dead": ConsumerGroupState.DEAD,
    "Empty": ConsumerGroupState.EMPTY,
}
STATE_NAMES: dict[ConsumerGroupState, str] = {v: k for k, v in STATES.items()}


def state_name(description: Any) -> str:
    """Kafka's name of a group's state ('Stable', 'Empty', ...); a missing description is 'Dead'."""
    if description is None:
        return "Dead"
    state = getattr(description, "state", None)
    return STATE_NAMES.get(state, "Unknown") if state is not None else "Unknown"


@dataclass
class LogDir:
    path: str
    error: str | None
    partitions: int
    size: int


@dataclass
class Broker:
    id: int
    host: str
    port: int
    rack: str | None
    controller: bool
    log_dirs: list[LogDir] | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass
class Partition:
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    size: int | None = None
    start: int | None = None
    end: int | None = None
    error: str | None = None

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def messages(self) -> int | None:
        return None if self.start is None or self.end is None else self.end - self.start


@dataclass
class Topic:
    name: str
    partitions: list[Partition]
    internal: bool = False
    error: str | None = None

    @property
    def under_replicated(self) -> int:
        return sum(p.under_replicated for p in self.partitions)

    @property
    def replication_factor(self) -> int:
        return max((len(p.replicas) for p in self.partitions), default=0)

    @property
    def size(self) -> int | None:
        sizes = [p.size for p in self.partitions if p.size is not None]
        return sum(sizes) if sizes else None


@dataclass
class Config:
    name: str
    value: str | None
    source: str
    default: bool
    read_only: bool
    sensitive: bool


@dataclass
class GroupSummary:
    id: str
    state: str
    members: int | None = None
    lag: int | None = None
    kind: str = "Consumer"  # Kafka's group type names: Classic, Consumer, Share


@dataclass
class SharePartitionRow:
    """One partition of a share group: its start offset and lag (None where the broker gave none)."""

    topic: str
    partition: int
    start_offset: int | None
    lag: int | None


@dataclass
class Member:
    id: str
    client_id: str
    host: str
    assignment: list[TP]


@dataclass
class GroupPartition:
    topic: str
    partition: int
    committed: int | None
    end: int | None
    member: str | None

    @property
    def lag(self) -> int | None:
        if self.committed is None or self.end is None:
            return None
        return max(self.end - self.committed, 0)


@dataclass
class Group:
    id: str
    state: str
    coordinator: str
    assignor: str
    members: list[Member] = field(default_factory=list)
    partitions: list[GroupPartition] = field(default_factory=list)

    @property
    def lag(self) -> int:
        return sum(p.lag or 0 for p in self.partitions)

    @property
    def empty(self) -> bool:
        return self.state in ("Empty", "Dead")
