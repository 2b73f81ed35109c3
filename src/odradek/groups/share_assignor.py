"""The share groups' `simple` assignor (`group.share.assignors`): Kafka 4.1's share-group
SimpleAssignor rules, balance before stickiness. When every member subscribes to the same topics the
partitions of all of them are shared out together, else each topic on its own over its subscribers (so a
member on two topics gets its share of each). In one such share of P partitions over M members each
partition goes to ceil(M/P) members (one when P >= M, several when members outnumber partitions) and each
member gets its quota of those ceil(M/P)*P assignments, the quotas differing by one at most. Each member
starts from the partitions the group's current target gives it (of topics it still subscribes to and that
still exist under that id); a member above its quota gives up its most shared partitions, then its highest;
a partition read by too many members loses the members that hold the most; then the partitions short of
members are dealt, in topic-name and index order, to the members short of partitions, the neediest (then
the lowest member id) first. So a balanced assignment is kept as it is, and with at least as many
partitions as members a join takes from the others only the newcomer's share (they gain nothing) and a
leave moves only the leaver's partitions (the others lose nothing). Where Kafka leaves a choice to
hash-map order (which members get the larger quotas, which partitions a member gives up, which member
takes a partition) this one is deterministic: the larger quotas go to the members keeping the most. When
dealing alone cannot finish (with more members than partitions, a partition short of members whose only
candidates already read it) another reader moves to it and the short member takes its place; Kafka leaves
that slight imbalance.
"""

from __future__ import annotations

from collections.abc import Iterable

Assignment = dict[bytes, frozenset[int]]  # topic id -> partitions
TP = tuple[bytes, int]  # (topic id, partition)


def simple_assign(subscriptions: dict[str, list[str]], partitions: dict[str, tuple[bytes, int]],
                  previous: dict[str, Assignment] | None = None,
                  assignable: set[TP] | None = None) -> dict[str, Assignment]:
    """Each member's partitions (see the module docstring). `subscriptions`: member id → topic names;
    `partitions`: topic name → (topic id, partition count) of the topics that exist; `previous`: member id →
    the partitions the group's current target gives it (what stays where it is as long as balance allows);
    `assignable`: if given, only these partitions are shared out (Kafka's assignable share partitions, those
    whose share-partition state is initialized)."""
    def targets(topics: Iterable[str]) -> list[TP]:
        return [(partitions[t][0], p) for t in sorted(topics) if t in partitions
                for p in range(partitions[t][1]) if assignable is None or (partitions[t][0], p) in assignable]

    held = {m: {(t, p) for t, ps in (previous or {}).get(m, {}).items() for p in ps} for m in subscriptions}
    topic_sets = {frozenset(ts) for ts in subscriptions.values()}
    if len(topic_sets) == 1:  # homogeneous: the partitions of all the topics shared out together
        shares = [(sorted(subscriptions), targets(next(iter(topic_sets))))]
    else:  # heterogeneous: each topic on its own, over the members subscribed to it
        shares = [(sorted(m for m, ts in subscriptions.items() if t in ts), targets([t]))
                  for t in sorted(frozenset().union(*topic_sets))]
    out: dict[str, set[TP]] = {m: set() for m in subscriptions}
    for members, tps in shares:
        if members and tps:
            for m, got in _Share(members, tps, held).assign().items():
                out[m] |= got
    by_topic: dict[str, dict[bytes, set[int]]] = {m: {} for m in subscriptions}
    for m, got in out.items():
        for t, p in got:
            by_topic[m].setdefault(t, set()).add(p)
    return {m: {t: frozenset(ps) for t, ps in a.items()} for m, a in by_topic.items()}


class _Share:
    """Kafka's SimpleAssignor over one set of partitions and the members sharing them out: each partition
    goes to `sharing` = ceil(members / partitions) members, each member gets its quota (the sharing×partitions
    assignments spread evenly: the counts differ by one at most); a member keeps what it held as far as its
    quota and the partitions' sharing allow, and only the rest is dealt out."""

    def __init__(self, members: list[str], tps: list[TP], held: dict[str, set[TP]]) -> None:
        self.members, self.tps = members, tps
        self.sharing = -(-len(members) // len(tps))
        low, extra = divmod(self.sharing * len(tps), len(members))
        self.got = {m: held.get(m, set()) & set(tps) for m in members}
        # the one-more quotas go to the members that keep the most (Kafka: to members in hash order)
        ranked = sorted(members, key=lambda m: (-len(self.got[m]), m))
        self.quota = {m: low + (i < extra) for i, m in enumerate(ranked)}
        self.holders: dict[TP, set[str]] = {tp: set() for tp in tps}
        for m in members:
            for tp in self.got[m]:
                self.holders[tp].add(m)

    def assign(self) -> dict[str, set[TP]]:
        got, holders = self.got, self.holders
        for m in self.members:  # overfilled members give up their most shared partitions, then their last
            excess = len(got[m]) - self.quota[m]
            for tp in sorted(got[m], key=lambda tp: (len(holders[tp]), tp), reverse=True)[:max(0, excess)]:
                self._drop(m, tp)
        for tp in self.tps:  # over-shared partitions lose the members that hold the most
            excess = len(holders[tp]) - self.sharing
            for m in sorted(holders[tp], key=lambda m: (len(got[m]), m), reverse=True)[:max(0, excess)]:
                self._drop(m, tp)
        while True:
            for tp in self.tps:  # partitions short of members go to members short of partitions, neediest first
                while len(holders[tp]) < self.sharing:
                    free = [m for m in self._short() if m not in holders[tp]]
                    if not free:
                        break
                    self._give(min(free, key=lambda m: (len(got[m]) - self.quota[m], m)), tp)
            if not self._swap():
                return got

    def _short(self) -> list[str]:
        return [m for m in self.members if len(self.got[m]) < self.quota[m]]

    def _swap(self) -> bool:
        """The case dealing alone cannot finish (only with more members than partitions): a partition is
        short of a member, but every member short of a partition already reads it. A reader of another
        partition moves to it and the short member takes its place (Kafka leaves this imbalance)."""
        for tp in (tp for tp in self.tps if len(self.holders[tp]) < self.sharing):
            for short in self._short():
                for other in (o for o in self.tps if o not in self.got[short]):
                    mover = next((m for m in sorted(self.holders[other]) if tp not in self.got[m]), None)
                    if mover is not None:
                        self._drop(mover, other)
                        self._give(mover, tp)
                        self._give(short, other)
                        return True
        return False

    def _drop(self, m: str, tp: TP) -> None:
        self.got[m].discard(tp)
        self.holders[tp].discard(m)

    def _give(self, m: str, tp: TP) -> None:
        self.got[m].add(tp)
        self.holders[tp].add(m)
