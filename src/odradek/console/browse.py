"""The message browser and the weblogs metrics reader: short-lived consumers on assigned partitions.

A read assigns one partition at an offset (or the first offset at or after a timestamp, through
ListOffsets by time), fetches up to N records and stops at the partition's end; nothing is committed.
Keys, values and headers are shown as text, as pretty-printed JSON, or as hex when they are not UTF-8; keys
and values in Confluent's wire format are decoded through the console's schema registry (`framed`): Avro
as its JSON encoding, JSON Schema as its JSON, labelled with the schema id and subject; what does not
decode is hex with a note saying why.
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
from odradek.console.framed import FramedDecoder, PageBudget, is_framed
from odradek.serde.avro import DecodeError
from odradek.serde.registry_client import RegistryError

MAX_SHOWN_BYTES = 16 * 1024
MAX_MESSAGES = 500
WEBLOGS_WINDOWS = 180
WEBLOGS_MAX_RECORDS = 5000
WEBLOGS_MAX_AVRO_BYTES = 64 << 10  # a window's metrics take a few hundred bytes; larger records are skipped


@dataclass
class Payload:
    """A key, value or header value as the browser shows it."""

    kind: str  # null, text, json, hex, avro
    text: str
    size: int
    schema_id: int | None = None  # in Confluent's wire format: its schema id
    schema_type: str = ""  # AVRO, JSON, PROTOBUF when the registry said
    subject: str | None = None  # a subject and version the id is registered under
    version: int | None = None
    note: str = ""  # why a framed payload is shown as bytes

    @property
    def schema_label(self) -> str:
        if self.schema_id is None:
            return ""
        kind = f" ({self.schema_type})" if self.schema_type and self.schema_type != "AVRO" else ""
        return f"schema id {self.schema_id}{kind}"


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
            out: dict[str, Any] = {"kind": x.kind, "text": x.text, "size": x.size}
            if x.schema_id is not None:
                out.update(schema_id=x.schema_id, schema_type=x.schema_type, subject=x.subject, version=x.version,
                           note=x.note)
            return out

        return {"partition": self.partition, "offset": self.offset, "timestamp": self.timestamp_ms,
                "time": self.time, "key": p(self.key), "value": p(self.value),
                "headers": [[k, p(v)] for k, v in self.headers]}


def iso_time(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def payload(data: bytes | str | None, decoder: FramedDecoder | None = None, topic: str = "",
            is_key: bool = False, budget: PageBudget | None = None) -> Payload:
    """text, JSON pretty-printed, or hex (spaced bytes) when not UTF-8; long payloads are cut. With a decoder,
    bytes in Confluent's wire format are decoded (Avro, JSON Schema) or shown as hex with the reason."""
    if data is None:
        return Payload("null", "", 0)
    raw = data.encode() if isinstance(data, str) else bytes(data)
    if decoder is not None and is_framed(raw):
        return framed_payload(raw, decoder, topic, is_key, budget)
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


def framed_payload(raw: bytes, decoder: FramedDecoder, topic: str, is_key: bool,
                   budget: PageBudget | None) -> Payload:
    d = decoder.decode(raw, topic, is_key, budget)
    assert d is not None  # is_framed
    if d.text is None:
        shown = raw[:MAX_SHOWN_BYTES]
        text = shown.hex(" ") + (f" … ({len(raw)} bytes)" if len(raw) > len(shown) else "")
        kind = "hex"
    else:
        text = d.text if len(d.text) <= MAX_SHOWN_BYTES else d.text[:MAX_SHOWN_BYTES] + f" … ({len(d.text)} characters)"
        kind = "avro" if d.schema_type == "AVRO" else "json"
    return Payload(kind, text, len(raw), d.schema_id, d.schema_type, d.subject, d.version, d.note)


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
         timestamp_ms: int | None = None, limit: int = 20, wait_s: float = 2.0,
         decoder: FramedDecoder | None = None) -> tuple[list[Message], int, int]:
    """Up to `limit` records of one partition from `offset` (default: the log start) or from the first
    record at or after `timestamp_ms`; returns them, the offset to read next and the partition's end offset
    (where a live tail starts). Framed keys and values are decoded with `decoder`."""
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
        records: list[Any] = []
        next_offset = start
        deadline = time.monotonic() + wait_s
        while len(records) < limit and next_offset < high and time.monotonic() < deadline:
            batch: list[Any] = c.consume(min(limit - len(records), 500), timeout=0.2)
            for m in batch:
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        deadline = 0.0
                        break
                    raise ClusterError(err.str())
                records.append(m)
                next_offset = m.offset() + 1
                if len(records) >= limit:
                    break
    # decoded once read: a registry lookup's wait does not count against the fetch's
    budget = PageBudget()
    out = []
    for m in records:
        ts_type, ts = m.timestamp()
        out.append(Message(m.partition(), m.offset(), ts if ts_type else None,
                           payload(m.key(), decoder, topic, True, budget),
                           payload(m.value(), decoder, topic, False, budget),
                           [(k, payload(v)) for k, v in (m.headers() or [])]))
    return out, next_offset, high


def weblogs_metrics(cluster: ClusterAdmin, topic: str,
                    decoder: FramedDecoder | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """The weblogs pipeline's per-minute windows from `topic` (JSON records, or Avro WindowMetrics in
    Confluent's wire format decoded with `decoder`, keyed by window start; a later record of a window
    supersedes an earlier one), oldest first, the newest WEBLOGS_WINDOWS of them; and, when Avro records
    could not be decoded because no registry could be asked, why."""
    unreadable: str | None = None
    md = cluster.metadata(topic)
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        return [], None
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
                        record = metrics_record(m.value() or b"", decoder)
                        record["t"] = parse_time(str(record["window_start"])) / 1000
                        windows[str(record["window_start"])] = record
                    except RegistryError as exc:
                        unreadable = str(exc)
                    except (ValueError, KeyError, TypeError, AttributeError, ClusterError):
                        continue
    problem = None if unreadable is None else f"Avro records of {topic} not decoded: {unreadable}"
    return sorted(windows.values(), key=lambda r: r["t"])[-WEBLOGS_WINDOWS:], problem


def metrics_record(value: bytes, decoder: FramedDecoder | None) -> dict[str, Any]:
    """A metrics record as a dict, window bounds as the JSON records write them (ISO seconds, UTC);
    ValueError (DecodeError) when it is neither JSON nor decodable Avro."""
    if decoder is None or not is_framed(value):
        record: dict[str, Any] = json.loads(value)
        return record
    if len(value) > WEBLOGS_MAX_AVRO_BYTES:
        raise DecodeError(f"{len(value)} bytes: not a window's metrics")
    datum = decoder.datum(value)
    if not isinstance(datum, dict):
        raise DecodeError("not a record")
    for key in ("window_start", "window_end"):
        bound = datum.get(key)
        if isinstance(bound, datetime):  # timestamp-millis
            datum[key] = bound.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return datum
