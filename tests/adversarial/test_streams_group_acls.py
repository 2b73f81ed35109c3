"""Streams groups under an authorizer: a member allowed to READ its group but not to DESCRIBE the topics its
topology names is refused with TOPIC_AUTHORIZATION_FAILED, and nothing is created for it; one allowed to
DESCRIBE but not to CREATE gets no internal topics made by the broker on its behalf (the status says why),
where CreateTopics would refuse it too; Kafka's own internal topics cannot be named in a topology."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from odradek.protocol.errors import ErrorCode
from odradek.protocol.kip1071 import StreamsGroupHeartbeatRequest as HB
from tests.adversarial.secured import SECURED, client_conf, connect_as, listeners
from tests.harness import BrokerPool, free_port

APP, SOURCE = "bobs-app", "bobs-input"
MISSING_INTERNAL_TOPICS = 3


@pytest.fixture(scope="module")
def secured(module_brokers: BrokerPool) -> Iterator[tuple[int, AdminClient]]:
    plain, sasl = free_port(), free_port()
    module_brokers.start({**SECURED, "listeners": listeners(plain, sasl)}, name="streams-acls", port=plain)
    admin = AdminClient(client_conf(f"127.0.0.1:{sasl}", "admin"))
    for f in admin.create_topics([NewTopic(SOURCE, 2, 1)]).values():
        f.result(30)
    yield sasl, admin


def _grant(admin: AdminClient, rtype: ResourceType, name: str, op: AclOperation,
           pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> None:
    binding = AclBinding(rtype, name, pattern, "User:bob", "*", op, AclPermissionType.ALLOW)
    for f in admin.create_acls([binding]).values():
        f.result(30)


def _join(port: int, topics: list[str] | None = None) -> Any:
    changelog = HB.Topology.Subtopology.TopicInfo(name=f"{APP}-store-changelog", partitions=0,
                                                  replication_factor=-1, topic_configs=[])
    sub = HB.Topology.Subtopology(subtopology_id="0", source_topics=topics or [SOURCE], source_topic_regex=[],
                                  state_changelog_topics=[changelog], repartition_sink_topics=[],
                                  repartition_source_topics=[], copartition_groups=[])
    with connect_as("bob", port) as conn:
        return conn.request(HB(group_id=APP, member_id=uuid.uuid4().hex, member_epoch=0, endpoint_information_epoch=0,
                               rebalance_timeout_ms=30000, topology=HB.Topology(epoch=1, subtopologies=[sub]),
                               process_id=uuid.uuid4().hex, active_tasks=[], standby_tasks=[], warmup_tasks=[]), 1)


def _topics(admin: AdminClient) -> set[str]:
    return set(admin.list_topics(timeout=10).topics)


def test_topology_topics_need_describe_and_internal_topics_need_create(secured: tuple[int, AdminClient]) -> None:
    port, admin = secured
    assert _join(port).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    _grant(admin, ResourceType.GROUP, APP, AclOperation.READ)
    refused = _join(port)
    assert refused.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED and SOURCE in refused.error_message
    assert f"{APP}-store-changelog" not in _topics(admin)
    _grant(admin, ResourceType.TOPIC, SOURCE, AclOperation.DESCRIBE)
    _grant(admin, ResourceType.TOPIC, APP, AclOperation.DESCRIBE, ResourcePatternType.PREFIXED)
    joined = _join(port)
    assert joined.error_code == 0
    assert [s.status_code for s in joined.status] == [MISSING_INTERNAL_TOPICS]
    assert "Unauthorized to CREATE" in " ".join(s.status_detail for s in joined.status)
    assert f"{APP}-store-changelog" not in _topics(admin)
    internal = _join(port, [SOURCE, "__consumer_offsets"])
    assert internal.error_code == ErrorCode.STREAMS_INVALID_TOPOLOGY


def test_topology_description_push_needs_read_on_the_group(secured: tuple[int, AdminClient]) -> None:
    """KIP-1331's push (API 93) answers a principal without READ on the group GROUP_AUTHORIZATION_FAILED,
    before anything else (it says nothing of the broker's plugin to a stranger)."""
    from odradek.protocol.kip1071 import StreamsGroupTopologyDescriptionUpdateRequest as Push

    port, _admin = secured
    desc = Push.TopologyDescription(subtopologies=[], global_stores=[])
    with connect_as("alice", port) as conn:
        refused = conn.request(Push(group_id="someone-elses-app", member_id="m", topology_epoch=1,
                                    topology_description=desc), 0)
    assert (refused.error_code, refused.error_message) == (ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
