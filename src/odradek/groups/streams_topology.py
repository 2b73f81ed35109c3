"""The topology of a streams group (KIP-1071) and its initialization against the cluster's topics.

A Kafka Streams application sends its topology when a member joins: subtopologies, each reading source
topics (or topics matching a regex) and repartition source topics, writing repartition sink topics, and
keeping state in changelog topics. The broker validates it (`validate`: STREAMS_INVALID_TOPOLOGY) and,
on every change of the group or of the cluster's topics, configures it (`configure`, Kafka's
InternalTopicManager): the number of tasks of each subtopology (the partition count of its source topics),
the partition count of each internal topic (repartition topics: set by the client, else by the topics
that feed them or their copartition group; changelogs: one per task), and what is missing: source topics
(MISSING_SOURCE_TOPICS), internal topics (MISSING_INTERNAL_TOPICS, which the coordinator then creates),
topics that should be copartitioned but are not (INCORRECTLY_PARTITIONED_TOPICS). Tasks are assigned only
while nothing is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import re2

from odradek.cluster.assignment import validate_topic_name
from odradek.protocol.errors import ErrorCode, KafkaError

# Odradek's bounds on a topology (Kafka has none): it is configured on the event loop at every heartbeat, each
# regex matched against every topic name. Kafka Streams 4.4 sends no regex with the streams protocol.
MAX_TOPICS, MAX_REGEXES = 10_000, 16

# StreamsGroupHeartbeatResponse's status codes (Kafka's StreamsGroupHeartbeatResponse.Status)
STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS, MISSING_INTERNAL_TOPICS = 0, 1, 2, 3
SHUTDOWN_APPLICATION, ASSIGNMENT_DELAYED = 4, 5


@dataclass(frozen=True, slots=True)
class InternalTopic:
    name: str
    partitions: int  # 0: the broker decides
    replication_factor: int  # -1: the broker's default
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    changelog_topics: tuple[InternalTopic, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[InternalTopic, ...] = ()
    # indices into source_topics, source_topic_regex, repartition_source_topics
    copartition_groups: tuple[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class Topology:
    epoch: int
    subtopologies: tuple[Subtopology, ...]


@dataclass(slots=True)
class Configured:
    """A topology configured against the cluster: tasks per subtopology when ready, else what is missing."""

    task_counts: dict[str, int] = field(default_factory=dict)
    status: list[tuple[int, str]] = field(default_factory=list)
    to_create: list[InternalTopic] = field(default_factory=list)  # internal topics to create (sized)

    @property
    def ready(self) -> bool:
        return not self.status


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


@lru_cache(maxsize=256)
def source_regex(pattern: str) -> Any:
    """A source topic regex, compiled by RE2 as Kafka's RE2/J: linear time whatever the pattern (a client's
    regex runs against every topic name on the event loop), no lookaround or backreferences; raises
    re2.error for a pattern RE2 refuses."""
    return re2.compile(pattern, _RE2_OPTIONS)


def validate(topology: Topology) -> None:
    """Raise STREAMS_INVALID_TOPOLOGY for a topology no assignment can come from."""
    def bad(message: str) -> KafkaError:
        return KafkaError(ErrorCode.STREAMS_INVALID_TOPOLOGY, message)

    named = sum(len(s.source_topics) + len(s.changelog_topics) + len(s.repartition_sink_topics)
                + len(s.repartition_source_topics) for s in topology.subtopologies)
    regexes = sum(len(s.source_topic_regex) for s in topology.subtopologies)
    if named > MAX_TOPICS or regexes > MAX_REGEXES:
        raise bad(f"The topology names {named} topics and {regexes} source topic regexes; this broker takes at "
                  f"most {MAX_TOPICS} and {MAX_REGEXES}.")
    ids = [s.subtopology_id for s in topology.subtopologies]
    if len(set(ids)) != len(ids):
        raise bad("Subtopology IDs must be unique.")
    sources = {t for s in topology.subtopologies for t in s.source_topics}
    repartition_sources = {t.name for s in topology.subtopologies for t in s.repartition_source_topics}
    changelogs = [t.name for s in topology.subtopologies for t in s.changelog_topics]
    sinks = {t for s in topology.subtopologies for t in s.repartition_sink_topics}
    for s in topology.subtopologies:
        if not (s.source_topics or s.source_topic_regex or s.repartition_source_topics):
            raise bad(f"Subtopology {s.subtopology_id} does not contain any source topics.")
        for t in s.changelog_topics:
            if t.partitions != 0:
                raise bad(f"Changelog topic {t.name} must have an undefined partition count, but it is set to "
                          f"{t.partitions}.")
        for t in s.repartition_source_topics:
            if t.partitions == 0 and t.name not in sinks:
                raise bad("Failed to compute number of partitions for all repartition topics, because a "
                          "repartition source topic is never used as a sink topic.")
        for t in (*s.changelog_topics, *s.repartition_source_topics):
            try:
                validate_topic_name(t.name)
            except KafkaError as exc:
                raise bad(f"Invalid internal topic name {t.name!r} in subtopology {s.subtopology_id}: "
                          f"{exc.message}") from None
            if t.partitions < 0:
                raise bad(f"Internal topic {t.name} has a negative number of partitions.")
        for sink in s.repartition_sink_topics:
            if sink not in repartition_sources:
                raise bad(f"Subtopology {s.subtopology_id} writes to repartition topic {sink}, which no "
                          "subtopology reads as a repartition source topic.")
        for regex in s.source_topic_regex:
            try:
                source_regex(regex)
            except re2.error as exc:
                raise bad(f"Invalid source topic regex {regex!r}: {exc}") from None
        for group in s.copartition_groups:
            for indices, length in zip(group, (len(s.source_topics), len(s.source_topic_regex),
                                               len(s.repartition_source_topics)), strict=True):
                if any(i < 0 or i >= length for i in indices):
                    raise bad(f"Copartition group of subtopology {s.subtopology_id} refers to an unknown topic.")
    internal = repartition_sources | set(changelogs)
    if len(set(changelogs)) != len(changelogs) or (repartition_sources & set(changelogs)):
        raise bad("Internal topics of a topology must have distinct names.")
    if sources & internal:
        raise bad(f"Source topics {sorted(sources & internal)} are also internal topics of the topology.")


def configure(topology: Topology, partitions_of: Callable[[str], int | None], topic_names: Iterable[str]) -> Configured:
    """The topology configured against the cluster's topics: `partitions_of(name)` is a topic's partition
    count (None: no such topic), `topic_names` every topic a source regex may match."""
    out = Configured()
    names = list(topic_names)
    sources: dict[str, list[str]] = {}
    missing: list[str] = []
    for s in topology.subtopologies:
        topics = list(s.source_topics)
        for regex in s.source_topic_regex:
            pattern = source_regex(regex)
            matched = [n for n in names if pattern.fullmatch(n)]
            if not matched:
                missing.append(regex)
            topics += matched
        sources[s.subtopology_id] = topics
        missing += [t for t in s.source_topics if partitions_of(t) is None]
    if missing:
        out.status.append((MISSING_SOURCE_TOPICS, f"Source topics {', '.join(sorted(set(missing)))} are missing."))
        return out

    # repartition topics: the client's count, else that of the topics feeding them, else their copartition group's
    repartition: dict[str, int] = {}
    for s in topology.subtopologies:
        for t in s.repartition_source_topics:
            if t.partitions > 0:
                repartition[t.name] = t.partitions
    for _ in range(len(topology.subtopologies) + 1):
        changed = False
        for s in topology.subtopologies:
            upstream = [partitions_of(t) or 0 for t in sources[s.subtopology_id]]
            upstream += [repartition.get(t.name, 0) for t in s.repartition_source_topics]
            count = max(upstream, default=0)
            if count <= 0:
                continue
            for sink in s.repartition_sink_topics:
                if repartition.get(sink, 0) < count and not _fixed(topology, sink):
                    repartition[sink] = count
                    changed = True
        if not changed:
            break
    for s in topology.subtopologies:
        for group in s.copartition_groups:
            external = [partitions_of(s.source_topics[i]) or 0 for i in group[0]]
            if len(set(external)) > 1:
                out.status.append((INCORRECTLY_PARTITIONED_TOPICS,
                                   f"Following topics do not have the same number of partitions: "
                                   f"{sorted(s.source_topics[i] for i in group[0])}"))
                continue
            inner = [s.repartition_source_topics[i].name for i in group[2]]
            counts = external or [repartition.get(n, 0) for n in inner]
            count = max(counts, default=0)
            for name in inner:
                if count > 0 and not _fixed(topology, name):
                    repartition[name] = count
    if out.status:
        return out

    for s in topology.subtopologies:
        counts = [partitions_of(t) or 0 for t in sources[s.subtopology_id]]
        counts += [repartition.get(t.name, 0) for t in s.repartition_source_topics]
        out.task_counts[s.subtopology_id] = max(counts, default=0)

    wanted: list[InternalTopic] = []
    for s in topology.subtopologies:
        for t in s.repartition_source_topics:
            wanted.append(InternalTopic(t.name, repartition.get(t.name, 0), t.replication_factor, t.configs))
        for t in s.changelog_topics:
            count = t.partitions or out.task_counts[s.subtopology_id]
            wanted.append(InternalTopic(t.name, count, t.replication_factor, t.configs))
    wrong = []
    for t in wanted:
        have = partitions_of(t.name)
        if have is None:
            if t.partitions > 0:
                out.to_create.append(t)
        elif t.partitions > 0 and have != t.partitions:
            wrong.append(t.name)
    if wrong:
        out.status.append((INCORRECTLY_PARTITIONED_TOPICS,
                           f"Internal topics {', '.join(sorted(wrong))} have the wrong number of partitions."))
    missing_internal = [t.name for t in wanted if partitions_of(t.name) is None]
    if missing_internal:
        out.status.append((MISSING_INTERNAL_TOPICS,
                           f"Internal topics are missing: [{', '.join(sorted(missing_internal))}]"))
    return out


def _fixed(topology: Topology, name: str) -> bool:
    return any(t.name == name and t.partitions > 0 for s in topology.subtopologies for t in s.repartition_source_topics)
