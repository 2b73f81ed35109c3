"""Rebalance settle times: a group of 10 members over one topic of 100 partitions, three ways in the same
run on the same broker: the classic protocol with an eager assignor (range), the classic protocol with
cooperative-sticky (incremental), and KIP-848's consumer protocol (server-side uniform assignor).

For each: 9 members start and settle; then (a) a 10th joins, timed until every partition is owned by
exactly one member and all 10 own some; then (b) one member is killed with SIGKILL, timed until the 9
left own everything again (this includes the session timeout, the same for both protocols, printed
beside: what matters is the time after it). Members are confluent-kafka (librdkafka) subprocesses that
report their assignment as JSON lines; the timer runs in this process.

    python bench/rebalance.py                      # 10 members, 100 partitions, 6 s sessions
    python bench/rebalance.py --members 5 --partitions 30 --session-ms 3000
    python bench/rebalance.py --modes consumer     # one kind only
    python bench/rebalance.py --work-ms 500        # members that process for 500 ms after every poll
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.clients import create_topic  # noqa: E402
from tests.harness import BrokerProcess  # noqa: E402

MEMBER = r"""
import json, random, signal, sys, time
from confluent_kafka import Consumer
cfg = json.loads(sys.argv[1])
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
conf = {"bootstrap.servers": cfg["bootstrap"], "group.id": cfg["group"], "auto.offset.reset": "latest",
        "enable.auto.commit": False}
if cfg["mode"] == "consumer":
    conf["group.protocol"] = "consumer"
else:
    conf.update({"session.timeout.ms": cfg["session"], "heartbeat.interval.ms": cfg["heartbeat"],
                 "partition.assignment.strategy": "range" if cfg["mode"] == "eager" else "cooperative-sticky"})
c = Consumer(conf)
c.subscribe([cfg["topic"]])
last = None
work = cfg["work"] / 1000
if work:
    time.sleep(random.uniform(0, work))  # members' processing loops out of phase, as in a real group
while not stop:
    c.poll(0.02)
    if work:
        time.sleep(work)  # the application processing what it polled; rebalance callbacks wait for poll()
    now = sorted(p.partition for p in c.assignment())
    if now != last:
        last = now
        print(json.dumps(now), flush=True)
c.close()
"""

MODES = {"eager": "classic, range (eager)", "cooperative": "classic, cooperative-sticky", "consumer": "KIP-848 consumer"}


class Member:
    def __init__(self, cfg: dict[str, object]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", MEMBER, json.dumps(cfg)], stdout=subprocess.PIPE,
                                     stderr=None if os.environ.get("BENCH_DEBUG") else subprocess.DEVNULL, text=True)
        self.assignment: list[int] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.assignment = json.loads(line)
            except ValueError:
                continue

    def stop(self, kill: bool = False) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)


def settled(members: list[Member], partitions: int) -> bool:
    owned = [m.assignment for m in members]
    return all(owned) and sorted(p for a in owned for p in a) == list(range(partitions))


def wait_settled(members: list[Member], partitions: int, timeout: float,
                 grace: float = 0.0) -> tuple[float, float]:
    """(seconds until settled, partition-seconds without an owner meanwhile): the second is what consumers
    lose to the rebalance, since a partition nobody owns is not read. Unowned time in the first `grace`
    seconds (a dead member's session, which no protocol can shorten) is not counted."""
    start = last = time.monotonic()
    unowned_s = 0.0
    while True:
        now = time.monotonic()
        owned = {p for m in members for p in m.assignment}
        if now - start > grace:
            unowned_s += (partitions - len(owned)) * (now - max(last, start + grace))
        last = now
        if settled(members, partitions):
            return now - start, unowned_s
        if now - start > timeout:
            raise TimeoutError(f"not settled after {timeout:g} s: {[len(m.assignment) for m in members]}")
        time.sleep(0.01)


def run_mode(mode: str, broker: BrokerProcess,
             args: argparse.Namespace) -> tuple[tuple[float, float], tuple[float, float]]:
    topic = f"rebalance-{mode}-{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic, args.partitions)
    cfg = {"bootstrap": broker.bootstrap, "group": "g-" + topic, "topic": topic, "mode": mode,
           "session": args.session_ms, "heartbeat": args.heartbeat_ms, "work": args.work_ms}
    members: list[Member] = []
    try:
        # one at a time: many classic members starting at once can hit the classic coordinator's open
        # join race (see tests/integration/test_groups.py), which is not what this measures
        for _ in range(args.members - 1):
            members.append(Member(cfg))
            wait_settled(members, args.partitions, 120)
        members.append(Member(cfg))
        join = wait_settled(members, args.partitions, 120)
        victim = members.pop(0)
        victim.stop(kill=True)
        kill = wait_settled(members, args.partitions, 120 + args.session_ms / 1000, args.session_ms / 1000)
        return join, kill
    finally:
        for m in members:
            m.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument("--heartbeat-ms", type=int, default=1000)
    parser.add_argument("--work-ms", type=int, default=0,
                        help="each member spends this long processing after every poll (default 0: poll every 20 ms)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="odradek-rebalance-") as tmp:
        broker = BrokerProcess(Path(tmp), overrides={
            "group.initial.rebalance.delay.ms": "0",
            "group.min.session.timeout.ms": str(min(args.session_ms, 6000)),
            "group.consumer.session.timeout.ms": str(args.session_ms),
            "group.consumer.min.session.timeout.ms": str(min(args.session_ms, 45000)),
            "group.consumer.heartbeat.interval.ms": str(args.heartbeat_ms),
            "group.consumer.min.heartbeat.interval.ms": str(min(args.heartbeat_ms, 5000)),
        }).start()
        try:
            print(f"{args.members} members, {args.partitions} partitions, session {args.session_ms} ms, "
                  f"heartbeat {args.heartbeat_ms} ms, {args.work_ms} ms of processing per poll")
            print("settle: s until every partition has one owner again; unowned: partition-seconds nobody "
                  "owned meanwhile (what consumers lose), after a kill counted from the end of the session")
            print(f"{'protocol':<30} {'join settle s':>14} {'unowned p*s':>12} {'kill settle s':>14} "
                  f"{'after session s':>16} {'unowned p*s':>12}")
            results = {}
            for mode in args.modes.split(","):
                results[mode.strip()] = (join, kill) = run_mode(mode.strip(), broker, args)
                print(f"{MODES[mode.strip()]:<30} {join[0]:>14.2f} {join[1]:>12.1f} {kill[0]:>14.2f} "
                      f"{kill[0] - args.session_ms / 1000:>16.2f} {kill[1]:>12.1f}", flush=True)
            if "eager" in results and "consumer" in results:
                eager, kip848 = results["eager"], results["consumer"]
                print(f"KIP-848 vs eager, join: {eager[0][0] / kip848[0][0]:.2f}x faster to settle, "
                      f"{eager[0][1] / max(kip848[0][1], 1e-9):.1f}x less unowned time; kill: "
                      f"{eager[1][1] / max(kip848[1][1], 1e-9):.1f}x less unowned time after the session")
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
