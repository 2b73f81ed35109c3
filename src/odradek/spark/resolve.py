"""Turning startingOffsets/endingOffsets/...Timestamp options into concrete offsets per partition."""

from __future__ import annotations

from collections.abc import Sequence

from odradek.spark.metadata import ClusterOffsets
from odradek.spark.offsets import EARLIEST, LATEST, TP, Offsets, missing_partitions, resolve_specific
from odradek.spark.options import OffsetSpec


def _check_all_named(named: Sequence[TP], tps: Sequence[TP], option: str) -> None:
    extra = sorted(set(named) - set(tps))
    missing = missing_partitions(named, tps)
    if missing or extra:
        raise ValueError(
            f"If {option} contains specific offsets, you must specify all TopicPartitions. "
            f"Use -1 for latest, -2 for earliest. Specified: {sorted(str(t) for t in named)} "
            f"Assigned: {sorted(str(t) for t in tps)}")


def resolve_offsets(spec: OffsetSpec, tps: Sequence[TP], cluster: ClusterOffsets, option: str) -> Offsets:
    """Offsets for every partition of `tps` as `spec` says; `option` names the option in error messages."""
    if not tps:
        return {}
    if spec.kind == "earliest":
        return cluster.earliest(tps)
    if spec.kind == "latest":
        return cluster.latest(tps)
    if spec.kind == "offsets":
        _check_all_named(list(spec.offsets), tps, option)
        wanted = {tp: spec.offsets[tp] for tp in tps}
        need_e = [tp for tp, off in wanted.items() if off == EARLIEST]
        need_l = [tp for tp, off in wanted.items() if off == LATEST]
        return resolve_specific(wanted, cluster.earliest(need_e), cluster.latest(need_l))
    if spec.kind == "timestamps":
        _check_all_named(list(spec.offsets), tps, option)
        times = {tp: spec.offsets[tp] for tp in tps}
    else:
        times = {tp: int(spec.timestamp or 0) for tp in tps}
    found = cluster.for_times(times)
    unmatched = [tp for tp in tps if found.get(tp) is None]
    if unmatched and spec.strategy == "error":
        tp = unmatched[0]
        raise ValueError(
            f"No offset matched from request of topic-partition {tp} and timestamp {times[tp]} ({option}): no "
            "record at or after that time. Set the option ...OffsetsByTimestampStrategy to 'latest' to use the "
            "end of such partitions instead.")
    latest = cluster.latest(unmatched) if unmatched else {}
    return {tp: (found[tp] if found.get(tp) is not None else latest[tp]) for tp in tps}  # type: ignore[misc]
