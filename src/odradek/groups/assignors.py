"""The server-side assignors of KIP-848 consumer groups: `uniform` and `range` (`group.consumer.assignors`).

Both are pure functions from the group's members (their subscribed topics and, for stickiness, the
target assignment they hold now) and the subscribed topics' partition counts to a new target assignment:
member id -> topic id -> partitions. Topics are named by id (16 bytes), as in the heartbeat and in the
records; the assignors never see names.

- `uniform` (Kafka's UniformAssignor): every partition of a subscribed topic goes to one member subscribed
  to it, members' partition counts differ by at most one among members that could take the same
  partitions, and as many partitions as possible stay where they are (sticky), so a join or a leave moves
  only what balance requires.
- `range` (Kafka's RangeAssignor): per topic, the subscribed members in order (instance id if static,
  else member id) get contiguous ranges; the first `partitions % members` get one more. With equal
  subscriptions and partition counts each member gets the same partition numbers of every topic
  (co-partitioning).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

TopicId = bytes
Assignment = dict[TopicId, frozenset[int]]


@dataclass(frozen=True, slots=True)
class AssignorMember:
    member_id: str
    instance_id: str | None
    topics: frozenset[TopicId]
    current: Assignment = field(default_factory=dict)  # the member's target assignment so far (stickiness)


class AssignorError(ValueError):
    """The assignor was given something it cannot assign (never raised for ordinary input)."""


def uniform(members: list[AssignorMember], partitions: Mapping[TopicId, int]) -> dict[str, Assignment]:
    """Balanced and sticky; see the module docstring."""
    counts: dict[str, int] = {m.member_id: 0 for m in members}
    owned: dict[str, set[tuple[TopicId, int]]] = {m.member_id: set() for m in members}
    by_id = {m.member_id: m for m in members}
    eligible: dict[TopicId, list[str]] = {}
    for topic in sorted(partitions):
        subscribers = sorted(m.member_id for m in members if topic in m.topics)
        if subscribers and partitions[topic] > 0:
            eligible[topic] = subscribers
    # 1. keep what each member holds and may still hold (quota first: a member never keeps more than the
    #    most a balanced assignment could give it)
    total = sum(partitions[t] for t in eligible)
    ceiling = -(-total // len(members)) if members else 0
    taken: set[tuple[TopicId, int]] = set()
    for m in sorted(members, key=lambda m: m.member_id):
        for topic, parts in sorted(m.current.items()):
            if topic not in eligible or topic not in m.topics:
                continue
            for p in sorted(parts):
                tp = (topic, p)
                if p < partitions[topic] and tp not in taken and counts[m.member_id] < ceiling:
                    taken.add(tp)
                    owned[m.member_id].add(tp)
                    counts[m.member_id] += 1
    # 2. give every free partition to the least loaded member that subscribes to its topic; topics with
    #    fewer subscribers first, so that members with narrow subscriptions are served
    free = [(t, p) for t in sorted(eligible, key=lambda t: (len(eligible[t]), t)) for p in range(partitions[t])
            if (t, p) not in taken]
    for topic, p in free:
        target = min(eligible[topic], key=lambda mid: (counts[mid], mid))
        owned[target].add((topic, p))
        counts[target] += 1
    # 3. move partitions from members that hold two or more than another member that could take them
    #    (each move lowers the sum of squared counts, so this ends)
    moved = True
    while moved:
        moved = False
        for mid in sorted(owned, key=lambda x: (-counts[x], x)):
            for tp in sorted(owned[mid]):
                target = min(eligible[tp[0]], key=lambda x: (counts[x], x))
                if counts[mid] - counts[target] > 1:
                    owned[mid].discard(tp)
                    owned[target].add(tp)
                    counts[mid] -= 1
                    counts[target] += 1
                    moved = True
    return {mid: _as_assignment(owned[mid]) for mid in by_id}


def range_(members: list[AssignorMember], partitions: Mapping[TopicId, int]) -> dict[str, Assignment]:
    """Contiguous ranges per topic; see the module docstring."""
    out: dict[str, dict[TopicId, set[int]]] = {m.member_id: {} for m in members}
    for topic in sorted(partitions):
        subscribers = sorted((m for m in members if topic in m.topics),
                             key=lambda m: (m.instance_id is None, m.instance_id or "", m.member_id))
        count = partitions[topic]
        if not subscribers or count <= 0:
            continue
        quota, extra = divmod(count, len(subscribers))
        start = 0
        for i, m in enumerate(subscribers):
            n = quota + (1 if i < extra else 0)
            if n:
                out[m.member_id][topic] = set(range(start, start + n))
            start += n
    return {mid: {t: frozenset(ps) for t, ps in a.items()} for mid, a in out.items()}


def _as_assignment(tps: set[tuple[TopicId, int]]) -> Assignment:
    by_topic: dict[TopicId, set[int]] = {}
    for topic, p in tps:
        by_topic.setdefault(topic, set()).add(p)
    return {t: frozenset(ps) for t, ps in by_topic.items()}


ASSIGNORS = {"uniform": uniform, "range": range_}


def assignor_name(configured: str) -> str:
    """`uniform`/`range` from a `group.consumer.assignors` entry: a short name or Kafka's class name
    (org.apache.kafka.coordinator.group.assignor.UniformAssignor)."""
    short = configured.strip().rsplit(".", 1)[-1]
    short = short.removesuffix("Assignor").lower()
    return short


def configured_assignors(value: object) -> list[str]:
    """The assignors a broker offers, in order (the first is the default), from the config value."""
    items = value if isinstance(value, list | tuple) else str(value or "").split(",")
    names = [assignor_name(str(i)) for i in items if str(i).strip()]
    unknown = [n for n in names if n not in ASSIGNORS]
    if unknown:
        raise AssignorError(f"unknown assignor(s) in group.consumer.assignors: {', '.join(unknown)} "
                            f"(this broker has {', '.join(ASSIGNORS)})")
    return list(dict.fromkeys(names)) or ["uniform", "range"]
