"""Per-minute traffic metrics of the access events, as a Spark aggregation over event-time windows.

Per 1-minute window: requests, bytes, requests per status class and the 4xx/5xx error rates, latency
p50/p95/p99 (Spark's exact `percentile`, linear interpolation between the closest ranks), the 10 most
requested paths (count desc, then path asc; from a frequent-items sketch that is exact while a window has
fewer than TOP_K_TRACKED distinct paths) and distinct clients (HyperLogLog++, 1% relative standard error).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

WINDOW = "1 minute"
TOP_PATHS = 10
TOP_K_CANDIDATES = 1000  # items the sketch reports, re-sorted with ties broken by path
TOP_K_TRACKED = 10000
DISTINCT_RSD = 0.01
PERCENTILES = (0.5, 0.95, 0.99)

METRIC_COLUMNS = ("window_start", "window_end", "requests", "bytes", "status_2xx", "status_3xx", "status_4xx",
                  "status_5xx", "error_rate_4xx", "error_rate_5xx", "latency_p50_ms", "latency_p95_ms",
                  "latency_p99_ms", "distinct_clients", "top_paths")


def _class_count(lo: int) -> Column:
    s = F.col("status")
    return F.sum(F.when((s >= lo) & (s < lo + 100), 1).otherwise(0)).cast("long")


_TOP_PATHS_SQL = (
    f"slice(array_sort(transform(top_k, x -> named_struct('path', x.item, 'requests', x.count)), "
    "(a, b) -> CASE WHEN a.requests > b.requests THEN -1 WHEN a.requests < b.requests THEN 1 "
    f"WHEN a.path < b.path THEN -1 WHEN a.path > b.path THEN 1 ELSE 0 END), 1, {TOP_PATHS})"
)


def window_metrics(events: DataFrame, watermark: str = "1 minute") -> DataFrame:
    """Events (columns of parse.EVENT_COLUMNS) -> one row per 1-minute window, columns METRIC_COLUMNS."""
    agg = (
        events.withWatermark("ts", watermark)
        .groupBy(F.window("ts", WINDOW).alias("window"))
        .agg(
            F.count(F.lit(1)).alias("requests"),
            F.sum("bytes").cast("long").alias("bytes"),
            _class_count(200).alias("status_2xx"),
            _class_count(300).alias("status_3xx"),
            _class_count(400).alias("status_4xx"),
            _class_count(500).alias("status_5xx"),
            F.percentile("latency_ms", F.array(*[F.lit(p) for p in PERCENTILES])).alias("latency"),
            F.approx_count_distinct("ip", DISTINCT_RSD).alias("distinct_clients"),
            F.expr(f"approx_top_k(path, {TOP_K_CANDIDATES}, {TOP_K_TRACKED})").alias("top_k"),
        )
    )
    return agg.select(
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        "requests", "bytes", "status_2xx", "status_3xx", "status_4xx", "status_5xx",
        (F.col("status_4xx") / F.col("requests")).alias("error_rate_4xx"),
        (F.col("status_5xx") / F.col("requests")).alias("error_rate_5xx"),
        F.col("latency")[0].alias("latency_p50_ms"),
        F.col("latency")[1].alias("latency_p95_ms"),
        F.col("latency")[2].alias("latency_p99_ms"),
        "distinct_clients",
        F.expr(_TOP_PATHS_SQL).alias("top_paths"),
    )
