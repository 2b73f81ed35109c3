"""Kafka Connect's records/s: Odradek's standalone worker (`odradek connect-standalone`) beside Apache Kafka's
(connect-runtime 4.4.0, `ConnectStandalone` with the JVM settings of connect-standalone.sh) in one run, against
one Odradek broker (started as bench/yardstick.py starts it, with group.initial.rebalance.delay.ms=0). Each
worker, freshly started with the same settings (StringConverter for keys and values, the same
offset.flush.interval.ms, tasks.max=1), gets a file sink and a file source through its REST API: N lines of a
file go through a topic of one partition into a sink file. The clock runs from the creation of the connectors
until the topic's end offset reaches N (source) and until the sink file has all N lines (end to end); the
worker's CPU seconds and peak RSS (psutil, with its children) are taken over the same span. The workers
alternate over several rounds; the table gives each round's figures, the medians and the ratios
Odradek / Apache, and is written to bench/results/connect_throughput.md. `--modes distributed` runs each worker
as a Connect cluster of one (`connect-distributed`, `ConnectDistributed`) instead, or as well.

Apache's worker runs the project's FileStream stand-ins (tests/jvm/FileStream*.java, as the interop test does:
Maven Central has no connect-file 4.4.0); their source task hands over every complete line it finds in one poll,
where Kafka's own reads at most batch.size (2,000) lines per poll, as Odradek's does.

    python bench/connect_throughput.py                 # 200,000 lines, 3 rounds
    python bench/connect_throughput.py --quick         # 20,000 lines, 1 round
    python bench/connect_throughput.py --records 50000 --rounds 2
    python bench/connect_throughput.py --modes standalone,distributed
    python bench/connect_throughput.py --baseline-src /tmp/main/src   # and main's worker, before and after

Needs Apache Kafka's jars and the Java test programs (`. scripts/env.sh && kafka_jars`)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.harness import NO_REBALANCE_DELAY, BrokerProcess, free_port, odradek_cmd, stop_process, wait_port  # noqa: E402
from tests.jvm.apache_kafka import classpath, kafka_version, runner_dir  # noqa: E402
from tests.waiting import wait_until  # noqa: E402

from bench.yardstick import Watch  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "connect_throughput.md"
FLUSH_MS = 10_000  # config/connect-standalone.properties' offset.flush.interval.ms
WORKER_PROPS = ("key.converter=org.apache.kafka.connect.storage.StringConverter\n"
                "value.converter=org.apache.kafka.connect.storage.StringConverter\n"
                f"offset.flush.interval.ms={FLUSH_MS}\n")
SOURCE_CLASS = "org.apache.kafka.connect.file.FileStreamSourceConnector"
SINK_CLASS = "org.apache.kafka.connect.file.FileStreamSinkConnector"
WORKERS = ("odradek", "kafka")
LABELS = {"odradek": "Odradek", "kafka": f"Apache Kafka {kafka_version()}", "baseline": "Odradek (baseline)"}


@dataclass
class Sample:
    """One worker's figures for one round."""

    source_s: float
    sink_s: float
    cpu_s: float
    peak_rss_mb: float


def _worker_cmd(name: str, mode: str, props: Path) -> list[str]:
    if name in ("odradek", "baseline"):
        return odradek_cmd(f"connect-{mode}", str(props))
    # connect-standalone.sh and connect-distributed.sh: KAFKA_HEAP_OPTS="-Xms256M -Xmx2G", kafka-run-class.sh's G1
    main = "ConnectStandalone" if mode == "standalone" else "ConnectDistributed"
    return ["java", "-Xms256M", "-Xmx2G", "-XX:+UseG1GC", "-cp", f"{runner_dir()}{os.pathsep}{classpath()}",
            f"org.apache.kafka.connect.cli.{main}", str(props)]


def _mode_props(mode: str, workdir: Path) -> str:
    if mode == "standalone":
        return f"offset.storage.file.filename={workdir / 'offsets'}\n"
    group = f"bench-{workdir.name}"  # a Connect cluster of one worker, its internal topics of their own
    return (f"group.id={group}\nconfig.storage.topic={group}-configs\noffset.storage.topic={group}-offsets\n"
            f"status.storage.topic={group}-status\nconfig.storage.replication.factor=1\n"
            "offset.storage.replication.factor=1\nstatus.storage.replication.factor=1\n")


def _rest(port: int, method: str, path: str, body: object = None) -> tuple[int, object]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(errors="replace")


def _ready(port: int) -> bool:
    try:
        return _rest(port, "GET", "/connectors")[0] == 200
    except (OSError, ValueError):  # not listening yet; Jetty's HTML page before the herder's resources
        return False


class LineCounter:
    """The number of lines in a growing file, read incrementally."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.lines = path, 0, 0

    def count(self) -> int:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except FileNotFoundError:
            return 0
        self.offset += len(chunk)
        self.lines += chunk.count(b"\n")
        return self.lines


def run_once(name: str, mode: str, bootstrap: str, source: Path, n: int, workdir: Path,
             procs: list[subprocess.Popen], args: argparse.Namespace) -> Sample:
    """Start worker `name` in `mode` on a fresh topic and dir, create the sink and source, time them, stop the
    worker."""
    workdir.mkdir(parents=True)
    topic = f"bench-{workdir.name}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # held: a collected client fails its futures
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    port = free_port()
    props = workdir / "worker.properties"
    props.write_text(f"bootstrap.servers={bootstrap}\nlisteners=http://127.0.0.1:{port}\n"
                     f"rest.advertised.host.name=127.0.0.1\n{_mode_props(mode, workdir)}" + WORKER_PROPS)
    with open(workdir / "connect.out", "ab") as out:
        env = dict(os.environ)
        if name == "baseline":  # the same worker, from another checkout's sources
            env["PYTHONPATH"] = args.baseline_src
        proc = subprocess.Popen(_worker_cmd(name, mode, props), cwd=workdir, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True, env=env)
    procs.append(proc)
    sink = workdir / "sink.txt"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-watch-{workdir.name}"})
    try:
        wait_port(port, 120, proc)
        wait_until(lambda: _ready(port), 120, lambda: f"{name}'s REST API\n{_tail(workdir)}")
        if mode == "distributed":  # until the worker has joined its group (409 before)
            wait_until(lambda: _rest(port, "GET", "/connectors/bench-probe")[0] == 404, 120,
                       lambda: f"{name} leading its group\n{_tail(workdir)}")
        watch = Watch(proc.pid)
        spy = None
        if args.profile and name != "kafka":  # attached from outside: its CPU is not the worker's
            spy = subprocess.Popen(["py-spy", "record", "--pid", str(proc.pid), "--nonblocking", "--threads",
                                    "--format", "raw", "-o", str(workdir / "profile.txt")],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            procs.append(spy)
        counter = LineCounter(sink)
        cpu0 = watch.cpu()
        with watch.watching():
            t0 = time.monotonic()
            for conn, config in (("bench-sink", {"connector.class": SINK_CLASS, "file": str(sink), "topics": topic}),
                                 ("bench-source", {"connector.class": SOURCE_CLASS, "file": str(source),
                                                   "topic": topic})):
                while (answer := _rest(port, "POST", "/connectors",
                                        {"name": conn, "config": {**config, "tasks.max": "1"}}))[0] == 409:
                    time.sleep(0.05)  # a distributed worker rebalancing
                code, body = answer
                if code != 201:
                    raise SystemExit(f"{name}: creating {conn} gave {code}: {body}")
            source_s = sink_s = 0.0
            deadline = t0 + args.timeout
            while not sink_s:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit(f"{name}: {counter.lines:,} of {n:,} lines in the sink after "
                                     f"{time.monotonic() - t0:.0f} s\n{_tail(workdir)}")
                now = time.monotonic() - t0
                if not source_s and consumer.get_watermark_offsets(TopicPartition(topic, 0), 10)[1] >= n:
                    source_s = now
                if counter.count() >= n:
                    sink_s = now
                    source_s = source_s or now
                time.sleep(0.02)
            cpu = watch.cpu() - cpu0
        if spy is not None:
            spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
            spy.wait(60)
        return Sample(source_s, sink_s, cpu, watch.peak / 2**20)
    finally:
        consumer.close()
        stop_process(proc)


def _tail(workdir: Path) -> str:
    path = workdir / "connect.out"
    return path.read_text(errors="replace")[-3000:] if path.exists() else ""


def _median(samples: list[Sample], key: Callable[[Sample], float]) -> float:
    return statistics.median(key(s) for s in samples)


def table(results: dict[tuple[str, str], list[Sample]], n: int) -> str:
    lines = ["| mode | worker | round | source rec/s | end-to-end rec/s | source s | end-to-end s | worker CPU s | "
             "peak RSS MB |", "|---|---|---|---:|---:|---:|---:|---:|---:|"]

    def row(mode: str, label: str, round_: str, source_s: float, sink_s: float, cpu: float, rss: float) -> str:
        return (f"| {mode} | {label} | {round_} | {n / source_s:,.0f} | {n / sink_s:,.0f} | {source_s:.2f} | "
                f"{sink_s:.2f} | {cpu:.1f} | {rss:.0f} |")

    for (mode, name), samples in results.items():
        lines += [row(mode, LABELS[name], str(i), s.source_s, s.sink_s, s.cpu_s, s.peak_rss_mb)
                  for i, s in enumerate(samples, 1)]
    for (mode, name), samples in results.items():
        lines.append(row(mode, f"**{LABELS[name]}**", "median", _median(samples, lambda s: s.source_s),
                         _median(samples, lambda s: s.sink_s), _median(samples, lambda s: s.cpu_s),
                         _median(samples, lambda s: s.peak_rss_mb)))
    for mode in dict.fromkeys(m for m, _ in results):
        ours, theirs = results.get((mode, "odradek")), results.get((mode, "kafka"))
        if not ours or not theirs:
            continue

        def ratio(key: Callable[[Sample], float], inverse: bool = False,
                  ours: list[Sample] = ours, theirs: list[Sample] = theirs) -> str:
            r = _median(ours, key) / _median(theirs, key)
            return f"{1 / r if inverse else r:.2f}x"
        lines.append(f"| {mode} | **Odradek / Apache** | median | {ratio(lambda s: s.source_s, True)} | "
                     f"{ratio(lambda s: s.sink_s, True)} | {ratio(lambda s: s.source_s)} | {ratio(lambda s: s.sink_s)} | "
                     f"{ratio(lambda s: s.cpu_s)} | {ratio(lambda s: s.peak_rss_mb)} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--records", type=int, default=200_000, help="lines in the source file (default 200,000)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating repetitions per worker (default 3)")
    ap.add_argument("--quick", action="store_true", help="20,000 lines, 1 round")
    ap.add_argument("--workers", default=",".join(WORKERS), help="which workers, comma-separated (odradek,kafka)")
    ap.add_argument("--modes", default="standalone",
                    help="standalone, distributed (a Connect cluster of one worker) or both, comma-separated")
    ap.add_argument("--timeout", type=float, default=600, help="seconds a worker may take for one round")
    ap.add_argument("--baseline-src", metavar="DIR",
                    help="also run Odradek's worker from the sources in DIR (another checkout's src/), as the\n"
                         "worker 'baseline': a change measured before and after in one run")
    ap.add_argument("--profile", metavar="DIR",
                    help="attach `py-spy record` to Odradek's workers while they are timed and write each\n"
                         "round's collapsed stacks (flamegraph.pl's input) into DIR")
    args = ap.parse_args()
    names = [w.strip() for w in args.workers.split(",") if w.strip()]
    if args.baseline_src:
        names.append("baseline")
    if unknown := [w for w in names if w not in (*WORKERS, "baseline")]:
        ap.error(f"unknown worker(s): {', '.join(unknown)} (known: {', '.join(WORKERS)})")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in ("standalone", "distributed") for m in modes):
        ap.error(f"--modes: standalone and/or distributed, not {args.modes!r}")
    n, rounds = (20_000, 1) if args.quick else (args.records, args.rounds)
    if n < 1 or rounds < 1:
        ap.error("--records and --rounds must be positive")
    results: dict[tuple[str, str], list[Sample]] = {(mode, name): [] for mode in modes for name in names}
    procs: list[subprocess.Popen] = []
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="connect-bench-") as tmp:
        # a sink task's consumer group forms at once rather than after the default 3 s initial rebalance delay,
        # which would be most of a quick run's end-to-end time
        broker = BrokerProcess(Path(tmp) / "broker", overrides=dict(NO_REBALANCE_DELAY)).start()
        try:
            source = Path(tmp) / "source.txt"
            with open(source, "w") as f:
                f.writelines(f"record-{i:09d} {'x' * 82}\n" for i in range(n))
            for r in range(rounds):
                for mode in modes:
                    for name in names if r % 2 == 0 else names[::-1]:
                        print(f"round {r + 1}/{rounds}, {mode}, {LABELS[name]}: {n:,} lines ...", flush=True)
                        workdir = Path(tmp) / f"{mode}-{name}-{r}"
                        s = run_once(name, mode, broker.bootstrap, source, n, workdir, procs, args)
                        results[(mode, name)].append(s)
                        if args.profile and (workdir / "profile.txt").exists():
                            Path(args.profile).mkdir(parents=True, exist_ok=True)
                            shutil.copy(workdir / "profile.txt", Path(args.profile) / f"{workdir.name}.txt")
                        print(f"  source {n / s.source_s:,.0f} rec/s ({s.source_s:.2f} s), end to end "
                              f"{n / s.sink_s:,.0f} rec/s ({s.sink_s:.2f} s), {s.cpu_s:.1f} CPU s, "
                              f"peak RSS {s.peak_rss_mb:.0f} MB", flush=True)
        finally:
            for proc in procs:
                stop_process(proc)
            broker.stop()
    out = table(results, n)
    print(out)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(f"Measured {time.strftime('%Y-%m-%d')} on {psutil.cpu_count()} cores (load average "
                       f"{load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end), {n:,} lines of 100 bytes, {rounds} round(s), "
                       f"{' and '.join(modes)} workers, one Odradek broker:\n\n{out}\n")
    print(f"written to {RESULTS}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # every process it started is stopped by then
        sys.exit("interrupted")
