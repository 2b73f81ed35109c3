"""The streams groups' sticky task assignor (`odradek.groups.streams_assignor`) and topology
initialization (`odradek.groups.streams_topology`): balance, stickiness, standbys on other processes,
partition counts of internal topics, the statuses of what is missing, invalid topologies."""

from __future__ import annotations

import pytest

from odradek.groups.streams_assignor import AssignorMember, sticky_assign, task_list
from odradek.groups.streams_topology import (
    INCORRECTLY_PARTITIONED_TOPICS,
    MISSING_INTERNAL_TOPICS,
    MISSING_SOURCE_TOPICS,
    InternalTopic,
    Subtopology,
    Topology,
    configure,
    validate,
)
from odradek.protocol.errors import ErrorCode, KafkaError


def loads(result: dict) -> list[int]:
    return sorted(len(task_list(a.active)) for a in result.values())


def test_active_tasks_are_balanced_and_each_given_once() -> None:
    members = {f"m{i}": AssignorMember(f"p{i}") for i in range(3)}
    out = sticky_assign(members, {"0": 4, "1": 3}, 0)
    every = [t for a in out.values() for t in task_list(a.active)]
    assert sorted(every) == [("0", p) for p in range(4)] + [("1", p) for p in range(3)]
    assert loads(out) == [2, 2, 3]
    assert all(not a.standby for a in out.values())


def test_assignment_is_sticky_and_moves_only_what_balance_needs() -> None:
    before = {"a": AssignorMember("p1", active={"0": frozenset({0, 1, 2, 3})})}
    first = sticky_assign(before, {"0": 4}, 0)
    assert task_list(first["a"].active) == [("0", p) for p in range(4)]
    two = {"a": AssignorMember("p1", active=first["a"].active), "b": AssignorMember("p2")}
    second = sticky_assign(two, {"0": 4}, 0)
    assert loads(second) == [2, 2]
    assert set(task_list(second["a"].active)) <= set(task_list(first["a"].active))
    again = {m: AssignorMember(two[m].process_id, active=second[m].active) for m in two}
    assert {m: a.active for m, a in sticky_assign(again, {"0": 4}, 0).items()} == {
        m: a.active for m, a in second.items()}


def test_standbys_go_to_other_processes_and_never_beside_their_active() -> None:
    members = {"a1": AssignorMember("p1"), "a2": AssignorMember("p1"), "b1": AssignorMember("p2"),
               "c1": AssignorMember("p3")}
    out = sticky_assign(members, {"0": 6}, 2)
    for s, p in [("0", i) for i in range(6)]:
        holders = [m for m, a in out.items() if p in a.active.get(s, ()) or p in a.standby.get(s, ())]
        processes = [members[m].process_id for m in holders]
        assert len(holders) == 3 and len(set(processes)) == 3, (p, holders)


def test_no_standby_without_another_process() -> None:
    out = sticky_assign({"a": AssignorMember("p"), "b": AssignorMember("p")}, {"0": 2}, 1)
    assert all(not a.standby for a in out.values())
    assert sticky_assign({}, {"0": 2}, 1) == {}


def _topic(name: str, partitions: int = 0) -> InternalTopic:
    return InternalTopic(name, partitions, -1)


def test_configure_sizes_internal_topics_from_their_sources() -> None:
    topo = Topology(1, (
        Subtopology("0", source_topics=("in",), repartition_sink_topics=("app-rep",)),
        Subtopology("1", repartition_source_topics=(_topic("app-rep"),), changelog_topics=(_topic("app-log"),)),
    ))
    existing = {"in": 4}
    out = configure(topo, existing.get, existing)
    assert out.task_counts == {"0": 4, "1": 4}
    assert sorted((t.name, t.partitions) for t in out.to_create) == [("app-log", 4), ("app-rep", 4)]
    assert [c for c, _ in out.status] == [MISSING_INTERNAL_TOPICS]
    existing.update({"app-rep": 4, "app-log": 4})
    ready = configure(topo, existing.get, existing)
    assert ready.ready and not ready.to_create
    existing["app-log"] = 2
    assert [c for c, _ in configure(topo, existing.get, existing).status] == [INCORRECTLY_PARTITIONED_TOPICS]


def test_configure_reports_missing_sources_and_copartitioning() -> None:
    topo = Topology(1, (Subtopology("0", source_topics=("a", "b"), copartition_groups=(((0, 1), (), ()),)),))
    assert [c for c, _ in configure(topo, {"a": 2}.get, ["a"]).status] == [MISSING_SOURCE_TOPICS]
    assert [c for c, _ in configure(topo, {"a": 2, "b": 3}.get, ["a", "b"]).status] == [INCORRECTLY_PARTITIONED_TOPICS]
    assert configure(topo, {"a": 2, "b": 2}.get, ["a", "b"]).task_counts == {"0": 2}
    regex = Topology(1, (Subtopology("0", source_topic_regex=("in-.*",)),))
    assert configure(regex, {"in-1": 3}.get, ["in-1", "other"]).task_counts == {"0": 3}
    assert [c for c, _ in configure(regex, {}.get, ["other"]).status] == [MISSING_SOURCE_TOPICS]


@pytest.mark.parametrize("topology", [
    Topology(1, (Subtopology("0", source_topics=("a",)), Subtopology("0", source_topics=("b",)))),
    Topology(1, (Subtopology("0", source_topics=("a",), repartition_sink_topics=("nowhere",)),)),
    Topology(1, (Subtopology("0", source_topics=("a",), changelog_topics=(_topic("bad name!"),)),)),
    Topology(1, (Subtopology("0", source_topics=("a",), copartition_groups=(((3,), (), ()),)),)),
    Topology(1, (Subtopology("0", source_topics=("a",), changelog_topics=(_topic("a"),)),)),
    Topology(1, (Subtopology("0", source_topic_regex=("(",)),)),
    Topology(1, (Subtopology("0", source_topic_regex=("(?=in)in.*",)),)),  # RE2, as Kafka's RE2/J: no lookaround
    Topology(1, (Subtopology("0"),)),  # no source at all
    Topology(1, (Subtopology("0", source_topic_regex=tuple(f"r{i}.*" for i in range(17))),)),  # Odradek's bounds
    Topology(1, (Subtopology("0", source_topics=tuple(f"t{i}" for i in range(10_001))),)),
    Topology(1, (Subtopology("0", source_topics=("a",), changelog_topics=(_topic("log", 3),)),)),  # sized changelog
    Topology(1, (Subtopology("0", repartition_source_topics=(_topic("rep"),)),)),  # unsized, fed by no sink
])
def test_invalid_topologies(topology: Topology) -> None:
    with pytest.raises(KafkaError) as err:
        validate(topology)
    assert err.value.code is ErrorCode.STREAMS_INVALID_TOPOLOGY


def test_source_regexes_run_in_linear_time() -> None:
    """A client's regex is matched against every topic name on the event loop: RE2, no backtracking."""
    import time

    regex = Topology(1, (Subtopology("0", source_topic_regex=("(a+)+b",)),))
    names = ["a" * 249 + "c"] * 50
    start = time.monotonic()
    assert [c for c, _ in configure(regex, {}.get, names).status] == [MISSING_SOURCE_TOPICS]
    assert time.monotonic() - start < 1
