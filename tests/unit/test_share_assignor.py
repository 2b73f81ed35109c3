"""The share groups' `simple` assignor (`share_assignor.simple_assign`), Kafka's SimpleAssignor rules:
balance first (each partition read by ceil(members / partitions) members, member counts within one), then
stickiness (what a member held stays where balance allows), per topic when members subscribe to different
topics; and deterministic."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.groups.share_assignor import Assignment, simple_assign

T, U, V = b"t" * 16, b"u" * 16, b"v" * 16
IDS = {"t": T, "u": U, "v": V}


def _parts(**counts: int) -> dict[str, tuple[bytes, int]]:
    return {name: (IDS[name], n) for name, n in counts.items()}


def _flat(a: Assignment) -> set[tuple[bytes, int]]:
    return {(t, p) for t, ps in a.items() for p in ps}


def _moves(before: dict[str, Assignment], after: dict[str, Assignment]) -> int:
    """The (member, partition) pairs given that were not there before."""
    return sum(len(_flat(a) - _flat(before.get(m, {}))) for m, a in after.items())


def _check_balanced(got: dict[str, Assignment], members: list[str], tps: list[tuple[bytes, int]]) -> None:
    """One share: every partition read by ceil(M / P) of `members`, their counts within one."""
    if not members or not tps:
        return
    sharing = -(-len(members) // len(tps))
    readers = Counter(tp for m in members for tp in _flat(got[m]) if tp in set(tps))
    assert all(readers[tp] == sharing for tp in tps), readers
    counts = [len(_flat(got[m]) & set(tps)) for m in members]
    assert max(counts) - min(counts) <= 1, counts


def test_partitions_split_evenly_one_member_each() -> None:
    got = simple_assign({"a": ["t"], "b": ["t"]}, _parts(t=4))
    assert got == {"a": {T: frozenset({0, 2})}, "b": {T: frozenset({1, 3})}}  # dealt in turn from scratch
    got = simple_assign({m: ["t"] for m in "abc"}, _parts(t=7))
    _check_balanced(got, ["a", "b", "c"], [(T, p) for p in range(7)])


def test_more_members_than_partitions_share_them() -> None:
    got = simple_assign({m: ["t"] for m in "abcdef"}, _parts(t=2))
    assert sorted(sorted(a[T]) for a in got.values()) == [[0], [0], [0], [1], [1], [1]]
    # 5 members, 2 partitions: each partition read by 3, so one member reads both
    got = simple_assign({m: ["t"] for m in "abcde"}, _parts(t=2))
    _check_balanced(got, list("abcde"), [(T, 0), (T, 1)])
    assert sorted(len(a[T]) for a in got.values()) == [1, 1, 1, 1, 2]


def test_a_partition_short_of_readers_when_only_its_readers_lack_partitions() -> None:
    # 3 members on 2 partitions: each partition read by 2, so c (which kept 1) reads both; dealing 0 to a and
    # b leaves 1 short with only c, its reader, short of a partition: a moves to 1 and c takes 0
    got = simple_assign({m: ["t"] for m in "abc"}, _parts(t=2), {"c": {T: frozenset({1})}})
    assert got == {"a": {T: frozenset({1})}, "b": {T: frozenset({0})}, "c": {T: frozenset({0, 1})}}


def test_a_joining_member_takes_only_what_must_move() -> None:
    parts = _parts(t=6)
    before = simple_assign({"a": ["t"], "b": ["t"]}, parts)
    after = simple_assign({"a": ["t"], "b": ["t"], "c": ["t"]}, parts, before)
    assert after["a"][T] <= before["a"][T] and after["b"][T] <= before["b"][T]
    assert len(after["c"][T]) == 2 and _moves(before, after) == 2


def test_a_leaving_members_partitions_go_and_nothing_else_moves() -> None:
    parts = _parts(t=6)
    before = {"a": {T: frozenset({0, 2})}, "b": {T: frozenset({1, 3})}, "c": {T: frozenset({4, 5})}}
    after = simple_assign({"a": ["t"], "c": ["t"]}, parts, before)
    assert after == {"a": {T: frozenset({0, 1, 2})}, "c": {T: frozenset({3, 4, 5})}}


def test_sharing_members_stay_when_one_joins_or_leaves() -> None:
    parts = _parts(t=3)
    before = simple_assign({m: ["t"] for m in "abcdefgh"}, parts)
    after = simple_assign({m: ["t"] for m in "abcdefg"}, parts, before)  # h leaves: its partition gets another
    _check_balanced(after, list("abcdefg"), [(T, p) for p in range(3)])
    assert _moves(before, after) == 1
    assert all(before[m][T] <= after[m][T] for m in "abcdefg")
    joined = simple_assign({m: ["t"] for m in "abcdefghi"}, parts, before)  # 9 on 3: each reads one
    _check_balanced(joined, list("abcdefghi"), [(T, p) for p in range(3)])
    assert all(joined[m][T] <= before[m][T] for m in "abcdefgh") and len(joined["i"][T]) == 1


def test_more_partitions_are_dealt_to_the_members_with_fewest() -> None:
    before = simple_assign({"a": ["t"], "b": ["t"]}, _parts(t=2))
    after = simple_assign({"a": ["t"], "b": ["t"]}, _parts(t=4), before)
    assert all(before[m][T] <= after[m][T] for m in "ab") and [len(after[m][T]) for m in "ab"] == [2, 2]


def test_subscription_change_and_deleted_topics() -> None:
    parts = _parts(t=2, u=2)
    before = simple_assign({"a": ["t", "u"], "b": ["t", "u"]}, parts)
    assert sum(len(_flat(a)) for a in before.values()) == 4  # homogeneous: 4 partitions over 2 members
    # b drops u: heterogeneous, each topic on its own; b keeps what it had of t
    after = simple_assign({"a": ["t", "u"], "b": ["t"]}, parts, before)
    assert after["a"][U] == frozenset({0, 1}) and U not in after["b"]
    assert before["b"].get(T, frozenset()) <= after["b"][T]
    _check_balanced(after, ["a", "b"], [(T, 0), (T, 1)])
    # u deleted (or recreated under a new id): its partitions leave every member
    gone = simple_assign({"a": ["t", "u"], "b": ["t", "u"]}, _parts(t=2), before)
    assert all(set(a) == {T} for a in gone.values())
    assert simple_assign({"a": ["missing"]}, {}) == {"a": {}}
    assert simple_assign({}, parts) == {}
    # a previous assignment naming a partition the topic no longer has is not kept
    assert simple_assign({"a": ["t"]}, _parts(t=1), {"a": {T: frozenset({0, 5})}}) == {"a": {T: frozenset({0})}}


def test_heterogeneous_topics_are_balanced_each_on_its_own() -> None:
    # Kafka's example: M1 on T1, M2 on T2, M3 on both: M3 gets half of each
    got = simple_assign({"m1": ["t"], "m2": ["u"], "m3": ["t", "u"]}, _parts(t=4, u=4))
    assert len(got["m3"][T]) == 2 and len(got["m3"][U]) == 2
    assert len(got["m1"][T]) == 2 and len(got["m2"][U]) == 2


members_st = st.lists(st.sampled_from("abcdefghij"), min_size=1, max_size=10, unique=True)
topics_st = st.lists(st.sampled_from(["t", "u", "v"]), min_size=1, max_size=3, unique=True)


@st.composite
def _inputs(draw: st.DrawFn) -> tuple[dict[str, list[str]], dict[str, tuple[bytes, int]], dict[str, Assignment]]:
    members = draw(members_st)
    homogeneous = draw(st.booleans())
    shared = draw(topics_st)
    subs = {m: shared if homogeneous else draw(topics_st) for m in members}
    parts = {name: (IDS[name], draw(st.integers(0, 8))) for name in draw(topics_st)}
    prev_members = draw(st.lists(st.sampled_from("abcdefghijk"), max_size=11, unique=True))
    prev = {m: {IDS[t]: frozenset(draw(st.lists(st.integers(0, 9), max_size=5))) for t in draw(topics_st)}
            for m in prev_members}
    return subs, parts, prev


def _shares(subs: dict[str, list[str]], parts: dict[str, tuple[bytes, int]]) -> list[tuple[list[str], list]]:
    def tps(topics: list[str]) -> list[tuple[bytes, int]]:
        return [(parts[t][0], p) for t in topics if t in parts for p in range(parts[t][1])]
    if len({frozenset(ts) for ts in subs.values()}) == 1:
        return [(list(subs), tps(next(iter(subs.values()))))]
    return [([m for m, ts in subs.items() if t in ts], tps([t])) for t in {t for ts in subs.values() for t in ts}]


@settings(max_examples=400, deadline=None)
@given(_inputs())
def test_property_balanced_valid_deterministic_and_stable(
        inputs: tuple[dict[str, list[str]], dict[str, tuple[bytes, int]], dict[str, Assignment]]) -> None:
    subs, parts, prev = inputs
    got = simple_assign(subs, parts, prev)
    assert set(got) == set(subs)
    for m, a in got.items():  # only the member's existing topics, partitions in range, no empty entries
        for t, ps in a.items():
            name = next(n for n, i in IDS.items() if i == t)
            assert name in subs[m] and name in parts and ps and all(0 <= p < parts[name][1] for p in ps)
    for members, tps in _shares(subs, parts):
        _check_balanced(got, members, tps)
    # deterministic, whatever the order of the inputs
    shuffled = list(subs.items())
    random.Random(0).shuffle(shuffled)
    assert simple_assign(dict(shuffled), dict(reversed(list(parts.items()))), prev) == got
    # a balanced assignment is kept as it is
    assert simple_assign(subs, parts, got) == got


@settings(max_examples=300, deadline=None)
@given(members_st, st.sampled_from("abcdefghijk"), st.integers(1, 20), st.booleans())
def test_property_join_or_leave_moves_only_what_must(members: list[str], other: str, count: int,
                                                     join: bool) -> None:
    """At least as many partitions as members: a joining member's partitions come from the others, who
    gain none; a leaving member's partitions go to the others, who lose none."""
    parts = _parts(t=count)
    before = simple_assign({m: ["t"] for m in members}, parts)
    if join == (other in members) or len(members) + join > count or members == [other]:
        return
    now = [*members, other] if join else [m for m in members if m != other]
    after = simple_assign({m: ["t"] for m in now}, parts, before)
    for m in set(now) & set(members):
        old, new = before[m].get(T, frozenset()), after[m].get(T, frozenset())
        assert (new <= old) if join else (old <= new)
    moved = after[other].get(T, frozenset()) if join else before[other].get(T, frozenset())
    assert _moves(before, after) == len(moved)
