"""Where the broker itself saturates: produce and consume with 1, 2 and 4 client processes at once (each
its own confluent-kafka client on its own partition), so that the Python client is not the limit, and
the broker's CPU per million messages beside each figure (user + system time of the broker process,
from psutil, over the run). When the rate stops growing with more clients while the broker's CPU share
sits near one core, the broker's event loop is the ceiling.

    python bench/ceiling.py              # 1,000,000 x 100 B per set-up
    python bench/ceiling.py --quick      # 200,000
    python bench/ceiling.py --clients 1,2,4,8
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
import uuid
from multiprocessing.synchronize import Barrier
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil  # noqa: E402
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from bench.common import running_broker, send  # noqa: E402

SIZE = 100


def producer_main(bootstrap: str, topic: str, partition: int, n: int, start: Barrier) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1_000_000,
                  "queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 2_000_000})
    value = b"v" * SIZE
    start.wait()
    for _ in range(n):
        send(p, topic, value, 0.005, partition=partition)
    if p.flush(300):
        raise SystemExit("producer: not everything was delivered")


def consumer_main(bootstrap: str, topic: str, partition: int, n: int, start: Barrier) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "ceiling-" + uuid.uuid4().hex,
                  "enable.auto.commit": False, "queued.min.messages": 1_000_000,
                  "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 10_485_760})
    c.assign([TopicPartition(topic, partition, -2)])
    start.wait()
    got = 0
    while got < n:
        got += sum(1 for m in c.consume(10000, 1.0) if m.error() is None)
    c.close()


def run_clients(target: object, bootstrap: str, topic: str, clients: int, n: int,
                broker: psutil.Process) -> tuple[float, float]:
    """(wall seconds from the common start to the last client's end, broker CPU seconds meanwhile)."""
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(clients + 1)
    procs = [ctx.Process(target=target, args=(bootstrap, topic, i, n // clients, start)) for i in range(clients)]
    for p in procs:
        p.start()
    start.wait(120)
    cpu0, t0 = sum(broker.cpu_times()[:2]), time.perf_counter()
    for p in procs:
        p.join(600)
        if p.exitcode != 0:
            raise SystemExit(f"a client process failed (exit {p.exitcode})")
    return time.perf_counter() - t0, sum(broker.cpu_times()[:2]) - cpu0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="200,000 messages per set-up")
    ap.add_argument("--clients", default="1,2,4", help="comma-separated client process counts")
    args = ap.parse_args()
    n = 200_000 if args.quick else 1_000_000
    counts = [int(c) for c in args.clients.split(",") if c.strip()]
    print(f"{n} x {SIZE} B per set-up, each client process on its own partition; "
          f"{psutil.cpu_count()} CPUs on this host")
    print(f"{'':9}{'clients':>8}{'msgs/s':>11}{'MB/s':>8}{'broker CPU s/1M msgs':>22}{'broker CPU share':>18}",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="odradek-ceiling-") as d, running_broker(Path(d)) as broker:
        assert broker.pid is not None
        proc = psutil.Process(broker.pid)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for clients in counts:
            topic = f"ceiling-{clients}-{uuid.uuid4().hex[:6]}"
            admin.create_topics([NewTopic(topic, clients, 1)])[topic].result(30)
            for what, target in (("produce", producer_main), ("consume", consumer_main)):
                wall, cpu = run_clients(target, broker.bootstrap, topic, clients, n, proc)
                rate = n / wall
                print(f"{what:9}{clients:>8}{rate:>11.0f}{rate * SIZE / 1e6:>8.1f}{cpu / n * 1e6:>22.2f}"
                      f"{cpu / wall:>18.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
