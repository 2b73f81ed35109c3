"""Kafka Streams applications, unmodified, against Odradek, each a JVM of its own stopped by its pid: Apache
Kafka's WordCount demo (kafka-streams-examples from Maven Central) reads the quickstart's lines and writes the
counts Kafka's quickstart shows; a stateful exactly-once application (tests/jvm/StreamsCounter.java) keeps exact
counts through a broker kill -9 and an instance kill -9 on a 3-broker cluster."""

from __future__ import annotations

import os
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from tests.clients import create_topic
from tests.harness import BrokerPool, BrokerProcess, stop_process
from tests.jvm.apache_kafka import classpath, logging_classpath, runner_dir
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot

LINES = ["all streams lead to kafka", "hello kafka streams", "join kafka summit"]
COUNTS = {"all": 1, "streams": 2, "lead": 1, "to": 1, "kafka": 3, "hello": 1, "join": 1, "summit": 1}


@pytest.fixture
def streams_app(tmp_path: Path) -> Iterator[list[subprocess.Popen]]:
    started: list[subprocess.Popen] = []
    yield started
    for proc in started:
        stop_process(proc)


def start_app(started: list[subprocess.Popen], workdir: Path, main: str, props: dict[str, str],
              runner: bool = False) -> subprocess.Popen:
    """A Streams application's JVM (`main` of Kafka's jars, or of tests/jvm's programs if `runner`)."""
    config = workdir / "streams.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    cp = os.pathsep.join([*([str(runner_dir())] if runner else []), classpath(), logging_classpath()])
    # Kafka's INFO log with times, so that a stalled application says what it waits for
    logging = ["-Dorg.slf4j.simpleLogger.showDateTime=true", "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS"]
    with open(workdir / "streams.out", "ab") as out:
        proc = subprocess.Popen(["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", *logging, "-cp", cp,
                                 main, str(config)],
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    started.append(proc)
    return proc


def latest_counts(bootstrap: str, topic: str, want: dict[str, int], app_output: Path) -> dict[str, int]:
    """Read the count topic until the latest count of each word is what `want` says; the latest counts."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed"})
    c.subscribe([topic])
    latest: dict[str, int] = {}

    def caught_up() -> bool:
        for m in c.consume(100, 1):
            if not m.error():
                latest[m.key().decode()] = struct.unpack(">q", m.value())[0]
        return latest == want

    try:
        wait_until(caught_up, 120, lambda: f"the word counts in {topic} (so far {latest}); the application said:\n"
                   + notable(app_output))
    finally:
        c.close()
    return latest


def test_wordcount_demo(broker: BrokerProcess, streams_app: list[subprocess.Popen], tmp_path: Path) -> None:
    for topic in ("streams-plaintext-input", "streams-wordcount-output"):
        create_topic(broker.bootstrap, topic)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for line in LINES:
        p.produce("streams-plaintext-input", value=line.encode())
    assert p.flush(30) == 0
    start_app(streams_app, tmp_path, "org.apache.kafka.streams.examples.wordcount.WordCountDemo",
              {"bootstrap.servers": broker.bootstrap, "state.dir": str(tmp_path / "state")})
    assert latest_counts(broker.bootstrap, "streams-wordcount-output", COUNTS, tmp_path / "streams.out") == COUNTS


KEYS = 12
ROUNDS = 2
PER_ROUND = 600  # records of each round; KEYS divides it


def produce_round(bootstrap: str, topic: str, start: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                  "message.timeout.ms": 120000})
    for i in range(start, start + PER_ROUND):
        p.produce(topic, value=f"k{i % KEYS}:{i}".encode())
        p.poll(0)
    assert p.flush(120) == 0


@pytest.mark.parametrize("protocol", ["classic", "streams"])
def test_exactly_once_counter_through_a_broker_and_an_instance_kill(
        zk_standalone: ZooKeeperChroot, brokers: BrokerPool, streams_app: list[subprocess.Popen],
        tmp_path: Path, protocol: str) -> None:
    """Two instances of a stateful exactly_once_v2 application (repartition and changelog topics, a standby
    replica) on a 3-broker cluster, with the classic rebalance protocol and with streams groups (KIP-1071); a
    broker is killed -9, then an instance, which restarts and restores its state: every key's committed counts
    are 1, 2, ... once each, and the totals are exact."""
    # a killed member's tasks move when its session times out: 6 s for both protocols, not 45 s
    streams_sessions = {"group.streams.min.session.timeout.ms": "6000", "group.streams.session.timeout.ms": "6000"}
    cluster = brokers.start_cluster(zk_standalone.connect_string, 3, {"min.insync.replicas": "2", **streams_sessions})
    bootstrap = cluster.bootstrap
    create_topic(bootstrap, "eos-input", partitions=3, rf=3)
    create_topic(bootstrap, "eos-output", partitions=3, rf=3)
    produce_round(bootstrap, "eos-input", 0)
    props = {"bootstrap.servers": bootstrap, "application.id": "eos-counter", "input.topic": "eos-input",
             "output.topic": "eos-output", "processing.guarantee": "exactly_once_v2", "replication.factor": "3",
             "num.standby.replicas": "1", "commit.interval.ms": "200", "statestore.cache.max.bytes": "0",
             "group.protocol": protocol}
    if protocol == "classic":
        props.update({"session.timeout.ms": "6000", "heartbeat.interval.ms": "1000"})
    instances = []
    for name in ("a", "b"):
        workdir = tmp_path / name
        workdir.mkdir()
        instances.append(start_app(streams_app, workdir, "StreamsCounter", {**props, "state.dir": str(workdir / "state")},
                                   runner=True))
    seen: dict[str, list[int]] = {}
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "eos-reader", "auto.offset.reset": "earliest",
                       "isolation.level": "read_committed"})
    reader.subscribe(["eos-output"])

    def read(total: int) -> bool:
        for m in reader.consume(500, 1):
            if not m.error():
                seen.setdefault(m.key().decode(), []).append(int(m.value().decode().split(":")[0]))
        return sum(len(v) for v in seen.values()) >= total

    try:
        wait_until(lambda: read(PER_ROUND // 4), 180, lambda: "the first counts: " + app_output(tmp_path)
                   + "".join(notable(b.stdout_path, 15) for b in cluster.brokers))
        victim = cluster.brokers[1]
        victim.kill()
        produce_round(bootstrap, "eos-input", PER_ROUND)
        instances[0].kill()
        instances[0].wait(10)
        instances[0] = start_app(streams_app, tmp_path / "a", "StreamsCounter",
                                 {**props, "state.dir": str(tmp_path / "a" / "state")}, runner=True)
        victim.start()
        wait_until(lambda: read(ROUNDS * PER_ROUND), 240, lambda: f"every count ({sum(len(v) for v in seen.values())} "
                   f"of {ROUNDS * PER_ROUND}): " + app_output(tmp_path)
                   + "".join(notable(b.stdout_path, 15) for b in cluster.brokers))
        read(ROUNDS * PER_ROUND + 1)  # anything more would be a duplicate
    finally:
        reader.close()
    per_key = ROUNDS * PER_ROUND // KEYS
    assert {k: v for k, v in seen.items() if v != list(range(1, per_key + 1))} == {}
    assert sorted(seen) == sorted(f"k{k}" for k in range(KEYS))


def notable(log: Path, lines: int = 40) -> str:
    """A Streams application's (or a broker's) state changes and its WARN and ERROR lines, the last `lines`."""
    kept = [line[:400] for line in log.read_text(errors="replace").splitlines()
            if line.startswith("state ") or " WARN " in line or " ERROR " in line]
    return f"--- {log}:\n" + "\n".join(kept[-lines:]) + "\n"


def app_output(tmp_path: Path) -> str:
    return "".join(notable(p) for p in sorted(tmp_path.glob("*/streams.out")))
