"""Offset planning for the `odradek` Spark source: pure functions, no Kafka client and no Spark.

Offsets travel in the JSON shape of Spark's Kafka source, `{"topicA": {"0": 23, "1": -1}, "topicB": {"0": -2}}`,
where -2 means earliest and -1 latest. This module parses and formats that shape (canonical: topics sorted,
partitions sorted by number, so equal offsets always give equal JSON), spreads a per-trigger record limit
over partitions in proportion to their backlog, and cuts offset ranges into input partitions.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

EARLIEST = -2
LATEST = -1

_OFFSETS_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
_ASSIGN_EXAMPLE = '{"topicA":[0,1],"topicB":[2,4]}'


class TP(NamedTuple):
    """A topic-partition."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


Offsets = dict[TP, int]


class OffsetJsonError(ValueError):
    """An offsets/assign/timestamps option whose JSON is not of the expected shape."""


def _load_object(text: str, what: str, example: str) -> dict[str, Any]:
    try:
        obj = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise OffsetJsonError(f"{what}: {text!r} is not valid JSON ({exc}); expected e.g. {example}") from None
    if not isinstance(obj, dict):
        raise OffsetJsonError(f"{what}: expected a JSON object like {example}, got {text!r}")
    return obj


def _partition_number(key: object, what: str, topic: str) -> int:
    if isinstance(key, bool):
        raise OffsetJsonError(f"{what}: partition {key!r} of topic {topic!r} is not a number")
    try:
        number = int(key)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise OffsetJsonError(f"{what}: partition {key!r} of topic {topic!r} is not a number") from None
    if number < 0:
        raise OffsetJsonError(f"{what}: partition {number} of topic {topic!r} is negative")
    return number


def offsets_from_dict(obj: Mapping[str, Any], what: str = "offsets") -> Offsets:
    """`{"t": {"0": 5}}` (a parsed offsets JSON or a checkpointed offset) -> {TP("t", 0): 5}."""
    out: Offsets = {}
    for topic, parts in obj.items():
        if not isinstance(parts, Mapping):
            raise OffsetJsonError(f"{what}: topic {topic!r} must map partitions to offsets, e.g. {_OFFSETS_EXAMPLE}")
        for part, value in parts.items():
            if isinstance(value, bool) or not isinstance(value, int):
                raise OffsetJsonError(f"{what}: offset {value!r} of {topic}-{part} is not an integer")
            out[TP(str(topic), _partition_number(part, what, str(topic)))] = value
    return out


def parse_offsets_json(text: str, what: str = "offsets") -> Offsets:
    """Parse Spark's per-partition JSON (offsets, or timestamps in ms) into {TP: int}."""
    return offsets_from_dict(_load_object(text, what, _OFFSETS_EXAMPLE), what)


def offsets_to_dict(offsets: Mapping[TP, int]) -> dict[str, dict[str, int]]:
    """{TP: int} -> the canonical nested dict: topics sorted, partitions sorted numerically."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return out


def offsets_to_json(offsets: Mapping[TP, int]) -> str:
    """{TP: int} -> canonical JSON text, e.g. '{"t":{"0":5,"1":7}}'."""
    return json.dumps(offsets_to_dict(offsets), separators=(",", ":"))


def parse_assign_json(text: str) -> list[TP]:
    """Parse the `assign` option, `{"topicA":[0,1],"topicB":[2,4]}`, into a sorted list of TPs."""
    obj = _load_object(text, "assign", _ASSIGN_EXAMPLE)
    out: set[TP] = set()
    for topic, parts in obj.items():
        if not isinstance(parts, list):
            raise OffsetJsonError(f"assign: topic {topic!r} must map to a list of partitions, e.g. {_ASSIGN_EXAMPLE}")
        for part in parts:
            out.add(TP(str(topic), _partition_number(part, "assign", str(topic))))
    if not out:
        raise OffsetJsonError(f"assign: no partitions given in {text!r}")
    return sorted(out)


def backlog(start: Mapping[TP, int], end: Mapping[TP, int]) -> int:
    """Records between start and end over the partitions of end (partitions missing from start count 0)."""
    return sum(max(0, until - start[tp]) for tp, until in end.items() if tp in start)


def rate_limit(limit: int, start: Mapping[TP, int], end: Mapping[TP, int]) -> Offsets:
    """Cap `end` so that about `limit` records are read in total, shared by backlog.

    Each partition gets `limit * its_backlog / total_backlog` records, rounded down, except that a share below
    one record is rounded up so that a small partition is never starved. `start` must hold every partition of
    `end` (resolve new partitions to their earliest offset first). A partition never goes past its `end`.
    """
    if limit <= 0:
        raise ValueError(f"the record limit must be positive, got {limit}")
    sizes = {tp: until - start[tp] for tp, until in end.items() if until - start[tp] > 0}
    total = sum(sizes.values())
    if total <= limit:
        return dict(end)
    capped: Offsets = {}
    for tp, until in end.items():
        size = sizes.get(tp)
        if size is None:
            capped[tp] = until
            continue
        share = limit * (size / total)
        take = math.ceil(share) if share < 1 else math.floor(share)
        capped[tp] = min(until, start[tp] + take)
    return capped


def cap_to_target(end: Mapping[TP, int], start: Mapping[TP, int], target: Mapping[TP, int]) -> Offsets:
    """For Trigger.AvailableNow: never go past the offsets recorded when the trigger began.

    Partitions that appeared after that moment stay where they are (at their start, if any), so the query
    ends even while producers keep writing."""
    out: Offsets = {}
    for tp, until in end.items():
        if tp in target:
            out[tp] = min(until, max(target[tp], start.get(tp, target[tp])))
        elif tp in start:
            out[tp] = start[tp]
    return out


@dataclass(frozen=True)
class OffsetRange:
    """The records [start, until) of one topic-partition: the work of one Spark input partition."""

    tp: TP
    start: int
    until: int

    @property
    def size(self) -> int:
        return max(0, self.until - self.start)


def split_range(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """Cut a range into `parts` contiguous pieces whose sizes differ by at most one record."""
    parts = max(1, min(parts, r.size)) if r.size else 1
    bounds = [r.start + (r.size * i) // parts for i in range(parts + 1)]
    return [OffsetRange(r.tp, bounds[i], bounds[i + 1]) for i in range(parts)]


def plan_ranges(
    start: Mapping[TP, int],
    end: Mapping[TP, int],
    min_partitions: int | None = None,
    max_records_per_partition: int | None = None,
) -> list[OffsetRange]:
    """The non-empty ranges [start, end) per partition, cut for parallelism.

    With `max_records_per_partition`, no piece is larger than that. With `min_partitions`, ranges are cut in
    proportion to their size so that there are about that many pieces (a small range is never cut, a large
    one is cut into `round(size / ideal)` pieces). Every partition of `end` must be in `start`.
    """
    ranges = [OffsetRange(tp, start[tp], end[tp]) for tp in sorted(end) if end[tp] > start[tp]]
    if max_records_per_partition is not None and max_records_per_partition > 0:
        ranges = [piece for r in ranges for piece in split_range(r, math.ceil(r.size / max_records_per_partition))]
    if min_partitions is not None and min_partitions > len(ranges) and ranges:
        total = sum(r.size for r in ranges)
        ideal = total / min_partitions
        ranges = [piece for r in ranges for piece in split_range(r, max(1, round(r.size / ideal)))]
    return ranges


@dataclass(frozen=True)
class Discontinuity:
    """A place where offsets moved in a way that loses records: what Spark calls data loss."""

    tp: TP
    expected: int
    actual: int
    reason: str

    def message(self) -> str:
        return f"{self.tp.topic}-{self.tp.partition}: {self.reason} (expected offset {self.expected}, found {self.actual})"


def find_discontinuities(
    start: Mapping[TP, int],
    end: Mapping[TP, int],
    earliest: Mapping[TP, int] | None = None,
) -> list[Discontinuity]:
    """Data loss visible from offsets alone, between a batch's start and the partitions' current state.

    - a partition of `start` missing from `end`: deleted (or its topic was);
    - `end` below `start`: the log went backwards (topic recreated, or truncated);
    - `earliest` above `start`: records not yet read were deleted (retention, DeleteRecords);
    - a partition new in `end` whose earliest offset is not 0: records written before we saw it are gone.
    """
    earliest = earliest or {}
    problems: list[Discontinuity] = []
    for tp in sorted(start):
        if tp not in end:
            problems.append(Discontinuity(tp, start[tp], -1, "partition was deleted"))
        elif end[tp] < start[tp]:
            problems.append(Discontinuity(tp, start[tp], end[tp], "offsets went backwards (topic recreated?)"))
        elif tp in earliest and earliest[tp] > start[tp]:
            problems.append(Discontinuity(tp, start[tp], earliest[tp], "records were deleted before they were read"))
    for tp in sorted(end):
        if tp not in start and tp in earliest and earliest[tp] > 0:
            problems.append(Discontinuity(tp, 0, earliest[tp], "new partition does not start at offset 0"))
    return problems


def resolve_specific(
    wanted: Mapping[TP, int],
    earliest: Mapping[TP, int],
    latest: Mapping[TP, int],
) -> Offsets:
    """Replace -2/-1 in per-partition offsets by the partitions' earliest/latest offsets."""
    out: Offsets = {}
    for tp, off in wanted.items():
        if off == EARLIEST:
            out[tp] = earliest[tp]
        elif off == LATEST:
            out[tp] = latest[tp]
        elif off < 0:
            raise OffsetJsonError(f"offset {off} of {tp} is neither -2 (earliest), -1 (latest) nor >= 0")
        else:
            out[tp] = off
    return out


def missing_partitions(wanted: Iterable[TP], have: Iterable[TP]) -> list[TP]:
    """Partitions in `have` that `wanted` does not name (Spark requires specific offsets for all of them)."""
    named = set(wanted)
    return sorted(tp for tp in have if tp not in named)
