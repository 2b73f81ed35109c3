"""Produce throughput on a local 3-broker cluster: replication factor 3 with acks=all beside replication
factor 1 with acks=1, measured in the same run, and their ratio (target: at least 0.75).

Beside throughput it prints the CPU seconds the three brokers spent per million messages in each
variant (from /proc, Linux only): on a machine shared with other work that figure moves much less than
throughput does.

The two runs alternate for --rounds rounds (which goes first alternates too, so a machine whose load
drifts favours neither) and the medians are compared; each round's ratio is printed as well.

    python bench/replication.py [--messages N] [--size B] [--rounds R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from tests.harness import BrokerCluster  # noqa: E402

from bench.common import running_cluster, send  # noqa: E402


def broker_cpu_s(cluster: BrokerCluster) -> float:
    """User + system CPU seconds the brokers have used so far (0 where /proc is not there)."""
    total = 0.0
    for b in cluster.brokers:
        try:
            fields = Path(f"/proc/{b.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def run(bootstrap: str, topic: str, n: int, size: int, acks: str) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5, "batch.size": 1_000_000,
                  "queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 2_000_000})
    value = b"v" * size
    start = time.perf_counter()
    for i in range(n):
        send(p, topic, value, partition=i % 3)
        if i % 10000 == 0:
            p.poll(0)
    if p.flush(300):
        raise SystemExit("messages left undelivered")
    return n / (time.perf_counter() - start)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=500_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, running_cluster(Path(tmp)) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        t1, t3 = f"rf1-{uuid.uuid4().hex[:6]}", f"rf3-{uuid.uuid4().hex[:6]}"
        fs = admin.create_topics([NewTopic(t1, 3, 1), NewTopic(t3, 3, 3)])
        for f in fs.values():
            f.result(30)
        time.sleep(1)
        base: list[float] = []
        repl: list[float] = []
        cpu: dict[str, list[float]] = {"1": [], "all": []}
        per_million = 1e6 / args.messages
        for r in range(args.rounds):
            order = [(t1, "1", base), (t3, "all", repl)]
            for topic, acks, out in order if r % 2 == 0 else order[::-1]:
                before = broker_cpu_s(cluster)
                out.append(run(cluster.bootstrap, topic, args.messages, args.size, acks))
                cpu[acks].append((broker_cpu_s(cluster) - before) * per_million)
            print(f"round {r + 1}: acks=1 {base[-1]:>10.0f} msgs/s, acks=all {repl[-1]:>10.0f} msgs/s, "
                  f"ratio {repl[-1] / base[-1]:.2f}; broker CPU s per 1M messages "
                  f"{cpu['1'][-1]:.2f} / {cpu['all'][-1]:.2f}")
        b, m = statistics.median(base), statistics.median(repl)
        c1, c3 = statistics.median(cpu["1"]), statistics.median(cpu["all"])
        print(f"replication factor 1, acks=1  : {b:>10.0f} msgs/s {b * args.size / 1e6:7.1f} MB/s (median), "
              f"broker CPU {c1:.2f} s per 1M messages")
        print(f"replication factor 3, acks=all: {m:>10.0f} msgs/s {m * args.size / 1e6:7.1f} MB/s (median), "
              f"broker CPU {c3:.2f} s per 1M messages")
        print(f"ratio (target >= 0.75)        : {m / b:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
