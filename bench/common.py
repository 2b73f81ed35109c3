"""What the bench scripts share: a broker or a ZooKeeper-backed cluster that runs for the length of a
`with` block (stopped by pid, SIGKILL when it does not exit in time, however the block ends), and a produce
that waits for room in the client's queue."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from tests.harness import BrokerCluster, BrokerProcess
from tests.zkharness import ZooKeeperEnsemble


@contextmanager
def running_broker(workdir: Path, overrides: Mapping[str, str] | None = None, port: int = 0,
                   stop_timeout: float = 30.0) -> Iterator[BrokerProcess]:
    """A started single-node broker in `workdir` with these server.properties overrides; `port` (default: a
    free one) is the PLAINTEXT port to wait on, for overrides that name it in `listeners`."""
    broker = BrokerProcess(workdir, port=port, overrides=dict(overrides or {})).start()
    try:
        yield broker
    finally:
        broker.stop(stop_timeout)
        broker.kill()


@contextmanager
def running_cluster(workdir: Path, size: int = 3,
                    overrides: Mapping[str, str] | None = None) -> Iterator[BrokerCluster]:
    """A one-node ZooKeeper in `workdir`/zk and `size` brokers registered in it, in `workdir`/cluster, every
    broker seeing all the others; all stopped when the block ends."""
    with ZooKeeperEnsemble(workdir / "zk", size=1) as zk:
        cluster = BrokerCluster(workdir / "cluster", zk.connect_string, size=size, overrides=dict(overrides or {}))
        try:
            yield cluster.start()
        finally:
            cluster.stop()


def send(p: Producer, topic: str, value: bytes, wait: float = 0.01, **kwargs: Any) -> None:
    """Produce one record (`kwargs`: partition, key, on_delivery...), polling `wait` seconds at a time while
    the client's queue is full."""
    while True:
        try:
            p.produce(topic, value, **kwargs)
            return
        except BufferError:
            p.poll(wait)
