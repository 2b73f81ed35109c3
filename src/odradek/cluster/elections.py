"""The controller's decisions as pure functions: preferred and unclean leader election, the leader
imbalance check behind auto.leader.rebalance.enable, the replica sets of a partition reassignment
(KIP-455), and the JSON of the admin znodes and tool files that carry these requests.

Nothing here touches the store; the controller reads the znodes, asks these functions, and writes the
answer with conditional writes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from odradek.protocol.errors import ErrorCode

TopicPartition = tuple[str, int]

PREFERRED, UNCLEAN = 0, 1


def tp_str(tp: TopicPartition) -> str:
    """Kafka's TopicPartition.toString: `topic-partition`."""
    return f"{tp[0]}-{tp[1]}"


# ---- leader elections ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Election:
    """The outcome for one partition: a new leader (error NONE), or why none was elected."""

    leader: int = -1
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    unclean: bool = False  # the leader comes from outside the ISR: acknowledged records may be lost

    @property
    def elected(self) -> bool:
        return self.error == ErrorCode.NONE and self.leader >= 0


def preferred_election(tp: TopicPartition, replicas: list[int], leader: int, isr: list[int],
                       live: set[int]) -> Election:
    """Kafka's PreferredReplicaPartitionLeaderElectionStrategy: the first assigned replica leads,
    provided it is alive and in sync."""
    if not replicas:
        return Election(error=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, message="The partition does not exist.")
    preferred = replicas[0]
    if leader == preferred:
        return Election(error=ErrorCode.ELECTION_NOT_NEEDED, message="Leader election not needed for topic partition.")
    if preferred not in live or preferred not in isr:
        return Election(
            error=ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
            message=f"Failed to elect leader for partition {tp_str(tp)} under strategy "
                    f"PreferredReplicaPartitionLeaderElectionStrategy: preferred replica {preferred} is "
                    f"{'not in the ISR ' + str(isr) if preferred in live else 'not alive'}",
        )
    return Election(leader=preferred)


def offline_election(replicas: list[int], isr: list[int], live: set[int], allow_unclean: bool) -> Election:
    """Kafka's OfflinePartitionLeaderElectionStrategy: the first live in-sync replica in assignment
    order; failing that, when unclean election is allowed, the first live replica."""
    for r in replicas:
        if r in live and r in isr:
            return Election(leader=r)
    if allow_unclean:
        for r in replicas:
            if r in live:
                return Election(leader=r, unclean=True)
    return Election(error=ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)


def unclean_election(tp: TopicPartition, replicas: list[int], leader: int, isr: list[int],
                     live: set[int]) -> Election:
    """ElectLeaders with election_type UNCLEAN: only for partitions without a live leader; an in-sync
    replica is still preferred, otherwise any live replica (with possible data loss)."""
    if not replicas:
        return Election(error=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, message="The partition does not exist.")
    if leader >= 0 and leader in live:
        return Election(error=ErrorCode.ELECTION_NOT_NEEDED, message="Leader election not needed for topic partition.")
    result = offline_election(replicas, isr, live, allow_unclean=True)
    if not result.elected:
        return Election(
            error=ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
            message=f"Failed to elect leader for partition {tp_str(tp)} under strategy "
                    f"OfflinePartitionLeaderElectionStrategy(true): no replica of {replicas} is alive",
        )
    return result


# ---- auto leader rebalance ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionView:
    """What the rebalance check needs of one partition."""

    replicas: list[int]
    leader: int
    isr: list[int]
    reassigning: bool = False


def imbalance(partitions: Mapping[TopicPartition, PartitionView]) -> dict[int, tuple[int, int]]:
    """Per preferred broker: (partitions it does not lead, partitions it is preferred for)."""
    counts: dict[int, list[int]] = {}
    for view in partitions.values():
        if not view.replicas:
            continue
        c = counts.setdefault(view.replicas[0], [0, 0])
        c[1] += 1
        if view.leader != view.replicas[0]:
            c[0] += 1
    return {b: (c[0], c[1]) for b, c in counts.items()}


def imbalance_ratios(partitions: Mapping[TopicPartition, PartitionView]) -> dict[int, float]:
    """Kafka's leader imbalance ratio of each broker: not-led / preferred-for."""
    return {b: (off / total if total else 0.0) for b, (off, total) in imbalance(partitions).items()}


def rebalance_candidates(partitions: Mapping[TopicPartition, PartitionView], live: set[int],
                         percentage: int) -> list[TopicPartition]:
    """Partitions to hand back to their preferred replica: those of brokers whose imbalance ratio
    exceeds `percentage`, whose preferred replica is alive and in sync, and that are not being
    reassigned."""
    ratios = imbalance_ratios(partitions)
    over = {b for b, ratio in ratios.items() if ratio > percentage / 100}
    out = []
    for tp, view in sorted(partitions.items()):
        if not view.replicas or view.reassigning:
            continue
        preferred = view.replicas[0]
        if preferred in over and view.leader != preferred and preferred in live and preferred in view.isr:
            out.append(tp)
    return out


# ---- reassignment (KIP-455) --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """A partition's replica set while (or when not) being reassigned: `replicas` is the full set
    (target first, then the original replicas that are leaving), `adding` = target - original,
    `removing` = original - target."""

    replicas: list[int]
    adding: list[int] = field(default_factory=list)
    removing: list[int] = field(default_factory=list)

    @property
    def reassigning(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def origin(self) -> list[int]:
        """The replicas before the reassignment started (what a cancellation reverts to)."""
        return [r for r in self.replicas if r not in self.adding]

    @property
    def target(self) -> list[int]:
        """The replicas once the reassignment completes."""
        return [r for r in self.replicas if r not in self.removing]

    def reassign_to(self, target: list[int]) -> ReplicaAssignment:
        """A new reassignment from the original replicas to `target` (replacing any ongoing one)."""
        origin = self.origin
        full = list(dict.fromkeys([*target, *origin]))
        adding = [r for r in target if r not in origin]
        removing = [r for r in origin if r not in target]
        return ReplicaAssignment(full, adding, removing)

    def cancelled(self) -> ReplicaAssignment:
        return ReplicaAssignment(self.origin)


def validate_target(target: list[int] | None, current: ReplicaAssignment, live: set[int],
                    allow_rf_change: bool = True) -> tuple[ErrorCode, str] | None:
    """Kafka's checks of a requested reassignment; None when it may go ahead."""
    if target is None:
        if not current.reassigning:
            return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No reassignment is in progress for this partition."
        return None
    if not target:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Empty replica list specified in partition reassignment."
    if len(set(target)) != len(target):
        return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Duplicate replica ids in partition reassignment replica list: {target}")
    if any(r < 0 for r in target):
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Invalid broker id in replica list: {target}"
    if not allow_rf_change and len(target) != len(current.origin):
        return (ErrorCode.INVALID_REPLICATION_FACTOR,
                f"The replication factor is changed from {len(current.origin)} to {len(target)}")
    adding = [r for r in target if r not in current.origin]
    if not set(adding) <= live:
        return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Replica assignment has brokers that are not alive. Replica list: {adding}, "
                f"live broker list: {sorted(live)}")
    return None


# ---- JSON of admin znodes and tool files ---------------------------------------------------------------


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} must be an integer, got {json_repr(value)}")
    return value


def json_repr(value: Any) -> str:
    import json

    return json.dumps(value)


def _partitions_list(data: Any, what: str) -> list[Any]:
    if not isinstance(data, dict):
        raise ValueError(f"{what} is not a JSON object")
    version = data.get("version", 1)
    if version != 1:
        raise ValueError(f"Not supported version field value {json_repr(version)}")
    parts = data.get("partitions")
    if parts is None:
        raise ValueError(f'{what} is missing "partitions" field')
    if not isinstance(parts, list):
        raise ValueError(f'"partitions" of {what} must be a JSON array')
    return parts


def parse_election_json(data: Any, what: str = "Replica election data") -> list[TopicPartition]:
    """{"partitions": [{"topic": "t", "partition": 0}, ...]} -> [("t", 0), ...]; duplicates refused."""
    out: list[TopicPartition] = []
    for p in _partitions_list(data, what):
        if not isinstance(p, dict) or not isinstance(p.get("topic"), str):
            raise ValueError(f"{what}: each partition needs a string \"topic\" and an integer \"partition\"")
        out.append((p["topic"], _int(p.get("partition"), '"partition"')))
    dups = duplicates(out)
    if dups:
        raise ValueError(f"{what} contains duplicate partitions: {','.join(tp_str(tp) for tp in dups)}")
    return out


def election_json(partitions: Iterable[TopicPartition]) -> dict[str, Any]:
    return {"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]}


ANY_LOG_DIR = "any"


def parse_reassignment_json(data: Any) -> list[tuple[TopicPartition, list[int]]]:
    """Kafka's reassignment JSON (version 1; `log_dirs`, if present, must match `replicas` in size: see
    `parse_replica_log_dirs`)."""
    return [(tp, replicas) for tp, replicas, _ in _reassignment_entries(data)]


def parse_replica_log_dirs(data: Any) -> dict[tuple[str, int, int], str]:
    """The `log_dirs` of Kafka's reassignment JSON: (topic, partition, broker) -> the log dir its replica
    must move to, for every entry that is not "any" (no preference)."""
    return {(tp[0], tp[1], broker): d for tp, replicas, dirs in _reassignment_entries(data)
            for broker, d in zip(replicas, dirs, strict=True) if d != ANY_LOG_DIR}


def _reassignment_entries(data: Any) -> list[tuple[TopicPartition, list[int], list[str]]]:
    out: list[tuple[TopicPartition, list[int], list[str]]] = []
    for p in _partitions_list(data, "Partition reassignment data"):
        if not isinstance(p, dict) or not isinstance(p.get("topic"), str):
            raise ValueError('Each partition needs a string "topic", an integer "partition" and "replicas"')
        tp = (p["topic"], _int(p.get("partition"), '"partition"'))
        replicas = p.get("replicas")
        if not isinstance(replicas, list):
            raise ValueError(f'"replicas" of partition {tp_str(tp)} must be a JSON array')
        replicas = [_int(r, '"replicas"') for r in replicas]
        log_dirs = p.get("log_dirs")
        if log_dirs is None:
            log_dirs = [ANY_LOG_DIR] * len(replicas)
        if not isinstance(log_dirs, list) or not all(isinstance(d, str) for d in log_dirs):
            raise ValueError(f'"log_dirs" of partition {tp_str(tp)} must be a JSON array of strings')
        if len(log_dirs) != len(replicas):
            raise ValueError(f"Size of replicas list {replicas} is different from size of log dirs list "
                             f"{log_dirs} for partition {tp_str(tp)}")
        out.append((tp, replicas, log_dirs))
    return out


def validate_reassignment_entries(entries: list[tuple[TopicPartition, list[int]]]) -> None:
    """The checks of kafka-reassign-partitions --execute on its JSON file."""
    if not entries:
        raise ValueError("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in entries):
        raise ValueError("Partition replica list cannot be empty")
    dups = duplicates([tp for tp, _ in entries])
    if dups:
        raise ValueError("Partition reassignment contains duplicate topic partitions: "
                         + ",".join(tp_str(tp) for tp in dups))
    bad = [(tp, duplicates(r)) for tp, r in entries if duplicates(r)]
    if bad:
        msg = ". ".join(f"{tp_str(tp)} contains multiple entries for {','.join(map(str, d))}" for tp, d in bad)
        raise ValueError(f"Partition replica lists may not contain duplicate entries: {msg}")


def reassignment_json(assignment: Mapping[TopicPartition, list[int]]) -> dict[str, Any]:
    """Kafka's formatAsReassignmentJson: sorted by topic then partition, log_dirs all "any"."""
    return {
        "version": 1,
        "partitions": [
            {"topic": t, "partition": p, "replicas": list(r), "log_dirs": ["any"] * len(r)}
            for (t, p), r in sorted(assignment.items())
        ],
    }


def parse_topics_json(data: Any) -> list[str]:
    """--topics-to-move-json-file: {"topics": [{"topic": "foo"}], "version": 1}."""
    if not isinstance(data, dict):
        raise ValueError("The input string is not a valid JSON")
    version = data.get("version", 1)
    if version != 1:
        raise ValueError(f"Not supported version field value {json_repr(version)}")
    topics = data.get("topics") or []
    if not isinstance(topics, list):
        raise ValueError('"topics" must be a JSON array')
    out = []
    for t in topics:
        if not isinstance(t, dict) or not isinstance(t.get("topic"), str):
            raise ValueError('Each entry of "topics" needs a string "topic"')
        out.append(t["topic"])
    dups = duplicates(out)
    if dups:
        raise ValueError(f"List of topics to reassign contains duplicate entries: {','.join(dups)}")
    return out


def duplicates(items: Iterable[Any]) -> list[Any]:
    seen: set[Any] = set()
    dups: list[Any] = []
    for x in items:
        if x in seen and x not in dups:
            dups.append(x)
        seen.add(x)
    return dups
