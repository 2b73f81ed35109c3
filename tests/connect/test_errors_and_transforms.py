"""A sink connector with transforms and `errors.tolerance=all`: a record its converter cannot read goes to the
dead letter queue with Kafka's context headers, the others are transformed and written, nothing stops."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from tests.clients import create_topic, unique_name
from tests.connect_helpers import Worker
from tests.harness import BrokerProcess
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def worker(broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    w = Worker(tmp_path_factory.mktemp("connect-errors"), broker)
    w.start()
    yield w
    w.stop()


def test_a_bad_record_goes_to_the_dead_letter_queue(worker: Worker, broker: BrokerProcess, tmp_path: Path) -> None:
    topic, dlq = unique_name("events"), unique_name("dlq")
    create_topic(broker.bootstrap, topic)
    create_topic(broker.bootstrap, dlq)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for value in (b'{"msg":"a"}', b"not json", b'{"msg":"b"}'):
        p.produce(topic, value=value)
    assert p.flush(30) == 0
    out = tmp_path / "out.txt"
    status, body = worker.call("PUT", f"/connectors/{unique_name('tolerant')}/config", {
        "connector.class": "FileStreamSink", "file": str(out), "topics": topic,
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
        "transforms": "msg", "transforms.msg.type": "org.apache.kafka.connect.transforms.ExtractField$Value",
        "transforms.msg.field": "msg", "errors.tolerance": "all", "errors.log.enable": "true",
        "errors.deadletterqueue.topic.name": dlq, "errors.deadletterqueue.context.headers.enable": "true"})
    assert status == 201, body
    wait_until(lambda: out.exists() and out.read_text() == "a\nb\n", 60, lambda: f"a and b: {worker.output()[-2000:]}")
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": dlq, "auto.offset.reset": "earliest"})
    c.subscribe([dlq])
    got = []
    wait_until(lambda: got.extend(m for m in c.consume(10, 1) if not m.error()) or got, 60, "the DLQ record")
    c.close()
    assert got[0].value() == b"not json"
    headers = {k: v.decode() for k, v in got[0].headers()}
    assert headers["__connect.errors.topic"] == topic and headers["__connect.errors.offset"] == "1"
    assert headers["__connect.errors.exception.class.name"] == "DataException"


def test_invalid_transform_config_is_refused(worker: Worker, tmp_path: Path) -> None:
    status, body = worker.call("PUT", f"/connectors/{unique_name('bad')}/config", {
        "connector.class": "FileStreamSink", "file": str(tmp_path / "x"), "topics": "t",
        "transforms": "x", "transforms.x.type": "org.apache.kafka.connect.transforms.NoSuch$Value"})
    assert status == 400 and "could not be found" in body["message"]
