"""The `weblogs` pipeline: web access log lines on topic `access-logs` -> per-minute traffic metrics.

- `events`, `generator`: realistic access events as nginx-style log lines, seeded, at a given rate, with a
  share of malformed lines; produced keyed by client IP.
- `parse`: Spark parsing of lines into typed events, or a dead-letter reason.
- `metrics`: 1-minute event-time windows with a watermark: requests, bytes, status classes and error rates,
  latency p50/p95/p99, top 10 paths, approximate distinct clients.
- `sinks`, `stream_job`: the streaming job writing metrics to topic `access-metrics` (JSON) and to Parquet
  partitioned by date and hour, and malformed lines to `access-logs-dlq`.
- `archive_job`: the batch side: a range of `access-logs` into Parquet with a summary report.
"""

from __future__ import annotations

LOGS_TOPIC = "access-logs"
DLQ_TOPIC = "access-logs-dlq"
METRICS_TOPIC = "access-metrics"
