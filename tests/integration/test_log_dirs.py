"""Moving replicas between a broker's log dirs (KIP-113) with real clients: AlterReplicaLogDirs from
kafka-python's admin client while a confluent-kafka producer writes and a consumer reads, a broker killed
in the middle of a move, Kafka's error codes, and `odradek reassign-partitions` with `log_dirs` on one
broker and in a ZooKeeper cluster."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaAdminClient
from kafka.errors import LogDirNotFoundError, UnknownTopicOrPartitionError
from kafka.structs import TopicPartitionReplica

from tests.clients import NumberedProducer, admin, consume_all, create_topic
from tests.harness import BrokerPool, BrokerProcess, run_cli
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot

SMALL_SEGMENTS = {"segment.bytes": "1048576"}


def two_dir_broker(brokers: BrokerPool, **overrides: str) -> tuple[BrokerProcess, Path, Path]:
    a, b = brokers.directory("dir-a"), brokers.directory("dir-b")
    return brokers.start({"log.dirs": f"{a},{b}", **overrides}), a, b


def placement(bootstrap: str, topic: str, broker_id: int = 0) -> dict[tuple[int, bool], str]:
    """(partition, is future) -> log dir, from kafka-python's DescribeLogDirs."""
    client = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        result = client.describe_log_dirs(brokers=[broker_id])
    finally:
        client.close()
    return {(p["partition_index"], p["is_future_key"]): d["log_dir"]
            for d in result[0]["log_dirs"] for t in d["topics"] if t["name"] == topic for p in t["partitions"]}


def alter(bootstrap: str, moves: dict[tuple[str, int, int], str]) -> dict[Any, Any]:
    client = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return client.alter_replica_log_dirs({TopicPartitionReplica(*k): v for k, v in moves.items()})
    finally:
        client.close()


def preload(bootstrap: str, topic: str, count: int, size: int = 1000) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 200000})
    for i in range(count):
        p.produce(topic, b"%08d" % i + b"x" * size, partition=0)
        if i % 1000 == 0:
            p.poll(0)
    assert p.flush(60) == 0


def other_dir(where: str, a: Path, b: Path) -> Path:
    return b if where == str(a) else a


def moved_to(bootstrap: str, topic: str, dest: Path, broker_id: int = 0) -> bool:
    return placement(bootstrap, topic, broker_id) == {(0, False): str(dest)}


class Reader:
    """A consumer reading the partition from the start, on its own thread, until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.values: list[bytes] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False})
        self._c.assign([TopicPartition(topic, 0, -2)])
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for m in self._c.consume(500, 0.2):
                if m.error():
                    self.errors.append(str(m.error()))
                else:
                    self.values.append(m.value())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self._c.close()


def test_move_while_producing_and_consuming(brokers: BrokerPool) -> None:
    broker, a, b = two_dir_broker(brokers)
    topic = "moving"
    create_topic(broker.bootstrap, topic, 1, config=SMALL_SEGMENTS)
    preload(broker.bootstrap, topic, 20000)
    source = Path(placement(broker.bootstrap, topic)[(0, False)])
    dest = other_dir(str(source), a, b)
    reader = Reader(broker.bootstrap, topic)
    prod = NumberedProducer(broker.bootstrap, topic, partitions=1, **{"enable.idempotence": True}).start()
    prod.wait_acked(200)
    result = alter(broker.bootstrap, {(topic, 0, 0): str(dest)})
    assert [e.errno for e in result.values()] == [0], result
    wait_until(lambda: moved_to(broker.bootstrap, topic, dest), 120, "the replica in its new log dir", interval=0.5)
    prod.wait_acked(200)  # still written, to the new log
    prod.stop()
    assert not prod.failed, prod.failed[:3]
    total = 20000 + len(prod.acked)
    wait_until(lambda: len(reader.values) >= total, 60, lambda: f"{total} records read ({len(reader.values)})")
    reader.stop()
    assert not reader.errors, reader.errors[:3]
    assert [int(v[:8]) for v in reader.values[:20000]] == list(range(20000))
    numbers = [int(v) for v in reader.values[20000:]]
    assert numbers == sorted(n for _, _, n in prod.acked)  # each once, in order
    assert (dest / f"{topic}-0").is_dir() and len(list((dest / f"{topic}-0").glob("*.log"))) > 1
    wait_until(lambda: not [p for p in source.iterdir() if p.name.startswith(topic)], 30, "the old directory gone")
    assert not [p for p in dest.iterdir() if p.name.endswith(("-future", "-delete"))]
    assert "moved from" in broker.output()
    broker.restart()
    assert placement(broker.bootstrap, topic) == {(0, False): str(dest)}
    assert len(consume_all(broker.bootstrap, topic, total, timeout=60)) == total


def test_broker_killed_in_the_middle_of_a_move(brokers: BrokerPool) -> None:
    broker, a, b = two_dir_broker(brokers)
    topic = "crash"
    create_topic(broker.bootstrap, topic, 1, config=SMALL_SEGMENTS)
    preload(broker.bootstrap, topic, 40000)
    dest = other_dir(placement(broker.bootstrap, topic)[(0, False)], a, b)
    result = alter(broker.bootstrap, {(topic, 0, 0): str(dest)})
    assert [e.errno for e in result.values()] == [0], result
    broker.kill()  # wherever the move was: copying, swapped, or done
    broker.start()
    wait_until(lambda: moved_to(broker.bootstrap, topic, dest), 120, "the move finished after the restart",
               interval=0.5)
    got = consume_all(broker.bootstrap, topic, 40000, timeout=60)
    assert [int(m.value()[:8]) for m in got] == list(range(40000))
    assert not [p for d in (a, b) for p in d.iterdir() if p.name.endswith(("-future", "-delete"))]


def test_errors(brokers: BrokerPool) -> None:
    broker, a, b = two_dir_broker(brokers)
    create_topic(broker.bootstrap, "here", 1)
    result = alter(broker.bootstrap, {("here", 0, 0): str(a.parent / "not-a-log-dir"),
                                      ("missing", 0, 0): str(b), ("here", 5, 0): str(b)})
    errors = {k.topic + "-" + str(k.partition): v for k, v in result.items()}  # error classes
    assert errors == {"here-0": LogDirNotFoundError, "missing-0": UnknownTopicOrPartitionError,
                      "here-5": UnknownTopicOrPartitionError}
    where = placement(broker.bootstrap, "here")[(0, False)]
    assert [e.errno for e in alter(broker.bootstrap, {("here", 0, 0): where}).values()] == [0]  # already there
    assert placement(broker.bootstrap, "here") == {(0, False): where}


def _reassign(*args: str) -> tuple[int, str, str]:
    r = run_cli("reassign-partitions", *args, timeout=90)
    return r.returncode, r.stdout, r.stderr


def _verify_until(bootstrap: str, spec: Path, line: str) -> str:
    def verified() -> str:
        code, out, err = _reassign("--bootstrap-server", bootstrap, "--verify", "--reassignment-json-file", str(spec))
        assert code == 0, out + err
        return out if line in out else ""

    return wait_until(verified, 120, f"--verify to say {line!r}", interval=1.0)


def test_reassign_tool_moves_a_replica_on_one_broker(brokers: BrokerPool, tmp_path: Path) -> None:
    broker, a, b = two_dir_broker(brokers)
    create_topic(broker.bootstrap, "tool", 1)
    preload(broker.bootstrap, "tool", 2000)
    dest = other_dir(placement(broker.bootstrap, "tool")[(0, False)], a, b)
    spec = tmp_path / "move.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "tool", "partition": 0, "replicas": [0], "log_dirs": [str(dest)]}]}))
    code, out, err = _reassign("--bootstrap-server", broker.bootstrap, "--execute", "--reassignment-json-file",
                               str(spec))
    assert code == 0, out + err
    assert out.endswith("Successfully started partition reassignment for tool-0\n"
                        f"Successfully started moving log directory to {dest} for replica tool-0 with broker 0 \n")
    out = _verify_until(broker.bootstrap, spec, "Reassignment of replica tool-0-0 completed successfully.")
    assert out.splitlines() == ["Status of partition reassignment:", "Reassignment of partition tool-0 is completed.",
                                "Reassignment of replica tool-0-0 completed successfully."]
    assert len(consume_all(broker.bootstrap, "tool", 2000)) == 2000
    code, out, err = _reassign("--bootstrap-server", broker.bootstrap, "--cancel", "--reassignment-json-file",
                               str(spec))
    assert code == 0 and out.splitlines() == ["None of the specified partition reassignments are active.",
                                              "None of the specified partition moves are active."], out + err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "tool", "partition": 0, "replicas": [0], "log_dirs": ["/no/such/dir"]}]}))
    code, out, err = _reassign("--bootstrap-server", broker.bootstrap, "--execute", "--reassignment-json-file",
                               str(bad))
    assert code == 1 and "Failed to alter dir for tool-0-0: LOG_DIR_NOT_FOUND" in err


def test_reassign_tool_with_log_dirs_in_a_zookeeper_cluster(zk_standalone: ZooKeeperChroot, brokers: BrokerPool,
                                                             tmp_path: Path) -> None:
    dirs = [(brokers.directory(f"b{i}-a"), brokers.directory(f"b{i}-b")) for i in range(2)]
    c = brokers.start_cluster(zk_standalone.connect_string, 2, {"replica.lag.time.max.ms": "3000"},
                              per_broker=[{"log.dirs": f"{x},{y}"} for x, y in dirs])
    from confluent_kafka.admin import NewTopic

    admin(c.bootstrap).create_topics([NewTopic("spread", 1, replica_assignment=[[0]])])["spread"].result(20)
    preload(c.bootstrap, "spread", 3000)
    on0 = Path(placement(c.bootstrap, "spread", 0)[(0, False)])
    dest0 = other_dir(str(on0), *dirs[0])
    dest1 = dirs[1][1]  # broker 1 has no replica yet: the dir is remembered until the reassignment creates it
    spec = tmp_path / "spread.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "spread", "partition": 0, "replicas": [1, 0], "log_dirs": [str(dest1), str(dest0)]}]}))
    code, out, err = _reassign("--bootstrap-server", c.bootstrap, "--execute", "--reassignment-json-file", str(spec))
    assert code == 0, out + err
    assert f"Successfully started moving log directory to {dest0} for replica spread-0 with broker 0 \n" in out
    assert f"Successfully started moving log directory to {dest1} for replica spread-0 with broker 1 \n" in out
    out = _verify_until(c.bootstrap, spec, "Reassignment of replica spread-0-1 completed successfully.")
    out = _verify_until(c.bootstrap, spec, "Reassignment of replica spread-0-0 completed successfully.")
    # broker 1's replica may finish its move before it has caught up and joined the ISR
    out = _verify_until(c.bootstrap, spec, "Reassignment of partition spread-0 is completed.")
    assert "Reassignment of replica spread-0-0 completed successfully." in out
    assert "Reassignment of replica spread-0-1 completed successfully." in out
    assert placement(c.bootstrap, "spread", 1) == {(0, False): str(dest1)}
    assert placement(c.bootstrap, "spread", 0) == {(0, False): str(dest0)}
    assert len(consume_all(c.bootstrap, "spread", 3000)) == 3000
    # through ZooKeeper the log dirs need --bootstrap-server too, as in Kafka
    connect = c.brokers[0].overrides["zookeeper.connect"]
    code, out, err = _reassign("--zookeeper", connect, "--execute", "--reassignment-json-file", str(spec))
    assert code == 1 and "bootstrap-server needs to be provided" in err
