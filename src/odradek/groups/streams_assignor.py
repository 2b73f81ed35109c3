"""The task assignor of streams groups (KIP-1071): Kafka's `sticky` streams assignor in its essentials.

A task is a (subtopology id, partition) pair. Members run in processes (a Kafka Streams instance is one
process with one member per stream thread): an active task goes to exactly one member, and each of its
`num_standby` standby copies to a member of a different process than the active copy and the other
standbys, so a process never holds two copies of one task. Work is balanced per member: each member gets
the floor or ceiling of its share of active tasks, then of standby tasks.

Sticky: an active task stays with the member that has it now (or, failing that, a member of the process
that had it: its state is there) while that member has room; a standby likewise stays with its holder.
The remaining tasks go to the least-loaded eligible member, ties broken by member id, so the result is
deterministic for the same inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

Tasks = dict[str, frozenset[int]]  # subtopology id -> partitions
Task = tuple[str, int]


@dataclass(frozen=True, slots=True)
class AssignorMember:
    """What the assignor knows of a member: its process and what it holds now."""

    process_id: str
    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)


@dataclass(slots=True)
class TaskAssignment:
    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)


def task_list(tasks: Mapping[str, Iterable[int]]) -> list[Task]:
    return sorted((s, p) for s, ps in tasks.items() for p in ps)


def to_tasks(tasks: Iterable[Task]) -> Tasks:
    out: dict[str, set[int]] = {}
    for s, p in tasks:
        out.setdefault(s, set()).add(p)
    return {s: frozenset(ps) for s, ps in sorted(out.items())}


def _quota(total: int, members: int) -> int:
    return -(-total // members) if members else 0


def sticky_assign(members: Mapping[str, AssignorMember], task_counts: Mapping[str, int],
                  num_standby: int) -> dict[str, TaskAssignment]:
    """Each member's active and standby tasks for the subtopologies of `task_counts` (subtopology id ->
    number of tasks, its partitions 0..n-1)."""
    if not members:
        return {}
    all_tasks = [(s, p) for s in sorted(task_counts) for p in range(task_counts[s])]
    ids = sorted(members)
    active: dict[str, list[Task]] = {m: [] for m in ids}
    owner: dict[Task, str] = {}
    cap = _quota(len(all_tasks), len(ids))

    def least_loaded(candidates: Iterable[str], load: Mapping[str, list[Task]]) -> str | None:
        return min(candidates, key=lambda m: (len(load[m]), m), default=None)

    previous: dict[Task, str] = {}
    by_process: dict[Task, str] = {}
    for mid in ids:
        for t in task_list(members[mid].active):
            previous.setdefault(t, mid)
            by_process.setdefault(t, members[mid].process_id)
    unplaced: list[Task] = []
    for t in all_tasks:
        had = previous.get(t)
        if had is not None and len(active[had]) < cap:
            active[had].append(t)
            owner[t] = had
        else:
            unplaced.append(t)
    for t in unplaced:
        process = by_process.get(t)
        same = [m for m in ids if members[m].process_id == process and len(active[m]) < cap]
        to = least_loaded(same or ids, active)
        assert to is not None
        active[to].append(t)
        owner[t] = to
    _even_out(active, owner, ids)

    standby: dict[str, list[Task]] = {m: [] for m in ids}
    processes = {members[m].process_id for m in ids}
    copies = min(num_standby, len(processes) - 1)
    if copies > 0:
        scap = _quota(len(all_tasks) * copies, len(ids))
        held_before = {m: set(task_list(members[m].standby)) for m in ids}
        for t in all_tasks:
            used = {members[owner[t]].process_id}
            for _ in range(copies):
                eligible = [m for m in ids if members[m].process_id not in used]
                sticky = [m for m in eligible if t in held_before[m] and len(standby[m]) < scap]
                holder = sticky[0] if sticky else least_loaded(eligible, standby)
                if holder is None:
                    break
                standby[holder].append(t)
                used.add(members[holder].process_id)
    return {m: TaskAssignment(to_tasks(active[m]), to_tasks(standby[m])) for m in ids}


def _even_out(active: dict[str, list[Task]], owner: dict[Task, str], ids: list[str]) -> None:
    """Move tasks from the most to the least loaded member until loads differ by at most one."""
    while True:
        most = max(ids, key=lambda m: (len(active[m]), m))
        least = min(ids, key=lambda m: (len(active[m]), m))
        if len(active[most]) - len(active[least]) <= 1:
            return
        t = active[most].pop()
        active[least].append(t)
        owner[t] = least
