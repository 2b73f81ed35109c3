"""Kafka's ACL rules, pure: pattern matching (literal, wildcard, prefixed), DENY over ALLOW, implied
operations, principals and hosts, allow.everyone.if.no.acl.found, authorizeByResourceType, filters, the
znode formats, and the authorizer's super users, inter-broker listener and denial log."""

from __future__ import annotations

import logging

import pytest

from odradek.config_keys import ConfigError
from odradek.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclTable,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
    decide,
    decide_by_type,
    validate_new_binding,
)
from odradek.security.acl_store import decode_acls, decode_change, encode_acls, encode_change, pattern_path
from odradek.security.authorizer import Authorizer, RateLimiter, check_class, parse_super_users

Op, T, G, C = AclOperation, ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY


def entry(principal: str = "User:alice", op: AclOperation = Op.READ, perm: Permission = ALLOW,
          host: str = "*") -> AccessControlEntry:
    return AccessControlEntry(principal, host, op, perm)


def table(*acls: tuple[ResourcePattern, AccessControlEntry]) -> AclTable:
    t = AclTable()
    by: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for p, e in acls:
        by.setdefault(p, set()).add(e)
    for p, es in by.items():
        t.put(p, es)
    return t


def allowed(t: AclTable, op: AclOperation, name: str, rtype: ResourceType = T, principal: str = "User:alice",
            host: str = "10.0.0.1", allow_if_no_acl: bool = False) -> bool:
    return decide(t.matching(rtype, name), principal, host, op, allow_if_no_acl).allowed


def test_literal_wildcard_and_prefixed_patterns_match() -> None:
    t = table((ResourcePattern(T, "orders", LIT), entry()), (ResourcePattern(T, "*", LIT), entry(op=Op.WRITE)),
              (ResourcePattern(T, "logs-", PRE), entry(op=Op.DELETE)))
    assert allowed(t, Op.READ, "orders") and not allowed(t, Op.READ, "orders2")
    assert allowed(t, Op.WRITE, "anything")  # the wildcard literal
    assert allowed(t, Op.DELETE, "logs-web") and not allowed(t, Op.DELETE, "logs") and not allowed(t, Op.DELETE, "x")
    assert not allowed(t, Op.READ, "orders", rtype=G)  # another resource type
    # a literal named like a prefix is not a prefix
    t2 = table((ResourcePattern(T, "logs-", LIT), entry()))
    assert not allowed(t2, Op.READ, "logs-web")


def test_deny_wins_over_allow_and_all() -> None:
    t = table((ResourcePattern(T, "*", LIT), entry(op=Op.ALL)), (ResourcePattern(T, "secret", LIT), entry(perm=DENY)))
    assert allowed(t, Op.READ, "public")
    assert not allowed(t, Op.READ, "secret")
    assert allowed(t, Op.WRITE, "secret")  # the DENY is for READ only
    t2 = table((ResourcePattern(T, "s", LIT), entry()), (ResourcePattern(T, "s-", PRE), entry(op=Op.ALL, perm=DENY)))
    assert not allowed(t2, Op.READ, "s-1") and allowed(t2, Op.READ, "s")


def test_implied_operations() -> None:
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        t = table((ResourcePattern(T, "t", LIT), entry(op=op)))
        assert allowed(t, Op.DESCRIBE, "t"), op
    t = table((ResourcePattern(T, "t", LIT), entry(op=Op.ALTER_CONFIGS)))
    assert allowed(t, Op.DESCRIBE_CONFIGS, "t") and not allowed(t, Op.DESCRIBE, "t")
    t = table((ResourcePattern(T, "t", LIT), entry(op=Op.DESCRIBE)))
    assert not allowed(t, Op.READ, "t")
    # a DENY of READ does not deny DESCRIBE
    t = table((ResourcePattern(T, "t", LIT), entry(op=Op.WRITE)), (ResourcePattern(T, "t", LIT), entry(perm=DENY)))
    assert allowed(t, Op.DESCRIBE, "t")


def test_principal_and_host_matching() -> None:
    t = table((ResourcePattern(T, "t", LIT), entry(principal="User:*", host="10.0.0.1")))
    assert allowed(t, Op.READ, "t", principal="User:bob")
    assert not allowed(t, Op.READ, "t", host="10.0.0.2")
    t = table((ResourcePattern(T, "t", LIT), entry(principal="User:bob")))
    assert not allowed(t, Op.READ, "t")


def test_no_acl_found() -> None:
    empty = AclTable()
    assert not allowed(empty, Op.READ, "t")
    assert allowed(empty, Op.READ, "t", allow_if_no_acl=True)
    # an ACL for someone else counts as an ACL for the resource
    t = table((ResourcePattern(T, "t", LIT), entry(principal="User:bob")))
    assert not allowed(t, Op.READ, "t", allow_if_no_acl=True)
    assert allowed(t, Op.READ, "u", allow_if_no_acl=True)


def test_authorize_by_resource_type() -> None:
    t = table((ResourcePattern(T, "a", LIT), entry(op=Op.WRITE)))
    assert decide_by_type(t, T, "User:alice", "h", Op.WRITE, False)
    assert not decide_by_type(t, T, "User:bob", "h", Op.WRITE, False)
    t = table((ResourcePattern(T, "a", LIT), entry(op=Op.WRITE)), (ResourcePattern(T, "*", LIT), entry(op=Op.WRITE, perm=DENY)))
    assert not decide_by_type(t, T, "User:alice", "h", Op.WRITE, False)
    t = table((ResourcePattern(T, "ab", PRE), entry(op=Op.WRITE)), (ResourcePattern(T, "a", PRE), entry(op=Op.ALL, perm=DENY)))
    assert not decide_by_type(t, T, "User:alice", "h", Op.WRITE, False)
    assert decide_by_type(AclTable(), T, "User:alice", "h", Op.WRITE, True)


def test_filters() -> None:
    lit = AclBinding(ResourcePattern(T, "orders", LIT), entry())
    wild = AclBinding(ResourcePattern(T, "*", LIT), entry(op=Op.WRITE))
    pre = AclBinding(ResourcePattern(T, "ord", PRE), entry(perm=DENY))
    grp = AclBinding(ResourcePattern(G, "orders", LIT), entry())
    t = table(*((b.pattern, b.entry) for b in (lit, wild, pre, grp)))
    assert set(t.bindings(AclBindingFilter())) == {lit, wild, pre, grp}
    assert set(t.bindings(AclBindingFilter(T, "orders", PatternType.ANY))) == {lit}
    assert set(t.bindings(AclBindingFilter(T, "orders", PatternType.MATCH))) == {lit, wild, pre}
    assert set(t.bindings(AclBindingFilter(T, None, PRE))) == {pre}
    assert set(t.bindings(AclBindingFilter(ResourceType.ANY, "orders", LIT))) == {lit, grp}
    assert set(t.bindings(AclBindingFilter(permission=DENY))) == {pre}
    assert set(t.bindings(AclBindingFilter(operation=Op.WRITE, principal="User:alice"))) == {wild}
    assert AclBindingFilter(pattern_type=PatternType.UNKNOWN).invalid() is not None


def test_validation_of_new_acls() -> None:
    ok = AclBinding(ResourcePattern(T, "t", PRE), entry())
    assert validate_new_binding(ok) is None
    assert "patternType" in (validate_new_binding(AclBinding(ResourcePattern(T, "t", PatternType.MATCH), entry())) or "")
    assert "colon" in (validate_new_binding(AclBinding(ResourcePattern(T, "t", LIT), entry(principal="alice"))) or "")
    assert "kafka-cluster" in (validate_new_binding(AclBinding(ResourcePattern(C, "c", LIT), entry(op=Op.ALTER))) or "")
    assert validate_new_binding(AclBinding(ResourcePattern(T, "", LIT), entry())) == "Resource name should not be empty"
    assert "Invalid operation" in (validate_new_binding(AclBinding(ResourcePattern(T, "t", LIT), entry(op=Op.ANY))) or "")


def test_znode_formats_are_kafkas() -> None:
    assert pattern_path(ResourcePattern(T, "t", LIT)) == "/kafka-acl/Topic/t"
    assert pattern_path(ResourcePattern(ResourceType.TRANSACTIONAL_ID, "x", PRE)) == \
        "/kafka-acl-extended/prefixed/TransactionalId/x"
    data = encode_acls({entry(op=Op.IDEMPOTENT_WRITE)})
    assert data == (b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",'
                    b'"operation":"IdempotentWrite","host":"*"}]}')
    assert decode_acls(data, "/p") == {entry(op=Op.IDEMPOTENT_WRITE)}
    path, notice = encode_change(ResourcePattern(T, "t:1", LIT))
    assert (path, notice) == ("/kafka-acl-changes/acl_changes_", b"TOPIC:t:1")
    assert decode_change("/kafka-acl-changes", notice) == ResourcePattern(T, "t:1", LIT)
    path, notice = encode_change(ResourcePattern(G, "g", PRE))
    assert path == "/kafka-acl-extended-changes/acl_changes_"
    assert decode_change("/kafka-acl-extended-changes", notice) == ResourcePattern(G, "g", PRE)
    assert decode_change("/kafka-acl-changes", b"Topic:t") == ResourcePattern(T, "t", LIT)  # Kafka's fromString
    assert str(ResourcePattern(T, "t", LIT)) == "ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)"
    assert str(entry(op=Op.DESCRIBE_CONFIGS)) == \
        "(principal=User:alice, host=*, operation=DESCRIBE_CONFIGS, permissionType=ALLOW)"


class _Cache:
    def __init__(self, t: AclTable) -> None:
        self.table = t


def test_authorizer_super_users_listener_and_denial_log(caplog: pytest.LogCaptureFixture) -> None:
    assert parse_super_users("User:admin; User:CN=b,O=c;") == {"User:admin", "User:CN=b,O=c"}
    assert not check_class("")
    assert check_class("kafka.security.authorizer.AclAuthorizer")
    assert check_class("org.apache.kafka.metadata.authorizer.StandardAuthorizer")
    with pytest.raises(ConfigError, match="authorizer.class.name=com.example.Mine"):
        check_class("com.example.Mine")
    t = table((ResourcePattern(T, "t", LIT), entry()))
    az = Authorizer(_Cache(t), frozenset({"User:admin"}), False)  # type: ignore[arg-type]
    assert az.authorize("User:admin", "h", "SASL_PLAINTEXT", Op.ALTER, C, "kafka-cluster")
    # no listener is privileged: an anonymous PLAINTEXT client is authorized like anyone (issue #25)
    assert not az.authorize("User:ANONYMOUS", "h", "PLAINTEXT", Op.CLUSTER_ACTION, C, "kafka-cluster")
    assert not az.authorize("User:ANONYMOUS", "h", "PLAINTEXT", Op.CREATE, C, "kafka-cluster")
    assert Authorizer(_Cache(t), frozenset({"User:ANONYMOUS"}), False).authorize(  # type: ignore[arg-type]
        "User:ANONYMOUS", "h", "PLAINTEXT", Op.CLUSTER_ACTION, C, "kafka-cluster")
    with caplog.at_level(logging.INFO, logger="kafka.authorizer.logger"):
        assert not az.authorize("User:bob", "10.1.1.1", "SASL_PLAINTEXT", Op.READ, T, "t", "Fetch")
    assert any("Principal = User:bob is Denied operation = READ from host = 10.1.1.1 on resource = Topic:LITERAL:t "
               "for request = Fetch" in r.getMessage() for r in caplog.records)
    assert az.authorized_operations("User:alice", "h", "SASL_PLAINTEXT", T, "t") == {int(Op.READ), int(Op.DESCRIBE)}


def test_denial_log_rate_is_bounded() -> None:
    now = [0.0]
    limiter = RateLimiter(rate=10, burst=5, clock=lambda: now[0])
    assert sum(limiter.allow() for _ in range(100)) == 5
    assert limiter.suppressed == 95
    now[0] = 1.0
    assert sum(limiter.allow() for _ in range(100)) == 5


def test_command_config_jaas_becomes_librdkafka_settings(tmp_path: object) -> None:
    from pathlib import Path

    from odradek.admin_client.connect import ClientErrors, client_config, read_properties_file

    path = Path(str(tmp_path)) / "admin.properties"
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                    "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" "
                    "password=\"admin-secret\";\n")
    conf = client_config("h:1", read_properties_file(str(path)), errors=ClientErrors())
    assert {k: conf[k] for k in ("security.protocol", "sasl.mechanism", "sasl.username", "sasl.password")} == {
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "admin",
        "sasl.password": "admin-secret"}
    assert "sasl.jaas.config" not in conf


# How each API's requests are authorized (Kafka's KafkaApis). A new API must be authorized before it acts
# (server/authz.py) and listed here; the test fails until it is.
AUTHORIZATION = {
    "Produce": "WRITE topic; WRITE transactional id of a transactional request",
    "Fetch": "READ topic; CLUSTER_ACTION cluster for a follower",
    "ListOffsets": "DESCRIBE topic", "OffsetForLeaderEpoch": "DESCRIBE topic",
    "Metadata": "DESCRIBE topic (listing filtered); CREATE cluster or topic to auto-create",
    "DescribeTopicPartitions": "DESCRIBE topic", "DescribeCluster": "authorized operations only",
    "FindCoordinator": "DESCRIBE group or transactional id",
    "JoinGroup": "READ group", "SyncGroup": "READ group", "Heartbeat": "READ group", "LeaveGroup": "READ group",
    "OffsetCommit": "READ group, READ topic", "TxnOffsetCommit": "WRITE transactional id, READ group, READ topic",
    "OffsetFetch": "DESCRIBE group, DESCRIBE topic", "OffsetDelete": "DELETE group, READ topic",
    "DescribeGroups": "DESCRIBE group", "ListGroups": "DESCRIBE cluster, else DESCRIBE group (filtered)",
    "DeleteGroups": "DELETE group",
    "ConsumerGroupHeartbeat": "READ group", "ConsumerGroupDescribe": "DESCRIBE group",
    "ShareGroupHeartbeat": "READ group, DESCRIBE subscribed topics",
    "StreamsGroupHeartbeat": "READ group, DESCRIBE topology topics, CREATE internal topics",
    "StreamsGroupDescribe": "DESCRIBE group", "ShareGroupDescribe": "DESCRIBE group",
    "StreamsGroupTopologyDescriptionUpdate": "READ group",
    "ShareFetch": "READ group, READ topic", "ShareAcknowledge": "READ group, READ topic",
    "DescribeShareGroupOffsets": "DESCRIBE group, DESCRIBE topic", "AlterShareGroupOffsets": "READ group, READ topic",
    "DeleteShareGroupOffsets": "DELETE group, READ topic",
    "InitializeShareGroupState": "CLUSTER_ACTION cluster", "ReadShareGroupState": "CLUSTER_ACTION cluster",
    "WriteShareGroupState": "CLUSTER_ACTION cluster", "DeleteShareGroupState": "CLUSTER_ACTION cluster",
    "ReadShareGroupStateSummary": "CLUSTER_ACTION cluster",
    "CreateTopics": "CREATE cluster or topic", "DeleteTopics": "DELETE topic", "CreatePartitions": "ALTER topic",
    "DeleteRecords": "DELETE topic", "DescribeProducers": "READ topic",
    "DescribeConfigs": "DESCRIBE_CONFIGS topic/group/cluster", "AlterConfigs": "ALTER_CONFIGS topic/group/cluster",
    "IncrementalAlterConfigs": "ALTER_CONFIGS topic/group/cluster", "ListConfigResources": "DESCRIBE_CONFIGS cluster",
    "ElectLeaders": "ALTER cluster", "AlterPartitionReassignments": "ALTER cluster",
    "ListPartitionReassignments": "DESCRIBE cluster", "DescribeLogDirs": "DESCRIBE cluster",
    "AlterReplicaLogDirs": "ALTER cluster (every partition refused)",
    "DescribeUserScramCredentials": "DESCRIBE cluster", "AlterUserScramCredentials": "ALTER cluster",
    "InitProducerId": "WRITE transactional id, or IDEMPOTENT_WRITE cluster / WRITE on some topic",
    "AddPartitionsToTxn": "WRITE transactional id, WRITE topic (v4+, from brokers: CLUSTER_ACTION)", "AddOffsetsToTxn": "WRITE transactional id, READ group",
    "EndTxn": "WRITE transactional id", "WriteTxnMarkers": "CLUSTER_ACTION cluster",
    "DescribeTransactions": "DESCRIBE transactional id", "ListTransactions": "DESCRIBE transactional id (filtered)",
    "CreateAcls": "ALTER cluster", "DescribeAcls": "DESCRIBE cluster", "DeleteAcls": "ALTER cluster",
    "DescribeClientQuotas": "DESCRIBE_CONFIGS cluster", "AlterClientQuotas": "ALTER_CONFIGS cluster",
}
UNAUTHORIZED = {"ApiVersions", "SaslHandshake", "SaslAuthenticate"}  # before authentication, as in Kafka


def test_every_api_is_authorized() -> None:
    import inspect

    import odradek.server.dispatcher  # noqa: F401  (registers every handler)
    from odradek.server.registry import APIS

    served = {api.name: api for api in APIS.values()}
    missing = sorted(set(served) - set(AUTHORIZATION) - UNAUTHORIZED)
    assert not missing, f"authorize these APIs' requests (server/authz.py) and list them in AUTHORIZATION: {missing}"
    for name in AUTHORIZATION.keys() & served.keys():
        module = inspect.getmodule(served[name].handler)
        assert module is not None and "authz." in inspect.getsource(module), name
