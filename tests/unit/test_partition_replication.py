"""The leader side of a replica (odradek.replication.partition.Partition) over a real log: the high
watermark is the smallest log end offset in the ISR and never moves back, followers leave the ISR when they
lag more than replica.lag.time.max.ms and rejoin once caught up to the high watermark and the current leader
epoch, and acks=all needs min.insync.replicas. The class reads the monotonic clock itself, so the lag tests
use short lag windows and wait for them to pass."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from odradek.cluster.znodes import PartitionState
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.records import build_batch
from odradek.replication.partition import Partition
from odradek.storage.log import Log
from tests.waiting import wait_until

ME, F2, F3 = 1, 2, 3  # this broker (the leader) and two followers
REPLICAS = [ME, F2, F3]


def records(n: int) -> memoryview:
    return memoryview(build_batch([(b"k%d" % i, b"value") for i in range(n)]))


def leader(tmp_path: Path, isr: list[int], epoch: int = 3, min_isr: int = 1) -> Partition:
    part = Partition("orders", 0, ME, Log(tmp_path / "orders-0"))
    part.min_insync_replicas = min_isr
    part.make_leader(PartitionState(leader=ME, leader_epoch=epoch, isr=isr, controller_epoch=1), REPLICAS)
    return part


def test_high_watermark_is_the_smallest_log_end_offset_in_the_isr(tmp_path: Path) -> None:
    p = leader(tmp_path, isr=REPLICAS)
    p.append_as_leader(records(10), required_acks=-1)
    assert (p.log.log_end_offset, p.high_watermark) == (10, 0)
    p.update_follower(F2, 4)
    assert p.high_watermark == 0  # F3 has not fetched yet
    p.update_follower(F3, 6)
    assert p.high_watermark == 4
    p.update_follower(F2, 10)
    assert p.high_watermark == 6
    p.update_follower(F3, 10)
    assert p.high_watermark == 10


def test_a_follower_outside_the_isr_does_not_hold_the_high_watermark_back(tmp_path: Path) -> None:
    p = leader(tmp_path, isr=[ME, F2])
    p.append_as_leader(records(5), required_acks=1)
    p.update_follower(F2, 5)
    assert p.high_watermark == 5
    assert p.followers[F3].log_end_offset == -1


def test_high_watermark_never_moves_backwards(tmp_path: Path) -> None:
    p = leader(tmp_path, isr=REPLICAS)
    p.append_as_leader(records(10), required_acks=1)
    p.update_follower(F2, 10)
    p.update_follower(F3, 10)
    assert p.high_watermark == 10
    p.update_follower(F3, 7)  # a follower that truncated and fetches again from lower down
    assert p.high_watermark == 10
    # a replica added by a reassignment, in the ISR before it ever fetched (end offset unknown)
    p.make_leader(PartitionState(leader=ME, leader_epoch=3, isr=REPLICAS, controller_epoch=1), [*REPLICAS, 4])
    p.set_isr([*REPLICAS, 4], zk_version=1)
    assert p.followers[4].log_end_offset == -1
    assert p.high_watermark == 10


def test_shrinking_the_isr_lets_the_high_watermark_advance(tmp_path: Path) -> None:
    p = leader(tmp_path, isr=REPLICAS)
    p.append_as_leader(records(10), required_acks=-1)
    p.update_follower(F2, 10)
    p.update_follower(F3, 2)
    assert p.high_watermark == 2
    p.set_isr([ME, F2], zk_version=1)
    assert p.high_watermark == 10


def test_acks_all_waiters_resolve_when_the_high_watermark_reaches_them(tmp_path: Path) -> None:
    async def body() -> None:
        p = leader(tmp_path, isr=[ME, F2])
        info = p.append_as_leader(records(4), required_acks=-1)
        waiter = p.hw_waiter(info.last_offset + 1)
        p.update_follower(F2, 2)
        await asyncio.sleep(0)
        assert not waiter.done()
        p.update_follower(F2, 4)
        await asyncio.wait_for(waiter, 1)
        assert p.hw_waiter(3).done()  # already below the high watermark

    asyncio.run(body())


def test_one_follower_fetch_completes_every_produce_it_covers_within_the_call(tmp_path: Path) -> None:
    """Pipelined acks=all produce requests each wait on the high watermark; the follower fetch that
    moves it resolves them inside the fetch's own bookkeeping (an event, nothing polls), and only those
    whose batches every ISR member has."""
    async def body() -> None:
        p = leader(tmp_path, isr=REPLICAS)
        waiters = []
        for n in (3, 5, 2):
            info = p.append_as_leader(records(n), required_acks=-1)
            waiters.append(p.hw_waiter(info.last_offset + 1))
        p.update_follower(F2, 10)
        assert not any(w.done() for w in waiters)  # F3, in the ISR too, has none of it yet
        p.update_follower(F3, 8)
        assert [w.done() for w in waiters] == [True, True, False]
        p.update_follower(F3, 10)
        assert all(w.done() for w in waiters)

    asyncio.run(body())


def test_an_append_wakes_a_waiting_follower_fetch_at_once(tmp_path: Path) -> None:
    async def body() -> None:
        p = leader(tmp_path, isr=REPLICAS)
        parked = p.data_waiter(replica=True)  # a follower fetch at the log end, long-polling
        assert not parked.done()
        p.append_as_leader(records(1), required_acks=-1)
        assert parked.done()

    asyncio.run(body())


def test_a_high_watermark_move_wakes_consumer_fetches_but_not_follower_fetches(tmp_path: Path) -> None:
    """A follower reads to the log end: a new high watermark gives it nothing to read (Kafka's delayed
    follower fetch does not complete on it either); a consumer reads to the high watermark."""
    async def body() -> None:
        p = leader(tmp_path, isr=REPLICAS)
        p.append_as_leader(records(2), required_acks=-1)
        follower, consumer = p.data_waiter(replica=True), p.data_waiter()
        p.update_follower(F2, 2)
        p.update_follower(F3, 2)
        assert p.high_watermark == 2
        assert consumer.done() and not follower.done()
        p.append_as_leader(records(1), required_acks=-1)
        assert follower.done()

    asyncio.run(body())


def test_losing_leadership_fails_the_acks_all_waiters(tmp_path: Path) -> None:
    async def body() -> None:
        p = leader(tmp_path, isr=[ME, F2])
        p.append_as_leader(records(1), required_acks=-1)
        waiter = p.hw_waiter(1)
        assert p.make_follower(PartitionState(leader=F2, leader_epoch=4, isr=[F2], controller_epoch=1), REPLICAS)
        with pytest.raises(KafkaError) as info:
            await waiter
        assert info.value.code == ErrorCode.NOT_LEADER_OR_FOLLOWER

    asyncio.run(body())


def test_no_follower_is_dropped_within_the_lag_time(tmp_path: Path) -> None:
    p = leader(tmp_path, isr=REPLICAS)
    p.append_as_leader(records(3), required_acks=1)
    assert p.isr_to_shrink(lag_time_ms=60_000) == []  # a new term gives every ISR member a full window


def test_a_follower_that_stops_fetching_leaves_the_isr(tmp_path: Path) -> None:
    p = leader(tmp_path, isr=REPLICAS)
    p.append_as_leader(records(3), required_acks=1)

    def only_the_silent_one_lags() -> bool:
        p.update_follower(F2, p.log.log_end_offset)  # F2 keeps fetching at the end of the log
        return p.isr_to_shrink(lag_time_ms=50) == [F3]

    wait_until(only_the_silent_one_lags, 5, "F3 to lag more than 50 ms", interval=0.01)


def test_a_follower_that_fetches_but_never_catches_up_leaves_the_isr(tmp_path: Path) -> None:
    p = leader(tmp_path, isr=REPLICAS)

    def only_the_slow_one_lags() -> bool:
        p.append_as_leader(records(1), required_acks=1)  # the leader keeps growing
        p.update_follower(F2, p.log.log_end_offset)
        p.update_follower(F3, 0)  # F3 fetches, always from the start
        return p.isr_to_shrink(lag_time_ms=50) == [F3]

    wait_until(only_the_slow_one_lags, 5, "F3 to lag more than 50 ms", interval=0.01)


def test_a_follower_rejoins_once_caught_up_to_the_high_watermark(tmp_path: Path) -> None:
    p = leader(tmp_path, isr=[ME, F2])
    p.append_as_leader(records(10), required_acks=1)
    p.update_follower(F2, 10)
    p.update_follower(F3, 9)
    assert not p.can_join_isr(F3)
    p.update_follower(F3, 10)
    assert p.can_join_isr(F3)
    assert not p.can_join_isr(F2)  # already in the ISR
    assert not p.can_join_isr(7)  # not a replica


def test_a_follower_rejoins_only_from_the_current_leader_epoch(tmp_path: Path) -> None:
    p = leader(tmp_path, isr=[ME, F2], epoch=2)
    p.append_as_leader(records(10), required_acks=1)
    p.update_follower(F2, 6)
    assert p.high_watermark == 6
    # a new term starts at offset 10; the high watermark is still 6
    p.make_leader(PartitionState(leader=ME, leader_epoch=3, isr=[ME, F2], controller_epoch=2), REPLICAS)
    p.update_follower(F3, 8)
    assert not p.can_join_isr(F3)  # past the high watermark, but short of the epoch's start
    p.update_follower(F3, 10)
    assert p.can_join_isr(F3)


def test_acks_all_needs_min_insync_replicas_before_appending(tmp_path: Path) -> None:
    p = leader(tmp_path, isr=[ME], min_isr=2)
    with pytest.raises(KafkaError) as info:
        p.append_as_leader(records(1), required_acks=-1)
    assert info.value.code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert p.log.log_end_offset == 0  # refused before the append
    assert p.append_as_leader(records(1), required_acks=1).first_offset == 0  # acks=1 does not care
    p.set_isr([ME, F2], zk_version=1)
    assert p.append_as_leader(records(1), required_acks=-1).first_offset == 1


def test_only_the_leader_appends(tmp_path: Path) -> None:
    p = leader(tmp_path, isr=REPLICAS)
    p.make_follower(PartitionState(leader=F2, leader_epoch=4, isr=[F2, ME], controller_epoch=1), REPLICAS)
    with pytest.raises(KafkaError) as info:
        p.append_as_leader(records(1), required_acks=1)
    assert info.value.code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_an_epoch_led_without_appending_is_dropped_when_the_new_leader_says_it_diverged(tmp_path: Path) -> None:
    """A broker led epoch 5 without appending, then lost the leadership to a broker that went on at epoch
    6 from its own log. The follower's last fetched epoch (5) is one the leader never had: the leader
    answers a divergence that ends past the follower's log end, and the follower must forget epoch 5
    (nothing to truncate) or it is told the same forever and never counted as caught up."""
    new = leader(tmp_path / "new", isr=REPLICAS, epoch=4)
    new.append_as_leader(records(10), required_acks=1)
    new.make_leader(PartitionState(leader=ME, leader_epoch=6, isr=REPLICAS, controller_epoch=2), REPLICAS)
    old = Partition("orders", 0, F2, Log(tmp_path / "old" / "orders-0"))
    old.log.append_as_follower(memoryview(bytearray(new.log.read(0, 1 << 20, max_offset=None).records)))
    old.log.epochs.assign(5, old.log.log_end_offset)  # led epoch 5 at offset 10, appended nothing
    assert old.log.epochs.latest_epoch == 5
    div = new.diverging_epoch(5, old.log.log_end_offset)
    assert div == (4, 10)
    assert old.truncate_to_diverging(*div) == 10  # nothing of the log goes ...
    assert old.log.epochs.latest_epoch == 4  # ... but epoch 5 does
    assert new.diverging_epoch(old.log.epochs.latest_epoch, old.log.log_end_offset) is None
