"""The checker of a fault run's history (events as tests/faults/client.py writes them), pure logic:

  - every acknowledged record is read (lost: acknowledged, never read);
  - no record is read twice (idempotent producers promise it): given where each copy came from (the
    batch headers in the brokers' logs, tests/faults/provenance.py), a record the client itself sent
    again under a new producer epoch is counted apart (`resent`), as no broker can recognise it;
  - per partition, a producer's records are read in the order it sent them;
  - each transaction is visible all-or-nothing: committed ones whole, aborted ones not at all;
  - committed group offsets never go backward: after healing, each partition's committed offset is at
    least the last one a commit acknowledged.

`check` returns a Report: counts for the summary line, and for each violation the events around it."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.faults.provenance import Copy, resent_by_client

# partition, offsets -> the producer session of the batch holding each offset
Provenance = Callable[[int, list[int]], dict[int, Copy]]


def load(*paths: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for path in paths:
        if path.exists():
            events.extend(json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return events


def _seq(value: str) -> tuple[str, int] | None:
    """`w1-42` -> ("w1", 42); None for values of other shapes (transactions)."""
    head, _, tail = value.rpartition("-")
    return (head, int(tail)) if head and tail.isdigit() and "-t" not in value else None


@dataclass
class Report:
    acknowledged: int = 0
    read: int = 0
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    resent: list[str] = field(default_factory=list)  # read twice, each copy from another producer session
    out_of_order: list[str] = field(default_factory=list)
    transactions: Counter[str] = field(default_factory=Counter)
    torn_transactions: list[str] = field(default_factory=list)
    offsets_backward: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)  # one line each, with the events around
    notes: list[str] = field(default_factory=list)  # what is not a violation but worth a look

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.out_of_order or self.torn_transactions
                    or self.offsets_backward)

    def summary(self) -> str:
        txns = ", ".join(f"{k} {v}" for k, v in sorted(self.transactions.items())) or "none"
        resent = f" (+{len(self.resent)} re-sent by the client under a new producer epoch)" if self.resent else ""
        return (f"acknowledged {self.acknowledged}, read {self.read}, lost {len(self.lost)}, "
                f"duplicated {len(self.duplicated)}{resent}, out of order {len(self.out_of_order)}; "
                f"transactions: {txns}, torn {len(self.torn_transactions)}; group offsets backward {len(self.offsets_backward)}")


def _around(events: list[dict[str, Any]], value: str, width: int = 3) -> str:
    """The events that mention `value`, with their neighbours in time."""
    ordered = sorted(events, key=lambda e: e.get("t", 0))
    marks = [i for i, e in enumerate(ordered) if e.get("v") == value or value in e.get("values", ())]
    lines: list[str] = []
    for i in marks[:2]:
        lines.extend(json.dumps(e) for e in ordered[max(0, i - width):i + width + 1])
    return "\n    ".join(lines)


def _resent(reads: list[dict[str, Any]], values: list[str], provenance: Provenance) -> dict[str, list[Copy]]:
    """The values among `values` whose copies were each written by another producer session, with them."""
    where: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for e in reads:
        if e["v"] in values:
            where[e["v"]].append((e["p"], e["o"]))
    out: dict[str, list[Copy]] = {}
    for v, spots in where.items():
        by_partition: dict[int, list[int]] = defaultdict(list)
        for p, o in spots:
            by_partition[p].append(o)
        copies: list[Copy] = []
        for p, offsets in by_partition.items():
            found = provenance(p, offsets)
            copies.extend(found[o] for o in offsets if o in found)
        if len(copies) == len(spots) and resent_by_client(copies):
            out[v] = copies
    return out


def check(events: Iterable[dict[str, Any]], provenance: Provenance | None = None) -> Report:
    """`provenance` (for the idempotent producers' topic) lets duplicates the client made be told apart."""
    events = list(events)
    r = Report()
    acked = {e["v"]: e for e in events if e["op"] == "ack"}
    reads = [e for e in events if e["op"] == "read"]
    r.acknowledged, r.read = len(acked), len(reads)
    seen = Counter(e["v"] for e in reads)
    r.lost = sorted(v for v in acked if v not in seen)
    r.duplicated = sorted(v for v, n in seen.items() if n > 1)
    if provenance is not None and r.duplicated:
        resent = _resent(reads, [v for v in r.duplicated if _seq(v) is not None], provenance)
        r.resent = sorted(resent)
        r.duplicated = [v for v in r.duplicated if v not in resent]
        for v in r.resent[:5]:
            r.notes.append(f"{v} re-sent by the client: " + ", ".join(
                f"offset {c.offset} (producer {c.producer_id} epoch {c.producer_epoch} sequence {c.sequence})"
                for c in resent[v]))
    else:
        resent = {}
    last: dict[tuple[int, str], tuple[int, str]] = {}
    for e in sorted(reads, key=lambda e: (e["p"], e["o"])):
        s = _seq(e["v"])
        if s is None:
            continue
        key = (e["p"], s[0])
        prev = last.get(key)
        if prev is not None and s[1] < prev[0] and e["v"] not in resent:
            r.out_of_order.append(f"{e['v']} at {e['p']}/{e['o']} after {prev[1]}")
        last[key] = (s[1], e["v"])
    for t in (e for e in events if e["op"] == "txn"):
        r.transactions[t["result"]] += 1
        present = sum(1 for v in t["values"] if v in seen)
        whole, none = present == len(t["values"]), present == 0
        if (t["result"] == "commit" and not whole) or (t["result"] == "abort" and not none) or not (whole or none):
            r.torn_transactions.append(f"transaction {t['id']} ({t['result']}): {present} of {len(t['values'])} "
                                       "values visible")
    acked_commits: dict[int, int] = defaultdict(lambda: -1)
    for e in events:
        if e["op"] == "commit":
            acked_commits[e["p"]] = max(acked_commits[e["p"]], e["o"])
    for e in (e for e in events if e["op"] == "committed"):
        if e["o"] < acked_commits[e["p"]]:
            r.offsets_backward.append(f"partition {e['p']}: committed {e['o']} after a commit of "
                                      f"{acked_commits[e['p']]} was acknowledged")
    for v in r.lost[:5]:
        r.violations.append(f"lost {v}:\n    {_around(events, v)}")
    for v in r.duplicated[:5]:
        r.violations.append(f"duplicated {v}:\n    {_around(events, v)}")
    r.violations += r.out_of_order[:5] + r.torn_transactions[:5] + r.offsets_backward[:5]
    return r
