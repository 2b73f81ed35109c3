"""The registry inside the broker: `schema_registry_api` makes `odradek server-start` serve Confluent's REST API
too, its schemas in the broker's own `_schemas` topic; confluent-kafka-python's API-client suite passes against it
as against the separate process (its Avro, JSON Schema and Protobuf serializer suites too, with --run-slow: a
minute more; tests/schema_registry/test_confluent_python_suite.py runs them against the separate process by
default)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness import NO_REBALANCE_DELAY, BrokerProcess, free_port, wait_port
from tests.schema_registry.conftest import wait_primary
from tests.schema_registry.helpers import RestClient
from tests.schema_registry.test_confluent_python_suite import run_suite

PORT = free_port()


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return {**NO_REBALANCE_DELAY, "schema_registry_api": f"http://127.0.0.1:{PORT}"}


@pytest.fixture(scope="module")
def in_broker(broker: BrokerProcess) -> RestClient:
    wait_port(PORT, 60)
    node = RestClient(f"http://127.0.0.1:{PORT}")
    wait_primary(node)
    return node


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
