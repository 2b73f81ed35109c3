"""Share groups (KIP-932) on one broker: how fast 1, 2 and 4 confluent-kafka `ShareConsumer`s drain one
partition, against one classic consumer reading the same records in the same run (printed as ratios), and
the redelivery latency: from a consumer releasing a record (ShareAcknowledge RELEASE) to the record
being delivered again.

Every share group starts at offset 0 (the broker's `share.auto.offset.reset` is latest): the bench sets
the start offset first with AlterShareGroupOffsets on the empty group, as `odradek share-groups
--reset-offsets --to-earliest --execute` would (a group config `share.auto.offset.reset=earliest` would
do as well). Consumers are subprocesses (each
with its own interpreter and librdkafka) that report how many records they received; the rate counts from
the first record received to the last, so joining the group is not in it. Share consumers acknowledge
implicitly (each poll accepts what the previous one returned).

    python bench/share_groups.py                 # 200,000 records of 100 bytes, 20 redeliveries
    python bench/share_groups.py --quick         # 20,000 records, 5 redeliveries
    python bench/share_groups.py --records 500000 --consumers 1,4
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import AcknowledgeType, Producer, ShareConsumer  # noqa: E402
from tests.clients import create_topic  # noqa: E402

from bench.common import running_broker, send  # noqa: E402
from odradek.admin_client.share_groups import ShareGroupsClient  # noqa: E402

CONFIG = {"group.share.heartbeat.interval.ms": "500", "group.share.min.heartbeat.interval.ms": "500"}

MEMBER = r"""
import json, signal, sys, time
from confluent_kafka import Consumer, ShareConsumer
cfg = json.loads(sys.argv[1])
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
conf = {"bootstrap.servers": cfg["bootstrap"], "group.id": cfg["group"]}
if cfg["kind"] == "share":
    c = ShareConsumer({**conf, "max.poll.records": 1000})
    read = lambda: c.poll(0.1)
else:
    c = Consumer({**conf, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    read = lambda: c.consume(1000, 0.1)
c.subscribe([cfg["topic"]])
n, last = 0, 0.0
while not stop:
    n += sum(1 for m in read() if m.error() is None)
    now = time.monotonic()
    if now - last >= 0.02:
        print(n, flush=True)
        last = now
c.close()
"""


class Member:
    """One consumer subprocess and the count of records it received so far."""

    def __init__(self, cfg: dict[str, object]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", MEMBER, json.dumps(cfg)], stdout=subprocess.PIPE,
                                     stderr=None if os.environ.get("BENCH_DEBUG") else subprocess.DEVNULL, text=True)
        self.count = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.count = int(line)
            except ValueError:
                continue

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)


def fill(bootstrap: str, topic: str, records: int, size: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000})
    value = b"x" * size
    for _ in range(records):
        send(p, topic, value, partition=0)
    assert p.flush(120) == 0


def drain_rate(bootstrap: str, topic: str, kind: str, consumers: int, records: int, timeout: float) -> float:
    """Records/s of `consumers` members of a new group of `kind` ("share", "classic") reading `records`."""
    group = f"bench-{kind}-{consumers}-{uuid.uuid4().hex[:6]}"
    if kind == "share":
        with ShareGroupsClient(bootstrap, 30) as client:
            errors = client.alter_offsets(group, {(topic, 0): 0})
            assert not any(errors.values()), errors
    cfg = {"bootstrap": bootstrap, "group": group, "topic": topic, "kind": kind}
    members = [Member(cfg) for _ in range(consumers)]
    try:
        deadline = time.monotonic() + timeout
        first: tuple[float, int] | None = None
        while True:
            total, now = sum(m.count for m in members), time.monotonic()
            if first is None and total:
                first = (now, total)
            if total >= records and first is not None:
                return (total - first[1]) / max(now - first[0], 1e-6)
            if now > deadline:
                raise TimeoutError(f"{kind} x{consumers}: {total} of {records} records after {timeout:g} s")
            time.sleep(0.005)
    finally:
        for m in members:
            m.stop()


def redelivery_ms(bootstrap: str, topic: str, rounds: int) -> list[float]:
    """Milliseconds from a release (acknowledged and committed) to the same record polled again."""
    group = f"bench-redeliver-{uuid.uuid4().hex[:6]}"
    with ShareGroupsClient(bootstrap, 30) as client:
        end = client.list_offsets([(topic, 0)], -1)[(topic, 0)]
        assert end is not None
        client.alter_offsets(group, {(topic, 0): end})
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": "explicit",
                       "max.poll.records": 1})
    c.subscribe([topic])
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    out = []
    try:
        for i in range(rounds):
            marker = f"redeliver-{i}".encode()
            p.produce(topic, marker, partition=0)
            p.flush(30)
            msg = _poll_for(c, marker)
            c.acknowledge(msg, AcknowledgeType.RELEASE)
            started = time.perf_counter()
            c.commit_sync(30)
            again = _poll_for(c, marker)
            out.append((time.perf_counter() - started) * 1000)
            c.acknowledge(again, AcknowledgeType.ACCEPT)
            c.commit_sync(30)
    finally:
        c.close()
    return out


def _poll_for(c: ShareConsumer, value: bytes, timeout: float = 30) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for m in c.poll(0.05):
            if m.error() is None:
                if m.value() == value:
                    return m
                c.acknowledge(m, AcknowledgeType.ACCEPT)
    raise TimeoutError(f"{value!r} not delivered within {timeout:g} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100, help="record value bytes (default 100)")
    parser.add_argument("--consumers", default="1,2,4", help="share consumer counts (default 1,2,4)")
    parser.add_argument("--redeliveries", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="20,000 records and 5 redeliveries")
    args = parser.parse_args()
    if args.quick:
        args.records, args.redeliveries = 20_000, 5
    counts = [int(n) for n in args.consumers.split(",")]
    timeout = 60 + args.records / 1000
    with tempfile.TemporaryDirectory(prefix="bench-share-") as tmp, running_broker(Path(tmp), CONFIG) as broker:
        topic = f"share-bench-{uuid.uuid4().hex[:6]}"
        create_topic(broker.bootstrap, topic, 1)
        fill(broker.bootstrap, topic, args.records, args.size)
        print(f"{args.records} records of {args.size} bytes in one partition")
        classic = drain_rate(broker.bootstrap, topic, "classic", 1, args.records, timeout)
        print(f"{'classic group, 1 consumer':<28} {classic:>12,.0f} records/s   1.00")
        for n in counts:
            rate = drain_rate(broker.bootstrap, topic, "share", n, args.records, timeout)
            label = f"share group, {n} consumer{'s' if n > 1 else ''}"
            print(f"{label:<28} {rate:>12,.0f} records/s   {rate / classic:.2f}")
        latencies = redelivery_ms(broker.bootstrap, topic, args.redeliveries)
        print(f"redelivery (release -> delivered again): median {statistics.median(latencies):.1f} ms, "
              f"max {max(latencies):.1f} ms over {len(latencies)}")


if __name__ == "__main__":
    main()
