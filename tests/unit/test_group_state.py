"""The group state machine, driven directly (no sockets) with an in-memory store and short timeouts."""

from __future__ import annotations

import asyncio
import inspect
import struct
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from odradek.coordinator.runtime import CoordinatorRuntime
from odradek.groups.consumer_coordinator import ConsumerGroupSettings
from odradek.groups.consumer_group import TopicInfo
from odradek.groups.coordinator import GroupSettings, group_record
from odradek.groups.group import (
    Group,
    GroupState,
    JoinRequest,
    JoinResult,
    Member,
    MemberProfile,
    parse_subscription,
)
from odradek.groups.schemas import (
    GroupKey,
    OffsetKey,
    OffsetValue,
    decode_group_value,
    offset_records,
)
from odradek.groups.service import GroupCoordinatorService
from odradek.groups.store import GroupStore, LoadedGroup
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.storage.log_validator import AppendOrigin
from tests.group_members import InMemoryGroupStore

E = ErrorCode
SESSION = 300  # ms


def settings(**kw: int) -> GroupSettings:
    base = {"min_session_timeout_ms": 10, "max_session_timeout_ms": 10_000, "initial_rebalance_delay_ms": 0,
            "retention_check_interval_ms": 3_600_000}
    base.update(kw)
    return GroupSettings(**base)  # type: ignore[arg-type]


class NoTopics:
    """The cluster's topics as a consumer group type sees them: none (classic groups never ask)."""

    def info(self, name: str) -> TopicInfo | None:
        return None

    def names(self) -> list[str]:
        return []

    def name_of(self, topic_id: bytes) -> str | None:
        return None


def service(store: GroupStore, group_settings: GroupSettings) -> GroupCoordinatorService:
    return GroupCoordinatorService(group_settings, ConsumerGroupSettings(), store, NoTopics())


def run(body: Callable[[GroupCoordinatorService, InMemoryGroupStore], Awaitable[None]], **kw: int) -> None:
    async def main() -> None:
        store = InMemoryGroupStore()
        gc = service(store, settings(**kw))
        await gc.start()
        try:
            await asyncio.wait_for(body(gc, store), 10)
        finally:
            await gc.shutdown()

    asyncio.run(main())


def subscription(*topics: str) -> bytes:
    body = struct.pack(">hi", 0, len(topics))
    for t in topics:
        body += struct.pack(">h", len(t)) + t.encode()
    return body + struct.pack(">i", -1)


def req(member_id: str = "", *, group: str = "g", protocols: list[tuple[str, bytes]] | None = None,
        instance: str | None = None, session: int = SESSION, rebalance: int = 1000, v4: bool = False,
        protocol_type: str = "consumer") -> JoinRequest:
    profile = MemberProfile("client", "/127.0.0.1", session, rebalance, protocol_type,
                            protocols if protocols is not None else [("range", subscription("t"))])
    return JoinRequest(group, member_id, instance, profile, require_known_member_id=v4)


async def join_alone(gc: GroupCoordinatorService, assignment: bytes = b"A", **kw: Any) -> JoinResult:
    res = await gc.join(req(**kw))
    assert res.error == E.NONE, res
    sync = await gc.sync("g", res.generation, res.member_id, kw.get("instance"), None, None,
                         [(res.member_id, assignment)])
    assert sync.error == E.NONE and sync.assignment == assignment
    return res


async def join_second(gc: GroupCoordinatorService, a: JoinResult, assign: bool = False) -> JoinResult:
    """A newcomer joins group g, which `a` leads alone; both rejoin into generation 2 and sync, so the group
    is stable again, the leader handing out nothing or, when `assign`, b"1" to itself and b"2" to the
    newcomer. The newcomer's join answer."""
    b_task = asyncio.create_task(gc.join(req()))
    await asyncio.sleep(0.01)
    await gc.join(req(a.member_id))
    b = await b_task
    b_sync = asyncio.create_task(gc.sync("g", 2, b.member_id, None, None, None, []))
    await gc.sync("g", 2, a.member_id, None, None, None, [(a.member_id, b"1"), (b.member_id, b"2")] if assign else [])
    await b_sync
    return b


# ---- joining ------------------------------------------------------------------------------------


def test_first_join_v4_needs_member_id_then_forms_generation_1() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        first = await gc.join(req(v4=True))
        assert first.error == E.MEMBER_ID_REQUIRED
        assert first.member_id.startswith("client-") and len(first.member_id) == len("client-") + 36
        assert gc.classic.groups["g"].pending_members
        res = await gc.join(req(first.member_id, v4=True))
        assert (res.error, res.generation, res.leader, res.protocol_name) == (E.NONE, 1, first.member_id, "range")
        assert [m[0] for m in res.members] == [first.member_id]
        assert gc.classic.groups["g"].state is GroupState.COMPLETING_REBALANCE
        sync = await gc.sync("g", 1, res.member_id, None, "consumer", "range", [(res.member_id, b"x")])
        assert sync.error == E.NONE and sync.assignment == b"x"
        assert gc.classic.groups["g"].state is GroupState.STABLE
        key, value = store.decoded()[-1]
        assert key == GroupKey("g")
        stored = decode_group_value(value)
        assert stored is not None and stored.generation == 1 and stored.members[0].assignment == b"x"

    run(body)


def test_a_member_id_made_from_the_longest_client_id_still_fits_the_records() -> None:
    """A client id may be 32,767 bytes (the request header's int16 string); the member id made from it
    (client id, "-", uuid, as Kafka makes it) keeps only its first 1,024 characters, so the group's record
    (int16-length member ids) is still written and the member is served."""
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        long = req(v4=True)
        long.profile.client_id = "c" * 32_760
        first = await gc.join(long)
        assert first.error == E.MEMBER_ID_REQUIRED and first.member_id.startswith("c" * 1024 + "-")
        assert len(first.member_id) == 1024 + 1 + 36
        long.member_id = first.member_id
        res = await gc.join(long)
        assert res.error == E.NONE
        sync = await gc.sync("g", 1, res.member_id, None, "consumer", "range", [(res.member_id, b"x")])
        assert sync.error == E.NONE
        stored = decode_group_value(store.decoded()[-1][1])
        assert stored is not None and stored.members[0].member_id == first.member_id

    run(body)


def test_second_member_triggers_rebalance_and_sync_waits_for_leader() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        a = await join_alone(gc)
        b_join = asyncio.create_task(gc.join(req()))
        await asyncio.sleep(0.01)
        group = gc.classic.groups["g"]
        assert group.state is GroupState.PREPARING_REBALANCE
        assert await gc.heartbeat("g", 1, a.member_id, None) == E.REBALANCE_IN_PROGRESS
        a2 = await gc.join(req(a.member_id))
        b = await b_join
        assert a2.generation == b.generation == 2
        assert a2.leader == a.member_id and len(a2.members) == 2 and b.members == []
        b_sync = asyncio.create_task(gc.sync("g", 2, b.member_id, None, None, None, []))
        await asyncio.sleep(0.01)
        assert not b_sync.done()
        a_sync = await gc.sync("g", 2, a.member_id, None, None, None, [(a.member_id, b"1"), (b.member_id, b"2")])
        assert a_sync.assignment == b"1"
        assert (await b_sync).assignment == b"2"
        assert group.state is GroupState.STABLE
        assert await gc.heartbeat("g", 2, b.member_id, None) == E.NONE

    run(body)


def test_follower_rejoin_with_same_metadata_in_stable_does_not_rebalance() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        a = await join_alone(gc)
        b = await join_second(gc, a, assign=True)
        again = await gc.join(req(b.member_id))
        assert (again.error, again.generation) == (E.NONE, 2)
        assert gc.classic.groups["g"].state is GroupState.STABLE

    run(body)


def test_protocol_selection_votes_with_leader_preference_on_ties() -> None:
    group = Group("g")

    def member(mid: str, names: list[str]) -> Member:
        return Member(mid, None, MemberProfile("c", "h", 1000, 1000, "consumer", [(n, b"") for n in names]))

    group.add(member("a", ["range", "roundrobin"]))
    group.add(member("b", ["roundrobin", "range"]))
    assert group.select_protocol() == "range"  # 1-1 tie: the leader (a) prefers range
    group.add(member("c", ["roundrobin", "range", "sticky"]))
    assert group.select_protocol() == "roundrobin"
    group.add(member("d", ["cooperative-sticky"]))
    assert group.select_protocol() is None
    assert not group.accepts("consumer", [("sticky", b"")])


def test_inconsistent_protocols_and_bad_session_timeouts() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        await join_alone(gc)
        res = await gc.join(req(protocols=[("roundrobin", b"")]))
        assert res.error == E.INCONSISTENT_GROUP_PROTOCOL
        res = await gc.join(req(protocol_type="connect"))
        assert res.error == E.INCONSISTENT_GROUP_PROTOCOL
        assert (await gc.join(req(group="h", protocols=[]))).error == E.INCONSISTENT_GROUP_PROTOCOL
        assert (await gc.join(req(group="h", session=5))).error == E.INVALID_SESSION_TIMEOUT
        assert (await gc.join(req(group="h", session=20_000))).error == E.INVALID_SESSION_TIMEOUT
        assert "h" not in gc.classic.groups
        assert (await gc.join(req("nobody", group="h"))).error == E.UNKNOWN_MEMBER_ID
        assert (await gc.join(req(group=""))).error == E.INVALID_GROUP_ID

    run(body)


def test_group_max_size() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        await join_alone(gc)
        assert (await gc.join(req())).error == E.GROUP_MAX_SIZE_REACHED

    run(body, max_size=1)


def test_initial_rebalance_delay_collects_members_into_one_generation() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        t1 = asyncio.create_task(gc.join(req()))
        await asyncio.sleep(0.05)
        t2 = asyncio.create_task(gc.join(req()))
        r1, r2 = await asyncio.gather(t1, t2)
        assert r1.generation == r2.generation == 1
        assert {len(r1.members), len(r2.members)} == {0, 2}

    run(body, initial_rebalance_delay_ms=150)


# ---- failures and leaving -----------------------------------------------------------------------


def test_session_timeout_removes_member_and_group_becomes_empty() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        a = await join_alone(gc)
        await asyncio.sleep(SESSION / 1000 * 2)
        group = gc.classic.groups["g"]
        assert group.state is GroupState.EMPTY and group.generation == 2 and not group.members
        await asyncio.sleep(0.01)
        stored = decode_group_value(store.decoded()[-1][1])
        assert stored is not None and stored.generation == 2 and stored.members == []
        assert await gc.heartbeat("g", 1, a.member_id, None) == E.UNKNOWN_MEMBER_ID

    run(body)


def test_heartbeats_keep_a_member_alive() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        a = await join_alone(gc)
        for _ in range(8):
            await asyncio.sleep(SESSION / 1000 / 3)
            assert await gc.heartbeat("g", 1, a.member_id, None) == E.NONE
        assert gc.classic.groups["g"].state is GroupState.STABLE

    run(body)


def test_member_that_does_not_rejoin_is_dropped_after_rebalance_timeout() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        a = await join_alone(gc, session=5000, rebalance=200)
        b = await asyncio.wait_for(gc.join(req(session=5000, rebalance=200)), 2)  # a never rejoins
        assert (b.generation, b.leader, [m[0] for m in b.members]) == (2, b.member_id, [b.member_id])
        assert a.member_id not in gc.classic.groups["g"].members

    run(body)


def test_heartbeat_errors() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        a = await join_alone(gc)
        assert await gc.heartbeat("g", 1, "stranger", None) == E.UNKNOWN_MEMBER_ID
        assert await gc.heartbeat("g", 7, a.member_id, None) == E.ILLEGAL_GENERATION
        assert await gc.heartbeat("nogroup", 1, a.member_id, None) == E.UNKNOWN_MEMBER_ID
        store.owned = False
        assert await gc.heartbeat("g", 1, a.member_id, None) == E.NOT_COORDINATOR

    run(body)


def test_sync_errors() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        a = await join_alone(gc)
        assert (await gc.sync("g", 0, a.member_id, None, None, None, [])).error == E.ILLEGAL_GENERATION
        assert (await gc.sync("g", 1, "x", None, None, None, [])).error == E.UNKNOWN_MEMBER_ID
        assert (await gc.sync("g", 1, a.member_id, None, "consumer", "roundrobin", [])).error == \
            E.INCONSISTENT_GROUP_PROTOCOL
        b_task = asyncio.create_task(gc.join(req()))
        await asyncio.sleep(0.01)
        assert (await gc.sync("g", 1, a.member_id, None, None, None, [])).error == E.REBALANCE_IN_PROGRESS
        b_task.cancel()

    run(body)


def test_leave_group_rebalances_survivors() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        a = await join_alone(gc)
        b = await join_second(gc, a)
        assert await gc.leave("g", [(a.member_id, None), ("ghost", None)]) == [E.NONE, E.UNKNOWN_MEMBER_ID]
        assert gc.classic.groups["g"].state is GroupState.PREPARING_REBALANCE
        assert await gc.heartbeat("g", 2, b.member_id, None) == E.REBALANCE_IN_PROGRESS
        b3 = await gc.join(req(b.member_id))
        assert (b3.generation, b3.leader) == (3, b.member_id)
        assert await gc.leave("g", [(b.member_id, None)]) == [E.NONE]
        assert gc.classic.groups["g"].state is GroupState.EMPTY
        assert await gc.leave("unknown-group", [("m", None)]) == [E.UNKNOWN_MEMBER_ID]

    run(body)


def test_failed_assignment_write_restarts_the_rebalance() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        res = await gc.join(req())
        store.fail = E.NOT_COORDINATOR
        sync = await gc.sync("g", res.generation, res.member_id, None, None, None, [(res.member_id, b"a")])
        assert sync.error == E.NOT_COORDINATOR
        assert gc.classic.groups["g"].state is GroupState.PREPARING_REBALANCE

    run(body)


# ---- static membership --------------------------------------------------------------------------


def test_static_member_rejoin_keeps_assignment_and_fences_old_id() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        first = await gc.join(req(instance="i-1", v4=True))  # static members skip MEMBER_ID_REQUIRED
        assert first.error == E.NONE
        await gc.sync("g", 1, first.member_id, "i-1", None, None, [(first.member_id, b"mine")])
        writes = len(store.writes)
        again = await gc.join(req(instance="i-1", v4=True))
        assert again.error == E.NONE and again.member_id != first.member_id
        assert again.generation == 1 and again.skip_assignment and again.leader == again.member_id
        group = gc.classic.groups["g"]
        assert group.state is GroupState.STABLE and group.static_members == {"i-1": again.member_id}
        assert len(store.writes) == writes + 1  # the new member id is persisted, no rebalance
        sync = await gc.sync("g", 1, again.member_id, "i-1", None, None, [])
        assert sync.assignment == b"mine"
        assert await gc.heartbeat("g", 1, first.member_id, "i-1") == E.FENCED_INSTANCE_ID
        assert (await gc.sync("g", 1, first.member_id, "i-1", None, None, [])).error == E.FENCED_INSTANCE_ID
        assert await gc.commit("g", 1, first.member_id, "i-1", {("t", 0): OffsetValue(1)}) == E.FENCED_INSTANCE_ID
        assert await gc.leave("g", [(first.member_id, "i-1")]) == [E.FENCED_INSTANCE_ID]
        assert await gc.heartbeat("g", 1, again.member_id, "i-1") == E.NONE

    run(body)


def test_static_leader_rejoin_before_v9_is_told_it_is_a_follower() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        first = await join_alone(gc, instance="i-1")
        r = req(instance="i-1")
        r.supports_skip_assignment = False
        again = await gc.join(r)
        assert again.leader == first.member_id != again.member_id
        assert again.members == [] and not again.skip_assignment

    run(body)


def test_static_member_survives_rebalance_timeout_and_leaves_by_instance_id() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        s = await join_alone(gc, instance="i-1", session=5000, rebalance=200)
        d = await gc.join(req(session=5000, rebalance=200))  # s does not rejoin within 200 ms
        assert d.generation == 2 and s.member_id in gc.classic.groups["g"].members
        assert await gc.leave("g", [("", "i-1")]) == [E.NONE]
        assert s.member_id not in gc.classic.groups["g"].members

    run(body)


# ---- offsets ------------------------------------------------------------------------------------


def test_commit_rules() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        off = {("t", 0): OffsetValue(10, "meta", 1)}
        assert await gc.commit("solo", -1, "", None, off) == E.NONE  # assign() consumer, new group
        assert await gc.commit("solo", -1, "", None, {("t", 1): OffsetValue(3)}) == E.NONE
        fetched = dict(await gc.fetch_offsets("solo", [("t", 0), ("t", 1), ("t", 2)]))
        assert fetched[("t", 0)].offset == 10 and fetched[("t", 0)].metadata == "meta"  # type: ignore[union-attr]
        assert fetched[("t", 2)] is None
        assert [tp for tp, _ in await gc.fetch_offsets("solo", None)] == [("t", 0), ("t", 1)]
        assert await gc.commit("nogroup", 3, "m", None, off) == E.ILLEGAL_GENERATION
        a = await join_alone(gc)
        assert await gc.commit("g", 1, a.member_id, None, off) == E.NONE
        assert await gc.commit("g", 0, a.member_id, None, off) == E.ILLEGAL_GENERATION
        assert await gc.commit("g", -1, "", None, off) == E.UNKNOWN_MEMBER_ID  # group has members
        assert await gc.commit("g", 1, "other", None, off) == E.UNKNOWN_MEMBER_ID
        assert await gc.commit("", -1, "", None, off) == E.NONE  # Kafka accepts the empty group id here
        store.fail = E.NOT_LEADER_OR_FOLLOWER
        assert await gc.commit("g", 1, a.member_id, None, {("t", 0): OffsetValue(99)}) == E.NOT_LEADER_OR_FOLLOWER
        assert dict(await gc.fetch_offsets("g", [("t", 0)]))[("t", 0)].offset == 10  # type: ignore[union-attr]
        keys = [k for k, _ in store.decoded() if isinstance(k, OffsetKey)]
        assert OffsetKey("solo", "t", 0) in keys and OffsetKey("g", "t", 0) in keys

    run(body)


def test_commit_during_completing_rebalance_is_refused() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        res = await gc.join(req())
        assert await gc.commit("g", 1, res.member_id, None, {("t", 0): OffsetValue(1)}) == E.REBALANCE_IN_PROGRESS

    run(body)


def test_delete_groups() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        await join_alone(gc)
        assert await gc.delete_group("g") == E.NON_EMPTY_GROUP
        assert await gc.delete_group("none") == E.GROUP_ID_NOT_FOUND
        await gc.commit("solo", -1, "", None, {("t", 0): OffsetValue(1)})
        assert await gc.delete_group("solo") == E.NONE
        assert "solo" not in gc.classic.groups
        assert store.decoded()[-2:] == [(OffsetKey("solo", "t", 0), None), (GroupKey("solo"), None)]
        assert dict(await gc.fetch_offsets("solo", [("t", 0)]))[("t", 0)] is None

    run(body)


def test_offset_delete_respects_subscriptions() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        a = await join_alone(gc)
        await gc.commit("g", 1, a.member_id, None, {("t", 0): OffsetValue(1), ("u", 0): OffsetValue(2)})
        result = await gc.delete_offsets("g", [("t", 0), ("u", 0)])
        assert result == {("t", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("u", 0): E.NONE}
        assert set(gc.classic.groups["g"].offsets) == {("t", 0)}
        with pytest.raises(KafkaError) as info:
            await gc.delete_offsets("missing", [("t", 0)])
        assert info.value.code == E.GROUP_ID_NOT_FOUND

    run(body)


def test_retention_expires_offsets_of_empty_groups_only() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        await gc.commit("solo", -1, "", None, {("t", 0): OffsetValue(1, "", commit_timestamp=0)})
        a = await join_alone(gc)
        await gc.commit("g", 1, a.member_id, None, {("t", 0): OffsetValue(5, "", commit_timestamp=0)})
        removed = await gc.expire_offsets(now=10**13)
        assert removed == 1
        assert "solo" not in gc.classic.groups  # no offsets left: the group is dropped with a tombstone
        assert gc.classic.groups["g"].offsets  # Stable group still subscribed to t keeps its offsets
        assert (GroupKey("solo"), None) in store.decoded()

    run(body, retention_ms=1000)


def test_describe_and_list() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        a = await join_alone(gc, assignment=b"asg")
        await gc.commit("solo", -1, "", None, {("t", 0): OffsetValue(1)})
        summary = await gc.describe("g")
        assert (summary.state, summary.protocol_type, summary.protocol) == ("Stable", "consumer", "range")
        assert summary.members[0].member_id == a.member_id and summary.members[0].assignment == b"asg"
        assert summary.members[0].client_host == "/127.0.0.1"
        assert (await gc.describe("nope")).state == "Dead"
        err, groups = gc.classic.list_groups()
        assert err == E.NONE and groups == [("g", "consumer", "Stable"), ("solo", "", "Empty")]
        assert gc.classic.list_groups({"empty"})[1] == [("solo", "", "Empty")]

    run(body)


def test_group_round_trips_through_its_stored_value() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        a = await join_alone(gc, assignment=b"asg", instance="i-9")
        value = decode_group_value(store.decoded()[-1][1])
        loaded = Group.from_value("g", value, {("t", 0): OffsetValue(4)})
        assert loaded.state is GroupState.STABLE and loaded.generation == 1
        assert loaded.leader_id == a.member_id and loaded.static_members == {"i-9": a.member_id}
        assert loaded.members[a.member_id].assignment == b"asg" and loaded.protocol_name == "range"
        gc.classic.groups.clear()
        gc.classic.install({"g": LoadedGroup(value, {("t", 0): OffsetValue(4)})})
        assert gc.classic.groups["g"].state is GroupState.STABLE and gc.classic.groups["g"].offsets[("t", 0)].offset == 4
        assert await gc.heartbeat("g", 1, a.member_id, "i-9") == E.NONE
        assert (await gc.sync("g", 1, a.member_id, "i-9", None, None, [])).assignment == b"asg"

    run(body)


def test_parse_subscription() -> None:
    assert parse_subscription(subscription("a", "bb")) == ["a", "bb"]
    assert parse_subscription(b"\x00") is None
    assert parse_subscription(b"\x00\x00\x7f\xff\xff\xff") is None


def test_illegal_transitions_are_refused() -> None:
    group = Group("g")
    with pytest.raises(ValueError):
        group.transition(GroupState.STABLE)
    group.transition(GroupState.PREPARING_REBALANCE)
    group.transition(GroupState.COMPLETING_REBALANCE)
    group.transition(GroupState.STABLE)
    group.transition(GroupState.DEAD)


# ---- the offset store over real logs --------------------------------------------------------------


class _Config:
    VALUES = {
        "group.min.session.timeout.ms": 10, "group.max.session.timeout.ms": 10_000,
        "group.initial.rebalance.delay.ms": 0, "group.max.size": 1000, "offset.metadata.max.bytes": 4096,
        "offsets.retention.minutes": 10080, "offsets.retention.check.interval.ms": 600_000,
        "offsets.topic.num.partitions": 2, "offsets.topic.replication.factor": 1,
        "offsets.topic.segment.bytes": 104857600, "offsets.commit.timeout.ms": 5000,
        "offsets.load.buffer.size": 100,  # tiny: loading must page through the log and grow past big batches
    }

    def get(self, name: str) -> Any:
        return self.VALUES[name]

    value = get  # BrokerConfig.value: the same lookup for a name built at run time


class _Partition:
    """The leader-side surface of replication.partition.Partition the store uses, over a real Log."""

    def __init__(self, log: Any) -> None:
        self.log = log
        self.is_leader = False
        self.leader_epoch = -1

    def append_as_leader(self, records: memoryview, required_acks: int) -> Any:
        if not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        info = self.log.append_as_leader(records, self.leader_epoch)
        self.log.high_watermark = self.log.log_end_offset
        return info

    def hw_waiter(self, offset: int) -> asyncio.Future[None]:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut


class _Broker:
    """Just enough of a broker: config, a metadata cache with listeners, and a replica manager."""

    def __init__(self, tmp: Any) -> None:
        from odradek.cluster.metadata import TopicMeta
        from odradek.storage.log import Log

        self.config = _Config()
        self.metadata = type("Meta", (), {})()
        self.metadata.topics = {"__consumer_offsets": TopicMeta("__consumer_offsets", b"x" * 16, {0: [0], 1: [0]})}
        self.metadata.brokers = {}
        self.metadata.partition_listeners = []
        self.metadata.topic_removed_listeners = []
        self.parts = {i: _Partition(Log(tmp / f"__consumer_offsets-{i}")) for i in (0, 1)}
        self.replicas = type("Replicas", (), {})()
        self.replicas.get = lambda topic, i: self.parts.get(i)
        self.replicas.leader_partition = self._leader_partition

    def _leader_partition(self, topic: str, i: int) -> Any:
        part = self.parts[i]
        if not part.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return part

    def _changed(self, i: int) -> None:
        for fn in list(self.metadata.partition_listeners):
            fn("__consumer_offsets", i, self.metadata.topics["__consumer_offsets"])

    def lead(self, i: int, epoch: int) -> None:
        self.parts[i].is_leader, self.parts[i].leader_epoch = True, epoch
        self._changed(i)

    def follow(self, i: int) -> None:
        self.parts[i].is_leader, self.parts[i].leader_epoch = False, 9
        self._changed(i)


def _runtime(broker: _Broker) -> Any:
    from odradek.coordinator.runtime import CoordinatorRuntime
    from odradek.groups.offsets import offsets_topic_settings
    from odradek.server.coordinator_partitions import BrokerPartitions

    partitions = BrokerPartitions(broker.metadata, broker.replicas, None)  # type: ignore[arg-type]
    return CoordinatorRuntime(offsets_topic_settings(broker.config), partitions, partitions, kind="group")


def test_offset_store_loads_a_partition_then_serves_and_writes_it(tmp_path: Any, monkeypatch: Any) -> None:
    from odradek.groups import offsets as store_mod
    from odradek.protocol.records import COMPRESSION_GZIP, build_batch

    broker = _Broker(tmp_path)
    index = store_mod.partition_for("g", 2)
    log = broker.parts[index].log
    seed = Group("g")
    seed.protocol_type, seed.generation = "consumer", 4
    log.append_as_leader(build_batch(group_record(seed)), 0)
    many = {("t", p): OffsetValue(100 + p, "x" * 50, 1) for p in range(8)}
    log.append_as_leader(build_batch(offset_records("g", many), compression=COMPRESSION_GZIP), 0)
    log.append_as_leader(build_batch(offset_records("g", {("t", 7): None})), 0)  # tombstone
    log.append_as_leader(build_batch(offset_records("g", {("t", 0): OffsetValue(5, "late", 2)})), 0)

    slow = asyncio.Event()
    real_read = store_mod.read_partition

    def gated_read(log_: Any, size: int, topic: str, open_txns: Any = None) -> Any:
        while not slow.is_set():
            time.sleep(0.01)
        return real_read(log_, size, topic, open_txns)

    from odradek.coordinator import loader, runtime

    monkeypatch.setattr(loader, "read_partition", gated_read)
    monkeypatch.setattr(runtime, "LOAD_WAIT_S", 0.05)

    async def main() -> None:
        gc = service(_runtime(broker), GroupSettings.from_config(broker.config))
        await gc.start()
        try:
            with pytest.raises(KafkaError) as info:
                await gc.fetch_offsets("g", None)
            assert info.value.code == E.NOT_COORDINATOR
            broker.lead(index, 1)
            with pytest.raises(KafkaError) as info:
                await gc.fetch_offsets("g", None)
            assert info.value.code == E.COORDINATOR_LOAD_IN_PROGRESS
            assert gc.list_groups()[0] == E.COORDINATOR_LOAD_IN_PROGRESS
            slow.set()
            await asyncio.sleep(0.3)
            fetched = dict(await gc.fetch_offsets("g", None))
            assert fetched[("t", 0)].offset == 5 and fetched[("t", 0)].metadata == "late"  # type: ignore[union-attr]
            assert ("t", 7) not in fetched and fetched[("t", 6)].offset == 106  # type: ignore[union-attr]
            assert gc.classic.groups["g"].generation == 4 and gc.classic.groups["g"].state is GroupState.EMPTY
            assert await gc.commit("g", -1, "", None, {("t", 1): OffsetValue(77, "", 3)}) == E.NONE
            replayed = store_mod.replay(real_read(log, 1 << 20))
            assert replayed["g"].offsets[("t", 1)].offset == 77
            broker.follow(index)
            with pytest.raises(KafkaError) as info:
                await gc.fetch_offsets("g", None)
            assert info.value.code == E.NOT_COORDINATOR
            assert "g" not in gc.classic.groups
        finally:
            await gc.shutdown()

    asyncio.run(main())


# ---- every transition Kafka defines, on the bare state machine -----------------------------------

S = GroupState
# Kafka's GroupState.validPreviousStates, written out here rather than read from the module under test
KAFKA_PREVIOUS_STATES = {
    S.PREPARING_REBALANCE: {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY},
    S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
    S.STABLE: {S.COMPLETING_REBALANCE},
    S.EMPTY: {S.PREPARING_REBALANCE},
    S.DEAD: {S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD},
}


@pytest.mark.parametrize("source", list(GroupState), ids=lambda s: s.value)
@pytest.mark.parametrize("target", list(GroupState), ids=lambda s: s.value)
def test_transition_table_is_kafkas(source: GroupState, target: GroupState) -> None:
    group = Group("g", state=source)
    group.state_timestamp = 0
    if source in KAFKA_PREVIOUS_STATES[target]:
        group.transition(target)
        assert group.state is target and group.state_timestamp > 0
    else:
        with pytest.raises(ValueError, match="illegal transition"):
            group.transition(target)
        assert group.state is source and group.state_timestamp == 0


def test_membership_bookkeeping_of_static_members_leaders_and_pending_syncs() -> None:
    def member(mid: str, instance: str | None = None) -> Member:
        return Member(mid, instance, MemberProfile("c", "h", 1000, 2000 if mid == "b" else 1000, "consumer",
                                                   [("range", b"")]))

    group = Group("g")
    group.add(member("a"))
    group.add(member("b", "i-b"))
    assert (group.leader_id, group.protocol_type, group.rebalance_timeout_ms()) == ("a", "consumer", 2000)
    assert group.is_static_fenced("x", "i-b") and not group.is_static_fenced("b", "i-b")
    assert not group.is_static_fenced("x", None) and not group.is_static_fenced("x", "i-new")
    group.pending_sync = {"a", "b"}
    group.replace("b", member("b2", "i-b"))
    assert list(group.members) == ["a", "b2"] and group.static_members == {"i-b": "b2"}
    assert group.pending_sync == {"a", "b2"}
    group.pending_members["p"] = None
    assert group.is_full(3) and not group.is_full(4) and not group.has_all_joined()
    group.remove("a")
    assert group.leader_id == "b2" and group.pending_sync == {"b2"}
    group.remove("b2")
    assert group.leader_id is None and group.static_members == {} and group.remove("b2") is None


# ---- the coordinator drives each transition ---------------------------------------------------------


def test_first_join_waits_in_preparing_rebalance_for_the_initial_delay() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        join = asyncio.create_task(gc.join(req()))
        while "g" not in gc.classic.groups:  # the join's first steps, not a time: a loaded machine once took
            await asyncio.sleep(0)          # longer than the delay over a 20 ms sleep
        assert gc.classic.groups["g"].state is S.PREPARING_REBALANCE  # Empty -> PreparingRebalance
        assert not join.done()
        res = await join
        assert res.error == E.NONE and gc.classic.groups["g"].state is S.COMPLETING_REBALANCE

    run(body, initial_rebalance_delay_ms=1000)


def test_join_during_completing_rebalance_restarts_the_rebalance() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        a = await gc.join(req())
        group = gc.classic.groups["g"]
        assert group.state is S.COMPLETING_REBALANCE
        a_sync = asyncio.create_task(gc.sync("g", 1, a.member_id, None, None, None, []))  # parks; store writes
        b_join = asyncio.create_task(gc.join(req()))  # arrives before the assignment is stored
        assert (await a_sync).error == E.REBALANCE_IN_PROGRESS
        assert group.state is S.PREPARING_REBALANCE  # CompletingRebalance -> PreparingRebalance
        a2 = await gc.join(req(a.member_id))
        b = await b_join
        assert a2.generation == b.generation == 2 and group.state is S.COMPLETING_REBALANCE

    run(body)


def test_leader_missing_its_sync_sends_the_group_back_to_preparing_rebalance() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        a, b = await two_members_completing(gc)
        b_sync = await gc.sync("g", 2, b.member_id, None, None, None, [])  # the leader never syncs
        assert b_sync.error == E.REBALANCE_IN_PROGRESS
        group = gc.classic.groups["g"]
        assert group.state is S.PREPARING_REBALANCE and a.member_id not in group.members
        b3 = await gc.join(req(b.member_id, session=5000, rebalance=200))
        assert (b3.error, b3.generation, b3.leader) == (E.NONE, 3, b.member_id)

    run(body)


def test_follower_missing_its_sync_rebalances_a_stable_group() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        a, b = await two_members_completing(gc)
        sync = await gc.sync("g", 2, a.member_id, None, None, None, [(a.member_id, b"1"), (b.member_id, b"2")])
        group = gc.classic.groups["g"]
        assert sync.error == E.NONE and group.state is S.STABLE and group.pending_sync == {b.member_id}
        while b.member_id in group.members:  # removed once the rebalance timeout passes without its sync
            await asyncio.sleep(0.01)
        assert await gc.heartbeat("g", 2, a.member_id, None) == E.REBALANCE_IN_PROGRESS
        assert group.state is S.PREPARING_REBALANCE  # Stable -> PreparingRebalance
        a3 = await gc.join(req(a.member_id, session=5000, rebalance=200))
        assert a3.generation == 3 and group.state is S.COMPLETING_REBALANCE

    run(body)


def test_leader_rejoining_a_stable_group_rebalances_it_as_does_changed_metadata() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        a = await join_alone(gc)
        group = gc.classic.groups["g"]
        assert (await gc.join(req(a.member_id))).generation == 2  # leader: Stable -> PreparingRebalance
        await gc.sync("g", 2, a.member_id, None, None, None, [(a.member_id, b"x")])
        assert group.state is S.STABLE
        changed = await gc.join(req(a.member_id, protocols=[("range", subscription("t", "u"))]))
        assert changed.generation == 3 and group.subscribed_topics() == {"t", "u"}

    run(body)


def test_unloading_a_partition_kills_its_groups_and_answers_parked_requests() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        a = await gc.join(req())
        group = gc.classic.groups["g"]
        parked = asyncio.create_task(gc.sync("g", 1, "ghost", None, None, None, []))
        b_join = asyncio.create_task(gc.join(req()))
        await asyncio.sleep(0.01)
        assert group.state is S.PREPARING_REBALANCE
        gc.unloaded(0)
        assert group.state is S.DEAD and "g" not in gc.classic.groups
        assert (await b_join).error == E.NOT_COORDINATOR
        assert (await parked).error == E.UNKNOWN_MEMBER_ID
        assert await gc.heartbeat("g", 1, a.member_id, None) == E.UNKNOWN_MEMBER_ID

    run(body)


def test_deleting_an_empty_group_kills_it() -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        a = await join_alone(gc)
        await gc.leave("g", [(a.member_id, None)])
        group = gc.classic.groups["g"]
        assert group.state is S.EMPTY
        assert await gc.delete_group("g") == E.NONE
        assert group.state is S.DEAD and "g" not in gc.classic.groups

    run(body)


async def two_members_completing(gc: GroupCoordinatorService) -> tuple[JoinResult, JoinResult]:
    """Generation 2 of a two-member group (a leads) in CompletingRebalance, 200 ms rebalance timeouts."""
    a = await join_alone(gc, session=5000, rebalance=200)
    b_join = asyncio.create_task(gc.join(req(session=5000, rebalance=200)))
    await asyncio.sleep(0.01)
    a2 = await gc.join(req(a.member_id, session=5000, rebalance=200))
    b = await b_join
    assert gc.classic.groups["g"].state is S.COMPLETING_REBALANCE and a2.leader == a.member_id
    return a2, b


# ---- the error codes of each state ----------------------------------------------------------------


async def into_state(gc: GroupCoordinatorService, state: GroupState, keep: list[Any]) -> tuple[str, int]:
    """Put group "g" in `state`; returns a member id and generation that were current just before."""
    if state is S.COMPLETING_REBALANCE:
        res = await gc.join(req())
        return res.member_id, res.generation
    a = await join_alone(gc)
    group = gc.classic.groups["g"]
    if state is S.PREPARING_REBALANCE:
        keep.append(asyncio.create_task(gc.join(req())))  # a newcomer, parked until a rejoins
        await asyncio.sleep(0.01)
    elif state is S.EMPTY:
        assert await gc.leave("g", [(a.member_id, None)]) == [E.NONE]
    elif state is S.DEAD:  # what a request that already holds the group sees once it is unloaded
        for m in group.members.values():
            m.cancel_timer()
        group.transition(S.DEAD)
    assert group.state is state
    return a.member_id, a.generation


PER_STATE = {  # operation -> error code in Empty, PreparingRebalance, CompletingRebalance, Stable, Dead
    "heartbeat": (E.UNKNOWN_MEMBER_ID, E.REBALANCE_IN_PROGRESS, E.NONE, E.NONE, E.COORDINATOR_NOT_AVAILABLE),
    "heartbeat_old_generation": (E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION, E.ILLEGAL_GENERATION,
                                 E.ILLEGAL_GENERATION, E.COORDINATOR_NOT_AVAILABLE),
    "sync": (E.UNKNOWN_MEMBER_ID, E.REBALANCE_IN_PROGRESS, E.NONE, E.NONE, E.COORDINATOR_NOT_AVAILABLE),
    "sync_old_generation": (E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION, E.ILLEGAL_GENERATION,
                            E.ILLEGAL_GENERATION, E.COORDINATOR_NOT_AVAILABLE),
    "commit": (E.UNKNOWN_MEMBER_ID, E.NONE, E.REBALANCE_IN_PROGRESS, E.NONE, E.COORDINATOR_NOT_AVAILABLE),
    # Kafka's GroupCoordinatorService checks the member, then the generation, then the state
    "commit_old_generation": (E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION, E.ILLEGAL_GENERATION,
                              E.ILLEGAL_GENERATION, E.COORDINATOR_NOT_AVAILABLE),
    "commit_unmanaged": (E.NONE, E.UNKNOWN_MEMBER_ID, E.UNKNOWN_MEMBER_ID, E.UNKNOWN_MEMBER_ID,
                         E.COORDINATOR_NOT_AVAILABLE),
    "rejoin": (E.UNKNOWN_MEMBER_ID, E.NONE, E.NONE, E.NONE, E.COORDINATOR_NOT_AVAILABLE),
    "leave": (E.UNKNOWN_MEMBER_ID, E.NONE, E.NONE, E.NONE, E.COORDINATOR_NOT_AVAILABLE),
    "delete_group": (E.NONE, E.NON_EMPTY_GROUP, E.NON_EMPTY_GROUP, E.NON_EMPTY_GROUP, E.GROUP_ID_NOT_FOUND),
    "delete_offsets": (E.NONE, E.NONE, E.NONE, E.NONE, E.GROUP_ID_NOT_FOUND),
}
STATES = [S.EMPTY, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE, S.DEAD]


async def _operate(gc: GroupCoordinatorService, op: str, member_id: str, generation: int) -> ErrorCode:
    off = {("other", 0): OffsetValue(1)}
    try:
        if op.startswith("heartbeat"):
            return await gc.heartbeat("g", generation - op.endswith("old_generation"), member_id, None)
        if op.startswith("sync"):
            gen = generation - op.endswith("old_generation")
            return (await gc.sync("g", gen, member_id, None, None, None, [(member_id, b"a")])).error
        if op.startswith("commit") and op != "commit_unmanaged":
            return await gc.commit("g", generation - op.endswith("old_generation"), member_id, None, off)
        if op == "commit_unmanaged":
            return await gc.commit("g", -1, "", None, off)
        if op == "rejoin":
            return (await gc.join(req(member_id))).error
        if op == "leave":
            (err,) = await gc.leave("g", [(member_id, None)])
            return err
        if op == "delete_group":
            return await gc.delete_group("g")
        (err,) = (await gc.delete_offsets("g", [("other", 0)])).values()
        return err
    except KafkaError as exc:  # the group-level errors of LeaveGroup and OffsetDelete
        return exc.code


@pytest.mark.parametrize("state", STATES, ids=lambda s: s.value)
@pytest.mark.parametrize("op", list(PER_STATE))
def test_error_code_of_each_request_in_each_state(op: str, state: GroupState) -> None:
    async def body(gc: GroupCoordinatorService, store: InMemoryGroupStore) -> None:
        keep: list[Any] = []
        member_id, generation = await into_state(gc, state, keep)
        assert await _operate(gc, op, member_id, generation) == PER_STATE[op][STATES.index(state)]
        for task in keep:
            task.cancel()

    run(body)


def test_fake_store_and_the_runtime_implement_the_whole_group_store_protocol() -> None:
    wanted = {name for name in vars(GroupStore) if not name.startswith("_")}
    assert {"start", "shutdown", "check", "wait_ready", "write", "coordinator_node"} <= wanted
    for impl in (InMemoryGroupStore, CoordinatorRuntime):
        for name in wanted:
            ours, theirs = inspect.signature(getattr(impl, name)), inspect.signature(getattr(GroupStore, name))
            assert list(ours.parameters) == list(theirs.parameters), (impl, name)
            assert inspect.iscoroutinefunction(getattr(impl, name)) == \
                inspect.iscoroutinefunction(getattr(GroupStore, name)), (impl, name)


def test_transactional_offsets_replay_only_where_committed(tmp_path: Any) -> None:
    """TxnOffsetCommit writes offsets as transactional records of the producer: a partition's replay applies
    them at the commit marker, drops them on abort, and keeps those of a still-open transaction pending."""
    from odradek.coordinator.loader import read_partition
    from odradek.groups.offsets import replay_partition
    from odradek.protocol.records import build_batch, build_marker
    from odradek.storage.log import Log

    log = Log(tmp_path / "__consumer_offsets-0")

    def txn(pid: int, offsets: dict[tuple[str, int], OffsetValue]) -> None:
        log.append_as_leader(build_batch(offset_records("g", offsets), producer_id=pid, producer_epoch=0,
                                         is_transactional=True), 0, origin=AppendOrigin.COORDINATOR)

    log.append_as_leader(build_batch(offset_records("g", {("t", 0): OffsetValue(1, "", 1)})), 0)
    txn(5, {("t", 0): OffsetValue(10, "", 2)})
    txn(6, {("t", 1): OffsetValue(60, "", 2)})
    txn(7, {("t", 2): OffsetValue(70, "", 2)})
    log.append_as_leader(build_marker(6, 0, commit=False, coordinator_epoch=0), 0, origin=AppendOrigin.COORDINATOR)
    log.append_as_leader(build_marker(5, 0, commit=True, coordinator_epoch=0), 0, origin=AppendOrigin.COORDINATOR)
    open_txns: dict[int, list[tuple[bytes | None, bytes | None]]] = {}
    records = read_partition(log, 1 << 20, "__consumer_offsets", open_txns)
    groups = replay_partition(records, open_txns)
    assert groups["g"].offsets == {("t", 0): OffsetValue(10, "", 2)}  # pid 5 committed over the plain commit
    assert groups["g"].pending_txn == {7: {("t", 2): OffsetValue(70, "", 2)}}  # pid 6 aborted: gone
    log.close()


def test_txn_offsets_become_committed_only_with_the_commit_marker() -> None:
    async def main() -> None:
        store = InMemoryGroupStore()
        gc = service(store, settings())
        await gc.start()
        tp = ("t", 0)
        assert await gc.txn_commit("g", 9, 1, -1, "", None, {tp: OffsetValue(40, "", 1)}) == E.NONE
        assert store.transactional == [(9, 1)]
        assert dict(await gc.fetch_offsets("g", [tp]))[tp] is None and gc.unstable("g", tp)
        gc.complete_transaction(0, 9, commit=False)
        assert dict(await gc.fetch_offsets("g", [tp]))[tp] is None and not gc.unstable("g", tp)
        assert await gc.txn_commit("g", 9, 2, -1, "", None, {tp: OffsetValue(50, "", 1)}) == E.NONE
        gc.complete_transaction(0, 9, commit=True)
        assert dict(await gc.fetch_offsets("g", [tp]))[tp].offset == 50  # type: ignore[union-attr]
        # a group member's transactional commit is fenced like OffsetCommit (KIP-447)
        assert await gc.txn_commit("g", 9, 3, 4, "no-such-member", None, {tp: OffsetValue(60, "", 1)}) == \
            E.UNKNOWN_MEMBER_ID
        await gc.shutdown()

    asyncio.run(main())
