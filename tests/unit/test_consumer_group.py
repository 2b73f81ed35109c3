"""KIP-848 consumer groups without sockets: the assignors, the reconciliation rules, the record formats,
and the coordinator over an in-memory store (simulated members that do what the heartbeat answers say)."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import pytest

from odradek.groups import consumer_schemas as cs
from odradek.groups.assignors import AssignorMember, assignor_name, configured_assignors, range_, uniform
from odradek.groups.consumer_coordinator import (
    ConsumerGroupCoordinator,
    ConsumerGroupSettings,
    Heartbeat,
    liveness_bound_ms,
)
from odradek.groups.consumer_group import (
    ConsumerMember,
    MemberState,
    TopicInfo,
    reconcile,
)
from odradek.groups.consumer_schemas import ClassicMemberValue
from odradek.groups.coordinator import GroupSettings
from odradek.groups.group import Group, JoinRequest, MemberProfile
from odradek.groups.offsets import replay
from odradek.groups.schemas import OffsetValue, group_records
from odradek.groups.service import GroupCoordinatorService
from odradek.groups.store import LoadedGroup
from odradek.linear_regex import compile_pattern
from odradek.protocol.errors import ErrorCode, KafkaError
from tests.consumer_members import SETTINGS, Client, FakeTopics, tps
from tests.group_members import InMemoryGroupStore

E = ErrorCode
T1, T2, T3 = b"\x01" * 16, b"\x02" * 16, b"\x03" * 16


def members(*ids: str, topics: frozenset[bytes] = frozenset({T1}), current: dict[str, Any] | None = None,
            ) -> list[AssignorMember]:
    return [AssignorMember(i, None, topics, (current or {}).get(i, {})) for i in ids]


# ---- assignors ----------------------------------------------------------------------------------


def check_complete(result: dict[str, Any], partitions: dict[bytes, int]) -> None:
    owned = [tp for a in result.values() for tp in tps(a)]
    assert len(owned) == len(set(owned)), "a partition assigned twice"
    assert set(owned) == {(t, p) for t, n in partitions.items() for p in range(n)}


def test_uniform_balances_and_sticks_on_join_and_leave() -> None:
    parts = {T1: 7, T2: 5}
    both = frozenset({T1, T2})
    first = uniform(members("a", "b", topics=both), parts)
    check_complete(first, parts)
    assert sorted(len(tps(a)) for a in first.values()) == [6, 6]
    second = uniform(members("a", "b", "c", topics=both, current=first), parts)
    check_complete(second, parts)
    assert sorted(len(tps(a)) for a in second.values()) == [4, 4, 4]
    # sticky: a and b keep 4 of their 6 each; only what c needs moved
    assert len(tps(second["a"]) & tps(first["a"])) == 4 and len(tps(second["b"]) & tps(first["b"])) == 4
    third = uniform(members("a", "c", topics=both, current=second), parts)
    check_complete(third, parts)
    assert tps(second["a"]) <= tps(third["a"]) and tps(second["c"]) <= tps(third["c"])


def test_uniform_with_different_subscriptions() -> None:
    parts = {T1: 4, T2: 4}
    ms = [AssignorMember("a", None, frozenset({T1})), AssignorMember("b", None, frozenset({T1, T2})),
          AssignorMember("c", None, frozenset({T2}))]
    result = uniform(ms, parts)
    check_complete(result, parts)
    assert all(t == T1 for t, _ in tps(result["a"])) and all(t == T2 for t, _ in tps(result["c"]))
    assert sorted(len(tps(a)) for a in result.values()) == [2, 3, 3]


def test_uniform_more_members_than_partitions_and_no_members() -> None:
    result = uniform(members("a", "b", "c"), {T1: 2})
    check_complete(result, {T1: 2})
    assert sorted(len(tps(a)) for a in result.values()) == [0, 1, 1]
    assert uniform([], {T1: 3}) == {}


def test_range_gives_contiguous_co_partitioned_ranges() -> None:
    both = frozenset({T1, T2})
    result = range_(members("m1", "m0", topics=both), {T1: 3, T2: 3})
    assert result["m0"] == {T1: frozenset({0, 1}), T2: frozenset({0, 1})}
    assert result["m1"] == {T1: frozenset({2}), T2: frozenset({2})}
    static = [AssignorMember("zzz", "i0", both), AssignorMember("aaa", "i1", both)]
    assert range_(static, {T1: 2, T2: 2})["zzz"] == {T1: frozenset({0}), T2: frozenset({0})}


def test_assignor_names_from_config() -> None:
    assert assignor_name("org.apache.kafka.coordinator.group.assignor.UniformAssignor") == "uniform"
    assert configured_assignors("org.apache.kafka.coordinator.group.assignor.RangeAssignor,uniform") == [
        "range", "uniform"]
    with pytest.raises(ValueError, match="sticky"):
        configured_assignors("sticky")


# ---- reconciliation -----------------------------------------------------------------------------


def free(_t: bytes, _p: int) -> int:
    return -1


def test_revocation_comes_before_assignment() -> None:
    m = ConsumerMember("a", member_epoch=1, assigned={T1: frozenset({0, 1, 2})})
    # target moves 2 away and adds 3: first only the revocation, epoch unchanged
    step = reconcile(m, {T1: frozenset({0, 1, 3})}, 2, free, owned={T1: frozenset({0, 1, 2})})
    assert (step.state, step.member_epoch) == (MemberState.UNREVOKED_PARTITIONS, 1)
    assert step.assigned == {T1: frozenset({0, 1})} and step.pending_revocation == {T1: frozenset({2})}
    # a heartbeat that still owns 2 changes nothing; one without it moves to the target epoch
    assert reconcile(step, {T1: frozenset({0, 1, 3})}, 2, free, owned={T1: frozenset({0, 1, 2})}) is step
    assert reconcile(step, {T1: frozenset({0, 1, 3})}, 2, free, owned=None) is step
    done = reconcile(step, {T1: frozenset({0, 1, 3})}, 2, free, owned={T1: frozenset({0, 1})})
    assert (done.state, done.member_epoch, done.previous_member_epoch) == (MemberState.STABLE, 2, 1)
    assert done.assigned == {T1: frozenset({0, 1, 3})} and done.pending_revocation == {}


def test_partition_held_elsewhere_is_not_given_until_released() -> None:
    held = {(T1, 1)}

    def epoch(t: bytes, p: int) -> int:
        return 5 if (t, p) in held else -1

    m = ConsumerMember("b", member_epoch=5)
    step = reconcile(m, {T1: frozenset({0, 1})}, 6, epoch, owned={})
    assert (step.state, step.member_epoch, step.assigned) == (MemberState.UNRELEASED_PARTITIONS, 6, {T1: frozenset({0})})
    held.clear()
    done = reconcile(step, {T1: frozenset({0, 1})}, 6, epoch, owned={T1: frozenset({0})})
    assert (done.state, done.assigned) == (MemberState.STABLE, {T1: frozenset({0, 1})})


def test_stable_member_at_target_epoch_is_unchanged_and_unknown_state_is_fenced() -> None:
    m = ConsumerMember("a", member_epoch=3, assigned={T1: frozenset({0})})
    assert reconcile(m, {T1: frozenset({0, 1})}, 3, free, owned=None) is m
    odd = ConsumerMember("a", member_epoch=3, state=MemberState.UNKNOWN, assigned={T1: frozenset({0})})
    with pytest.raises(KafkaError) as exc:
        reconcile(odd, {}, 4, free, owned={T1: frozenset({0})})
    assert exc.value.code == E.FENCED_MEMBER_EPOCH


def test_regex_is_matched_whole_and_re2_only_constructs() -> None:
    assert compile_pattern("orders-.*").fullmatch("orders-eu")
    assert not compile_pattern("orders").fullmatch("orders-eu")
    for bad in ("(a", "(?=x)y", r"(a)\1", "a" * 32768):  # the last: longer than its record's key may be
        with pytest.raises(KafkaError) as exc:
            compile_pattern(bad)
        assert exc.value.code == E.INVALID_REGULAR_EXPRESSION
    assert compile_pattern("a" * 32767).fullmatch("a" * 32767)

    async def main() -> None:  # a heartbeat naming one is answered with the error, the group untouched
        cg, store = make()
        res = await cg.heartbeat(Heartbeat("g", "m", 0, rebalance_timeout_ms=1000, subscribed_topic_regex="b" * 40000,
                                           owned={}))
        assert res.error == E.INVALID_REGULAR_EXPRESSION and not store.writes and "g" not in cg.groups
        await cg.shutdown()

    run(main())


# ---- record formats -----------------------------------------------------------------------------


def test_records_round_trip_and_replay_into_a_group() -> None:
    meta = cs.MemberMetadataValue("inst", None, "client", "/10.0.0.1", ["a", "b"], "c.*", 30000, "range")
    current = cs.CurrentAssignmentValue(4, 3, 1, {T1: frozenset({0, 2})}, {T2: frozenset({1})})
    assert cs.decode_member_metadata(cs.encode_member_metadata(meta)) == meta
    assert cs.decode_current_assignment(cs.encode_current_assignment(current)) == current
    assert cs.decode_target_member(cs.encode_target_member({T3: frozenset({7})})) == {T3: frozenset({7})}
    key = cs.ConsumerKey(cs.CURRENT_MEMBER_ASSIGNMENT, "g", "m1")
    raw = cs.encode_key(key)
    assert raw[:2] == b"\x00\x08" and cs.decode_key(8, raw) == key
    records = (group_records("g", None)  # the classic group this one replaced
               + cs.record(cs.ConsumerKey(cs.MEMBER_METADATA, "g", "m1"), cs.encode_member_metadata(meta))
               + cs.record(cs.ConsumerKey(cs.MEMBER_METADATA, "g", "gone"), cs.encode_member_metadata(meta))
               + cs.record(cs.ConsumerKey(cs.MEMBER_METADATA, "g", "gone"), None)
               + cs.record(key, cs.encode_current_assignment(current))
               + cs.record(cs.ConsumerKey(cs.TARGET_ASSIGNMENT_METADATA, "g"), cs.encode_epoch(4))
               + cs.record(cs.ConsumerKey(cs.GROUP_METADATA, "g"), cs.encode_epoch(5))
               + [(b"\x00\x04\x00\x01g", b"\x00\x00\x00")])  # partition metadata: skipped
    loaded = replay(records)["g"].consumer
    assert loaded is not None and (loaded.epoch, loaded.assignment_epoch) == (5, 4)
    assert list(loaded.members) == ["m1"] and loaded.current["m1"] == current


# ---- the coordinator ----------------------------------------------------------------------------


# sessions that outlast any pause of a loaded machine: a member whose 200 ms session ran out between two of
# its heartbeats (a full run on 2 cores did so once) loses its partitions while the test's client still holds
# them. The tests of expiry ask for SETTINGS' quick timers themselves.
STEADY = ConsumerGroupSettings(session_timeout_ms=30_000, heartbeat_interval_ms=50)


def make_service(topics: FakeTopics | None = None, settings: ConsumerGroupSettings = STEADY,
                 ) -> tuple[GroupCoordinatorService, InMemoryGroupStore]:
    store = InMemoryGroupStore()
    return GroupCoordinatorService(GroupSettings(), settings, store, topics or FakeTopics(t=6)), store


def make(topics: FakeTopics | None = None, settings: ConsumerGroupSettings = STEADY,
         ) -> tuple[ConsumerGroupCoordinator, InMemoryGroupStore]:
    svc, store = make_service(topics, settings)
    return svc.consumer, store


async def settle(clients: list[Client], rounds: int = 20) -> None:
    """Heartbeat round-robin; after every single heartbeat no partition may be owned twice."""
    for _ in range(rounds):
        for c in clients:
            res = await c.beat()
            assert res.error == E.NONE, res
            owned = [tp for x in clients for tp in x.partitions()]
            assert len(owned) == len(set(owned)), "a partition owned by two members"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_members_share_partitions_and_never_own_one_twice() -> None:
    async def main() -> None:
        cg, _ = make()
        a, b, c = (Client(cg, m, ["t"]) for m in ("a", "b", "c"))
        await settle([a])
        assert len(a.partitions()) == 6
        await settle([a, b])
        assert sorted(len(x.partitions()) for x in (a, b)) == [3, 3]
        await settle([a, b, c])
        assert sorted(len(x.partitions()) for x in (a, b, c)) == [2, 2, 2]
        d = await cg.describe("g")
        assert (d.state, d.group_epoch, d.assignment_epoch) == ("Stable", d.assignment_epoch, d.group_epoch)
        assert {m.member_epoch for m in d.members} == {d.assignment_epoch}
        leave = await cg.heartbeat(Heartbeat("g", "c", -1))
        assert (leave.error, leave.member_epoch) == (E.NONE, -1)
        await settle([a, b])
        assert sorted(len(x.partitions()) for x in (a, b)) == [3, 3]
        await cg.shutdown()

    run(main())


def test_session_timeout_removes_a_silent_member() -> None:
    async def main() -> None:
        cg, _ = make(settings=SETTINGS)
        a, b = Client(cg, "a", ["t"]), Client(cg, "b", ["t"])
        await settle([a, b])
        for _ in range(400):  # b goes silent; a keeps heartbeating until b's session (200 ms) has timed out
            await asyncio.sleep(0.05)
            await a.beat()
            if "b" not in cg.groups["g"].members:
                break
        assert "b" not in cg.groups["g"].members
        await settle([a])
        assert len(a.partitions()) == 6
        await cg.shutdown()

    run(main())


def test_a_member_silent_past_its_rebalance_timeout_is_removed_before_its_session_ends() -> None:
    """librdkafka stops heartbeating when its application exceeds max.poll.interval.ms (the rebalance
    timeout it sent): its partitions go to the others after that rebalance timeout,
    not after the (much longer) session timeout. A static member keeps them until its session ends."""
    async def main() -> None:
        cg, _ = make(settings=ConsumerGroupSettings(session_timeout_ms=30_000, heartbeat_interval_ms=50))
        a, b, s = Client(cg, "a", ["t"]), Client(cg, "b", ["t"]), Client(cg, "s", ["t"], instance="is")
        await settle([a, b, s])
        for _ in range(15):  # b and s go silent for 1.5 s: past their 1000 ms rebalance timeout, far from 30 s
            await asyncio.sleep(0.1)
            await a.beat()
        assert set(cg.groups["g"].members) == {"a", "s"}
        await cg.shutdown()

    run(main())


def test_liveness_bound() -> None:
    dynamic = ConsumerMember("m", rebalance_timeout_ms=7000, member_epoch=3)
    assert liveness_bound_ms(dynamic, 4000) == 7000
    dynamic.rebalance_timeout_ms = 1000  # below the interval: never between two heartbeats of a live member
    assert liveness_bound_ms(dynamic, 5000) == 7500
    assert liveness_bound_ms(ConsumerMember("s", instance_id="i", rebalance_timeout_ms=7000), 5000) is None
    classic = ConsumerMember("c", rebalance_timeout_ms=7000, classic=ClassicMemberValue(10_000, ()))
    assert liveness_bound_ms(classic, 5000) is None


def test_epoch_errors_and_request_checks() -> None:
    async def main() -> None:
        svc, _ = make_service()
        cg = svc.consumer
        a = Client(cg, "a", ["t"])
        await settle([a])
        ahead = await cg.heartbeat(Heartbeat("g", "a", a.epoch + 5, owned={}))
        assert ahead.error == E.FENCED_MEMBER_EPOCH
        unknown = await cg.heartbeat(Heartbeat("g", "nobody", 3))
        assert unknown.error == E.UNKNOWN_MEMBER_ID
        bad = await cg.heartbeat(Heartbeat("g", "x", 0, rebalance_timeout_ms=-1, subscribed_topic_names=["t"], owned={}))
        assert bad.error == E.INVALID_REQUEST
        assignor = await cg.heartbeat(Heartbeat("g", "x", 0, rebalance_timeout_ms=1, subscribed_topic_names=["t"],
                                                owned={}, server_assignor="sticky"))
        assert assignor.error == E.UNSUPPORTED_ASSIGNOR
        regex = await cg.heartbeat(Heartbeat("g", "x", 0, rebalance_timeout_ms=1, subscribed_topic_regex="(",
                                             owned={}))
        assert regex.error == E.INVALID_REGULAR_EXPRESSION
        # offsets: the member's epoch fences commits and fetches
        value = {("t", 0): OffsetValue(5)}
        assert await svc.commit("g", a.epoch, "a", None, value, api_version=9) == E.NONE
        assert await svc.commit("g", a.epoch - 1, "a", None, value, api_version=9) == E.STALE_MEMBER_EPOCH
        assert await svc.commit("g", a.epoch + 1, "a", None, value, api_version=9) == E.FENCED_MEMBER_EPOCH
        assert await svc.commit("g", a.epoch, "a", None, value, api_version=8) == E.UNSUPPORTED_VERSION
        assert await svc.commit("g", -1, "", None, value, api_version=9) == E.UNKNOWN_MEMBER_ID
        with pytest.raises(KafkaError) as exc:
            await svc.fetch_offsets("g", None, "a", a.epoch - 1)
        assert exc.value.code == E.STALE_MEMBER_EPOCH
        assert (await svc.fetch_offsets("g", [("t", 0)], None, -1))[0][1] == OffsetValue(5)
        await svc.shutdown()

    run(main())


def test_static_member_leaves_and_rejoins_without_a_rebalance() -> None:
    async def main() -> None:
        cg, _ = make()
        a, b = Client(cg, "a", ["t"], instance="ia"), Client(cg, "b", ["t"], instance="ib")
        await settle([a, b])
        epoch, mine = cg.groups["g"].group_epoch, a.owned
        taken = await cg.heartbeat(Heartbeat("g", "a2", 0, instance_id="ia", rebalance_timeout_ms=1000,
                                             subscribed_topic_names=["t"], owned={}))
        assert taken.error == E.UNRELEASED_INSTANCE_ID
        left = await cg.heartbeat(Heartbeat("g", "a", -2, instance_id="ia"))
        assert (left.error, left.member_epoch) == (E.NONE, -2)
        a2 = Client(cg, "a2", ["t"], instance="ia")
        await a2.beat()
        assert a2.owned == mine and cg.groups["g"].group_epoch == epoch and "a" not in cg.groups["g"].members
        await cg.shutdown()

    run(main())


def test_regex_subscription_follows_new_topics() -> None:
    async def main() -> None:
        topics = FakeTopics(**{"orders-eu": 2, "orders-us": 2, "other": 4})
        cg, _ = make(topics, ConsumerGroupSettings(session_timeout_ms=10_000))
        a = Client(cg, "a", regex="orders-.*")
        await a.beat()
        assert not a.partitions()  # a new regex is resolved in the background, not by the heartbeat
        await asyncio.sleep(0.01)
        await settle([a], 2)
        assert {t for t, _ in a.partitions()} == {topics.by_name["orders-eu"].topic_id,
                                                  topics.by_name["orders-us"].topic_id}
        topics.by_name["orders-ap"] = TopicInfo(b"\x09" * 16, 3)
        await asyncio.sleep(1.1)  # past the regex refresh interval
        await settle([a], 2)
        assert len(a.partitions()) == 7
        await cg.shutdown()

    run(main())


def test_literal_topics_are_assigned_before_the_regex_is_resolved() -> None:
    """librdkafka 0045's resubscribe: topics named literally come with the first heartbeat, the regex's
    topics with a later one; a regex nobody subscribes to any more is forgotten, so subscribing to it
    again waits for a new resolution."""
    async def main() -> None:
        topics = FakeTopics(**{"re-1": 4, "re-2": 4, "lit": 2})
        cg, _ = make(topics, ConsumerGroupSettings(session_timeout_ms=10_000))
        for member_id in ("a", "a2"):
            a = Client(cg, member_id, topics=["lit"], regex="re-.*")
            first = await a.beat()
            assert first.error == E.NONE and a.partitions() == {(topics.by_name["lit"].topic_id, p) for p in (0, 1)}
            await asyncio.sleep(0.01)
            await settle([a], 2)
            assert len(a.partitions()) == 10
            leave = await cg.heartbeat(Heartbeat("g", member_id, -1))
            assert leave.error == E.NONE and not cg.groups["g"].regex_topics
        await cg.shutdown()

    run(main())


def test_reload_from_records_restores_the_group() -> None:
    async def main() -> None:
        svc, store = make_service()
        cg = svc.consumer
        a, b = Client(cg, "a", ["t"]), Client(cg, "b", ["t"])
        await settle([a, b])
        assert await svc.commit("g", a.epoch, "a", None, {("t", 1): OffsetValue(42)}) == E.NONE
        before = await cg.describe("g")
        await svc.shutdown()
        svc2, _ = make_service()
        cg2 = svc2.consumer
        svc2.loaded(0, replay(store.records))
        after = await cg2.describe("g")
        assert (after.state, after.group_epoch, after.assignment_epoch) == (
            before.state, before.group_epoch, before.assignment_epoch)
        assert {m.member_id: m.assignment for m in after.members} == {m.member_id: m.assignment for m in before.members}
        assert cg2.groups["g"].offsets[("t", 1)].offset == 42
        # the members carry on with their epochs after the fail-over
        a.cg = b.cg = cg2
        await settle([a, b], 2)
        await cg2.shutdown()

    run(main())


def test_empty_groups_migrate_between_protocols() -> None:
    async def main() -> None:
        cg, store = make()
        classic = Group("g")
        classic.offsets[("t", 0)] = OffsetValue(7)
        cg.classic.groups["g"] = classic
        a = Client(cg, "a", ["t"])
        await a.beat()
        assert cg.offsets_of("g") is not None and "g" not in cg.classic.groups and cg.groups["g"].offsets[("t", 0)].offset == 7
        assert group_records("g", None)[0] in store.records  # the classic group's tombstone
        await cg.heartbeat(Heartbeat("g", "a", -1))
        join = JoinRequest("g", "", None, MemberProfile("c", "/h", 10_000, 10_000, "consumer", [("range", b"")]))
        assert await cg.classic_join(join) is None  # emptied: converted, the classic type serves the join
        assert cg.offsets_of("g") is None and cg.classic.groups["g"].offsets[("t", 0)].offset == 7
        assert "g" not in replay(store.records)  # the consumer group's records are tombstoned
        busy = Group("h")
        busy.state = busy.state.__class__.STABLE
        cg.classic.groups["h"] = busy
        res = await Client(cg, "x", ["t"]).beat("h")
        assert res.error == E.GROUP_ID_NOT_FOUND
        await cg.shutdown()

    run(main())


def test_loaded_group_split_between_coordinators() -> None:
    async def main() -> None:
        svc, _ = make_service()
        consumer = cs.LoadedConsumerGroup(epoch=1)
        svc.loaded(0, {"c": LoadedGroup(consumer=consumer), "k": LoadedGroup(offsets={("t", 0): OffsetValue(1)})})
        assert list(svc.classic.groups) == ["k"] and svc.consumer.offsets_of("c") is not None
        assert svc.group_type("c") == "consumer" and svc.group_type("k") == "classic" and svc.group_type("x") is None
        await svc.shutdown()

    run(main())


@pytest.mark.parametrize("count", [2, 3, 5])
def test_random_joins_and_leaves_keep_single_ownership(count: int) -> None:
    async def main() -> None:
        cg, _ = make(FakeTopics(t=12, u=5))
        clients = [Client(cg, f"m{i}", ["t", "u"]) for i in range(count)]
        for joined in itertools.accumulate([[c] for c in clients]):
            await settle(list(joined), 6)
        await settle(clients, 10)
        sizes = sorted(len(c.partitions()) for c in clients)
        assert sum(sizes) == 17 and sizes[-1] - sizes[0] <= 1
        await cg.shutdown()

    run(main())


@pytest.mark.parametrize("seed", range(6))
def test_a_failed_write_is_carried_by_the_next_one(seed: int) -> None:
    """Writes fail now and then while members join, rebalance and revoke; once they succeed again, the
    log holds what memory holds, member for member (a change whose write failed is written with the next
    one, even when nothing changes it again)."""
    import random

    rnd = random.Random(seed)

    async def main() -> None:
        svc, store = make_service()
        cg = svc.consumer
        clients = [Client(cg, m, ["t"]) for m in "abcd"]
        for _ in range(12):
            for c in rnd.sample(clients, len(clients)):
                store.fail = E.NOT_COORDINATOR if rnd.random() < 0.3 else None
                res = await c.beat()
                if res.error in (E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID):
                    c.epoch, c.owned = 0, {}
        store.fail = None
        for _ in range(8):  # until the group is stable, every write succeeding
            for c in clients:
                if (await c.beat()).error in (E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID):
                    c.epoch, c.owned = 0, {}
        group = cg.groups["g"]
        loaded = replay(store.records)["g"].consumer
        assert loaded is not None
        assert (loaded.epoch, loaded.assignment_epoch) == (group.group_epoch, group.assignment_epoch)
        assert loaded.current == {mid: m.assignment_value() for mid, m in group.members.items()}
        assert loaded.members == {mid: m.metadata_value() for mid, m in group.members.items()}
        assert loaded.targets == {mid: group.target_of(mid) for mid in group.members}
        await svc.shutdown()

    run(main())


def test_regex_resolutions_are_written_reloaded_and_tombstoned() -> None:
    """What a regex resolved to is written as Kafka's ConsumerGroupRegularExpression record (type 16, key
    group and regex); a coordinator that loads the group has it at once, so its members keep their
    partitions; the record is tombstoned when no member subscribes to the regex any more."""
    async def main() -> None:
        topics = FakeTopics(**{"orders-eu": 2, "orders-us": 2, "other": 4})
        settings = ConsumerGroupSettings(session_timeout_ms=10_000)
        svc, store = make_service(topics, settings)
        a = Client(svc.consumer, "a", regex="orders-.*")
        await a.beat()
        await asyncio.sleep(0.01)
        await settle([a], 2)
        assert cs.encode_key(cs.ConsumerKey(cs.REGULAR_EXPRESSION, "g", "orders-.*")) == \
            b"\x00\x10\x00\x01g\x00\x09orders-.*"
        loaded = replay(store.records)["g"].consumer
        assert loaded is not None
        assert {p: sorted(v.topics) for p, v in loaded.regexes.items()} == {"orders-.*": ["orders-eu", "orders-us"]}
        assert cs.decode_regex(cs.encode_regex(loaded.regexes["orders-.*"])) == loaded.regexes["orders-.*"]
        owned = a.partitions()
        await svc.shutdown()

        svc2, store2 = make_service(topics, settings)
        svc2.loaded(0, replay(store.records))
        assert svc2.consumer.groups["g"].regex_topics == {"orders-.*": frozenset({"orders-eu", "orders-us"})}
        a.cg = svc2.consumer
        await settle([a], 2)
        assert a.partitions() == owned and len(owned) == 4
        assert (await svc2.consumer.heartbeat(Heartbeat("g", "a", -1))).error == E.NONE
        after = replay(store.records + store2.records)["g"].consumer
        assert after is not None and after.regexes == {}
        await svc2.shutdown()

    run(main())


class ManyTopics(FakeTopics):
    """`count` one-partition topics with long names."""

    def __init__(self, count: int) -> None:
        self.by_name = {f"t{i:05d}-" + "x" * 200: TopicInfo(i.to_bytes(16, "big"), 1) for i in range(count)}
        self.by_id = {i.topic_id: n for n, i in self.by_name.items()}

    def name_of(self, topic_id: bytes) -> str | None:
        return self.by_id.get(topic_id)


def test_a_regex_over_10000_topics_resolves_to_what_the_member_may_describe_without_holding_the_loop() -> None:
    """Issue #36: resolving `.*` (and a pattern exponential for a backtracking matcher) over 10,000 topics
    never holds the event loop more than a few milliseconds, and keeps only the topics the heartbeat's
    principal may DESCRIBE."""
    async def main() -> None:
        topics = ManyTopics(10_000)
        allowed = {n for n in topics.by_name if n.startswith("t0000")}
        cg, _ = make(topics, ConsumerGroupSettings(session_timeout_ms=30_000))
        gaps: list[float] = []
        stop = False

        async def ticker() -> None:  # CPU time of this thread between turns: preemption does not count
            last = time.thread_time()
            while not stop:
                await asyncio.sleep(0)
                gaps.append(time.thread_time() - last)
                last = time.thread_time()

        tick = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        for regex in (".*", "(.|.|.|.|.)*!"):
            res = await cg.heartbeat(Heartbeat(f"g-{len(regex)}", "m", 0, rebalance_timeout_ms=1000,
                                               subscribed_topic_regex=regex, owned={},
                                               describable=lambda names: frozenset(names & allowed)))
            assert res.error == E.NONE, res
        for _ in range(200):
            await asyncio.sleep(0.01)
            if all(p in g.regex_topics for g in cg.groups.values() for p in g.regexes_to_refresh()):
                break
        stop = True
        await tick
        assert cg.groups["g-2"].regex_topics == {".*": frozenset(allowed)}
        assert cg.groups["g-13"].regex_topics == {"(.|.|.|.|.)*!": frozenset()}
        assert max(gaps) < 0.01, sorted(gaps)[-3:]  # unsliced, one group's resolution takes ~0.015 s of CPU
        await cg.shutdown()

    run(main())
