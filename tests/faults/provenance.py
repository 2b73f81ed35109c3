"""Which producer session wrote each copy of a record read twice, from the brokers' log files.

An idempotent producer's retries are recognised by the broker only within one producer session: the same
producer id and epoch (KIP-98). A client that bumps its epoch and then re-sends a record whose first send
may have been written (librdkafka does, after an OUT_OF_ORDER_SEQUENCE_NUMBER on another request:
confluentinc/librdkafka#4953) makes a duplicate no broker can recognise, Apache Kafka's included. A copy
written twice in the *same* session is the broker's fault. `sessions_of` reads the batch headers
(producer id, epoch, sequence) of the offsets where a value was read, so the checker can tell the two apart.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from odradek.protocol.records import iter_batches


class Copy(NamedTuple):
    offset: int
    producer_id: int
    producer_epoch: int
    sequence: int  # the record's own sequence number (-1 for a non-idempotent batch)


def _segments(data_dirs: Iterable[Path], topic: str, partition: int) -> list[Path]:
    out: list[Path] = []
    for d in data_dirs:
        out.extend(sorted((d / f"{topic}-{partition}").glob("*.log")))
    return out


def copies_at(data_dirs: Iterable[Path], topic: str, partition: int, offsets: Iterable[int]) -> dict[int, Copy]:
    """For each offset, the producer session of the batch that holds it, from the first replica's log that
    has it (after healing every replica holds the same batches)."""
    wanted = set(offsets)
    found: dict[int, Copy] = {}
    for segment in _segments(data_dirs, topic, partition):
        if wanted <= found.keys():
            break
        data = segment.read_bytes()
        try:
            for _pos, h in iter_batches(data):
                for o in wanted - found.keys():
                    if h.base_offset <= o <= h.base_offset + h.last_offset_delta:
                        seq = h.base_sequence + (o - h.base_offset) if h.base_sequence >= 0 else -1
                        found[o] = Copy(o, h.producer_id, h.producer_epoch, seq)
        except Exception:  # noqa: BLE001 - a torn tail of an active segment: what was read so far counts
            continue
    return found


def resent_by_client(copies: list[Copy]) -> bool:
    """Every copy was written by a different producer session (id, epoch): the client sent the record
    again under a new epoch or id, which no broker can recognise as a retry."""
    sessions = [(c.producer_id, c.producer_epoch) for c in copies]
    return len(copies) > 1 and all(c.producer_id >= 0 for c in copies) and len(set(sessions)) == len(sessions)
