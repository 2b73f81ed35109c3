"""Transactions with real clients against one broker: confluent-kafka (librdkafka), kafka-python, aiokafka
and kcat; commit and abort, read_committed readers, offsets sent to a transaction, zombie fencing, the
coordinator aborting a transaction past its timeout, and the transaction APIs' admin view."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from tests.clients import create_topic, kcat, unique_name
from tests.harness import BrokerProcess
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    # the coordinator checks for timed-out transactions every 200 ms (Kafka: 10 s), so the timeout test is short
    return {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
            "group.initial.rebalance.delay.ms": "0"}


def _producer(bootstrap: str, tid: str, **extra: Any) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5, **extra})
    p.init_transactions(60)
    return p


def _open_transaction(bootstrap: str, tid: str, topic: str, value: bytes, partition: int = -1,
                      **extra: Any) -> Producer:
    """A transactional producer `tid` (config `extra`) with a transaction begun and `value` written to
    `topic` (any partition, by default) and flushed: the transaction is open, neither committed nor aborted."""
    p = _producer(bootstrap, tid, **extra)
    p.begin_transaction()
    p.produce(topic, value=value, partition=partition)
    p.flush(30)
    return p


def _read(bootstrap: str, topic: str, isolation: str, partitions: int = 1, idle_s: float = 3.0) -> list[bytes]:
    """Everything a consumer of the isolation level reads from the start until the end of every partition."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_name("reader"), "isolation.level": isolation,
                  "enable.partition.eof": True, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list[bytes] = []
    at_end: set[int] = set()
    try:
        while len(at_end) < partitions:
            m = c.poll(idle_s)
            if m is None:
                break
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    at_end.add(m.partition())
                    continue
                raise KafkaException(m.error())
            got.append(m.value())
    finally:
        c.close()
    return got


def test_commit_and_abort_seen_by_read_committed_and_uncommitted(broker: BrokerProcess) -> None:
    topic = unique_name("tx")
    create_topic(broker.bootstrap, topic, partitions=2)
    p = _producer(broker.bootstrap, unique_name("tid"))
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, value=b"c1-%d" % i, partition=i % 2)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(6):
        p.produce(topic, value=b"ab-%d" % i, partition=i % 2)
    p.flush(30)  # the aborted records reach the log, so read_uncommitted readers see them
    p.abort_transaction(30)
    p.begin_transaction()
    for i in range(4):
        p.produce(topic, value=b"c2-%d" % i, partition=i % 2)
    p.commit_transaction(30)
    committed = sorted([b"c1-%d" % i for i in range(10)] + [b"c2-%d" % i for i in range(4)])
    assert sorted(_read(broker.bootstrap, topic, "read_committed", 2)) == committed
    uncommitted = sorted(_read(broker.bootstrap, topic, "read_uncommitted", 2))
    assert uncommitted == sorted(committed + [b"ab-%d" % i for i in range(6)])
    # kcat (librdkafka 2.0.2) reading committed data only
    out = kcat("-C", "-b", broker.bootstrap, "-t", topic, "-e", "-q", "-X", "isolation.level=read_committed",
               "-f", "%s\n")
    assert out.returncode == 0, out.stderr
    stdout = out.stdout if isinstance(out.stdout, bytes) else out.stdout.encode()
    assert sorted(stdout.split()) == committed


def test_open_transaction_holds_read_committed_at_the_lso(broker: BrokerProcess) -> None:
    topic = unique_name("lso")
    create_topic(broker.bootstrap, topic)
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce(topic, value=b"before")
    plain.flush(10)
    p = _open_transaction(broker.bootstrap, unique_name("tid"), topic, b"open")
    plain.produce(topic, value=b"after")  # above the open transaction: held back with it
    plain.flush(10)
    assert _read(broker.bootstrap, topic, "read_committed", idle_s=2) == [b"before"]
    assert _read(broker.bootstrap, topic, "read_uncommitted") == [b"before", b"open", b"after"]
    committed = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique_name("g"),
                          "isolation.level": "read_committed"})
    uncommitted = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique_name("g"),
                            "isolation.level": "read_uncommitted"})
    try:
        tp = TopicPartition(topic, 0)
        # ListOffsets latest: the last stable offset for read_committed, the high watermark otherwise
        assert committed.get_watermark_offsets(tp, timeout=10)[1] == 1
        assert uncommitted.get_watermark_offsets(tp, timeout=10)[1] == 3
        p.commit_transaction(30)
        # the marker (offset 3) follows the commit's answer; then the LSO is the high watermark again
        wait_until(lambda: committed.get_watermark_offsets(tp, timeout=10)[1] == 4, timeout=30,
                   message="the last stable offset passing the commit marker")
        assert sorted(_read(broker.bootstrap, topic, "read_committed")) == [b"after", b"before", b"open"]
    finally:
        committed.close()
        uncommitted.close()


def test_send_offsets_to_transaction_commits_offsets_with_the_output(broker: BrokerProcess) -> None:
    src, dst, group = unique_name("in"), unique_name("out"), unique_name("etl")
    create_topic(broker.bootstrap, src)
    create_topic(broker.bootstrap, dst)
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(20):
        plain.produce(src, value=b"m%d" % i)
    plain.flush(10)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    consumer.subscribe([src])
    p = _producer(broker.bootstrap, unique_name("tid"))
    try:
        taken: list[Any] = []
        wait_until(lambda: taken.extend(m for m in consumer.consume(10, 1) if not m.error()) or len(taken) >= 10,
                   timeout=60, message="ten records consumed")
        first = taken[:10]

        def transform_in_a_transaction(end: Callable[[float], None]) -> None:
            """The first ten records upper-cased into `dst` with the offset after them, then `end`."""
            p.begin_transaction()
            for m in first:
                p.produce(dst, value=m.value().upper())
            p.send_offsets_to_transaction([TopicPartition(src, 0, first[-1].offset() + 1)],
                                          consumer.consumer_group_metadata(), 30)
            end(30)

        transform_in_a_transaction(p.abort_transaction)
        assert consumer.committed([TopicPartition(src, 0)], 10)[0].offset < 0  # aborted: nothing committed
        transform_in_a_transaction(p.commit_transaction)
        assert consumer.committed([TopicPartition(src, 0)], 10)[0].offset == first[-1].offset() + 1
    finally:
        consumer.close()
    assert _read(broker.bootstrap, dst, "read_committed") == [b"M%d" % i for i in range(10)]


def test_a_second_producer_with_the_same_id_fences_the_first(broker: BrokerProcess) -> None:
    topic, tid = unique_name("zombie"), unique_name("tid")
    create_topic(broker.bootstrap, topic)
    old = _open_transaction(broker.bootstrap, tid, topic, b"zombie")
    new = _producer(broker.bootstrap, tid)  # aborts the old one's open transaction and bumps the epoch
    new.begin_transaction()
    new.produce(topic, value=b"fresh")
    new.commit_transaction(30)
    with pytest.raises(KafkaException) as info:
        old.produce(topic, value=b"late")
        old.commit_transaction(30)
    assert info.value.args[0].fatal() or "fenced" in str(info.value).lower()
    assert _read(broker.bootstrap, topic, "read_committed") == [b"fresh"]


def test_coordinator_aborts_a_transaction_past_its_timeout(broker: BrokerProcess) -> None:
    from kafka.protocol.admin.transactions import DescribeTransactionsRequest

    from odradek.protocol.transport import BlockingConnection

    topic, tid = unique_name("slow"), unique_name("tid")
    create_topic(broker.bootstrap, topic)
    p = _open_transaction(broker.bootstrap, tid, topic, b"too-late", **{"transaction.timeout.ms": 1500})

    def state() -> str:
        with BlockingConnection("127.0.0.1", broker.port, "test", 10) as conn:
            resp = conn.request(DescribeTransactionsRequest(transactional_ids=[tid]), 0)
        return resp.transaction_states[0].transaction_state

    wait_until(lambda: state() == "CompleteAbort", timeout=60, message="the coordinator aborting the transaction")
    with pytest.raises(KafkaException):
        p.commit_transaction(30)
    assert _read(broker.bootstrap, topic, "read_committed") == []
    assert _read(broker.bootstrap, topic, "read_uncommitted") == [b"too-late"]


def test_kafka_python_transactional_producer(broker: BrokerProcess) -> None:
    from kafka import KafkaProducer

    topic = unique_name("kp")
    create_topic(broker.bootstrap, topic)
    prod = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=unique_name("tid"))
    prod.init_transactions()
    prod.begin_transaction()
    for i in range(5):
        prod.send(topic, value=b"k%d" % i)
    prod.commit_transaction()
    prod.begin_transaction()
    prod.send(topic, value=b"dropped")
    prod.flush()
    prod.abort_transaction()
    prod.close()
    assert _read(broker.bootstrap, topic, "read_committed") == [b"k%d" % i for i in range(5)]


def test_aiokafka_transactional_producer(broker: BrokerProcess) -> None:
    from aiokafka import AIOKafkaProducer

    topic = unique_name("aio")
    create_topic(broker.bootstrap, topic)

    async def main() -> None:
        prod = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=unique_name("tid"))
        await prod.start()
        try:
            async with prod.transaction():
                for i in range(5):
                    await prod.send(topic, value=b"a%d" % i)
            await prod.begin_transaction()
            await (await prod.send(topic, value=b"dropped"))
            await prod.abort_transaction()
        finally:
            await prod.stop()

    asyncio.run(main())
    assert _read(broker.bootstrap, topic, "read_committed") == [b"a%d" % i for i in range(5)]


def test_list_and_describe_transactions(broker: BrokerProcess) -> None:
    from kafka.protocol.admin.transactions import DescribeTransactionsRequest, ListTransactionsRequest

    from odradek.protocol.transport import BlockingConnection

    topic, tid = unique_name("adm"), unique_name("tid")
    create_topic(broker.bootstrap, topic, partitions=3)
    p = _open_transaction(broker.bootstrap, tid, topic, b"x", partition=2)
    with BlockingConnection("127.0.0.1", broker.port, "test", 10) as conn:
        listed = conn.request(ListTransactionsRequest(state_filters=["Ongoing"], producer_id_filters=[],
                                                      duration_filter=-1), 1)
        assert tid in [t.transactional_id for t in listed.transaction_states]
        desc = conn.request(DescribeTransactionsRequest(transactional_ids=[tid, "no-such-id"]), 0)
    ours, missing = desc.transaction_states
    assert ours.transaction_state == "Ongoing" and [(t.topic, t.partitions) for t in ours.topics] == [(topic, [2])]
    assert missing.error_code == 105  # TRANSACTIONAL_ID_NOT_FOUND
    p.commit_transaction(30)


def _describe(port: int, tid: str) -> Any:
    from kafka.protocol.admin.transactions import DescribeTransactionsRequest

    from odradek.protocol.transport import BlockingConnection

    with BlockingConnection("127.0.0.1", port, "test", 10) as conn:
        return conn.request(DescribeTransactionsRequest(transactional_ids=[tid]), 0).transaction_states[0]


def test_state_survives_a_restart_and_idle_ids_expire(brokers: Any) -> None:
    b = brokers.start({"transactional.id.expiration.ms": "8000",
                       "transaction.remove.expired.transaction.cleanup.interval.ms": "200"})
    topic, tid = unique_name("exp"), unique_name("tid")
    create_topic(b.bootstrap, topic)
    p = _producer(b.bootstrap, tid)
    p.begin_transaction()
    p.produce(topic, value=b"x")
    p.commit_transaction(30)
    # EndTxn answers once PrepareCommit is written; CompleteCommit follows the markers
    before = wait_until(lambda: (d := _describe(b.port, tid)).transaction_state == "CompleteCommit" and d,
                        timeout=30, message="the transaction completing")
    b.stop()
    b.start()
    after = wait_until(lambda: (d := _describe(b.port, tid)).error_code in (0, 105) and d, timeout=60,
                       message="the coordinator loaded again", ignoring=(ConnectionError, OSError))
    assert (after.error_code, after.transaction_state, after.producer_id, after.producer_epoch) == \
        (0, "CompleteCommit", before.producer_id, before.producer_epoch)
    wait_until(lambda: _describe(b.port, tid).error_code == 105, timeout=60,
               message="the idle transactional id expiring (TRANSACTIONAL_ID_NOT_FOUND)")
    b.stop()
    b.start()
    again = wait_until(lambda: (d := _describe(b.port, tid)).error_code in (0, 105) and d, timeout=60,
                       message="a describe after the restart", ignoring=(ConnectionError, OSError))
    assert again.error_code == 105  # the tombstone replays
