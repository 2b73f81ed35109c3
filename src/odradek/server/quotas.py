"""Client quota enforcement, per broker, as Kafka's ClientQuotaManager: a rate per quota entity over
`quota.window.num` samples of `quota.window.size.seconds`; a request that takes the rate above the bound
gets a throttle time of (rate - bound) / bound * window, which the response carries in throttle_time_ms
and for which the connection is then muted (KIP-219). Produce bytes, fetch bytes and request handling
time (request_percentage, as a percentage of one thread) are recorded once per request. With no quota
configured nothing is recorded.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from odradek.cluster.quotas import (
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    Quotas,
    Resolved,
    resolve,
)

# with this many entities' rates (or resolved quotas) kept, a new entity first drops the idle ones
MAX_IDLE_CHECK = 10_000


@dataclass(slots=True)
class Sample:
    start_ms: float
    value: float = 0.0


@dataclass(slots=True)
class SampledRate:
    """Kafka's Rate over a SampledStat: samples of `window_ms`, the oldest `num` kept."""

    num: int
    window_ms: float
    samples: list[Sample] = field(default_factory=list)

    def record(self, value: float, now_ms: float) -> None:
        current = self.samples[-1] if self.samples else None
        if current is None or now_ms >= current.start_ms + self.window_ms:
            current = Sample(now_ms)
            self.samples.append(current)
            if len(self.samples) > self.num:
                del self.samples[0]
        current.value += value

    def window_size_ms(self, now_ms: float) -> float:
        """Kafka's Rate.windowSize: the time since the oldest kept sample started, at least num-1 windows."""
        self._purge(now_ms)
        oldest = self.samples[0].start_ms if self.samples else now_ms
        elapsed = now_ms - oldest
        full = int(elapsed // self.window_ms)
        if full < self.num - 1:
            elapsed += (self.num - 1 - full) * self.window_ms
        return elapsed

    def rate(self, now_ms: float) -> float:
        """Per second."""
        size = self.window_size_ms(now_ms)
        return sum(s.value for s in self.samples) / (size / 1000) if size > 0 else 0.0

    def _purge(self, now_ms: float) -> None:
        expire = self.num * self.window_ms
        while self.samples and now_ms - self.samples[0].start_ms >= expire:
            del self.samples[0]


def throttle_ms(rate: SampledRate, bound: float, now_ms: float) -> int:
    """0 within the bound; else Kafka's (observed - bound) / bound * window size."""
    observed = rate.rate(now_ms)
    if observed <= bound:
        return 0
    return round((observed - bound) / bound * rate.window_size_ms(now_ms))


@dataclass(slots=True)
class TokenBucket:
    """Kafka's TokenBucket (KIP-599): up to `burst` tokens, refilled at the quota per second; a mutation
    takes its partitions' worth, possibly going below zero."""

    burst: float
    tokens: float
    last_ms: float

    def refill(self, rate: float, now_ms: float) -> None:
        self.tokens = min(self.burst, self.tokens + rate * (now_ms - self.last_ms) / 1000)
        self.last_ms = now_ms


def user_of(principal: str) -> str:
    """The quota user of a principal: its name ("User:alice" -> "alice")."""
    return principal.partition(":")[2] or principal


class QuotaManager:
    """The broker's quota state: the configured quotas (from the store) and the rates of the entities
    they bound."""

    def __init__(self, window_num: int, window_seconds: int, controller_window_num: int = 11,
                 controller_window_seconds: int = 1) -> None:
        self.window_num = window_num
        self.window_ms = window_seconds * 1000.0
        self.quotas: Quotas = {}
        self.enabled = False
        self._keys: set[str] = set()
        self._resolved: dict[tuple[str, str, str], Resolved | None] = {}
        self._rates: dict[tuple[str, str, str], SampledRate] = {}
        self._buckets: dict[tuple[str, str], TokenBucket] = {}
        self.controller_window_num = controller_window_num
        self.controller_window_ms = controller_window_seconds * 1000.0
        # throttle time totals per (quota type, user, client-id), for the metrics
        self.throttle_totals: dict[tuple[str, str, str], tuple[int, int]] = {}

    def update(self, quotas: Quotas) -> None:
        self.quotas = quotas
        self._keys = {k for config in quotas.values() for k in config}
        self.enabled = bool(self._keys)
        self._resolved.clear()

    def quota(self, key: str, user: str, client_id: str) -> Resolved | None:
        cache_key = (key, user, client_id)
        try:
            return self._resolved[cache_key]
        except KeyError:
            found = self._resolved[cache_key] = resolve(self.quotas, key, user, client_id)
            return found

    def record(self, key: str, principal: str, client_id: str, value: float, now_ms: float | None = None) -> int:
        """Record `value` against the entity's quota of type `key`; the throttle time in ms (0 within it)."""
        if key not in self._keys:
            return 0
        user = user_of(principal)
        resolved = self.quota(key, user, client_id)
        if resolved is None:
            return 0
        now = time.monotonic() * 1000 if now_ms is None else now_ms
        rate_key = (key, *resolved.metric)
        rate = self._rates.get(rate_key)
        if rate is None:
            if len(self._rates) >= MAX_IDLE_CHECK:
                self._drop_idle(now)
            rate = self._rates[rate_key] = SampledRate(self.window_num, self.window_ms)
        rate.record(value, now)
        throttle = throttle_ms(rate, resolved.bound, now)
        if throttle:
            count, total = self.throttle_totals.get(rate_key, (0, 0))
            self.throttle_totals[rate_key] = (count + 1, total + throttle)
        return throttle

    def _drop_idle(self, now_ms: float) -> None:
        """Forget the rates of entities silent for all their windows (Kafka expires idle quota sensors)."""
        horizon = self.window_num * self.window_ms
        for key, rate in list(self._rates.items()):
            if not rate.samples or now_ms - rate.samples[-1].start_ms >= horizon:
                del self._rates[key]
        if len(self._resolved) >= MAX_IDLE_CHECK:
            self._resolved.clear()

    def _bucket(self, principal: str, client_id: str, now_ms: float) -> tuple[TokenBucket, Resolved] | None:
        if CONTROLLER_MUTATION_RATE not in self._keys:
            return None
        resolved = self.quota(CONTROLLER_MUTATION_RATE, user_of(principal), client_id)
        if resolved is None:
            return None
        burst = resolved.bound * self.controller_window_num * self.controller_window_ms / 1000
        bucket = self._buckets.get(resolved.metric)
        if bucket is None or bucket.burst != burst:
            bucket = self._buckets[resolved.metric] = TokenBucket(burst, burst, now_ms)
        bucket.refill(resolved.bound, now_ms)
        return bucket, resolved

    def mutation_exceeded(self, principal: str, client_id: str) -> bool:
        """Whether controller_mutation_rate is already exceeded (strict versions refuse the mutation)."""
        found = self._bucket(principal, client_id, time.monotonic() * 1000)
        return found is not None and found[0].tokens < 0

    def record_mutation(self, principal: str, client_id: str, partitions: int) -> None:
        found = self._bucket(principal, client_id, time.monotonic() * 1000)
        if found is not None:
            found[0].tokens -= partitions

    def mutation_throttle_ms(self, principal: str, client_id: str) -> int:
        """The time until the bucket is back to zero tokens (Kafka's throttle time for KIP-599)."""
        found = self._bucket(principal, client_id, time.monotonic() * 1000)
        if found is None or found[0].tokens >= 0:
            return 0
        bucket, resolved = found
        throttle = round(-bucket.tokens / resolved.bound * 1000)
        key = (CONTROLLER_MUTATION_RATE, *resolved.metric)
        count, total = self.throttle_totals.get(key, (0, 0))
        self.throttle_totals[key] = (count + 1, total + throttle)
        return throttle

    def produce(self, principal: str, client_id: str, size: int) -> int:
        return self.record(PRODUCER_BYTE_RATE, principal, client_id, size)

    def fetch(self, principal: str, client_id: str, size: int) -> int:
        return self.record(CONSUMER_BYTE_RATE, principal, client_id, size)

    def fetch_window_bytes(self, principal: str, client_id: str) -> int | None:
        """Kafka's getMaxValueInQuotaWindow: the consumer quota times one window (None without a quota)."""
        if CONSUMER_BYTE_RATE not in self._keys:
            return None
        resolved = self.quota(CONSUMER_BYTE_RATE, user_of(principal), client_id)
        return None if resolved is None else int(resolved.bound * self.window_ms / 1000)

    def unrecord_fetch(self, principal: str, client_id: str, size: int) -> None:
        """Take back the bytes of a fetch answered empty because it was throttled (Kafka's unrecord)."""
        resolved = self.quota(CONSUMER_BYTE_RATE, user_of(principal), client_id)
        rate = self._rates.get((CONSUMER_BYTE_RATE, *resolved.metric)) if resolved is not None else None
        if rate is not None:
            rate.record(-size, time.monotonic() * 1000)

    def request_time(self, principal: str, client_id: str, seconds: float) -> int:
        """request_percentage: handling time as a percentage of one second (Kafka's nanosToPercentage)."""
        # bounded by one window, as Kafka's ClientRequestQuotaManager bounds it (byte quotas are not)
        return min(self.record(REQUEST_PERCENTAGE, principal, client_id, seconds * 100), int(self.window_ms))
