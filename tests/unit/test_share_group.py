"""The share group type (`odradek.groups.share_coordinator`) through `GroupCoordinatorService`: the
simple assignor, join/heartbeat/leave with epochs, session expiry giving records back, group ids refused
across types; and share sessions (`odradek.server.share_sessions`)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from odradek.groups.consumer_coordinator import Heartbeat
from odradek.groups.group import JoinRequest, MemberProfile
from odradek.groups.share_coordinator import ShareGroupSettings, ShareHeartbeat, simple_assign
from odradek.groups.share_state import ShareKey
from odradek.protocol.errors import ErrorCode as E
from odradek.protocol.errors import KafkaError
from odradek.server.share_sessions import ShareSessionCache
from tests.group_members import InMemoryGroupStore
from tests.unit.test_consumer_group import SETTINGS, FakeTopics


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


def test_join_heartbeat_fence_and_leave() -> None:
    async def main() -> None:
        svc = _svc()
        r = await svc.share_heartbeat(ShareHeartbeat("g", "a", 0, subscribed_topic_names=["t"]))
        assert (r.error, r.member_epoch) == (E.NONE, 1)
        assert r.assignment == {bytes([1]) * 16: frozenset({0, 1})}
        r2 = await svc.share_heartbeat(ShareHeartbeat("g", "b", 0, subscribed_topic_names=["t"]))
        assert r2.member_epoch == 2 and r2.assignment == {bytes([1]) * 16: frozenset({1})}
        again = await svc.share_heartbeat(ShareHeartbeat("g", "a", 1))
        assert (again.member_epoch, again.assignment) == (2, {bytes([1]) * 16: frozenset({0})})
        quiet = await svc.share_heartbeat(ShareHeartbeat("g", "a", 2))
        assert quiet.assignment is None  # unchanged: not repeated
        assert (await svc.share_heartbeat(ShareHeartbeat("g", "a", 7))).error == E.FENCED_MEMBER_EPOCH
        assert (await svc.share_heartbeat(ShareHeartbeat("g", "zz", 1))).error == E.UNKNOWN_MEMBER_ID
        assert (await svc.share_heartbeat(ShareHeartbeat("g", "", 0, subscribed_topic_names=["t"]))).error == \
            E.INVALID_REQUEST
        assert (await svc.share_heartbeat(ShareHeartbeat("g", "c", 0))).error == E.INVALID_REQUEST
        d = await svc.share_describe("g")
        assert (d.state, [m.member_id for m in d.members]) == ("Stable", ["a", "b"])
        left = await svc.share_heartbeat(ShareHeartbeat("g", "b", -1))
        assert (left.error, left.member_epoch) == (E.NONE, -1)
        assert [g for g, _p, _s, t in svc.list_groups()[1] if t == "share"] == ["g"]
        assert (await svc.share_describe("nope")).error == E.GROUP_ID_NOT_FOUND
        await svc.shutdown()

    asyncio.run(main())


def test_session_expiry_gives_records_back() -> None:
    async def main() -> None:
        svc = _svc(session_ms=50)
        await svc.share_heartbeat(ShareHeartbeat("g", "a", 0, subscribed_topic_names=["u"]))
        key = ShareKey("g", bytes([2]) * 16, 0)
        sp = await svc.share_partitions.partition(key, 0, 0)
        assert await svc.share_partitions.acquire(key, "a", [(0, 4)], 10)
        waiter = svc.share_partitions.waiter(key)
        await asyncio.wait_for(waiter, 5)  # the session expires, the member's records come back
        assert sp.acquired_by("a") == [] and sp.next_fetch_offset() == 0
        assert not svc.share.has_member("g", "a")
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


def test_share_sessions() -> None:
    cache = ShareSessionCache(max_sessions=1)
    with pytest.raises(KafkaError) as exc:
        cache.current("g", "m", 1)
    assert exc.value.code == E.SHARE_SESSION_NOT_FOUND
    s = cache.open("g", "m")
    assert cache.current("g", "m", 1) is s
    with pytest.raises(KafkaError) as exc:
        cache.current("g", "m", 1)
    assert exc.value.code == E.INVALID_SHARE_SESSION_EPOCH
    with pytest.raises(KafkaError) as exc:
        cache.open("g", "other")
    assert exc.value.code == E.SHARE_SESSION_LIMIT_REACHED
    cache.close(cache.closing("g", "m"))
    assert not cache.sessions
