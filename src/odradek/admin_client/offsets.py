"""ListOffsets over a confluent-kafka AdminClient."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import OFFSET_INVALID, KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec

TP = tuple[str, int]


def list_offsets(admin: Any, partitions: Iterable[TP], spec: OffsetSpec, timeout_s: float, *,
                 wait: Callable[[Any], Any] | None = None,
                 unanswered: tuple[type[BaseException], ...] = (KafkaException,)) -> dict[TP, int | None]:
    """ListOffsets (`spec`: earliest, latest, for a timestamp) for each partition; None where the answer
    raised one of `unanswered` or never came (librdkafka's offset -1001 without an error: the leader's
    request failed, e.g. the leader died). `wait` takes each partition's future to its result (by default, the result
    within the request timeout plus 5 s)."""
    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    futures = admin.list_offsets({TopicPartition(t, p): spec for t, p in wanted}, request_timeout=timeout_s)
    result: dict[TP, int | None] = {}
    for tp, future in futures.items():
        try:
            answer = wait(future) if wait is not None else future.result(timeout=timeout_s + 5)
            result[(tp.topic, tp.partition)] = None if answer.offset == OFFSET_INVALID else answer.offset
        except unanswered:
            result[(tp.topic, tp.partition)] = None
    return result
