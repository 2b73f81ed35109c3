"""Every nemesis, once, against a three-broker cluster on its own simulated network (tests/faults/): while
two idempotent acks=all producers, a transactional producer and a committing consumer group run, the fault
lasts past the ZooKeeper session (which ZooKeeper expires, as the broker's log shows), is healed, and the checker reads everything back: nothing acknowledged
is lost or duplicated, order holds per partition, transactions are all-or-nothing, group offsets never go
backward, and the healed cluster serves a fresh producer. The long seeded schedules are
`python bench/faults.py` (README, "Faults")."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.cluster import FaultCluster
from tests.faults.nemesis import NEMESES
from tests.faults.netns import unavailable_reason
from tests.faults.run import Schedule, run

NEW_SESSION = "Re-registering after a new ZooKeeper session"
EXPIRING = ("cut-zookeeper", "pause-broker", "isolate", "split-minority")  # a broker alone past its session


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultCluster]:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"fault tests need network namespaces: {reason}")
    c = FaultCluster(tmp_path_factory.mktemp("faults"), tmpfs_mb=192)
    try:
        c.start()
        yield c
    finally:
        c.close()


@pytest.mark.parametrize("nemesis", sorted(NEMESES))
def test_nothing_acknowledged_is_lost(cluster: FaultCluster, nemesis: str, tmp_path: Path) -> None:
    if nemesis == "fill-disk" and not cluster.tmpfs:
        pytest.skip("fill-disk needs tmpfs mounts (mount -t tmpfs), which this machine refused")
    seed = zlib.crc32(nemesis.encode())
    schedule = Schedule([nemesis], seed, fault_s=9.0, calm_s=2.0, tag=nemesis)
    sessions = {i: cluster.broker(i).output().count(NEW_SESSION) for i in range(cluster.size)}
    report = run(cluster, tmp_path, schedule)
    print("\n".join([*schedule.log, report.summary()]))
    if not report.ok:
        cluster.keep_data(tmp_path)  # the batches, for odradek dump-log
    assert report.ok, "\n".join([f"seed {seed}", *schedule.log, report.summary(), *report.violations])
    assert report.acknowledged > 100  # the workload did run through the fault
    if nemesis == "fill-disk":  # the dir went offline at its first failed write, and the broker halted
        out = cluster.broker(schedule.faults[0].broker or 0).output()
        assert "No space left on device" in out and "Shutdown broker because all log dirs in" in out
    if nemesis in EXPIRING:  # the fault outlasted the session: ZooKeeper expired it, the broker noticed
        struck = schedule.faults[0].broker
        assert struck is not None and cluster.broker(struck).output().count(NEW_SESSION) > sessions[struck]
