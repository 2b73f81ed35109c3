"""A seeded generator of realistic web access log lines, and a producer that sends them to Kafka.

Traffic model: Poisson arrivals at `rate` per second; clients drawn from a pool with heavy hitters (Zipf),
each with its own user agent; paths with Zipf popularity (home page and assets first, a long tail of
product pages, a few scanner probes); status, size and latency by kind of path; now and then a burst of
server errors and slow responses on one part of the site. A `malformed_fraction` of lines are damaged
(truncated, binary junk, empty, bad time or status) and labelled with the reason the parser should give.
The same seed and start time give the same records.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from odradek.pipelines.weblogs import reasons
from odradek.pipelines.weblogs.events import AccessEvent

BROWSERS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Mobile Safari/537.36",
)
BOTS = (
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
    "curl/8.5.0",
    "python-requests/2.31.0",
)
REFERRERS = ("https://www.google.com/", "https://www.bing.com/", "https://duckduckgo.com/", "https://news.ycombinator.com/")

STATIC = ("/static/app.js", "/static/app.css", "/favicon.ico", "/static/vendor.js", "/static/logo.svg",
          "/images/hero.jpg", "/robots.txt")
PAGES = ("/", "/products", "/search", "/cart", "/login", "/checkout", "/about", "/blog", "/help", "/contact",
         "/blog/how-we-ship")
API = ("/api/items", "/api/search", "/api/cart", "/api/recommendations", "/api/session", "/api/checkout", "/health")
SCANNER = ("/wp-login.php", "/.env", "/admin", "/phpmyadmin/", "/xmlrpc.php", "/.git/config")
PRODUCTS = 400
POST_PATHS = frozenset({"/login", "/api/cart", "/api/checkout", "/api/session"})


@dataclass(frozen=True)
class GeneratorConfig:
    """Knobs of the traffic model."""

    seed: int = 42
    rate: float = 500.0
    malformed_fraction: float = 0.0
    start_ms: int | None = None
    clients: int = 2000
    burst_chance_per_s: float = 0.02


@dataclass(frozen=True)
class LogRecord:
    """One Kafka record to produce: key = client IP, value = the line, timestamp = event time."""

    ts_ms: int
    key: bytes
    value: bytes | None
    event: AccessEvent | None
    malformed: str | None = None  # the reason the parser should give, for damaged lines


def _zipf_cumulative(n: int, s: float) -> list[float]:
    return list(itertools.accumulate(1.0 / (rank + 1) ** s for rank in range(n)))


class WeblogGenerator:
    """An endless, reproducible stream of LogRecords."""

    def __init__(self, cfg: GeneratorConfig) -> None:
        if cfg.rate <= 0:
            raise ValueError("rate must be positive")
        if not 0 <= cfg.malformed_fraction <= 1:
            raise ValueError("malformed_fraction must be between 0 and 1")
        self.cfg = cfg
        self.rng = random.Random(cfg.seed)
        self.now_ms = float(cfg.start_ms if cfg.start_ms is not None else time.time() * 1000)
        self._paths = self._catalog()
        self._path_cum = _zipf_cumulative(len(self._paths), 1.05)
        self._clients = [self._client(i) for i in range(cfg.clients)]
        self._client_cum = _zipf_cumulative(len(self._clients), 0.9)
        self._second = int(self.now_ms // 1000)
        self._burst_until = 0.0
        self._burst_kind = ""

    def _catalog(self) -> list[tuple[str, str]]:
        head = [("/", "page"), ("/static/app.js", "static"), ("/static/app.css", "static"), ("/products", "page"),
                ("/api/items", "api"), ("/favicon.ico", "static"), ("/search", "page"), ("/api/search", "api")]
        rest = [(p, "static") for p in STATIC] + [(p, "page") for p in PAGES] + [(p, "api") for p in API]
        rest = [x for x in rest if x not in head]
        self.rng.shuffle(rest)
        products = [(f"/products/{i}", "product") for i in range(1, PRODUCTS + 1)]
        self.rng.shuffle(products)
        catalog = head + rest[:10] + products[:20] + rest[10:] + products[20:]
        # scanners probe rarely but steadily: slot them into the tail
        for i, p in enumerate(SCANNER):
            catalog.insert(60 + 40 * i, (p, "scanner"))
        return catalog

    def _client(self, i: int) -> tuple[str, str]:
        rng = self.rng
        while True:
            a = rng.randint(1, 223)
            if a not in (10, 100, 127, 169, 172, 192, 198):
                break
        ip = f"{a}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        agent = rng.choice(BOTS) if rng.random() < 0.08 else rng.choice(BROWSERS)
        return ip, agent

    def _advance_clock(self) -> None:
        self.now_ms += self.rng.expovariate(self.cfg.rate) * 1000
        second = int(self.now_ms // 1000)
        while self._second < second:  # one burst draw per simulated second
            self._second += 1
            if self._burst_until <= self._second * 1000 and self.rng.random() < self.cfg.burst_chance_per_s:
                self._burst_until = self._second * 1000 + self.rng.uniform(5_000, 20_000)
                self._burst_kind = self.rng.choice(("api", "product", "page"))

    def _status(self, kind: str, path: str, method: str, burst: bool) -> int:
        r = self.rng.random()
        if burst and r < 0.35:
            return self.rng.choice((500, 502, 503, 504))
        if kind == "static":
            return 304 if r < 0.15 else (404 if r > 0.995 else 200)
        if kind == "scanner":
            return 403 if r < 0.05 else 404
        if kind == "product":
            return 404 if r < 0.05 else (500 if r > 0.995 else 200)
        if kind == "api":
            for code, p in ((400, 0.03), (401, 0.05), (429, 0.07), (500, 0.085), (503, 0.09)):
                if r < p:
                    return code
            return 201 if method == "POST" and r > 0.97 else 200
        if path == "/login" and method == "POST":
            return 302 if r < 0.7 else 401
        return 301 if r < 0.02 else (404 if r < 0.05 else (500 if r > 0.997 else 200))

    def _size(self, kind: str, status: int) -> int:
        rng = self.rng
        if status in (204, 304) or status in (301, 302):
            return 0 if status != 301 else 162
        if status >= 400:
            return int(rng.uniform(150, 600))
        mu = {"static": math.log(18_000), "page": math.log(14_000), "product": math.log(22_000)}.get(kind, math.log(1_800))
        return int(rng.lognormvariate(mu, 0.7))

    def _latency(self, kind: str, path: str, status: int, burst: bool) -> int:
        rng = self.rng
        mu = {"static": math.log(4), "scanner": math.log(2), "page": math.log(60), "product": math.log(80)}.get(
            kind, math.log(150 if path == "/api/search" else 35))
        ms = rng.lognormvariate(mu, 0.6 if kind == "static" else 0.8)
        if burst:
            ms *= rng.uniform(4, 10)
        if status == 504:
            ms = 30_000 + rng.uniform(0, 50)
        return max(1, min(60_000, int(ms)))

    def event(self) -> AccessEvent:
        """The next well-formed event (advances the clock)."""
        self._advance_clock()
        rng = self.rng
        path, kind = self._paths[bisect.bisect_left(self._path_cum, rng.random() * self._path_cum[-1])]
        ip, agent = self._clients[bisect.bisect_left(self._client_cum, rng.random() * self._client_cum[-1])]
        if path in POST_PATHS:
            method = "POST" if rng.random() < 0.6 else "GET"
        else:
            method = "HEAD" if rng.random() < 0.01 else "GET"
        burst = self.now_ms < self._burst_until and kind == self._burst_kind
        status = self._status(kind, path, method, burst)
        r = rng.random()
        if r < 0.4:
            referrer = "-"
        elif r < 0.75:
            referrer = "https://shop.example.com" + rng.choice(PAGES)
        else:
            referrer = rng.choice(REFERRERS)
        return AccessEvent(ts_ms=int(self.now_ms), ip=ip, method=method, path=path, status=status,
                           bytes=self._size(kind, status), latency_ms=self._latency(kind, path, status, burst),
                           user_agent=agent, referrer=referrer)

    def _damage(self, ev: AccessEvent) -> tuple[bytes | None, str]:
        line = ev.to_line()
        kind = self.rng.randrange(6)
        if kind == 0:  # cut before the user agent's closing quote
            return line[: self.rng.randrange(1, line.rindex('"'))].encode(), reasons.UNPARSEABLE
        if kind == 1:
            return bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(8, 64))), reasons.UNPARSEABLE
        if kind == 2:
            return (b"" if self.rng.random() < 0.5 else None), reasons.EMPTY
        if kind == 3:
            start = line.index("[") + 1
            return (line[:start] + "32/Foo/2024:25:61:61 +0000" + line[line.index("]"):]).encode(), reasons.BAD_TIMESTAMP
        if kind == 4:
            quote = line.index('" ', line.index('"') + 1) + 2
            rest = line[quote:].split(" ", 1)[1]
            return (line[:quote] + self.rng.choice(("abc", "99", "1000", "-")) + " " + rest).encode(), reasons.BAD_STATUS
        return line.replace('"', "", 2).encode(), reasons.UNPARSEABLE  # request without its quotes

    def records(self) -> Iterator[LogRecord]:
        frac = self.cfg.malformed_fraction
        while True:
            ev = self.event()
            if frac and self.rng.random() < frac:
                value, reason = self._damage(ev)
                yield LogRecord(ev.ts_ms, ev.ip.encode(), value, None, reason)
            else:
                yield LogRecord(ev.ts_ms, ev.ip.encode(), ev.to_line().encode(), ev)

    def take(self, n: int) -> list[LogRecord]:
        return list(itertools.islice(self.records(), n))


PROGRESS_INTERVAL_S = 0.25  # how often produce_records reports progress (counts move smoothly)


@dataclass
class ProduceStats:
    """What a producer run sent."""

    produced: int = 0
    malformed: Counter = field(default_factory=Counter)


def produce_records(bootstrap: str, topic: str, records: Iterable[LogRecord], *, live: bool = False,
                    stop: threading.Event | None = None, duration_s: float | None = None,
                    on_progress: Callable[[ProduceStats], None] | None = None,
                    schema_registry_url: str | None = None) -> ProduceStats:
    """Send records (key, value, timestamp = event time). `live` paces them to the wall clock by their
    timestamps; `stop` or `duration_s` end an endless stream. With `schema_registry_url`, values are framed
    Avro (schemas.LineSerializer; a line that is not UTF-8 goes unframed, counted as `undecodable value`)."""
    from confluent_kafka import Producer

    serializer = None
    if schema_registry_url:
        from odradek.pipelines.weblogs.schemas import LineSerializer

        serializer = LineSerializer(schema_registry_url, topic)
        serializer.avro.register()  # a registry that is down is one error before anything is sent

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 10, "enable.idempotence": True,
                         "partitioner": "murmur2_random", "queue.buffering.max.messages": 500_000,
                         "log_level": 3})  # errors only: its notices ("Purging unserved events") broke screens
    failures: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    stats = ProduceStats()
    started = time.monotonic()
    next_report = started
    for rec in records:
        if (stop is not None and stop.is_set()) or (duration_s is not None and time.monotonic() - started >= duration_s):
            break
        if live:
            delay = rec.ts_ms / 1000 - time.time()
            if delay > 0:
                if stop is not None:
                    stop.wait(delay)
                else:
                    time.sleep(delay)
        value, malformed = rec.value, rec.malformed
        if serializer is not None:
            value, framed = serializer.encode(value)
            if not framed:
                malformed = reasons.UNDECODABLE
        while True:
            try:
                producer.produce(topic, value, rec.key, timestamp=rec.ts_ms, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        stats.produced += 1
        if malformed:
            stats.malformed[malformed] += 1
        if stats.produced % 100 == 0:
            producer.poll(0)
            now = time.monotonic()
            if on_progress and now >= next_report:
                next_report = now + PROGRESS_INTERVAL_S
                on_progress(stats)
    left = producer.flush(30)
    if on_progress:
        on_progress(stats)
    if failures or left:
        raise RuntimeError(f"{len(failures)} records failed, {left} unacknowledged: {failures[:1]}")
    return stats
