"""Online migration between the classic and the consumer protocol for groups with members, without
sockets: simulated classic members (JoinGroup/SyncGroup/Heartbeat/LeaveGroup through the service, eager or
cooperative) and consumer-protocol members (ConsumerGroupHeartbeat) in one group, through the sequence
confluent-kafka's `test_consumer_upgrade_downgrade` drives; and the embedded consumer protocol's codec."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest

from odradek.groups.consumer_coordinator import ConsumerGroupSettings, Heartbeat
from odradek.groups.consumer_group import (
    classic_assignment_bytes,
    parse_classic_assignment,
    parse_classic_subscription,
)
from odradek.groups.coordinator import GroupSettings
from odradek.groups.group import GroupState, JoinRequest, MemberProfile
from odradek.groups.offsets import replay
from odradek.groups.schemas import OffsetValue
from odradek.groups.service import GroupCoordinatorService
from odradek.protocol.errors import ErrorCode, KafkaError
from tests.consumer_members import Client, FakeTopics
from tests.group_members import InMemoryGroupStore

E = ErrorCode
PARTITIONS = 6


def subscription(topics: list[str], owned: dict[str, set[int]] | None = None, version: int = 1) -> bytes:
    """A ConsumerProtocolSubscription as a classic client sends it."""
    def string(s: str) -> bytes:
        return struct.pack(">h", len(s)) + s.encode()

    out = struct.pack(">h", version) + struct.pack(">i", len(topics)) + b"".join(string(t) for t in topics)
    out += struct.pack(">i", -1)  # no user data
    if version >= 1:
        owned = owned or {}
        out += struct.pack(">i", len(owned))
        for t, ps in sorted(owned.items()):
            out += string(t) + struct.pack(">i", len(ps)) + b"".join(struct.pack(">i", p) for p in sorted(ps))
    return out


def test_the_embedded_protocol_round_trips() -> None:
    sub = parse_classic_subscription(subscription(["a", "b"], {"a": {2, 0}}))
    assert (sub.version, sub.topics, sub.owned, sub.rack_id) == (1, ["a", "b"], {"a": [0, 2]}, None)
    assert parse_classic_subscription(subscription(["a"], version=0)).owned == {}
    assert parse_classic_assignment(classic_assignment_bytes(3, {"b": [1], "a": [3, 0]})) == {"a": [0, 3], "b": [1]}
    assert parse_classic_assignment(b"") == {}
    with pytest.raises(KafkaError) as exc:
        parse_classic_subscription(b"\x00\x01\x00")
    assert exc.value.code == E.INCONSISTENT_GROUP_PROTOCOL


class ClassicClient:
    """A classic consumer: joins (answering MEMBER_ID_REQUIRED), assigns round-robin when it leads a
    classic group, syncs, heartbeats and rejoins on REBALANCE_IN_PROGRESS. Eager members give up
    everything before rejoining; cooperative ones report what they own and rejoin after a revocation."""

    def __init__(self, svc: GroupCoordinatorService, eager: bool, group: str = "g") -> None:
        self.svc, self.eager, self.group = svc, eager, group
        self.member_id, self.generation = "", -1
        self.owned: set[int] = set()

    def profile(self) -> MemberProfile:
        owned = {} if self.eager else {"t": self.owned}
        name = "range" if self.eager else "cooperative-sticky"
        return MemberProfile("c", "/h", 10_000, 10_000, "consumer", [(name, subscription(["t"], owned))])

    async def join(self) -> None:
        if self.eager:
            self.owned = set()
        while True:
            res = await self.svc.join(JoinRequest(self.group, self.member_id, None, self.profile()))
            if res.error == E.MEMBER_ID_REQUIRED:
                self.member_id = res.member_id
                continue
            assert res.error == E.NONE, res
            break
        self.member_id, self.generation = res.member_id, res.generation
        assignments = []
        if res.leader == self.member_id:
            ids = [mid for mid, _, _ in res.members]
            assignments = [(mid, classic_assignment_bytes(1, {"t": [p for p in range(PARTITIONS) if p % len(ids) == i]}))
                           for i, mid in enumerate(ids)]
        sync = await self.svc.sync(self.group, self.generation, self.member_id, None, "consumer",
                                   res.protocol_name, assignments)
        assert sync.error == E.NONE, sync
        given = set(parse_classic_assignment(sync.assignment).get("t", []))
        revoked = self.owned - given
        self.owned = given
        if revoked and not self.eager:
            await self.join()  # the cooperative second round

    async def step(self) -> None:
        err = await self.svc.heartbeat(self.group, self.generation, self.member_id, None)
        if err == E.REBALANCE_IN_PROGRESS:
            await self.join()
        else:
            assert err == E.NONE, err

    async def leave(self) -> None:
        assert await self.svc.leave(self.group, [(self.member_id, None)]) == [E.NONE]


def owned_by(member: Any) -> set[int]:
    if isinstance(member, ClassicClient):
        return member.owned
    return {p for _, p in member.partitions()}


async def settle(members: list[Any], rounds: int = 12) -> None:
    """Everyone heartbeats in turn; after each heartbeat no partition is owned twice."""
    for _ in range(rounds):
        for m in members:
            if isinstance(m, ClassicClient):
                await m.step()
            else:
                res = await m.beat()
                assert res.error == E.NONE, res
            held = [p for x in members for p in owned_by(x)]
            assert len(held) == len(set(held)), f"a partition owned twice: {[owned_by(x) for x in members]}"
        await asyncio.sleep(0)


def balanced(members: list[Any]) -> bool:
    held = [p for x in members for p in owned_by(x)]
    return sorted(held) == list(range(PARTITIONS)) and {len(owned_by(x)) for x in members} == {
        PARTITIONS // len(members)}


def group_type(svc: GroupCoordinatorService) -> str | None:
    return svc.group_type("g")


@pytest.mark.parametrize("eager", [True, False], ids=["eager", "cooperative"])
def test_upgrade_and_downgrade_with_members(eager: bool) -> None:
    async def main() -> None:
        store = InMemoryGroupStore()
        svc = GroupCoordinatorService(GroupSettings(initial_rebalance_delay_ms=0),
                                      ConsumerGroupSettings(session_timeout_ms=10_000, heartbeat_interval_ms=50),
                                      store, FakeTopics(t=PARTITIONS))
        c1 = ClassicClient(svc, eager)
        await c1.join()
        assert c1.owned == set(range(PARTITIONS)) and group_type(svc) == "classic"
        # a consumer-protocol member joins: the classic group becomes a consumer group with c1 in it
        c2 = Client(svc.consumer, "c2", ["t"])
        await settle([c2, c1])
        assert group_type(svc) == "consumer" and balanced([c1, c2])
        described = await svc.consumer_describe("g")
        assert {m.member_id for m in described.members} == {c1.member_id, "c2"}
        # the classic member leaves; the consumer-protocol one gets everything
        await c1.leave()
        await settle([c2])
        assert group_type(svc) == "consumer" and owned_by(c2) == set(range(PARTITIONS))
        # a classic member joins the consumer group
        c3 = ClassicClient(svc, eager)
        await c3.join()
        await settle([c2, c3])
        assert group_type(svc) == "consumer" and balanced([c2, c3])
        reloaded = replay(store.records)["g"].consumer  # a load finds c3 still a classic member
        assert reloaded is not None and reloaded.members["c2"].classic is None
        c3_meta = reloaded.members[c3.member_id].classic
        assert c3_meta is not None and c3_meta.session_timeout_ms == 10_000 and c3_meta.names() == [
            "range" if eager else "cooperative-sticky"]
        # the last consumer-protocol member leaves: a classic group again, c3 rebalances into it
        leave = await svc.consumer_heartbeat(Heartbeat("g", "c2", -1))
        assert leave.error == E.NONE
        assert group_type(svc) == "classic" and svc.classic.groups["g"].is_(GroupState.PREPARING_REBALANCE)
        await settle([c3], 3)
        assert owned_by(c3) == set(range(PARTITIONS)) and svc.classic.groups["g"].is_(GroupState.STABLE)
        loaded = replay(store.records)["g"]
        assert loaded.consumer is None and loaded.metadata is not None  # the consumer records are tombstoned
        await svc.shutdown()

    asyncio.run(main())


def test_a_classic_member_out_of_step_is_told_so() -> None:
    async def main() -> None:
        svc = GroupCoordinatorService(GroupSettings(initial_rebalance_delay_ms=0),
                                      ConsumerGroupSettings(session_timeout_ms=10_000, heartbeat_interval_ms=50),
                                      InMemoryGroupStore(), FakeTopics(t=PARTITIONS))
        c2 = Client(svc.consumer, "c2", ["t"])
        await c2.beat()
        c3 = ClassicClient(svc, eager=True)
        await c3.join()
        assert await svc.heartbeat("g", c3.generation + 1, c3.member_id, None) == E.ILLEGAL_GENERATION
        assert await svc.heartbeat("g", c3.generation, "nobody", None) == E.UNKNOWN_MEMBER_ID
        # a consumer-protocol member id is not a classic member
        assert (await svc.sync("g", c2.epoch, "c2", None, "consumer", "range", [])).error == E.UNKNOWN_MEMBER_ID
        other = JoinRequest("g", "", None, MemberProfile("c", "/h", 10_000, 10_000, "consumer",
                                                         [("roundrobin", subscription(["t"]))]), False)
        assert (await svc.join(other)).error == E.INCONSISTENT_GROUP_PROTOCOL  # no protocol in common with c3
        # offsets: a classic member commits at its generation (any version); a wrong one is refused
        value = {("t", 0): OffsetValue(3)}
        assert await svc.commit("g", c3.generation, c3.member_id, None, value, api_version=8) == E.NONE
        assert await svc.commit("g", c3.generation - 1, c3.member_id, None, value, api_version=8) == \
            E.ILLEGAL_GENERATION
        await svc.shutdown()

    asyncio.run(main())


def test_a_silent_consumer_member_removed_downgrades_the_group() -> None:
    """The last consumer-protocol member is removed by the broker (silent past its rebalance timeout), not by
    a leave: the classic member that remains gets a classic group all the same."""
    async def main() -> None:
        svc = GroupCoordinatorService(GroupSettings(initial_rebalance_delay_ms=0),
                                      ConsumerGroupSettings(session_timeout_ms=10_000, heartbeat_interval_ms=50),
                                      InMemoryGroupStore(), FakeTopics(t=PARTITIONS))
        c2 = Client(svc.consumer, "c2", ["t"])
        c3 = ClassicClient(svc, eager=False)
        await c2.beat()
        await c3.join()
        await settle([c2, c3])
        assert group_type(svc) == "consumer" and balanced([c2, c3])
        for _ in range(40):  # c2 goes silent; c3 keeps heartbeating (and rejoins when told)
            await asyncio.sleep(0.05)
            await c3.step()
            if group_type(svc) == "classic" and c3.owned == set(range(PARTITIONS)):
                break
        assert group_type(svc) == "classic" and c3.owned == set(range(PARTITIONS))
        await svc.shutdown()

    asyncio.run(main())
