"""Driver-side questions to the cluster: which partitions a subscription covers and their offsets.

One `ClusterOffsets` per reader: an AdminClient for metadata and ListOffsets (earliest, latest, by time),
created on first use and closed by `close()`. Failed look-ups are retried a few times, like Spark's
`fetchOffset.numRetries`, each retry with a new AdminClient (fresh metadata: a partition's leader may
have died). librdkafka answers a partition whose leader's request failed (a leader killed mid-request)
with offset -1001 and no error; that counts as a failed look-up, never as an offset. ListOffsets is asked at the client's `isolation.level`: under read_committed
"latest" is the last stable offset (the first offset of the oldest open transaction, else the high
watermark), so a planned range never waits on records that are not yet committed or aborted.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from confluent_kafka import OFFSET_INVALID, IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from odradek.spark.offsets import TP, Offsets
from odradek.spark.options import Subscription

T = TypeVar("T")

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__share_group_state", "__transaction_state"})

# librdkafka properties that only a consumer or producer understands; an AdminClient warns about them.
_CLIENT_ONLY = re.compile(r"^(group\.|fetch\.|max\.partition|queued\.|enable\.|auto\.|isolation|session|heartbeat|"
                          r"partition\.assignment|check\.crcs|linger|batch\.|acks|compression|partitioner|"
                          r"queue\.buffering|message\.send|retries|retry|max\.in\.flight|delivery|request\.required)")


def admin_conf(client: Mapping[str, str]) -> dict[str, str]:
    """The part of a client config an AdminClient accepts."""
    return {k: v for k, v in client.items() if not _CLIENT_ONLY.match(k)}


class ClusterOffsets:
    """Partitions and offsets of topics, asked of the cluster on demand."""

    def __init__(self, client: Mapping[str, str], *, timeout_s: float = 30.0, retries: int = 3,
                 retry_interval_ms: int = 10) -> None:
        self._conf = admin_conf(client)
        committed = str(client.get("isolation.level", "read_uncommitted")).strip().lower() == "read_committed"
        self.isolation = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
        self._timeout = timeout_s
        self._retries = max(1, retries)
        self._interval = retry_interval_ms / 1000.0
        self._admin: AdminClient | None = None

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient(dict[str, str | int | float | bool](self._conf))
        return self._admin

    def close(self) -> None:
        self._admin = None  # librdkafka handles are released when the object is collected

    def _retry(self, what: str, fn: Callable[[], T]) -> T:
        last: Exception | None = None
        for attempt in range(self._retries):
            try:
                return fn()
            except (KafkaException, TimeoutError, RuntimeError) as exc:
                last = exc
                self._admin = None  # the next attempt asks with fresh metadata
                time.sleep(self._interval * (attempt + 1))
        raise RuntimeError(f"{what} failed after {self._retries} attempts: {last}") from last

    def partitions(self, sub: Subscription) -> list[TP]:
        """The partitions the subscription covers now (assign: exactly those named)."""
        if sub.kind == "assign":
            return sorted(sub.partitions)
        meta = self._retry("listing topics", lambda: self.admin.list_topics(timeout=self._timeout))
        if sub.kind == "subscribe":
            names = [t for t in sub.topics if t in meta.topics]
        else:
            rx = re.compile(sub.pattern or "")
            names = [t for t in meta.topics if t not in INTERNAL_TOPICS and rx.fullmatch(t)]
        out: list[TP] = []
        for name in names:
            tmeta = meta.topics[name]
            if tmeta.error is not None:
                continue
            out.extend(TP(name, p) for p in tmeta.partitions)
        return sorted(out)

    def _list(self, specs: Mapping[TP, OffsetSpec], what: str) -> dict[TP, tuple[int, int]]:
        if not specs:
            return {}

        def ask() -> dict[TP, tuple[int, int]]:
            futures = self.admin.list_offsets(
                {TopicPartition(tp.topic, tp.partition): spec for tp, spec in specs.items()},
                isolation_level=self.isolation, request_timeout=self._timeout,
            )
            out: dict[TP, tuple[int, int]] = {}
            for ktp, fut in futures.items():
                res = fut.result(timeout=self._timeout)
                if res.offset == OFFSET_INVALID:
                    raise RuntimeError(f"no answer for {ktp.topic}-{ktp.partition} (its leader did not reply)")
                out[TP(ktp.topic, ktp.partition)] = (res.offset, res.timestamp)
            return out

        return self._retry(f"fetching {what} offsets", ask)

    def earliest(self, tps: Iterable[TP]) -> Offsets:
        """Log start offset of each partition."""
        return {tp: off for tp, (off, _) in self._list({tp: OffsetSpec.earliest() for tp in tps}, "earliest").items()}

    def latest(self, tps: Iterable[TP]) -> Offsets:
        """End of each partition: the high watermark (the offset the next record will get), or under
        read_committed the last stable offset."""
        return {tp: off for tp, (off, _) in self._list({tp: OffsetSpec.latest() for tp in tps}, "latest").items()}

    def for_times(self, times: Mapping[TP, int]) -> dict[TP, int | None]:
        """Earliest offset whose record timestamp is >= the time given (ms), or None when there is none."""
        found = self._list({tp: OffsetSpec.for_timestamp(ts) for tp, ts in times.items()}, "by-timestamp")
        return {tp: (off if off >= 0 else None) for tp, (off, _) in found.items()}
