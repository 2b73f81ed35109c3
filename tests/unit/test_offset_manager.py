"""The one offset manager (`odradek.groups.offset_manager`) with both group types over it, through the
group coordinator service, on an in-memory store: the same commit, transactional commit, fetch, delete
and retention code for classic and consumer (KIP-848) groups, and the cases where the two coordinators
used to differ."""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Awaitable, Callable

import pytest

from odradek.groups.consumer_coordinator import ConsumerGroupSettings, Heartbeat
from odradek.groups.consumer_group import TopicInfo
from odradek.groups.coordinator import GroupSettings
from odradek.groups.group import GroupState, JoinRequest, MemberProfile
from odradek.groups.offset_manager import OffsetManager
from odradek.groups.schemas import GroupKey, OffsetKey, OffsetValue
from odradek.groups.service import GroupCoordinatorService
from odradek.groups.store import LoadedGroup
from odradek.protocol.errors import ErrorCode, KafkaError
from tests.group_members import InMemoryGroupStore

E = ErrorCode
T = b"\x01" * 16


class Topics:
    def info(self, name: str) -> TopicInfo | None:
        return TopicInfo(T, 4) if name == "t" else None

    def names(self) -> list[str]:
        return ["t"]

    def name_of(self, topic_id: bytes) -> str | None:
        return "t" if topic_id == T else None


def run(body: Callable[[GroupCoordinatorService, InMemoryGroupStore], Awaitable[None]], **kw: int) -> None:
    async def main() -> None:
        store = InMemoryGroupStore()
        base = {"min_session_timeout_ms": 10, "initial_rebalance_delay_ms": 0,
                "retention_check_interval_ms": 3_600_000, "retention_ms": 1000}
        base.update(kw)
        svc = GroupCoordinatorService(GroupSettings(**base),  # type: ignore[arg-type]
                                      ConsumerGroupSettings(session_timeout_ms=5000, heartbeat_interval_ms=50),
                                      store, Topics())
        await svc.start()
        try:
            await asyncio.wait_for(body(svc, store), 10)
        finally:
            await svc.shutdown()

    asyncio.run(main())


async def consumer_member(svc: GroupCoordinatorService, group: str = "c", member: str = "m") -> int:
    """A KIP-848 member of `group` subscribed to t; its member epoch."""
    res = await svc.consumer_heartbeat(Heartbeat(group, member, 0, rebalance_timeout_ms=1000,
                                                 subscribed_topic_names=["t"], owned={}))
    assert res.error == E.NONE, res
    return res.member_epoch


def subscription(*topics: str) -> bytes:
    body = struct.pack(">hi", 0, len(topics))
    for t in topics:
        body += struct.pack(">h", len(t)) + t.encode()
    return body + struct.pack(">i", -1)


def join_request(group: str, member_id: str = "", v4: bool = False, protocol_type: str = "consumer") -> JoinRequest:
    profile = MemberProfile("client", "/h", 300, 1000, protocol_type, [("range", subscription("t"))])
    return JoinRequest(group, member_id, None, profile, require_known_member_id=v4)


def v(offset: int, ts: int = 0) -> OffsetValue:
    return OffsetValue(offset, "", commit_timestamp=ts)


def test_both_group_types_commit_fetch_and_delete_through_the_one_manager() -> None:
    async def body(svc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        assert isinstance(svc.offsets, OffsetManager)
        epoch = await consumer_member(svc)
        assert await svc.commit("k", -1, "", None, {("t", 0): v(1)}) == E.NONE  # a new classic group
        assert await svc.commit("c", epoch, "m", None, {("t", 0): v(2), ("u", 0): v(3)}) == E.NONE
        assert (svc.group_type("k"), svc.group_type("c")) == ("classic", "consumer")
        assert svc.offsets.type_of("k") is svc.classic and svc.offsets.type_of("c") is svc.consumer
        assert svc.classic.groups["k"].offsets == {("t", 0): v(1)}
        assert svc.consumer.groups["c"].offsets == {("t", 0): v(2), ("u", 0): v(3)}
        assert await svc.fetch_offsets("k", None) == [(("t", 0), v(1))]
        assert await svc.fetch_offsets("c", [("t", 0), ("t", 1)], "m", epoch) == [(("t", 0), v(2)), (("t", 1), None)]
        # each type's own rules, asked by the one implementation
        assert await svc.commit("k", 3, "nobody", None, {("t", 0): v(9)}) == E.UNKNOWN_MEMBER_ID
        assert await svc.commit("c", epoch + 1, "m", None, {("t", 0): v(9)}) == E.FENCED_MEMBER_EPOCH
        assert await svc.commit("c", epoch, "m", None, {("t", 0): v(9)}, api_version=8) == E.UNSUPPORTED_VERSION
        assert await svc.commit("new", 3, "m", None, {("t", 0): v(9)}) == E.ILLEGAL_GENERATION
        assert await svc.delete_offsets("c", [("t", 0), ("u", 0)]) == {
            ("t", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("u", 0): E.NONE}
        assert await svc.delete_offsets("k", [("t", 0)]) == {("t", 0): E.NONE}
        assert svc.consumer.groups["c"].offsets == {("t", 0): v(2)} and svc.classic.groups["k"].offsets == {}
        assert OffsetKey("c", "u", 0) in store.tombstones() and OffsetKey("k", "t", 0) in store.tombstones()
        with pytest.raises(KafkaError) as info:
            await svc.delete_offsets("missing", [("t", 0)])
        assert info.value.code == E.GROUP_ID_NOT_FOUND

    run(body)


def test_transactional_offsets_of_both_types_wait_for_their_marker() -> None:
    async def body(svc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        epoch = await consumer_member(svc)
        tp = ("t", 0)
        assert await svc.txn_commit("k", 5, 0, -1, "", None, {tp: v(10)}) == E.NONE
        assert await svc.txn_commit("c", 6, 0, epoch, "m", None, {tp: v(20)}) == E.NONE
        assert await svc.txn_commit("c", 7, 0, epoch - 1, "m", None, {tp: v(30)}) == E.STALE_MEMBER_EPOCH
        assert [w[2] for w in store.writes if w[2] is not None] == [(5, 0), (6, 0)]
        assert svc.unstable("k", tp) and svc.unstable("c", tp)
        assert dict(await svc.fetch_offsets("k", [tp]))[tp] is None
        svc.complete_transaction(0, 5, commit=True)
        svc.complete_transaction(0, 6, commit=False)
        assert dict(await svc.fetch_offsets("k", [tp]))[tp] == v(10) and not svc.unstable("k", tp)
        assert dict(await svc.fetch_offsets("c", [tp]))[tp] is None and not svc.unstable("c", tp)
        assert svc.offsets.pending == {}
        svc.complete_transaction(1, 5, commit=True)  # a marker elsewhere, or again: nothing pending

    run(body)


def test_pending_offsets_follow_a_group_that_changes_type() -> None:
    """Pending transactional offsets belong to the group id, not to a coordinator: an empty classic group
    that becomes a consumer group mid-transaction gets them at the commit marker (the coordinators used to
    hand them over between their two maps)."""

    async def body(svc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        tp = ("t", 1)
        assert await svc.commit("g", -1, "", None, {("t", 0): v(1)}) == E.NONE
        assert await svc.txn_commit("g", 9, 0, -1, "", None, {tp: v(40)}) == E.NONE
        await consumer_member(svc, "g")
        assert svc.group_type("g") == "consumer" and svc.unstable("g", tp)
        svc.complete_transaction(0, 9, commit=True)
        assert svc.consumer.groups["g"].offsets == {("t", 0): v(1), tp: v(40)}
        assert GroupKey("g") in store.tombstones()  # the classic group's metadata

    run(body)


def test_retention_logs_and_deletes_for_both_types(caplog: pytest.LogCaptureFixture) -> None:
    """Drift: only the classic coordinator logged the offsets it expired."""

    async def body(svc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        epoch = await consumer_member(svc, "c")
        assert await svc.commit("c", epoch, "m", None, {("t", 0): v(1), ("gone", 0): v(1)}) == E.NONE
        assert await svc.commit("k", -1, "", None, {("t", 0): v(1)}) == E.NONE
        assert await svc.commit("e", -1, "", None, {("t", 0): v(1)}) == E.NONE
        await svc.consumer_heartbeat(Heartbeat("e2", "x", 0, rebalance_timeout_ms=1000, subscribed_topic_names=["t"],
                                               owned={}))
        await svc.consumer_heartbeat(Heartbeat("e2", "x", -1))  # an empty consumer group...
        assert await svc.commit("e2", -1, "", None, {("t", 0): v(1)}) == E.NONE  # ...with an offset
        with caplog.at_level(logging.INFO, logger="odradek.groups"):
            removed = await svc.expire_offsets(now=10**13)
        assert removed == 4  # c's unsubscribed topic, k's, e's and e2's
        assert svc.consumer.groups["c"].offsets == {("t", 0): v(1)}  # still subscribed to t
        assert "k" not in svc.classic.groups and "e" not in svc.classic.groups and "e2" not in svc.consumer.groups
        logged = [r.getMessage() for r in caplog.records if "expired offsets" in r.getMessage()]
        assert sorted(logged) == sorted(f"Removed 1 expired offsets of group {g}" for g in ("c", "k", "e", "e2"))

    run(body)


def test_retention_keeps_a_classic_group_with_pending_members() -> None:
    """Drift: only the classic coordinator kept an empty group whose members were still joining."""

    async def body(svc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        assert await svc.commit("g", -1, "", None, {("t", 0): v(1)}) == E.NONE
        first = await svc.join(join_request("g", v4=True))
        assert first.error == E.MEMBER_ID_REQUIRED and svc.classic.groups["g"].pending_members
        assert await svc.expire_offsets(now=10**13) == 1
        group = svc.classic.groups["g"]
        assert group.offsets == {} and group.is_(GroupState.EMPTY)  # kept: a member is joining
        for timer in group.pending_members.values():
            if timer is not None:
                timer.cancel()
        group.pending_members.clear()
        assert await svc.expire_offsets(now=10**13) == 0
        assert "g" not in svc.classic.groups  # nothing left and nobody joining: deleted

    run(body)


@pytest.mark.parametrize("kind", ["classic", "consumer"])
def test_a_commit_does_not_reach_a_group_unloaded_during_its_write(kind: str) -> None:
    async def body(svc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        if kind == "consumer":
            epoch = await consumer_member(svc, "g")
            args: tuple[int, str] = (epoch, "m")
        else:
            assert await svc.commit("g", -1, "", None, {("t", 0): v(1)}) == E.NONE
            args = (-1, "")
        committed = svc.offsets.type_of("g").offsets_of("g")
        assert committed is not None
        before = dict(committed)
        store.during_write = lambda: svc.unloaded(0)
        assert await svc.commit("g", *args, None, {("t", 0): v(2)}) == E.NONE  # written: the client is told so
        assert svc.group_type("g") is None and committed == before  # the unloaded group was not changed

    run(body)


def test_a_failed_write_changes_nothing_for_either_type() -> None:
    async def body(svc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        epoch = await consumer_member(svc, "c")
        assert await svc.commit("k", -1, "", None, {("t", 0): v(1)}) == E.NONE
        store.fail = E.NOT_COORDINATOR
        assert await svc.commit("k", -1, "", None, {("t", 0): v(2)}) == E.NOT_COORDINATOR
        assert await svc.commit("c", epoch, "m", None, {("t", 0): v(2)}) == E.NOT_COORDINATOR
        assert await svc.txn_commit("c", 3, 0, epoch, "m", None, {("t", 0): v(2)}) == E.NOT_COORDINATOR
        assert svc.classic.groups["k"].offsets == {("t", 0): v(1)} and svc.consumer.groups["c"].offsets == {}
        assert not svc.unstable("c", ("t", 0))
        assert await svc.expire_offsets(now=10**13) == 0  # could not write the tombstones: nothing removed
        assert svc.classic.groups["k"].offsets == {("t", 0): v(1)}

    run(body)


def test_loading_restores_pending_offsets_of_every_type_and_unloading_drops_them() -> None:
    async def body(svc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        from odradek.groups.consumer_schemas import LoadedConsumerGroup

        tp = ("t", 2)
        svc.loaded(0, {
            "k": LoadedGroup(offsets={("t", 0): v(1)}, pending_txn={4: {tp: v(8)}}),
            "c": LoadedGroup(consumer=LoadedConsumerGroup(epoch=1), pending_txn={5: {tp: v(9)}}),
        })
        assert (svc.group_type("k"), svc.group_type("c")) == ("classic", "consumer")
        assert svc.unstable("k", tp) and svc.unstable("c", tp)
        svc.complete_transaction(0, 5, commit=True)
        assert svc.consumer.groups["c"].offsets == {tp: v(9)}
        svc.unloaded(0)
        assert not svc.unstable("k", tp) and svc.offsets.pending == {}
        assert svc.group_type("k") is None and svc.group_type("c") is None

    run(body)


def test_a_deleted_topics_offsets_leave_every_group_but_later_commits_stay() -> None:
    async def body(svc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        epoch = await consumer_member(svc)
        assert await svc.commit("k", -1, "", None, {("gone", 0): v(1), ("gone", 1): v(2), ("t", 0): v(3)}) == E.NONE
        assert await svc.commit("c", epoch, "m", None, {("gone", 0): v(4), ("t", 1): v(5)}) == E.NONE
        assert await svc.commit("only", -1, "", None, {("gone", 0): v(6)}) == E.NONE
        removal = svc.offsets.topic_deleted("gone")
        assert removal is not None and svc.offsets.topic_deleted("never-committed") is None
        # the topic is created again and committed to before the removal has run: that commit stays
        assert await svc.commit("again", -1, "", None, {("gone", 0): v(7)}) == E.NONE
        assert await removal == 4
        assert svc.classic.groups["k"].offsets == {("t", 0): v(3)}
        assert svc.consumer.groups["c"].offsets == {("t", 1): v(5)}
        assert svc.classic.groups["again"].offsets == {("gone", 0): v(7)}
        assert "only" not in svc.classic.groups  # left without offsets and without members: deleted
        assert {OffsetKey("k", "gone", 0), OffsetKey("k", "gone", 1), OffsetKey("c", "gone", 0),
                OffsetKey("only", "gone", 0)} <= set(store.tombstones())
        assert OffsetKey("again", "gone", 0) not in store.tombstones()

    run(body)
