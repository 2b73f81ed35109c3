"""Consumer groups at their coordinator over the project's protocol client, for the web console.

Why not librdkafka's AdminClient: its coordinator-targeted calls (DescribeConsumerGroups,
ListConsumerGroupOffsets, AlterConsumerGroupOffsets) free the request's enqueue-once object when the send
to the coordinator fails (a connection that dropped, e.g. a stalled broker's request timed out) while the
coordinator-request machinery still holds it, then use it again: the process aborts with
`rd_kafka_enq_once_del_source_return: Assertion 'eonce->refcnt > 0' failed`, or dies of SIGSEGV when the
freed memory was reused (librdkafka 2.16, confluentinc/librdkafka PR 5397, unreleased). A console serving
pages while its cluster stalls hits that within minutes, so it asks the coordinator itself:
FindCoordinator, then DescribeGroups v5 (a classic group) or ConsumerGroupDescribe v0 (a KIP-848 consumer
group), OffsetFetch v8 (or v7) and OffsetCommit v7, through `ShareGroupsClient`'s connections (bounded by its
timeout, secured as the AdminClient is, retried while the coordinator is loading or moving). Each
request goes at the highest version both sides speak (ApiVersions, asked once per broker), so brokers
that stop at older versions are served too.
A broker that does not answer is a `CliError`; a group-level error code is a `GroupError`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from odradek.admin_client.errors import CliError
from odradek.admin_client.share_groups import TP, GroupError, Node, ShareGroupsClient

GROUP_ID_NOT_FOUND = 69
CONSUMER_PROTOCOL = "consumer"
# The oldest version of each API whose fields the requests here fill in (by API key): FindCoordinator,
# DescribeGroups, ConsumerGroupDescribe, OffsetFetch (v2: null topics for all), OffsetCommit.
OLDEST = {10: 0, 15: 0, 69: 0, 9: 2, 8: 2}


@dataclass
class DescribedMember:
    member_id: str
    client_id: str
    host: str
    assignment: list[TP] = field(default_factory=list)


@dataclass
class DescribedGroup:
    group_id: str
    state: str  # Kafka's name: Stable, Empty, PreparingRebalance, Assigning, ..., Dead (no such group)
    coordinator: Node | None
    assignor: str = ""
    members: list[DescribedMember] = field(default_factory=list)


def assignment_partitions(data: bytes | None) -> list[TP]:
    """The partitions of a ConsumerProtocolAssignment (any version: they lead it); none when unreadable."""
    out: list[TP] = []
    try:
        view = memoryview(data or b"")
        if len(view) < 6:
            return []
        pos = 2  # the version
        (topics,) = struct.unpack_from(">i", view, pos)
        pos += 4
        for _ in range(max(topics, 0)):
            (size,) = struct.unpack_from(">h", view, pos)
            topic = bytes(view[pos + 2:pos + 2 + size]).decode()
            pos += 2 + size
            (count,) = struct.unpack_from(">i", view, pos)
            pos += 4
            parts = struct.unpack_from(f">{max(count, 0)}i", view, pos)
            pos += 4 * max(count, 0)
            out.extend((topic, p) for p in parts)
    except (struct.error, UnicodeDecodeError):
        return []
    return sorted(out)


class ConsumerGroupsClient(ShareGroupsClient):
    """Blocking protocol connections to one cluster, for its consumer groups (classic and KIP-848)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._api_versions: dict[str, dict[int, tuple[int, int]]] = {}

    def __enter__(self) -> ConsumerGroupsClient:
        return self

    def _request(self, conn: Any, request: Any, version: int) -> Any:
        """`request` at `version`, or at the broker's highest when it stops earlier (CliError when it does not
        speak a version the request can be sent at)."""
        key = request.API_KEY
        if key in OLDEST:
            lowest, highest = self._versions(conn).get(key, (0, -1))
            chosen = min(version, highest)
            if chosen < max(lowest, OLDEST[key]):
                raise CliError(f"Error: {conn.address} does not serve {type(request).__name__} "
                               f"(versions {OLDEST[key]}-{version} wanted)")
            version = chosen
        return super()._request(conn, request, version)

    def _versions(self, conn: Any) -> dict[int, tuple[int, int]]:
        """(lowest, highest) version of each API the broker at `conn` serves, asked once."""
        if conn.address not in self._api_versions:
            from kafka.protocol.metadata import ApiVersionsRequest

            resp = super()._request(conn, ApiVersionsRequest(), 0)
            self._api_versions[conn.address] = {a.api_key: (a.min_version, a.max_version) for a in resp.api_keys}
        return self._api_versions[conn.address]

    def describe_group(self, group_id: str) -> DescribedGroup:
        """The group as DescribeGroups sees it, or as ConsumerGroupDescribe does when it is a KIP-848 group;
        a group neither knows is Dead."""
        from kafka.protocol.admin import DescribeGroupsRequest

        node, resp = self._at_coordinator(group_id, DescribeGroupsRequest(
            groups=[group_id], include_authorized_operations=False), 5, lambda r: r.groups[0].error_code)
        g = resp.groups[0]
        if g.error_code and g.error_code != GROUP_ID_NOT_FOUND:
            raise GroupError(g.error_code)
        if not g.error_code and (g.group_state != "Dead" or g.members):
            members = [DescribedMember(m.member_id, m.client_id, m.client_host,
                                       assignment_partitions(m.member_assignment)
                                       if g.protocol_type == CONSUMER_PROTOCOL else [])
                       for m in g.members]
            return DescribedGroup(group_id, g.group_state, node, g.protocol_data or "",
                                  sorted(members, key=lambda m: m.member_id))
        return self._describe_consumer_group(group_id, node)

    def _describe_consumer_group(self, group_id: str, node: Node) -> DescribedGroup:
        from odradek.protocol.kip848 import ConsumerGroupDescribeRequest

        try:
            node, resp = self._at_coordinator(group_id, ConsumerGroupDescribeRequest(
                group_ids=[group_id], include_authorized_operations=False), 0, lambda r: r.groups[0].error_code)
        except CliError:
            # DescribeGroups was just answered: this one fails on a cluster without KIP-848 (the coordinator
            # does not serve ConsumerGroupDescribe), where no group is of that type
            return DescribedGroup(group_id, "Dead", node)
        g = resp.groups[0]
        if g.error_code == GROUP_ID_NOT_FOUND:
            return DescribedGroup(group_id, "Dead", node)
        if g.error_code:
            raise GroupError(g.error_code, g.error_message)
        members = [DescribedMember(m.member_id, m.client_id, m.client_host, sorted(
            (t.topic_name, p) for t in m.assignment.topic_partitions for p in t.partitions)) for m in g.members]
        return DescribedGroup(group_id, g.group_state, node, g.assignor_name or "",
                              sorted(members, key=lambda m: m.member_id))

    def committed(self, group_id: str) -> dict[TP, int]:
        """OffsetFetch of every partition the group committed (none for a group that does not exist): v8's
        form (groups) where the coordinator serves it, since some brokers answer only that one, else v7."""
        from kafka.protocol.consumer import OffsetFetchRequest

        coordinator = self._node(self.coordinator(group_id))
        if self._versions(coordinator).get(OffsetFetchRequest.API_KEY, (0, -1))[1] >= 8:
            group_cls = OffsetFetchRequest.OffsetFetchRequestGroup
            _node, resp = self._at_coordinator(group_id, OffsetFetchRequest(
                groups=[group_cls(group_id=group_id, topics=None)], require_stable=False), 8,
                lambda r: r.groups[0].error_code)
            answer = resp.groups[0]
        else:
            _node, answer = self._at_coordinator(group_id, OffsetFetchRequest(
                group_id=group_id, topics=None, require_stable=False), 7, lambda r: r.error_code)
        if answer.error_code == GROUP_ID_NOT_FOUND:
            return {}
        if answer.error_code:
            raise GroupError(answer.error_code)
        return {(t.name, p.partition_index): p.committed_offset for t in answer.topics for p in t.partitions
                if p.error_code == 0 and p.committed_offset >= 0}

    def commit(self, group_id: str, offsets: dict[TP, int]) -> dict[TP, int]:
        """OffsetCommit v7 as an admin (no generation, no member): the error code of each partition."""
        from kafka.protocol.consumer import OffsetCommitRequest

        topic_cls = OffsetCommitRequest.OffsetCommitRequestTopic
        part_cls = topic_cls.OffsetCommitRequestPartition
        by_topic: dict[str, list[tuple[int, int]]] = {}
        for (t, p), offset in sorted(offsets.items()):
            by_topic.setdefault(t, []).append((p, offset))
        request = OffsetCommitRequest(group_id=group_id, generation_id_or_member_epoch=-1, member_id="",
                                      group_instance_id=None, topics=[
            topic_cls(name=t, partitions=[part_cls(partition_index=p, committed_offset=o, committed_leader_epoch=-1,
                                                   committed_metadata="") for p, o in ps])
            for t, ps in by_topic.items()])
        _node, resp = self._at_coordinator(group_id, request, 7, lambda r: _first_error(r))
        return {(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}


def _first_error(resp: object) -> int:
    """OffsetCommit has no group-level error code: the first partition's stands for the coordinator's."""
    for t in getattr(resp, "topics", ()):
        for p in t.partitions:
            return int(p.error_code)
    return 0
