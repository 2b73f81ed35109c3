"""The weblogs Structured Streaming job: `access-logs` -> metrics (topic + Parquet) and dead letters.

Two queries read and parse the topic, each with its own checkpoint under CHECKPOINT:
- `metrics`: good events -> 1-minute windows with a watermark (update mode) -> MetricsSink;
- `dead-letters`: malformed lines -> `access-logs-dlq` through the odradek sink, with the reason in headers.
Parsing never fails the job: a bad line is a dead letter. Outputs are under OUTPUT/metrics.
With `schema_registry_url` the job registers its topics' schemas before it starts, reads framed Avro and
writes its metrics as framed Avro (schemas.py); dead letters keep their original bytes.
Each query commits its progress to the consumer group `odradek-pipeline-<query name>` (see `group_id`), so
`odradek consumer-groups`, the console and the lag metric show how far behind the topic it is; restarts
read only the checkpoints.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from odradek.pipelines.weblogs import DLQ_TOPIC, LOGS_TOPIC, METRICS_TOPIC
from odradek.pipelines.weblogs.metrics import window_metrics
from odradek.pipelines.weblogs.parse import dead_letters, good_events, parse_lines
from odradek.pipelines.weblogs.sinks import MetricsSink

AVAILABLE_NOW = "available-now"
METRICS_QUERY = "weblogs-metrics"
DEAD_LETTERS_QUERY = "weblogs-dead-letters"


def group_id(query: str) -> str:
    """The consumer group a query of the job commits its progress to (monitoring only)."""
    return f"odradek-pipeline-{query}"


@dataclass(frozen=True)
class JobConfig:
    """Where to read and write, and how often."""

    bootstrap: str
    checkpoint: Path
    output: Path
    trigger: str = "5s"  # a processing-time interval, or "available-now"
    watermark: str = "1 minute"
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None
    source_topic: str = LOGS_TOPIC
    metrics_topic: str = METRICS_TOPIC
    dlq_topic: str = DLQ_TOPIC
    schema_registry_url: str | None = None

    @property
    def metrics_dir(self) -> Path:
        return self.output / "metrics"


def _interval(trigger: str) -> str:
    t = trigger.strip().lower()
    for suffix, unit in (("ms", "milliseconds"), ("s", "seconds"), ("m", "minutes")):
        if t.endswith(suffix) and t[: -len(suffix)].strip().replace(".", "", 1).isdigit():
            return f"{t[: -len(suffix)].strip()} {unit}"
    return trigger


def read_logs(spark: SparkSession, cfg: JobConfig, query: str) -> DataFrame:
    """The source topic as read by `query`, which commits its progress to the group `group_id(query)`."""
    reader = (spark.readStream.format("odradek").option("kafka.bootstrap.servers", cfg.bootstrap)
              .option("subscribe", cfg.source_topic).option("startingOffsets", cfg.starting_offsets)
              .option("groupId", group_id(query)))
    if cfg.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(cfg.max_offsets_per_trigger))
    return reader.load()


def start(spark: SparkSession, cfg: JobConfig) -> list[StreamingQuery]:
    """Start both queries; returns them (metrics first)."""

    def triggered(writer: object) -> object:
        if cfg.trigger.strip().lower() == AVAILABLE_NOW:
            return writer.trigger(availableNow=True)  # type: ignore[attr-defined]
        return writer.trigger(processingTime=_interval(cfg.trigger))  # type: ignore[attr-defined]

    url = cfg.schema_registry_url
    if url:
        from odradek.pipelines.weblogs.schemas import register_job_schemas

        register_job_schemas(url, cfg.source_topic, cfg.dlq_topic, cfg.metrics_topic)
    metrics = window_metrics(good_events(parse_lines(read_logs(spark, cfg, METRICS_QUERY), url)), cfg.watermark)
    mq = triggered(
        metrics.writeStream.queryName(METRICS_QUERY).outputMode("update")
        .foreachBatch(MetricsSink(cfg.bootstrap, cfg.metrics_topic, cfg.metrics_dir, url))
        .option("checkpointLocation", str(cfg.checkpoint / "metrics"))
    ).start()  # type: ignore[attr-defined]
    dq = triggered(
        dead_letters(parse_lines(read_logs(spark, cfg, DEAD_LETTERS_QUERY), url), cfg.source_topic).writeStream
        .queryName(DEAD_LETTERS_QUERY).format("odradek")
        .option("kafka.bootstrap.servers", cfg.bootstrap).option("topic", cfg.dlq_topic)
        .option("checkpointLocation", str(cfg.checkpoint / "dead-letters"))
    ).start()  # type: ignore[attr-defined]
    return [mq, dq]
