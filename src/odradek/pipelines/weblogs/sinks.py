"""Where the streaming job's window metrics go, from a foreachBatch callback on the driver.

Each micro-batch carries the windows whose figures changed (update mode). For each such window:
- Parquet: `<output>/metrics/date=YYYY-MM-DD/hour=HH/window-HHMM.parquet`, one file per window, replaced
  atomically on every update, so the directory always holds each window's latest figures and a batch that
  is replayed after a crash rewrites the same files (idempotent);
- Kafka: one JSON record on `access-metrics` (framed Avro `WindowMetrics` with a schema registry, see
  schemas.py), keyed by the window start (later records of a key supersede
  earlier ones, so a compacted topic keeps the final figures; at-least-once).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from odradek.fsutil import replacing
from odradek.pipelines.weblogs.metrics import METRIC_COLUMNS

PARQUET_SCHEMA = pa.schema([
    pa.field("window_start", pa.timestamp("ms", tz="UTC")),
    pa.field("window_end", pa.timestamp("ms", tz="UTC")),
    *[pa.field(c, pa.int64()) for c in ("requests", "bytes", "status_2xx", "status_3xx", "status_4xx", "status_5xx")],
    *[pa.field(c, pa.float64()) for c in ("error_rate_4xx", "error_rate_5xx", "latency_p50_ms", "latency_p95_ms",
                                          "latency_p99_ms")],
    pa.field("distinct_clients", pa.int64()),
    pa.field("top_paths", pa.list_(pa.struct([pa.field("path", pa.string()), pa.field("requests", pa.int64())]))),
])


def iso_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def metric_dicts(batch: DataFrame) -> list[dict[str, Any]]:
    """The batch's rows as plain dicts, window bounds as epoch milliseconds (no local-time conversion)."""
    rows = batch.select(
        F.unix_millis("window_start").alias("window_start"),
        F.unix_millis("window_end").alias("window_end"),
        *[c for c in METRIC_COLUMNS if not c.startswith("window_")],
    ).collect()
    out = []
    for r in rows:
        d = r.asDict(recursive=True)
        d["top_paths"] = [{"path": p["path"], "requests": p["requests"]} for p in d["top_paths"] or []]
        out.append(d)
    return out


def window_file(output: Path, window_start_ms: int) -> Path:
    t = datetime.fromtimestamp(window_start_ms / 1000, UTC)
    return output / f"date={t:%Y-%m-%d}" / f"hour={t:%H}" / f"window-{t:%H%M}.parquet"


def write_parquet(output: Path, metrics: Iterable[Mapping[str, Any]]) -> list[Path]:
    """Write (or replace) one Parquet file per window; returns the files written."""
    written = []
    for m in metrics:
        path = window_file(output, m["window_start"])
        path.parent.mkdir(parents=True, exist_ok=True)
        table = pa.Table.from_pylist([dict(m)], schema=PARQUET_SCHEMA)
        with replacing(path) as tmp:
            pq.write_table(table, tmp)
        written.append(path)
    return written


def to_json(m: Mapping[str, Any]) -> bytes:
    d = dict(m)
    d["window_start"] = iso_ms(m["window_start"])
    d["window_end"] = iso_ms(m["window_end"])
    return json.dumps(d, separators=(",", ":")).encode()


class MetricsSink:
    """foreachBatch callback: Parquet files and JSON records for the windows a micro-batch updated."""

    def __init__(self, bootstrap: str, topic: str, output: Path, schema_registry_url: str | None = None) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.output = output
        self.schema_registry_url = schema_registry_url
        self._producer: Any = None
        self._avro: Any = None

    def encode(self, m: Mapping[str, Any]) -> bytes:
        """A window's record value: JSON, or framed Avro (WindowMetrics) with a schema registry."""
        if not self.schema_registry_url:
            return to_json(m)
        if self._avro is None:
            from odradek.pipelines.weblogs.schemas import metrics_serializer

            self._avro = metrics_serializer(self.schema_registry_url, self.topic)
        value: bytes = self._avro.encode(dict(m))
        return value

    def producer(self) -> Any:
        if self._producer is None:
            from confluent_kafka import Producer

            self._producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5,
                                       "enable.idempotence": True})
        return self._producer

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        metrics = metric_dicts(batch)
        if not metrics:
            return
        write_parquet(self.output, metrics)
        producer = self.producer()
        failures: list[str] = []
        for m in metrics:
            producer.produce(self.topic, self.encode(m), iso_ms(m["window_start"]).encode(),
                             on_delivery=lambda err, _msg: failures.append(str(err)) if err else None)
        left = producer.flush(30)
        if failures or left:
            raise RuntimeError(f"metrics of batch {batch_id} not acknowledged by {self.topic}: {failures[:1]}")
