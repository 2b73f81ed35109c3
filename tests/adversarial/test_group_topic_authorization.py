"""Topic DESCRIBE in the group APIs beyond consumer groups (issue #36, left over from observation 5), against
the secured set-up (tests/adversarial/secured.py: bob may READ/WRITE `bobs` and READ group `bobs-group`):

- Share groups as Kafka (KAFKA-18817): a ShareGroupHeartbeat subscribing to a topic the member may not
  DESCRIBE is TOPIC_AUTHORIZATION_FAILED, and ShareGroupDescribe of a group whose members are assigned such a
  topic is TOPIC_AUTHORIZATION_FAILED alone (it named the secret topic and its partitions).
- With the consumer protocol off (`group.coordinator.rebalance.protocols` without `consumer`) a
  ConsumerGroupHeartbeat is UNSUPPORTED_VERSION whatever it names, as Kafka checks the protocol before any
  authorization (it was TOPIC_AUTHORIZATION_FAILED for a forbidden topic).

One broker serves both: the consumer protocol is off, share groups are on.
"""

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
from odradek.protocol.kip848 import ConsumerGroupHeartbeatRequest
from odradek.protocol.kip932 import ShareGroupDescribeRequest, ShareGroupHeartbeatRequest
from odradek.protocol.transport import BlockingConnection
from tests.adversarial.secured import SECURED, client_conf, connect_as, listeners
from tests.harness import BrokerPool, free_port
from tests.share_consumers import join_share_group
from tests.waiting import wait_until

MINE, GROUP, SECRET = "bobs", "bobs-group", "payroll-09"


@pytest.fixture(scope="module")
def sasl_port(module_brokers: BrokerPool) -> Iterator[int]:
    plain, sasl = free_port(), free_port()
    module_brokers.start({**SECURED, "listeners": listeners(plain, sasl), "auto.create.topics.enable": "false",
                          "group.coordinator.rebalance.protocols": "classic,share"},
                         name="group-authz-target", port=plain)
    admin = AdminClient(client_conf(f"127.0.0.1:{sasl}", "admin"))
    for f in admin.create_topics([NewTopic(t, 2, 1) for t in (MINE, SECRET)]).values():
        f.result(30)

    def allow(kind: ResourceType, name: str, op: AclOperation) -> AclBinding:
        return AclBinding(kind, name, ResourcePatternType.LITERAL, "User:bob", "*", op, AclPermissionType.ALLOW)

    for f in admin.create_acls([allow(ResourceType.TOPIC, MINE, AclOperation.READ),
                                allow(ResourceType.TOPIC, MINE, AclOperation.WRITE),
                                allow(ResourceType.GROUP, GROUP, AclOperation.READ)]).values():
        f.result(30)
    yield sasl


def share_heartbeat(conn: BlockingConnection, member_id: str, topics: list[str] | None, epoch: int = 0) -> Any:
    return conn.request(ShareGroupHeartbeatRequest(group_id=GROUP, member_id=member_id, member_epoch=epoch,
                                                   subscribed_topic_names=topics), version=1)


def share_describe(conn: BlockingConnection) -> Any:
    return conn.request(ShareGroupDescribeRequest(group_ids=[GROUP], include_authorized_operations=False),
                        version=1).groups[0]


def test_a_share_member_may_subscribe_only_to_topics_it_may_describe(sasl_port: int) -> None:
    with connect_as("bob", sasl_port) as bob:
        mine = str(uuid.uuid4())
        join_share_group(bob, GROUP, mine, [MINE])
        try:
            r = share_heartbeat(bob, str(uuid.uuid4()), [MINE, SECRET])
            assert r.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED, r
            assert SECRET not in (r.error_message or "") and r.assignment is None
        finally:
            share_heartbeat(bob, mine, None, -1)


def test_share_group_describe_hides_a_group_assigned_a_topic_the_caller_may_not_describe(sasl_port: int) -> None:
    with connect_as("admin", sasl_port) as admin, connect_as("bob", sasl_port) as bob:
        member = str(uuid.uuid4())
        epoch = join_share_group(admin, GROUP, member, [SECRET]).member_epoch
        try:
            def assigned() -> bool:
                nonlocal epoch  # the partitions are assigned at a heartbeat once their share state is initialized
                epoch = share_heartbeat(admin, member, None, epoch).member_epoch
                d = share_describe(admin)
                return any(m.assignment.topic_partitions for m in d.members)

            assert wait_until(assigned, timeout=30, message="admin's share assignment")
            d = share_describe(bob)
            assert d.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED and d.members == [], d
            assert SECRET not in str(d)
        finally:
            share_heartbeat(admin, member, None, -1)


@pytest.mark.parametrize("user", ["bob", "alice"])
def test_consumer_heartbeat_with_the_protocol_off_is_unsupported_version_before_authorization(
        sasl_port: int, user: str) -> None:
    """bob may read the group but not describe the topic; alice may do neither: both are told the protocol
    is off, as in Kafka, not which authorization failed."""
    with connect_as(user, sasl_port) as conn:
        r = conn.request(ConsumerGroupHeartbeatRequest(
            group_id=GROUP, member_id=str(uuid.uuid4()), member_epoch=0, instance_id=None, rack_id=None,
            rebalance_timeout_ms=10_000, subscribed_topic_names=[SECRET], subscribed_topic_regex=None,
            server_assignor=None, topic_partitions=[]), 1)
        assert r.error_code == ErrorCode.UNSUPPORTED_VERSION, r
