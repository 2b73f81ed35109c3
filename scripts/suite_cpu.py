"""Where a test run's CPU goes, by kind of process: `python scripts/suite_cpu.py -- COMMAND...` runs COMMAND
(e.g. `bash scripts/test.sh`) and samples every process on the machine each second, adding the CPU time each
used since the last sample to its kind (a broker, a ZooKeeper, a Spark JVM, Apache Kafka's JVMs, pytest's
workers, the tools, librdkafka's test program, ...). At the end it prints the kinds by CPU seconds. A process
that lives less than a sample is not seen; the table says how much CPU the machine spent in all, to compare."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections import Counter

import psutil

KINDS: list[tuple[str, tuple[str, ...]]] = [  # the first kind whose words all occur in the command line
    ("broker (odradek server-start)", ("odradek", "server-start")),
    ("Connect worker (odradek)", ("odradek", "connect-")),
    ("schema registry (odradek)", ("odradek", "schema-registry")),
    ("Spark pipeline (odradek)", ("odradek", "pipeline")),
    ("other odradek commands", ("odradek.cli.main",)),
    ("ZooKeeper JVM", ("java", "zookeeper")),
    ("Spark JVM", ("java", "spark")),
    ("Apache Kafka JVM", ("java", "kafka")),
    ("other JVM", ("java",)),
    ("pytest worker", ("python", "exec(eval(sys.stdin.readline()))")),  # execnet's bootstrap: xdist's workers
    ("pytest worker", ("python", "pytest")),
    ("Spark Python worker", ("pyspark",)),
    ("librdkafka tests", ("test-runner",)),
    ("kcat", ("kcat",)),
    ("chromium", ("chrom",)),
    ("other python", ("python",)),
]


def kind_of(cmdline: list[str]) -> str:
    text = " ".join(cmdline)
    for name, words in KINDS:
        if all(w in text for w in words):
            return name
    return cmdline[0].rsplit("/", 1)[-1] if cmdline else "?"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--interval", type=float, default=1.0, help="seconds between samples (default 1)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command to run (after --)")
    args = p.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("no command given")
    seen: dict[tuple[int, float], float] = {}  # (pid, create time) -> CPU seconds at the last sample
    by_kind: Counter[str] = Counter()
    for pr in psutil.process_iter(["pid", "create_time", "cpu_times"]):  # what ran before is not counted
        if pr.info.get("cpu_times") is not None:
            seen[(pr.info["pid"], pr.info["create_time"])] = pr.info["cpu_times"].user + pr.info["cpu_times"].system
    start_cpu = psutil.cpu_times()
    started = time.monotonic()
    proc = subprocess.Popen(command)
    while True:
        for pr in psutil.process_iter(["pid", "create_time", "cmdline", "cpu_times"]):
            info = pr.info
            times = info.get("cpu_times")
            if times is None:
                continue
            key = (info["pid"], info["create_time"])
            used = times.user + times.system
            by_kind[kind_of(info.get("cmdline") or [])] += used - seen.get(key, 0.0)
            seen[key] = used
        if proc.poll() is not None:
            break
        time.sleep(args.interval)
    end_cpu = psutil.cpu_times()
    total = (end_cpu.user + end_cpu.system) - (start_cpu.user + start_cpu.system)
    print(f"\nwall {time.monotonic() - started:.0f} s, machine CPU {total:.0f} s (user+system), "
          f"seen in sampled processes {sum(by_kind.values()):.0f} s", file=sys.stderr)
    for name, cpu in by_kind.most_common():
        if cpu >= 1:
            print(f"{cpu:9.0f} s  {100 * cpu / total:5.1f}%  {name}", file=sys.stderr)
    return proc.returncode or 0


if __name__ == "__main__":
    sys.exit(main())
