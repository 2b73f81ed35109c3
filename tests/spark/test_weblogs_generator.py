"""The weblogs generator: reproducible, realistic shape, labelled malformed lines (no Spark, no broker)."""

from __future__ import annotations

from collections import Counter

from odradek.pipelines.weblogs import reasons
from odradek.pipelines.weblogs.events import AccessEvent
from odradek.pipelines.weblogs.generator import GeneratorConfig, WeblogGenerator

T0 = 1_700_000_000_000


def take(n: int, **kw: object) -> list:
    return WeblogGenerator(GeneratorConfig(start_ms=T0, **kw)).take(n)  # type: ignore[arg-type]


def test_same_seed_same_records_other_seed_other_records() -> None:
    assert take(2000, seed=5, malformed_fraction=0.05) == take(2000, seed=5, malformed_fraction=0.05)
    assert take(200, seed=5) != take(200, seed=6)


def test_line_format_and_keys() -> None:
    ev = AccessEvent(ts_ms=T0 + 1234, ip="203.0.113.7", method="GET", path="/a", status=200, bytes=10,
                     latency_ms=1087, user_agent="curl/8.5.0", referrer="-")
    assert ev.to_line() == '203.0.113.7 - - [14/Nov/2023:22:13:21 +0000] "GET /a HTTP/1.1" 200 10 "-" "curl/8.5.0" 1.087'
    for r in take(500, seed=1):
        assert r.key == r.event.ip.encode() and r.value == r.event.to_line().encode()


def test_rate_and_time_order() -> None:
    recs = take(5000, seed=2, rate=250.0)
    span_s = (recs[-1].ts_ms - recs[0].ts_ms) / 1000
    assert 18 < span_s < 22  # 5000 events at 250/s
    assert all(a.ts_ms <= b.ts_ms for a, b in zip(recs, recs[1:], strict=False))


def test_skewed_paths_clients_and_error_bursts() -> None:
    recs = take(30_000, seed=3, rate=100.0, burst_chance_per_s=0.05)
    evs = [r.event for r in recs]
    paths = Counter(e.path for e in evs)
    top = paths.most_common(10)
    assert top[0][0] == "/" and top[0][1] > 5 * top[9][1]  # Zipf-like popularity
    assert len(paths) > 100
    clients = Counter(e.ip for e in evs)
    assert clients.most_common(1)[0][1] > 20 * (len(evs) / len(clients))  # heavy hitters
    per_second = Counter(e.ts_ms // 1000 for e in evs if e.status >= 500)
    totals = Counter(e.ts_ms // 1000 for e in evs)
    bursty = [s for s, n in per_second.items() if n >= 10 and n / totals[s] > 0.08]
    assert bursty, "no error burst in 5 minutes of traffic"
    assert {e.status // 100 for e in evs} == {2, 3, 4, 5}


def test_malformed_fraction_and_reasons() -> None:
    recs = take(20_000, seed=4, malformed_fraction=0.05)
    bad = [r for r in recs if r.malformed]
    assert 800 < len(bad) < 1200
    assert all(r.event is None for r in bad)
    assert set(Counter(r.malformed for r in bad)) == {reasons.UNPARSEABLE, reasons.EMPTY, reasons.BAD_TIMESTAMP,
                                                      reasons.BAD_STATUS}
