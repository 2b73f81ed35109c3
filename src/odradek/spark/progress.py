"""What a streaming query's last progress says, in one line a person can follow: the batch, its input
rows, the processing rate, the watermark and how far the query is behind the end of its topics.
Pure functions over Spark's progress dictionaries; the end offsets come from the caller."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from odradek.spark.offsets import TP


def processed_offsets(progress: Mapping[str, Any]) -> dict[TP, int]:
    """The next offset to read per partition, from the sources' `endOffset` (the JSON shape of Spark's
    Kafka source: {"topic": {"0": 42}}); sources in another shape are skipped."""
    out: dict[TP, int] = {}
    for source in progress.get("sources") or []:
        end = source.get("endOffset")
        if isinstance(end, str):
            try:
                end = json.loads(end)
            except ValueError:
                continue
        if not isinstance(end, dict):
            continue
        for topic, parts in end.items():
            if not isinstance(parts, dict):
                continue
            for partition, offset in parts.items():
                if str(partition).lstrip("-").isdigit() and isinstance(offset, int) and offset >= 0:
                    out[TP(topic, int(partition))] = offset
    return out


def lag(progress: Mapping[str, Any], end_offsets: Mapping[TP, int]) -> int | None:
    """Records in the topics past what the query has processed; None before its first batch."""
    done = processed_offsets(progress)
    if not done:
        return None
    return sum(max(0, end - done.get(tp, 0)) for tp, end in end_offsets.items() if tp.topic in {t for t, _ in done})


def status_line(progress: Mapping[str, Any] | None, end_offsets: Mapping[TP, int]) -> str:
    if not progress:
        return "waiting for the first micro-batch ..."
    watermark = (progress.get("eventTime") or {}).get("watermark", "-")
    if str(watermark).startswith("1970-01-01T00:00:00"):  # Spark's value before any event time was seen
        watermark = "none yet"
    behind = lag(progress, end_offsets)
    return (f"batch {progress.get('batchId', '-')}: {progress.get('numInputRows', 0):,} rows in, "
            f"{progress.get('processedRowsPerSecond', 0) or 0:,.0f} rows/s, watermark {watermark}, "
            f"lag {'-' if behind is None else f'{behind:,}'} records")
