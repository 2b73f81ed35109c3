"""The demo's live screen, drawn with rich: a header that stays (where the broker, topics and output
are, and the run's clock), one status line (events produced, dead letters, the last Spark batch), the
per-minute metrics table, and a legend of its columns. Pure rendering: the demo feeds it state and the
terminal's size, and the screen fits it (80x24 included): below 120 columns the top-paths column and
its legend go, and the table shows as many of the latest minutes as there are lines left."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rich import box
from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

LEGEND = (
    "requests: access events in the minute · MB: response bytes served · 4xx/5xx %: share of client/server "
    "errors · p50/p95/p99: response time percentiles (ms) · clients: distinct client IPs"
)
TOP_PATHS_LEGEND = " · top paths: most requested paths with their counts"
WIDE = 120  # columns from which the table shows its top paths


@dataclass
class DemoState:
    bootstrap: str
    topics: str
    output: str
    duration_s: float
    phase: str = "starting"  # starting, waiting (for the first metrics), running, stopping
    clock_s: float = 0.0  # since the first metrics arrived
    produced: int = 0
    dead_letters: int = 0
    batch: Mapping[str, Any] = field(default_factory=dict)
    windows: Iterable[Mapping[str, Any]] = ()
    links: Mapping[str, str] = field(default_factory=dict)  # e.g. "metrics" -> the broker's /metrics URL


def metrics_table(windows: Iterable[Mapping[str, Any]], limit: int = 10, top_paths: bool = True) -> Table:
    """The latest `limit` windows, oldest first (headers over their columns, numbers right-aligned)."""
    table = Table(expand=False, header_style="bold", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    columns = [("window (UTC)", "left"), ("requests", "right"), ("MB", "right"), ("4xx %", "right"),
               ("5xx %", "right"), ("p50", "right"), ("p95", "right"), ("p99", "right"), ("clients", "right")]
    if top_paths:
        columns.append(("top paths", "left"))
    for name, justify in columns:
        table.add_column(name, justify=justify, no_wrap=True, overflow="ellipsis")  # type: ignore[arg-type]
    rows = sorted(windows, key=lambda m: m["window_start"])[-limit:] if limit > 0 else []
    for m in rows:
        start = str(m["window_start"])
        cells = [f"{start[:10]} {start[11:16]}", f"{m['requests']:,}", f"{m['bytes'] / 1e6:.1f}",
                 f"{100 * m['error_rate_4xx']:.2f}", f"{100 * m['error_rate_5xx']:.2f}",
                 f"{m['latency_p50_ms']:.0f}", f"{m['latency_p95_ms']:.0f}", f"{m['latency_p99_ms']:.0f}",
                 f"{m['distinct_clients']:,}"]
        if top_paths:
            cells.append(", ".join(f"{p['path']} {p['requests']}" for p in m.get("top_paths", [])[:3]))
        table.add_row(*cells)
    if not rows:
        table.add_row("(none yet)", *[""] * (len(columns) - 1))
    return table


def status_text(state: DemoState) -> Text:
    if state.phase == "waiting":
        clock = "waiting for the streaming job's first micro-batch"
    else:
        clock = f"{min(state.clock_s, state.duration_s):4.0f} s of {state.duration_s:g} s"
    batch = state.batch
    spark = (f"Spark batch {batch.get('batchId', '-')}: {batch.get('numInputRows', 0):,} rows at "
             f"{batch.get('processedRowsPerSecond', 0) or 0:,.0f} rows/s") if batch else "Spark: no batch yet"
    return Text(f"[{clock}]  produced {state.produced:,} events · dead letters {state.dead_letters:,} · {spark}")


def _lines(text: str, width: int) -> int:
    """How many terminal lines `text` takes at `width` columns (rich wraps at spaces, never more tightly)."""
    return sum(max(1, math.ceil(len(line) / max(width, 1))) for line in text.split("\n"))


def render(state: DemoState, width: int = WIDE, height: int = 40) -> Group:
    """The screen for a terminal of `width` x `height`."""
    header = Text.assemble(
        ("Odradek demo", "bold"), f"  broker {state.bootstrap} · topics {state.topics}\n",
        f"Parquet output {state.output} · Ctrl-C stops early",
        *(f"\n{name} {url}" for name, url in state.links.items()))
    wide = width >= WIDE
    legend = Text(LEGEND + (TOP_PATHS_LEGEND if wide else ""), style="dim")
    status = status_text(state)
    used = (_lines(header.plain, width - 4) + 2 + _lines(status.plain, width) + _lines(legend.plain, width)
            + 2 + 1)  # the panel's borders, the table's header and rule, the line the cursor rests on
    rows = max(0, min(10, height - used))
    return Group(Panel(header, expand=False), status, metrics_table(state.windows, rows, top_paths=wide), legend)
