"""The topic model of `odradek topics`: what --describe shows of a topic and its partitions, how it is
rendered, and the rules both ways of reaching a cluster apply alike: through a broker
(``--bootstrap-server``, :mod:`odradek.cli.topics`) and through ZooKeeper (``--zookeeper``,
:mod:`odradek.cli.zkadmin`). Output and error lines are Kafka TopicCommand's.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from odradek.admin_client.errors import CliError, UsageError

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__share_group_state", "__transaction_state"})
LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")
MAX_TOPIC_LENGTH = 249
MIN_ISR_KEY = "\0min.insync.replicas"  # the effective value, passed along with the overrides
COLLISION_WARNING = (
    "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') "
    "could collide. To avoid issues it is best to use either, but not both."
)


class TopicCommandError(CliError):
    """A failure while executing the command, worded like Kafka's TopicCommand."""

    def __init__(self, message: str) -> None:
        super().__init__(f"Error while executing topic command : {message}")


@dataclass
class PartitionInfo:
    """One partition as shown by --describe."""

    id: int
    leader: int
    replicas: list[int]
    isr: list[int]


@dataclass
class TopicInfo:
    """One topic as shown by --describe."""

    name: str
    topic_id: str | None
    internal: bool
    partitions: list[PartitionInfo] = field(default_factory=list)


@dataclass
class Report:
    """Which subset --describe shows."""

    overrides_only: bool = False
    under_replicated: bool = False
    unavailable: bool = False
    under_min_isr: bool = False
    at_min_isr: bool = False

    @classmethod
    def from_opts(cls, opts: argparse.Namespace) -> Report:
        return cls(
            opts.topics_with_overrides,
            opts.under_replicated_partitions,
            opts.unavailable_partitions,
            opts.under_min_isr_partitions,
            opts.at_min_isr_partitions,
        )

    @property
    def partition_filter(self) -> bool:
        return self.under_replicated or self.unavailable or self.under_min_isr or self.at_min_isr


# --- the rules both paths apply ----------------------------------------------------------------


def parse_replica_assignment(text: str) -> list[list[int]]:
    """'0:1,1:2' -> [[0, 1], [1, 2]]; duplicates within a partition are refused."""
    assignment: list[list[int]] = []
    for index, part in enumerate(text.split(",")):
        try:
            brokers = [int(b) for b in part.split(":") if b.strip() != ""]
        except ValueError:
            raise UsageError(f"Error: invalid --replica-assignment '{text}': broker ids must be integers") from None
        if not brokers:
            raise UsageError(f"Error: invalid --replica-assignment '{text}': partition {index} has no replicas")
        if len(set(brokers)) != len(brokers):
            raise UsageError(f"Error: Partition replica lists may not contain duplicate entries: {part}")
        assignment.append(brokers)
    if len({len(a) for a in assignment}) > 1:
        raise UsageError(f"Error: invalid --replica-assignment '{text}': partitions have different replica counts")
    return assignment


def topic_pattern(text: str) -> re.Pattern[str]:
    """Kafka's include-list rule: commas mean '|', blanks and surrounding quotes are dropped."""
    cleaned = text.strip().replace(",", "|").replace(" ", "").strip("\"'")
    try:
        return re.compile(cleaned)
    except re.error as exc:
        raise TopicCommandError(f"Invalid topic regular expression '{text}': {exc}") from None


def validate_topic_name(name: str) -> None:
    """Kafka's client-side topic name rules."""
    if name in ("", ".", ".."):
        raise TopicCommandError(f'Topic name "{name}" is illegal, it cannot be empty, "." or ".."')
    if len(name) > MAX_TOPIC_LENGTH:
        raise TopicCommandError(
            f'Topic name is illegal, it can\'t be longer than {MAX_TOPIC_LENGTH} characters, topic name: {name}'
        )
    if not LEGAL_TOPIC.fullmatch(name):
        raise TopicCommandError(
            f'Topic name "{name}" is illegal, it contains a character other than ASCII alphanumerics, '
            "'.', '_' and '-'"
        )


def warn_if_colliding(name: str) -> None:
    """Kafka's warning for a topic name with '.' or '_'."""
    if "." in name or "_" in name:
        print(COLLISION_WARNING)


def matching_topics(names: Iterable[str], opts: argparse.Namespace) -> list[str]:
    """Topics matching --topic (a regex), sorted; internal ones unless --exclude-internal."""
    selected = sorted(names)
    if opts.topic:
        pattern = topic_pattern(opts.topic)
        selected = [n for n in selected if pattern.fullmatch(n)]
    if opts.exclude_internal:
        selected = [n for n in selected if n not in INTERNAL_TOPICS]
    return selected


def existing_topics(names: Iterable[str], opts: argparse.Namespace) -> list[str]:
    """Matching topics; none is an error unless --if-exists."""
    selected = matching_topics(names, opts)
    if not selected and opts.topic and not opts.if_exists:
        raise TopicCommandError(f"Topic '{opts.topic}' does not exist as expected")
    return selected


# --- --describe -------------------------------------------------------------------------------


def describe_lines(info: TopicInfo, configs: dict[str, str], report: Report, live: set[int]) -> list[str]:
    """The --describe output of one topic: a header line, then one line per partition."""
    overrides = {k: v for k, v in configs.items() if k != MIN_ISR_KEY}
    lines: list[str] = []
    if report.overrides_only and not overrides:
        return lines
    if not report.partition_filter:
        lines.append(topic_line(info, overrides))
    if report.overrides_only:
        return lines
    min_isr = int(configs.get(MIN_ISR_KEY, "1") or 1)
    for part in info.partitions:
        if not report.partition_filter or _selected(part, report, live, min_isr):
            lines.append(partition_line(info.name, part))
    return lines


def topic_line(info: TopicInfo, overrides: dict[str, str]) -> str:
    replication = len(info.partitions[0].replicas) if info.partitions else 0
    fields = [f"Topic: {info.name}"]
    if info.topic_id:
        fields.append(f"TopicId: {info.topic_id}")
    fields += [
        f"PartitionCount: {len(info.partitions)}",
        f"ReplicationFactor: {replication}",
        "Configs: " + ",".join(f"{k}={v}" for k, v in sorted(overrides.items())),
    ]
    return "\t".join(fields)


def partition_line(topic: str, part: PartitionInfo) -> str:
    leader = "none" if part.leader < 0 else str(part.leader)
    return (
        f"\tTopic: {topic}\tPartition: {part.id}\tLeader: {leader}"
        f"\tReplicas: {','.join(map(str, part.replicas))}\tIsr: {','.join(map(str, part.isr))}"
    )


def _selected(part: PartitionInfo, report: Report, live: set[int], min_isr: int) -> bool:
    if report.under_replicated and len(part.isr) < len(part.replicas):
        return True
    if report.unavailable and (part.leader < 0 or part.leader not in live):
        return True
    if report.under_min_isr and len(part.isr) < min_isr:
        return True
    return report.at_min_isr and len(part.isr) == min_isr
