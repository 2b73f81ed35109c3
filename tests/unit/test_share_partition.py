"""The share-partition state machine (`odradek.groups.share_partition`): acquisition (never past
max_records), the acknowledge types (RENEW included), lock expiry, the delivery-count limit, the in-flight
bound, and a property test over random interleavings of members."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.groups.share_partition import (
    EARLIEST,
    LATEST,
    AckBatch,
    AckType,
    Acquired,
    RecordState,
    SharePartition,
    initial_start_offset,
)
from odradek.protocol.errors import ErrorCode

ACCEPT, RELEASE, REJECT, GAP, RENEW = (int(AckType.ACCEPT), int(AckType.RELEASE), int(AckType.REJECT),
                                       int(AckType.GAP), int(AckType.RENEW))


def _sp(start: int = 0, **kw: int) -> SharePartition:
    return SharePartition(start, **kw)


def test_initial_start_offset() -> None:
    assert initial_start_offset(LATEST, 3, 10) == 10
    assert initial_start_offset(EARLIEST, 3, 10) == 3
    assert initial_start_offset("Earliest", 3, 10) == 3  # any case, as Kafka parses it


def test_initial_start_offset_by_duration() -> None:
    """by_duration: the first record at or after now minus the duration; none that recent: the high
    watermark; never outside the log's bounds."""
    asked: list[int] = []

    def at(found: int | None) -> Callable[[int], int | None]:  # the log's answer to "first offset at or after ts"
        def lookup(ts: int) -> int | None:
            asked.append(ts)
            return found
        return lookup

    assert initial_start_offset("by_duration:PT1H", 3, 10, at(6), now=7_200_000) == 6
    assert asked == [3_600_000]
    assert initial_start_offset("by_duration:P1DT0.5S", 3, 10, at(None), now=100_000_000) == 10
    assert asked[-1] == 100_000_000 - 86_400_500
    assert initial_start_offset("by_duration:PT0S", 3, 10, at(1), now=5) == 3


def test_acquire_whole_batches_and_accept_advances_start() -> None:
    sp = _sp()
    got = sp.acquire("a", [(0, 4), (5, 9)], 100, now=0)
    assert got == [Acquired(0, 9, 1)]
    assert sp.acquire("b", [(0, 4), (5, 9)], 100, now=0) == []  # nothing available twice
    assert sp.acknowledge("a", [AckBatch(0, 4, (ACCEPT,))]) == ErrorCode.NONE
    assert (sp.start_offset, sp.end_offset) == (5, 10)
    assert sp.acknowledge("a", [AckBatch(0, 4, (ACCEPT,))]) == ErrorCode.INVALID_RECORD_STATE  # twice


def test_max_records_and_start_inside_batch() -> None:
    sp = _sp(3)
    assert sp.acquire("a", [(0, 9)], 4, now=0) == [Acquired(3, 6, 1)]
    assert sp.next_fetch_offset() == 7
    assert sp.acquire("b", [(0, 9)], 100, now=0) == [Acquired(7, 9, 1)]


def test_whole_batches_finish_the_batch_the_limit_falls_in() -> None:
    """The batch-optimized acquire mode (v1's): MaxRecords 4 over batches 0-2 and 3-9 acquires to the end
    of the batch the limit falls in, and starts no batch past the limit; record-limit stops at 4."""
    sp = _sp()
    assert sp.acquire("a", [(0, 2), (3, 9), (10, 12)], 4, now=0, whole_batches=True) == [Acquired(0, 9, 1)]
    assert sp.acquire("b", [(10, 12), (13, 20)], 3, now=0, whole_batches=True) == [Acquired(10, 12, 1)]
    assert sp.acquire("c", [(13, 20)], 4, now=0) == [Acquired(13, 16, 1)]


def test_archive_aborted_batches_never_delivers_them() -> None:
    """read_committed: batches of aborted transactions are archived where they join the window, never
    past a gap (what lies between is unknown), and never when acquired or settled."""
    sp = _sp()
    assert sp.acquire("a", [(0, 2), (6, 8)], 3, now=0) == [Acquired(0, 2, 1)]  # max_records stops at 2
    assert sp.archive([(3, 5)]) == 3 and sp.end_offset == 6
    assert sp.archive([(10, 11)]) == 0 and sp.end_offset == 6  # past a gap: left alone
    assert sp.acquire("b", [(6, 8)], 100, now=0) == [Acquired(6, 8, 1)]
    assert sp.archive([(6, 8)]) == 0  # acquired: not archived under the holder
    assert sp.acknowledge("a", [AckBatch(0, 2, (ACCEPT,))]) == ErrorCode.NONE
    assert sp.start_offset == 6  # the archived batch does not hold the start back
    assert sp.next_fetch_offset() == 9


def test_release_redelivers_with_higher_count() -> None:
    sp = _sp()
    sp.acquire("a", [(0, 2)], 10, now=0)
    assert sp.acknowledge("a", [AckBatch(0, 2, (ACCEPT, RELEASE, ACCEPT))]) == ErrorCode.NONE
    assert sp.start_offset == 1
    assert sp.next_fetch_offset() == 1
    assert sp.acquire("b", [(0, 2)], 10, now=5) == [Acquired(1, 1, 2)]
    assert sp.acknowledge("b", [AckBatch(1, 1, (ACCEPT,))]) == ErrorCode.NONE
    assert sp.start_offset == 3 and not sp.records


def test_reject_and_gap_archive() -> None:
    sp = _sp()
    sp.acquire("a", [(0, 1)], 10, now=0)
    assert sp.acknowledge("a", [AckBatch(0, 0, (REJECT,)), AckBatch(1, 1, (GAP,))]) == ErrorCode.NONE
    assert sp.start_offset == 2
    assert sp.acquire("a", [(0, 1)], 10, now=0) == []


def test_lock_expiry_and_delivery_limit() -> None:
    sp = _sp(lock_duration_ms=100, delivery_count_limit=2)
    sp.acquire("a", [(0, 0)], 10, now=0)
    assert sp.next_deadline() == 100
    assert sp.expire_locks(99) == 0
    assert sp.expire_locks(100) == 1
    assert sp.acknowledge("a", [AckBatch(0, 0, (ACCEPT,))]) == ErrorCode.INVALID_RECORD_STATE  # lock gone
    assert sp.acquire("b", [(0, 0)], 10, now=100) == [Acquired(0, 0, 2)]
    assert sp.expire_locks(1000) == 1
    assert sp.start_offset == 1  # archived at the limit: never delivered a third time
    assert sp.acquire("c", [(0, 0)], 10, now=1000) == []


def test_release_member() -> None:
    sp = _sp()
    sp.acquire("a", [(0, 3)], 2, now=0)
    sp.acquire("b", [(0, 3)], 2, now=0)
    assert sp.release_member("a") == 2
    assert sp.acquire("c", [(0, 3)], 10, now=0) == [Acquired(0, 1, 2)]
    assert sp.acquired_by("b") == [2, 3]


def test_another_members_records_and_bad_batches() -> None:
    sp = _sp()
    sp.acquire("a", [(0, 3)], 10, now=0)
    assert sp.acknowledge("b", [AckBatch(0, 0, (ACCEPT,))]) == ErrorCode.INVALID_RECORD_STATE
    assert sp.acknowledge("a", [AckBatch(2, 1, (ACCEPT,))]) == ErrorCode.INVALID_REQUEST
    assert sp.acknowledge("a", [AckBatch(0, 3, (ACCEPT, ACCEPT))]) == ErrorCode.INVALID_REQUEST
    assert sp.acknowledge("a", [AckBatch(0, 0, (9,))]) == ErrorCode.INVALID_REQUEST
    assert sp.acknowledge("a", [AckBatch(0, 1, (ACCEPT,)), AckBatch(1, 2, (ACCEPT,))]) == ErrorCode.INVALID_REQUEST
    assert sp.acknowledge("a", [AckBatch(0, 2**62, (ACCEPT,))]) == ErrorCode.INVALID_RECORD_STATE  # no 2**62 walk
    # all or none: the valid first batch was not applied
    assert sp.acknowledge("a", [AckBatch(0, 0, (ACCEPT,)), AckBatch(10, 10, (ACCEPT,))]) == \
        ErrorCode.INVALID_RECORD_STATE
    assert sp.records[0].state is RecordState.ACQUIRED


def test_renew_restarts_the_lock_and_keeps_the_delivery_count() -> None:
    sp = _sp(lock_duration_ms=100)
    assert sp.acquire("a", [(0, 2)], 10, now=0) == [Acquired(0, 2, 1)]
    assert sp.acknowledge("a", [AckBatch(0, 1, (RENEW,))], now=80) == ErrorCode.NONE
    assert [(r.state, r.holder, r.delivery_count, r.deadline) for r in sp.records.values()] == [
        (RecordState.ACQUIRED, "a", 1, 180), (RecordState.ACQUIRED, "a", 1, 180), (RecordState.ACQUIRED, "a", 1, 100)]
    assert sp.expire_locks(100) == 1  # only the one not renewed
    assert sp.acquire("b", [(0, 2)], 10, now=100) == [Acquired(2, 2, 2)]
    assert sp.expire_locks(179) == 0 and sp.acquired_by("a") == [0, 1]
    # renewed again, per offset beside another type; then settled as any acquired record
    assert sp.acknowledge("a", [AckBatch(0, 1, (RENEW, ACCEPT))], now=150) == ErrorCode.NONE
    assert (sp.records[0].deadline, sp.records[0].delivery_count, sp.start_offset) == (250, 1, 0)
    assert sp.acknowledge("a", [AckBatch(0, 0, (ACCEPT,))], now=200) == ErrorCode.NONE
    assert sp.start_offset == 2


def test_renew_of_records_the_member_does_not_hold() -> None:
    """As any acknowledgement: INVALID_RECORD_STATE for another member's record, one never acquired, or
    one whose lock expired (a renewal cannot bring back a lock); all or none."""
    sp = _sp(lock_duration_ms=100)
    sp.acquire("a", [(0, 1)], 10, now=0)
    assert sp.acknowledge("b", [AckBatch(0, 0, (RENEW,))], now=10) == ErrorCode.INVALID_RECORD_STATE
    assert sp.acknowledge("a", [AckBatch(0, 5, (RENEW,))], now=10) == ErrorCode.INVALID_RECORD_STATE
    assert sp.records[0].deadline == 100  # the valid part was not applied
    assert sp.expire_locks(100) == 2
    assert sp.acknowledge("a", [AckBatch(0, 0, (RENEW,))], now=110) == ErrorCode.INVALID_RECORD_STATE
    assert sp.records[0].state is RecordState.AVAILABLE


def test_record_limit_splits_batches() -> None:
    """KIP-1206's record-limit mode: never more than max_records, wherever the batches end."""
    sp = _sp()
    assert sp.acquire("a", [(0, 4), (5, 9)], 3, now=0) == [Acquired(0, 2, 1)]
    assert sp.acquire("b", [(0, 4), (5, 9)], 4, now=0) == [Acquired(3, 6, 1)]
    assert sp.acquire("c", [(5, 9), (10, 10)], 1, now=0) == [Acquired(7, 7, 1)]


def test_in_flight_bound() -> None:
    sp = _sp(max_in_flight=3)
    assert sp.acquire("a", [(0, 9)], 100, now=0) == [Acquired(0, 2, 1)]
    assert not sp.can_acquire()
    sp.acknowledge("a", [AckBatch(0, 0, (ACCEPT,))])
    assert sp.acquire("a", [(3, 9)], 100, now=0) == [Acquired(3, 3, 1)]


def test_gaps_in_the_log_and_log_start() -> None:
    sp = _sp()
    assert sp.acquire("a", [(0, 1), (5, 6)], 100, now=0) == [Acquired(0, 1, 1), Acquired(5, 6, 1)]
    sp.acknowledge("a", [AckBatch(0, 1, (ACCEPT,))])
    assert sp.start_offset == 5  # 2..4 were never in the log
    sp.log_start_moved(6)
    assert (sp.start_offset, sp.acquired_by("a")) == (6, [6])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["fetch", "ack", "expire", "leave"]), st.sampled_from("abc"),
                          st.integers(1, 6), st.sampled_from([ACCEPT, RELEASE, REJECT, GAP, RENEW])),
                max_size=60))
def test_property_one_holder_once_acknowledged_start_monotonic(ops: list[tuple[str, str, int, int]]) -> None:
    sp = SharePartition(0, lock_duration_ms=50, delivery_count_limit=3, max_in_flight=8)
    log_end = 20
    now = 0
    holder: dict[int, str] = {}  # the model: who holds each offset
    accepted: set[int] = set()
    deliveries: dict[int, int] = {}
    last_start = sp.start_offset
    for op, member, n, kind in ops:
        now += 10
        if op == "fetch":
            sp.expire_locks(now)
            holder = {o: m for o, m in holder.items() if sp.records.get(o) and sp.records[o].holder == m}
            start = sp.next_fetch_offset()
            batches = [(b, min(b + 2, log_end - 1)) for b in range(start - start % 3, log_end, 3)]
            got = sp.acquire(member, batches, n, now)
            assert sum(r.last_offset - r.first_offset + 1 for r in got) <= n  # record-limit
            for r in got:
                for o in range(r.first_offset, r.last_offset + 1):
                    assert o not in holder, f"offset {o} handed to {member} while {holder.get(o)} holds it"
                    assert o not in accepted
                    holder[o] = member
                    deliveries[o] = deliveries.get(o, 0) + 1
                    assert deliveries[o] == r.delivery_count <= 3
        elif op == "ack":
            mine = sorted(o for o, m in holder.items() if m == member)[:n]
            if mine:
                res = sp.acknowledge(member, [AckBatch(o, o, (kind,)) for o in mine], now)
                still = all(sp.records.get(o) is not None or o < sp.start_offset for o in mine)
                assert still
                if res == ErrorCode.NONE and kind == RENEW:  # still ours, with a fresh lock
                    assert all(sp.records[o].deadline == now + 50 for o in mine)
                elif res == ErrorCode.NONE:
                    for o in mine:
                        del holder[o]
                        if kind == ACCEPT:
                            assert o not in accepted, f"offset {o} acknowledged twice"
                            accepted.add(o)
                else:  # a lock of ours expired in between (expiry runs only on fetch here: never)
                    raise AssertionError(res)
        elif op == "expire":
            now += 60
            sp.expire_locks(now)
            holder.clear()
        else:
            sp.release_member(member)
            holder = {o: m for o, m in holder.items() if m != member}
        assert sp.start_offset >= last_start
        last_start = sp.start_offset
        assert sp.end_offset - sp.start_offset <= 8
        for o, rec in sp.records.items():
            assert (rec.state is RecordState.ACQUIRED) == (o in holder)
            if o in holder:
                assert rec.holder == holder[o]


def test_snapshot_and_restore() -> None:
    from odradek.groups.share_partition import restore, snapshot

    sp = _sp(10)
    sp.acquire("a", [(10, 14)], 100, now=0)
    sp.acknowledge("a", [AckBatch(10, 10, (ACCEPT,)), AckBatch(12, 12, (RELEASE,))])
    start, runs = snapshot(sp)
    assert start == 11
    assert [(r.first_offset, r.last_offset, r.state, r.delivery_count) for r in runs] == [
        (11, 14, RecordState.AVAILABLE, 1)]
    back = restore(start, runs)
    assert back.acquire("b", [(10, 14)], 100, now=0) == [Acquired(11, 14, 2)]


def test_restore_archives_what_reached_the_delivery_count_limit() -> None:
    """A record written as available at the limit was acquired when its leader stopped: that delivery
    ended without an acknowledgement, so it is archived, as a release at the limit would archive it."""
    from odradek.groups.share_partition import StateBatch, restore

    back = restore(5, [StateBatch(5, 6, RecordState.AVAILABLE, 3), StateBatch(7, 8, RecordState.AVAILABLE, 2)],
                   delivery_count_limit=3)
    assert back.start_offset == 7  # 5 and 6 archived: the start offset moved over them
    assert back.acquire("b", [(5, 8)], 100, now=0) == [Acquired(7, 8, 3)]


def test_restore_keeps_only_the_window() -> None:
    """A state with a huge run (another broker's, or a hostile one) is restored up to the window's bound."""
    from odradek.groups.share_partition import StateBatch, restore

    back = restore(0, [StateBatch(0, 1 << 60, RecordState.AVAILABLE, 1)], max_in_flight=100)
    assert (back.start_offset, back.end_offset, len(back.records)) == (0, 100, 100)


def test_unacquire_undoes_an_acquisition_never_sent() -> None:
    """A throttled ShareFetch's acquisitions are undone: available again with the delivery counts they had
    (a redelivery's raised count must be written again); another member's records are left alone."""
    sp = _sp()
    first = sp.acquire("a", [(0, 4)], 100, now=0)
    assert sp.unacquire("a", first) is False
    assert sp.acquire("a", [(0, 4)], 100, now=0) == [Acquired(0, 4, 1)]  # still a first delivery
    assert sp.acknowledge("a", [AckBatch(0, 4, (RELEASE,))]) == ErrorCode.NONE
    again = sp.acquire("b", [(0, 4)], 100, now=0)
    assert again == [Acquired(0, 4, 2)]
    assert sp.unacquire("a", again) is False  # b's, not a's
    assert sp.unacquire("b", again) is True
    assert sp.acquired_count() == 0
    assert sp.acquire("a", [(0, 4)], 100, now=0) == [Acquired(0, 4, 2)]
