"""Offset planning of the odradek source: pure functions, no Kafka and no Spark."""

from __future__ import annotations

import json

import pytest

from odradek.spark.offsets import (
    TP,
    OffsetJsonError,
    OffsetRange,
    backlog,
    cap_to_target,
    find_discontinuities,
    offsets_from_dict,
    offsets_to_dict,
    offsets_to_json,
    parse_assign_json,
    parse_offsets_json,
    plan_ranges,
    rate_limit,
    resolve_specific,
    split_range,
)

A0, A1, A2, B0 = TP("a", 0), TP("a", 1), TP("a", 2), TP("b", 0)


def test_parse_spark_offsets_json() -> None:
    text = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
    assert parse_offsets_json(text) == {TP("topicA", 0): 23, TP("topicA", 1): -1, TP("topicB", 0): -2}


def test_format_is_canonical_and_round_trips() -> None:
    offs = {TP("b", 0): 5, TP("a", 10): 7, TP("a", 2): 9}
    assert offsets_to_json(offs) == '{"a":{"2":9,"10":7},"b":{"0":5}}'
    assert offsets_to_dict(offs) == {"a": {"2": 9, "10": 7}, "b": {"0": 5}}
    assert list(offsets_to_dict(offs)["a"]) == ["2", "10"]  # numeric order, not string order
    assert parse_offsets_json(offsets_to_json(offs)) == offs
    assert offsets_from_dict(json.loads(offsets_to_json(offs))) == offs


@pytest.mark.parametrize("bad", ["", "[1,2]", '{"a": 5}', '{"a": {"x": 1}}', '{"a": {"0": "1"}}',
                                 '{"a": {"0": 1.5}}', '{"a": {"-1": 3}}', "not json"])
def test_bad_offsets_json(bad: str) -> None:
    with pytest.raises(OffsetJsonError):
        parse_offsets_json(bad, "startingOffsets")


def test_parse_assign() -> None:
    assert parse_assign_json('{"topicA":[0,1],"topicB":[2,4]}') == [
        TP("topicA", 0), TP("topicA", 1), TP("topicB", 2), TP("topicB", 4)]
    for bad in ('{"a": 1}', "{}", '{"a": ["x"]}', "[]"):
        with pytest.raises(OffsetJsonError):
            parse_assign_json(bad)


def test_resolve_specific_uses_earliest_and_latest() -> None:
    wanted = {A0: -2, A1: -1, A2: 42}
    assert resolve_specific(wanted, {A0: 3}, {A1: 99}) == {A0: 3, A1: 99, A2: 42}
    with pytest.raises(OffsetJsonError):
        resolve_specific({A0: -3}, {}, {})


def test_rate_limit_splits_by_backlog() -> None:
    start = {A0: 0, A1: 0, A2: 100}
    end = {A0: 600, A1: 300, A2: 200}  # backlogs 600, 300, 100
    capped = rate_limit(100, start, end)
    assert capped == {A0: 60, A1: 30, A2: 110}
    assert backlog(start, capped) == 100


def test_rate_limit_never_starves_small_partitions_and_never_passes_end() -> None:
    start = {A0: 0, A1: 0}
    end = {A0: 10_000, A1: 1}
    capped = rate_limit(10, start, end)
    assert capped[A1] == 1  # a share below one record rounds up
    assert capped[A0] == 9  # 10 * 10000/10001 rounded down
    assert all(capped[tp] <= end[tp] for tp in end)


def test_rate_limit_no_cap_when_backlog_fits_and_ignores_empty_partitions() -> None:
    start = {A0: 5, A1: 7}
    end = {A0: 8, A1: 7}
    assert rate_limit(100, start, end) == end
    assert rate_limit(2, start, end) == {A0: 7, A1: 7}
    with pytest.raises(ValueError):
        rate_limit(0, start, end)


def test_rate_limit_total_stays_within_limit_plus_rounding() -> None:
    start = {TP("t", p): 0 for p in range(7)}
    end = {TP("t", p): 1000 * (p + 1) for p in range(7)}
    capped = rate_limit(1234, start, end)
    assert 1234 - 7 <= backlog(start, capped) <= 1234


def test_cap_to_target_for_available_now() -> None:
    start = {A0: 5, A1: 10}
    end = {A0: 50, A1: 60, A2: 7}  # A2 appeared after the trigger began
    target = {A0: 40, A1: 60}
    assert cap_to_target(end, start, target) == {A0: 40, A1: 60}


def test_split_range_even_pieces() -> None:
    pieces = split_range(OffsetRange(A0, 10, 20), 3)
    assert [(p.start, p.until) for p in pieces] == [(10, 13), (13, 16), (16, 20)]
    assert split_range(OffsetRange(A0, 0, 2), 5) == [OffsetRange(A0, 0, 1), OffsetRange(A0, 1, 2)]


def test_plan_ranges_skips_empty_and_sorts() -> None:
    ranges = plan_ranges({B0: 0, A1: 3, A0: 9}, {B0: 5, A1: 3, A0: 10})
    assert ranges == [OffsetRange(A0, 9, 10), OffsetRange(B0, 0, 5)]


def test_plan_ranges_min_partitions_cuts_big_ranges_in_proportion() -> None:
    ranges = plan_ranges({A0: 0, A1: 0}, {A0: 900, A1: 100}, min_partitions=10)
    by_tp = {tp: [r for r in ranges if r.tp == tp] for tp in (A0, A1)}
    assert len(by_tp[A0]) == 9 and len(by_tp[A1]) == 1
    assert sum(r.size for r in ranges) == 1000
    assert by_tp[A0][0].start == 0 and by_tp[A0][-1].until == 900


def test_plan_ranges_max_records_per_partition() -> None:
    ranges = plan_ranges({A0: 0}, {A0: 1001}, max_records_per_partition=250)
    assert [r.size for r in ranges] == [200, 200, 200, 200, 201]
    assert all(a.until == b.start for a, b in zip(ranges, ranges[1:], strict=False))


def test_find_discontinuities() -> None:
    start = {A0: 10, A1: 10, A2: 10}
    end = {A0: 5, A2: 20, B0: 9}  # A0 went back, A1 deleted, B0 new
    problems = find_discontinuities(start, end, earliest={A2: 15, B0: 4})
    found = {(p.tp, p.reason.split()[0]) for p in problems}
    assert found == {(A0, "offsets"), (A1, "partition"), (A2, "records"), (B0, "new")}
    msg = next(p for p in problems if p.tp == A2).message()
    assert "a-2" in msg and "10" in msg and "15" in msg
    assert find_discontinuities({A0: 1}, {A0: 2, B0: 0}, earliest={B0: 0}) == []
