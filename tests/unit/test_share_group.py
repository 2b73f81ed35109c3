"""The share group type (`odradek.groups.share_coordinator`) through `GroupCoordinatorService`: the
simple assignor, join/heartbeat/leave with epochs, session expiry giving records back, group ids refused
across types; and share sessions (`odradek.server.share_sessions`)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from odradek.groups.consumer_coordinator import Heartbeat
from odradek.groups.group import JoinRequest, MemberProfile
from odradek.groups.share_assignor import simple_assign
from odradek.groups.share_coordinator import ShareGroupSettings, ShareHeartbeat
from odradek.groups.share_state import ShareKey, ShareSnapshot
from odradek.protocol.errors import ErrorCode as E
from odradek.protocol.errors import KafkaError
from odradek.server.share_sessions import ShareSessionCache
from tests.consumer_members import SETTINGS, FakeTopics
from tests.group_members import InMemoryGroupStore


def _svc(session_ms: int = 45_000) -> Any:
    from odradek.groups.coordinator import GroupSettings
    from odradek.groups.service import GroupCoordinatorService

    return GroupCoordinatorService(GroupSettings(), SETTINGS, InMemoryGroupStore(), FakeTopics(t=2, u=1),
                                   ShareGroupSettings(session_timeout_ms=session_ms, heartbeat_interval_ms=50))


def test_simple_assign_spreads_partitions_and_shares_them_when_members_outnumber() -> None:
    t = (b"t" * 16, 4)
    got = simple_assign({"a": ["t"], "b": ["t"]}, {"t": t})
    assert got == {"a": {b"t" * 16: frozenset({0, 2})}, "b": {b"t" * 16: frozenset({1, 3})}}
    got = simple_assign({m: ["t"] for m in "abcdef"}, {"t": (b"t" * 16, 2)})
    assert sorted(sorted(a[b"t" * 16]) for a in got.values()) == [[0], [0], [0], [1], [1], [1]]
    assert simple_assign({"a": ["missing"]}, {}) == {"a": {}}
    # sticky: what a member had stays with it as far as balance allows (tests/unit/test_share_assignor.py)
    got = simple_assign({"a": ["t"], "b": ["t"]}, {"t": t}, {"b": {b"t" * 16: frozenset({0, 1, 2, 3})}})
    assert got == {"a": {b"t" * 16: frozenset({2, 3})}, "b": {b"t" * 16: frozenset({0, 1})}}


async def _initialized(svc: Any, group_id: str) -> None:
    """Wait until the group coordinator has initialized the share partitions it started initializing."""
    deadline = asyncio.get_running_loop().time() + 5
    while svc.share.groups[group_id].initializing:
        assert asyncio.get_running_loop().time() < deadline, "the share partitions were never initialized"
        await asyncio.sleep(0.01)


def test_partitions_are_assigned_once_their_state_is_initialized() -> None:
    """As Kafka (KIP-932's InitializeShareGroupState): a new group's first heartbeat is answered with no
    partitions while the coordinator initializes their share-partition state (state epoch: the group epoch,
    no start offset, so the leader takes it from share.auto.offset.reset); once initialized they are
    assignable and the next heartbeat shares them out, at a new epoch."""
    async def main() -> None:
        svc = _svc()
        t = bytes([1]) * 16
        r = await svc.share_heartbeat(ShareHeartbeat("g", "a", 0, subscribed_topic_names=["t"]))
        assert (r.error, r.member_epoch, r.assignment) == (E.NONE, 1, {})
        assert set(svc.share.groups["g"].initializing) == {(t, 0), (t, 1)}
        await _initialized(svc, "g")
        assert svc.share.groups["g"].partitions == {(t, 0), (t, 1)}
        state = await svc.share_partitions.persister.read_state(ShareKey("g", t, 0))
        assert (state.start_offset, state.state_epoch) == (-1, 1)
        r = await svc.share_heartbeat(ShareHeartbeat("g", "a", 1))
        assert (r.member_epoch, r.assignment) == (2, {t: frozenset({0, 1})})
        # a state the leader already has is kept: the partition is only recorded as initialized
        key = ShareKey("g", bytes([2]) * 16, 0)
        await svc.share_partitions.persister.write_state(key, ShareSnapshot(7, (), -1, 0))
        r = await svc.share_heartbeat(ShareHeartbeat("g", "a", 2, subscribed_topic_names=["t", "u"]))
        assert r.assignment in (None, {t: frozenset({0, 1})})  # u's partition is not assignable yet
        await _initialized(svc, "g")
        assert (await svc.share_partitions.persister.read_state(key)).start_offset == 7
        r = await svc.share_heartbeat(ShareHeartbeat("g", "a", r.member_epoch))
        assert r.assignment == {t: frozenset({0, 1}), bytes([2]) * 16: frozenset({0})}
        await svc.shutdown()

    asyncio.run(main())


def test_the_coordinator_keeps_assignments_sticky() -> None:
    async def main() -> None:
        svc = _svc()
        t = bytes([1]) * 16
        r = await svc.share_heartbeat(ShareHeartbeat("g", "c", 0, subscribed_topic_names=["t"]))
        assert r.assignment == {}  # nothing initialized yet
        await _initialized(svc, "g")
        r = await svc.share_heartbeat(ShareHeartbeat("g", "c", 1))
        assert r.assignment == {t: frozenset({0, 1})}
        r = await svc.share_heartbeat(ShareHeartbeat("g", "b", 0, subscribed_topic_names=["t"]))
        assert r.assignment == {t: frozenset({1})}  # c keeps 0 (by member id, b would have had 0)
        r = await svc.share_heartbeat(ShareHeartbeat("g", "c", 2))
        assert r.assignment == {t: frozenset({0})}
        await svc.share_heartbeat(ShareHeartbeat("g", "c", -1))
        r = await svc.share_heartbeat(ShareHeartbeat("g", "b", 3))
        assert r.assignment == {t: frozenset({0, 1})}
        await svc.shutdown()

    asyncio.run(main())


def test_join_heartbeat_fence_and_leave() -> None:
    async def main() -> None:
        svc = _svc()
        r = await svc.share_heartbeat(ShareHeartbeat("g", "a", 0, subscribed_topic_names=["t"]))
        assert (r.error, r.member_epoch) == (E.NONE, 1)
        await _initialized(svc, "g")
        r = await svc.share_heartbeat(ShareHeartbeat("g", "a", 1))
        assert (r.error, r.member_epoch) == (E.NONE, 2)
        assert r.assignment == {bytes([1]) * 16: frozenset({0, 1})}
        r2 = await svc.share_heartbeat(ShareHeartbeat("g", "b", 0, subscribed_topic_names=["t"]))
        assert r2.member_epoch == 3 and r2.assignment == {bytes([1]) * 16: frozenset({1})}
        again = await svc.share_heartbeat(ShareHeartbeat("g", "a", 2))
        assert (again.member_epoch, again.assignment) == (3, {bytes([1]) * 16: frozenset({0})})
        quiet = await svc.share_heartbeat(ShareHeartbeat("g", "a", 3))
        assert quiet.assignment is None  # unchanged: not repeated
        # the previous epoch is accepted (the answer that bumped it may have been lost), with the whole assignment
        lost = await svc.share_heartbeat(ShareHeartbeat("g", "a", 2))
        assert (lost.error, lost.member_epoch, lost.assignment) == (E.NONE, 3, {bytes([1]) * 16: frozenset({0})})
        assert (await svc.share_heartbeat(ShareHeartbeat("g", "a", 7))).error == E.FENCED_MEMBER_EPOCH
        assert (await svc.share_heartbeat(ShareHeartbeat("g", "zz", 1))).error == E.UNKNOWN_MEMBER_ID
        assert (await svc.share_heartbeat(ShareHeartbeat("g", "", 0, subscribed_topic_names=["t"]))).error == \
            E.INVALID_REQUEST
        assert (await svc.share_heartbeat(ShareHeartbeat("g", "c", 0))).error == E.INVALID_REQUEST
        d = await svc.share_describe("g")
        assert (d.state, [m.member_id for m in d.members]) == ("Stable", ["a", "b"])
        left = await svc.share_heartbeat(ShareHeartbeat("g", "b", -1))
        assert (left.error, left.member_epoch) == (E.NONE, -1)
        bumped = await svc.share_heartbeat(ShareHeartbeat("g", "a", 3))
        assert bumped.member_epoch == 4 and bumped.assignment == {bytes([1]) * 16: frozenset({0, 1})}
        older = await svc.share_heartbeat(ShareHeartbeat("g", "a", 1))  # smaller, and not the previous one
        assert older.error == E.FENCED_MEMBER_EPOCH and "smaller member epoch (1)" in (older.message or "")
        assert [g for g, _p, _s, t in svc.list_groups()[1] if t == "share"] == ["g"]
        assert (await svc.share_describe("nope")).error == E.GROUP_ID_NOT_FOUND
        await svc.shutdown()

    asyncio.run(main())


def test_session_expiry_keeps_the_records_for_the_share_session() -> None:
    """A member whose group session expires leaves the group but keeps its records, as in Kafka: they go
    back when its share session closes or their locks run out, never on a leave, which could overtake its
    final acknowledgements."""
    async def main() -> None:
        svc = _svc(session_ms=50)
        await svc.share_heartbeat(ShareHeartbeat("g", "a", 0, subscribed_topic_names=["u"]))
        key = ShareKey("g", bytes([2]) * 16, 0)
        sp = await svc.share_partitions.partition(key, 0, 0)
        assert await svc.share_partitions.acquire(key, "a", [(0, 4)], 10)
        deadline = asyncio.get_running_loop().time() + 5
        while svc.share.has_member("g", "a"):  # the session expires
            assert asyncio.get_running_loop().time() < deadline, "the member's session never expired"
            await asyncio.sleep(0.01)
        assert sp.acquired_by("a") == [0, 1, 2, 3, 4]
        assert svc.share_partitions.release("g", "a", [key]) == 5  # what closing its share session does
        assert sp.next_fetch_offset() == 0
        await svc.shutdown()

    asyncio.run(main())


def test_group_ids_are_refused_across_types() -> None:
    async def main() -> None:
        svc = _svc()
        await svc.share_heartbeat(ShareHeartbeat("s", "a", 0, subscribed_topic_names=["t"]))
        res = await svc.consumer_heartbeat(Heartbeat("s", "m", 0, rebalance_timeout_ms=1000,
                                                     subscribed_topic_names=["t"], owned={}))
        assert res.error == E.GROUP_ID_NOT_FOUND
        profile = MemberProfile("c", "h", 1000, 1000, "consumer", [("range", b"")])
        join = await svc.join(JoinRequest("s", "", None, profile))
        assert join.error == E.INCONSISTENT_GROUP_PROTOCOL
        await svc.consumer_heartbeat(Heartbeat("c", "m", 0, rebalance_timeout_ms=1000, subscribed_topic_names=["t"],
                                               owned={}))
        r = await svc.share_heartbeat(ShareHeartbeat("c", "a", 0, subscribed_topic_names=["t"]))
        assert r.error == E.GROUP_ID_NOT_FOUND
        assert await svc.commit("s", -1, "", None, {}) == E.GROUP_ID_NOT_FOUND
        await svc.shutdown()

    asyncio.run(main())


def test_offsets_describe_alter_delete_and_delete_group() -> None:
    """The offsets admin side: summaries with the done records past the start offset (KIP-1226's count),
    alter and delete only without members, DeleteGroups forgets the state; and the counters the metrics
    read."""
    from odradek.groups.share_partition import AckBatch, AckType

    async def main() -> None:
        svc = _svc()
        tid = bytes([2]) * 16
        key = ShareKey("g", tid, 0)
        assert (await _raises(svc.share_describe_offsets("g", None))) == E.GROUP_ID_NOT_FOUND
        await svc.share_heartbeat(ShareHeartbeat("g", "a", 0, subscribed_topic_names=["u"]))
        m = svc.share_partitions
        await m.partition(key, 0, 0)
        assert await m.acquire(key, "a", [(0, 5)], 10)
        # 0 accepted (start moves to 1), 2 rejected, 3 released: 1 and 4-5 still acquired
        assert await m.acknowledge(key, "a", [AckBatch(0, 0, (1,)), AckBatch(2, 3, (3, 2))]) == E.NONE
        summaries = await svc.share_describe_offsets("g", None)
        assert [(k.partition, s.start_offset, s.delivery_complete_count) for k, s in summaries.items() if s] == [(0, 1, 1)]
        assert (await svc.share_describe_offsets("g", {tid: [0, 1]}))[ShareKey("g", tid, 1)] is None
        assert dict(m.counters.acknowledged) == {AckType.ACCEPT: 1, AckType.REJECT: 1, AckType.RELEASE: 1}
        assert m.counters.archived["g"] == 1
        assert await m.acquire(key, "a", [(0, 5)], 10) and m.counters.redelivered["g"] == 1  # offset 3 again
        assert (await _raises(svc.share_alter_offsets("g", {key: 0}))) == E.NON_EMPTY_GROUP
        assert (await _raises(svc.share_delete_offsets("g", {tid}))) == E.NON_EMPTY_GROUP
        assert await svc.delete_group("g") == E.NON_EMPTY_GROUP
        await svc.share_heartbeat(ShareHeartbeat("g", "a", -1))
        await svc.share_alter_offsets("g", {key: 4})
        assert (await svc.share_describe_offsets("g", None))[key].start_offset == 4  # type: ignore[union-attr]
        assert (await m.partition(key, 0, 10)).next_fetch_offset() == 4
        await svc.share_delete_offsets("g", {tid})
        assert await svc.share_describe_offsets("g", None) == {}
        await svc.share_alter_offsets("g", {key: 2})
        assert await svc.delete_group("g") == E.NONE
        assert await m.persister.read_state(key) is None
        assert await svc.delete_group("g") == E.GROUP_ID_NOT_FOUND
        await svc.shutdown()

    asyncio.run(main())


async def _raises(awaitable: Any) -> E:
    with pytest.raises(KafkaError) as exc:
        await awaitable
    return exc.value.code


def test_share_sessions() -> None:
    cache = ShareSessionCache(max_sessions=1)
    with pytest.raises(KafkaError) as exc:
        cache.current("g", "m", 1)
    assert exc.value.code == E.SHARE_SESSION_NOT_FOUND
    s = cache.open("g", "m", 10)
    assert cache.current("g", "m", 1) is s
    with pytest.raises(KafkaError) as exc:
        cache.current("g", "m", 1)
    assert exc.value.code == E.INVALID_SHARE_SESSION_EPOCH
    with pytest.raises(KafkaError) as exc:
        cache.open("g", "other", 10)
    assert exc.value.code == E.SHARE_SESSION_LIMIT_REACHED
    cache.close(cache.closing("g", "m"))
    assert not cache.sessions and not cache.per_group


def test_one_group_cannot_fill_the_share_session_cache() -> None:
    """A group holds at most its member limit of sessions (made-up member ids of a group coordinated
    elsewhere cannot be checked here), so the cache keeps room for the others."""
    cache = ShareSessionCache(max_sessions=10)
    for i in range(3):
        cache.open("flood", f"m{i}", 3)
    with pytest.raises(KafkaError) as exc:
        cache.open("flood", "m3", 3)
    assert exc.value.code == E.SHARE_SESSION_LIMIT_REACHED
    cache.open("flood", "m0", 3)  # a member's new session replaces its old one
    assert cache.open("other", "m", 3).group_id == "other"
    cache.close(cache.closing("flood", "m1"))
    cache.open("flood", "m3", 3)
    assert cache.per_group == {"flood": 3, "other": 1}


def test_renew_only_acknowledgements_write_nothing() -> None:
    """A RENEW changes no durable state (the lock is not kept): acknowledgements that only renew are not
    written, as in Kafka; with another type beside them the state is written once, as always."""
    from odradek.groups.share_partition import AckBatch, AckType
    from odradek.groups.share_state import (
        InMemoryShareStatePersister,
        SharePartitionManager,
        SharePartitionSettings,
    )

    class Counting(InMemoryShareStatePersister):
        writes = 0

        async def write_state(self, key: ShareKey, state: Any) -> None:
            self.writes += 1
            await super().write_state(key, state)

    async def main() -> None:
        persister = Counting()
        m = SharePartitionManager(SharePartitionSettings(lock_duration_ms=60_000), persister)
        key = ShareKey("g", b"t" * 16, 0)
        sp = await m.partition(key, 0, 0)
        assert await m.acquire(key, "a", [(0, 1)], 10)
        before, deadline = persister.writes, sp.records[0].deadline
        await asyncio.sleep(0.01)
        assert await m.acknowledge(key, "a", [AckBatch(0, 1, (AckType.RENEW,))]) == E.NONE
        assert persister.writes == before and sp.records[0].deadline > deadline
        assert sp.records[0].delivery_count == 1 and m.counters.acknowledged[AckType.RENEW] == 2
        assert await m.acknowledge(key, "a", [AckBatch(0, 1, (AckType.RENEW, AckType.ACCEPT))]) == E.NONE
        assert persister.writes == before + 1
        assert await m.acknowledge(key, "b", [AckBatch(0, 0, (AckType.RENEW,))]) == E.INVALID_RECORD_STATE
        m.shutdown()

    asyncio.run(main())


def test_share_responses_name_a_moved_leader() -> None:
    """CurrentLeader and NodeEndpoints as KafkaApis fills them: a partition answered NOT_LEADER_OR_FOLLOWER
    or FENCED_LEADER_EPOCH names its leader, epoch and endpoint on the request's listener; any other
    partition keeps the schema's default (0, 0); a leader not alive is -1."""
    from types import SimpleNamespace

    from odradek.cluster.znodes import BrokerInfo, PartitionState
    from odradek.protocol.kip932 import ShareFetchResponse
    from odradek.server.handlers.share_groups import _Leaders

    tid = bytes([7]) * 16
    two = BrokerInfo(2, "b2", 9092, rack="r2", endpoints={"PLAINTEXT": ("b2", 9092), "SASL": ("b2", 9093)})
    cache = SimpleNamespace(by_id={tid: "t"}, brokers={2: two}, topics={"t": SimpleNamespace(states={
        0: PartitionState(2, 5, [2], 1, 0), 1: PartitionState(3, 6, [3], 1, 0)})})
    ctx = SimpleNamespace(broker=SimpleNamespace(metadata=cache),
                          connection=SimpleNamespace(security=SimpleNamespace(name="SASL")))
    leaders = _Leaders(ctx)  # type: ignore[arg-type]
    cls = ShareFetchResponse.ShareFetchableTopicResponse.PartitionData.LeaderIdAndEpoch

    def pair(partition: int, error: int) -> tuple[int, int]:
        got = leaders.of(cls, tid, partition, error)
        return got.leader_id, got.leader_epoch

    assert pair(0, E.NONE) == (0, 0) and pair(0, E.UNKNOWN_TOPIC_ID) == (0, 0)
    assert leaders.node_endpoints(ShareFetchResponse.NodeEndpoint) == []
    assert pair(0, E.NOT_LEADER_OR_FOLLOWER) == (2, 5)
    assert pair(1, E.FENCED_LEADER_EPOCH) == (-1, 6)  # broker 3 is not alive
    (endpoint,) = leaders.node_endpoints(ShareFetchResponse.NodeEndpoint)
    assert (endpoint.node_id, endpoint.host, endpoint.port, endpoint.rack) == (2, "b2", 9093, "r2")


def test_the_heartbeat_interval_is_the_groups_while_partitions_initialize() -> None:
    """As Kafka: a heartbeat answers the group's interval while its share partitions are being initialized
    (a member gets them at its next heartbeat), and after."""
    async def main() -> None:
        from odradek.groups.coordinator import GroupSettings
        from odradek.groups.service import GroupCoordinatorService

        svc = GroupCoordinatorService(GroupSettings(), SETTINGS, InMemoryGroupStore(), FakeTopics(t=2, u=1),
                                      ShareGroupSettings(heartbeat_interval_ms=5000))
        r = await svc.share_heartbeat(ShareHeartbeat("g", "a", 0, subscribed_topic_names=["t"]))
        assert (r.assignment, r.heartbeat_interval_ms) == ({}, 5000)
        await _initialized(svc, "g")
        r = await svc.share_heartbeat(ShareHeartbeat("g", "a", r.member_epoch))
        assert (r.assignment, r.heartbeat_interval_ms) == ({bytes([1]) * 16: frozenset({0, 1})}, 5000)
        await svc.shutdown()

    asyncio.run(main())
