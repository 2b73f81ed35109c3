"""Checks on record batches before the log writes them (Kafka's LogValidator, and the order checks of a
follower's append): the batch structure (magic 2, CRC, sizes: `validate_batches`, never decoding records),
who may write control batches (`AppendOrigin`), recompression to the topic's compression.type, keys in
compacted topics, CreateTime bounds, and the offset order of replicated batches.

Only a topic that asks for it pays for decoding records: recompression (compression.type other than
`producer`), keys (cleanup.policy=compact), timestamps (a message.timestamp.*.max.ms bound). Compressed
records inflate within `LogConfig.max_decompressed_bytes` per check (a compressed bomb is INVALID_RECORD). Every
function here is pure: it reads the buffer and the config it is given and raises the Kafka error;
none touches the log, so the log calls the ones that need no state before taking its lock.
"""

from __future__ import annotations

import enum

from odradek.protocol.errors import ErrorCode, InvalidRecordError, RecordValidationError
from odradek.protocol.records import (
    COMPRESSION_CODECS,
    CONTROL_MASK,
    BatchHeader,
    DecompressionBudget,
    build_batch,
    decode_records,
    validate_batches,
)
from odradek.storage.log_config import LogConfig

LONG_MAX = 9223372036854775807

Batches = list[tuple[int, BatchHeader]]  # (position in the buffer, header) of each batch


class AppendOrigin(enum.Enum):
    """Who appends as leader (Kafka's AppendOrigin). Clients may not write control batches (transaction
    markers), and their batches are recompressed to the topic's compression.type; the coordinators (the
    transaction coordinator's markers, the group coordinator's transactional offset commits) may write
    control batches and are written as built. Replicated batches take `Log.append_as_follower`, which
    has no origin."""

    CLIENT = "client"
    COORDINATOR = "coordinator"


def validate_as_leader(
    records: bytes | bytearray | memoryview, config: LogConfig, origin: AppendOrigin, topic_partition: str
) -> tuple[bytearray, Batches]:
    """The batches of a leader's append, as they will be written (recompressed if the topic asks for it),
    with their headers. Everything but the timestamp bounds (`check_timestamps`, which needs the time of
    the append): call it before taking the log's lock."""
    data = bytearray(records)
    batches = validate_batches(data, config.max_message_bytes)
    client = origin is AppendOrigin.CLIENT
    if client and any(h.is_control for _, h in batches):
        raise InvalidRecordError(message="Clients may not write control batches (transaction markers)")
    if config.compression_type != "producer" and client:
        data, batches = recompress(data, batches, config)
    if config.compact:
        check_keys(data, batches, topic_partition, DecompressionBudget(config.max_decompressed_bytes))
    return data, batches


def validate_as_follower(records: bytes | bytearray | memoryview) -> tuple[bytearray, Batches]:
    """The batches of a follower's append (replicated or copied data: fewer records than their offset
    range is fine), with their headers."""
    data = bytearray(records)
    return data, validate_batches(data, None, producer=False)


def check_keys(data: bytearray, batches: Batches, topic_partition: str, budget: DecompressionBudget) -> None:
    """A compacted topic keeps the latest record per key, so every record needs one (Kafka's rule).
    This decodes the records (inflating within `budget`), which only compacted topics pay for."""
    view = memoryview(data)
    message = f"Compacted topic cannot accept message without key in topic partition {topic_partition}."
    keyless: list[tuple[int, str | None]] = []
    index = 0
    for pos, h in batches:
        if h.is_control:
            index += h.records_count
            continue
        for record in decode_records(view[pos : pos + h.size], budget):
            if record.key is None:
                keyless.append((index, message))
            index += 1
    if keyless:
        raise RecordValidationError(ErrorCode.INVALID_RECORD, message, keyless)


def check_timestamps(data: bytearray, batches: Batches, config: LogConfig, now: int) -> None:
    """CreateTime bounds from message.timestamp.{difference,before,after}.max.ms. A batch header gives
    the first and the largest timestamp, not the smallest, so every record is read: only topics
    that set a bound pay for it. The offending records are named (KIP-467)."""
    if config.message_timestamp_type != "CreateTime":
        return
    before = min(config.message_timestamp_difference_max_ms, config.message_timestamp_before_max_ms)
    after = min(config.message_timestamp_difference_max_ms, config.message_timestamp_after_max_ms)
    if before == LONG_MAX and after == LONG_MAX:
        return
    low, high = now - before, min(now + after, LONG_MAX)

    def out_of_range(ts: int) -> bool:
        return ts >= 0 and (ts < low or ts > high)

    view = memoryview(data)
    budget = DecompressionBudget(config.max_decompressed_bytes)
    errors: list[tuple[int, str | None]] = []
    index = 0
    for pos, h in batches:
        for record in decode_records(view[pos : pos + h.size], budget):
            if out_of_range(record.timestamp):
                errors.append((index, f"Timestamp {record.timestamp} of message with offset {index} is out "
                                      f"of range. The timestamp should be within [{low}, {high}]"))
            index += 1
    if errors:
        raise RecordValidationError(ErrorCode.INVALID_TIMESTAMP, errors[0][1] or "", errors)


def recompress(data: bytearray, batches: Batches, config: LogConfig) -> tuple[bytearray, Batches]:
    """Rewrite batches whose codec differs from the topic's compression.type, at the topic's
    compression.<codec>.level (not a hot path)."""
    name = config.compression_type
    target = 0 if name == "uncompressed" else COMPRESSION_CODECS[name]
    if all(h.compression == target or h.attributes & CONTROL_MASK for _, h in batches):
        return data, batches
    out = bytearray()
    view = memoryview(data)
    budget = DecompressionBudget(config.max_decompressed_bytes)
    for pos, h in batches:
        raw = view[pos : pos + h.size]
        if h.compression == target or h.is_control:
            out += raw
            continue
        out += build_batch(
            decode_records(raw, budget),
            base_offset=h.base_offset,
            compression=target,
            compression_level=config.compression_level(target),
            producer_id=h.producer_id,
            producer_epoch=h.producer_epoch,
            base_sequence=h.base_sequence,
            partition_leader_epoch=h.partition_leader_epoch,
            is_transactional=h.is_transactional,
        )
    return out, validate_batches(out, config.max_message_bytes)


def check_increasing(batches: Batches) -> Batches:
    """Replicated batches, which keep their offsets, must come in increasing offset order."""
    for (_, prev), (_, h) in zip(batches, batches[1:], strict=False):
        if h.base_offset < prev.next_offset:
            raise InvalidRecordError(
                message=f"Out of order offsets: batch at {h.base_offset} follows one ending at {prev.last_offset}"
            )
    return batches


def dense_runs(batches: Batches) -> list[tuple[int, int, Batches]]:
    """Replicated batches split where their offsets leave a gap: (start position, end position, batches)
    of each run of consecutive offsets."""
    runs: list[tuple[int, int, Batches]] = []
    run: Batches = []
    for pos, h in check_increasing(batches):
        if run and h.base_offset != run[-1][1].next_offset:
            runs.append((run[0][0], pos, run))
            run = []
        run.append((pos, h))
    runs.append((run[0][0], run[-1][0] + run[-1][1].size, run))
    return runs
