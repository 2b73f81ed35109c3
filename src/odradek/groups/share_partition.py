"""One share-partition's delivery state (KIP-932, Kafka's SharePartition): which records of a topic
partition a share group has yet to deliver, has handed to a member, or is done with. Pure: no I/O, no
clock (every call that needs the time takes `now` in milliseconds), no asyncio; the share-fetch handler
and `odradek.groups.share_coordinator` drive it.

The state covers a window of offsets, [start offset (SPSO), end offset):

- below the start offset every record is done (acknowledged or archived) and nothing is kept;
- at or above the end offset nothing has been delivered yet; the end offset is the next offset read
  from the log for a first delivery;
- in between, each offset has a `RecordState`, a delivery count and, while acquired, its holder and the
  deadline of its acquisition lock.

Acquiring a record makes it ACQUIRED by one member until the member acknowledges it (ACCEPT →
ACKNOWLEDGED, RELEASE → AVAILABLE again, REJECT or GAP → ARCHIVED) or the lock expires (→ AVAILABLE).
RENEW (KIP-1222) leaves the record ACQUIRED by the member with a fresh lock (`lock_duration_ms` from
now) and its delivery count as it was.
A released or expired record whose delivery count reached the delivery-count limit is ARCHIVED instead.
The start offset moves up over the done prefix of the window, never down. No more than
`max_in_flight` offsets (`group.share.partition.max.record.locks`) sit in the window: a partition with
that many undelivered-or-unacknowledged records acquires nothing new until the start offset moves.

Departure: Kafka keeps whole-batch ranges and splits them into per-offset state only when a batch is
acknowledged piecemeal; here every offset of the window has its own entry (the window is bounded by the
record-lock limit, a few thousand entries at most), which is simpler and answers the same.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum

from odradek.config_keys import iso_duration_seconds
from odradek.protocol.errors import ErrorCode

EARLIEST, LATEST, BY_DURATION = "earliest", "latest", "by_duration"  # share.auto.offset.reset


class RecordState(IntEnum):
    """Kafka's values (they are what `__share_group_state` stores)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AckType(IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4  # KIP-1222, ShareFetch/ShareAcknowledge v2: restart the acquisition lock


@dataclass(slots=True)
class InFlight:
    state: RecordState = RecordState.AVAILABLE
    delivery_count: int = 0
    holder: str | None = None  # the member holding the acquisition lock
    deadline: int = 0  # when the acquisition lock expires (ms)


@dataclass(frozen=True, slots=True)
class Acquired:
    """A range of offsets acquired by one fetch, all with the same delivery count (AcquiredRecords)."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AckBatch:
    """One AcknowledgementBatch: `types` has one entry for the whole range or one per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]


def initial_start_offset(reset: str, log_start: int, high_watermark: int,
                         offset_for_time: Callable[[int], int | None] | None = None, now: int = 0) -> int:
    """Where a share partition with no state starts (`share.auto.offset.reset`): the log start, the high
    watermark, or (`by_duration:<ISO-8601>`) the first record at or after `now` minus the duration, found
    by `offset_for_time` (the high watermark when no record is that recent)."""
    kind, _, duration = reset.partition(":")
    if kind.lower() == EARLIEST:
        return log_start
    if kind.lower() == BY_DURATION and offset_for_time is not None:
        found = offset_for_time(now - int((iso_duration_seconds(duration) or 0.0) * 1000))
        return high_watermark if found is None else min(max(found, log_start), high_watermark)
    return high_watermark


class SharePartition:
    """The delivery state of one topic partition for one share group; see the module docstring."""

    def __init__(self, start_offset: int, *, lock_duration_ms: int = 30_000, delivery_count_limit: int = 5,
                 max_in_flight: int = 2000) -> None:
        self.start_offset = start_offset
        self.end_offset = start_offset
        self.lock_duration_ms = lock_duration_ms
        self.delivery_count_limit = delivery_count_limit
        self.max_in_flight = max_in_flight
        self.records: dict[int, InFlight] = {}  # offsets in [start_offset, end_offset)
        self.archived = 0  # records archived so far (rejected, or past the delivery-count limit): a metric

    # ---- reading ----
    def next_fetch_offset(self) -> int:
        """The lowest offset a fetch could acquire: the first AVAILABLE offset of the window, else the end."""
        for offset in range(self.start_offset, self.end_offset):
            if self.records[offset].state is RecordState.AVAILABLE:
                return offset
        return self.end_offset

    def can_acquire(self) -> bool:
        """Whether a fetch may acquire anything now (an available offset, or room for new ones)."""
        return self.next_fetch_offset() < self.end_offset or self.end_offset - self.start_offset < self.max_in_flight

    def acquired_count(self) -> int:
        return sum(1 for r in self.records.values() if r.state is RecordState.ACQUIRED)

    def acquired_by(self, member_id: str) -> list[int]:
        return [o for o, r in self.records.items() if r.state is RecordState.ACQUIRED and r.holder == member_id]

    def next_deadline(self) -> int | None:
        """The earliest acquisition-lock deadline, None if nothing is acquired."""
        deadlines = [r.deadline for r in self.records.values() if r.state is RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

    # ---- acquiring ----
    def acquire(self, member_id: str, batches: list[tuple[int, int]], max_records: int, now: int,
                whole_batches: bool = False) -> list[Acquired]:
        """Acquire for `member_id` up to `max_records` offsets of `batches` ((base offset, last offset) of
        whole record batches read from the log at `next_fetch_offset()`, in order): AVAILABLE offsets of
        the window, then offsets past its end while the window has room. Returns the ranges acquired.
        Never more than `max_records`, even when that splits a batch (ShareFetch's record-limit acquire
        mode, KIP-1206), unless `whole_batches` (the batch-optimized mode, v1's): then the batch the
        limit falls in is acquired to its end, as Kafka's MaxRecords "can be exceeded for alignment of
        batch boundaries", and no batch is started once the limit is reached."""
        taken: list[int] = []
        for base, last in batches:
            if len(taken) >= max_records:
                break
            for offset in range(max(base, self.start_offset), last + 1):
                if len(taken) >= max_records and not whole_batches:
                    break
                if offset < self.end_offset:
                    rec = self.records[offset]
                    if rec.state is not RecordState.AVAILABLE:
                        continue
                elif offset - self.start_offset < self.max_in_flight:
                    for gap in range(self.end_offset, offset):  # offsets the log no longer holds
                        self.records[gap] = InFlight(RecordState.ARCHIVED)
                    rec = self.records[offset] = InFlight()
                    self.end_offset = offset + 1
                else:
                    break
                rec.state = RecordState.ACQUIRED
                rec.delivery_count += 1
                rec.holder = member_id
                rec.deadline = now + self.lock_duration_ms
                taken.append(offset)
        self._advance()
        return _ranges([(o, self.records[o].delivery_count) for o in taken])

    def archive(self, batches: list[tuple[int, int]]) -> int:
        """Archive, never to be delivered, the offsets of `batches` ((base offset, last offset) in order,
        those of aborted transactions a read_committed fetch read) that are AVAILABLE in the window or
        start right at its end; stops at the first batch past a gap (what lies between is not known to
        be aborted). The number archived."""
        archived = 0
        for base, last in batches:
            if base > self.end_offset:
                break
            for offset in range(max(base, self.start_offset), last + 1):
                if offset < self.end_offset:
                    rec = self.records[offset]
                    if rec.state is not RecordState.AVAILABLE:
                        continue
                elif offset - self.start_offset < self.max_in_flight:
                    rec = self.records[offset] = InFlight()
                    self.end_offset = offset + 1
                else:
                    break
                rec.state, rec.holder = RecordState.ARCHIVED, None
                archived += 1
        self._advance()
        return archived

    # ---- acknowledging ----
    def acknowledge(self, member_id: str, batches: list[AckBatch], now: int = 0) -> ErrorCode:
        """Apply a member's acknowledgements of one partition, all or none: INVALID_REQUEST for a batch
        that is malformed (first after last, a type count that is neither 1 nor the range's length, an
        unknown type, overlapping batches), INVALID_RECORD_STATE when an offset is not acquired by this
        member (never fetched, already acknowledged, its lock expired, or another member's). A RENEW
        restarts the offset's lock at `now` (whether the request may carry RENEW is the caller's check)."""
        seen_upto = -1
        for b in batches:
            if b.first_offset > b.last_offset or b.first_offset <= seen_upto:
                return ErrorCode.INVALID_REQUEST
            seen_upto = b.last_offset
            if len(b.types) not in (1, b.last_offset - b.first_offset + 1):
                return ErrorCode.INVALID_REQUEST
            if any(t not in _ACK_TYPES for t in b.types):
                return ErrorCode.INVALID_REQUEST
        for b in batches:
            if b.first_offset < self.start_offset or b.last_offset >= self.end_offset:
                return ErrorCode.INVALID_RECORD_STATE  # also bounds the walk below by the window
            for offset in range(b.first_offset, b.last_offset + 1):
                rec = self.records[offset]
                if rec.state is not RecordState.ACQUIRED or rec.holder != member_id:
                    return ErrorCode.INVALID_RECORD_STATE
        for b in batches:
            for i, offset in enumerate(range(b.first_offset, b.last_offset + 1)):
                kind = b.types[0] if len(b.types) == 1 else b.types[i]
                rec = self.records[offset]
                if kind == AckType.ACCEPT:
                    self._settle(rec, RecordState.ACKNOWLEDGED)
                elif kind == AckType.RELEASE:
                    self._give_back(rec)
                elif kind == AckType.RENEW:
                    rec.deadline = now + self.lock_duration_ms
                else:  # REJECT, GAP
                    self._settle(rec, RecordState.ARCHIVED)
                    self.archived += 1
        self._advance()
        return ErrorCode.NONE

    def unacquire(self, member_id: str, acquired: list[Acquired]) -> bool:
        """Undo acquisitions by `member_id` that were never delivered (a ShareFetch answered empty, throttled
        by its quota): the offsets are available again with the delivery counts they had. Whether one of them
        had been delivered before (its raised count was written, so the state must be written again)."""
        redelivered = False
        for a in acquired:
            for offset in range(a.first_offset, a.last_offset + 1):
                rec = self.records.get(offset)
                if rec is not None and rec.state is RecordState.ACQUIRED and rec.holder == member_id:
                    redelivered = redelivered or rec.delivery_count > 1
                    rec.delivery_count -= 1
                    self._settle(rec, RecordState.AVAILABLE)
        return redelivered

    def release_member(self, member_id: str) -> int:
        """Give back every record `member_id` holds (it left the group or closed its share session); the
        number released."""
        held = self.acquired_by(member_id)
        for offset in held:
            self._give_back(self.records[offset])
        self._advance()
        return len(held)

    def expire_locks(self, now: int) -> int:
        """Give back the records whose acquisition lock expired by `now`; the number expired."""
        expired = [r for r in self.records.values() if r.state is RecordState.ACQUIRED and r.deadline <= now]
        for rec in expired:
            self._give_back(rec)
        self._advance()
        return len(expired)

    def log_start_moved(self, log_start: int) -> None:
        """Records below the log start offset are gone (retention, DeleteRecords): nothing below it can be
        delivered again."""
        if log_start <= self.start_offset:
            return
        for offset in range(self.start_offset, min(log_start, self.end_offset)):
            del self.records[offset]
        self.start_offset = log_start
        self.end_offset = max(self.end_offset, log_start)
        self._advance()

    # ---- internals ----
    def _give_back(self, rec: InFlight) -> None:
        if rec.delivery_count >= self.delivery_count_limit:
            self._settle(rec, RecordState.ARCHIVED)
            self.archived += 1
        else:
            self._settle(rec, RecordState.AVAILABLE)

    @staticmethod
    def _settle(rec: InFlight, state: RecordState) -> None:
        rec.state = state
        rec.holder = None
        rec.deadline = 0

    def _advance(self) -> None:
        while self.start_offset < self.end_offset and self.records[self.start_offset].state in _DONE:
            del self.records[self.start_offset]
            self.start_offset += 1


_ACK_TYPES = frozenset(int(t) for t in AckType)
_DONE = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


def _ranges(offsets: list[tuple[int, int]]) -> list[Acquired]:
    """Consecutive offsets with the same delivery count, as ranges."""
    out: list[Acquired] = []
    for offset, count in offsets:
        if out and out[-1].last_offset + 1 == offset and out[-1].delivery_count == count:
            out[-1] = Acquired(out[-1].first_offset, offset, count)
        else:
            out.append(Acquired(offset, offset, count))
    return out


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A run of offsets with one state and delivery count, as `__share_group_state` keeps them."""

    first_offset: int
    last_offset: int
    state: RecordState
    delivery_count: int


def snapshot(sp: SharePartition) -> tuple[int, list[StateBatch]]:
    """The partition's durable state: the start offset and the window's runs. Acquired records are kept
    as available (a lock does not survive the broker), as Kafka writes them."""
    runs: list[StateBatch] = []
    for offset in range(sp.start_offset, sp.end_offset):
        rec = sp.records[offset]
        state = RecordState.AVAILABLE if rec.state is RecordState.ACQUIRED else rec.state
        last = runs[-1] if runs else None
        if last is not None and last.last_offset + 1 == offset and (last.state, last.delivery_count) == (
                state, rec.delivery_count):
            runs[-1] = StateBatch(last.first_offset, offset, state, rec.delivery_count)
        else:
            runs.append(StateBatch(offset, offset, state, rec.delivery_count))
    return sp.start_offset, runs


def restore(start_offset: int, runs: list[StateBatch], **settings: int) -> SharePartition:
    """A share partition from its durable state (`snapshot`). An available record already delivered
    `delivery_count_limit` times is archived: it was acquired when its last leader stopped, and that
    delivery counts as one that ended without an acknowledgement. Offsets past the window's bound
    (`max_in_flight` from the start offset) are not restored: they are read from the log again as new."""
    sp = SharePartition(start_offset, **settings)
    bound = start_offset + sp.max_in_flight
    for run in runs:
        state = run.state
        if state is RecordState.AVAILABLE and run.delivery_count >= sp.delivery_count_limit:
            state = RecordState.ARCHIVED
        for offset in range(max(run.first_offset, start_offset), min(run.last_offset + 1, bound)):
            for gap in range(sp.end_offset, offset):
                sp.records[gap] = InFlight(RecordState.ARCHIVED)
            sp.records[offset] = InFlight(state, run.delivery_count)
            sp.end_offset = offset + 1
    sp._advance()
    return sp
