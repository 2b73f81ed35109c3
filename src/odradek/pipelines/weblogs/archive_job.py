"""The weblogs batch job: a range of `access-logs` (by offsets or by timestamps) into Parquet, with a report.

Good events go to OUTPUT/events, partitioned by date and hour (replacing that directory); malformed lines
are counted by reason. The summary (also written as OUTPUT/summary.json) gives the offsets read per
partition, the time span, counts by status class, bytes, latency percentiles, the top paths and distinct
clients.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from odradek.pipelines.weblogs import LOGS_TOPIC
from odradek.pipelines.weblogs.parse import EVENT_COLUMNS, parse_lines


@dataclass(frozen=True)
class ArchiveConfig:
    bootstrap: str
    output: Path
    topic: str = LOGS_TOPIC
    range_options: Mapping[str, str] = field(default_factory=dict)  # startingOffsets, endingTimestamp, ...
    schema_registry_url: str | None = None  # values in Confluent's wire format (schemas.py)


def archive(spark: SparkSession, cfg: ArchiveConfig) -> dict[str, Any]:
    """Run the batch job; returns the summary."""
    reader = spark.read.format("odradek").option("kafka.bootstrap.servers", cfg.bootstrap).option("subscribe", cfg.topic)
    for key, value in cfg.range_options.items():
        reader = reader.option(key, value)
    parsed = parse_lines(reader.load(), cfg.schema_registry_url).cache()
    try:
        events = parsed.where(F.col("reason").isNull()).select(*EVENT_COLUMNS)
        (events.withColumn("date", F.date_format("ts", "yyyy-MM-dd")).withColumn("hour", F.date_format("ts", "HH"))
         .write.mode("overwrite").partitionBy("date", "hour").parquet(str(cfg.output / "events")))
        summary = _summary(parsed, events)
    finally:
        parsed.unpersist()
    cfg.output.mkdir(parents=True, exist_ok=True)
    (cfg.output / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _summary(parsed: Any, events: Any) -> dict[str, Any]:
    offsets = {
        str(r.source_partition): {"from": r.lo, "to": r.hi, "records": r.n}
        for r in parsed.groupBy("source_partition").agg(
            F.min("source_offset").alias("lo"), F.max("source_offset").alias("hi"), F.count(F.lit(1)).alias("n"))
        .orderBy("source_partition").collect()
    }
    bad = {r.reason: r["count"] for r in parsed.where(F.col("reason").isNotNull()).groupBy("reason").count().collect()}
    s = F.col("status")
    row = events.agg(
        F.count(F.lit(1)).alias("events"),
        F.date_format(F.min("ts"), "yyyy-MM-dd'T'HH:mm:ss'Z'").alias("first"),
        F.date_format(F.max("ts"), "yyyy-MM-dd'T'HH:mm:ss'Z'").alias("last"),
        F.sum("bytes").alias("bytes"),
        *[F.sum(F.when((s >= c) & (s < c + 100), 1).otherwise(0)).alias(f"s{c // 100}xx") for c in (200, 300, 400, 500)],
        F.percentile("latency_ms", F.array(F.lit(0.5), F.lit(0.95), F.lit(0.99))).alias("lat"),
        F.approx_count_distinct("ip", 0.01).alias("clients"),
    ).collect()[0]
    top = events.groupBy("path").count().orderBy(F.desc("count"), F.asc("path")).limit(10).collect()
    return {
        "records": sum(v["records"] for v in offsets.values()),
        "offsets": offsets,
        "events": row.events,
        "malformed": sum(bad.values()),
        "malformed_by_reason": dict(sorted(bad.items())),
        "first_event": row.first,
        "last_event": row.last,
        "bytes": row.bytes or 0,
        "status": {k: row[k] or 0 for k in ("s2xx", "s3xx", "s4xx", "s5xx")},
        "latency_ms": dict(zip(("p50", "p95", "p99"), row.lat or (None, None, None), strict=True)),
        "distinct_clients_approx": row.clients,
        "top_paths": [{"path": r.path, "requests": r["count"]} for r in top],
    }


def format_report(summary: Mapping[str, Any]) -> str:
    """The summary as a few lines of text."""
    lines = [
        f"records read:     {summary['records']:,} ({summary['events']:,} events, {summary['malformed']:,} malformed)",
        f"event time:       {summary['first_event']} .. {summary['last_event']}",
        "partitions:       " + ", ".join(f"{p}: [{o['from']}, {o['to']}]" for p, o in summary["offsets"].items()),
        f"bytes served:     {summary['bytes']:,}",
        "status classes:   " + "  ".join(f"{k[1:]} {v:,}" for k, v in summary["status"].items()),
        "latency ms:       " + "  ".join(f"{k} {v:g}" for k, v in summary["latency_ms"].items() if v is not None),
        f"distinct clients: ~{summary['distinct_clients_approx']:,}",
        "top paths:        " + ", ".join(f"{t['path']} ({t['requests']:,})" for t in summary["top_paths"][:5]),
    ]
    if summary["malformed_by_reason"]:
        lines.append("malformed:        " + ", ".join(f"{k} {v:,}" for k, v in summary["malformed_by_reason"].items()))
    return "\n".join(lines)
