"""An OpenMessaging-Benchmark-shaped workload for bench/yardstick.py: one topic of 100 partitions, 1 KiB records,
acks=all, a producer at fixed target rates stepped up until latency breaks, and end-to-end latency
(p50/p99/p99.9, the record's CreateTime to consumer delivery) at each rate; the highest rate held is the last
one whose p99 stayed under 50 ms with the target rate reached and every record received. Stepping goes on
past 50 ms (until the target is not reached or p99 passes 1 s), so that a machine whose clients alone pass
50 ms still shows how far each broker goes.

The producer is Kafka's own ProducerPerformance (`kafka-producer-perf-test --throughput`, the Java client: OMB's
driver is the Java client too), with OMB's Kafka driver's settings (acks=all, linger.ms=1, batch.size 1 MB, and
buffer.memory for 100 such batches) and the RoundRobinPartitioner (OMB's KEY_ROUND_ROBIN: every partition gets
small batches, the shape a fleet of clients gives a broker). librdkafka (confluent-kafka) was the first choice,
for its small footprint on a 2-core machine the broker shares, but with records spread over many partitions its
delivery latency grows to seconds against every broker (at 5,000 records/s over 100 partitions, linger.ms=1: p50
0.9 s on Odradek, 19 s on Apache Kafka, while the Java producer saw 6 ms on Odradek): it would measure itself.
The consumer is librdkafka in its own process, one poll a record, reading from each partition's end as it was
before the step; its latency is now minus the record's CreateTime (the producer's clock, the same host's:
millisecond resolution). Records of each step's first three seconds (the JVM and its JIT warming up, the
client's metadata) are not measured."""

from __future__ import annotations

import multiprocessing
import re
import subprocess
import time
import uuid
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from tests.jvm.apache_kafka import TOOLS, classpath

PARTITIONS = 100
SIZE = 1024
P99_LIMIT_MS = 50.0
STOP_P99_MS = 1000.0  # stepping stops past this p99 (or when the target is not reached)
WARM_UP_S = 3.0


@dataclass
class Step:
    """One target rate on one broker."""

    target: int
    achieved: float = 0.0
    sent: int = 0
    received: int = 0
    p50: float = float("nan")
    p99: float = float("nan")
    p999: float = float("nan")
    cpu_us_per_record: float = 0.0
    peak_rss_mb: float = 0.0

    @property
    def reached(self) -> bool:
        """The target rate was produced and every record was received."""
        return self.sent > 0 and self.achieved >= 0.95 * self.target and self.received >= self.sent

    @property
    def held(self) -> bool:
        return self.reached and self.p99 < P99_LIMIT_MS


def end_offset(c: Consumer, topic: str, partition: int) -> int:
    """The partition's log end offset, asked again while the leader is not known yet everywhere (a new
    topic's metadata reaches Apache Kafka's brokers a little after CreateTopics answers)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1]
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def consumer_main(bootstrap: str, topic: str, partitions: list[int], out: Connection) -> None:
    """Read the partitions from their end until the producer is done and nothing came for 3 s; sends back
    the latencies in µs (after the warm-up) and the count of records received."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "omb-" + uuid.uuid4().hex,
                  "enable.auto.commit": False, "log_level": 0})
    # from each partition's current end, looked up before the producer starts (an OFFSET_END assignment
    # resolves later and could skip the step's first records)
    c.assign([TopicPartition(topic, p, end_offset(c, topic, p)) for p in partitions])
    c.consume(1, 1.0)
    out.send("ready")
    latencies = array("q")
    seen = 0
    first_ms: int | None = None
    last_ms = 0
    done = False
    idle_since = time.monotonic()
    while not done or time.monotonic() - idle_since < 3:
        m = c.poll(0.1)  # one at a time: a batch call would hold early records until it fills
        if m is not None and m.error() is None:
            now_us = time.time_ns() // 1000
            created_ms = m.timestamp()[1]
            if first_ms is None:
                first_ms = created_ms
            if created_ms >= first_ms + WARM_UP_S * 1000:
                latencies.append(now_us - created_ms * 1000)
                last_ms = max(last_ms, created_ms)
            seen += 1
            idle_since = time.monotonic()
        if not done and (m is None or seen % 1024 == 0) and out.poll():
            done = out.recv() == "done"
            idle_since = time.monotonic()
    c.close()
    out.send_bytes(latencies.tobytes())
    out.send((seen, None if first_ms is None else first_ms + WARM_UP_S * 1000, last_ms))


def produce(bootstrap: str, topic: str, rate: int, seconds: float) -> tuple[int, float, str]:
    """ProducerPerformance at `rate` for the warm-up and `seconds`: (records sent, records/s achieved, its
    summary line with the producer's own send-to-acknowledgement latencies)."""
    n = int(rate * (seconds + WARM_UP_S))
    # the JVM's full JIT and default collector (the tests' java() trades them for start-up time): the
    # client has to keep up with the highest rate
    cmd = ["java", "-Xmx512m", "-cp", classpath(), TOOLS["kafka-producer-perf-test"], "--topic", topic,
           "--num-records", str(n), "--record-size", str(SIZE), "--throughput", str(rate),
           "--command-property", f"bootstrap.servers={bootstrap}", "acks=all", "linger.ms=1", "batch.size=1048576",
           "buffer.memory=134217728",  # room for a 1 MB batch on each of the 100 partitions
           # a broker that stops answering fails the step in half a minute, not the client's two
           "request.timeout.ms=20000", "delivery.timeout.ms=30000", "max.block.ms=30000",
           "partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + WARM_UP_S + 300)
    m = re.findall(r"(\d+) records sent, ([\d.]+) records/sec .*", r.stdout)
    if r.returncode or not m:
        raise SystemExit(f"kafka-producer-perf-test failed ({r.returncode}):\n{(r.stdout + r.stderr)[-3000:]}")
    summary = r.stdout.strip().splitlines()[-1]
    return int(m[-1][0]), float(m[-1][1]), summary


def percentile(values: list[int], q: float) -> float:
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(q * len(values)))] / 1e3


def create_topic(bootstrap: str) -> str:
    topic = f"omb-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(60)
    deadline = time.monotonic() + 30  # every partition has a leader before the first step
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=5).topics.get(topic)
        if md is not None and len(md.partitions) == PARTITIONS and all(p.leader >= 0 for p in md.partitions.values()):
            break
        time.sleep(0.2)
    return topic


def run_step(bootstrap: str, topic: str, rate: int, seconds: float, consumers: int) -> Step:
    """One step: consumers started and assigned first, then the paced producer; all in their own processes."""
    ctx = multiprocessing.get_context("spawn")
    pipes, procs = [], []
    try:
        for i in range(consumers):
            ours, theirs = ctx.Pipe()
            proc = ctx.Process(target=consumer_main,
                               args=(bootstrap, topic, list(range(i, PARTITIONS, consumers)), theirs), daemon=True)
            proc.start()
            pipes.append(ours)
            procs.append(proc)
        for ours in pipes:
            if not ours.poll(60):
                raise SystemExit("an OMB consumer did not start")
            ours.recv()
        sent, achieved, summary = produce(bootstrap, topic, rate, seconds)
        print(f"    producer: {summary}", flush=True)
        for pipe in pipes:
            pipe.send("done")
        latencies: array[int] = array("q")
        received = 0
        spans: list[tuple[float, int]] = []
        for pipe in pipes:
            if not pipe.poll(120):
                raise SystemExit("an OMB consumer did not finish")
            latencies.frombytes(pipe.recv_bytes())
            seen, cut_ms, last_ms = pipe.recv()
            received += seen
            if cut_ms is not None:
                spans.append((cut_ms, last_ms))
    finally:
        for proc in procs:
            proc.join(30)
            if proc.is_alive():
                proc.kill()
    # the rate the records were created at after the warm-up (ProducerPerformance's own figure counts its
    # start-up too)
    if spans and latencies:
        span_s = (max(last for _, last in spans) - min(cut for cut, _ in spans)) / 1000
        achieved = len(latencies) / span_s if span_s > 0 else achieved
    values = sorted(latencies)
    return Step(rate, achieved, sent, received, percentile(values, 0.5), percentile(values, 0.99),
                percentile(values, 0.999))


def step_up(bootstrap: str, rates: list[int], seconds: float, consumers: int,
            watched: Callable[[Callable[[], Step]], Step]) -> list[Step]:
    """Every rate in turn until one is not reached or its p99 passes STOP_P99_MS (that one included): on a
    small shared machine the clients' own latency can pass 50 ms long before the broker saturates, and the
    steps above still say how far it goes. `watched` runs a step and fills in the broker's CPU and RSS."""
    topic = create_topic(bootstrap)
    steps: list[Step] = []
    for rate in rates:
        try:
            step = watched(lambda rate=rate: run_step(bootstrap, topic, rate, seconds, consumers))  # type: ignore[misc]
        except SystemExit as exc:  # a client failed against this broker: the step is not held, the run goes on
            print(f"  {rate:>7,}/s target: failed: {str(exc)[-500:]}", flush=True)
            steps.append(Step(rate))
            break
        steps.append(step)
        print(f"  {rate:>7,}/s target: {step.achieved:>9,.0f}/s achieved, p50 {step.p50:.1f} ms, p99 "
              f"{step.p99:.1f} ms, p99.9 {step.p999:.1f} ms, {step.cpu_us_per_record:.1f} broker CPU µs/record, "
              f"RSS {step.peak_rss_mb:.0f} MB{'' if step.held else '  (not held)'}{'' if step.reached else ', not reached'}",
              flush=True)
        if not step.reached or step.p99 > STOP_P99_MS:
            break
    return steps


def highest_held(steps: list[Step]) -> int:
    return max((s.target for s in steps if s.held), default=0)


def highest_reached(steps: list[Step]) -> int:
    return max((s.target for s in steps if s.reached), default=0)
