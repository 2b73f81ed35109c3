"""Spark parsing of access log lines (Kafka rows of `access-logs`) into typed events or a dead-letter reason.

All in Spark SQL expressions (no Python UDF): one regular expression splits the line, then each field is
converted with try_* functions so that bad input gives a reason instead of a failed query (ANSI mode).
With a schema registry the values are framed Avro (`AccessLogLine`): the line is decoded first (in
PERMISSIVE mode, a Python UDF), and a value that does not decode is the dead letter `undecodable value`.
"""

from __future__ import annotations

import json

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from odradek.pipelines.weblogs import reasons

LINE_RE = r'^(\S+) \S+ \S+ \[([^\]]+)\] "(\S+) (\S+) (\S+)" (\S+) (\S+) "([^"]*)" "([^"]*)" (\S+)$'
TIME_FORMAT = "dd/MMM/yyyy:HH:mm:ss Z"

EVENT_COLUMNS = ("ts", "ip", "method", "path", "status", "bytes", "latency_ms", "user_agent", "referrer")


def _group(line: Column, i: int) -> Column:
    return F.regexp_extract(line, LINE_RE, i)


def _line_of(value: Column, schema_registry_url: str | None) -> tuple[Column, Column]:
    """(the line, whether the value failed to decode) of a Kafka value."""
    if not schema_registry_url:
        return value.cast("string"), F.lit(False)
    from odradek.pipelines.weblogs.schemas import LINE_SCHEMA
    from odradek.spark.avro import PERMISSIVE, from_avro

    decoded = from_avro(value, json.dumps(LINE_SCHEMA), {"mode": PERMISSIVE}, schemaRegistryAddress=schema_registry_url)
    return decoded.getField("line"), value.isNotNull() & decoded.isNull()


def parse_lines(raw: DataFrame, schema_registry_url: str | None = None) -> DataFrame:
    """Kafka rows -> the event columns, `reason` (null when the line is good) and the record's origin
    (`raw_key`, `raw_value`, `source_partition`, `source_offset`, `source_timestamp`). With a registry URL,
    values are decoded from Confluent's wire format first."""
    line = F.col("line")
    decoded_line, undecodable = _line_of(F.col("value"), schema_registry_url)
    with_line = raw.select(
        F.col("key").alias("raw_key"),
        F.col("value").alias("raw_value"),
        F.col("partition").alias("source_partition"),
        F.col("offset").alias("source_offset"),
        F.col("timestamp").alias("source_timestamp"),
        decoded_line.alias("line"),
        undecodable.alias("undecodable"),
    )
    fields = with_line.select(
        "*",
        line.rlike(LINE_RE).alias("matched"),
        F.try_to_timestamp(_group(line, 2), F.lit(TIME_FORMAT)).alias("ts"),
        _group(line, 1).alias("ip"),
        _group(line, 3).alias("method"),
        _group(line, 4).alias("path"),
        F.expr(f"try_cast(regexp_extract(line, '{_sql(LINE_RE)}', 6) AS INT)").alias("status"),
        F.when(_group(line, 7) == "-", F.lit(0).cast("long"))
        .otherwise(F.expr(f"try_cast(regexp_extract(line, '{_sql(LINE_RE)}', 7) AS BIGINT)")).alias("bytes"),
        F.expr(f"try_cast(try_cast(regexp_extract(line, '{_sql(LINE_RE)}', 10) AS DECIMAL(12,3)) * 1000 AS INT)")
        .alias("latency_ms"),
        _group(line, 9).alias("user_agent"),
        _group(line, 8).alias("referrer"),
    )
    reason = (
        F.when(F.col("undecodable"), F.lit(reasons.UNDECODABLE))
        .when(F.col("line").isNull() | (F.length("line") == 0), F.lit(reasons.EMPTY))
        .when(~F.col("matched"), F.lit(reasons.UNPARSEABLE))
        .when(F.col("ts").isNull(), F.lit(reasons.BAD_TIMESTAMP))
        .when(F.col("status").isNull() | ~F.col("status").between(100, 599), F.lit(reasons.BAD_STATUS))
        .when(F.col("bytes").isNull() | (F.col("bytes") < 0), F.lit(reasons.BAD_BYTES))
        .when(F.col("latency_ms").isNull() | (F.col("latency_ms") < 0), F.lit(reasons.BAD_LATENCY))
    )
    return fields.withColumn("reason", reason).drop("matched", "line", "undecodable")


def _sql(pattern: str) -> str:
    """A regex as the body of a SQL string literal."""
    return pattern.replace("\\", "\\\\").replace("'", "\\'")


def good_events(parsed: DataFrame) -> DataFrame:
    """The well-formed events, typed."""
    return parsed.where(F.col("reason").isNull()).select(*EVENT_COLUMNS)


def dead_letters(parsed: DataFrame, source_topic: str) -> DataFrame:
    """Malformed lines as Kafka rows for the dead-letter topic: the original key and value, the reason and
    the origin in headers (odradek.dlq.reason, .topic, .partition, .offset)."""

    def header(name: str, value: Column) -> Column:
        return F.struct(F.lit(name).alias("key"), value.cast("string").cast("binary").alias("value"))

    return parsed.where(F.col("reason").isNotNull()).select(
        F.col("raw_key").alias("key"),
        F.col("raw_value").alias("value"),
        F.array(
            header("odradek.dlq.reason", F.col("reason")),
            header("odradek.dlq.topic", F.lit(source_topic)),
            header("odradek.dlq.partition", F.col("source_partition")),
            header("odradek.dlq.offset", F.col("source_offset")),
        ).alias("headers"),
    )
