"""Text rendering of the weblogs window metrics (the JSON records of `access-metrics`) as a table, the
top-paths column only where the terminal is wide enough for it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

HEADER = (f"{'window (UTC)':<17} {'requests':>8} {'MB':>7} {'4xx %':>6} {'5xx %':>6} {'p50 ms':>7} {'p95 ms':>7} "
          f"{'p99 ms':>7} {'clients':>7}")
TOP_PATHS = "  top paths"
TOP_PATHS_FROM = 120  # terminal columns


def _row(m: Mapping[str, Any], top_paths: bool) -> str:
    start = str(m["window_start"])  # 2025-11-21T12:00:00Z
    window = f"{start[:10]} {start[11:16]}"
    top = ", ".join(f"{p['path']} {p['requests']}" for p in m.get("top_paths", [])[:3])
    return (f"{window:<17} {m['requests']:>8,} {m['bytes'] / 1e6:>7.1f} {100 * m['error_rate_4xx']:>6.2f} "
            f"{100 * m['error_rate_5xx']:>6.2f} {m['latency_p50_ms']:>7.0f} {m['latency_p95_ms']:>7.0f} "
            f"{m['latency_p99_ms']:>7.0f} {m['distinct_clients']:>7,}" + (f"  {top}" if top_paths else ""))


def render_table(metrics: Iterable[Mapping[str, Any]], limit: int = 10, width: int = TOP_PATHS_FROM) -> str:
    """The latest `limit` windows, oldest first, under a header line, for a terminal `width` columns wide."""
    top_paths = width >= TOP_PATHS_FROM
    header = HEADER + (TOP_PATHS if top_paths else "")
    rows = sorted(metrics, key=lambda m: m["window_start"])[-limit:]
    lines = [header, "-" * len(header)]
    lines += [_row(m, top_paths) for m in rows] or ["(no complete micro-batch yet)"]
    return "\n".join(lines)
