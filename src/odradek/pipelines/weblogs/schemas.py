"""The weblogs pipeline with a schema registry: the Avro schemas of its topics and their serializers.

With a registry URL the pipeline writes Confluent's wire format and registers each value schema under its
topic's TopicNameStrategy subject (`<topic>-value`); keys stay plain UTF-8 strings (the client IP, the
window's start), as a Confluent producer with a StringSerializer key writes them.

- `access-logs`: record `AccessLogLine {line: string}`: the log line as the web server wrote it; parsing
  stays the job's (a damaged line is still a line). A line that is not UTF-8 cannot be an Avro string: the
  generator sends those bytes as they are, unframed, as a producer without the serializer would, and the
  job dead-letters them as `undecodable value`.
- `access-logs-dlq`: the dead letters keep the original record's bytes (framed with access-logs' schema id,
  or whatever undecodable bytes came), so its subject gets the same schema (the same id).
- `access-metrics`: record `WindowMetrics`, the columns of metrics.METRIC_COLUMNS, window bounds as
  timestamp-millis.
"""

from __future__ import annotations

from typing import Any

from odradek.pipelines.weblogs import DLQ_TOPIC, LOGS_TOPIC, METRICS_TOPIC
from odradek.serde.avro import AvroDeserializer, AvroSerializer, subject_for
from odradek.serde.registry_client import RegistryClient

NAMESPACE = "odradek.weblogs"
LINE_SCHEMA: dict[str, Any] = {
    "type": "record", "name": "AccessLogLine", "namespace": NAMESPACE,
    "doc": "One web access log line, nginx's combined format followed by the request time",
    "fields": [{"name": "line", "type": "string"}],
}
_TIMESTAMP = {"type": "long", "logicalType": "timestamp-millis"}
METRICS_SCHEMA: dict[str, Any] = {
    "type": "record", "name": "WindowMetrics", "namespace": NAMESPACE,
    "doc": "Traffic of one 1-minute event-time window (the latest figures for the window win)",
    "fields": [
        {"name": "window_start", "type": _TIMESTAMP},
        {"name": "window_end", "type": _TIMESTAMP},
        *[{"name": c, "type": "long"} for c in ("requests", "bytes", "status_2xx", "status_3xx", "status_4xx",
                                               "status_5xx")],
        *[{"name": c, "type": "double"} for c in ("error_rate_4xx", "error_rate_5xx", "latency_p50_ms",
                                                 "latency_p95_ms", "latency_p99_ms")],
        {"name": "distinct_clients", "type": "long"},
        {"name": "top_paths", "type": {"type": "array", "items": {
            "type": "record", "name": "TopPath", "fields": [
                {"name": "path", "type": "string"}, {"name": "requests", "type": "long"}]}}},
    ],
}
LOGS_SUBJECT = subject_for(LOGS_TOPIC)
DLQ_SUBJECT = subject_for(DLQ_TOPIC)
METRICS_SUBJECT = subject_for(METRICS_TOPIC)


class LineSerializer:
    """Log lines (bytes) -> framed AccessLogLine; bytes that are not UTF-8 pass through unframed."""

    def __init__(self, url: str, topic: str = LOGS_TOPIC) -> None:
        self.avro = AvroSerializer(RegistryClient(url), subject_for(topic), LINE_SCHEMA)

    def encode(self, value: bytes | None) -> tuple[bytes | None, bool]:
        """(bytes to produce, whether they are framed)."""
        if value is None:
            return None, True
        try:
            line = value.decode("utf-8")
        except UnicodeDecodeError:
            return value, False
        return self.avro.encode({"line": line}), True


def metrics_serializer(url: str, topic: str = METRICS_TOPIC) -> AvroSerializer:
    return AvroSerializer(RegistryClient(url), subject_for(topic), METRICS_SCHEMA)


def register_job_schemas(url: str, source_topic: str = LOGS_TOPIC, dlq_topic: str = DLQ_TOPIC,
                         metrics_topic: str = METRICS_TOPIC) -> dict[str, int]:
    """Register what the streaming job reads and writes (subject -> id), before it starts: a registry that
    is down or refuses a schema stops the job at once, not in its first micro-batch."""
    client = RegistryClient(url)
    subjects = {subject_for(source_topic): LINE_SCHEMA, subject_for(dlq_topic): LINE_SCHEMA,
                subject_for(metrics_topic): METRICS_SCHEMA}
    return {s: AvroSerializer(client, s, schema).register() for s, schema in subjects.items()}


def metrics_deserializer(url: str) -> AvroDeserializer:
    """Reads access-metrics' values (into WindowMetrics; an older writer's schema resolves into it)."""
    return AvroDeserializer(RegistryClient(url), METRICS_SCHEMA)
