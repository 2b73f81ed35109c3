"""End-to-end latency, produce call to consumer delivery, at set rates: p50/p99/p99.9/max at 10k, 50k and
200k msgs/s of 100 B, on a single node with acks=1 and on three brokers (ZooKeeper) with replication
factor 3 and acks=all.

Each value carries its send time (CLOCK_MONOTONIC, which every process on the host shares); the consumer
runs in its own process and records `now - sent` for each message after a one-second warm-up. The
producer paces in 1 ms steps (a burst of rate/1000 messages each) with linger.ms=1 (--linger-ms); the consumer uses
librdkafka's defaults (fetch.wait.max.ms 500, fetch.min.bytes 1), so latency is what the broker's
long-polling fetch adds, not a poll interval. The achieved rates are printed beside the figures: on a
small machine the client processes may not reach the highest rate.

    python bench/e2e_latency.py                  # 10 s per point, all rates, both set-ups
    python bench/e2e_latency.py --quick          # 3 s per point
    python bench/e2e_latency.py --rates 50000 --single-only
"""

from __future__ import annotations

import argparse
import multiprocessing
import struct
import sys
import tempfile
import time
import uuid
from array import array
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from bench.common import running_broker, running_cluster  # noqa: E402

SIZE = 100
WARM_UP_S = 1.0
STAMP = struct.Struct(">q")


def consumer_main(bootstrap: str, topic: str, expected: int, out: Connection) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "e2e-" + uuid.uuid4().hex, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, -1)])  # from the end: only what is produced from now on
    c.consume(1, 2.0)  # the assignment is live before the producer starts
    out.send("ready")
    latencies = array("q")
    seen = 0
    idle_since = time.monotonic()
    while seen < expected and time.monotonic() - idle_since < 10:
        m = c.poll(0.2)  # one at a time: a batch call would hold early messages until it fills
        if m is None or m.error() is not None:
            continue
        now = time.monotonic_ns()
        sent = STAMP.unpack_from(m.value())[0]
        if sent > 0:
            latencies.append(now - sent)
        seen += 1
        idle_since = time.monotonic()
    c.close()
    out.send_bytes(latencies.tobytes())
    out.send(seen)


def produce_paced(bootstrap: str, topic: str, rate: int, seconds: float, acks: str,
                  linger_ms: float) -> tuple[int, float]:
    """(messages sent, achieved rate over the measured part). Warm-up messages carry a zero stamp."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": linger_ms,
                  "queue.buffering.max.messages": 1_000_000, "enable.idempotence": False})
    pad = b"p" * (SIZE - STAMP.size)
    per_ms = max(1, rate // 1000)
    sent = measured = 0
    start = time.monotonic()
    measure_from = start + WARM_UP_S
    end = measure_from + seconds
    tick = start
    while True:
        now = time.monotonic()
        if now >= end:
            break
        stamp = time.monotonic_ns() if now >= measure_from else 0
        for _ in range(per_ms):
            try:
                p.produce(topic, STAMP.pack(stamp) + pad)
            except BufferError:
                p.poll(0.001)
                continue
            sent += 1
            measured += 1 if stamp else 0
        p.poll(0)
        tick += 0.001
        delay = tick - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    if p.flush(60):
        raise SystemExit("the producer could not deliver everything within 60 s")
    return sent, measured / seconds


def percentile(values: list[int], q: float) -> float:
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(q * len(values)))] / 1e6


def measure(bootstrap: str, rate: int, seconds: float, acks: str, rf: int, linger_ms: float) -> dict[str, float]:
    topic = f"e2e-{rate}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept until the future is done
    admin.create_topics([NewTopic(topic, 1, rf)])[topic].result(30)
    time.sleep(0.5)  # leadership settles on every replica
    ctx = multiprocessing.get_context("spawn")
    ours, theirs = ctx.Pipe()
    expected = int(rate * (seconds + WARM_UP_S))
    consumer = ctx.Process(target=consumer_main, args=(bootstrap, topic, expected, theirs))
    consumer.start()
    try:
        if not ours.poll(60):
            raise SystemExit("the consumer did not start")
        ours.recv()
        sent, achieved = produce_paced(bootstrap, topic, rate, seconds, acks, linger_ms)
        if not ours.poll(120):
            raise SystemExit("the consumer did not finish")
        latencies = array("q")
        latencies.frombytes(ours.recv_bytes())
        received = ours.recv()
    finally:
        consumer.join(30)
        if consumer.is_alive():
            consumer.kill()
    values = sorted(latencies)
    return {"rate": rate, "achieved": achieved, "sent": sent, "received": received,
            "p50": percentile(values, 0.5), "p99": percentile(values, 0.99), "p99.9": percentile(values, 0.999),
            "max": values[-1] / 1e6 if values else float("nan")}


def print_row(label: str, r: dict[str, float]) -> None:
    lost = "" if r["received"] >= r["sent"] else f"  ({r['sent'] - r['received']:.0f} not received)"
    print(f"{label:<22}{r['rate']:>9.0f}{r['achieved']:>10.0f}{r['p50']:>8.2f}{r['p99']:>8.2f}{r['p99.9']:>8.2f}"
          f"{r['max']:>9.2f}{lost}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="3 s per point")
    ap.add_argument("--seconds", type=float, default=None, help="measured seconds per point (default 10)")
    ap.add_argument("--rates", default="10000,50000,200000", help="comma-separated msgs/s")
    ap.add_argument("--linger-ms", type=float, default=1.0,
                    help="the producer's linger.ms (default 1; with 0 librdkafka sends a request per few messages)")
    ap.add_argument("--single-only", action="store_true", help="skip the three-broker acks=all set-up")
    args = ap.parse_args()
    seconds = args.seconds or (3.0 if args.quick else 10.0)
    rates = [int(r) for r in args.rates.split(",") if r.strip()]
    print(f"end-to-end latency (ms), {SIZE} B messages, one partition, linger.ms={args.linger_ms:g}, "
          f"{seconds:g} s per point")
    print(f"{'set-up':<22}{'target/s':>9}{'achieved':>10}{'p50':>8}{'p99':>8}{'p99.9':>8}{'max':>9}", flush=True)
    with tempfile.TemporaryDirectory(prefix="odradek-e2e-") as d:
        with running_broker(Path(d) / "single") as single:
            for rate in rates:
                print_row("single node, acks=1", measure(single.bootstrap, rate, seconds, "1", 1, args.linger_ms))
        if args.single_only:
            return 0
        with running_cluster(Path(d), overrides={"replica.fetch.wait.max.ms": "500"}) as cluster:
            for rate in rates:
                print_row("3 brokers RF3 acks=all", measure(cluster.bootstrap, rate, seconds, "all", 3, args.linger_ms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
