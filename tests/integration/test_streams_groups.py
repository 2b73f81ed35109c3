"""Streams groups (KIP-1071) over the raw protocol against a real broker: StreamsGroupHeartbeat's join with
a topology (the broker creates the changelog topic and assigns a task per source partition), the status of
a topology whose source topic is missing, the edge cases answered with Kafka's error codes (unknown member,
fenced epoch, invalid topology, a first heartbeat without topology, a consumer heartbeat naming a streams
group), a second member taking over tasks only once the first has revoked them, a leave, and
StreamsGroupDescribe and ListGroups (type streams). Kafka Streams itself runs in
tests/jvm/test_kafka_streams_groups.py."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kafka.protocol.admin import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest

from odradek.protocol.errors import ErrorCode
from odradek.protocol.kip848 import ConsumerGroupHeartbeatRequest
from odradek.protocol.kip1071 import (
    StreamsGroupDescribeRequest,
    StreamsGroupHeartbeatRequest,
    StreamsGroupTopologyDescriptionUpdateRequest,
)
from tests.clients import create_topic, unique_name
from tests.harness import BrokerProcess
from tests.rawclient import RawClient, incremental_alter_configs
from tests.waiting import wait_until

HB = StreamsGroupHeartbeatRequest
MISSING_SOURCE_TOPICS, MISSING_INTERNAL_TOPICS, ASSIGNMENT_DELAYED = 1, 3, 5
GROUP_RESOURCE = 32


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    # the first assignment at once; test_initial_rebalance_delay sets its group's own delay
    return {"group.streams.initial.rebalance.delay.ms": "0"}


def topology(source: str, app: str, epoch: int = 1, **sub: Any) -> Any:
    changelog = HB.Topology.Subtopology.TopicInfo(name=f"{app}-store-changelog", partitions=0, replication_factor=-1, topic_configs=[])
    fields = {"subtopology_id": "0", "source_topics": [source], "source_topic_regex": [],
              "state_changelog_topics": [changelog], "repartition_sink_topics": [], "repartition_source_topics": [],
              "copartition_groups": [], **sub}
    return HB.Topology(epoch=epoch, subtopologies=[HB.Topology.Subtopology(**fields)])


def heartbeat(raw: RawClient, group: str, member: str, epoch: int, **fields: Any) -> Any:
    fields.setdefault("endpoint_information_epoch", 0)
    return raw.request(HB(group_id=group, member_id=member, member_epoch=epoch, **fields), version=1)


def join(raw: RawClient, group: str, member: str, topo: Any, process: str | None = None) -> Any:
    return heartbeat(raw, group, member, 0, rebalance_timeout_ms=30000, topology=topo,
                     process_id=process or uuid.uuid4().hex, active_tasks=[], standby_tasks=[], warmup_tasks=[])


def tasks(ids: Any) -> dict[str, list[int]] | None:
    return None if ids is None else {t.subtopology_id: sorted(t.partitions) for t in ids}


def owned(t: dict[str, list[int]]) -> list[Any]:
    return [HB.TaskIds(subtopology_id=s, partitions=ps) for s, ps in t.items()]


def _coordinator(raw: RawClient, group: str) -> None:
    wait_until(lambda: raw.request(FindCoordinatorRequest(key=group), 1).error_code == 0,
               message="the group coordinator")


def test_join_creates_internal_topics_and_assigns_tasks(broker: BrokerProcess) -> None:
    source, app = unique_name("st-in"), unique_name("app")
    create_topic(broker.bootstrap, source, partitions=3)
    member = uuid.uuid4().hex
    with RawClient(broker.port) as raw:
        _coordinator(raw, app)
        first = join(raw, app, member, topology(source, app))
        assert first.error_code == 0 and first.member_epoch >= 1 and first.heartbeat_interval_ms > 0
        state: dict[str, Any] = {"epoch": first.member_epoch, "active": tasks(first.active_tasks)}

        def assigned() -> bool:
            hb = heartbeat(raw, app, member, state["epoch"], active_tasks=owned(state["active"] or {}),
                           standby_tasks=[], warmup_tasks=[])
            assert hb.error_code == 0, hb
            state["epoch"] = hb.member_epoch
            if hb.active_tasks is not None:
                state["active"] = tasks(hb.active_tasks)
            state["status"] = [s.status_code for s in hb.status or []]
            return state["active"] == {"0": [0, 1, 2]} and not state["status"]

        wait_until(assigned, 20, lambda: f"the tasks of the group ({state})")
        group = raw.request(StreamsGroupDescribeRequest(group_ids=[app], include_authorized_operations=False,
                                                        include_topology_description=False), version=1).groups[0]
        assert (group.error_code, group.group_state) == (0, "Stable")
        assert [m.member_id for m in group.members] == [member]
        assert tasks(group.members[0].assignment.active_tasks) == {"0": [0, 1, 2]}
        assert group.topology.subtopologies[0].source_topics == [source]
        listed = raw.request(ListGroupsRequest(states_filter=[], types_filter=["streams"]), version=5).groups
        assert [(g.group_id, g.group_type, g.protocol_type) for g in listed] == [(app, "streams", "streams")]
        # the broker made the changelog, one partition per task
        meta = raw.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=f"{app}-store-changelog")],
                                           allow_auto_topic_creation=False), version=9)
        assert meta.topics[0].error_code == 0 and len(meta.topics[0].partitions) == 3
        # a consumer heartbeat cannot use the streams group's id; nor a stranger's streams heartbeat
        cg = raw.request(ConsumerGroupHeartbeatRequest(group_id=app, member_id=uuid.uuid4().hex, member_epoch=0,
                                                       rebalance_timeout_ms=30000, subscribed_topic_names=[source]),
                         version=1)
        assert cg.error_code == ErrorCode.GROUP_ID_NOT_FOUND
        assert heartbeat(raw, app, "stranger", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert heartbeat(raw, unique_name("nogroup"), member, 1).error_code == ErrorCode.GROUP_ID_NOT_FOUND
        assert heartbeat(raw, app, member, state["epoch"] + 5).error_code == ErrorCode.FENCED_MEMBER_EPOCH
        left = heartbeat(raw, app, member, -1)
        assert (left.error_code, left.member_epoch) == (0, -1)
        group = raw.request(StreamsGroupDescribeRequest(group_ids=[app], include_authorized_operations=False),
                            version=0).groups[0]
        assert (group.group_state, group.members) == ("Empty", [])
        # DescribeGroups (classic groups only) says so; DeleteGroups deletes the empty streams group
        classic = raw.request(DescribeGroupsRequest(groups=[app], include_authorized_operations=False), 6).groups[0]
        assert classic.error_code == ErrorCode.GROUP_ID_NOT_FOUND and "not a classic group" in classic.error_message
        deleted = raw.request(DeleteGroupsRequest(groups_names=[app]), 2).results[0]
        assert deleted.error_code == 0
        gone = raw.request(StreamsGroupDescribeRequest(group_ids=[app], include_authorized_operations=False),
                           version=0).groups[0]
        assert gone.error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_missing_source_topic_status_and_invalid_requests(broker: BrokerProcess) -> None:
    app = unique_name("app")
    member = uuid.uuid4().hex
    with RawClient(broker.port) as raw:
        _coordinator(raw, app)
        hb = join(raw, app, member, topology(unique_name("absent"), app))
        assert hb.error_code == 0
        assert [s.status_code for s in hb.status] == [MISSING_SOURCE_TOPICS]
        assert tasks(hb.active_tasks) == {}
        # a topology whose repartition sink no subtopology reads
        bad = join(raw, unique_name("app"), uuid.uuid4().hex,
                   topology("t", "x", repartition_sink_topics=["nowhere"]))
        assert bad.error_code == ErrorCode.STREAMS_INVALID_TOPOLOGY and bad.error_message
        dup = HB.Topology(epoch=1, subtopologies=topology("t", "x").subtopologies * 2)
        assert join(raw, unique_name("app"), uuid.uuid4().hex, dup).error_code == ErrorCode.STREAMS_INVALID_TOPOLOGY
        no_topology = heartbeat(raw, unique_name("app"), uuid.uuid4().hex, 0, rebalance_timeout_ms=30000,
                                process_id="p", active_tasks=[], standby_tasks=[], warmup_tasks=[])
        assert no_topology.error_code == ErrorCode.INVALID_REQUEST
        assert join(raw, app, "", topology("t", "x")).error_code == ErrorCode.INVALID_REQUEST
        # Kafka's request checks: a topology only when joining, no tasks claimed when joining
        again = heartbeat(raw, app, member, hb.member_epoch, topology=topology("t", "x"))
        assert (again.error_code, again.error_message) == (ErrorCode.INVALID_REQUEST,
                                                           "Topology can only be provided when (re-)joining.")
        claims = heartbeat(raw, app, uuid.uuid4().hex, 0, rebalance_timeout_ms=30000, topology=topology("t", "x"),
                           process_id="p", active_tasks=owned({"0": [0]}), standby_tasks=[], warmup_tasks=[])
        assert (claims.error_code, claims.error_message) == (ErrorCode.INVALID_REQUEST,
                                                             "ActiveTasks must be empty when (re-)joining.")
        unknown = raw.request(StreamsGroupDescribeRequest(group_ids=["no-such-group"],
                                                          include_authorized_operations=False), version=0).groups[0]
        assert unknown.error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_topology_description_update_without_a_plugin(broker: BrokerProcess) -> None:
    """KIP-1331's push (API 93): no heartbeat answer asks for it (no description plugin, as a Kafka 4.4
    broker by default), and a member that pushes anyway gets Kafka's answer for a broker without one."""
    app, member = unique_name("app"), uuid.uuid4().hex
    desc = StreamsGroupTopologyDescriptionUpdateRequest.TopologyDescription
    node = desc.TopologyDescriptionSubtopology.TopologyDescriptionNode
    with RawClient(broker.port) as raw:
        _coordinator(raw, app)
        hb = join(raw, app, member, topology(unique_name("absent"), app))
        assert hb.error_code == 0 and not hb.topology_description_required
        push = raw.request(StreamsGroupTopologyDescriptionUpdateRequest(
            group_id=app, member_id=member, topology_epoch=1, topology_description=desc(
                subtopologies=[desc.TopologyDescriptionSubtopology(subtopology_id="0", nodes=[node(
                    name="KSTREAM-SOURCE-0000000000", node_type=1, source_topics=["in"], sink_topic=None,
                    stores=[], successors=[])])], global_stores=[])), version=0)
        assert (push.error_code, push.error_message) == (
            ErrorCode.UNSUPPORTED_VERSION, "The broker has no streams group topology description plugin configured.")


def test_second_member_gets_tasks_once_the_first_revokes(broker: BrokerProcess) -> None:
    source, app = unique_name("st-in"), unique_name("app")
    create_topic(broker.bootstrap, source, partitions=2)
    a, b = uuid.uuid4().hex, uuid.uuid4().hex
    with RawClient(broker.port) as raw:
        _coordinator(raw, app)
        topo = topology(source, app)
        hb = join(raw, app, a, topo)
        epoch_a = hb.member_epoch

        def a_has_both() -> bool:
            nonlocal epoch_a
            r = heartbeat(raw, app, a, epoch_a, active_tasks=[], standby_tasks=[], warmup_tasks=[])
            epoch_a = r.member_epoch
            return tasks(r.active_tasks) == {"0": [0, 1]} or (r.active_tasks is None and not r.status and epoch_a > 1)

        wait_until(a_has_both, 20, "the first member's tasks")
        hb_b = join(raw, app, b, topo)
        assert hb_b.error_code == 0 and tasks(hb_b.active_tasks) == {}, "task 0_x is still a's"
        r = heartbeat(raw, app, a, epoch_a, active_tasks=owned({"0": [0, 1]}), standby_tasks=[], warmup_tasks=[])
        assert r.member_epoch == epoch_a, "a keeps its epoch until it has revoked"
        kept = tasks(r.active_tasks)
        assert kept is not None and sum(len(v) for v in kept.values()) == 1
        given_up = sorted({0, 1} - set(kept["0"]))
        b_now = heartbeat(raw, app, b, hb_b.member_epoch, active_tasks=[], standby_tasks=[], warmup_tasks=[])
        assert tasks(b_now.active_tasks) in (None, {}), "b waits for the revocation"
        r = heartbeat(raw, app, a, epoch_a, active_tasks=owned(kept), standby_tasks=[], warmup_tasks=[])
        assert r.member_epoch > epoch_a
        b_now = heartbeat(raw, app, b, b_now.member_epoch, active_tasks=[], standby_tasks=[], warmup_tasks=[])
        assert tasks(b_now.active_tasks) == {"0": given_up}
        group = raw.request(StreamsGroupDescribeRequest(group_ids=[app], include_authorized_operations=False),
                            version=1).groups[0]
        assert group.group_state == "Stable", group


def test_group_survives_a_coordinator_restart(fresh_broker: BrokerProcess) -> None:
    """The group is written to __consumer_offsets in Kafka's streams group records: after a restart the
    member carries on at its epoch with its tasks, and the group's topology and epochs are as they were."""
    source, app = unique_name("st-in"), unique_name("app")
    create_topic(fresh_broker.bootstrap, source, partitions=2)
    member = uuid.uuid4().hex
    with RawClient(fresh_broker.port) as raw:
        _coordinator(raw, app)
        hb = join(raw, app, member, topology(source, app))
        state = {"epoch": hb.member_epoch}

        def assigned() -> bool:
            r = heartbeat(raw, app, member, state["epoch"], active_tasks=[], standby_tasks=[], warmup_tasks=[])
            state["epoch"] = r.member_epoch
            return tasks(r.active_tasks) == {"0": [0, 1]}

        wait_until(assigned, 20, "the tasks")
        before = raw.request(StreamsGroupDescribeRequest(group_ids=[app], include_authorized_operations=False),
                             version=1).groups[0]
    fresh_broker.restart()
    with RawClient(fresh_broker.port) as raw:
        _coordinator(raw, app)

        def served() -> Any:
            r = heartbeat(raw, app, member, state["epoch"], active_tasks=owned({"0": [0, 1]}), standby_tasks=[],
                          warmup_tasks=[])
            return r if r.error_code == 0 else None

        r = wait_until(served, 30, "the reloaded group")
        assert r.member_epoch == state["epoch"]
        after = raw.request(StreamsGroupDescribeRequest(group_ids=[app], include_authorized_operations=False),
                            version=1).groups[0]
        assert (after.group_epoch, after.assignment_epoch, after.group_state) == (
            before.group_epoch, before.assignment_epoch, "Stable")
        assert after.topology == before.topology
        assert [(m.member_id, m.process_id, m.member_epoch) for m in after.members] == [
            (m.member_id, m.process_id, m.member_epoch) for m in before.members]
        assert tasks(after.members[0].assignment.active_tasks) == {"0": [0, 1]}
        assert heartbeat(raw, app, member, -1).error_code == 0


def test_initial_rebalance_delay(broker: BrokerProcess) -> None:
    """A new group's first assignment waits the group's streams.initial.rebalance.delay.ms (status
    ASSIGNMENT_DELAYED meanwhile), so two members joining within it are balanced from the start."""
    source, app = unique_name("st-in"), unique_name("app")
    create_topic(broker.bootstrap, source, partitions=2)
    a, b = uuid.uuid4().hex, uuid.uuid4().hex
    with RawClient(broker.port) as raw:
        _coordinator(raw, app)
        assert incremental_alter_configs(raw, GROUP_RESOURCE, app,
                                         [("streams.initial.rebalance.delay.ms", 0, "1500")]).error_code == 0
        topo = topology(source, app)
        epochs = {}

        def ready(member: str) -> Any:
            hb = join(raw, app, member, topo) if member not in epochs else heartbeat(
                raw, app, member, epochs[member], active_tasks=[], standby_tasks=[], warmup_tasks=[])
            epochs[member] = hb.member_epoch
            return hb

        def delayed() -> bool:
            return [s.status_code for s in ready(a).status or []] == [ASSIGNMENT_DELAYED]

        wait_until(delayed, 20, "the delayed first assignment")  # once the changelog exists
        assert [s.status_code for s in ready(b).status or []] == [ASSIGNMENT_DELAYED]
        got: dict[str, Any] = {}

        def assigned() -> bool:
            for m in (a, b):
                hb = ready(m)
                if hb.active_tasks is not None:
                    got[m] = tasks(hb.active_tasks)
            return len(got) == 2 and all(got.values())

        wait_until(assigned, 20, lambda: f"the first assignment ({got})")
        assert sorted(p for t in got.values() for p in t["0"]) == [0, 1]
        assert all(len(t["0"]) == 1 for t in got.values()), "balanced at once: nothing to revoke"


def test_interactive_query_endpoints(broker: BrokerProcess) -> None:
    """Members that name an `application.server` endpoint learn which source partitions each endpoint
    holds, whenever that map moved past the epoch they know."""
    source, app = unique_name("st-in"), unique_name("app")
    create_topic(broker.bootstrap, source, partitions=2)
    with RawClient(broker.port) as raw:
        _coordinator(raw, app)
        epochs: dict[str, int] = {}
        held: dict[str, list[Any]] = {"a": [], "b": []}
        for m, port in (("a", 7001), ("b", 7002)):
            hb = heartbeat(raw, app, m, 0, rebalance_timeout_ms=30000, topology=topology(source, app),
                           process_id=f"p-{m}", active_tasks=[], standby_tasks=[], warmup_tasks=[],
                           user_endpoint=HB.Endpoint(host=f"host-{m}", port=port))
            epochs[m] = hb.member_epoch
            if hb.active_tasks is not None:  # the join's answer may hold the member's tasks already
                held[m] = owned(tasks(hb.active_tasks) or {})
        seen: dict[str, Any] = {}

        def settled() -> bool:
            for m in ("a", "b"):
                r = heartbeat(raw, app, m, epochs[m], active_tasks=held[m], standby_tasks=[], warmup_tasks=[])
                epochs[m] = r.member_epoch
                if r.active_tasks is not None:
                    held[m] = owned(tasks(r.active_tasks) or {})
                seen["epoch"], seen["map"] = r.endpoint_information_epoch, r.partitions_by_user_endpoint
            return all(held.values()) and seen["map"] is not None and all(
                e.active_partitions for e in seen["map"])

        wait_until(settled, 20, lambda: f"the endpoint map ({seen}, held {held}, epochs {epochs})")
        by_host = {e.user_endpoint.host: (e.user_endpoint.port, [(t.topic, t.partitions) for t in e.active_partitions])
                   for e in seen["map"]}
        assert sorted(by_host) == ["host-a", "host-b"] and by_host["host-a"][0] == 7001
        assert sorted(p for _port, tps in by_host.values() for _t, ps in tps for p in ps) == [0, 1]
        assert all(t == source for _port, tps in by_host.values() for t, _ps in tps)
        known = heartbeat(raw, app, "a", epochs["a"], endpoint_information_epoch=seen["epoch"])
        assert known.partitions_by_user_endpoint is None and known.endpoint_information_epoch == seen["epoch"]
