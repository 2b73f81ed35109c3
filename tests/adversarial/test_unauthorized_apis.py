"""Every API the broker serves, sent by a principal without ACLs (alice) and by an anonymous client of the
PLAINTEXT listener, each request built to change something if it were allowed: each is refused with
Kafka's authorization error (or, for listings, answered with nothing alice may not see), and afterwards
the broker's state as a super user sees it is what it was: topics, records, configs, groups and their
offsets, ACLs, quotas, SCRAM credentials, transactions, producer ids, reassignments, log dirs.

A new API without an attack here fails `test_every_api_is_attacked`, so none is left out by accident.
Findings 4 (an anonymous PLAINTEXT client acted as a super user) and 6 (topic names leaked through topic
ids) of issue #25 are reproduced here too."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from odradek.protocol.errors import ErrorCode
from odradek.protocol.records import build_batch
from odradek.protocol.transport import BlockingConnection
from odradek.security.sasl import PRE_AUTH_APIS
from odradek.server.dispatcher import APIS
from tests.adversarial.secured import SECURED, client_conf, connect_as, follower_fetch, listeners
from tests.harness import BrokerPool, BrokerProcess, free_port
from tests.waiting import wait_until

AUTH_FAILURES = {ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED,
                 ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
TOPIC, GROUP, TXN_ID = "secret", "payroll", "payroll-txn"
R = SimpleNamespace(**{api.request.__name__: api.request for api in APIS.values()})  # every request class


@dataclass
class Target:
    broker: BrokerProcess
    sasl_port: int
    topic_id: uuid.UUID

    @property
    def sasl(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"


@pytest.fixture(scope="module", params=["sasl-inter-broker", "default-inter-broker"])
def target(module_brokers: BrokerPool, request: pytest.FixtureRequest) -> Iterator[Target]:
    """The issue's set-up; once with the brokers' own listener SASL, once with Kafka's default, where the
    inter-broker listener is the PLAINTEXT one (which made anonymous clients super users, finding 4)."""
    plain, sasl = free_port(), free_port()
    config = {**SECURED, "listeners": listeners(plain, sasl), "auto.create.topics.enable": "true",
              "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1"}
    if request.param == "default-inter-broker":
        del config["inter.broker.listener.name"], config["sasl.mechanism.inter.broker.protocol"]
    broker = module_brokers.start(config, name="target", port=plain)
    bootstrap = f"127.0.0.1:{sasl}"
    admin = AdminClient(client_conf(bootstrap, "admin"))
    for f in admin.create_topics([NewTopic(TOPIC, 2, 1, config={"retention.ms": "86400000"})]).values():
        f.result(30)
    p = Producer({**client_conf(bootstrap, "admin"), "transactional.id": TXN_ID})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(6):
        p.produce(TOPIC, b"salary-%d" % i, partition=i % 2)
    p.commit_transaction(30)
    c = Consumer({**client_conf(bootstrap, "admin"), "group.id": GROUP, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(TOPIC, 0, 2)], asynchronous=False)
    c.close()
    with connect_as("admin", sasl) as conn:
        topic_id = conn.request(R.MetadataRequest(topics=[R.MetadataRequest.MetadataRequestTopic(name=TOPIC)]),
                                12).topics[0].topic_id
    yield Target(broker, sasl, topic_id)


# ---- the broker's state, as the super user sees it -----------------------------------------------

def _strip(message: Any) -> Any:
    """A response as plain data, without what changes by itself (throttle times, timestamps)."""
    if isinstance(message, list):
        return [_strip(m) for m in message]
    fields = getattr(message, "fields", None)
    if isinstance(fields, dict):
        return {k: _strip(getattr(message, k)) for k in fields
                if k not in ("throttle_time_ms", "transaction_start_time_ms", "last_timestamp", "size")}
    return message


def snapshot(port: int) -> dict[str, Any]:
    T = R.DescribeConfigsRequest.DescribeConfigsResource
    with connect_as("admin", port) as c:
        def ask(request: Any, version: int) -> Any:
            return _strip(c.request(request, version))

        md = c.request(R.MetadataRequest(topics=None), 12)
        topics = sorted(t.name for t in md.topics)
        parts = [(t.name, p.partition_index) for t in md.topics for p in t.partitions]
        offsets = {ts: ask(R.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
            R.ListOffsetsRequest.ListOffsetsTopic(name=n, partitions=[
                R.ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(partition_index=i, timestamp=ts)])
            for n, i in parts]), 7) for ts in (-1, -2)}
        return {
            "topics": topics,
            "metadata": _strip(md.topics),
            "offsets": offsets,
            "configs": ask(R.DescribeConfigsRequest(resources=[T(resource_type=2, resource_name=n) for n in topics]
                                                      + [T(resource_type=4, resource_name="0")]), 4),
            "groups": ask(R.ListGroupsRequest(), 4),
            "describe_groups": ask(R.DescribeGroupsRequest(groups=[GROUP]), 5),
            "committed": ask(R.OffsetFetchRequest(group_id=GROUP, topics=None), 7),
            "acls": ask(R.DescribeAclsRequest(resource_type_filter=1, pattern_type_filter=1, operation=1,
                                                permission_type=1), 2),
            "quotas": ask(R.DescribeClientQuotasRequest(components=[], strict=False), 1),
            "scram": ask(R.DescribeUserScramCredentialsRequest(users=None), 0),
            "transactions": ask(R.ListTransactionsRequest(state_filters=[], producer_id_filters=[]), 0),
            "describe_txn": ask(R.DescribeTransactionsRequest(transactional_ids=[TXN_ID]), 0),
            "producers": ask(R.DescribeProducersRequest(topics=[R.DescribeProducersRequest.TopicRequest(
                name=TOPIC, partition_indexes=[0, 1])]), 0),
            "reassignments": ask(R.ListPartitionReassignmentsRequest(topics=None), 0),
            "log_dirs": ask(R.DescribeLogDirsRequest(topics=None), 1),
        }


def next_producer_id(port: int) -> int:
    """Allocates one producer id as admin: ids come in sequence, so an id allocated meanwhile shows."""
    with connect_as("admin", port) as c:
        return int(c.request(R.InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), 2)
                   .producer_id)


# ---- the attacks ---------------------------------------------------------------------------------

def _records() -> bytes:
    return build_batch([(b"k", b"forged")])


@dataclass
class Attack:
    version: int
    request: Callable[[Target], Any]
    listing: bool = False  # answered without error, but with nothing alice may not see
    check: Callable[[Any, Target], None] | None = None  # what else the answer must (not) say


def _empty(field: str) -> Callable[[Any, Target], None]:
    def check(resp: Any, _t: Target) -> None:
        assert not getattr(resp, field), f"{field} revealed: {getattr(resp, field)}"
    return check


def _nothing_allowed(operations: Any) -> None:
    assert not operations, f"alice told she may do {operations} on the cluster"


def _no_topic_names(resp: Any, target: Target) -> None:
    # finding 6: a topic named by id comes back without its name
    by_id = [t for t in resp.topics if t.topic_id == target.topic_id]
    assert by_id, f"the topic named by id is missing from {resp.topics}"
    for t in by_id:
        assert t.name in (None, ""), f"topic id lookup revealed the name {t.name!r}"


def _no_deleted_names(resp: Any, _t: Target) -> None:
    for r in resp.responses:
        assert r.name in (None, ""), f"DeleteTopics by id revealed the name {r.name!r}"
        assert TOPIC not in (r.error_message or ""), r.error_message


def _tp(name: str = TOPIC) -> Any:
    return name


ATTACKS: dict[int, Attack] = {
    0: Attack(9, lambda t: R.ProduceRequest(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
        R.ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[
            R.ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=_records())])])),
    1: Attack(12, lambda t: follower_fetch(TOPIC, 0, replica_id=0, fetch_offset=0)),
    2: Attack(7, lambda t: R.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
        R.ListOffsetsRequest.ListOffsetsTopic(name=TOPIC, partitions=[
            R.ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(partition_index=0, timestamp=-1)])])),
    3: Attack(12, lambda t: R.MetadataRequest(topics=[
        R.MetadataRequest.MetadataRequestTopic(topic_id=t.topic_id, name=None),
        R.MetadataRequest.MetadataRequestTopic(name="created-by-alice")], allow_auto_topic_creation=True),
        check=_no_topic_names),
    8: Attack(8, lambda t: R.OffsetCommitRequest(group_id=GROUP, generation_id_or_member_epoch=-1, member_id="",
                                                   topics=[R.OffsetCommitRequest.OffsetCommitRequestTopic(
        name=TOPIC, partitions=[R.OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
            partition_index=0, committed_offset=0)])])),
    9: Attack(7, lambda t: R.OffsetFetchRequest(group_id=GROUP, topics=None)),
    10: Attack(3, lambda t: R.FindCoordinatorRequest(key=GROUP, key_type=0)),
    11: Attack(7, lambda t: R.JoinGroupRequest(group_id=GROUP, session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                                 member_id="", protocol_type="consumer", protocols=[
        R.JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")])),
    12: Attack(3, lambda t: R.HeartbeatRequest(group_id=GROUP, generation_id=1, member_id="m")),
    13: Attack(3, lambda t: R.LeaveGroupRequest(group_id=GROUP, members=[
        R.LeaveGroupRequest.MemberIdentity(member_id="m")])),
    14: Attack(3, lambda t: R.SyncGroupRequest(group_id=GROUP, generation_id=1, member_id="m", assignments=[])),
    15: Attack(5, lambda t: R.DescribeGroupsRequest(groups=[GROUP])),
    16: Attack(4, lambda t: R.ListGroupsRequest(), listing=True, check=_empty("groups")),
    19: Attack(5, lambda t: R.CreateTopicsRequest(topics=[R.CreateTopicsRequest.CreatableTopic(
        name="alices-topic", num_partitions=1, replication_factor=1)], timeout_ms=5000)),
    20: Attack(6, lambda t: R.DeleteTopicsRequest(topics=[
        R.DeleteTopicsRequest.DeleteTopicState(name=None, topic_id=t.topic_id)], timeout_ms=5000),
        check=_no_deleted_names),
    21: Attack(2, lambda t: R.DeleteRecordsRequest(topics=[R.DeleteRecordsRequest.DeleteRecordsTopic(
        name=TOPIC, partitions=[R.DeleteRecordsRequest.DeleteRecordsTopic.DeleteRecordsPartition(
            partition_index=0, offset=-1)])], timeout_ms=5000)),
    22: Attack(2, lambda t: R.InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000)),
    23: Attack(3, lambda t: R.OffsetForLeaderEpochRequest(replica_id=0, topics=[
        R.OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=TOPIC, partitions=[
            R.OffsetForLeaderEpochRequest.OffsetForLeaderTopic.OffsetForLeaderPartition(
                partition=0, current_leader_epoch=-1, leader_epoch=0)])])),
    24: Attack(3, lambda t: R.AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=TXN_ID, v3_and_below_producer_id=0, v3_and_below_producer_epoch=0,
        v3_and_below_topics=[R.AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=TOPIC, partitions=[0])])),
    25: Attack(3, lambda t: R.AddOffsetsToTxnRequest(transactional_id=TXN_ID, producer_id=0, producer_epoch=0,
                                                       group_id=GROUP)),
    26: Attack(3, lambda t: R.EndTxnRequest(transactional_id=TXN_ID, producer_id=0, producer_epoch=0,
                                              committed=False)),
    27: Attack(1, lambda t: R.WriteTxnMarkersRequest(markers=[R.WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=0, producer_epoch=0, transaction_result=False, coordinator_epoch=0, topics=[
            R.WriteTxnMarkersRequest.WritableTxnMarker.WritableTxnMarkerTopic(name=TOPIC,
                                                                                partition_indexes=[0])])])),
    28: Attack(3, lambda t: R.TxnOffsetCommitRequest(transactional_id=TXN_ID, group_id=GROUP, producer_id=0,
                                                        producer_epoch=0, topics=[
        R.TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=TOPIC, partitions=[
            R.TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic.TxnOffsetCommitRequestPartition(
                partition_index=0, committed_offset=0)])])),
    29: Attack(2, lambda t: R.DescribeAclsRequest(resource_type_filter=1, pattern_type_filter=1, operation=1,
                                                    permission_type=1)),
    30: Attack(2, lambda t: R.CreateAclsRequest(creations=[R.CreateAclsRequest.AclCreation(
        resource_type=2, resource_name="*", resource_pattern_type=3, principal="User:alice", host="*",
        operation=2, permission_type=3)])),
    31: Attack(2, lambda t: R.DeleteAclsRequest(filters=[R.DeleteAclsRequest.DeleteAclsFilter(
        resource_type_filter=1, pattern_type_filter=1, operation=1, permission_type=1)])),
    32: Attack(4, lambda t: R.DescribeConfigsRequest(resources=[
        R.DescribeConfigsRequest.DescribeConfigsResource(resource_type=2, resource_name=TOPIC),
        R.DescribeConfigsRequest.DescribeConfigsResource(resource_type=4, resource_name="0")])),
    33: Attack(1, lambda t: R.AlterConfigsRequest(resources=[R.AlterConfigsRequest.AlterConfigsResource(
        resource_type=2, resource_name=TOPIC, configs=[R.AlterConfigsRequest.AlterConfigsResource.AlterableConfig(
            name="retention.ms", value="1")])])),
    34: Attack(2, lambda t: R.AlterReplicaLogDirsRequest(dirs=[R.AlterReplicaLogDirsRequest.AlterReplicaLogDir(
        path="/tmp", topics=[R.AlterReplicaLogDirsRequest.AlterReplicaLogDir.AlterReplicaLogDirTopic(
            name=TOPIC, partitions=[0])])])),
    35: Attack(1, lambda t: R.DescribeLogDirsRequest(topics=None), listing=True),
    37: Attack(3, lambda t: R.CreatePartitionsRequest(topics=[R.CreatePartitionsRequest.CreatePartitionsTopic(
        name=TOPIC, count=5, assignments=None)], timeout_ms=5000)),
    42: Attack(2, lambda t: R.DeleteGroupsRequest(groups_names=[GROUP])),
    43: Attack(2, lambda t: R.ElectLeadersRequest(election_type=0, topic_partitions=None, timeout_ms=5000)),
    44: Attack(1, lambda t: R.IncrementalAlterConfigsRequest(resources=[
        R.IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=4, resource_name="", configs=[
            R.IncrementalAlterConfigsRequest.AlterConfigsResource.AlterableConfig(
                name="log.retention.ms", config_operation=0, value="1")])])),
    45: Attack(0, lambda t: R.AlterPartitionReassignmentsRequest(timeout_ms=5000, topics=[
        R.AlterPartitionReassignmentsRequest.ReassignableTopic(name=TOPIC, partitions=[
            R.AlterPartitionReassignmentsRequest.ReassignableTopic.ReassignablePartition(
                partition_index=0, replicas=[0])])])),
    46: Attack(0, lambda t: R.ListPartitionReassignmentsRequest(topics=None, timeout_ms=5000)),
    47: Attack(0, lambda t: R.OffsetDeleteRequest(group_id=GROUP, topics=[R.OffsetDeleteRequest.OffsetDeleteRequestTopic(
        name=TOPIC, partitions=[R.OffsetDeleteRequest.OffsetDeleteRequestTopic.OffsetDeleteRequestPartition(
            partition_index=0)])])),
    48: Attack(1, lambda t: R.DescribeClientQuotasRequest(components=[], strict=False)),
    49: Attack(1, lambda t: R.AlterClientQuotasRequest(entries=[R.AlterClientQuotasRequest.EntryData(
        entity=[R.AlterClientQuotasRequest.EntryData.EntityData(entity_type="user", entity_name="alice")],
        ops=[R.AlterClientQuotasRequest.EntryData.OpData(key="producer_byte_rate", value=1e12, remove=False)])])),
    50: Attack(0, lambda t: R.DescribeUserScramCredentialsRequest(users=None)),
    51: Attack(0, lambda t: R.AlterUserScramCredentialsRequest(deletions=[], upsertions=[
        R.AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
            name="alice", mechanism=1, iterations=8192, salt=b"s" * 16, salted_password=b"p" * 32)])),
    60: Attack(1, lambda t: R.DescribeClusterRequest(include_cluster_authorized_operations=True), listing=True,
               check=lambda r, _t: _nothing_allowed(r.authorized_operations)),
    61: Attack(0, lambda t: R.DescribeProducersRequest(topics=[R.DescribeProducersRequest.TopicRequest(
        name=TOPIC, partition_indexes=[0])])),
    65: Attack(0, lambda t: R.DescribeTransactionsRequest(transactional_ids=[TXN_ID])),
    66: Attack(0, lambda t: R.ListTransactionsRequest(state_filters=[], producer_id_filters=[]), listing=True,
               check=_empty("transaction_states")),
    68: Attack(0, lambda t: R.ConsumerGroupHeartbeatRequest(group_id=GROUP, member_id=str(uuid.uuid4()),
                                                               member_epoch=0, rebalance_timeout_ms=10000,
                                                               subscribed_topic_names=[TOPIC], topic_partitions=[])),
    69: Attack(0, lambda t: R.ConsumerGroupDescribeRequest(group_ids=[GROUP])),
    74: Attack(1, lambda t: R.ListConfigResourcesRequest(resource_types=[])),
    75: Attack(0, lambda t: R.DescribeTopicPartitionsRequest(topics=[
        R.DescribeTopicPartitionsRequest.TopicRequest(name=TOPIC)], response_partition_limit=100)),
    76: Attack(1, lambda t: R.ShareGroupHeartbeatRequest(group_id=GROUP, member_id=str(uuid.uuid4()), member_epoch=0,
                                                            subscribed_topic_names=[TOPIC])),
    77: Attack(1, lambda t: R.ShareGroupDescribeRequest(group_ids=[GROUP], include_authorized_operations=True)),
    78: Attack(1, lambda t: R.ShareFetchRequest(
        group_id=GROUP, member_id=str(uuid.uuid4()), share_session_epoch=0, max_wait_ms=0, min_bytes=1,
        max_bytes=1 << 20, max_records=10, batch_size=10, forgotten_topics_data=[], topics=[
            R.ShareFetchRequest.FetchTopic(topic_id=t.topic_id, partitions=[
                R.ShareFetchRequest.FetchTopic.FetchPartition(partition_index=0, acknowledgement_batches=[])])])),
    79: Attack(1, lambda t: R.ShareAcknowledgeRequest(
        group_id=GROUP, member_id=str(uuid.uuid4()), share_session_epoch=1, topics=[
            R.ShareAcknowledgeRequest.AcknowledgeTopic(topic_id=t.topic_id, partitions=[
                R.ShareAcknowledgeRequest.AcknowledgeTopic.AcknowledgePartition(
                    partition_index=0, acknowledgement_batches=[
                        R.ShareAcknowledgeRequest.AcknowledgeTopic.AcknowledgePartition.AcknowledgementBatch(
                            first_offset=0, last_offset=0, acknowledge_types=[1])])])])),
    # the share-state APIs: brokers only (CLUSTER_ACTION)
    83: Attack(0, lambda t: R.InitializeShareGroupStateRequest(group_id=GROUP, topics=[
        R.InitializeShareGroupStateRequest.InitializeStateData(topic_id=t.topic_id, partitions=[
            R.InitializeShareGroupStateRequest.InitializeStateData.PartitionData(
                partition=0, state_epoch=1, start_offset=0)])])),
    84: Attack(0, lambda t: R.ReadShareGroupStateRequest(group_id=GROUP, topics=[
        R.ReadShareGroupStateRequest.ReadStateData(topic_id=t.topic_id, partitions=[
            R.ReadShareGroupStateRequest.ReadStateData.PartitionData(partition=0, leader_epoch=99)])])),
    85: Attack(1, lambda t: R.WriteShareGroupStateRequest(group_id=GROUP, topics=[
        R.WriteShareGroupStateRequest.WriteStateData(topic_id=t.topic_id, partitions=[
            R.WriteShareGroupStateRequest.WriteStateData.PartitionData(
                partition=0, state_epoch=9, leader_epoch=99, start_offset=100, delivery_complete_count=0,
                state_batches=[])])])),
    86: Attack(0, lambda t: R.DeleteShareGroupStateRequest(group_id=GROUP, topics=[
        R.DeleteShareGroupStateRequest.DeleteStateData(topic_id=t.topic_id, partitions=[
            R.DeleteShareGroupStateRequest.DeleteStateData.PartitionData(partition=0)])])),
    87: Attack(1, lambda t: R.ReadShareGroupStateSummaryRequest(group_id=GROUP, topics=[
        R.ReadShareGroupStateSummaryRequest.ReadStateSummaryData(topic_id=t.topic_id, partitions=[
            R.ReadShareGroupStateSummaryRequest.ReadStateSummaryData.PartitionData(partition=0, leader_epoch=0)])])),
    88: Attack(1, lambda t: R.StreamsGroupHeartbeatRequest(
        group_id=GROUP, member_id=str(uuid.uuid4()), member_epoch=0, endpoint_information_epoch=0,
        rebalance_timeout_ms=10000, process_id="p", active_tasks=[], standby_tasks=[], warmup_tasks=[],
        topology=R.StreamsGroupHeartbeatRequest.Topology(epoch=1, subtopologies=[
            R.StreamsGroupHeartbeatRequest.Topology.Subtopology(
                subtopology_id="0", source_topics=[TOPIC], source_topic_regex=[], state_changelog_topics=[],
                repartition_sink_topics=[], repartition_source_topics=[], copartition_groups=[])]))),
    89: Attack(1, lambda t: R.StreamsGroupDescribeRequest(group_ids=[GROUP], include_authorized_operations=True)),
    93: Attack(0, lambda t: R.StreamsGroupTopologyDescriptionUpdateRequest(
        group_id=GROUP, member_id=str(uuid.uuid4()), topology_epoch=1,
        topology_description=R.StreamsGroupTopologyDescriptionUpdateRequest.TopologyDescription(
            subtopologies=[], global_stores=[]))),
    90: Attack(1, lambda t: R.DescribeShareGroupOffsetsRequest(groups=[
        R.DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(group_id=GROUP, topics=None)])),
    91: Attack(0, lambda t: R.AlterShareGroupOffsetsRequest(group_id=GROUP, topics=[
        R.AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic(topic_name=TOPIC, partitions=[
            R.AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic.AlterShareGroupOffsetsRequestPartition(
                partition_index=0, start_offset=0)])])),
    92: Attack(0, lambda t: R.DeleteShareGroupOffsetsRequest(group_id=GROUP, topics=[
        R.DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic(topic_name=TOPIC)])),
}


def error_codes(message: Any) -> list[int]:
    """Every error code anywhere in a response."""
    if isinstance(message, list):
        return [c for m in message for c in error_codes(m)]
    fields = getattr(message, "fields", None)
    if not isinstance(fields, dict):
        return []
    out = []
    for name in fields:
        value = getattr(message, name)
        if name.endswith("error_code") and isinstance(value, int):
            out.append(value)
        elif isinstance(value, list) or hasattr(value, "fields"):
            out.extend(error_codes(value))
    return out


def test_every_api_is_attacked() -> None:
    assert sorted(set(APIS) - PRE_AUTH_APIS - set(ATTACKS)) == []
    for key, attack in ATTACKS.items():
        assert APIS[key].supports(attack.version), f"{APIS[key].name} v{attack.version}"


def _attack_all(conn: BlockingConnection, t: Target) -> list[str]:
    problems = []
    for key, attack in sorted(ATTACKS.items()):
        name = APIS[key].name
        resp = conn.request(attack.request(t), attack.version)
        codes = error_codes(resp)
        if attack.listing:
            if any(codes):
                problems.append(f"{name}: listing answered errors {codes}")
        elif not any(c in AUTH_FAILURES for c in codes) or any(c and c not in AUTH_FAILURES for c in codes):
            problems.append(f"{name}: expected authorization failures, got {[ErrorCode(c).name if c in ErrorCode._value2member_map_ else c for c in codes]}")
        if attack.check is not None:
            try:
                attack.check(resp, t)
            except AssertionError as exc:
                problems.append(f"{name}: {exc}")
    return problems


@pytest.mark.parametrize("who", ["alice", "anonymous"])
def test_every_api_without_acls_leaves_no_trace(target: Target, who: str) -> None:
    before = snapshot(target.sasl_port)
    first_pid = next_producer_id(target.sasl_port)

    def connect() -> BlockingConnection:
        if who == "alice":
            return connect_as("alice", target.sasl_port)
        # finding 4: the PLAINTEXT listener beside SASL is User:ANONYMOUS, no super user
        return BlockingConnection("127.0.0.1", target.broker.port, "anonymous", 10.0)

    with connect() as conn:
        problems = _attack_all(conn, target)
    assert problems == [], "\n".join(problems)
    # pids are handed out in order: nothing was allocated between admin's two InitProducerId
    assert next_producer_id(target.sasl_port) == first_pid + 1
    after = snapshot(target.sasl_port)
    changed = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    assert changed == {}
    assert "created-by-alice" not in after["topics"] and "alices-topic" not in after["topics"]
    principal = "User:alice" if who == "alice" else "User:ANONYMOUS"
    line = f"Principal = {principal} is Denied operation = CLUSTER_ACTION"

    def denial_logged() -> bool:
        if line in target.broker.output():
            return True
        # the denial log is rate-limited (a burst of 50): more denials than that in the other principal's run
        # just before may have used it up, so the follower fetch is refused again once the bucket refills
        with connect() as again:
            again.request(ATTACKS[1].request(target), ATTACKS[1].version)
        return line in target.broker.output()

    wait_until(denial_logged, 10, "the denial log line")


def test_an_authorizer_beside_a_plaintext_listener_warns(target: Target) -> None:
    out = target.broker.output()
    assert "WARN" in out and "Listener PLAINTEXT (PLAINTEXT) does not authenticate its clients: they are all " \
                              "User:ANONYMOUS" in out


def test_admin_still_does_it_all(target: Target) -> None:
    """The same set-up allows the super user: the refusals above are the ACLs, not a broken broker."""
    admin = AdminClient(client_conf(target.sasl, "admin"))
    res = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, TOPIC)])
    assert next(iter(res.values())).result(20)["retention.ms"].value == "86400000"
    with connect_as("admin", target.sasl_port) as c:
        resp = c.request(R.MetadataRequest(topics=[R.MetadataRequest.MetadataRequestTopic(
            topic_id=target.topic_id, name=None)]), 12)
    assert resp.topics[0].name == TOPIC and resp.topics[0].error_code == 0


def test_a_refused_fetch_gets_no_fetch_session(target: Target) -> None:
    """A consumer Fetch opening a session (epoch 0) on topics alice may not read: refused, and no session
    slot taken (the cache is bounded; a flood of them would evict real consumers' sessions)."""
    part = R.FetchRequest.FetchTopic.FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=0,
                                                    last_fetched_epoch=-1, log_start_offset=-1,
                                                    partition_max_bytes=1 << 20)
    request = R.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                             session_id=0, session_epoch=0,
                             topics=[R.FetchRequest.FetchTopic(topic=TOPIC, partitions=[part])],
                             forgotten_topics_data=[], rack_id="")
    with connect_as("alice", target.sasl_port) as alice:
        resp = alice.request(request, 12)
    assert resp.responses[0].partitions[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert resp.session_id == 0
    with connect_as("admin", target.sasl_port) as admin:
        assert admin.request(request, 12).session_id != 0  # the same request, allowed, opens one
