"""One fault run: workloads on the client host (two idempotent acks=all producers, a transactional
producer, a consumer group committing offsets), a seeded schedule of faults from nemesis.py with calm
between them, healing, a fresh produce, then the final reads and the checker. The history (JSON lines) and
a summary stay in the run's directory; `run` returns the checker's report and the schedule it ran."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from random import Random

from tests.faults.checker import Report, check, load
from tests.faults.cluster import FaultCluster
from tests.faults.nemesis import NEMESES, Fault
from tests.faults.provenance import copies_at


@dataclass
class Schedule:
    nemeses: list[str]
    seed: int
    fault_s: float = 10.0  # how long each fault lasts (past the 6 s session for pauses and ZooKeeper cuts)
    calm_s: float = 4.0  # healthy time before the first fault and after each healing
    tag: str = "run"  # names this run's topics and group, so runs can share a cluster
    echo: bool = False  # print each note as it happens (progress of long runs)
    log: list[str] = field(default_factory=list)  # what happened when
    faults: list[Fault] = field(default_factory=list)  # the faults made, in order

    def note(self, line: str) -> None:
        self.log.append(f"{time.strftime('%H:%M:%S')} {line}")
        if self.echo:
            print(f"   {self.log[-1]}", flush=True)


def run(cluster: FaultCluster, directory: Path, schedule: Schedule) -> Report:
    directory.mkdir(parents=True, exist_ok=True)
    history, stop = directory / "history.jsonl", directory / "stop"
    stop.unlink(missing_ok=True)
    rng = Random(schedule.seed)
    c = cluster
    TOPIC, TXN_TOPIC, GROUP = f"events-{schedule.tag}", f"orders-{schedule.tag}", f"group-{schedule.tag}"  # noqa: N806
    for topic in (TOPIC, TXN_TOPIC):
        c.client_run(["create-topic", c.bootstrap, topic, "--partitions", "3", "--rf", str(min(3, c.size))])
    common = ["--out", str(history), "--stop", str(stop), "--max-seconds", "900"]
    workers = [
        c.client_start(["produce", c.bootstrap, TOPIC, "--id", "p1", *common], directory / "p1.log"),
        c.client_start(["produce", c.bootstrap, TOPIC, "--id", "p2", *common], directory / "p2.log"),
        c.client_start(["transactions", c.bootstrap, TXN_TOPIC, "--id", "x1", *common], directory / "x1.log"),
        c.client_start(["group", c.bootstrap, TOPIC, "--group", GROUP, *common], directory / "g1.log"),
    ]
    try:
        schedule.note(f"seed {schedule.seed}: {', '.join(schedule.nemeses)}")
        time.sleep(schedule.calm_s)
        for name in schedule.nemeses:
            fault = NEMESES[name](c, rng)
            schedule.faults.append(fault)
            schedule.note(f"fault: {fault.description}")
            time.sleep(schedule.fault_s)
            fault.heal()
            schedule.note(f"healed: {fault.description}")
            try:
                c.client_run(["wait-isr", c.bootstrap, TOPIC, TXN_TOPIC, "--timeout", "120"], timeout=150)
            except AssertionError:
                c.dump_stacks()  # into each broker's log: a stuck broker shows where
                raise
            schedule.note("every replica in sync again")
            time.sleep(schedule.calm_s)
    finally:
        stop.touch()
        for w in workers:
            try:
                w.wait(120)
            except Exception:  # noqa: BLE001 - a stuck client is killed, its history so far still counts
                w.kill()
    # the healed cluster serves a fresh producer and the final reads
    fresh_stop = directory / "fresh-stop"
    fresh = c.client_start(["produce", c.bootstrap, TOPIC, "--id", "fresh", "--interval-ms", "50", "--out", str(history), "--stop",
                            str(fresh_stop), "--max-seconds", "3"], directory / "fresh.log")
    fresh.wait(120)
    c.client_run(["read", c.bootstrap, TOPIC, "--out", str(directory / "read.jsonl")], timeout=180)
    c.client_run(["read", c.bootstrap, TXN_TOPIC, "--read-committed", "--out", str(directory / "read.jsonl")],
                 timeout=180)
    c.client_run(["committed", c.bootstrap, GROUP, TOPIC, "--out", str(directory / "read.jsonl")])
    events = load(history, directory / "read.jsonl")
    data_dirs = [c.data_dir(i) for i in range(c.size)]
    report = check(events, lambda partition, offsets: copies_at(data_dirs, TOPIC, partition, offsets))
    if not any(e["op"] == "ack" and e["v"].startswith("fresh-") for e in events):
        report.lost.append("fresh: the healed cluster acknowledged nothing")
        report.violations.append("after healing, a fresh producer got no acknowledgement in 3 s")
    (directory / "summary.txt").write_text("\n".join([*schedule.log, report.summary(), *report.violations,
                                                    *report.notes]) + "\n")
    return report
