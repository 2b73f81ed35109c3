"""Produce throughput on a local 3-broker cluster: replication factor 3 with acks=all beside replication
factor 1 with acks=1, measured in the same run, and their ratio (target: at least 0.5).

    python bench/replication.py [--messages N] [--size B]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from tests.harness import BrokerCluster  # noqa: E402
from tests.zkharness import ZooKeeperEnsemble  # noqa: E402


def run(bootstrap: str, topic: str, n: int, size: int, acks: str) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5, "batch.size": 1_000_000,
                  "queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 2_000_000})
    value = b"v" * size
    start = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, partition=i % 3)
                break
            except BufferError:
                p.poll(0.01)
        if i % 10000 == 0:
            p.poll(0)
    if p.flush(300):
        raise SystemExit("messages left undelivered")
    return n / (time.perf_counter() - start)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=500_000)
    ap.add_argument("--size", type=int, default=100)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        zk = ZooKeeperEnsemble(Path(tmp) / "zk", size=1).start()
        cluster = BrokerCluster(Path(tmp) / "brokers", zk.connect_string, size=3).start()
        try:
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
            t1, t3 = f"rf1-{uuid.uuid4().hex[:6]}", f"rf3-{uuid.uuid4().hex[:6]}"
            fs = admin.create_topics([NewTopic(t1, 3, 1), NewTopic(t3, 3, 3)])
            for f in fs.values():
                f.result(30)
            time.sleep(1)
            base = run(cluster.bootstrap, t1, args.messages, args.size, "1")
            repl = run(cluster.bootstrap, t3, args.messages, args.size, "all")
            print(f"replication factor 1, acks=1  : {base:>10.0f} msgs/s {base * args.size / 1e6:7.1f} MB/s")
            print(f"replication factor 3, acks=all: {repl:>10.0f} msgs/s {repl * args.size / 1e6:7.1f} MB/s")
            print(f"ratio (target >= 0.5)         : {repl / base:10.2f}")
        finally:
            cluster.stop()
            zk.stop_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
