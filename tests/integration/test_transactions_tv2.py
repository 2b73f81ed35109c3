"""Transaction version 2 (KIP-890 part 2) over the raw protocol, as a Java 4.x producer speaks it when the
broker finalizes transaction.version 2: no AddPartitionsToTxn (Produce v12 of a transactional batch has the
leader add the partition), no AddOffsetsToTxn (TxnOffsetCommit v5 adds the offsets partition), EndTxn v5
bumping the epoch and answering it; and what a hostile or confused client gets: a stale epoch fenced, a
produce for a producer the coordinator does not know refused. The TV1 versions are covered by
test_api_versions_42 and test_transactions."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka.protocol.admin import DescribeProducersRequest
from kafka.protocol.metadata import FindCoordinatorRequest
from kafka.protocol.producer import (
    EndTxnRequest,
    InitProducerIdRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
)

from odradek.protocol.errors import ErrorCode
from odradek.protocol.kafka44 import ApiVersionsRequest
from odradek.protocol.records import build_batch
from odradek.protocol.transport import BlockingConnection
from tests.clients import consume_all, create_topic, unique_name
from tests.harness import BrokerProcess
from tests.waiting import wait_until

BUSY = (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NOT_COORDINATOR)
READ_COMMITTED: dict[str, object] = {"isolation.level": "read_committed"}


@pytest.fixture
def conn(broker: BrokerProcess) -> Iterator[BlockingConnection]:
    c = BlockingConnection("127.0.0.1", broker.port, "tv2-test", 15.0)
    try:
        yield c
    finally:
        c.close()


def _retry(call: Callable[[], Any], what: str) -> Any:
    """`call()` until its error is not a busy coordinator's (it may still be loading its partition)."""
    last: list[Any] = []

    def answered() -> Any:
        last[:] = [call()]
        return last[0] if last[0].error_code not in BUSY else None

    return wait_until(answered, 30, lambda: f"{what} to be served, not {last}")


def _init(conn: BlockingConnection, tid: str) -> tuple[int, int]:
    resp = _retry(lambda: conn.request(InitProducerIdRequest(
        transactional_id=tid, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1), 5), "InitProducerId")
    assert resp.error_code == 0, resp
    return resp.producer_id, resp.producer_epoch


def _produce(conn: BlockingConnection, tid: str, topic: str, pid: int, epoch: int, seq: int, value: bytes,
             version: int = 12) -> int:
    """One transactional batch to partition 0; the partition's error code. Retried while the previous
    transaction is completing (CONCURRENT_TRANSACTIONS, which a TV2 producer retries)."""
    data = ProduceRequest.TopicProduceData
    batch = build_batch([(None, value)], producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                        is_transactional=True)

    def send() -> Any:
        return conn.request(ProduceRequest(transactional_id=tid, acks=-1, timeout_ms=5000, topic_data=[
            data(name=topic, partition_data=[data.PartitionProduceData(index=0, records=batch)])]), version
        ).responses[0].partition_responses[0]

    return int(_retry(send, "Produce").error_code)


def _end(conn: BlockingConnection, tid: str, pid: int, epoch: int, commit: bool, version: int = 5) -> Any:
    return _retry(lambda: conn.request(EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                                     committed=commit), version), "EndTxn")


def _producer_epochs(conn: BlockingConnection, topic: str) -> dict[int, int]:
    topic_cls = DescribeProducersRequest.TopicRequest
    resp = conn.request(DescribeProducersRequest(topics=[topic_cls(name=topic, partition_indexes=[0])]), 0)
    (part,) = resp.topics[0].partitions
    assert part.error_code == 0
    return {p.producer_id: p.producer_epoch for p in part.active_producers}


def test_transaction_version_2_is_finalized(conn: BlockingConnection) -> None:
    resp = conn.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
    finalized = {f.name: f.max_version_level for f in resp.finalized_features}
    assert finalized["transaction.version"] == 2
    versions = {k.api_key: k.max_version for k in resp.api_keys}
    assert versions[EndTxnRequest.API_KEY] == 5 and versions[TxnOffsetCommitRequest.API_KEY] == 5


def test_produce_v12_adds_the_partition_and_end_txn_v5_bumps_the_epoch(broker: BrokerProcess,
                                                                       conn: BlockingConnection) -> None:
    topic, tid, group = unique_name("tv2"), unique_name("tv2-tid"), unique_name("tv2-g")
    create_topic(broker.bootstrap, topic)
    pid, epoch = _init(conn, tid)
    # no AddPartitionsToTxn: the leader has the coordinator add the partition
    assert _produce(conn, tid, topic, pid, epoch, 0, b"committed") == 0
    # what the client asks before TxnOffsetCommit (and what creates __consumer_offsets)
    _retry(lambda: conn.request(FindCoordinatorRequest(key=group, key_type=0), 3), "FindCoordinator")
    commit_topic = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
    committed = _retry(lambda: conn.request(TxnOffsetCommitRequest(  # no AddOffsetsToTxn either
        transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=epoch, generation_id=-1,
        member_id="", group_instance_id=None, topics=[commit_topic(name=topic, partitions=[
            commit_topic.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1,
                                                         committed_leader_epoch=-1, committed_metadata="")])]), 5)
        .topics[0].partitions[0], "TxnOffsetCommit v5")
    assert committed.error_code == 0
    end = _end(conn, tid, pid, epoch, commit=True)
    assert (end.error_code, end.producer_id, end.producer_epoch) == (0, pid, epoch + 1)
    # a retry names the epoch before the bump: the same answer, nothing ended twice
    again = _end(conn, tid, pid, epoch, commit=True)
    assert (again.error_code, again.producer_id, again.producer_epoch) == (0, pid, epoch + 1)
    # the next transaction at the new epoch starts its sequence again, and is aborted
    epoch += 1
    assert _produce(conn, tid, topic, pid, epoch, 0, b"aborted") == 0
    end = _end(conn, tid, pid, epoch, commit=False)
    assert (end.error_code, end.producer_id, end.producer_epoch) == (0, pid, epoch + 1)
    values = [m.value() for m in consume_all(broker.bootstrap, topic, 1, **READ_COMMITTED)]
    assert values == [b"committed"]
    # the abort marker carries the bumped epoch, so the partition's producer state has it
    wait_until(lambda: _producer_epochs(conn, topic).get(pid) == epoch + 1, 20,
               "the partition's producer epoch to be the abort marker's")
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CTopicPartition
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        wait_until(lambda: c.committed([CTopicPartition(topic, 0)], timeout=10)[0].offset == 1, 20,
                   "the transaction's offset commit (1) to be visible")
    finally:
        c.close()


def test_an_abort_with_nothing_added_bumps_the_epoch(conn: BlockingConnection) -> None:
    """A TV2 producer cannot tell whether its first produce reached the coordinator, so it aborts anyway:
    the epoch is bumped all the same (a commit of nothing is refused)."""
    tid = unique_name("tv2-empty")
    pid, epoch = _init(conn, tid)
    assert _end(conn, tid, pid, epoch, commit=True).error_code == ErrorCode.INVALID_TXN_STATE
    end = _end(conn, tid, pid, epoch, commit=False)
    assert (end.error_code, end.producer_id, end.producer_epoch) == (0, pid, epoch + 1)


def test_a_stale_epoch_is_fenced(broker: BrokerProcess, conn: BlockingConnection) -> None:
    topic, tid = unique_name("tv2-fence"), unique_name("tv2-fence-tid")
    create_topic(broker.bootstrap, topic)
    pid, epoch = _init(conn, tid)
    assert _produce(conn, tid, topic, pid, epoch, 0, b"one") == 0
    assert _end(conn, tid, pid, epoch, commit=True).producer_epoch == epoch + 1
    assert _produce(conn, tid, topic, pid, epoch + 1, 0, b"two") == 0
    # the epoch before the bump is no retry while the next transaction is open, a later one no epoch at all:
    # fenced (INVALID_PRODUCER_EPOCH before EndTxn v2, as Kafka answers)
    assert _end(conn, tid, pid, epoch, commit=True).error_code == ErrorCode.PRODUCER_FENCED
    assert _end(conn, tid, pid, epoch + 2, commit=True).error_code == ErrorCode.PRODUCER_FENCED
    assert _end(conn, tid, pid, epoch + 2, commit=True, version=1).error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    # the old epoch's produce is refused by the coordinator's add, and by the partition once it has the new one
    assert _produce(conn, tid, topic, pid, epoch, 1, b"zombie") == ErrorCode.INVALID_PRODUCER_EPOCH
    assert _end(conn, tid, pid + 1, epoch + 1, commit=True).error_code == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    end = _end(conn, tid, pid, epoch + 1, commit=True)
    assert (end.error_code, end.producer_epoch) == (0, epoch + 2)
    assert [m.value() for m in consume_all(broker.bootstrap, topic, 2, **READ_COMMITTED)] == [
        b"one", b"two"]


def test_a_produce_for_a_producer_the_coordinator_does_not_know(broker: BrokerProcess,
                                                                conn: BlockingConnection) -> None:
    """Nothing is appended, so no transaction is left open on the partition (its last stable offset moves on)."""
    topic, tid = unique_name("tv2-unknown"), unique_name("tv2-unknown-tid")
    create_topic(broker.bootstrap, topic)
    pid, epoch = _init(conn, tid)
    assert _produce(conn, unique_name("never-initialized"), topic, pid, epoch, 0, b"x") == (
        ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    assert _produce(conn, tid, topic, pid + 1000, epoch, 0, b"x") == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert _producer_epochs(conn, topic) == {}
