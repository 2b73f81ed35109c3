"""Driver side of the source: the query's progress committed to a consumer group, for monitoring only.

Spark's Kafka source reads by assignment and commits nowhere, so consumer-group tools, consoles and lag
metrics know nothing of a query. Like Flink's Kafka source on checkpoint, the `odradek` source commits the
end offsets of each micro-batch Spark has committed to a consumer group: an OffsetCommit with no
membership (generation -1, as AlterConsumerGroupOffsets sends it), so the group shows as Empty with its
offsets and lag. The query's checkpoint stays the only thing a restart reads: the group is never read back.

Commits are asynchronous, one at a time, and never fail or hold up the query: a failed one is logged (a
warning when the error is new) and tried again with the next batch's offsets, or with the same ones after
`RETRY_AFTER_S`. Outcomes are collected when the next offsets are handed over, and by `close()`, which waits
a little for the last one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from concurrent.futures import Future, wait
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from odradek.spark.metadata import admin_conf
from odradek.spark.offsets import Offsets

log = logging.getLogger(__name__)

RETRY_AFTER_S = 5.0  # a failed commit of the same offsets is not tried again sooner
COMMIT_TIMEOUT_S = 30.0  # the request timeout of a commit
CLOSE_TIMEOUT_S = 15.0  # how long the query's stop waits for its last commits


class GroupCommitter:
    """Commits offsets (the next offset to read, per partition) to one consumer group, one commit at a time:
    offsets handed over while a commit is under way wait for it, and only the newest of them is sent."""

    def __init__(self, client: Mapping[str, Any], group_id: str, *, timeout_s: float = COMMIT_TIMEOUT_S) -> None:
        self.group_id = group_id
        self._conf = admin_conf(client)  # the source's own client settings (security included)
        self._timeout = timeout_s
        self._admin: AdminClient | None = None
        self._inflight: tuple[Offsets, Future[Any], float] | None = None  # the commit under way
        self._next: Offsets | None = None  # the newest offsets not sent yet
        self._done: Offsets | None = None  # the last offsets known to be committed
        self._failed: tuple[Offsets, float] | None = None  # the last offsets that failed, and when
        self._last_error: str | None = None

    @property
    def failing(self) -> str | None:
        """The error of the last commit whose outcome is known; None when it succeeded."""
        return self._last_error

    def commit(self, offsets: Offsets) -> None:
        """Hand `offsets` over (a no-op when they are the ones last committed); never raises or blocks."""
        wanted = {tp: off for tp, off in offsets.items() if off >= 0}
        if wanted:
            self._next = wanted
        self._pump()

    def flush(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the outcome of the commits under way; True when none is left."""
        deadline = time.monotonic() + timeout
        while True:
            self._pump()
            if self._inflight is None:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            wait([self._inflight[1]], timeout=min(left, 0.5))

    def close(self, timeout: float = CLOSE_TIMEOUT_S) -> None:
        """Wait up to `timeout` for the commits still under way (the last batch's may be queued behind the
        one before it, and the first commit of a group may wait for the broker to create and load
        `__consumer_offsets`), then drop the client."""
        self.flush(timeout)
        self._inflight = None
        self._admin = None  # librdkafka handles are released when the object is collected

    # --- internals ---

    def _pump(self) -> None:
        self._collect()
        wanted = self._next
        if self._inflight is not None or wanted is None:
            return
        if wanted == self._done:
            self._next = None
            return
        if self._failed is not None and self._failed[0] == wanted and time.monotonic() - self._failed[1] < RETRY_AFTER_S:
            return  # tried again by a later call
        self._next = None
        request = ConsumerGroupTopicPartitions(self.group_id, [TopicPartition(tp.topic, tp.partition, off)
                                                               for tp, off in sorted(wanted.items())])
        try:
            if self._admin is None:
                self._admin = AdminClient(dict[str, str | int | float | bool](self._conf))
            future = self._admin.alter_consumer_group_offsets([request], request_timeout=self._timeout)[self.group_id]
        except (KafkaException, RuntimeError, ValueError, TypeError) as exc:
            self._failure(wanted, str(exc))
            return
        self._inflight = (wanted, future, time.monotonic())

    def _collect(self) -> None:
        """The outcome of the commit under way, if it is known (or overdue)."""
        if self._inflight is None:
            return
        offsets, future, started = self._inflight
        if not future.done():
            if time.monotonic() - started > self._timeout + 5:
                self._inflight = None
                self._failure(offsets, f"no answer within {self._timeout:g} s")
            return
        self._inflight = None
        try:
            answer = future.result()
            failed = [tp for tp in answer.topic_partitions or [] if tp.error is not None]
        except Exception as exc:  # noqa: BLE001 - whatever it is, it must not reach the query
            self._failure(offsets, str(exc.args[0]) if isinstance(exc, KafkaException) and exc.args else str(exc))
            return
        if failed:
            self._failure(offsets, ", ".join(f"{tp.topic}-{tp.partition}: {tp.error}" for tp in failed))
            return
        self._done, self._failed = offsets, None
        if self._last_error is not None:
            log.info("offsets of consumer group %r are committed again", self.group_id)
        self._last_error = None

    def _failure(self, offsets: Offsets, detail: str) -> None:
        self._failed = (offsets, time.monotonic())
        if self._next is None:
            self._next = offsets  # tried again later unless newer offsets come first
        if detail != self._last_error:
            log.warning("could not commit the query's offsets to consumer group %r (the query goes on; a later "
                        "trigger tries again): %s", self.group_id, detail)
        else:
            log.debug("commit to consumer group %r failed again: %s", self.group_id, detail)
        self._last_error = detail
