"""The demo's live screen: header, status line, metrics table and legend rendered from its state, fitting
the terminal (80x24 included)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("rich", reason="rich comes with the spark extra")

from rich.console import Console  # noqa: E402

from odradek.pipelines.weblogs.screen import LEGEND, TOP_PATHS_LEGEND, DemoState, render, status_text  # noqa: E402

WINDOW = {"window_start": "2026-11-24T04:01:00Z", "requests": 18000, "bytes": 52_300_000, "error_rate_4xx": 0.0412,
          "error_rate_5xx": 0.0105, "latency_p50_ms": 41.0, "latency_p95_ms": 180.2, "latency_p99_ms": 410.0,
          "distinct_clients": 1234, "top_paths": [{"path": "/", "requests": 900}, {"path": "/api", "requests": 500}]}


def text_of(state: DemoState, width: int = 200, height: int = 50) -> str:
    console = Console(width=width, height=height, record=True, color_system=None)
    console.print(render(state, width, height))
    return console.export_text()


def windows(n: int) -> list[dict[str, object]]:
    return [{**WINDOW, "window_start": f"2026-11-24T04:{i:02d}:00Z"} for i in range(n)]


LINKS = {"broker metrics (Prometheus)": "http://127.0.0.1:45123/metrics",
         "web console": "http://127.0.0.1:39811/?token=" + "x" * 43}


def test_waiting_for_the_first_batch() -> None:
    state = DemoState("127.0.0.1:9092", "access-logs -> access-metrics", "/tmp/out", 60, phase="waiting", produced=1500)
    out = text_of(state)
    assert "broker 127.0.0.1:9092" in out and "Parquet output /tmp/out" in out
    assert "[waiting for the streaming job's first micro-batch]  produced 1,500 events" in out
    assert "Spark: no batch yet" in out
    assert "(none yet)" in out
    assert " ".join((LEGEND + TOP_PATHS_LEGEND).split()) in " ".join(out.split())  # the legend, however it wraps


def test_running_shows_clock_batch_and_rows() -> None:
    state = DemoState("127.0.0.1:9092", "t", "/o", 60, phase="running", clock_s=12.4, produced=3600, dead_letters=7,
                      batch={"batchId": 3, "numInputRows": 1500, "processedRowsPerSecond": 900.0}, windows=[WINDOW])
    assert status_text(state).plain == ("[  12 s of 60 s]  produced 3,600 events · dead letters 7 · Spark batch 3: "
                                        "1,500 rows at 900 rows/s")
    row = next(line for line in text_of(state).splitlines() if "2026-11-24 04:01" in line)
    cells = re.split(r"\s{2,}", row.strip())
    assert cells == ["2026-11-24 04:01", "18,000", "52.3", "4.12", "1.05", "41", "180", "410", "1,234", "/ 900, /api 500"]


@pytest.mark.parametrize(("width", "height"), [(80, 24), (100, 30), (132, 43)])
def test_the_screen_fits_the_terminal(width: int, height: int) -> None:
    state = DemoState("127.0.0.1:40123", "access-logs -> access-metrics, access-logs-dlq",
                      "/tmp/odradek-demo-output-abcdefgh", 60, phase="running", clock_s=42, produced=123_456,
                      dead_letters=1_234, batch={"batchId": 17, "numInputRows": 1500, "processedRowsPerSecond": 900.0},
                      windows=windows(30), links=LINKS)
    lines = text_of(state, width, height).rstrip("\n").split("\n")
    assert len(lines) < height, "\n".join(lines)  # the last line is the cursor's
    assert max(len(line) for line in lines) <= width
    header = next(line for line in lines if "window (UTC)" in line)
    assert re.split(r"\s{2,}", header.strip())[:9] == ["window (UTC)", "requests", "MB", "4xx %", "5xx %", "p50",
                                                       "p95", "p99", "clients"]
    assert "…" not in "\n".join(lines)
    shown = [line for line in lines if re.match(r"\s*2026-11-24 04:\d\d", line)]
    assert shown and shown[-1].strip().startswith("2026-11-24 04:29")  # the latest minutes
    assert " ".join(LEGEND.split()) in " ".join(" ".join(lines).split())
    assert ("top paths" in header) == (width >= 120)


def test_the_final_table_fits_80_columns_and_shows_top_paths_when_wide() -> None:
    from odradek.pipelines.weblogs.dashboard import render_table

    narrow = render_table(windows(3), width=80).splitlines()
    assert max(len(line) for line in narrow) <= 80 and "top paths" not in narrow[0]
    assert narrow[-1].split()[:3] == ["2026-11-24", "04:02", "18,000"]
    wide = render_table(windows(3), width=160).splitlines()
    assert "top paths" in wide[0] and wide[-1].endswith("/ 900, /api 500")
