"""The `odradek` source and sink over SASL_SSL with SCRAM-SHA-512, configured with the Java client's option
names as Spark's Kafka connector takes them (kafka.security.protocol, kafka.sasl.jaas.config,
kafka.ssl.truststore.location): a batch write and a batch read of the same rows, and the sink's broker
probe (idempotence) answering over the secured listener."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from odradek.spark.features import supports_idempotence  # noqa: E402
from odradek.spark.options import client_params  # noqa: E402
from tests.clients import create_topic  # noqa: E402
from tests.harness import BrokerPool, BrokerProcess, free_port, run_cli  # noqa: E402

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def secured(module_brokers: BrokerPool, pem_pki: tuple[Path, Path]) -> tuple[BrokerProcess, dict[str, str]]:
    ca, key = pem_pki
    plain, port = free_port(), free_port()
    broker = module_brokers.start({
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_SSL://127.0.0.1:{port}",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512", "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(key),
    }, name="spark-sasl-ssl", port=plain)
    r = run_cli("configs", "--bootstrap-server", broker.bootstrap, "--alter", "--entity-type", "users",
                "--entity-name", "spark", "--add-config", "SCRAM-SHA-512=[password=spark-secret]")
    assert r.returncode == 0, r.stderr
    options = {
        "kafka.bootstrap.servers": f"127.0.0.1:{port}",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                  'username="spark" password="spark-secret";',
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(ca),
    }
    return broker, options


def test_java_option_names_become_librdkafka_settings(secured: tuple[BrokerProcess, dict[str, str]]) -> None:
    _, options = secured
    params = client_params({k.lower(): v for k, v in options.items()}, {})
    assert params["sasl.username"] == "spark" and params["ssl.ca.location"].endswith("ca.pem")
    assert "sasl.jaas.config" not in params and "ssl.truststore.location" not in params
    assert supports_idempotence(params) is True  # the probe authenticated over SASL_SSL
    wrong = dict(params, **{"sasl.password": "nope"})
    assert supports_idempotence(wrong) is None


def test_batch_write_then_read_over_sasl_ssl(spark: Any, secured: tuple[BrokerProcess, dict[str, str]]) -> None:
    broker, options = secured
    create_topic(broker.bootstrap, "secured-rows", partitions=2)
    rows = [(f"k{i}", f"v{i}") for i in range(200)]
    writer = spark.createDataFrame(rows, "key string, value string").write.format("odradek").mode("append")
    for k, v in {**options, "topic": "secured-rows"}.items():
        writer = writer.option(k, v)
    writer.save()
    reader = spark.read.format("odradek")
    for k, v in {**options, "subscribe": "secured-rows"}.items():
        reader = reader.option(k, v)
    got = reader.load().selectExpr("CAST(key AS STRING) k", "CAST(value AS STRING) v").collect()
    assert sorted((r.k, r.v) for r in got) == sorted(rows)
