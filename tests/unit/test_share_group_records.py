"""Share groups in `__consumer_offsets` (`odradek.groups.share_schemas`): Kafka's record layouts round
trip, a partition's records (tombstones included) replay into the groups they leave, and a share group
written by one coordinator is served by the next (restart, fail-over) with its members, epochs,
subscriptions and assignments."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.groups import consumer_schemas as cs
from odradek.groups import share_schemas as ss
from odradek.groups.offsets import replay
from odradek.groups.share_coordinator import ShareGroupSettings, ShareHeartbeat
from odradek.groups.share_state import ShareKey
from odradek.protocol.errors import ErrorCode as E
from tests.consumer_members import SETTINGS, FakeTopics
from tests.group_members import InMemoryGroupStore

T1, T2 = bytes([1]) * 16, bytes([2]) * 16


def _key(record_type: int, member: str | None = None) -> cs.ConsumerKey:
    return cs.ConsumerKey(record_type, "g", member)


def test_values_round_trip_in_kafkas_layouts() -> None:
    meta = ss.ShareMemberValue(None, "client", "/10.0.0.1", ["a", "b"])
    assert ss.decode_member_metadata(ss.encode_member_metadata(meta)) == meta
    # version 0; RackId null; ClientId "c"; ClientHost "h"; SubscribedTopicNames ["t"]; no tagged fields
    assert ss.encode_member_metadata(ss.ShareMemberValue(None, "c", "h", ["t"])) == \
        b"\x00\x00" + b"\x00" + b"\x02c" + b"\x02h" + b"\x02\x02t" + b"\x00"
    # Epoch int32, MetadataHash int64 (Kafka 4.1); a 4.0 value (Epoch alone) reads too
    assert ss.encode_group_metadata(5) == b"\x00\x00" + b"\x00\x00\x00\x05" + b"\x00" * 8 + b"\x00"
    assert ss.decode_group_metadata(ss.encode_group_metadata(7, 1234)) == 7
    assert ss.decode_group_metadata(b"\x00\x00\x00\x00\x00\x09\x00") == 9
    current = ss.ShareCurrentValue(4, 3, ss.STABLE, {T1: frozenset({0, 2})})
    assert ss.decode_current_assignment(ss.encode_current_assignment(current)) == current
    state = ss.StatePartitionValue({T2: ("u", frozenset({1}))}, {T1: ("t", frozenset({0, 1}))}, {T2: "u"})
    assert ss.decode_state_partition_metadata(ss.encode_state_partition_metadata(state)) == state
    assert ss.encode_state_partition_metadata(ss.StatePartitionValue()) == b"\x00\x00\x01\x01\x01\x00"
    for record_type, member in ((10, "m"), (11, None), (12, None), (13, "m"), (14, "m"), (15, None)):
        raw = cs.encode_key(_key(record_type, member))
        assert raw[:2] == bytes([0, record_type]) and cs.decode_key(record_type, raw) == _key(record_type, member)
    assert cs.encode_key(_key(10, "m")) == b"\x00\x0a\x00\x01g\x00\x01m"


def test_replay_folds_records_and_tombstones_into_groups() -> None:
    meta = ss.ShareMemberValue("r1", "c", "/h", ["t"])
    cur = ss.ShareCurrentValue(3, 2, ss.STABLE, {T1: frozenset({0})})
    state = ss.StatePartitionValue(initialized={T1: ("t", frozenset({0, 1}))})
    records = (cs.record(_key(ss.MEMBER_METADATA, "a"), ss.encode_member_metadata(meta))
               + cs.record(_key(ss.MEMBER_METADATA, "gone"), ss.encode_member_metadata(meta))
               + cs.record(_key(ss.TARGET_ASSIGNMENT_MEMBER, "a"), cs.encode_target_member({T1: frozenset({0, 1})}))
               + cs.record(_key(ss.CURRENT_MEMBER_ASSIGNMENT, "a"), ss.encode_current_assignment(cur))
               + cs.record(_key(ss.CURRENT_MEMBER_ASSIGNMENT, "gone"), ss.encode_current_assignment(cur))
               + cs.record(_key(ss.TARGET_ASSIGNMENT_METADATA), cs.encode_epoch(3))
               + cs.record(_key(ss.STATE_PARTITION_METADATA), ss.encode_state_partition_metadata(state))
               + cs.record(_key(ss.GROUP_METADATA), ss.encode_group_metadata(3))
               + [(b"\x00\x09\x00\x01g", b"\x00\x00\x00")]  # Kafka 4.0's partition metadata: skipped
               + cs.record(_key(ss.CURRENT_MEMBER_ASSIGNMENT, "gone"), None)
               + cs.record(_key(ss.MEMBER_METADATA, "gone"), None)
               # another group, created and then deleted
               + cs.record(cs.ConsumerKey(ss.MEMBER_METADATA, "h", "x"), ss.encode_member_metadata(meta))
               + cs.record(cs.ConsumerKey(ss.GROUP_METADATA, "h"), ss.encode_group_metadata(1))
               + cs.record(cs.ConsumerKey(ss.MEMBER_METADATA, "h", "x"), None)
               + cs.record(cs.ConsumerKey(ss.GROUP_METADATA, "h"), None))
    groups = replay(records)
    assert list(groups) == ["g"]
    g = groups["g"].share
    assert g is not None and (g.epoch, g.assignment_epoch) == (3, 3)
    assert g.members == {"a": meta} and g.current == {"a": cur} and g.targets == {"a": {T1: frozenset({0, 1})}}
    assert g.partitions() == {(T1, 0), (T1, 1)}
    assert groups["g"].metadata is None and groups["g"].consumer is None


# ---- the coordinator writes and reloads ---------------------------------------------------------


def _svc(store: InMemoryGroupStore, session_ms: int = 45_000) -> Any:
    from odradek.groups.coordinator import GroupSettings
    from odradek.groups.service import GroupCoordinatorService

    return GroupCoordinatorService(GroupSettings(), SETTINGS, store, FakeTopics(t=2, u=1),
                                   ShareGroupSettings(session_timeout_ms=session_ms, heartbeat_interval_ms=50))


async def _initialized(svc: Any, group_id: str) -> None:
    """Wait until the group coordinator has initialized the share partitions it started initializing."""
    deadline = asyncio.get_running_loop().time() + 5
    while svc.share.groups[group_id].initializing:
        assert asyncio.get_running_loop().time() < deadline, "the share partitions were never initialized"
        await asyncio.sleep(0.01)


def _types(records: list[tuple[bytes, bytes | None]]) -> list[tuple[int, bool]]:
    return [(int.from_bytes(k[:2], "big"), v is not None) for k, v in records]


def test_membership_is_written_before_the_answer_and_reloads() -> None:
    async def main() -> None:
        store = InMemoryGroupStore()
        svc = _svc(store)
        a = await svc.share_heartbeat(ShareHeartbeat("g", "a", 0, subscribed_topic_names=["t"], rack_id="r1",
                                                     client_id="ca", client_host="/1.2.3.4"))
        # a join: the member's records, then the group's (assignment epoch, share partitions, epoch)
        assert _types(store.writes[-1][1]) == [(10, True), (13, True), (14, True), (12, True), (15, True), (11, True)]
        b = await svc.share_heartbeat(ShareHeartbeat("g", "b", 0, subscribed_topic_names=["t", "u"]))
        await _initialized(svc, "g")  # the partitions are assignable once their share state is initialized
        a = await svc.share_heartbeat(ShareHeartbeat("g", "a", a.member_epoch))  # takes the new assignment
        b = await svc.share_heartbeat(ShareHeartbeat("g", "b", b.member_epoch))
        assert a.member_epoch == b.member_epoch
        n = len(store.writes)
        quiet = await svc.share_heartbeat(ShareHeartbeat("g", "b", b.member_epoch))
        assert quiet.error == E.NONE and len(store.writes) == n  # nothing changed: nothing written
        before = await svc.share_describe("g")
        partitions = set(svc.share.groups["g"].partitions)
        await svc.shutdown()

        svc2 = _svc(store)
        svc2.loaded(0, replay(store.records))
        after = await svc2.share_describe("g")
        assert after.error == E.NONE and (after.group_epoch, after.assignment_epoch) == (
            before.group_epoch, before.assignment_epoch)
        assert [(m.member_id, m.member_epoch, m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names,
                 m.assignment) for m in after.members] == \
            [(m.member_id, m.member_epoch, m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names,
              m.assignment) for m in before.members]
        assert svc2.group_type("g") == "share"
        assert svc2.share.groups["g"].partitions == partitions == {(T1, 0), (T1, 1), (T2, 0)}
        # a member carrying on with its epoch is not fenced and keeps its assignment; nothing is rewritten
        n = len(store.writes)
        again = await svc2.share_heartbeat(ShareHeartbeat("g", "a", a.member_epoch))
        assert (again.error, again.member_epoch) == (E.NONE, before.members[0].member_epoch)
        assert again.assignment is None  # as told before the fail-over
        assert len(store.writes) == n
        # leaving: the member's records tombstoned (current, target, metadata), then the group's epochs
        await svc2.share_heartbeat(ShareHeartbeat("g", "b", b.member_epoch, subscribed_topic_names=None))
        await svc2.share_heartbeat(ShareHeartbeat("g", "b", -1))
        assert _types(store.writes[-1][1])[:3] == [(14, False), (13, False), (10, False)]
        assert set(replay(store.records)["g"].share.members) == {"a"}  # type: ignore[union-attr]
        await svc2.shutdown()

    asyncio.run(main())


def test_session_expiry_alter_offsets_and_delete_group_are_written() -> None:
    async def main() -> None:
        store = InMemoryGroupStore()
        svc = _svc(store, session_ms=50)
        await svc.share_heartbeat(ShareHeartbeat("g", "a", 0, subscribed_topic_names=["u"]))
        for _ in range(200):  # the session expires and its removal is written
            loaded = replay(store.records)["g"].share
            if loaded is not None and not loaded.members:
                break
            await asyncio.sleep(0.01)
        assert loaded is not None and not loaded.members and loaded.epoch == svc.share.groups["g"].group_epoch
        # AlterShareGroupOffsets creates an empty group: written, with its share partitions
        key = ShareKey("h", T2, 0)
        await svc.share_alter_offsets("h", {key: 3})
        h = replay(store.records)["h"].share
        assert h is not None and h.epoch == 0 and h.partitions() == {(T2, 0)} and not h.members
        # DeleteGroups tombstones every record of the group
        assert await svc.delete_group("h") == E.NONE
        assert "h" not in replay(store.records)
        assert _types(store.writes[-1][1]) == [(12, False), (15, False), (11, False)]
        await svc.shutdown()
        svc2 = _svc(store)
        svc2.loaded(0, replay(store.records))
        assert (await svc2.share_describe("h")).error == E.GROUP_ID_NOT_FOUND
        assert (await svc2.share_describe("g")).state == "Empty"
        # a reloaded share group is still refused to the other types
        from odradek.groups.consumer_coordinator import Heartbeat

        res = await svc2.consumer_heartbeat(Heartbeat("g", "m", 0, rebalance_timeout_ms=1000,
                                                      subscribed_topic_names=["t"], owned={}))
        assert res.error == E.GROUP_ID_NOT_FOUND
        await svc2.shutdown()

    asyncio.run(main())


def test_a_failed_write_is_answered_and_carried_by_the_next() -> None:
    async def main() -> None:
        store = InMemoryGroupStore()
        svc = _svc(store)
        store.fail = E.NOT_COORDINATOR
        r = await svc.share_heartbeat(ShareHeartbeat("g", "a", 0, subscribed_topic_names=["t"]))
        assert r.error == E.NOT_COORDINATOR and not store.writes
        store.fail = None
        r = await svc.share_heartbeat(ShareHeartbeat("g", "a", 0, subscribed_topic_names=["t"]))
        assert r.error == E.NONE and r.assignment == {}
        await _initialized(svc, "g")
        r = await svc.share_heartbeat(ShareHeartbeat("g", "a", r.member_epoch))
        assert r.error == E.NONE and r.assignment == {T1: frozenset({0, 1})}
        assert set(replay(store.records)["g"].share.members) == {"a"}  # type: ignore[union-attr]
        await svc.shutdown()

    asyncio.run(main())


# ops: (kind, member index, flag): join with one subscription or the other, heartbeat, leave, each with the
# store failing the write or not
_OPS = st.lists(st.tuples(st.sampled_from(["join", "heartbeat", "resubscribe", "leave"]), st.integers(0, 4),
                          st.booleans()), max_size=25)


@settings(max_examples=60, deadline=None)
@given(_OPS)
def test_only_changed_records_are_written_and_they_add_up_to_the_group(ops: list[tuple[str, int, bool]]) -> None:
    """A write carries only the dirty members' records and the group's, yet after any run of joins,
    heartbeats, resubscriptions, leaves and failed writes, what was written replays into the group in memory
    record for record: nothing a member changed is left out of `__consumer_offsets`."""
    async def main() -> None:
        store = InMemoryGroupStore()
        svc = _svc(store)
        epochs: dict[str, int] = {}
        for kind, i, fails in ops:
            mid = f"m{i}"
            store.fail = E.NOT_COORDINATOR if fails else None
            if kind == "join":
                hb = ShareHeartbeat("g", mid, 0, subscribed_topic_names=["t"] if i % 2 else ["t", "u"])
            elif kind == "leave":
                hb = ShareHeartbeat("g", mid, -1)
            else:
                hb = ShareHeartbeat("g", mid, epochs.get(mid, 0),
                                    subscribed_topic_names=["u"] if kind == "resubscribe" else None)
            r = await svc.share_heartbeat(hb)
            if r.error == E.NONE:
                epochs[mid] = r.member_epoch
            group = svc.share.groups.get("g")
            if group is None:
                continue
            if r.error == E.NONE:  # answered: everything the group is now was written
                assert group.written == svc.share._image(group) and not group.dirty
            store.fail = None
        group = svc.share.groups.get("g")
        if group is not None:  # one more write carries whatever a failed one left out
            await _initialized(svc, "g")  # the share partitions' initialization ends with a write of its own
            async with svc.share._lock("g"):
                await svc.share._flush(group)
            assert group.written == svc.share._image(group)
            loaded = replay(store.records)["g"].share
            assert loaded is not None and set(loaded.members) == set(group.members)
            assert loaded.epoch == group.group_epoch
            assert {m: v.member_epoch for m, v in loaded.current.items()} == \
                {m: v.member_epoch for m, v in group.members.items()}
            assert loaded.targets == {m: v.assignment for m, v in group.members.items()}
        await svc.shutdown()

    asyncio.run(main())
