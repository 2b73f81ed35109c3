"""The leader's incremental cooperative assignment (`compatible` protocol, Kafka's IncrementalCooperativeAssignor
in outline). Members keep what they run across rebalances and report it in their metadata; the leader revokes
what no longer exists (and duplicates), and gives what nobody runs to the least loaded members. What a member ran
before it vanished ("lost") is held back for `scheduled.rebalance.max.delay.ms`, so a worker that comes back soon
gets its work again; the members are told the delay and rejoin when it ends. When nothing is held back, members
above the fair share (the total divided among the members, rounded up) are revoked their excess, which the
following round deals to the others. Assignments are incremental: each member is sent only what it gains and
what it loses."""

from __future__ import annotations

from dataclasses import dataclass, field

from odradek.connect.connect_protocol import NO_ERROR, Assignment
from odradek.connect.group_member import Member

TaskId = tuple[str, int]


@dataclass
class LeaderMemory:
    """What the leader assigned or held back last time (to tell lost work from new work)."""
    connectors: set[str] = field(default_factory=set)
    tasks: set[TaskId] = field(default_factory=set)
    deadline: float | None = None


def cooperative_assign(members: list[Member], connectors: list[str], task_counts: dict[str, int], leader: str,
                       leader_url: str, offset: int, memory: LeaderMemory, delay_ms: int, now: float,
                       version: int = 1) -> dict[str, Assignment]:
    ids = sorted(m.member_id for m in members)
    configured_c = set(connectors)
    configured_t = {(n, i) for n in connectors for i in range(task_counts.get(n, 0))}
    plan = {mid: Assignment(NO_ERROR, leader, leader_url, offset, version=version) for mid in ids}
    keep_c: dict[str, set[str]] = {}
    keep_t: dict[str, set[TaskId]] = {}
    seen_c: set[str] = set()
    seen_t: set[TaskId] = set()
    for m in sorted(members, key=lambda m: m.member_id):
        previous = m.state.previous
        held_c = set(previous.connectors) if previous else set()
        held_t = set(previous.tasks) if previous else set()
        gone_c = (held_c - configured_c) | (held_c & seen_c)
        gone_t = (held_t - configured_t) | (held_t & seen_t)
        plan[m.member_id].revoked_connectors += sorted(gone_c)
        plan[m.member_id].revoked_tasks += sorted(gone_t)
        keep_c[m.member_id], keep_t[m.member_id] = held_c - gone_c, held_t - gone_t
        seen_c |= keep_c[m.member_id]
        seen_t |= keep_t[m.member_id]
    lost_c = (memory.connectors - seen_c) & configured_c
    lost_t = (memory.tasks - seen_t) & configured_t
    held_back_c: set[str] = set()
    held_back_t: set[TaskId] = set()
    if (lost_c or lost_t) and delay_ms > 0:
        if memory.deadline is None:
            memory.deadline = now + delay_ms / 1000
        if now < memory.deadline:
            held_back_c, held_back_t = lost_c, lost_t
            delay = max(int((memory.deadline - now) * 1000), 1)
            for a in plan.values():
                a.delay_ms = delay
        else:
            memory.deadline = None
    else:
        memory.deadline = None
    load = {mid: len(keep_c[mid]) + len(keep_t[mid]) for mid in ids}

    def least_loaded() -> str:
        return min(ids, key=lambda mid: (load[mid], mid))

    for name in sorted(configured_c - seen_c - held_back_c):
        mid = least_loaded()
        plan[mid].connectors.append(name)
        load[mid] += 1
    for task in sorted(configured_t - seen_t - held_back_t):
        mid = least_loaded()
        plan[mid].tasks.append(task)
        load[mid] += 1
    if not held_back_c and not held_back_t:
        fair = -(-sum(load.values()) // len(ids))
        for mid in ids:
            excess = load[mid] - fair
            for task in sorted(keep_t[mid], reverse=True)[:max(excess, 0)]:
                plan[mid].revoked_tasks.append(task)
                keep_t[mid].discard(task)
                excess -= 1
            for name in sorted(keep_c[mid], reverse=True)[:max(excess, 0)]:
                plan[mid].revoked_connectors.append(name)
                keep_c[mid].discard(name)
    memory.connectors = held_back_c.union(*keep_c.values(), *(set(a.connectors) for a in plan.values()))
    memory.tasks = held_back_t.union(*keep_t.values(), *(set(a.tasks) for a in plan.values()))
    return plan
