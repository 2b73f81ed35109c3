"""The perf-test tools' arithmetic and lines, as Kafka's ProducerPerformance and ConsumerPerformance."""

from __future__ import annotations

from array import array
from datetime import datetime

from odradek.cli.perf_stats import ProducerStats, Throttle, consumer_line, java_date, percentiles


def test_percentiles_are_kafkas_index_reading() -> None:
    values = array("i", range(1, 1001))  # 1..1000 ms
    assert percentiles(values, (0.5, 0.95, 0.99, 0.999)) == [501, 951, 991, 1000]
    assert percentiles(array("i"), (0.5,)) == [0]


def test_producer_lines() -> None:
    lines: list[str] = []
    stats = ProducerStats(start=100.0, interval_s=5.0)
    for i in range(10):
        stats.record(latency_ms=2.0 + i, size=1024 * 1024, now=100.0 + i * 0.6, report=lines.append)
    assert lines == ["10 records sent, 1.9 records/sec (1.85 MB/sec), 6.5 ms avg latency, 11.0 ms max latency."]
    assert stats.summary(now=110.0) == ("10 records sent, 1.000000 records/sec (1.00 MB/sec), 6.50 ms avg latency, "
                                        "11.00 ms max latency, 7 ms 50th, 11 ms 95th, 11 ms 99th, 11 ms 99.9th.")


def test_throttle_sleeps_only_when_ahead() -> None:
    slept: list[float] = []
    t = Throttle(100.0, start=0.0, sleep=slept.append)
    t.pace(sent=50, now=0.1)  # 50 records due by 0.5 s
    t.pace(sent=50, now=0.6)
    assert slept == [0.4]
    Throttle(-1, start=0.0, sleep=slept.append).pace(sent=10**6, now=0.0)
    assert slept == [0.4]


def test_consumer_line_and_java_dates() -> None:
    start = datetime(2026, 11, 24, 3, 4, 5, 678000).timestamp()
    assert java_date(start, "yyyy-MM-dd HH:mm:ss:SSS") == "2026-11-24 03:04:05:678"
    line = consumer_line(start, start + 2.0, 2 * 1024 * 1024, 20_000, rebalance_ms=1000,
                         date_format="yyyy-MM-dd HH:mm:ss:SSS")
    assert line == ("2026-11-24 03:04:05:678, 2026-11-24 03:04:07:678, 2.0000, 1.0000, 20000, 10000.0000, 1000, "
                    "1000, 2.0000, 20000.0000")
