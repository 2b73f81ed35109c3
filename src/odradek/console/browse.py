"""The message browser and the weblogs metrics reader: short-lived consumers on assigned partitions.

A read assigns one partition at an offset (or the first offset at or after a timestamp, through
ListOffsets by time), fetches up to N records and stops at the partition's end; nothing is committed.
Keys, values and headers are shown as text, as pretty-printed JSON, or as hex when they are not UTF-8.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import OFFSET_END, Consumer, KafkaError, KafkaException, TopicPartition

from odradek.admin_client.connect import ClientErrors, client_config
from odradek.admin_client.errors import kafka_message
from odradek.console.cluster import ClusterAdmin, ClusterError, cluster_error

MAX_SHOWN_BYTES = 16 * 1024
MAX_MESSAGES = 500
WEBLOGS_WINDOWS = 180
WEBLOGS_MAX_RECORDS = 5000


@dataclass
class Payload:
    """A key, value or header value as the browser shows it."""

    kind: str  # null, text, json, hex
    text: str
    size: int


@dataclass
class Message:
    partition: int
    offset: int
    timestamp_ms: int | None
    key: Payload
    value: Payload
    headers: list[tuple[str, Payload]]

    @property
    def time(self) -> str:
        return iso_time(self.timestamp_ms)

    def as_json(self) -> dict[str, Any]:
        def p(x: Payload) -> dict[str, Any]:
            return {"kind": x.kind, "text": x.text, "size": x.size}

        return {"partition": self.partition, "offset": self.offset, "timestamp": self.timestamp_ms,
                "time": self.time, "key": p(self.key), "value": p(self.value),
                "headers": [[k, p(v)] for k, v in self.headers]}


def iso_time(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def payload(data: bytes | str | None) -> Payload:
    """text, JSON pretty-printed, or hex (spaced bytes) when not UTF-8; long payloads are cut."""
    if data is None:
        return Payload("null", "", 0)
    raw = data.encode() if isinstance(data, str) else bytes(data)
    shown = raw[:MAX_SHOWN_BYTES]
    more = f" … ({len(raw)} bytes)" if len(raw) > len(shown) else ""
    try:
        text = shown.decode("utf-8")
    except UnicodeDecodeError:
        if len(raw) > len(shown):  # cut inside a character: decode the whole thing once more
            try:
                text = raw.decode("utf-8")[:MAX_SHOWN_BYTES]
            except UnicodeDecodeError:
                return Payload("hex", shown.hex(" ") + more, len(raw))
        else:
            return Payload("hex", shown.hex(" ") + more, len(raw))
    stripped = text.strip()
    if not more and stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        try:
            return Payload("json", json.dumps(json.loads(stripped), indent=2, ensure_ascii=False), len(raw))
        except ValueError:
            pass
    return Payload("text", text + more, len(raw))


def parse_time(text: str) -> int:
    """A timestamp field: epoch milliseconds, or an ISO date-time (UTC unless it has a zone)."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ClusterError(f"'{text}' is not a timestamp (epoch ms or YYYY-MM-DDTHH:MM:SS)") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return int(t.timestamp() * 1000)


@contextmanager
def consumer(cluster: ClusterAdmin) -> Iterator[Consumer]:
    c = Consumer(client_config(cluster.bootstrap, cluster.consumer_config(), errors=ClientErrors()))
    try:
        yield c
    finally:
        c.close()


def read(cluster: ClusterAdmin, topic: str, partition: int, offset: int | None = None,
         timestamp_ms: int | None = None, limit: int = 20, wait_s: float = 2.0) -> tuple[list[Message], int, int]:
    """Up to `limit` records of one partition from `offset` (default: the log start) or from the first
    record at or after `timestamp_ms`; returns them, the offset to read next and the partition's end offset
    (where a live tail starts)."""
    limit = max(1, min(limit, MAX_MESSAGES))
    with consumer(cluster) as c:
        try:
            low, high = c.get_watermark_offsets(TopicPartition(topic, partition), timeout=cluster.timeout)
        except KafkaException as exc:
            raise cluster_error(exc, f"cannot read the offsets of {topic}-{partition}: {kafka_message(exc)}") from None
        except Exception as exc:
            raise ClusterError(f"cannot read the offsets of {topic}-{partition}: {exc}") from None
        if timestamp_ms is not None:
            found = c.offsets_for_times([TopicPartition(topic, partition, timestamp_ms)], timeout=cluster.timeout)
            start = found[0].offset if found and found[0].offset >= 0 else high
            if found and found[0].offset == OFFSET_END:
                start = high
        elif offset is None or offset < 0:
            start = low
        else:
            start = max(offset, low)
        if start >= high:
            return [], start, high
        c.assign([TopicPartition(topic, partition, start)])
        out: list[Message] = []
        next_offset = start
        deadline = time.monotonic() + wait_s
        while len(out) < limit and next_offset < high and time.monotonic() < deadline:
            batch: list[Any] = c.consume(min(limit - len(out), 500), timeout=0.2)
            for m in batch:
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        deadline = 0.0
                        break
                    raise ClusterError(err.str())
                ts_type, ts = m.timestamp()
                out.append(Message(m.partition(), m.offset(), ts if ts_type else None, payload(m.key()),
                                   payload(m.value()), [(k, payload(v)) for k, v in (m.headers() or [])]))
                next_offset = m.offset() + 1
                if len(out) >= limit:
                    break
        return out, next_offset, high


def weblogs_metrics(cluster: ClusterAdmin, topic: str) -> list[dict[str, Any]]:
    """The weblogs pipeline's per-minute windows from `topic` (JSON records keyed by window start; a later
    record of a window supersedes an earlier one), oldest first, the newest WEBLOGS_WINDOWS of them."""
    md = cluster.metadata(topic)
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        return []
    windows: dict[str, dict[str, Any]] = {}
    with consumer(cluster) as c:
        for p in sorted(t.partitions):
            try:
                low, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=cluster.timeout)
            except KafkaException as exc:  # a stalled cluster: "unreachable", not an internal error
                raise cluster_error(exc, f"cannot read the offsets of {topic}-{p}: {kafka_message(exc)}") from None
            start = max(low, high - WEBLOGS_MAX_RECORDS)
            if start >= high:
                continue
            c.assign([TopicPartition(topic, p, start)])
            deadline = time.monotonic() + 10
            done = start
            while done < high and time.monotonic() < deadline:
                records: list[Any] = c.consume(500, timeout=0.2)
                for m in records:
                    if m.error() is not None:
                        if m.error().code() == KafkaError._PARTITION_EOF:
                            done = high
                            break
                        raise ClusterError(m.error().str())
                    done = m.offset() + 1
                    try:
                        record = json.loads(m.value() or b"")
                        record["t"] = parse_time(str(record["window_start"])) / 1000
                        windows[str(record["window_start"])] = record
                    except (ValueError, KeyError, TypeError, ClusterError):
                        continue
    return sorted(windows.values(), key=lambda r: r["t"])[-WEBLOGS_WINDOWS:]
