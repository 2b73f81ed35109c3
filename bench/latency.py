"""Produce latency under disk housekeeping: p50/p99/p99.9/max of acks=1 produce latency at a steady rate,
(a) on a plain topic, beside (b) the same load while the topic rolls a segment every second
(segment.ms=1000) and the log cleaner compacts another topic that a second producer keeps dirty.

Rolls, flushes and cleaner swaps must not stall the event loop, so (b)/(a) should stay near 1. Each
message's latency is librdkafka's own (produce() call to delivery report), so the pacing loop's sleeps
do not count. Each run gets a fresh broker on a free port and a temp dir, stopped at the end.

A fast SSD hides a blocking fsync; --slow-fsync-ms makes every fsync of the broker process that much
slower (a `sitecustomize` on the broker's PYTHONPATH wraps os.fsync with a sleep, which releases the GIL
as a real fsync does), standing in for a slow or busy disk. --rounds alternates (a) and (b) several
times and reports the median of each figure, for a noisy (shared) machine.

    python bench/latency.py                       # 20 s per run, 2,000 msgs/s of 1 KiB
    python bench/latency.py --seconds 5           # quick
    python bench/latency.py --slow-fsync-ms 20    # as on a slow disk
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from multiprocessing.context import SpawnProcess
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from tests.harness import BrokerProcess  # noqa: E402

TOPIC = "latency"
COMPACTED = "compacted"
BROKER_OVERRIDES = {"log.cleaner.backoff.ms": "200", "log.retention.check.interval.ms": "300000"}
COMPACTED_CONFIG = {
    "cleanup.policy": "compact",
    "segment.bytes": str(256 * 1024),
    "min.cleanable.dirty.ratio": "0.01",
    "min.compaction.lag.ms": "0",
    "delete.retention.ms": "1000",
}


def create_topics(bootstrap: str, topics: dict[str, dict[str, str]]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = [NewTopic(name, 1, 1, config=config) for name, config in topics.items()]
    for fut in admin.create_topics(new, request_timeout=30).values():
        fut.result(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = admin.list_topics(timeout=10)
        if all(t in md.topics and md.topics[t].partitions and md.topics[t].partitions[0].leader >= 0 for t in topics):
            return
        time.sleep(0.1)
    raise SystemExit("topics have no leader")


def paced(producer: Producer, topic: str, rate: int, seconds: float, value: bytes, keys: int = 0,
          on_delivery: Callable[..., None] | None = None) -> int:
    """Produce `rate` messages a second for `seconds`, each at its scheduled time; returns how many."""
    start = time.perf_counter()
    total = int(rate * seconds)
    for i in range(total):
        due = start + i / rate
        while (wait := due - time.perf_counter()) > 0:
            producer.poll(min(wait, 0.002))
        key = b"key-%d" % (i % keys) if keys else None
        while True:
            try:
                producer.produce(topic, value, key=key, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.001)
        producer.poll(0)
    return total


def compacted_writer(bootstrap: str, rate: int, seconds: float) -> None:
    """The second producer (its own process, so it does not share the measuring process's GIL)."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5})
    paced(p, COMPACTED, rate, seconds, b"c" * 1024, keys=500)
    p.flush(30)


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


SLOW_FSYNC = """import os, time
_fsync = os.fsync
def _slow_fsync(fd, _delay={delay}):
    time.sleep(_delay)
    _fsync(fd)
os.fsync = _slow_fsync
"""


def slow_fsync_path(tmp: Path, delay_ms: float) -> Path:
    """A directory holding a sitecustomize.py that slows os.fsync by `delay_ms` in any Python started
    with it on PYTHONPATH."""
    d = tmp / "slow-fsync"
    d.mkdir(exist_ok=True)
    (d / "sitecustomize.py").write_text(SLOW_FSYNC.format(delay=delay_ms / 1000))
    return d


def run(tmp: Path, name: str, seconds: float, rate: int, busy: bool, compacted_rate: int,
        slow_fsync_ms: float) -> dict[str, float]:
    b = BrokerProcess(tmp / name, overrides=BROKER_OVERRIDES)
    saved = os.environ.get("PYTHONPATH")
    if slow_fsync_ms > 0:
        os.environ["PYTHONPATH"] = os.pathsep.join(
            x for x in (str(slow_fsync_path(tmp, slow_fsync_ms)), saved) if x)
    try:
        b.start()
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    writer: SpawnProcess | None = None
    try:
        topics = {TOPIC: {"segment.ms": "1000", "segment.jitter.ms": "0"} if busy else {}}
        if busy:
            topics[COMPACTED] = COMPACTED_CONFIG
        create_topics(b.bootstrap, topics)
        latencies: list[float] = []
        errors = 0

        def delivered(err: object, msg: object) -> None:
            nonlocal errors
            if err is not None:
                errors += 1
            else:
                latencies.append(msg.latency())  # type: ignore[attr-defined]

        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "1", "linger.ms": 0})
        paced(p, TOPIC, rate, 1.0, b"w" * 1024, on_delivery=delivered)  # warm-up, not counted
        p.flush(30)
        latencies.clear()
        mark = len(b.output())
        if busy:
            writer = multiprocessing.get_context("spawn").Process(
                target=compacted_writer, args=(b.bootstrap, compacted_rate, seconds + 1))
            writer.start()
            time.sleep(0.5)
        sent = paced(p, TOPIC, rate, seconds, b"v" * 1024, on_delivery=delivered)
        if p.flush(60):
            raise SystemExit(f"{name}: produce did not finish")
        if writer is not None:
            writer.join(60)
        log = b.output()[mark:]
    finally:
        if writer is not None and writer.is_alive():
            writer.kill()
        b.stop(60)
        b.kill()
    values = sorted(x * 1000 for x in latencies)
    return {
        "sent": sent, "errors": errors, "p50": percentile(values, 0.5), "p99": percentile(values, 0.99),
        "p99.9": percentile(values, 0.999), "max": values[-1] if values else float("nan"),
        "rolls": log.count("Rolled new log segment"), "cleanings": log.count("Cleaned log "),
    }


FIGURES = ("p50", "p99", "p99.9", "max")


def row(label: str, r: dict[str, float]) -> str:
    return (f"{label:<34}" + "".join(f"{r[k]:8.2f}" for k in FIGURES)
            + f"{r['rolls']:7.0f}{r['cleanings']:7.0f}{r['errors']:7.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=20.0, help="measured seconds per run (default 20)")
    ap.add_argument("--rate", type=int, default=2000, help="messages per second (default 2000)")
    ap.add_argument("--compacted-rate", type=int, default=200,
                    help="keyed 1 KiB messages per second to the compacted topic in run (b) (default 200)")
    ap.add_argument("--slow-fsync-ms", type=float, default=0.0,
                    help="add this many ms to every fsync of the broker (default 0: the real disk)")
    ap.add_argument("--rounds", type=int, default=1, help="alternate (a) and (b) this many times (default 1)")
    args = ap.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"a": [], "b": []}
    with tempfile.TemporaryDirectory(prefix="odradek-latency-") as d:
        for n in range(args.rounds):
            for name, loaded in (("a", False), ("b", True)):
                runs[name].append(run(Path(d), f"{name}{n}", args.seconds, args.rate, loaded, args.compacted_rate,
                                      args.slow_fsync_ms))
    disk = f"fsync slowed by {args.slow_fsync_ms:g} ms" if args.slow_fsync_ms else "real disk"
    print(f"{args.rate} msgs/s of 1 KiB, acks=1, {args.seconds:g} s per run, {disk}; (b) adds "
          f"{args.compacted_rate} keyed msgs/s to a compacted topic; latency in ms")
    print(f"{'run':<34}" + "".join(f"{k:>8}" for k in FIGURES) + f"{'rolls':>7}{'cleans':>7}{'errors':>7}")
    labels = {"a": "(a) baseline", "b": "(b) segment.ms=1000 + cleaner"}
    for n in range(args.rounds):
        for name in ("a", "b"):
            print(row(labels[name] + (f" #{n + 1}" if args.rounds > 1 else ""), runs[name][n]))
    median = {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()}
    if args.rounds > 1:
        for name in ("a", "b"):
            print(row(labels[name] + " median", median[name]))
    base, busy = median["a"], median["b"]
    print(f"{'ratio (b)/(a)':<34}" + "".join(
        f"{busy[k] / base[k] if base[k] else float('nan'):8.2f}" for k in FIGURES))


if __name__ == "__main__":
    main()
