"""Reading a coordinator partition for its replay (Kafka's CoordinatorLoader): every record from the log
start to the log end, as a reader of committed data sees them."""

from __future__ import annotations

import logging

from odradek.coordinator.partitions import FetchedRecords, ReadableLog, Replayed
from odradek.protocol.records import COMMIT_MARKER, decode_records, iter_batches, marker_type

log = logging.getLogger("odradek.coordinator")

MAX_LOAD_BUFFER = 64 * 1024 * 1024


def _as_bytes(records: FetchedRecords) -> bytes | memoryview:
    data = records.records
    if isinstance(data, bytes | memoryview):
        return data
    if isinstance(data, bytearray):
        return memoryview(data)
    return b"".join(bytes(c) for c in data)


def read_partition(log_: ReadableLog, buffer_size: int, topic: str = "",
                   open_txns: dict[int, Replayed] | None = None) -> Replayed:
    """Every (key, value) of a log from its start to its end as a reader of committed data sees them:
    records of a transaction (transactional offset commits) appear where its commit marker is and not
    at all if it aborted; those of transactions still open at the end go to `open_txns` by producer id.
    Blocking: run it in a worker thread."""
    end = log_.log_end_offset
    offset = log_.log_start_offset
    out: Replayed = []
    pending: dict[int, Replayed] = {}
    while offset < end:
        buf = _as_bytes(log_.read(offset, buffer_size, max_offset=end))
        nxt = _collect(buf, offset, out, pending)
        if nxt > offset:
            offset = nxt
        elif len(buf) == 0:
            break  # the rest of the log was compacted away
        elif buffer_size < MAX_LOAD_BUFFER:
            buffer_size = min(buffer_size * 2, MAX_LOAD_BUFFER)  # a batch larger than the buffer
        else:
            log.warning("Loading %s stopped at offset %d of %d: no readable batch", topic, offset, end)
            break
    if open_txns is not None:
        open_txns.update(pending)
    return out


def _collect(buf: bytes | memoryview, offset: int, out: Replayed, pending: dict[int, Replayed]) -> int:
    view = memoryview(buf)
    for pos, header in iter_batches(view):
        if header.next_offset <= offset:
            continue
        batch = view[pos : pos + header.size]
        if header.is_control:
            records = pending.pop(header.producer_id, [])
            if marker_type(batch) == COMMIT_MARKER:
                out.extend(records)
        else:
            target = pending.setdefault(header.producer_id, []) if header.is_transactional else out
            for rec in decode_records(batch):
                if rec.offset >= offset:
                    target.append((rec.key, rec.value))
        offset = header.next_offset
    return offset
