"""The streams group type (`odradek.groups.streams_coordinator`) through `GroupCoordinatorService`, with an
in-memory store: a member that stops heartbeating is removed after its session and its tasks go to the
other; a member that does not revoke within its rebalance timeout is removed; standbys per the group's
`streams.num.standby.replicas`; the group's records replay into the same group (epochs, members, topology,
tasks); a failed write answers the heartbeat with the store's error; group ids refused across types."""

from __future__ import annotations

import asyncio
from typing import Any

from odradek.groups.consumer_coordinator import Heartbeat
from odradek.groups.coordinator import GroupSettings
from odradek.groups.offsets import replay
from odradek.groups.service import GroupCoordinatorService
from odradek.groups.streams_coordinator import StreamsGroupSettings, StreamsHeartbeat
from odradek.groups.streams_topology import InternalTopic, Subtopology, Topology
from odradek.protocol.errors import ErrorCode as E
from tests.consumer_members import SETTINGS, FakeTopics
from tests.group_members import InMemoryGroupStore

TOPOLOGY = Topology(1, (Subtopology("0", ("t",), changelog_topics=(InternalTopic("app-log", 0, -1),)),))


def _svc(store: InMemoryGroupStore | None = None, session_ms: int = 45_000, standbys: int = 0) -> Any:
    topics = FakeTopics(t=4, **{"app-log": 4})
    return GroupCoordinatorService(
        GroupSettings(), SETTINGS, store or InMemoryGroupStore(), topics,
        streams_settings=StreamsGroupSettings(session_timeout_ms=session_ms, heartbeat_interval_ms=50,
                                              num_standby_replicas=standbys, initial_rebalance_delay_ms=0))


def _join(member: str, process: str | None = None, rebalance_ms: int = 30_000) -> StreamsHeartbeat:
    return StreamsHeartbeat("g", member, 0, rebalance_timeout_ms=rebalance_ms, topology=TOPOLOGY,
                            process_id=process or f"p-{member}", active={}, standby={}, warmup={})


def _beat(member: str, epoch: int, active: dict[str, frozenset[int]] | None = None) -> StreamsHeartbeat:
    """A member's heartbeat, with its active tasks (and no standbys or warm-ups) when `active` is given."""
    if active is None:
        return StreamsHeartbeat("g", member, epoch)
    return StreamsHeartbeat("g", member, epoch, active=active, standby={}, warmup={})


def _n(tasks: dict[str, frozenset[int]] | None) -> int:
    return sum(len(v) for v in (tasks or {}).values())


def test_session_expiry_moves_tasks_to_the_other_member() -> None:
    async def main() -> None:
        svc = _svc(session_ms=200)
        a = await svc.streams_heartbeat(_join("a"))
        assert a.error == E.NONE and a.tasks is not None and a.tasks[0] == {"0": frozenset({0, 1, 2, 3})}
        b = await svc.streams_heartbeat(_join("b"))
        assert b.tasks is not None and b.tasks[0] == {}, "a holds every task"
        # b keeps heartbeating, a goes silent: after a's session b gets all four
        for _ in range(40):
            b = await svc.streams_heartbeat(StreamsHeartbeat("g", "b", b.member_epoch))
            if b.tasks is not None and _n(b.tasks[0]) == 4:
                break
            await asyncio.sleep(0.02)
        assert b.tasks is not None and b.tasks[0] == {"0": frozenset({0, 1, 2, 3})}
        d = await svc.streams_describe("g")
        assert [m.member.member_id for m in d.members] == ["b"]
        await svc.shutdown()

    asyncio.run(main())


def test_a_member_that_does_not_revoke_is_removed_after_its_rebalance_timeout() -> None:
    async def main() -> None:
        svc = _svc()
        a = await svc.streams_heartbeat(_join("a", rebalance_ms=100))
        b = await svc.streams_heartbeat(_join("b"))
        a2 = await svc.streams_heartbeat(_beat("a", a.member_epoch, a.tasks[0]))
        assert a2.member_epoch == a.member_epoch and a2.tasks is not None and _n(a2.tasks[0]) == 2
        await asyncio.sleep(0.3)  # a never reports the two tasks gone
        b2 = await svc.streams_heartbeat(_beat("b", b.member_epoch, {}))
        assert b2.tasks is not None and _n(b2.tasks[0]) == 4
        assert (await svc.streams_heartbeat(StreamsHeartbeat("g", "a", a.member_epoch))).error == E.UNKNOWN_MEMBER_ID
        await svc.shutdown()

    asyncio.run(main())


def test_standbys_and_replay() -> None:
    async def main() -> None:
        store = InMemoryGroupStore()
        svc = _svc(store, standbys=1)
        a = await svc.streams_heartbeat(_join("a"))
        b = await svc.streams_heartbeat(_join("b"))
        a = await svc.streams_heartbeat(_beat("a", a.member_epoch, a.tasks[0]))
        held = a.tasks[0] if a.tasks is not None else {}
        a = await svc.streams_heartbeat(_beat("a", a.member_epoch, held))
        b = await svc.streams_heartbeat(_beat("b", b.member_epoch, {}))
        d = await svc.streams_describe("g")
        assert d.state == "Stable", d
        ma, mb = (m.member for m in d.members)
        assert _n(ma.active) == _n(mb.active) == 2
        assert ma.standby == mb.active and mb.standby == ma.active
        # the records written replay into the same group on another coordinator
        svc2 = _svc(standbys=1)
        svc2.loaded(0, replay(store.records))
        d2 = await svc2.streams_describe("g")
        assert (d2.group_epoch, d2.assignment_epoch, d2.topology, d2.state) == (
            d.group_epoch, d.assignment_epoch, TOPOLOGY, "Stable")
        assert [(m.member.member_id, m.member.member_epoch, m.member.active, m.member.standby, m.target)
                for m in d2.members] == [(m.member.member_id, m.member.member_epoch, m.member.active,
                                          m.member.standby, m.target) for m in d.members]
        # a failed write answers with the store's error
        store.fail = E.NOT_ENOUGH_REPLICAS
        c = await svc.streams_heartbeat(_join("c"))
        assert c.error == E.NOT_ENOUGH_REPLICAS
        await svc.shutdown()
        await svc2.shutdown()

    asyncio.run(main())


def test_group_ids_are_refused_across_types() -> None:
    async def main() -> None:
        svc = _svc()
        assert (await svc.streams_heartbeat(_join("a"))).error == E.NONE
        cg = await svc.consumer_heartbeat(Heartbeat("g", "x", 0, rebalance_timeout_ms=1000,
                                                    subscribed_topic_names=["t"], owned={}))
        assert cg.error == E.GROUP_ID_NOT_FOUND
        joined = await svc.consumer_heartbeat(Heartbeat("cg", "x", 0, rebalance_timeout_ms=1000,
                                                        subscribed_topic_names=["t"], owned={}))
        assert joined.error == E.NONE
        other = await svc.streams_heartbeat(StreamsHeartbeat("cg", "a", 0, rebalance_timeout_ms=1000,
                                                             topology=TOPOLOGY, process_id="p", active={}, standby={},
                                                             warmup={}))
        assert other.error == E.GROUP_ID_NOT_FOUND and other.message == "Group cg is not a streams group."
        described = await svc.consumer_describe("g")
        assert (described.error, described.message) == (E.GROUP_ID_NOT_FOUND, "Group g is not a consumer group.")
        err, listed = svc.list_groups()
        assert (err, [(gid, gtype) for gid, _p, _s, gtype in listed]) == (E.NONE, [("cg", "consumer"), ("g", "streams")])
        await svc.shutdown()

    asyncio.run(main())
