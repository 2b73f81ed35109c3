"""The weblogs pipeline and the Spark source with a schema registry (the broker's own, `schema_registry_api`):
the generator writes framed Avro under `access-logs-value`, the jobs' parsing reads it back through
`from_avro` into the same events as the plain-text input gives, hostile values (not UTF-8, no magic byte, an
unknown schema id) become the dead-letter reason `undecodable value`, and `odradek.spark.avro.from_avro` is
Databricks' interface: PERMISSIVE nulls, FAILFAST fails naming the cause and the way out.
One small batch run; the Avro <-> Spark type mapping is checked without Spark."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.harness import BrokerProcess, free_port, wait_port
from tests.schema_registry.helpers import in_broker_config

PORT = free_port()


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return in_broker_config(PORT)


def test_avro_types_map_as_sparks_schema_converters() -> None:
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
    from odradek.pipelines.weblogs.schemas import METRICS_SCHEMA
    from odradek.spark.avro import spark_type_of

    assert spark_type_of(METRICS_SCHEMA).simpleString() == (
        "struct<window_start:timestamp,window_end:timestamp,requests:bigint,bytes:bigint,status_2xx:bigint,"
        "status_3xx:bigint,status_4xx:bigint,status_5xx:bigint,error_rate_4xx:double,error_rate_5xx:double,"
        "latency_p50_ms:double,latency_p95_ms:double,latency_p99_ms:double,distinct_clients:bigint,"
        "top_paths:array<struct<path:string,requests:bigint>>>")
    schema = {"type": "record", "name": "R", "namespace": "n", "fields": [
        {"name": "opt", "type": ["null", "string"]}, {"name": "num", "type": ["int", "long"]},
        {"name": "any", "type": ["null", "string", "int"]},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
        {"name": "again", "type": "Kind"}, {"name": "m", "type": {"type": "map", "values": "double"}},
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}}]}
    assert spark_type_of(schema).simpleString() == (
        "struct<opt:string,num:bigint,any:struct<member0:string,member1:int>,kind:string,again:string,"
        "m:map<string,double>,d:decimal(9,2),day:date>")
    # values as pyarrow takes them for those types: the union's branch found, the map as pairs
    import datetime as dt
    import decimal

    from odradek.serde.avro import parse_schema, schema_text
    from odradek.spark.avro import _Types

    parsed = parse_schema(schema_text(schema))
    convert = _Types(parsed).converter(parsed)
    assert convert({"opt": None, "num": 5, "any": 7, "kind": "A", "again": "B", "m": {"x": 1.5},
                    "d": decimal.Decimal("1.25"), "day": dt.date(2026, 1, 2)}) == {
        "opt": None, "num": 5, "any": {"member0": None, "member1": 7}, "kind": "A", "again": "B",
        "m": [("x", 1.5)], "d": decimal.Decimal("1.25"), "day": dt.date(2026, 1, 2)}
    with pytest.raises(ValueError, match="recursive"):
        spark_type_of({"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]})


def test_the_jobs_schemas_and_its_metrics_records(broker: BrokerProcess, tmp_path: Path) -> None:
    """The streaming job's start registers its three subjects (the dead letters under access-logs' schema);
    the metrics sink's records decode to the figures it was given, and to the JSON records' shape in the demo's
    view. No Spark: the sink's encoding is the seam."""
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
    from odradek.cli.demo import metrics_from_avro
    from odradek.pipelines.weblogs.schemas import (
        DLQ_SUBJECT,
        LOGS_SUBJECT,
        METRICS_SUBJECT,
        metrics_deserializer,
        register_job_schemas,
    )
    from odradek.pipelines.weblogs.sinks import MetricsSink, to_json
    from odradek.serde.wire import unframe
    from tests.clients import consume_all, unique_name
    from tests.harness import run_cli
    from tests.waiting import wait_until

    url = f"http://127.0.0.1:{PORT}"
    wait_port(PORT, 60)

    def registered() -> dict[str, int] | None:
        try:
            return register_job_schemas(url)
        except Exception:  # the registry elects its primary a moment after the broker is up
            return None

    ids = wait_until(registered, 60, "the job's schemas registered")
    assert set(ids) == {LOGS_SUBJECT, DLQ_SUBJECT, METRICS_SUBJECT} and ids[LOGS_SUBJECT] == ids[DLQ_SUBJECT]
    assert register_job_schemas(url) == ids  # registering again changes nothing
    m = {"window_start": 1_763_726_400_000, "window_end": 1_763_726_460_000, "requests": 3, "bytes": 10,
         "status_2xx": 2, "status_3xx": 0, "status_4xx": 1, "status_5xx": 0, "error_rate_4xx": 1 / 3,
         "error_rate_5xx": 0.0, "latency_p50_ms": 12.0, "latency_p95_ms": 80.5, "latency_p99_ms": 99.0,
         "distinct_clients": 2, "top_paths": [{"path": "/", "requests": 2}, {"path": "/cart", "requests": 1}]}
    value = MetricsSink(broker.bootstrap, "access-metrics", Path("unused"), url).encode(m)
    assert unframe(value)[0] == ids[METRICS_SUBJECT]
    assert metrics_from_avro(metrics_deserializer(url), value) == json.loads(to_json(m))
    assert metrics_from_avro(metrics_deserializer(url), b"not framed") is None
    assert MetricsSink(broker.bootstrap, "access-metrics", Path("unused")).encode(m) == to_json(m)

    # the commands: generate writes framed records; a registry that is not there is one line, before Spark
    topic = unique_name("cli-logs")
    made = run_cli("pipeline", "generate", "weblogs", "--bootstrap-server", broker.bootstrap, "--topic", topic,
                   "--partitions", "1", "--count", "20", "--start-time", "2026-01-01T00:00:00Z",
                   "--schema-registry-url", url)
    assert made.returncode == 0 and "Produced 20 records" in made.stdout, made.stderr
    assert {unframe(m.value())[0] for m in consume_all(broker.bootstrap, topic, 20) if m.value()} <= {ids[LOGS_SUBJECT]}
    nowhere = f"http://127.0.0.1:{free_port()}"
    for action in (["generate", "weblogs", "--count", "1"], ["archive", "weblogs", "--output", str(tmp_path)]):
        failed = run_cli("pipeline", *action, "--bootstrap-server", broker.bootstrap, "--schema-registry-url", nowhere)
        assert failed.returncode == 1 and "schema registry unreachable" in failed.stderr, failed.stderr
        assert "Traceback" not in failed.stderr and "Starting Spark" not in failed.stdout


def test_pipeline_parsing_and_from_avro_over_the_registry(spark: Any, broker: BrokerProcess) -> None:
    from pyspark.sql import functions as F

    from odradek.pipelines.weblogs import LOGS_TOPIC, reasons
    from odradek.pipelines.weblogs.generator import GeneratorConfig, WeblogGenerator, produce_records
    from odradek.pipelines.weblogs.parse import parse_lines
    from odradek.pipelines.weblogs.schemas import LINE_SCHEMA, LOGS_SUBJECT
    from odradek.pipelines.weblogs.topics import ensure_topics
    from odradek.serde.avro import AvroSerializer
    from odradek.serde.registry_client import RegistryClient
    from odradek.serde.wire import frame
    from odradek.spark import from_avro
    from odradek.spark.avro import PERMISSIVE
    from tests.clients import produce
    from tests.waiting import wait_until

    url = f"http://127.0.0.1:{PORT}"
    wait_port(PORT, 60)
    ensure_topics(broker.bootstrap)
    # event times of a few minutes ago: the hostile records below carry today's time, and a year-old segment
    # they were appended to would roll (segment.ms counts by record times) and go by 7-day retention
    start_ms = int(time.time() * 1000) // 60_000 * 60_000 - 600_000
    records = WeblogGenerator(GeneratorConfig(seed=11, rate=20.0, malformed_fraction=0.1, start_ms=start_ms)).take(400)

    def produced() -> Any:
        try:
            return produce_records(broker.bootstrap, LOGS_TOPIC, records, schema_registry_url=url)
        except Exception:  # the registry elects its primary a moment after the broker is up
            return None

    stats = wait_until(produced, 60, "the generator's schema registered")
    whole = AvroSerializer(RegistryClient(url), LOGS_SUBJECT, LINE_SCHEMA).encode({"line": "GET / " * 10})
    assert whole is not None
    hostile = [b"plain text", frame(987_654, b"\x02a"), b"\x00\x00", whole[:-7]]  # the last one truncated
    produce(broker.bootstrap, LOGS_TOPIC, hostile, partition=0)

    def reason(r: Any) -> str | None:
        if r.value is not None and not _utf8(r.value):
            return reasons.UNDECODABLE
        return r.malformed

    want = Counter(reason(r) for r in records if reason(r))
    assert stats.malformed == want and want[reasons.UNDECODABLE] > 0
    want[reasons.UNDECODABLE] += len(hostile)
    raw = spark.read.format("odradek").option("kafka.bootstrap.servers", broker.bootstrap) \
        .option("subscribe", LOGS_TOPIC).load()
    # the jobs' parsing (both the streaming and the archive job start with it), and from_avro beside it
    log = from_avro("raw_value", options={"mode": PERMISSIVE}, subject=LOGS_SUBJECT, schemaRegistryAddress=url)
    parsed = parse_lines(raw, url).withColumn("log", log)
    assert parsed.schema["log"].dataType.simpleString() == "struct<line:string>"
    rows = parsed.groupBy("reason").agg(F.count(F.lit(1)).alias("n"), F.count("log").alias("decoded"),
                                        F.sum("bytes").alias("bytes")).collect()
    by_reason = {r.reason: r.n for r in rows}
    events = [r.event for r in records if r.event]
    assert by_reason.pop(None) == len(events)
    assert by_reason == dict(want)
    assert sum(r.decoded for r in rows) == sum(r.value is not None and _utf8(r.value) for r in records)
    assert [r.bytes for r in rows if r.reason is None] == [sum(e.bytes for e in events)]
    # Spark's own from_avro: plain Avro (no registry) with the schema given
    import io

    import fastavro

    plain = io.BytesIO()
    fastavro.schemaless_writer(plain, fastavro.parse_schema(LINE_SCHEMA), {"line": "x"})
    given = spark.createDataFrame([(plain.getvalue(),), (None,)], "value binary")
    decoded = given.select(from_avro("value", json.dumps(LINE_SCHEMA)).alias("log")).collect()
    assert [r.log and r.log.asDict() for r in decoded] == [{"line": "x"}, None]
    failfast = raw.select(from_avro("value", json.dumps(LINE_SCHEMA), schemaRegistryAddress=url).alias("log"))
    with pytest.raises(Exception, match="Malformed Avro record: .*set the from_avro option 'mode' to 'PERMISSIVE'"):
        failfast.where("log IS NULL").count()


def _utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False
