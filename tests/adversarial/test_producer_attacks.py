"""Observations 4 and 9 of issue #36: Kafka's rules for producers.

4: a transactional batch in a Produce request without a transactional id (or with one the principal may
not WRITE) was appended, opening a transaction no coordinator knew: the last stable offset stayed behind
it for good and read_committed consumers stalled. Kafka refuses the whole request with
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and (KIP-890 part 1) its leaders verify with the transaction
coordinator that a partition is in the producer's transaction before the transaction's first append there.
9: InitProducerId without a transactional id but with another producer's id and epoch returned that id at
epoch + 1, fencing its owner. Kafka always hands out a fresh id then.

Raw requests against the secured single broker of `secured.py` (users admin, alice, bob), batches built
with `odradek.protocol.records.build_batch`; real confluent-kafka producers and consumers as the victims.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka.protocol.admin.transactions import DescribeProducersRequest
from kafka.protocol.consumer import ListOffsetsRequest, OffsetFetchRequest
from kafka.protocol.metadata import FindCoordinatorRequest
from kafka.protocol.producer import (
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
)

from odradek.protocol.errors import ErrorCode
from odradek.protocol.records import build_batch
from odradek.protocol.transport import BlockingConnection
from tests.adversarial.secured import SECURED, client_conf, connect_as, listeners
from tests.clients import unique_name
from tests.harness import BrokerCluster, BrokerPool, free_port
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot

TOPIC = "ledger"  # alice and bob may WRITE it; nobody but admin may use a transactional id
MADE_UP_PID = 4242
BUSY = (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
        ErrorCode.CONCURRENT_TRANSACTIONS)


@dataclass
class Target:
    sasl_port: int

    @property
    def sasl(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"


@pytest.fixture(scope="module")
def target(module_brokers: BrokerPool) -> Iterator[Target]:
    plain, sasl = free_port(), free_port()
    module_brokers.start({**SECURED, "listeners": listeners(plain, sasl), "auto.create.topics.enable": "false",
                          "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
                          "transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3",
                          "group.initial.rebalance.delay.ms": "0"}, name="producer-attacks", port=plain)
    admin = AdminClient(client_conf(f"127.0.0.1:{sasl}", "admin"))
    for f in admin.create_topics([NewTopic(TOPIC, 2, 1)]).values():
        f.result(30)
    acls = [AclBinding(ResourceType.TOPIC, TOPIC, ResourcePatternType.LITERAL, f"User:{user}", "*",
                       AclOperation.WRITE, AclPermissionType.ALLOW) for user in ("alice", "bob")]
    for f in admin.create_acls(acls).values():
        f.result(30)
    yield Target(sasl)


# ---- helpers ---------------------------------------------------------------------------------------

def _produce(conn: BlockingConnection, tid: str | None, parts: dict[int, bytes], version: int = 9,
             acks: int = -1) -> dict[int, Any]:
    data = ProduceRequest.TopicProduceData
    resp = conn.request(ProduceRequest(transactional_id=tid, acks=acks, timeout_ms=10_000, topic_data=[data(
        name=TOPIC, partition_data=[data.PartitionProduceData(index=p, records=b) for p, b in parts.items()])]),
        version)
    return {p.index: p for t in resp.responses for p in t.partition_responses}


def _txn_batch(pid: int, epoch: int, value: bytes, seq: int = 0) -> bytes:
    return build_batch([(None, value)], producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                       is_transactional=True)


def _offsets(conn: BlockingConnection, partition: int) -> tuple[int, int]:
    """(log end offset, last stable offset) of the partition."""
    out = []
    for isolation in (0, 1):
        topic = ListOffsetsRequest.ListOffsetsTopic
        resp = conn.request(ListOffsetsRequest(replica_id=-1, isolation_level=isolation, topics=[topic(
            name=TOPIC, partitions=[topic.ListOffsetsPartition(partition_index=partition, timestamp=-1,
                                                               current_leader_epoch=-1)])]), 7)
        (p,) = resp.topics[0].partitions
        assert p.error_code == 0
        out.append(p.offset)
    return out[0], out[1]


def _retry(call: Any, what: str) -> Any:
    last: list[Any] = []

    def answered() -> Any:
        last[:] = [call()]
        return last[0] if last[0].error_code not in BUSY else None

    resp = wait_until(answered, 30, lambda: f"{what} to be served, not {last}")
    assert resp.error_code == 0, f"{what}: {resp}"
    return resp


def _init(conn: BlockingConnection, tid: str) -> tuple[int, int]:
    resp = _retry(lambda: conn.request(InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60_000,
                                                             producer_id=-1, producer_epoch=-1), 4),
                  "InitProducerId")
    return resp.producer_id, resp.producer_epoch


def _plain_then_read_committed(target: Target, partition: int) -> None:
    """A plain record after the attack: a read_committed consumer reads it (nothing holds the LSO back)."""
    value = unique_name("after").encode()
    p = Producer({**client_conf(target.sasl, "admin"), "linger.ms": 0})
    p.produce(TOPIC, value, partition=partition)
    assert p.flush(30) == 0
    c = Consumer({**client_conf(target.sasl, "admin"), "group.id": unique_name("rc"),
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(TOPIC, partition, -2)])
        seen: list[bytes] = []

        def read() -> bool:
            seen.extend(m.value() for m in c.consume(100, 0.5) if m.error() is None)
            return value in seen

        wait_until(read, 30, lambda: f"a read_committed consumer to read {value!r} (read {len(seen)})")
    finally:
        c.close()


# ---- observation 4: transactional batches need a transactional id, and its authorization -------------

def test_transactional_batch_without_transactional_id_is_refused(target: Target) -> None:
    with connect_as("admin", target.sasl_port) as conn:
        before = [_offsets(conn, p) for p in (0, 1)]
        got = _produce(conn, None, {0: _txn_batch(MADE_UP_PID, 0, b"hang-0"), 1: _txn_batch(MADE_UP_PID, 0, b"hang-1")})
        # the whole request, every partition, as Kafka's error response
        assert {p: r.error_code for p, r in got.items()} == {0: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                                             1: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
        assert [_offsets(conn, p) for p in (0, 1)] == before  # nothing appended
    _plain_then_read_committed(target, 0)


def test_transactional_batch_with_a_transactional_id_not_allowed_is_refused(target: Target) -> None:
    """alice may WRITE the topic, not the transactional id: the request is refused before any append, even
    where she names a partition beside one with a plain batch."""
    with connect_as("alice", target.sasl_port) as conn:
        with connect_as("admin", target.sasl_port) as admin:
            before = [_offsets(admin, p) for p in (0, 1)]
        got = _produce(conn, "not-alices", {0: _txn_batch(MADE_UP_PID, 0, b"hang"),
                                            1: build_batch([(None, b"plain")])})
        assert {p: r.error_code for p, r in got.items()} == {0: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                                             1: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    with connect_as("admin", target.sasl_port) as admin:
        assert [_offsets(admin, p) for p in (0, 1)] == before
    _plain_then_read_committed(target, 1)


# ---- observation 4: the leader verifies with the coordinator (KIP-890 part 1) ------------------------

def test_partition_never_added_to_the_transaction_is_refused(target: Target) -> None:
    """A real transactional id and producer, but partition 1 was never added to its transaction: refused
    (INVALID_TXN_STATE up to Produce v10, TRANSACTION_ABORTABLE from v11), while partition 0, added, is
    appended in the same request; the last stable offset of partition 1 does not stay behind."""
    tid = unique_name("admin-txn")
    with connect_as("admin", target.sasl_port) as conn:
        pid, epoch = _init(conn, tid)
        added = conn.request(AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=TOPIC, partitions=[0])]), 3)
        assert [p.partition_error_code for t in added.results_by_topic_v3_and_below for p in t.results_by_partition] == [0]
        leo1 = _offsets(conn, 1)[0]
        got = _produce(conn, tid, {0: _txn_batch(pid, epoch, b"in"), 1: _txn_batch(pid, epoch, b"sneaked")})
        assert got[0].error_code == 0
        assert (got[1].error_code, got[1].error_message) == (ErrorCode.INVALID_TXN_STATE,
                                                            "Partition was not added to the transaction")
        got = _produce(conn, tid, {1: _txn_batch(pid, epoch, b"sneaked")}, version=11)
        assert got[1].error_code == ErrorCode.TRANSACTION_ABORTABLE
        assert _offsets(conn, 1) == (leo1, leo1)  # nothing appended, nothing open
        # a producer id the coordinator does not have for this id
        got = _produce(conn, tid, {0: _txn_batch(MADE_UP_PID, 0, b"forged")})
        assert got[0].error_code == ErrorCode.INVALID_PRODUCER_ID_MAPPING
        _retry(lambda: conn.request(EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                                  committed=False), 3), "EndTxn")
    _plain_then_read_committed(target, 1)
    _plain_then_read_committed(target, 0)  # the aborted transaction ends there too


def test_offsets_of_a_transaction_that_never_added_them_are_refused(target: Target) -> None:
    """TxnOffsetCommit is verified too: without AddOffsetsToTxn the group's offsets partition is not in the
    transaction, so the offsets are not written (they would have opened a transaction in __consumer_offsets
    that nothing ends, the group's offsets unstable for good); alice, without WRITE on the id, is refused
    before anything else."""
    tid, group = unique_name("admin-txn"), unique_name("g")
    commit_topic = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic

    def commit(conn: BlockingConnection, pid: int, epoch: int, version: int) -> int:
        resp = conn.request(TxnOffsetCommitRequest(
            transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=epoch, generation_id=-1,
            member_id="", group_instance_id=None, topics=[commit_topic(name=TOPIC, partitions=[
                commit_topic.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1,
                                                             committed_leader_epoch=-1, committed_metadata="")])]),
            version)
        (code,) = [p.error_code for t in resp.topics for p in t.partitions]
        return int(code)

    with connect_as("admin", target.sasl_port) as conn:
        pid, epoch = _init(conn, tid)
        _retry(lambda: conn.request(FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), 4).coordinators[0],
               "FindCoordinator")  # as a client does first: the offsets topic exists from then on
        got = wait_until(lambda: (c := commit(conn, pid, epoch, 3)) not in BUSY and c, 30, "TxnOffsetCommit")
        assert got == ErrorCode.INVALID_TXN_STATE
        assert commit(conn, pid, epoch, 4) == ErrorCode.TRANSACTION_ABORTABLE
        assert commit(conn, MADE_UP_PID, 0, 3) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
        fetched = conn.request(OffsetFetchRequest(group_id=group, topics=None, require_stable=True), 7)
        assert fetched.error_code == 0 and fetched.topics == []  # nothing pending, nothing committed
    with connect_as("alice", target.sasl_port) as conn:
        assert commit(conn, MADE_UP_PID, 0, 3) == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_batches_of_two_producers_in_one_request_are_refused(target: Target) -> None:
    tid = unique_name("admin-txn")
    with connect_as("admin", target.sasl_port) as conn:
        pid, epoch = _init(conn, tid)
        got = _produce(conn, tid, {0: _txn_batch(pid, epoch, b"a"), 1: _txn_batch(MADE_UP_PID, 0, b"b")})
        assert {r.error_code for r in got.values()} == {ErrorCode.INVALID_PRODUCER_ID_MAPPING}


def test_verification_requests_come_only_from_brokers(target: Target) -> None:
    """AddPartitionsToTxn v4+ (the leaders' verification) needs CLUSTER_ACTION: bob is refused."""
    txn = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction
    with connect_as("bob", target.sasl_port) as conn:
        resp = conn.request(AddPartitionsToTxnRequest(transactions=[txn(
            transactional_id="anyone", producer_id=MADE_UP_PID, producer_epoch=0, verify_only=False,
            topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=TOPIC, partitions=[0])])]), 5)
    assert resp.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and resp.results_by_transaction == []


def test_real_transactional_producer_commits_and_aborts(target: Target) -> None:
    """With verification on, librdkafka's transactions work: an aborted one stays invisible to
    read_committed consumers, a committed one (two partitions, several batches each) is read whole."""
    p = Producer({**client_conf(target.sasl, "admin"), "transactional.id": unique_name("real"), "linger.ms": 0})
    p.init_transactions(30)
    tag = unique_name("v")
    for outcome in ("aborted", "committed"):
        p.begin_transaction()
        for i in range(6):
            p.produce(TOPIC, f"{tag}-{outcome}-{i}".encode(), partition=i % 2)
            p.flush(30)  # one batch each: later batches take the verified path
        if outcome == "aborted":
            p.abort_transaction(30)
        else:
            p.commit_transaction(30)
    c = Consumer({**client_conf(target.sasl, "admin"), "group.id": unique_name("rc"),
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(TOPIC, 0, -2), TopicPartition(TOPIC, 1, -2)])
        seen: list[str] = []

        def read() -> bool:
            seen.extend(m.value().decode() for m in c.consume(100, 0.5) if m.error() is None)
            return sum(1 for v in seen if v.startswith(f"{tag}-committed")) == 6

        wait_until(read, 30, lambda: f"the committed transaction (read {seen})")
        assert not [v for v in seen if v.startswith(f"{tag}-aborted")]
    finally:
        c.close()


# ---- observation 9: InitProducerId without a transactional id --------------------------------------

def test_init_producer_id_cannot_take_over_another_producer(target: Target) -> None:
    victim = Producer({**client_conf(target.sasl, "admin"), "enable.idempotence": True, "linger.ms": 0,
                       "message.timeout.ms": 15_000})
    errors: list[Any] = []

    def report(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    victim.produce(TOPIC, b"victim-1", partition=0, on_delivery=report)
    assert victim.flush(30) == 0 and not errors
    with connect_as("admin", target.sasl_port) as conn:
        resp = conn.request(DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
            name=TOPIC, partition_indexes=[0])]), 0)
    states = resp.topics[0].partitions[0].active_producers
    assert states
    newest = max(states, key=lambda s: s.last_timestamp)
    pid, epoch = newest.producer_id, newest.producer_epoch
    with connect_as("bob", target.sasl_port) as conn:
        taken = conn.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000,
                                                   producer_id=pid, producer_epoch=epoch), 4)
    assert taken.error_code == 0
    assert taken.producer_id != pid and taken.producer_epoch == 0  # a fresh id, as Kafka hands out
    with connect_as("bob", target.sasl_port) as conn:  # an id without an epoch (or the reverse) is malformed
        for half in ({"producer_id": pid, "producer_epoch": -1}, {"producer_id": -1, "producer_epoch": epoch}):
            malformed = conn.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000,
                                                           **half), 4)
            assert malformed.error_code == ErrorCode.INVALID_REQUEST
    for i in range(2, 5):
        victim.produce(TOPIC, b"victim-%d" % i, partition=0, on_delivery=report)
        assert victim.flush(30) == 0
    assert not errors, errors


# ---- verification across brokers: the coordinator on one broker, the partition's leader on another -----

def test_verification_over_the_inter_broker_listener(zk_standalone: ZooKeeperChroot, brokers: BrokerPool) -> None:
    """Two secured brokers (they reach each other as admin over SASL): the leader of a partition asks the
    coordinator on the other broker (AddPartitionsToTxn v5, CLUSTER_ACTION). A real transactional producer
    commits across both brokers' partitions; a batch for a partition never added, sent to the leader that
    is not the coordinator, is refused there."""
    cluster = BrokerCluster(brokers.directory("verify"), zk_standalone.connect_string, size=2, overrides={
        **SECURED, "auto.create.topics.enable": "false", "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "1", "offsets.topic.num.partitions": "1",
        "group.initial.rebalance.delay.ms": "0"})
    sasl_ports = [free_port() for _ in cluster.brokers]
    for b, port in zip(cluster.brokers, sasl_ports, strict=True):
        b.overrides["listeners"] = listeners(b.port, port)
    try:
        cluster.start()
        bootstrap = ",".join(f"127.0.0.1:{p}" for p in sasl_ports)
        admin = AdminClient(client_conf(bootstrap, "admin"))
        for f in admin.create_topics([NewTopic("spread", 2, replica_assignment=[[0], [1]])]).values():
            f.result(30)  # partition i led by broker i
        tid = unique_name("spread-txn")
        p = Producer({**client_conf(bootstrap, "admin"), "transactional.id": tid, "linger.ms": 0})
        p.init_transactions(30)
        p.begin_transaction()
        for i in range(4):
            p.produce("spread", b"both-%d" % i, partition=i % 2)
            p.flush(30)
        p.commit_transaction(30)
        with connect_as("admin", sasl_ports[0]) as conn:
            found = _retry(lambda: conn.request(FindCoordinatorRequest(key_type=1, coordinator_keys=[tid]), 4)
                           .coordinators[0], "FindCoordinator")
        coordinator = found.node_id
        other = 1 - coordinator  # leads partition `other`, and is not the coordinator
        with connect_as("admin", sasl_ports[coordinator]) as conn:
            pid, epoch = _init(conn, tid)
        with connect_as("admin", sasl_ports[other]) as conn:
            data = ProduceRequest.TopicProduceData
            resp = conn.request(ProduceRequest(transactional_id=tid, acks=-1, timeout_ms=10_000, topic_data=[data(
                name="spread", partition_data=[data.PartitionProduceData(
                    index=other, records=_txn_batch(pid, epoch, b"sneaked"))])]), 9)
            (part,) = resp.responses[0].partition_responses
            assert (part.error_code, part.error_message) == (ErrorCode.INVALID_TXN_STATE,
                                                            "Partition was not added to the transaction")
    finally:
        cluster.stop()
