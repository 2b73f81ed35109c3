"""`odradek transactions` (kafka-transactions.sh) against a real broker: list and describe an open and a
committed transaction, a partition's producers, a hanging transaction found and aborted so that
read_committed consumers move past it, and argument errors."""

from __future__ import annotations

import re
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest

from odradek.protocol.records import build_batch
from odradek.protocol.transport import BlockingConnection
from tests.clients import create_topic
from tests.harness import BrokerProcess, run_cli
from tests.waiting import wait_until


def _tool(broker: BrokerProcess, *args: str) -> str:
    r = run_cli("transactions", "--bootstrap-server", broker.bootstrap, *args)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def _rows(out: str) -> list[list[str]]:
    return [re.split(r"\s*\t", line.strip()) for line in out.strip().splitlines()[1:]]


def test_list_describe_and_producers(broker: BrokerProcess) -> None:
    topic, open_id, done_id = f"tt-{uuid.uuid4().hex[:6]}", f"open-{uuid.uuid4().hex[:6]}", f"done-{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic, partitions=2)
    done = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": done_id})
    done.init_transactions(30)
    done.begin_transaction()
    done.produce(topic, b"x", partition=0)
    done.commit_transaction(30)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": open_id})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b"y", partition=1)
    p.flush(30)
    try:
        listed = {row[0]: row for row in _rows(_tool(broker, "list"))}
        assert listed[open_id][3] == "Ongoing" and listed[open_id][1] == "0"
        wait_until(lambda: {r[0]: r for r in _rows(_tool(broker, "list"))}[done_id][3] == "CompleteCommit",
                   timeout=30, message="the committed transaction completing")
        out = _tool(broker, "describe", "--transactional-id", open_id)
        assert out.splitlines()[0].split()[:5] == ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
                                                 "TransactionState"]
        row = _rows(out)[0]
        assert row[1] == open_id and row[4] == "Ongoing" and row[-1] == f"{topic}-1"
        producers = _rows(_tool(broker, "describe-producers", "--topic", topic, "--partition", "1"))
        assert [r[-1] for r in producers] == ["0"]  # the open transaction starts at offset 0
        assert _rows(_tool(broker, "find-hanging", "--broker-id", "0")) == []  # its coordinator has it
    finally:
        p.abort_transaction(30)
    missing = run_cli("transactions", "--bootstrap-server", broker.bootstrap, "describe", "--transactional-id",
                      "no-such-id")
    assert missing.returncode == 1 and "TRANSACTIONAL_ID_NOT_FOUND" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_a_hanging_transaction_is_found_and_aborted(broker: BrokerProcess) -> None:
    topic = f"hang-{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic)
    # transactional records from a producer no coordinator knows: they hang until someone aborts them
    with BlockingConnection("127.0.0.1", broker.port, "hanging", 10) as conn:
        init = conn.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), 1)
        batch = build_batch([(None, b"hanging")], producer_id=init.producer_id, producer_epoch=init.producer_epoch,
                            base_sequence=0, is_transactional=True)
        resp = conn.request(ProduceRequest(transactional_id=None, acks=-1, timeout_ms=10000, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[
                ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch)])]), 8)
    assert resp.responses[0].partition_responses[0].error_code == 0
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce(topic, b"after")
    plain.flush(10)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "hang", "isolation.level": "read_committed"})
    try:
        tp = TopicPartition(topic, 0)
        assert c.get_watermark_offsets(tp, timeout=10)[1] == 0  # the hanging transaction holds the LSO
        hanging = _rows(_tool(broker, "find-hanging", "--broker-id", "0"))
        assert [(r[0], r[1], r[2], r[5]) for r in hanging] == [(topic, "0", str(init.producer_id), "0")]
        _tool(broker, "abort", "--topic", topic, "--partition", "0", "--start-offset", "0")
        wait_until(lambda: c.get_watermark_offsets(tp, timeout=10)[1] == 3, timeout=30,
                   message="the last stable offset moving past the aborted transaction")
        c.assign([TopicPartition(topic, 0, 0)])
        m = c.poll(10)
        assert m is not None and m.value() == b"after"  # the aborted record is skipped
    finally:
        c.close()
    assert _rows(_tool(broker, "find-hanging", "--broker-id", "0")) == []


def test_argument_errors_are_one_line(broker: BrokerProcess) -> None:
    r = run_cli("transactions", "--bootstrap-server", broker.bootstrap)
    assert r.returncode != 0 and "command is required" in r.stderr
    r = run_cli("transactions", "--bootstrap-server", broker.bootstrap, "abort", "--topic", "t", "--partition", "0")
    assert r.returncode != 0 and "--start-offset" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("transactions", "--bootstrap-server", broker.bootstrap, "describe-producers", "--topic", "nope",
                "--partition", "0")
    assert r.returncode == 1 and "does not exist" in r.stderr
