"""The weblogs tests' input (`generated`: N seeded records) and plain-Python metrics of it, computed
independently of Spark; `parquet_metrics` reads a job's metrics output back."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from odradek.pipelines.weblogs.generator import GeneratorConfig, LogRecord, WeblogGenerator

START_MS = 1_763_726_400_000  # 2025-11-21T12:00:00Z
N = 12_000


def generated() -> list:
    cfg = GeneratorConfig(seed=7, rate=100.0, malformed_fraction=0.03, start_ms=START_MS + 17_000)
    return WeblogGenerator(cfg).take(N)


def parquet_metrics(metrics_dir: Path) -> dict[int, dict[str, Any]]:
    import pyarrow.dataset as ds

    table = ds.dataset(str(metrics_dir), format="parquet", partitioning="hive").to_table()
    out = {}
    for row in table.to_pylist():
        start = int(row["window_start"].timestamp() * 1000)
        row["window_start"], row["window_end"] = start, int(row["window_end"].timestamp() * 1000)
        out[start] = row
    return out


def spark_percentile(values: list[int], p: float) -> float:
    """Spark's exact `percentile`: linear interpolation between the values at the closest ranks."""
    vals = sorted(values)
    pos = (len(vals) - 1) * p
    lo, hi = math.floor(pos), math.ceil(pos)
    if lo == hi or vals[lo] == vals[hi]:
        return float(vals[lo])
    return (hi - pos) * vals[lo] + (pos - lo) * vals[hi]


def reference_metrics(records: Iterable[LogRecord]) -> dict[int, dict[str, Any]]:
    """{window start ms: metrics} for the well-formed records, 1-minute windows on the logged time."""
    windows: dict[int, list] = defaultdict(list)
    for r in records:
        if r.event is not None:
            windows[r.event.logged_ts_ms // 60_000 * 60_000].append(r.event)
    out = {}
    for start, evs in windows.items():
        n = len(evs)
        classes = Counter(e.status // 100 for e in evs)
        lat = [e.latency_ms for e in evs]
        paths = Counter(e.path for e in evs)
        out[start] = {
            "window_start": start,
            "window_end": start + 60_000,
            "requests": n,
            "bytes": sum(e.bytes for e in evs),
            "status_2xx": classes[2], "status_3xx": classes[3], "status_4xx": classes[4], "status_5xx": classes[5],
            "error_rate_4xx": classes[4] / n,
            "error_rate_5xx": classes[5] / n,
            "latency_p50_ms": spark_percentile(lat, 0.5),
            "latency_p95_ms": spark_percentile(lat, 0.95),
            "latency_p99_ms": spark_percentile(lat, 0.99),
            "distinct_clients": len({e.ip for e in evs}),
            "top_paths": [{"path": p, "requests": c} for p, c in sorted(paths.items(), key=lambda kv: (-kv[1], kv[0]))[:10]],
        }
    return out


EXACT = ("requests", "bytes", "status_2xx", "status_3xx", "status_4xx", "status_5xx", "error_rate_4xx",
         "error_rate_5xx", "top_paths", "window_end")
PERCENTILES = ("latency_p50_ms", "latency_p95_ms", "latency_p99_ms")


def assert_metrics_equal(got: dict[int, dict[str, Any]], want: dict[int, dict[str, Any]]) -> None:
    """Exact for counts, bytes, rates and top paths; percentiles to 1e-9; distinct clients within 3%
    (HyperLogLog++ at 1% relative standard error)."""
    assert sorted(got) == sorted(want)
    for start, w in want.items():
        g = got[start]
        for key in EXACT:
            assert g[key] == w[key], f"window {start}: {key} {g[key]!r} != {w[key]!r}"
        for key in PERCENTILES:
            assert math.isclose(g[key], w[key], rel_tol=1e-9), f"window {start}: {key} {g[key]} != {w[key]}"
        assert abs(g["distinct_clients"] - w["distinct_clients"]) <= max(2, 0.03 * w["distinct_clients"])
