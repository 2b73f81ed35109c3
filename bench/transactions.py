"""Transactional produce beside idempotent produce, and read_committed consume beside read_uncommitted,
on one single-node broker in the same run (confluent-kafka), as ratios.

    python bench/transactions.py            # 200,000 x 100 B per case
    python bench/transactions.py --quick    # CI-sized

Targets (issue #12): transactions of 1,000 records at >= 0.70 of idempotent produce; read_committed at
>= 0.90 of read_uncommitted.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from bench.common import running_broker, send  # noqa: E402

SIZE = 100
CONF = {"linger.ms": 5, "batch.size": 1_000_000, "queue.buffering.max.messages": 2_000_000,
        "queue.buffering.max.kbytes": 2_000_000}


def idempotent(bootstrap: str, topic: str, n: int) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, **CONF})
    value = b"v" * SIZE
    start = time.perf_counter()
    for i in range(n):
        send(p, topic, value)
        if i % 10000 == 0:
            p.poll(0)
    if p.flush(120):
        raise SystemExit("idempotent produce did not finish")
    return time.perf_counter() - start


def transactional(bootstrap: str, topic: str, n: int, per_txn: int) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "bench-" + uuid.uuid4().hex, **CONF})
    p.init_transactions(60)
    value = b"v" * SIZE
    start = time.perf_counter()
    done = 0
    while done < n:
        p.begin_transaction()
        for _ in range(min(per_txn, n - done)):
            send(p, topic, value)
            done += 1
        p.commit_transaction(120)
    return time.perf_counter() - start


def consume(bootstrap: str, topic: str, n: int, isolation: str) -> float:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-" + uuid.uuid4().hex,
                  "enable.auto.commit": False, "isolation.level": isolation, "fetch.max.bytes": 52428800,
                  "max.partition.fetch.bytes": 10485760, "queued.min.messages": 1000000})
    c.assign([TopicPartition(topic, 0, -2)])
    got = 0
    start = time.perf_counter()
    while got < n:
        got += sum(1 for m in c.consume(10000, 1.0) if m.error() is None)
        if time.perf_counter() - start > 300:
            raise SystemExit(f"{isolation}: consumed only {got} of {n}")
    elapsed = time.perf_counter() - start
    c.close()
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small run for CI")
    args = ap.parse_args()
    n = 20_000 if args.quick else 200_000
    with tempfile.TemporaryDirectory() as tmp, running_broker(Path(tmp)) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})

        def topic() -> str:
            name = "bench-" + uuid.uuid4().hex[:8]
            admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
            return name

        idempotent(broker.bootstrap, topic(), n // 10)  # warm-up: connections, first segment, JIT-free
        base = n / idempotent(broker.bootstrap, topic(), n)
        print(f"{'case':34} {'msgs/s':>10} {'x baseline':>11}")
        print(f"{'idempotent produce (baseline)':34} {base:>10.0f} {1.0:>11.2f}")
        txn_topic = ""
        for per_txn in (100, 1000, 10000):
            txn_topic = topic()
            rate = n / transactional(broker.bootstrap, txn_topic, n, per_txn)
            print(f"{f'transactional, {per_txn} per txn':34} {rate:>10.0f} {rate / base:>11.2f}")
        unc = n / consume(broker.bootstrap, txn_topic, n, "read_uncommitted")
        com = n / consume(broker.bootstrap, txn_topic, n, "read_committed")
        print(f"{'consume read_uncommitted (baseline)':34} {unc:>10.0f} {1.0:>11.2f}")
        print(f"{'consume read_committed':34} {com:>10.0f} {com / unc:>11.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
