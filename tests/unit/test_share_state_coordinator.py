"""The share coordinator (`odradek.groups.share_state_coordinator`) as the shard of a coordinator
runtime over the runtime's fakes and real logs: writes land as updates and every N-th as a snapshot, a
reload replays them into the same state, leader and state epochs fence, delete writes tombstones, a
partition not led here answers NOT_COORDINATOR; and the persister calling it directly."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from odradek.cluster.znodes import BrokerInfo
from odradek.coordinator.placement import partition_for
from odradek.coordinator.runtime import CoordinatorRuntime
from odradek.groups import share_records as rec
from odradek.groups.share_partition import RecordState, StateBatch
from odradek.groups.share_persister import CoordinatorShareStatePersister
from odradek.groups.share_state import ShareKey, ShareSnapshot, ShareStateSummary
from odradek.groups.share_state_coordinator import ShareCoordinator, coordinator_key, replay
from odradek.protocol.errors import ErrorCode, KafkaError
from tests.unit.test_coordinator_runtime import SETTINGS, FakePartitions

E = ErrorCode
A, K, X = RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED


def key_in(index: int, n: int = 0) -> ShareKey:
    keys = (ShareKey("g", bytes([i]) * 16, p) for i in range(50) for p in range(4))
    return [k for k in keys if partition_for(coordinator_key(k), 2) == index][n]


def make(tmp: Path, snapshot_every: int = 3) -> tuple[ShareCoordinator, FakePartitions]:
    parts = FakePartitions(tmp)
    rt: CoordinatorRuntime[dict] = CoordinatorRuntime(SETTINGS, parts, parts, what="share state", kind="share partition")
    return ShareCoordinator(rt, snapshot_every), parts


def record_types(parts: FakePartitions, index: int) -> list[int | None]:
    out: list[int | None] = []
    for i, records, _producer in parts.appended:
        if i == index:
            for k, v in records:
                decoded = rec.decode_key(k)
                assert decoded is not None
                out.append(decoded[0] if v is not None else None)
    return out


def test_writes_reads_snapshots_and_replay(tmp_path: Path) -> None:
    async def main() -> None:
        sc, parts = make(tmp_path)
        await sc.start()
        parts.lead(0, 1)
        key = key_in(0)
        got = await sc.read(key, 4)
        assert got.error == E.NONE and got.value is not None and got.value.start_offset == -1  # never written
        assert (await sc.write(key, 0, 4, 10, (StateBatch(10, 14, A, 1),)))[0] == E.NONE
        assert (await sc.write(key, 0, 4, 12, (StateBatch(12, 12, K, 1), StateBatch(13, 13, A, 2))))[0] == E.NONE
        assert (await sc.write(key, 0, 4, -1, (StateBatch(14, 14, X, 3),)))[0] == E.NONE
        assert (await sc.write(key, 0, 4, 13, ()))[0] == E.NONE
        assert record_types(parts, 0) == [rec.SHARE_SNAPSHOT, rec.SHARE_UPDATE, rec.SHARE_UPDATE,
                                          rec.SHARE_SNAPSHOT]  # a snapshot after 3 - 1 updates
        want = (StateBatch(13, 13, A, 2), StateBatch(14, 14, X, 3))
        got = await sc.read(key, 4)
        assert got.value is not None and (got.value.start_offset, got.value.batches) == (13, want)
        parts.lead(0, 2)  # a new leader epoch of the state partition: unloaded, replayed again
        got = await sc.read(key, 4)
        assert got.error == E.NONE and got.value is not None
        assert (got.value.start_offset, got.value.batches, got.value.leader_epoch) == (13, want, 4)
        log_records = [(k, v) for _i, recs, _p in parts.appended for k, v in recs]
        assert replay(log_records)[key].value.batches == want
        summary = await sc.read_summary(key)
        assert summary.value is not None and summary.value.start_offset == 13
        await sc.shutdown()
        parts.close()

    asyncio.run(main())


def test_epochs_fence_and_delete_writes_tombstones(tmp_path: Path) -> None:
    async def main() -> None:
        sc, parts = make(tmp_path, snapshot_every=500)
        await sc.start()
        parts.lead(1, 0)
        key = key_in(1)
        assert await sc.initialize(key, 2, 50) == E.NONE
        assert await sc.initialize(key, 1, 0) == E.NONE  # an older state epoch leaves the state alone
        got = await sc.read(key, 3)
        assert got.value is not None and (got.value.start_offset, got.value.state_epoch) == (50, 2)
        got = await sc.read(key, 7)  # a new leader epoch is recorded: the old leader's writes are fenced
        assert got.error == E.NONE
        assert (await sc.write(key, 2, 3, 51, ()))[0] == E.FENCED_LEADER_EPOCH
        assert (await sc.write(key, 1, 7, 51, ()))[0] == E.FENCED_STATE_EPOCH
        assert (await sc.read(key, 6)).error == E.FENCED_LEADER_EPOCH
        assert (await sc.write(key, 2, 7, 5, (StateBatch(3, 2, A, 1),)))[0] == E.INVALID_REQUEST
        assert (await sc.write(key, 2, 7, 5, (StateBatch(3, 6, A, 1), StateBatch(6, 7, A, 1))))[0] == E.INVALID_REQUEST
        assert await sc.delete(key) == E.NONE
        assert record_types(parts, 1)[-2:] == [None, None]
        parts.lead(1, 1)
        got = await sc.read(key, 0)
        assert got.value is not None and got.value.start_offset == -1  # deleted, even after a replay
        parts.lead(1, None)
        assert (await sc.read(key, 0)).error == E.NOT_COORDINATOR
        assert (await sc.write(key, 0, 0, 0, ()))[0] == E.NOT_COORDINATOR
        await sc.shutdown()
        parts.close()

    asyncio.run(main())


def test_persister_calls_the_local_shard(tmp_path: Path) -> None:
    async def main() -> None:
        sc, parts = make(tmp_path)
        await sc.start()
        parts.lead(0, 1)
        parts.lead(1, 1)
        me = 5
        parts.leader = lambda topic, index: BrokerInfo(me, "127.0.0.1", 1)  # type: ignore[method-assign]
        persister = CoordinatorShareStatePersister(me, sc, timeout_s=0.3)
        key = key_in(1, 1)
        assert await persister.read_state(key, 2) is None
        state = ShareSnapshot(8, (StateBatch(8, 9, A, 2),), 2)
        await persister.write_state(key, state)
        assert await persister.read_state(key, 2) == ShareSnapshot(8, (StateBatch(8, 9, A, 2),), 2, 0)
        assert await persister.read_summary(key_in(0)) is None
        await persister.write_state(key, ShareSnapshot(8, (StateBatch(8, 9, A, 2), StateBatch(10, 12, X, 1)), 2))
        assert await persister.read_summary(key) == ShareStateSummary(8, 0, 2, 3)
        with pytest.raises(KafkaError) as info:
            await persister.write_state(key, ShareSnapshot(9, (), 1))
        assert info.value.code == E.FENCED_LEADER_EPOCH
        parts.lead(1, None)  # not served here any more: retried until the timeout, then raised
        with pytest.raises(KafkaError) as info:
            await persister.read_state(key, 2)
        assert info.value.code == E.NOT_COORDINATOR
        await persister.delete_state(key_in(0))
        await persister.close()
        await sc.shutdown()
        parts.close()

    asyncio.run(main())


def test_compaction_keeps_the_state(tmp_path: Path) -> None:
    """Every update carries the whole state, so the last snapshot and the last update of a key (what
    compaction keeps) replay into the state all the records gave."""
    async def main() -> None:
        sc, parts = make(tmp_path, snapshot_every=100)
        await sc.start()
        parts.lead(0, 1)
        key = key_in(0)
        assert (await sc.write(key, 0, 1, 0, (StateBatch(0, 4, A, 1),)))[0] == E.NONE  # the snapshot
        assert (await sc.write(key, 0, 1, 0, (StateBatch(0, 1, K, 1),)))[0] == E.NONE
        assert (await sc.write(key, 0, 1, 0, (StateBatch(3, 3, X, 2),)))[0] == E.NONE
        assert (await sc.read(key, 2)).error == E.NONE  # a new leader epoch: an update too
        want = sc.states[key].value
        latest: dict[bytes, tuple[bytes, bytes | None]] = {}
        for _i, recs, _p in parts.appended:
            for k, v in recs:
                latest[k] = (k, v)
        compacted = sorted(latest.values(), key=lambda kv: rec.decode_key(kv[0])[0])  # type: ignore[index]
        got = replay(compacted)[key].value
        assert (got.start_offset, got.batches, got.leader_epoch) == (want.start_offset, want.batches, 2)
        assert got.batches == (StateBatch(0, 1, K, 1), StateBatch(2, 2, A, 1), StateBatch(3, 3, X, 2),
                               StateBatch(4, 4, A, 1))
        await sc.shutdown()
        parts.close()

    asyncio.run(main())
