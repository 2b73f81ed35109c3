"""The broker's cost per small Produce request, old code beside new in the same run: one partition's batch of
10 x 1 KiB records a request, round-robin over 64 partitions, acks=all and acks=1, kept in flight on a few
connections by a client that only writes pre-encoded frames and counts responses (it cannot be the
bottleneck). Prints the broker's CPU microseconds per request and requests/s for each code base, measured
alternately round after round, and the new/old ratios (median over rounds).

    python bench/small_requests.py                   # main's src/ (git archive) against this checkout's
    python bench/small_requests.py --base HEAD~1 --rounds 5 --seconds 8
    python bench/small_requests.py --old-src src --new-src /tmp/compiled/src    # e.g. mypyc's build beside
    python bench/small_requests.py --base none --rounds 1 --seconds 10 --py-spy /tmp/prof   # this checkout under py-spy
    python bench/small_requests.py --fetch          # and small Fetch requests (one partition's first batch each)
    python bench/small_requests.py --rdkafka        # and librdkafka's producer (linger.ms=0): CPU per message
"""

from __future__ import annotations

import argparse
import os
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from kafka.protocol.consumer import FetchRequest  # noqa: E402
from kafka.protocol.producer import ProduceRequest  # noqa: E402
from tests.harness import BrokerProcess  # noqa: E402

from odradek.protocol.records import build_batch  # noqa: E402

TOPIC = "small-requests"


def produce_frames(partitions: int, records: int, size: int, acks: int) -> list[bytes]:
    """One framed Produce v9 request per partition (correlation ids repeat: the client only counts)."""
    batch = build_batch([(None, os.urandom(size)) for _ in range(records)])
    frames = []
    for p in range(partitions):
        req = ProduceRequest[9](transactional_id=None, acks=acks, timeout_ms=30_000, topic_data=[
            ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[
                ProduceRequest.TopicProduceData.PartitionProduceData(index=p, records=batch)])])
        req.with_header(correlation_id=p + 1, client_id="small-requests")
        frames.append(bytes(req.encode(version=9, header=True, framed=True)))
    return frames


# in place of an acks setting: the window sends small Fetch requests instead, or runs librdkafka's producer
FETCH = 0
RDKAFKA = 2


def fetch_frames(partitions: int, max_bytes: int, per_request: int = 1) -> list[bytes]:
    """Framed Fetch v12 requests, sessionless, each for `per_request` partitions (one request per group of
    them, round-robin over `partitions`) from offset 0 (written by the Produce windows before), at most
    `max_bytes` a partition: about one batch each, sent with sendfile."""
    T = FetchRequest[12]
    frames = []
    for first in range(partitions):
        wanted = [(first + i) % partitions for i in range(per_request)]
        req = T(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=52428800, isolation_level=0, session_id=0,
                session_epoch=-1, topics=[T.FetchTopic(topic=TOPIC, partitions=[T.FetchTopic.FetchPartition(
                    partition=p, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
                    partition_max_bytes=max_bytes) for p in wanted])], forgotten_topics_data=[], rack_id="")
        req.with_header(correlation_id=first + 1, client_id="small-requests")
        frames.append(bytes(req.encode(version=12, header=True, framed=True)))
    return frames


@dataclass
class _Conn:
    received: bytearray = field(default_factory=bytearray)
    outstanding: int = 0
    sent: int = 0


def drive(port: int, frames: list[bytes], seconds: float, connections: int, depth: int) -> int:
    """Keep `depth` requests in flight on each of `connections` connections for `seconds`; responses
    counted by their size prefix. Returns the requests answered."""
    sel = selectors.DefaultSelector()
    socks = []
    for _ in range(connections):
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        socks.append(s)
    state = {s: _Conn() for s in socks}
    answered = 0
    end = time.monotonic() + seconds

    def top_up(s: socket.socket) -> None:
        st = state[s]
        s.setblocking(True)
        while st.outstanding < depth:
            s.sendall(frames[st.sent % len(frames)])
            st.sent += 1
            st.outstanding += 1
        s.setblocking(False)

    for s in socks:
        top_up(s)
        sel.register(s, selectors.EVENT_READ)
    while time.monotonic() < end:
        for key, _ in sel.select(0.5):
            s = key.fileobj  # type: ignore[assignment]
            st = state[s]
            data = s.recv(1 << 20)
            if not data:
                raise SystemExit("the broker closed a connection")
            buf = st.received
            buf += data
            pos = 0
            while len(buf) - pos >= 4:
                n = int.from_bytes(buf[pos:pos + 4], "big")
                if len(buf) - pos < 4 + n:
                    break
                pos += 4 + n
                st.outstanding -= 1
                answered += 1
            del buf[:pos]
            top_up(s)
    for s in socks:
        s.close()
    return answered


def broker_cpu(pid: int) -> float:
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


@contextmanager
def broker(workdir: Path, src: Path) -> Iterator[BrokerProcess]:
    b = BrokerProcess(workdir, env={"PYTHONPATH": str(src)})
    b.start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 64, 1)])[TOPIC].result(30)
        yield b
    finally:
        b.stop()
        b.kill()


def measure(b: BrokerProcess, acks: int, args: argparse.Namespace, spy_to: str | None = None) -> tuple[float, float]:
    """(broker CPU µs per request, requests/s) over one window of `args.seconds`."""
    assert b.pid is not None
    frames = (fetch_frames(64, args.records * args.size, args.fetch_partitions) if acks == FETCH
              else produce_frames(64, args.records, args.size, acks))
    spy = None
    if spy_to:  # folded stacks of the broker while this window runs
        spy = subprocess.Popen(["py-spy", "record", "--pid", str(b.pid), "--format", "raw", "--rate", "250",
                                "--nonblocking", "--output", spy_to],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)
    cpu0, t0 = broker_cpu(b.pid), time.monotonic()
    if acks == RDKAFKA:
        n = rdkafka_produce(b.bootstrap, args.seconds, args.rdkafka_size)
    else:
        n = drive(b.port, frames, args.seconds, args.connections, args.depth)
    cpu, wall = broker_cpu(b.pid) - cpu0, time.monotonic() - t0
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        spy.wait(30)
    return cpu / n * 1e6, n / wall


def rdkafka_produce(bootstrap: str, seconds: float, size: int) -> int:
    """librdkafka's producer (confluent-kafka) with linger.ms=0 and acks=all, as fast as it goes for
    `seconds`: many small Produce requests in flight on each connection. Returns the messages delivered."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})
    payload = os.urandom(size)
    sent = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(1000):
            try:
                producer.produce(TOPIC, payload)
                sent += 1
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    if producer.flush(60):
        raise SystemExit("librdkafka could not deliver every message")
    return sent


def _unit(acks: int) -> tuple[str, int]:
    """What a window counts, and the decimals its CPU figure needs."""
    return ("msg", 2) if acks == RDKAFKA else ("req", 0)


def _kind(acks: int) -> str:
    return {FETCH: "fetch", RDKAFKA: "librdkafka"}.get(acks, f"acks={acks}")


def base_src(ref: str, tmp: Path) -> Path:
    dest = tmp / "base"
    dest.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "src"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest / "src"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="main", help="git ref of the old code ('none': only this checkout)")
    ap.add_argument("--old-src", metavar="DIR", help="the old code's src directory (instead of --base), e.g. "
                    "a copy with modules compiled by mypyc")
    ap.add_argument("--new-src", metavar="DIR", default=str(ROOT / "src"), help="the new code's src directory")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=2.0, help="per window (one variant, one acks setting)")
    ap.add_argument("--records", type=int, default=10, help="records per batch")
    ap.add_argument("--size", type=int, default=1024, help="bytes per record value")
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--depth", type=int, default=16, help="requests in flight per connection")
    ap.add_argument("--fetch", action="store_true", help="also a window of small Fetch requests a round (each "
                    "one partition's first batch, 64 partitions, pipelined alike)")
    ap.add_argument("--fetch-partitions", type=int, default=1, help="partitions a Fetch request of --fetch "
                    "names (as a sessionless consumer of many partitions does)")
    ap.add_argument("--rdkafka", action="store_true", help="also a window of librdkafka's producer a round "
                    "(linger.ms=0, acks=all, --rdkafka-size byte messages): CPU and rate are per message")
    ap.add_argument("--rdkafka-size", type=int, default=100, help="bytes per message of --rdkafka")
    ap.add_argument("--py-spy", metavar="PREFIX", help="record the brokers with py-spy (first round) into PREFIX.<variant>.acks<n>.txt")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="small-requests-") as tmp_name, ExitStack() as stack:
        tmp = Path(tmp_name)
        variants = {"new": Path(args.new_src)}
        if args.old_src:
            variants = {"old": Path(args.old_src), **variants}
        elif args.base != "none":
            variants = {"old": base_src(args.base, tmp), **variants}
        # every variant's broker runs for the whole bench (an idle one costs nothing); the variants take
        # turns in short windows, so that the machine's other load falls on both alike
        brokers = {name: stack.enter_context(broker(tmp / name, src)) for name, src in variants.items()}
        for b in brokers.values():
            drive(b.port, produce_frames(64, args.records, args.size, 1), 1.0, args.connections, args.depth)
        kinds = (-1, 1, *((FETCH,) if args.fetch else ()), *((RDKAFKA,) if args.rdkafka else ()))
        samples: dict[str, dict[int, list[tuple[float, float]]]] = {v: {k: [] for k in kinds} for v in variants}
        for r in range(args.rounds):
            for acks in kinds:
                for name, b in brokers.items():
                    label = _kind(acks).replace("=", "")
                    spy_to = f"{args.py_spy}.{name}.{label}.txt" if args.py_spy and r == 0 else None
                    cpu, rps = measure(b, acks, args, spy_to)
                    samples[name][acks].append((cpu, rps))
                    unit, digits = _unit(acks)
                    print(f"round {r + 1} {_kind(acks)} {name}: {cpu:.{digits}f} µs CPU/{unit}, {rps:,.0f} {unit}/s",
                          flush=True)
    # the median of the rounds, and their minimum: other load on the machine only ever adds CPU (caches,
    # frequency), so the cheapest window is the closest to the code's own cost
    for acks in kinds:
        line = [f"{_kind(acks)}:"]
        unit, digits = _unit(acks)
        for name in variants:
            cpus, rates = zip(*samples[name][acks], strict=True)
            line.append(f"{name} {statistics.median(cpus):.{digits}f} (min {min(cpus):.{digits}f}) µs CPU/{unit}, "
                        f"{statistics.median(rates):,.0f} {unit}/s;")
        if "old" in variants:
            old_cpu = [o[0] for o in samples["old"][acks]]
            new_cpu = [n[0] for n in samples["new"][acks]]
            ratios_cpu = [n / o for n, o in zip(new_cpu, old_cpu, strict=True)]
            ratios_rate = [n[1] / o[1] for n, o in zip(samples["new"][acks], samples["old"][acks], strict=True)]
            line.append(f"new/old CPU per {unit}: median of rounds {statistics.median(ratios_cpu):.2f}x "
                        f"(rounds {', '.join(f'{x:.2f}' for x in ratios_cpu)}), of minima "
                        f"{min(new_cpu) / min(old_cpu):.2f}x; {unit}/s {statistics.median(ratios_rate):.2f}x")
        print(" ".join(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
