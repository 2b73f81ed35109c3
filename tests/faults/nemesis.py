"""The faults a schedule draws from, each a function (cluster, rng) -> Fault: what it did, and how to undo
it. Durations are the schedule's business (run.py); a pause or a cut from ZooKeeper that lasts past
the session timeout (6 s) makes ZooKeeper expire the broker's session while it is still alive."""

from __future__ import annotations

import errno
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from random import Random

from tests.faults.cluster import FaultCluster


@dataclass
class Fault:
    description: str
    heal: Callable[[], None]
    broker: int | None = None  # the broker it struck, if one


def _broker(c: FaultCluster, rng: Random) -> int:
    return rng.randrange(c.size)


def isolate_broker(c: FaultCluster, rng: Random) -> Fault:
    i = _broker(c, rng)
    c.net.isolate(f"b{i}")
    return Fault(f"isolate b{i} from every other host", c.net.heal, i)


def split_minority(c: FaultCluster, rng: Random) -> Fault:
    """One broker alone on the minority side; ZooKeeper, the other brokers and the clients together."""
    i = _broker(c, rng)
    c.net.split([f"b{i}"])
    return Fault(f"split b{i} | the rest", c.net.heal, i)


def split_with_zookeeper(c: FaultCluster, rng: Random) -> Fault:
    """ZooKeeper on the minority side with one broker; the other brokers keep the clients."""
    i = _broker(c, rng)
    c.net.split([f"b{i}", "zk"])
    return Fault(f"split b{i}+zk | other brokers+clients", c.net.heal, i)


def cut_from_zookeeper(c: FaultCluster, rng: Random) -> Fault:
    i = _broker(c, rng)
    c.net.cut(f"b{i}", "zk")
    return Fault(f"cut b{i} from ZooKeeper only", c.net.heal, i)


def cut_from_brokers(c: FaultCluster, rng: Random) -> Fault:
    """A broker (a leader of some partitions, a follower of others) cut from the other brokers only."""
    i = _broker(c, rng)
    for j in range(c.size):
        if j != i:
            c.net.cut(f"b{i}", f"b{j}")
    return Fault(f"cut b{i} from the other brokers only", c.net.heal, i)


def pause_broker(c: FaultCluster, rng: Random) -> Fault:
    i = _broker(c, rng)
    c.broker(i).signal(signal.SIGSTOP)
    return Fault(f"pause b{i} (SIGSTOP)", lambda: c.broker(i).signal(signal.SIGCONT), i)


def pause_zookeeper(c: FaultCluster, rng: Random) -> Fault:
    zk = c.procs["zk"]
    zk.signal(signal.SIGSTOP)
    return Fault("pause ZooKeeper (SIGSTOP)", lambda: zk.signal(signal.SIGCONT))


def kill_broker(c: FaultCluster, rng: Random) -> Fault:
    i = _broker(c, rng)
    c.broker(i).kill()
    return Fault(f"kill -9 b{i}", lambda: c.restart_broker(i), i)


def _fill(path: Path) -> None:
    """Write zeros to `path` until its file system has not one byte left (the broker keeps writing
    meanwhile, so no size computed beforehand would do)."""
    chunk = bytes(1 << 20)
    size = len(chunk)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        while size:
            try:
                os.write(fd, chunk[:size])
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                size //= 2
    finally:
        os.close(fd)


def fill_disk(c: FaultCluster, rng: Random) -> Fault:
    """A broker's only log dir (a tmpfs) fills up: its next write fails, the dir goes offline and the
    broker, with no dir left, halts; healing frees the space and starts the broker again."""
    if not c.tmpfs:
        raise RuntimeError("fill-disk needs the brokers' log dirs on tmpfs (FaultCluster(tmpfs_mb=...))")
    i = _broker(c, rng)
    filler = c.data_dir(i) / "filler"
    _fill(filler)

    def heal() -> None:
        filler.unlink(missing_ok=True)
        if not c.broker(i).alive():
            c.restart_broker(i)

    return Fault(f"fill b{i}'s log dir", heal, i)


NEMESES: dict[str, Callable[[FaultCluster, Random], Fault]] = {
    "fill-disk": fill_disk,
    "isolate": isolate_broker,
    "split-minority": split_minority,
    "split-zookeeper": split_with_zookeeper,
    "cut-zookeeper": cut_from_zookeeper,
    "cut-brokers": cut_from_brokers,
    "pause-broker": pause_broker,
    "pause-zookeeper": pause_zookeeper,
    "kill": kill_broker,
}
