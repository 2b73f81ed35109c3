"""`odradek transactions` (kafka-transactions.sh) against a real broker with confluent-kafka transactional
producers: list shows an open transaction as Ongoing and a committed one as CompleteCommit, describe its
partitions, describe-producers the open transaction's start offset, find-hanging and abort of a
transaction whose producer died (a read_committed consumer then moves past it), and argument errors."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest

from odradek.protocol.records import build_batch
from odradek.protocol.transport import BlockingConnection
from tests.clients import create_topic, unique_name
from tests.harness import BrokerProcess, run_cli
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return {"group.initial.rebalance.delay.ms": "0"}


def _tool(broker: BrokerProcess, *args: str) -> str:
    r = run_cli("transactions", "--bootstrap-server", broker.bootstrap, *args)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stderr == ""
    return r.stdout


def _table(out: str) -> list[dict[str, str]]:
    """Kafka's table: tab-terminated cells padded with spaces; one dict per row keyed by the headers."""
    lines = [[cell.strip() for cell in line.split("\t")[:-1]] for line in out.splitlines()]
    return [dict(zip(lines[0], row, strict=True)) for row in lines[1:]]


def _open_transaction(bootstrap: str, tid: str, topic: str, partition: int, value: bytes) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 0})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value, partition=partition)
    p.flush(30)
    return p


@contextmanager
def _open_after_a_plain_record(broker: BrokerProcess, prefix: str) -> Iterator[tuple[str, dict[str, str]]]:
    """A new topic holding one plain record ("first") and then one of an open transaction ("open", offset 1),
    aborted afterwards: (the topic, the tool's `describe` row of the transactional id)."""
    topic, tid = unique_name(prefix), unique_name("tid")
    create_topic(broker.bootstrap, topic)
    _plain(broker.bootstrap, topic, b"first")
    p = _open_transaction(broker.bootstrap, tid, topic, 0, b"open")
    try:
        (described,) = _table(_tool(broker, "describe", "--transactional-id", tid))
        yield topic, described
    finally:
        p.abort_transaction(30)


def _orphan_transaction(bootstrap: str, tid: str, topic: str) -> None:
    """A transactional producer that writes one record to partition 0 and dies without ending it."""
    script = textwrap.dedent(f"""
        import os
        from confluent_kafka import Producer
        p = Producer({{"bootstrap.servers": {bootstrap!r}, "transactional.id": {tid!r}, "linger.ms": 0,
                      "transaction.timeout.ms": 600000}})
        p.init_transactions(30)
        p.begin_transaction()
        p.produce({topic!r}, b"doomed", partition=0)
        p.flush(30)
        os._exit(0)
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)


def _read_committed(bootstrap: str, topic: str) -> tuple[list[bytes], int]:
    """Every record a read_committed consumer gets from partition 0, and the end offset it sees (the LSO)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_name("rc"), "isolation.level": "read_committed",
                  "enable.partition.eof": True, "enable.auto.commit": False})
    try:
        tp = TopicPartition(topic, 0, 0)
        end = c.get_watermark_offsets(tp, timeout=10)[1]
        c.assign([tp])
        got = []
        while True:
            m = c.poll(5)
            if m is None:
                break
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    break
                raise KafkaException(m.error())
            got.append(m.value())
        return got, end
    finally:
        c.close()


def _plain(bootstrap: str, topic: str, value: bytes) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    p.produce(topic, value, partition=0)
    p.flush(10)


def test_list_and_describe(broker: BrokerProcess) -> None:
    topic, open_id, done_id = unique_name("tt"), unique_name("open"), unique_name("done")
    create_topic(broker.bootstrap, topic, partitions=2)
    done = _open_transaction(broker.bootstrap, done_id, topic, 0, b"committed")
    done.commit_transaction(30)
    p = _open_transaction(broker.bootstrap, open_id, topic, 1, b"open")
    try:
        out = _tool(broker, "list")
        assert out.splitlines()[0] == "TransactionalId\tCoordinator\tProducerId\tTransactionState\t"
        rows = {r["TransactionalId"]: r for r in _table(out)}
        assert rows[open_id]["TransactionState"] == "Ongoing" and rows[open_id]["Coordinator"] == "0"
        wait_until(lambda: {r["TransactionalId"]: r["TransactionState"] for r in _table(_tool(broker, "list"))}
                   [done_id] == "CompleteCommit", timeout=30, message="the committed transaction completing")
        # --duration-filter keeps the ongoing transactions older than it
        assert open_id not in {r["TransactionalId"] for r in _table(_tool(broker, "list", "--duration-filter",
                                                                         "3600000"))}

        out = _tool(broker, "describe", "--transactional-id", open_id)
        assert out.splitlines()[0].split("\t")[:-1] == [
            "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
            "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions"]
        (row,) = _table(out)
        assert row["CoordinatorId"] == "0" and row["TransactionalId"] == open_id
        assert row["TransactionState"] == "Ongoing" and row["TopicPartitions"] == f"{topic}-1"
        assert row["ProducerId"] == rows[open_id]["ProducerId"]
        assert int(row["CurrentTransactionStartTimeMs"]) > 0 and int(row["TransactionDurationMs"]) >= 0

        (row,) = _table(_tool(broker, "describe", "--transactional-id", done_id))
        assert row["TransactionState"] == "CompleteCommit" and row["TopicPartitions"] == ""
    finally:
        p.abort_transaction(30)

    missing = run_cli("transactions", "--bootstrap-server", broker.bootstrap, "describe", "--transactional-id",
                      "no-such-id")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.strip() == (
        "Failed to describe transaction state of transactional-id `no-such-id`: DescribeTransactions request for "
        "transactionalId `no-such-id` failed because the ID could not be found. Enable debug logging for "
        "additional detail.")


def test_describe_producers(broker: BrokerProcess) -> None:
    with _open_after_a_plain_record(broker, "dp") as (topic, described):
        out = _tool(broker, "describe-producers", "--topic", topic, "--partition", "0")
        assert out.splitlines()[0].split("\t")[:-1] == ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch",
                                                         "LastSequence", "LastTimestamp",
                                                         "CurrentTransactionStartOffset"]
        rows = {r["ProducerId"]: r for r in _table(out)}
        row = rows[described["ProducerId"]]
        assert row["ProducerEpoch"] == described["ProducerEpoch"] and row["LastSequence"] == "0"
        assert int(row["LastTimestamp"]) > 0
        # the same from the leader named explicitly
        assert described["ProducerId"] in {r["ProducerId"] for r in _table(_tool(
            broker, "describe-producers", "--topic", topic, "--partition", "0", "--broker-id", "0"))}


def test_describe_producers_shows_the_open_transaction_start(broker: BrokerProcess) -> None:
    with _open_after_a_plain_record(broker, "dps") as (topic, described):
        rows = {r["ProducerId"]: r for r in _table(_tool(broker, "describe-producers", "--topic", topic,
                                                         "--partition", "0"))}
        assert rows[described["ProducerId"]]["CurrentTransactionStartOffset"] == "1"
        # the coordinator still has it: not hanging, however short the timeout
        out = _tool(broker, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0")
        assert _table(out) == []
    rows = {r["ProducerId"]: r for r in _table(_tool(broker, "describe-producers", "--topic", topic,
                                                     "--partition", "0"))}
    assert rows[described["ProducerId"]]["CurrentTransactionStartOffset"] == "None"


def _verification(broker: BrokerProcess, enabled: bool) -> None:
    change = (["--add-config", "transaction.partition.verification.enable=false"] if not enabled
              else ["--delete-config", "transaction.partition.verification.enable"])
    r = run_cli("configs", "--bootstrap-server", broker.bootstrap, "--entity-type", "brokers", "--entity-name",
                str(broker.broker_id), "--alter", *change)
    assert r.returncode == 0, r.stdout + r.stderr


def test_find_hanging_and_abort_by_start_offset(broker: BrokerProcess) -> None:
    """Transactional records written by a producer id no coordinator knows: nothing will ever end them.
    Only with transaction.partition.verification.enable=false can they be written (as in Kafka)."""
    topic = unique_name("hang")
    create_topic(broker.bootstrap, topic)
    _plain(broker.bootstrap, topic, b"before")
    _verification(broker, False)
    try:
        with BlockingConnection("127.0.0.1", broker.port, "hanging", 10) as conn:
            init = conn.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), 1)
            batch = build_batch([(None, b"hanging")], producer_id=init.producer_id,
                                producer_epoch=init.producer_epoch, base_sequence=0, is_transactional=True)
            part = ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch)

            def appended() -> bool:  # refused by verification until the dynamic config reaches the broker
                resp = conn.request(ProduceRequest(transactional_id=unique_name("never-initialized"), acks=-1,
                                                   timeout_ms=10000, topic_data=[
                    ProduceRequest.TopicProduceData(name=topic, partition_data=[part])]), 8)
                return resp.responses[0].partition_responses[0].error_code == 0

            wait_until(appended, 30, "the transactional batch appended with verification off")
    finally:
        _verification(broker, True)
    _plain(broker.bootstrap, topic, b"after")
    assert _read_committed(broker.bootstrap, topic) == ([b"before"], 1)  # the LSO stops at the open transaction

    # open for 0 minutes or more: the default 15-minute limit would still call it young
    assert _table(_tool(broker, "find-hanging", "--broker-id", "0")) == []
    (row,) = _table(_tool(broker, "find-hanging", "--broker-id", "0", "--max-transaction-timeout", "0"))
    assert (row["Topic"], row["Partition"], row["ProducerId"], row["StartOffset"], row["CoordinatorEpoch"]) == (
        topic, "0", str(init.producer_id), "1", "-1")
    assert _tool(broker, "abort", "--topic", topic, "--partition", "0", "--start-offset", "1") == ""
    wait_until(lambda: _read_committed(broker.bootstrap, topic) == ([b"before", b"after"], 4), timeout=30,
               message="read_committed moving past the aborted transaction")
    assert _table(_tool(broker, "find-hanging", "--broker-id", "0", "--max-transaction-timeout", "0")) == []


def test_abort_the_transaction_of_a_dead_producer(broker: BrokerProcess) -> None:
    """--producer-id/--producer-epoch/--coordinator-epoch, taken from describe and describe-producers."""
    topic, tid = unique_name("dead"), unique_name("tid")
    create_topic(broker.bootstrap, topic)
    _orphan_transaction(broker.bootstrap, tid, topic)
    _plain(broker.bootstrap, topic, b"after")
    (described,) = _table(_tool(broker, "describe", "--transactional-id", tid))
    assert described["TransactionState"] == "Ongoing" and described["TopicPartitions"] == f"{topic}-0"
    producers = {r["ProducerId"]: r for r in _table(_tool(broker, "describe-producers", "--topic", topic,
                                                          "--partition", "0"))}
    coordinator_epoch = producers[described["ProducerId"]]["LatestCoordinatorEpoch"]
    assert _read_committed(broker.bootstrap, topic) == ([], 0)  # held by the open transaction
    assert _tool(broker, "abort", "--topic", topic, "--partition", "0", "--producer-id", described["ProducerId"],
                 "--producer-epoch", described["ProducerEpoch"], "--coordinator-epoch", coordinator_epoch) == ""
    wait_until(lambda: _read_committed(broker.bootstrap, topic) == ([b"after"], 3), timeout=30,
               message="read_committed moving past the aborted transaction")


def test_argument_errors(broker: BrokerProcess) -> None:
    def error(*args: str) -> str:
        r = run_cli("transactions", *args)
        assert r.returncode == 1 and r.stdout == "" and "Traceback" not in r.stderr, r
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, r.stderr
        return lines[0]

    bs = ("--bootstrap-server", broker.bootstrap)
    assert error("list") == 'Error: Missing required argument "[bootstrap-server]"'
    assert error(*bs) == 'Error: Missing required argument "[COMMAND]"'
    assert error(*bs, "nosuch").startswith("Error: argument COMMAND: invalid choice: 'nosuch'")
    assert error(*bs, "describe") == 'Error: Missing required argument "[transactional-id]"'
    assert error(*bs, "describe-producers", "--topic", "t", "--partition", "x") == (
        "Error: argument --partition: invalid int value: 'x'")
    assert error(*bs, "list", "--bogus") == "Error: --bogus is not a recognized option (see --help)"
    assert error(*bs, "abort", "--topic", "t", "--partition", "0").startswith(
        "The transaction to abort must be identified either with --start-offset")
    assert error(*bs, "abort", "--topic", "t", "--partition", "0", "--producer-id", "5") == (
        "Missing required argument --producer-epoch")
    assert error(*bs, "find-hanging") == (
        "The `find-hanging` command requires either --topic or --broker-id to limit the scope of the search")
    assert error(*bs, "find-hanging", "--broker-id", "0", "--partition", "0") == (
        "The --partition argument requires --topic to be provided")
    missing = unique_name("missing")
    assert error(*bs, "describe-producers", "--topic", missing, "--partition", "0") == (
        f"Failed to describe producers for partition {missing}-0 on leader: The topic '{missing}' does not exist. "
        "Enable debug logging for additional detail.")
    topic = unique_name("noopen")
    create_topic(broker.bootstrap, topic)
    assert error(*bs, "abort", "--topic", topic, "--partition", "0", "--start-offset", "0") == (
        f"Could not find any open transactions starting at offset 0 on partition {topic}-0")
    # describe-producers did not auto-create the missing topic
    assert missing not in AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10).topics
    # the connection flags are also taken after the command
    r = run_cli("transactions", "list", *bs)
    assert r.returncode == 0 and r.stdout.startswith("TransactionalId\t"), r


def test_help() -> None:
    r = run_cli("transactions", "--help")
    assert r.returncode == 0
    for word in ("--bootstrap-server", "--command-config", "list", "describe-producers", "find-hanging", "abort"):
        assert word in r.stdout
    for command, flags in {"list": ["--duration-filter"], "describe": ["--transactional-id"],
                           "describe-producers": ["--topic", "--partition", "--broker-id"],
                           "find-hanging": ["--broker-id", "--max-transaction-timeout", "--topic"],
                           "abort": ["--start-offset", "--producer-id", "--producer-epoch",
                                     "--coordinator-epoch"]}.items():
        r = run_cli("transactions", command, "--help")
        assert r.returncode == 0 and r.stdout.startswith(f"usage: odradek transactions {command}")
        for flag in flags:
            assert flag in r.stdout
