"""Consumer-group lag over time, sampled by the console process while it runs.

Every `interval` seconds one sample of every group's lag per topic (end offset minus committed offset,
summed over partitions) is taken over the protocol and kept in memory, the newest `keep` samples per
group; the group page charts them. Nothing is stored: a restarted console starts a new history.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from odradek.console.cluster import ClusterAdmin

log = logging.getLogger("odradek.console")


@dataclass
class LagHistory:
    """Samples per group: (unix time, lag per topic)."""

    keep: int = 720
    samples: dict[str, deque[tuple[float, dict[str, int]]]] = field(default_factory=dict)

    def add(self, at: float, lags: dict[str, dict[str, int]]) -> None:
        for group, per_topic in lags.items():
            self.samples.setdefault(group, deque(maxlen=self.keep)).append((at, dict(per_topic)))

    def series(self, group: str) -> dict[str, Any]:
        """uPlot-shaped data: times, then total lag and one series per topic (0 where a topic is absent)."""
        rows = list(self.samples.get(group, ()))
        topics = sorted({t for _, per_topic in rows for t in per_topic})
        return {
            "topics": topics,
            "t": [at for at, _ in rows],
            "total": [sum(per_topic.values()) for _, per_topic in rows],
            "by_topic": [[per_topic.get(t, 0) for _, per_topic in rows] for t in topics],
        }


async def sample_forever(cluster: ClusterAdmin, history: LagHistory, interval: float) -> None:
    """Take a sample every `interval` seconds until cancelled; a failed sample is logged and skipped."""
    failing = False
    while True:
        try:
            groups = await asyncio.to_thread(cluster.groups, False)
            lags = await asyncio.to_thread(cluster.group_lags, [g.id for g in groups])
            history.add(time.time(), lags)
            if failing:
                log.info("Lag sampling resumed")
            failing = False
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if not failing:
                log.warning("Lag sampling failed: %s", exc)
            failing = True
        await asyncio.sleep(interval)
