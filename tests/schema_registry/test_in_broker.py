"""The registry inside the broker: `schema_registry_api` makes `odradek server-start` serve Confluent's REST API
too, its schemas in the broker's own `_schemas` topic; confluent-kafka-python's API-client suite passes against it
as against the separate process (its Avro, JSON Schema and Protobuf serializer suites too, with --run-slow: a
minute more; tests/schema_registry/test_confluent_python_suite.py runs them against the separate process by
default)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness import BrokerProcess, free_port
from tests.schema_registry.helpers import RestClient, in_broker_config, in_broker_registry
from tests.schema_registry.test_confluent_python_suite import run_suite

PORT = free_port()


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return in_broker_config(PORT)


@pytest.fixture(scope="module")
def in_broker(broker: BrokerProcess) -> RestClient:
    return in_broker_registry(PORT)


def test_the_broker_serves_the_registry(in_broker: RestClient, broker: BrokerProcess) -> None:
    assert in_broker.call("GET", "/") == (200, {})
    schema = json.dumps({"type": "record", "name": "RestClient", "fields": [{"name": "a", "type": "int"}]})
    status, body = in_broker.call("POST", "/subjects/in-broker/versions", {"schema": schema})
    assert status == 200 and body["id"] >= 1
    assert "Schema registry listening on" in broker.output()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("file", ["test_api_client.py", *(pytest.param(f, marks=pytest.mark.slow) for f in (
    "test_avro_serializers.py", "test_json_serializers.py", "test_proto_serializers.py"))])
def test_confluent_suite_against_the_broker(file: str, in_broker: RestClient, broker: BrokerProcess,
                                            tmp_path: Path) -> None:
    counts, output = run_suite(file, broker, in_broker, tmp_path)
    print(f"{file} against the broker's registry: {counts}")
    assert counts.get("passed", 0) > 0 and not counts.get("failed") and not counts.get("error"), output


def test_client_and_console_consumer_decode_the_wire_format(in_broker: RestClient, broker: BrokerProcess) -> None:
    """odradek.serde's client against the broker's registry, and `console-consumer` with Confluent's
    AvroMessageFormatter flags: values printed as Avro JSON with their schema ids; a record without the magic
    byte and one with an unknown id are reported with their offsets (skipped with --skip-message-on-error,
    else the consumer stops there with status 1)."""
    from odradek.pipelines.weblogs.schemas import LINE_SCHEMA
    from odradek.serde.avro import AvroSerializer
    from odradek.serde.registry_client import RegistryClient, RegistryError
    from odradek.serde.wire import frame
    from tests.clients import create_topic, produce, unique_name
    from tests.harness import run_cli

    topic = unique_name("avro-lines")
    client = RegistryClient(in_broker.url)
    ser = AvroSerializer(client, f"{topic}-value", LINE_SCHEMA)
    schema_id = ser.register()
    assert client.latest(f"{topic}-value").schema_id == schema_id == RegistryClient(in_broker.url).schema_by_id(schema_id).schema_id
    with pytest.raises(RegistryError) as unknown:
        client.schema_by_id(999_999)
    assert unknown.value.error_code == 40403
    create_topic(broker.bootstrap, topic)
    values = [ser.encode({"line": "GET / 200"}), b"plain text", frame(999_999, b"\x02a"), ser.encode({"line": "é"})]
    produce(broker.bootstrap, topic, values, partition=0, key=b"10.0.0.1")
    avro_flags = ["--bootstrap-server", broker.bootstrap, "--topic", topic, "--from-beginning", "--timeout-ms", "5000",
                  "--formatter", "io.confluent.kafka.formatter.AvroMessageFormatter",
                  "--property", f"schema.registry.url={in_broker.url}", "--property", "print.schema.ids=true",
                  "--property", "print.key=true",
                  "--property", "key.deserializer=org.apache.kafka.common.serialization.StringDeserializer"]

    skipped = run_cli("console-consumer", *avro_flags, "--max-messages", "4", "--skip-message-on-error")
    assert skipped.returncode == 0, skipped.stderr
    assert skipped.stdout.splitlines() == [f'10.0.0.1\t{{"line":"GET / 200"}}\t{schema_id}',
                                           f'10.0.0.1\t{{"line":"é"}}\t{schema_id}']
    assert f"skipping this message: cannot decode the value of {topic}-0@1: unknown magic byte 0x70" in skipped.stderr
    assert f"skipping this message: cannot decode the value of {topic}-0@2: schema id 999999 is unknown" in skipped.stderr
    assert "Processed a total of 4 messages" in skipped.stderr

    stopped = run_cli("console-consumer", *avro_flags)
    assert stopped.returncode == 1
    assert stopped.stdout.splitlines() == [f'10.0.0.1\t{{"line":"GET / 200"}}\t{schema_id}']
    assert f"terminating consumer process: cannot decode the value of {topic}-0@1: unknown magic byte" in stopped.stderr
    assert "Traceback" not in stopped.stderr

    # the same through Confluent's deserializer flag with the default formatter; no URL is one usage line
    by_flag = run_cli("console-consumer", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--partition",
                      "0", "--offset", "3", "--max-messages", "1", "--timeout-ms", "5000", "--value-deserializer",
                      "io.confluent.kafka.serializers.KafkaAvroDeserializer",
                      "--property", f"schema.registry.url={in_broker.url}")
    assert by_flag.returncode == 0 and by_flag.stdout == '{"line":"é"}\n', by_flag.stderr
    no_url = run_cli("console-consumer", "--bootstrap-server", broker.bootstrap, "--topic", topic,
                     "--formatter", "io.confluent.kafka.formatter.AvroMessageFormatter")
    assert no_url.returncode != 0 and "schema.registry.url" in no_url.stderr and "Traceback" not in no_url.stderr
