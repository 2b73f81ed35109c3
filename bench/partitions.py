"""Partition scale: how creation, metadata, memory and restart cost grow with the partition count.

For each size (1,000 / 10,000 / 50,000 partitions by default) a fresh broker (or, with --cluster, a fresh
3-broker cluster on a 1-node ZooKeeper) gets topics of up to 1,000 partitions each until it holds that
many; the script prints creation time per partition (it should stay flat: the last column is the ratio to
the smallest size's, measured in the same run), the time of a Metadata request for all topics, the
broker's resident memory per partition (RSS above the same broker's RSS with no topics), the time a
restart takes until every partition has a leader again, and produce throughput spread over 10,000
partitions (when the size allows).

    python bench/partitions.py                     # single-node, 1k/10k/50k
    python bench/partitions.py --cluster           # 3 brokers, replication factor 1
    python bench/partitions.py --sizes 500,2000    # CI-sized
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil  # noqa: E402
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from tests.harness import BrokerProcess  # noqa: E402

from bench.common import running_broker, running_cluster, send  # noqa: E402

TOPIC_SIZE = 1000


def rss(pids: list[int]) -> int:
    return sum(psutil.Process(pid).memory_info().rss for pid in pids)


def leaders_ready(admin: AdminClient, topics: list[str], partitions: int) -> bool:
    md = admin.list_topics(timeout=60)
    have = 0
    for t in topics:
        tm = md.topics.get(t)
        if tm is None or tm.error is not None:
            return False
        have += sum(1 for p in tm.partitions.values() if p.leader >= 0 and p.error is None)
    return have == partitions


def wait_ready(admin: AdminClient, topics: list[str], partitions: int, timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while not leaders_ready(admin, topics, partitions):
        if time.monotonic() > deadline:
            raise SystemExit(f"not every one of {partitions} partitions has a leader after {timeout}s")
        time.sleep(0.2)


def create(admin: AdminClient, total: int) -> tuple[list[str], float]:
    topics: list[str] = []
    start = time.perf_counter()
    left = total
    while left > 0:
        n = min(TOPIC_SIZE, left)
        name = f"scale-{len(topics):03d}-{uuid.uuid4().hex[:6]}"
        admin.create_topics([NewTopic(name, n, 1)], request_timeout=600)[name].result(600)
        topics.append(name)
        left -= n
    wait_ready(admin, topics, total)
    return topics, time.perf_counter() - start


def produce_spread(bootstrap: str, topics: list[str], partitions: int, n: int = 200_000) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "1",
                  "queue.buffering.max.messages": 2_000_000})
    targets = [(t, i) for t in topics for i in range(TOPIC_SIZE)][:partitions]
    value = b"v" * 100
    start = time.perf_counter()
    for i in range(n):
        t, part = targets[i % len(targets)]
        send(p, t, value, partition=part)
    if p.flush(300):
        raise SystemExit("produce did not finish")
    return n / (time.perf_counter() - start)


@contextmanager
def servers(tmp: Path, cluster: bool) -> Iterator[tuple[str, list[BrokerProcess]]]:
    overrides = {"num.partitions": "1", "log.retention.check.interval.ms": "300000"}
    if not cluster:
        with running_broker(tmp / "broker", overrides, stop_timeout=300) as b:
            yield b.bootstrap, [b]
        return
    with running_cluster(tmp, overrides=overrides) as c:
        yield c.bootstrap, c.brokers


def restart(brokers: list[BrokerProcess]) -> float:
    for b in brokers:
        b.stop(600)
    start = time.perf_counter()
    for b in brokers:
        b.start(600)
    return start


def run(size: int, cluster: bool, base: float | None) -> float:
    with tempfile.TemporaryDirectory() as tmp, servers(Path(tmp), cluster) as (bootstrap, brokers):
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
        admin.list_topics(timeout=30)
        idle = rss([b.pid for b in brokers if b.pid])
        topics, took = create(admin, size)
        per = took / size
        t0 = time.perf_counter()
        admin.list_topics(timeout=300)
        md_ms = (time.perf_counter() - t0) * 1000
        grown = rss([b.pid for b in brokers if b.pid]) - idle
        start = restart(brokers)
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
        wait_ready(admin, topics, size)
        restart_s = time.perf_counter() - start
        rate = produce_spread(bootstrap, topics, 10_000) if size >= 10_000 else 0.0
        flat = per / base if base else 1.0
        print(f"{size:>8} {took:>9.1f} {per * 1e3:>9.2f} {md_ms:>10.0f} {grown / size / 1024:>10.1f} "
              f"{restart_s:>10.1f} {rate:>12.0f} {flat:>8.2f}", flush=True)
        return per


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,50000", help="comma-separated partition counts")
    ap.add_argument("--cluster", action="store_true", help="a 3-broker cluster on ZooKeeper instead of one broker")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'mode':>8}: {'3-broker cluster' if args.cluster else 'single-node'}")
    print(f"{'parts':>8} {'create s':>9} {'ms/part':>9} {'md all ms':>10} {'KB/part':>10} {'restart s':>10} "
          f"{'msgs/s@10k':>12} {'x first':>8}")
    base = None
    for size in sizes:
        per = run(size, args.cluster, base)
        base = base or per
    return 0


if __name__ == "__main__":
    sys.exit(main())
