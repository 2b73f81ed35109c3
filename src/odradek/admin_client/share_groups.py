"""Share groups (KIP-932) as an admin client sees them, for `odradek share-groups` and the web console.

librdkafka 2.16's AdminClient has no share-group calls (no ListGroups type filter for them, no
ShareGroupDescribe, no share-group offsets), so every request here goes over the project's protocol
client (`odradek.protocol.transport`), secured like the tool's other clients (`ClientSecurity`):
ListGroups v5 filtered to type `share` at every broker, FindCoordinator, then ShareGroupDescribe v1,
DescribeShareGroupOffsets v1, AlterShareGroupOffsets v0, DeleteShareGroupOffsets v0 and DeleteGroups v2 at
the group's coordinator, Metadata and ListOffsets at the partitions' leaders. Failures are one-line
`CliError`s; a group-level error code of the share-group APIs is a `GroupError` carrying the code.

kafka-python (whose message classes these are) is imported on first use: it takes a fifth of a second.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from odradek.admin_client.errors import CliError, error_message
from odradek.protocol.client_security import PLAINTEXT, ClientSecurity

TP = tuple[str, int]
EARLIEST, LATEST = -2, -1  # ListOffsets' timestamps
SHARE_STATES = ("Empty", "Stable", "Dead")  # Kafka's GroupState values of a share group
RETRIABLE = (14, 15, 16)  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


class GroupError(CliError):
    """A share-group API refused the group as a whole (`code`: Kafka's error code)."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or error_message(code))
        self.code = code


@dataclass(frozen=True)
class Node:
    node_id: int
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}  ({self.node_id})"


@dataclass
class ShareMember:
    member_id: str
    client_id: str
    host: str
    member_epoch: int
    assignment: list[TP] = field(default_factory=list)


@dataclass
class ShareGroup:
    group_id: str
    state: str  # Kafka's name: Empty, Stable, Dead (a group that does not exist)
    coordinator: Node | None = None
    group_epoch: int = -1
    assignment_epoch: int = -1
    members: list[ShareMember] = field(default_factory=list)


@dataclass(frozen=True)
class ShareOffset:
    """One partition of DescribeShareGroupOffsets; None where the broker gave no value."""

    start_offset: int | None
    leader_epoch: int | None
    lag: int | None


def _known(value: int) -> int | None:
    return value if value >= 0 else None


class ShareGroupsClient:
    """Blocking protocol connections to one cluster's brokers, opened on demand."""

    def __init__(self, bootstrap: str, timeout_s: float, client_id: str = "odradek-share-groups",
                 security: ClientSecurity = PLAINTEXT) -> None:
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self.client_id = client_id
        self.security = security
        self._conns: dict[tuple[str, int], Any] = {}
        self._bootstrap_conn: Any = None
        self.nodes: dict[int, Node] = {}

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()
        self._bootstrap_conn = None

    def __enter__(self) -> ShareGroupsClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- connections ----
    def _open(self, host: str, port: int) -> Any:
        from odradek.protocol.client_security import AuthenticationError
        from odradek.protocol.transport import BlockingConnection

        if (host, port) not in self._conns:
            try:
                self._conns[host, port] = BlockingConnection(host, port, self.client_id, self.timeout_s,
                                                             security=self.security)
            except AuthenticationError as exc:
                raise CliError(f"Error: authentication to {host}:{port} failed: {exc}") from None
        return self._conns[host, port]

    def _any(self) -> Any:
        if self._bootstrap_conn is not None:
            return self._bootstrap_conn
        last = ""
        for item in self.bootstrap.split(","):
            host, _sep, port = item.strip().rpartition(":")
            try:
                self._bootstrap_conn = self._open(host.strip("[]") or "localhost", int(port))
                return self._bootstrap_conn
            except (OSError, ValueError) as exc:
                last = getattr(exc, "strerror", None) or str(exc)
        raise CliError(f"Error: could not reach any broker at {self.bootstrap} ({last})")

    def _request(self, conn: Any, request: Any, version: int) -> Any:
        from odradek.protocol.client import ConnectionLost, ProtocolError

        try:
            return conn.request(request, version)
        except TimeoutError:
            raise CliError(f"Error: timed out waiting for a response from {conn.address}") from None
        except (ConnectionLost, ProtocolError):
            raise CliError(f"Error: {conn.address} closed the connection (request not supported?)") from None
        except OSError as exc:
            raise CliError(f"Error: connection to {conn.address} failed: {exc.strerror or exc}") from None

    def _node(self, node: Node) -> Any:
        try:
            return self._open(node.host, node.port)
        except OSError as exc:
            raise CliError(f"Error: cannot connect to broker {node.node_id} at {node.host}:{node.port}: "
                           f"{exc.strerror or exc}") from None

    # ---- cluster ----
    def metadata(self, topics: list[str] | None) -> Any:
        from kafka.protocol.metadata import MetadataRequest

        md = self._request(self._any(), MetadataRequest(
            topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=False), 4)
        self.nodes = {b.node_id: Node(b.node_id, b.host, b.port) for b in md.brokers}
        return md

    def partitions_of(self, topic: str) -> list[int] | None:
        """A topic's partition ids, None if it does not exist."""
        (t,) = self.metadata([topic]).topics
        return None if t.error_code else sorted(p.partition_index for p in t.partitions)

    def list_offsets(self, partitions: Iterable[TP], timestamp: int) -> dict[TP, int | None]:
        """ListOffsets v7 at each partition's leader (`timestamp`: EARLIEST, LATEST or epoch ms); None where
        there is no answer (no such partition, no record at or after the timestamp)."""
        from kafka.protocol.consumer import ListOffsetsRequest

        wanted = sorted(set(partitions))
        md = self.metadata(sorted({t for t, _ in wanted}))
        leaders = {(t.name, p.partition_index): p.leader_id for t in md.topics for p in t.partitions}
        by_leader: dict[int, list[TP]] = {}
        for tp in wanted:
            if tp in leaders:
                by_leader.setdefault(leaders[tp], []).append(tp)
        result: dict[TP, int | None] = dict.fromkeys(wanted)
        topic_cls = ListOffsetsRequest.ListOffsetsTopic
        for leader, tps in by_leader.items():
            node = self.nodes.get(leader)
            if node is None:
                continue
            topics: dict[str, list[int]] = {}
            for t, p in tps:
                topics.setdefault(t, []).append(p)
            resp = self._request(self._node(node), ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
                topic_cls(name=t, partitions=[topic_cls.ListOffsetsPartition(partition_index=p, timestamp=timestamp)
                                              for p in ps]) for t, ps in topics.items()]), 7)
            for t in resp.topics:
                for p in t.partitions:
                    if p.error_code == 0 and p.offset >= 0:
                        result[(t.name, p.partition_index)] = p.offset
        return result

    # ---- groups ----
    def list_groups(self, states: Iterable[str] = ()) -> list[tuple[str, str]]:
        """(group id, state) of every share group (in `states` if given), by id, asking every broker."""
        from kafka.protocol.admin import ListGroupsRequest

        self.metadata([])
        found: dict[str, str] = {}
        for node in sorted(self.nodes.values(), key=lambda n: n.node_id):
            resp = self._request(self._node(node), ListGroupsRequest(states_filter=list(states),
                                                                     types_filter=["share"]), 5)
            if resp.error_code:
                raise GroupError(resp.error_code)
            found.update((g.group_id, g.group_state) for g in resp.groups)
        return sorted(found.items())

    def coordinator(self, group_id: str) -> Node:
        """The group's coordinator (FindCoordinator v3), retried for a while when not yet available."""
        from kafka.protocol.metadata import FindCoordinatorRequest

        deadline = time.monotonic() + self.timeout_s
        while True:
            resp = self._request(self._any(), FindCoordinatorRequest(key=group_id, key_type=0), 3)
            if resp.error_code == 0:
                return Node(resp.node_id, resp.host, resp.port)
            if resp.error_code not in RETRIABLE or time.monotonic() >= deadline:
                raise GroupError(resp.error_code, resp.error_message)
            time.sleep(0.2)

    def _at_coordinator(self, group_id: str, request: Any, version: int, error: Any) -> tuple[Node, Any]:
        """(coordinator, response) of `request` sent to the group's coordinator, again while
        `error(response)` is retriable."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            node = self.coordinator(group_id)
            resp = self._request(self._node(node), request, version)
            if error(resp) not in RETRIABLE or time.monotonic() >= deadline:
                return node, resp
            time.sleep(0.2)

    def describe(self, group_id: str) -> ShareGroup:
        """ShareGroupDescribe v1; a group that does not exist is Dead, another type's group too."""
        from odradek.protocol.kip932 import ShareGroupDescribeRequest

        node, resp = self._at_coordinator(group_id, ShareGroupDescribeRequest(
            group_ids=[group_id], include_authorized_operations=False), 1, lambda r: r.groups[0].error_code)
        g = resp.groups[0]
        if g.error_code == 69:  # GROUP_ID_NOT_FOUND
            return ShareGroup(group_id, "Dead", node)
        if g.error_code:
            raise GroupError(g.error_code, g.error_message)
        members = [ShareMember(m.member_id, m.client_id, m.client_host, m.member_epoch, sorted(
            (t.topic_name, p) for t in m.assignment.topic_partitions for p in t.partitions))
            for m in g.members]
        return ShareGroup(group_id, g.group_state, node, g.group_epoch, g.assignment_epoch,
                          sorted(members, key=lambda m: m.member_id))

    def offsets(self, group_id: str) -> dict[TP, ShareOffset]:
        """DescribeShareGroupOffsets v1 of every partition the group has state for."""
        from odradek.protocol.kip932_admin import DescribeShareGroupOffsetsRequest

        group_cls = DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup
        _node, resp = self._at_coordinator(group_id, DescribeShareGroupOffsetsRequest(groups=[
            group_cls(group_id=group_id, topics=None)]), 1, lambda r: r.groups[0].error_code)
        g = resp.groups[0]
        if g.error_code:
            raise GroupError(g.error_code, g.error_message)
        return {(t.topic_name, p.partition_index): ShareOffset(_known(p.start_offset), _known(p.leader_epoch),
                                                               _known(p.lag))
                for t in g.topics for p in t.partitions if p.error_code == 0}

    def alter_offsets(self, group_id: str, offsets: dict[TP, int]) -> dict[TP, int]:
        """AlterShareGroupOffsets v0: the error code of each partition; GroupError for the group."""
        from odradek.protocol.kip932_admin import AlterShareGroupOffsetsRequest

        topic_cls = AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic
        by_topic: dict[str, list[tuple[int, int]]] = {}
        for (t, p), offset in sorted(offsets.items()):
            by_topic.setdefault(t, []).append((p, offset))
        _node, resp = self._at_coordinator(group_id, AlterShareGroupOffsetsRequest(group_id=group_id, topics=[
            topic_cls(topic_name=t, partitions=[topic_cls.AlterShareGroupOffsetsRequestPartition(
                partition_index=p, start_offset=o) for p, o in ps]) for t, ps in by_topic.items()]), 0,
            lambda r: r.error_code)
        if resp.error_code:
            raise GroupError(resp.error_code, resp.error_message)
        return {(t.topic_name, p.partition_index): p.error_code for t in resp.responses for p in t.partitions}

    def delete_offsets(self, group_id: str, topics: Iterable[str]) -> dict[str, int]:
        """DeleteShareGroupOffsets v0: the error code of each topic; GroupError for the group."""
        from odradek.protocol.kip932_admin import DeleteShareGroupOffsetsRequest

        topic_cls = DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic
        _node, resp = self._at_coordinator(group_id, DeleteShareGroupOffsetsRequest(group_id=group_id, topics=[
            topic_cls(topic_name=t) for t in dict.fromkeys(topics)]), 0, lambda r: r.error_code)
        if resp.error_code:
            raise GroupError(resp.error_code, resp.error_message)
        return {t.topic_name: t.error_code for t in resp.responses}

    def delete_group(self, group_id: str) -> int:
        """DeleteGroups v2 for one group: its error code."""
        from kafka.protocol.admin import DeleteGroupsRequest

        _node, resp = self._at_coordinator(group_id, DeleteGroupsRequest(groups_names=[group_id]), 2,
                                    lambda r: r.results[0].error_code)
        return int(resp.results[0].error_code)
