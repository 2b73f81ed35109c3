"""What the console reads from and asks of a cluster, over the Kafka protocol only.

confluent-kafka's AdminClient serves DescribeCluster, Metadata, ListOffsets, DescribeConfigs, CreateTopics,
DeleteTopics, CreatePartitions, IncrementalAlterConfigs and ListGroups. The rest goes over the project's
protocol client, secured as the AdminClient is: DescribeLogDirs, which librdkafka's Python binding lacks
(plaintext listeners only; a cluster that does not serve it simply shows no log dirs or sizes); share
groups (KIP-932), for which librdkafka has no admin calls (`odradek.admin_client.share_groups`); and
every request to a consumer group's coordinator (FindCoordinator, DescribeGroups, ConsumerGroupDescribe,
OffsetFetch, OffsetCommit: `odradek.admin_client.consumer_groups`), because librdkafka's coordinator
admin calls use freed memory when a send to the coordinator fails, and a stalled cluster made the console
abort or crash with SIGSEGV (issue #36). Nothing here knows Odradek's internals, so the console works
against any Kafka-compatible cluster.

All calls block (bounded by the request timeout); the web app runs them on worker threads. The client is
made once and reconnects by itself (librdkafka retries the bootstrap servers), so a cluster that went away
and came back is served again without a restart; errors meaning "no broker answers" are marked
`unreachable`. A serving process started again by the supervisor makes its client without waiting for
the cluster (`connect=False`): it serves "cluster unreachable" pages until the cluster answers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from confluent_kafka import (
    ConsumerGroupType,
    KafkaError,
    KafkaException,
)
from confluent_kafka.admin import (
    AdminClient,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)

from odradek.admin_client.connect import ClientErrors, client_config, create_client, open_client
from odradek.admin_client.consumer_groups import ConsumerGroupsClient
from odradek.admin_client.errors import UNREACHABLE_CODES, CliError, error_message, error_text, kafka_message
from odradek.admin_client.model import (
    TP,
    Broker,
    Config,
    Group,
    GroupPartition,
    GroupSummary,
    LogDir,
    Member,
    Partition,
    SharePartitionRow,
    Topic,
)
from odradek.admin_client.offsets import list_offsets
from odradek.admin_client.share_groups import GroupError, ShareGroup, ShareGroupsClient
from odradek.admin_client.topic_configs import topic_resource
from odradek.protocol.client_security import ClientSecurity

log = logging.getLogger("odradek.console")
_KINDS = {ConsumerGroupType.CLASSIC: "Classic", ConsumerGroupType.CONSUMER: "Consumer"}

DESCRIBE_LOG_DIRS_VERSION = 1
PLAINTEXT = "PLAINTEXT"


class ClusterError(Exception):
    """A request the cluster refused or did not answer, worded for a person (one line); `unreachable` when
    no broker answered at all."""

    def __init__(self, message: str, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


def cluster_error(exc: KafkaException, text: str | None = None) -> ClusterError:
    """A ClusterError for a librdkafka failure, marked unreachable when no broker could be talked to."""
    err = exc.args[0] if exc.args else None
    if isinstance(err, KafkaError) and err.code() in UNREACHABLE_CODES:
        return ClusterError(f"Cluster unreachable: {text or kafka_message(exc)}", unreachable=True)
    return ClusterError(text or kafka_message(exc))


@contextmanager
def coordinator_errors() -> Iterator[None]:
    """A group coordinator's refusal (GroupError) or silence (CliError) from the protocol client as a
    ClusterError."""
    try:
        yield
    except GroupError as exc:
        raise ClusterError(str(exc).removeprefix("Error: ")) from None
    except CliError as exc:
        raise ClusterError(f"Cluster unreachable: {str(exc).removeprefix('Error: ')}", unreachable=True) from None


def source_name(source: Any) -> str:
    """'topic', 'default', 'static broker config', ... for a config entry's source."""
    try:
        name = ConfigSource(source).name
    except ValueError:
        return str(source)
    return {"DYNAMIC_TOPIC_CONFIG": "topic", "DEFAULT_CONFIG": "default"}.get(
        name, name.removesuffix("_CONFIG").lower().replace("_", " "))


# --- the client -----------------------------------------------------------------------------------


class ClusterAdmin:
    """One AdminClient (and the settings for the browser's consumers) for one cluster."""

    def __init__(self, bootstrap: str, properties: Mapping[str, str], timeout_ms: int = 10_000,
                 connect: bool = True) -> None:
        """With `connect`, fail (CliError, one line) unless the cluster answers within `timeout_ms`."""
        self.bootstrap = bootstrap
        self.properties = dict(properties)
        self.timeout_ms = timeout_ms
        self.timeout = timeout_ms / 1000
        defaults = {"socket.timeout.ms": timeout_ms}
        self.cluster_id = "unknown"
        if connect:
            self.admin, metadata = open_client(AdminClient, bootstrap, self.properties, defaults=defaults,
                                               timeout_ms=timeout_ms)
            self.cluster_id = getattr(metadata, "cluster_id", None) or "unknown"
        else:
            self.admin = create_client(AdminClient, client_config(bootstrap, self.properties, errors=ClientErrors(),
                                                                  defaults=defaults))
        self.log_dirs_served = self.properties.get("security.protocol", PLAINTEXT).upper() == PLAINTEXT

    def wait(self, future: Any) -> Any:
        try:
            return future.result(timeout=self.timeout + 5)
        except TimeoutError:
            raise ClusterError(f"Cluster unreachable: no answer within {self.timeout_ms} ms", unreachable=True) from None
        except KafkaException as exc:
            raise cluster_error(exc, error_text(exc)) from None

    def metadata(self, topic: str | None = None) -> Any:
        try:
            md = self.admin.list_topics(topic=topic, timeout=self.timeout)
        except KafkaException as exc:
            raise cluster_error(exc) from None
        self.cluster_id = getattr(md, "cluster_id", None) or self.cluster_id
        return md

    # brokers

    def brokers(self) -> list[Broker]:
        described = self.wait(self.admin.describe_cluster(request_timeout=self.timeout))
        controller = described.controller.id if described.controller is not None else None
        brokers = [Broker(n.id, n.host, n.port, n.rack or None, n.id == controller)
                   for n in sorted(described.nodes, key=lambda n: n.id)]
        dirs, _ = self.log_dirs(brokers)
        for b in brokers:
            b.log_dirs = dirs.get(b.id)
        return brokers

    def log_dirs(self, brokers: Iterable[Broker]) -> tuple[dict[int, list[LogDir]], dict[tuple[int, TP], int]]:
        """Each broker's log dirs, and each replica's size by (broker, (topic, partition)); empty where
        DescribeLogDirs is not served (or not over plaintext)."""
        dirs: dict[int, list[LogDir]] = {}
        sizes: dict[tuple[int, TP], int] = {}
        if not self.log_dirs_served:
            return dirs, sizes
        from kafka.protocol.admin import DescribeLogDirsRequest

        from odradek.protocol.transport import BlockingConnection

        for b in brokers:
            try:
                with BlockingConnection(b.host, b.port, "odradek-console", self.timeout) as conn:
                    resp = conn.request(DescribeLogDirsRequest(topics=None), DESCRIBE_LOG_DIRS_VERSION)
            except Exception as exc:  # not served, refused, or a closed connection: no log dirs shown
                log.debug("DescribeLogDirs to broker %s failed: %s", b.id, exc)
                continue
            dirs[b.id] = []
            for r in resp.results:
                total = 0
                count = 0
                for t in r.topics:
                    for p in t.partitions:
                        if not p.is_future_key:
                            sizes[(b.id, (t.name, p.partition_index))] = p.partition_size
                            total += p.partition_size
                            count += 1
                error = f"error {r.error_code}" if r.error_code else None
                dirs[b.id].append(LogDir(r.log_dir, error, count, total))
        return dirs, sizes

    def broker_config(self, key: str) -> tuple[str | None, str] | None:
        """`key` of the first broker that describes it (DescribeConfigs, BROKER resource) and that broker's
        host; None when no broker has it set."""
        from confluent_kafka.admin import ConfigResource, ResourceType

        for b in sorted(self.metadata().brokers.values(), key=lambda b: b.id):
            resource = ConfigResource(ResourceType.BROKER, str(b.id))
            try:
                entries = self.wait(self.admin.describe_configs([resource], request_timeout=self.timeout)[resource])
            except ClusterError:
                continue
            entry = entries.get(key)
            if entry is not None and entry.value:
                return entry.value, b.host
        return None

    def _broker_list(self, metadata: Any) -> list[Broker]:
        return [Broker(b.id, b.host, b.port, None, False) for b in metadata.brokers.values()]

    # topics

    def topics(self, with_sizes: bool = True) -> list[Topic]:
        md = self.metadata()
        sizes = self.log_dirs(self._broker_list(md))[1] if with_sizes else {}
        return sorted((self._topic(t, sizes) for t in md.topics.values()), key=lambda t: t.name)

    def topic_names(self) -> list[str]:
        return sorted(self.metadata().topics)

    def _topic(self, t: Any, sizes: Mapping[tuple[int, TP], int]) -> Topic:
        parts = []
        for p in sorted(t.partitions.values(), key=lambda p: p.id):
            size = sizes.get((p.leader, (t.topic, p.id)))
            parts.append(Partition(p.id, p.leader, list(p.replicas), list(p.isrs), size,
                                   error=kafka_message(KafkaException(p.error)) if p.error else None))
        return Topic(t.topic, parts, t.topic.startswith("__"),
                     kafka_message(KafkaException(t.error)) if t.error else None)

    def topic(self, name: str) -> Topic | None:
        md = self.metadata()
        t = md.topics.get(name)
        if t is None:
            return None
        topic = self._topic(t, self.log_dirs(self._broker_list(md))[1])
        tps = [(name, p.partition) for p in topic.partitions]
        starts = self.offsets(tps, OffsetSpec.earliest())
        ends = self.offsets(tps, OffsetSpec.latest())
        for p in topic.partitions:
            p.start, p.end = starts.get((name, p.partition)), ends.get((name, p.partition))
        return topic

    def offsets(self, partitions: Iterable[TP], spec: OffsetSpec) -> dict[TP, int | None]:
        """ListOffsets for each partition; None where the cluster could not answer."""
        return list_offsets(self.admin, partitions, spec, self.timeout, unanswered=(Exception,))

    def configs(self, topic: str) -> list[Config]:
        resource = topic_resource(topic)
        entries = self.wait(self.admin.describe_configs([resource], request_timeout=self.timeout)[resource])
        return [Config(e.name, e.value, source_name(e.source),
                       bool(e.is_default), bool(e.is_read_only), bool(e.is_sensitive))
                for e in sorted(entries.values(), key=lambda e: e.name)]

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: Mapping[str, str] | None = None) -> None:
        new = NewTopic(name, num_partitions=partitions, replication_factor=replication_factor,
                       config=dict(configs or {}))
        self.wait(self.admin.create_topics([new], request_timeout=self.timeout)[name])

    def delete_topic(self, name: str) -> None:
        self.wait(self.admin.delete_topics([name], request_timeout=self.timeout)[name])

    def add_partitions(self, name: str, total: int) -> None:
        self.wait(self.admin.create_partitions([NewPartitions(name, total)], request_timeout=self.timeout)[name])

    def alter_config(self, topic: str, key: str, value: str | None) -> None:
        """Set `key` of `topic` to `value`, or back to its default when `value` is None."""
        resource = topic_resource(topic, [(key, value)])
        self.wait(self.admin.incremental_alter_configs([resource], request_timeout=self.timeout)[resource])

    # consumer groups

    def groups(self, with_lag: bool = True) -> list[GroupSummary]:
        listed = self.wait(self.admin.list_consumer_groups(request_timeout=self.timeout))
        if listed.errors and not listed.valid:  # no broker listed its groups: not "no groups"
            err = listed.errors[0]
            raise cluster_error(err if isinstance(err, KafkaException) else KafkaException(err))
        kinds = {g.group_id: _KINDS.get(g.type, "Unknown") for g in listed.valid}
        ids = sorted(kinds)
        out = [GroupSummary(i, "Unknown", kind=kinds[i]) for i in ids]
        if not ids:
            return out
        with self._groups_client() as client:
            for g in out:
                try:
                    d = client.describe_group(g.id)
                except CliError:
                    continue
                g.state, g.members = d.state, len(d.members)
        if with_lag:
            lags = self.group_lags(ids)
            for g in out:
                per_topic = lags.get(g.id)
                g.lag = sum(per_topic.values()) if per_topic else (0 if per_topic is not None else None)
        return out

    # share groups (KIP-932), and the coordinator of consumer groups

    def _security(self) -> ClientSecurity:
        from odradek.config_keys import ConfigError
        from odradek.security.client_config import client_security

        try:
            return client_security(self.properties)
        except ConfigError as exc:
            raise ClusterError(str(exc)) from None

    def _share_client(self) -> ShareGroupsClient:
        return ShareGroupsClient(self.bootstrap, self.timeout, "odradek-console", self._security())

    def _groups_client(self) -> ConsumerGroupsClient:
        """A consumer group's coordinator is asked over the protocol client, never through librdkafka's
        AdminClient: see admin_client/consumer_groups.py (a use-after-free that kills the process)."""
        return ConsumerGroupsClient(self.bootstrap, self.timeout, "odradek-console", self._security())

    def share_groups(self) -> list[GroupSummary]:
        """Every share group with its members and total lag (None where the coordinator did not answer)."""
        try:
            with self._share_client() as client:
                out = []
                for group_id, state in client.list_groups():
                    summary = GroupSummary(group_id, state, kind="Share")
                    try:
                        summary.members = len(client.describe(group_id).members)
                        summary.lag = sum(o.lag or 0 for o in client.offsets(group_id).values())
                    except CliError:
                        pass
                    out.append(summary)
                return out
        except CliError as exc:
            raise ClusterError(str(exc).removeprefix("Error: "), unreachable=True) from None

    def share_group(self, group_id: str) -> tuple[ShareGroup, list[SharePartitionRow]] | None:
        """A share group's description and its partitions' start offsets and lag; None if there is none."""
        try:
            with self._share_client() as client:
                group = client.describe(group_id)
                if group.state == "Dead":
                    return None
                rows = [SharePartitionRow(t, p, o.start_offset, o.lag)
                        for (t, p), o in sorted(client.offsets(group_id).items())]
                return group, rows
        except GroupError as exc:
            raise ClusterError(str(exc)) from None
        except CliError as exc:
            raise ClusterError(str(exc).removeprefix("Error: "), unreachable=True) from None

    def committed(self, group: str) -> dict[TP, int]:
        """The group's committed offsets (partitions without a commit are left out)."""
        with self._groups_client() as client:
            return self._committed(client, group)

    @staticmethod
    def _committed(client: ConsumerGroupsClient, group: str) -> dict[TP, int]:
        with coordinator_errors():
            return client.committed(group)

    def group_lags(self, ids: Iterable[str]) -> dict[str, dict[str, int]]:
        """Lag per topic of each group (end offset minus committed offset, summed over partitions)."""
        committed = {}
        with self._groups_client() as client:
            for gid in ids:
                try:
                    committed[gid] = self._committed(client, gid)
                except ClusterError:
                    continue
        ends = self.offsets({tp for c in committed.values() for tp in c}, OffsetSpec.latest())
        lags: dict[str, dict[str, int]] = {}
        for gid, offsets in committed.items():
            per_topic: dict[str, int] = {}
            for (topic, partition), offset in offsets.items():
                end = ends.get((topic, partition))
                if end is not None:
                    per_topic[topic] = per_topic.get(topic, 0) + max(end - offset, 0)
            lags[gid] = per_topic
        return lags

    def group(self, group_id: str) -> Group | None:
        with self._groups_client() as client:
            with coordinator_errors():
                d = client.describe_group(group_id)
            committed = self._committed(client, group_id)
        coordinator = f"{d.coordinator.host}:{d.coordinator.port} (id: {d.coordinator.node_id})" if d.coordinator else "-"
        group = Group(group_id, d.state, coordinator, d.assignor)
        owner: dict[TP, str] = {}
        for m in d.members:
            group.members.append(Member(m.member_id, m.client_id, m.host, m.assignment))
            owner.update({tp: m.client_id for tp in m.assignment})
        every = sorted(set(committed) | set(owner))
        ends = self.offsets(every, OffsetSpec.latest())
        group.partitions = [GroupPartition(t, p, committed.get((t, p)), ends.get((t, p)), owner.get((t, p)))
                            for t, p in every]
        if d.state in ("Dead", "Unknown") and not group.members and not committed:
            return None
        return group

    def reset_offsets(self, group_id: str, to: str, offset: int | None = None,
                      topic: str | None = None) -> dict[TP, int]:
        """Commit new offsets for the group's partitions (of `topic`, or all it has committed): the log
        start (`earliest`), the log end (`latest`) or `offset` (clamped to the log's range). Only for a
        group without members, as Kafka's tool requires."""
        group = self.group(group_id)
        if group is None:
            raise ClusterError(f"consumer group '{group_id}' does not exist")
        if not group.empty:
            raise ClusterError(f"consumer group '{group_id}' has active members (state {group.state}); "
                               "offsets can only be reset when it is empty")
        partitions = [(p.topic, p.partition) for p in group.partitions if topic in (None, "", p.topic)]
        if not partitions:
            raise ClusterError(f"consumer group '{group_id}' has no committed offsets"
                               + (f" for topic '{topic}'" if topic else ""))
        starts = self.offsets(partitions, OffsetSpec.earliest())
        ends = self.offsets(partitions, OffsetSpec.latest())
        target: dict[TP, int] = {}
        for tp in partitions:
            lo, hi = starts.get(tp), ends.get(tp)
            if lo is None or hi is None:
                raise ClusterError(f"could not read the offsets of {tp[0]}-{tp[1]}")
            if to == "earliest":
                target[tp] = lo
            elif to == "latest":
                target[tp] = hi
            elif to == "offset" and offset is not None:
                target[tp] = min(max(offset, lo), hi)
            else:
                raise ClusterError(f"unknown reset target '{to}'")
        with self._groups_client() as client, coordinator_errors():
            errors = client.commit(group_id, target)
        for (t, p), code in sorted(errors.items()):
            if code:
                raise ClusterError(f"{error_message(code)} ({t}-{p})")
        return target

    def consumer_config(self) -> dict[str, Any]:
        """Settings of the message browser's consumers: assigned partitions, no group commits."""
        conf: dict[str, Any] = dict(self.properties)
        conf.update({"bootstrap.servers": self.bootstrap, "group.id": "odradek-console",
                     "enable.auto.commit": False, "enable.auto.offset.store": False,
                     "socket.timeout.ms": self.timeout_ms, "enable.partition.eof": True})
        return conf
