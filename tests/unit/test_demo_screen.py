"""The demo's live screen: header, status line, metrics table and legend rendered from its state."""

from __future__ import annotations

import pytest

pytest.importorskip("rich", reason="rich comes with the spark extra")

from rich.console import Console  # noqa: E402

from odradek.pipelines.weblogs.screen import LEGEND, DemoState, render, status_text  # noqa: E402

WINDOW = {"window_start": "2026-11-24T04:01:00Z", "requests": 18000, "bytes": 52_300_000, "error_rate_4xx": 0.0412,
          "error_rate_5xx": 0.0105, "latency_p50_ms": 41.0, "latency_p95_ms": 180.2, "latency_p99_ms": 410.0,
          "distinct_clients": 1234, "top_paths": [{"path": "/", "requests": 900}, {"path": "/api", "requests": 500}]}


def text_of(state: DemoState) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(render(state))
    return console.export_text()


def test_waiting_for_the_first_batch() -> None:
    state = DemoState("127.0.0.1:9092", "access-logs -> access-metrics", "/tmp/out", 60, phase="waiting", produced=1500)
    out = text_of(state)
    assert "broker 127.0.0.1:9092" in out and "Parquet output /tmp/out" in out
    assert "[waiting for the streaming job's first micro-batch]  produced 1,500 events" in out
    assert "Spark: no batch yet" in out
    assert "(the first minute's figures appear with the first micro-batch)" in out
    assert " ".join(LEGEND.split()) in " ".join(out.split())  # the legend, however it wraps


def test_running_shows_clock_batch_and_rows() -> None:
    state = DemoState("127.0.0.1:9092", "t", "/o", 60, phase="running", clock_s=12.4, produced=3600, dead_letters=7,
                      batch={"batchId": 3, "numInputRows": 1500, "processedRowsPerSecond": 900.0}, windows=[WINDOW])
    assert status_text(state).plain == ("[  12 s of 60 s]  produced 3,600 events · dead letters 7 · Spark batch 3: "
                                        "1,500 rows at 900 rows/s")
    row = next(line for line in text_of(state).splitlines() if "2026-11-24 04:01" in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells == ["2026-11-24 04:01", "18,000", "52.3", "4.12", "1.05", "41", "180", "410", "1,234", "/ 900, /api 500"]
