"""Schema ID Validation on produce (Confluent Server's `confluent.{key,value}.schema.validation` topic configs):
records from confluent-kafka's own Avro, JSON Schema and Protobuf serializers pass; records with an unregistered schema id,
without the wire format's magic byte, or with a schema registered under another subject are refused with
INVALID_RECORD, each named in record_errors, and nothing of their batch is appended (the log end offset does not
move); both record-name strategies, key validation, every compression codec, validation turned on and off at
runtime. One broker with its own registry (consulted in process) serves most tests; one broker asks a separate
registry process over HTTP with basic auth, which is then killed: a retriable error, not a hang."""

from __future__ import annotations

import json
import struct
import subprocess
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import ConfigResource, ResourceType
from confluent_kafka.schema_registry import (
    SchemaRegistryClient,
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
)
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from kafka.protocol.producer import ProduceRequest

from odradek.protocol.records import build_batch
from tests.clients import alter_configs, create_topic, kafka_error_of, unique_name
from tests.harness import NO_REBALANCE_DELAY, BrokerPool, BrokerProcess, free_port, odradek_cmd, wait_port
from tests.rawclient import RawClient
from tests.schema_registry.helpers import Registry, RestClient, wait_primary
from tests.waiting import wait_until

PORT = free_port()
URL = f"http://127.0.0.1:{PORT}"
VALUE_ON = {"confluent.value.schema.validation": "true"}
USER = json.dumps({"type": "record", "name": "User", "namespace": "com.acme",
                   "fields": [{"name": "name", "type": "string"}]})
PASSWORD = "registry-secret-7"
ORDER = json.dumps({"title": "Order", "type": "object", "properties": {"id": {"type": "integer"}}})


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return {**NO_REBALANCE_DELAY, "schema_registry_api": URL}


@pytest.fixture(scope="module")
def registry(broker: BrokerProcess) -> SchemaRegistryClient:
    wait_port(PORT, 60)
    wait_primary(RestClient(URL))
    return SchemaRegistryClient({"url": URL})


def wire(schema_id: int, payload: bytes = b"\x02") -> bytes:
    return b"\x00" + struct.pack(">i", schema_id) + payload


def avro(client: SchemaRegistryClient, topic: str, obj: dict, field: str = MessageField.VALUE,
         schema: str = USER, **conf: object) -> bytes:
    return AvroSerializer(client, schema, conf=conf)(obj, SerializationContext(topic, field))


def send(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None]],
         compression: str = "none") -> list[str]:
    """Produce `records` as one batch (one linger, no retries); the delivery error of each by name ("" when
    delivered)."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 200, "retries": 0, "enable.idempotence": False,
                  "compression.type": compression})
    errors: dict[int, str] = {}
    for i, (key, value) in enumerate(records):
        p.produce(topic, value, key, on_delivery=lambda err, _msg, i=i: errors.__setitem__(i, err.name() if err else ""))
    assert p.flush(30) == 0
    return [errors[i] for i in range(len(records))]


def end_offset(bootstrap: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "x"})
    try:
        return int(c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        c.close()


def raw_produce(port: int, topic: str, records: list[tuple[bytes | None, bytes | None]]) -> object:
    with RawClient(port) as c:
        req = ProduceRequest(transactional_id=None, acks=1, timeout_ms=30000, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[
                ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=build_batch(records))])])
        return c.request(req, version=9).responses[0].partition_responses[0]


def test_serialized_records_pass_and_bad_ones_are_refused(broker: BrokerProcess,
                                                          registry: SchemaRegistryClient) -> None:
    topic = unique_name("validated")
    create_topic(broker.bootstrap, topic, config=VALUE_ON)
    good = [(None, avro(registry, topic, {"name": n})) for n in ("ann", "bob", "cy")]
    assert send(broker.bootstrap, topic, [*good, (b"any key", None)]) == ["", "", "", ""]  # null value: passes
    assert end_offset(broker.bootstrap, topic) == 4
    elsewhere = avro(registry, "other-topic", {"name": "x"}, schema=json.dumps(
        {"type": "record", "name": "Elsewhere", "fields": [{"name": "name", "type": "string"}]}))
    for bad in (wire(987_654), b'{"name": "no magic byte"}', elsewhere, b"\x00\x00"):
        assert send(broker.bootstrap, topic, [(None, bad)]) == ["INVALID_RECORD"]
    assert end_offset(broker.bootstrap, topic) == 4  # nothing of the refused batches was appended

    part = raw_produce(broker.port, topic, [good[0], (None, b"raw"), good[1], (None, elsewhere)])
    assert part.error_code == 87  # INVALID_RECORD
    errors = [(e.batch_index, e.batch_index_error_message) for e in part.record_errors]
    assert [i for i, _ in errors] == [1, 3]
    assert errors[0][1] == (f"Record 1 of the batch to {topic}-0 failed schema validation: its value is not in "
                            "Confluent's wire format (magic byte 0, then a 4-byte schema id)")
    elsewhere_id = struct.unpack(">i", elsewhere[1:5])[0]
    assert errors[1][1] == (f"Record 3 of the batch to {topic}-0 failed schema validation: its value's schema id "
                            f"{elsewhere_id} is not registered under subject {topic}-value (TopicNameStrategy)")
    assert part.error_message == f"{errors[0][1]} (2 of 4 records failed)"
    assert end_offset(broker.bootstrap, topic) == 4


def test_record_name_strategies(broker: BrokerProcess, registry: SchemaRegistryClient) -> None:
    by_record = unique_name("by-record")
    by_topic_record = unique_name("by-topic-record")
    create_topic(broker.bootstrap, by_record, config={
        **VALUE_ON, "confluent.value.subject.name.strategy": "io.confluent.kafka.serializers.subject.RecordNameStrategy"})
    create_topic(broker.bootstrap, by_topic_record, config={
        **VALUE_ON,
        "confluent.value.subject.name.strategy": "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"})
    order = JSONSerializer(ORDER, registry, conf={"subject.name.strategy": record_subject_name_strategy})(
        {"id": 1}, SerializationContext(by_record, MessageField.VALUE))  # subject "Order", its title
    user = avro(registry, by_topic_record, {"name": "ann"},
                **{"subject.name.strategy": topic_record_subject_name_strategy})  # "<topic>-com.acme.User"
    assert send(broker.bootstrap, by_record, [(None, order)]) == [""]
    assert send(broker.bootstrap, by_topic_record, [(None, user)]) == [""]
    assert send(broker.bootstrap, by_topic_record, [(None, order)]) == ["INVALID_RECORD"]  # Order is not here
    assert send(broker.bootstrap, by_record, [(None, user)]) == ["INVALID_RECORD"]  # com.acme.User: no subject


def test_protobuf_records_by_their_first_message(broker: BrokerProcess, registry: SchemaRegistryClient) -> None:
    """confluent-kafka's ProtobufSerializer under RecordNameStrategy registers the file under its message's full
    name (`shop.Order`), which is the file's first message: the name the broker reads from the schema."""

    proto = descriptor_pb2.FileDescriptorProto(name="shop_order.proto", package="shop", syntax="proto3")
    order = proto.message_type.add(name="Order")
    order.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    proto.message_type.add(name="Line")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    message = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))
    topic = unique_name("protobuf")
    create_topic(broker.bootstrap, topic, config={
        **VALUE_ON, "confluent.value.subject.name.strategy": "io.confluent.kafka.serializers.subject.RecordNameStrategy"})
    serialize = ProtobufSerializer(message, registry, conf={"subject.name.strategy": record_subject_name_strategy,
                                                            "use.deprecated.format": False})
    value = serialize(message(id="o-1"), SerializationContext(topic, MessageField.VALUE))
    assert send(broker.bootstrap, topic, [(None, value)]) == [""]
    assert send(broker.bootstrap, topic, [(None, value[:5] + b"not protobuf framing")]) == [""]  # ids, not data
    assert send(broker.bootstrap, topic, [(None, b"\x08\x01")]) == ["INVALID_RECORD"]


@pytest.mark.parametrize("compression", ["gzip", "snappy", "lz4", "zstd"])
def test_keys_are_validated_in_compressed_batches(broker: BrokerProcess, registry: SchemaRegistryClient,
                                                  compression: str) -> None:
    topic = unique_name(f"keys-{compression}")
    create_topic(broker.bootstrap, topic, config={"confluent.key.schema.validation": "true"})
    key = avro(registry, topic, "k", field=MessageField.KEY, schema='"string"')  # subject <topic>-key
    batch = [(key, b"raw values are not validated")] * 200 + [(None, b"null key passes")]
    assert send(broker.bootstrap, topic, batch, compression) == [""] * 201
    results = send(broker.bootstrap, topic, [*batch[:50], (b"raw key", b"v")], compression)
    assert results[-1] == "INVALID_RECORD"
    # librdkafka may split the records into two batches on a loaded machine (the first records sent before the
    # rest were queued): a batch before the bad one's is appended, the bad one's is refused whole
    assert results == [""] * results.count("") + ["INVALID_RECORD"] * (len(results) - results.count(""))
    assert end_offset(broker.bootstrap, topic) == 201 + results.count("")


def test_validation_turned_on_and_off_at_runtime(broker: BrokerProcess, registry: SchemaRegistryClient) -> None:
    topic = unique_name("runtime")
    create_topic(broker.bootstrap, topic)
    assert send(broker.bootstrap, topic, [(None, b"raw")]) == [""]
    subprocess.run(odradek_cmd("configs", "--bootstrap-server", broker.bootstrap, "--alter", "--entity-type",
                               "topics", "--entity-name", topic, "--add-config",
                               "confluent.value.schema.validation=true"), check=True, capture_output=True,
                   timeout=60)
    wait_until(lambda: send(broker.bootstrap, topic, [(None, b"raw")]) == ["INVALID_RECORD"], 30,
               "validation turned on by kafka-configs")
    err = kafka_error_of(lambda: alter_configs(broker.bootstrap, ResourceType.TOPIC, topic,
                                               **{"confluent.value.subject.name.strategy": "TopicNameStrategy"}))
    assert err.code() == KafkaError.INVALID_CONFIG
    alter_configs(broker.bootstrap, ResourceType.TOPIC, topic, **{"confluent.value.schema.validation": None})
    wait_until(lambda: send(broker.bootstrap, topic, [(None, b"raw")]) == [""], 30, "validation turned off")
    described = broker_admin_describe(broker, topic)
    assert described["confluent.value.schema.validation"] == "false"
    assert described["confluent.key.subject.name.strategy"].endswith(".TopicNameStrategy")


def test_hostile_batches_cost_bounded_work(broker: BrokerProcess, registry: SchemaRegistryClient) -> None:
    """Thousands of distinct bogus ids cost one round of lookups; a compressed bomb is refused at the
    decompression bound (8 MiB here) without being inflated; huge and negative ids, garbage: INVALID_RECORD;
    the broker serves the next good batch at once."""
    topic = unique_name("hostile")
    create_topic(broker.bootstrap, topic, config=VALUE_ON)
    start = time.monotonic()
    part = raw_produce(broker.port, topic, [(None, wire(10_000_000 + i)) for i in range(5000)])
    assert part.error_code == 87 and 0 < len(part.record_errors) <= 16
    for value in (wire(0x7FFFFFFF), wire(-1), b"\x00", b"\xff" * 100):
        assert raw_produce(broker.port, topic, [(None, value)]).error_code == 87
    bomb = build_batch([(None, wire(1, bytes(32 * 1024 * 1024)))], compression=4)  # zstd, ~1 KB on the wire
    with RawClient(broker.port) as c:
        req = ProduceRequest(transactional_id=None, acks=1, timeout_ms=30000, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[
                ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=bomb)])])
        answer = c.request(req, version=9).responses[0].partition_responses[0]
    assert answer.error_code == 87 and "decompress to more than 8388608 bytes" in answer.error_message
    assert time.monotonic() - start < 15
    good = avro(registry, topic, {"name": "ann"})
    assert send(broker.bootstrap, topic, [(None, good)]) == [""]
    assert end_offset(broker.bootstrap, topic) == 1


def broker_admin_describe(broker: BrokerProcess, topic: str) -> dict[str, str]:
    from tests.clients import admin

    res = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin(broker.bootstrap).describe_configs([res])[res].result(20)
    return {name: entry.value for name, entry in entries.items()}


# ---- a registry over HTTP, then down -------------------------------------------------------------------

@pytest.fixture(scope="module")
def http_setup(module_brokers: BrokerPool, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[tuple[BrokerProcess, Registry]]:
    """A broker whose validation asks a registry process over HTTP, with basic auth (the registry keeps its
    schemas in that broker; the broker starts first and validates nothing until the registry answers)."""
    port = free_port()
    root = tmp_path_factory.mktemp("http-registry")
    (root / "users.properties").write_text(f"admin: {PASSWORD},admin\n")
    (root / "jaas.conf").write_text('SchemaRegistry-Props {\n  org.eclipse.jetty.jaas.spi.PropertyFileLoginModule '
                                    f'required\n  file="{root / "users.properties"}";\n}};\n')
    node = Registry(root / "node", f"127.0.0.1:{port}", {
        "authentication.method": "BASIC", "authentication.realm": "SchemaRegistry-Props",
        "authentication.roles": "admin", "authentication.jaas.file": str(root / "jaas.conf")})
    other = module_brokers.start({**NO_REBALANCE_DELAY, "confluent.schema.registry.url": node.url,
                                  "confluent.basic.auth.credentials.source": "USER_INFO",
                                  "confluent.basic.auth.user.info": f"admin:{PASSWORD}"},
                                 name="http-broker", port=port)
    node.start()
    node.auth = ("admin", PASSWORD)
    try:
        wait_primary(node)
        yield other, node
    finally:
        node.stop()


def test_a_registry_over_http_with_basic_auth_and_then_down(http_setup: tuple[BrokerProcess, Registry]) -> None:
    other, node = http_setup
    client = SchemaRegistryClient({"url": node.url, "basic.auth.user.info": f"admin:{PASSWORD}"})
    topic = unique_name("over-http")
    create_topic(other.bootstrap, topic, config=VALUE_ON)
    good = avro(client, topic, {"name": "ann"})
    assert send(other.bootstrap, topic, [(None, good)]) == [""]
    assert send(other.bootstrap, topic, [(None, wire(55_555))]) == ["INVALID_RECORD"]
    node.kill()
    start = time.monotonic()
    part = raw_produce(other.port, topic, [(None, wire(66_666))])  # not in the broker's cache
    assert part.error_code == 6  # NOT_LEADER_OR_FOLLOWER: retriable, as Confluent Server answers
    assert "Cannot validate the schema ids of records" in part.error_message
    assert PASSWORD not in part.error_message and PASSWORD not in other.output()
    assert time.monotonic() - start < 10
    assert raw_produce(other.port, topic, [(None, good)]).error_code == 0  # a cached id still validates
    assert end_offset(other.bootstrap, topic) == 2
