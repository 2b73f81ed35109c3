"""Streams group records (`odradek.groups.streams_schemas`): each value decodes to what was encoded, and the
bytes are Kafka 4.4's layouts (the hex below was read back by Kafka's own generated record classes), and a
partition's records replay into the group they leave behind, a tombstone removing a member."""

from __future__ import annotations

from odradek.groups import consumer_schemas as cs
from odradek.groups import streams_schemas as ss
from odradek.groups.offsets import replay
from odradek.groups.streams_topology import InternalTopic, Subtopology, Topology

TOPOLOGY = Topology(3, (
    Subtopology("0", ("in",), (), (InternalTopic("app-log", 0, -1, (("cleanup.policy", "compact"),)),), ("app-rep",)),
    Subtopology("1", (), ("x.*",), (), (), (InternalTopic("app-rep", 4, 3),), (((), (), (0,)),)),
))
MEMBER = ss.StreamsMemberValue(None, "r1", "cid", "/127.0.0.1", 300000, 3, "proc", ("host", 40000), {"a": "b"})
CURRENT = ss.StreamsCurrentValue(5, 4, ss.STATE_UNREVOKED_TASKS, {"0": frozenset({0, 1})}, {"1": frozenset({2})}, {},
                                 {"0": frozenset({3})})


def test_values_round_trip() -> None:
    assert ss.decode_topology(ss.encode_topology(TOPOLOGY)) == TOPOLOGY
    assert ss.decode_member_metadata(ss.encode_member_metadata(MEMBER)) == MEMBER
    assert ss.decode_current_assignment(ss.encode_current_assignment(CURRENT)) == CURRENT
    assert ss.decode_target_member(ss.encode_target_member({"0": frozenset({1})}, {"1": frozenset({0})})) == (
        {"0": frozenset({1})}, {"1": frozenset({0})})
    assert ss.decode_group_metadata(ss.encode_group_metadata(7)) == 7


def test_kafka_layouts() -> None:
    # version 0, then the flexible struct Kafka's StreamsGroupMetadataValue / TargetAssignmentMemberValue read
    assert ss.encode_group_metadata(7).hex() == "0000" + "00000007" + "0000000000000000" + "00"
    assert ss.encode_target_member({"0": frozenset({0, 1})}, {}).hex() == (
        "0000" + "02" + "0230" + "03" + "00000000" + "00000001" + "00" + "01" + "01" + "00")


def test_records_replay_into_the_group() -> None:
    gid = "app"

    def rec(t: int, value: bytes | None, member: str | None = None) -> tuple[bytes, bytes | None]:
        return cs.encode_key(cs.ConsumerKey(t, gid, member)), value

    records = [
        rec(ss.MEMBER_METADATA, ss.encode_member_metadata(MEMBER), "m1"),
        rec(ss.CURRENT_MEMBER_ASSIGNMENT, ss.encode_current_assignment(CURRENT), "m1"),
        rec(ss.MEMBER_METADATA, ss.encode_member_metadata(MEMBER), "m2"),
        rec(ss.TOPOLOGY, ss.encode_topology(TOPOLOGY)),
        rec(ss.TARGET_ASSIGNMENT_METADATA, cs.encode_epoch(4)),
        rec(ss.GROUP_METADATA, ss.encode_group_metadata(5)),
        rec(ss.MEMBER_METADATA, None, "m2"),
    ]
    loaded = replay(records)[gid].streams
    assert loaded is not None
    assert (loaded.epoch, loaded.assignment_epoch, loaded.topology) == (5, 4, TOPOLOGY)
    assert loaded.members == {"m1": MEMBER} and loaded.current == {"m1": CURRENT}
    assert gid not in replay([*records, rec(ss.GROUP_METADATA, None)])
