"""The arithmetic and the output lines of the perf-test tools, as Kafka's ProducerPerformance and
ConsumerPerformance print them: windowed and final producer lines with latency percentiles, the
consumer's comma-separated summary, a throughput throttle, and Java's date patterns. No I/O."""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

MB = 1024 * 1024


@dataclass
class Window:
    """Records completed since `start`: since the last periodic report, or over the whole run."""

    start: float
    count: int = 0
    bytes: int = 0
    latency_sum: float = 0.0
    latency_max: float = 0.0

    def add(self, latency_ms: float, size: int) -> None:
        self.count += 1
        self.bytes += size
        self.latency_sum += latency_ms
        self.latency_max = max(self.latency_max, latency_ms)


@dataclass
class ProducerStats(Window):
    """Completed records of the whole run with their latencies (ms); a periodic line every `interval_s`."""

    interval_s: float = 5.0
    latencies: array = field(default_factory=lambda: array("i"))
    window: Window = field(init=False)

    def __post_init__(self) -> None:
        self.window = Window(self.start)

    def record(self, latency_ms: float, size: int, now: float, report: Callable[[str], None]) -> None:
        self.add(latency_ms, size)
        self.latencies.append(int(latency_ms))
        self.window.add(latency_ms, size)
        if now - self.window.start >= self.interval_s:
            report(window_line(self.window, now))
            self.window = Window(now)

    def summary(self, now: float) -> str:
        elapsed = max(now - self.start, 1e-9)
        p50, p95, p99, p999 = percentiles(self.latencies, (0.5, 0.95, 0.99, 0.999))
        return (f"{self.count} records sent, {self.count / elapsed:f} records/sec "
                f"({self.bytes / elapsed / MB:.2f} MB/sec), {self.latency_sum / max(self.count, 1):.2f} ms avg latency, "
                f"{self.latency_max:.2f} ms max latency, {p50} ms 50th, {p95} ms 95th, {p99} ms 99th, "
                f"{p999} ms 99.9th.")


def window_line(w: Window, now: float) -> str:
    elapsed = max(now - w.start, 1e-9)
    return (f"{w.count} records sent, {w.count / elapsed:.1f} records/sec ({w.bytes / elapsed / MB:.2f} MB/sec), "
            f"{w.latency_sum / max(w.count, 1):.1f} ms avg latency, {w.latency_max:.1f} ms max latency.")


def percentiles(values: array, ranks: tuple[float, ...]) -> list[int]:
    """Kafka's reading: the sorted latencies at index int(rank * n)."""
    if not values:
        return [0] * len(ranks)
    ordered = sorted(values)
    return [ordered[min(int(rank * len(ordered)), len(ordered) - 1)] for rank in ranks]


class Throttle:
    """Keeps a sender at `per_second` records/s (negative: unlimited) by sleeping when ahead."""

    def __init__(self, per_second: float, start: float, sleep: Callable[[float], None] = time.sleep) -> None:
        self.per_second = per_second
        self.start = start
        self.sleep = sleep

    def pace(self, sent: int, now: float) -> None:
        if self.per_second <= 0:
            return
        ahead = sent / self.per_second - (now - self.start)
        if ahead > 0.001:
            self.sleep(ahead)


CONSUMER_HEADER = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
                   "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
DETAILED_HEADER = ("time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
                   "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")


def consumer_line(start: float, end: float, consumed_bytes: int, messages: int, rebalance_ms: int,
                  date_format: str) -> str:
    """ConsumerPerformance's summary: totals over the whole run, fetch figures without the rebalance."""
    elapsed_s = max(end - start, 1e-9)
    fetch_ms = max(int(elapsed_s * 1000) - rebalance_ms, 0)
    mb = consumed_bytes / MB
    fetch_s = fetch_ms / 1000
    return (f"{java_date(start, date_format)}, {java_date(end, date_format)}, {mb:.4f}, {mb / elapsed_s:.4f}, "
            f"{messages}, {messages / elapsed_s:.4f}, {rebalance_ms}, {fetch_ms}, "
            f"{mb / fetch_s if fetch_s else 0.0:.4f}, {messages / fetch_s if fetch_s else 0.0:.4f}")


_JAVA_FIELDS = (("yyyy", "%Y"), ("yy", "%y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"), ("mm", "%M"),
                ("ss", "%S"))


def java_date(epoch_s: float, pattern: str) -> str:
    """`epoch_s` in local time by a java.text.SimpleDateFormat pattern (the fields the tools use)."""
    t = datetime.fromtimestamp(epoch_s)
    out = pattern.replace("SSS", f"{t.microsecond // 1000:03d}")
    for java, strf in _JAVA_FIELDS:
        out = out.replace(java, strf)
    return t.strftime(out)
