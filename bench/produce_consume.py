"""Produce/consume throughput of a single-node broker with confluent-kafka, beside the ceiling of a plain
asyncio loopback pair moving the same bytes in the same run.

    python bench/produce_consume.py            # full: 1,000,000 x 100 B and 200,000 x 1 KiB
    python bench/produce_consume.py --quick    # CI-sized
    python bench/produce_consume.py --metrics  # cost of metrics: a broker with its Prometheus endpoint
                                               # scraped every 100 ms beside one without, same run
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from tests.harness import BrokerProcess, free_port  # noqa: E402


def loopback_ceiling(total_bytes: int, chunk: int = 1 << 20) -> float:
    """Bytes/s of one asyncio stream pair on 127.0.0.1 (the ceiling for a Python broker on this host)."""

    async def run() -> float:
        done = asyncio.Event()
        received = 0

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal received
            while received < total_bytes:
                data = await reader.read(1 << 20)
                if not data:
                    break
                received += len(data)
            done.set()
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        _r, w = await asyncio.open_connection("127.0.0.1", port)
        payload = b"x" * chunk
        start = time.perf_counter()
        sent = 0
        while sent < total_bytes:
            w.write(payload)
            sent += chunk
            await w.drain()
        await done.wait()
        elapsed = time.perf_counter() - start
        w.close()
        server.close()
        return total_bytes / elapsed

    return asyncio.run(run())


def produce(bootstrap: str, topic: str, n: int, size: int, acks: str, partitions: int) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": acks, "batch.size": 1_000_000,
                  "queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 2_000_000})
    value = b"v" * size
    errors = 0

    def cb(err: object, _msg: object) -> None:
        nonlocal errors
        if err:
            errors += 1

    start = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, partition=i % partitions, on_delivery=cb)
                break
            except BufferError:
                p.poll(0.01)
        if i % 10000 == 0:
            p.poll(0)
    p.flush(120)
    elapsed = time.perf_counter() - start
    if errors:
        raise SystemExit(f"{errors} delivery errors")
    return elapsed


def consume(bootstrap: str, topic: str, n: int, partitions: int) -> float:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-" + uuid.uuid4().hex,
                  "enable.auto.commit": False, "fetch.max.bytes": 52428800,
                  "max.partition.fetch.bytes": 10485760, "queued.max.messages.kbytes": 1048576,
                  # librdkafka backs off fetching for fetch.queue.backoff.ms (1 s) once its local queue
                  # holds queued.min.messages (100k); a consumer draining 1M small records wants more.
                  "queued.min.messages": 1000000})
    c.assign([TopicPartition(topic, p, -2) for p in range(partitions)])
    got = 0
    start = time.perf_counter()
    while got < n:
        for m in c.consume(10000, 1.0):
            if m.error() is None:
                got += 1
        if time.perf_counter() - start > 300:
            raise SystemExit(f"consumed only {got} of {n}")
    elapsed = time.perf_counter() - start
    c.close()
    return elapsed


def metrics_cost(n: int, rounds: int = 3) -> None:
    """Produce + consume n x 100 B on a broker without an HTTP endpoint and on one whose /metrics is
    scraped every 100 ms; rounds alternate, best of each is compared."""
    import threading
    import urllib.request

    best: dict[bool, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for scraped in (False, True):
                http = free_port()
                overrides = {"http.listener": f"127.0.0.1:{http}"} if scraped else {}
                broker = BrokerProcess(Path(tmp) / f"b{r}{int(scraped)}", overrides=overrides)
                broker.start()
                stop = threading.Event()

                def scrape(port: int = http, stop: threading.Event = stop) -> None:
                    while not stop.wait(0.1):
                        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
                            resp.read()

                scraper = threading.Thread(target=scrape, daemon=True)
                try:
                    if scraped:
                        scraper.start()
                    topic = "bench-" + uuid.uuid4().hex[:6]
                    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
                    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
                    t = produce(broker.bootstrap, topic, n, 100, "1", 1) + consume(broker.bootstrap, topic, n, 1)
                    best[scraped] = min(best.get(scraped, float("inf")), t)
                finally:
                    stop.set()
                    broker.stop()
                    broker.kill()
    off, on = n / best[False], n / best[True]
    print(f"metrics off: {off:.0f} msgs/s (produce+consume), scraped every 100 ms: {on:.0f} msgs/s, "
          f"ratio {on / off:.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small run for CI")
    ap.add_argument("--metrics", action="store_true", help="only compare metrics scraped vs no endpoint")
    args = ap.parse_args()
    if args.metrics:
        metrics_cost(50_000 if args.quick else 500_000)
        return 0
    scale = 0.05 if args.quick else 1.0
    cases = [(int(1_000_000 * scale), 100), (int(200_000 * scale), 1024)]
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp), overrides={"num.partitions": "1"})
        broker.start()
        try:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            total = sum(n * size for n, size in cases)
            ceiling = loopback_ceiling(max(total, 50 << 20))
            print(f"ceiling: asyncio loopback pair {ceiling / 1e6:.1f} MB/s")
            print(f"{'case':38} {'msgs/s':>10} {'MB/s':>8} {'x ceiling':>10}")
            for n, size in cases:
                for partitions in (1, 8):
                    for acks in ("1", "all"):
                        topic = f"bench-{size}-{partitions}-{acks}-{uuid.uuid4().hex[:6]}"
                        admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
                        t = produce(broker.bootstrap, topic, n, size, acks, partitions)
                        rate, mb = n / t, n * size / t / 1e6
                        print(f"produce {n} x {size} B p={partitions} acks={acks:3} {rate:>10.0f} {mb:>8.1f} "
                              f"{mb * 1e6 / ceiling:>10.3f}")
                        if acks == "1":
                            t = consume(broker.bootstrap, topic, n, partitions)
                            rate, mb = n / t, n * size / t / 1e6
                            print(f"consume {n} x {size} B p={partitions}          {rate:>10.0f} {mb:>8.1f} "
                                  f"{mb * 1e6 / ceiling:>10.3f}")
        finally:
            broker.stop()
            broker.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
