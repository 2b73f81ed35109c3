"""A log dir that fills up (issue #29): a real full disk, a small tmpfs mounted as a log dir. The broker must
take the dir offline at the first failed write, as Kafka does: the produce that hit it answers
KAFKA_STORAGE_ERROR at once (before the fix: no answer, a 15 s timeout, nothing logged), one ERROR line names
the dir, partitions on its other dirs keep serving, leadership moves to an in-sync replica elsewhere, and
a broker left without any log dir halts with one clear line. After the dir gets room, a restart brings back
every acknowledged record.

Mounting needs root (CAP_SYS_ADMIN): without it these tests skip."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.producer import ProduceRequest

from odradek.protocol.errors import ErrorCode
from odradek.protocol.records import build_batch
from odradek.protocol.transport import BlockingConnection
from tests.clients import consume_all, create_topic
from tests.harness import BrokerPool, free_port, run_cli
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot

SMALL_MB = 8
VALUE_BYTES = 4000
RECORDS_PER_REQUEST = 16
MAX_REQUESTS = 4000  # far more than fills SMALL_MB: a bound, not an expectation


@contextmanager
def tmpfs(path: Path, size_mb: int) -> Iterator[Path]:
    """A tmpfs of `size_mb` MiB mounted at `path` (skips the test where mounting is not permitted)."""
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(path)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (needs root): {done.stderr.strip() or done.returncode}")
    try:
        yield path
    finally:
        if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def grow(path: Path, size_mb: int) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size_mb}m", str(path)], check=True, capture_output=True)


@dataclass
class Filling:
    """What a producer writing acks=all until the first error saw."""

    acked: list[bytes] = field(default_factory=list)
    error: int = 0
    error_seconds: float = 0.0  # how long the failing request took to be answered


def fill(port: int, topic: str, prefix: str, partition: int = 0) -> Filling:
    """Produce acks=all (one request at a time) until a request fails; every value is unique."""
    out = Filling()
    data = ProduceRequest.TopicProduceData
    pad = b"x" * VALUE_BYTES
    with BlockingConnection("127.0.0.1", port, "disk-full-test", 30.0) as conn:
        for n in range(MAX_REQUESTS):
            values = [f"{prefix}-{n:06d}-{i:02d}-".encode() + pad for i in range(RECORDS_PER_REQUEST)]
            started = time.monotonic()
            resp = conn.request(ProduceRequest(transactional_id=None, acks=-1, timeout_ms=15000, topic_data=[
                data(name=topic, partition_data=[data.PartitionProduceData(
                    index=partition, records=build_batch([(None, v) for v in values]))])]), 9)
            code = resp.responses[0].partition_responses[0].error_code
            if code:
                out.error, out.error_seconds = code, time.monotonic() - started
                return out
            out.acked += values
    raise AssertionError(f"{MAX_REQUESTS} requests fitted in a {SMALL_MB} MiB log dir")


def produce_ok(port: int, topic: str, values: list[bytes]) -> None:
    """acks=all through the broker at `port`, which must answer without error."""
    data = ProduceRequest.TopicProduceData
    with BlockingConnection("127.0.0.1", port, "disk-full-test", 30.0) as conn:
        resp = conn.request(ProduceRequest(transactional_id=None, acks=-1, timeout_ms=15000, topic_data=[
            data(name=topic, partition_data=[data.PartitionProduceData(
                index=0, records=build_batch([(None, v) for v in values]))])]), 9)
    assert resp.responses[0].partition_responses[0].error_code == 0


def leader_and_isr(port: int, topic: str) -> tuple[int, list[int]]:
    with BlockingConnection("127.0.0.1", port, "disk-full-test", 5.0) as c:
        md = c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), 9)
    p = md.topics[0].partitions[0]
    return p.leader_id, sorted(p.isr_nodes)


def values_of(bootstrap: str, topic: str, expected: int) -> set[bytes]:
    return {m.value() for m in consume_all(bootstrap, topic, expected, timeout=60)}


def test_a_full_log_dir_goes_offline_and_the_broker_keeps_serving_its_other_dir(
        brokers: BrokerPool, tmp_path: Path) -> None:
    small = tmp_path / "small"
    with tmpfs(small, SMALL_MB):
        http_port = free_port()
        broker = brokers.start({"log.dirs": f"{tmp_path / 'big'},{small}", "http.listener": f"127.0.0.1:{http_port}"})
        try:
            create_topic(broker.bootstrap, "anchor")  # the first topic goes to the first dir...
            create_topic(broker.bootstrap, "filling")  # ...the next to the dir with fewer partitions
            assert (small / "filling-0").is_dir() and (tmp_path / "big" / "anchor-0").is_dir()

            filled = fill(broker.port, "filling", "f")
            assert filled.error == ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode(filled.error).name
            assert filled.error_seconds < 1.0, f"answered after {filled.error_seconds:.2f} s"
            assert len(filled.acked) > 1000  # most of the 8 MiB
            wait_until(lambda: f"Stopped serving replicas in dir {small}" in broker.output(), 20,
                       "the broker to stop serving the full dir")
            errors = [ln for ln in broker.output().splitlines() if " ERROR " in ln and f"in dir {small}:" in ln]
            assert len(errors) == 1, errors
            assert "No space left on device" in errors[0] and "Traceback" not in broker.output()

            # the partition in the failed dir answers KAFKA_STORAGE_ERROR at once; the other dir serves on
            assert fill(broker.port, "filling", "g").error == ErrorCode.KAFKA_STORAGE_ERROR
            produce_ok(broker.port, "anchor", [b"still-here"])
            assert values_of(broker.bootstrap, "anchor", 1) == {b"still-here"}

            described = run_cli("log-dirs", "--bootstrap-server", broker.bootstrap, "--describe")
            dirs = {d["logDir"]: d for d in json.loads(described.stdout.splitlines()[-1])["brokers"][0]["logDirs"]}
            assert dirs[str(small)]["error"] == "KafkaStorageException" and dirs[str(small)]["partitions"] == []
            assert dirs[str(tmp_path / "big")]["error"] is None
            with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=10) as r:
                metrics = r.read().decode()
            assert "kafka_log_logmanager_offlinelogdirectorycount 1.0" in metrics

            grow(small, 64)
            assert broker.restart().alive()
            got = values_of(broker.bootstrap, "filling", len(filled.acked))
            assert got.issuperset(filled.acked), f"{len(set(filled.acked) - got)} acknowledged records lost"
            produce_ok(broker.port, "filling", [b"after-restart"])
        finally:
            broker.stop()


def test_a_full_log_dir_on_the_leader_moves_leadership_to_the_follower(
        zk_standalone: ZooKeeperChroot, brokers: BrokerPool, tmp_path: Path) -> None:
    small = tmp_path / "small"
    with tmpfs(small, SMALL_MB):
        # broker 0's first dir is the small one (ZooKeeper mode: no metadata store in a log dir)
        cluster = brokers.start_cluster(zk_standalone.connect_string, 2, name="diskfull", per_broker=[
            {"log.dirs": f"{small},{tmp_path / 'big0'}"}, {}])
        try:
            b0, b1 = cluster.brokers
            from confluent_kafka.admin import AdminClient, NewTopic

            admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
            for name in ("filling", "anchor"):
                for f in admin.create_topics([NewTopic(name, 1, replica_assignment=[[0, 1]])]).values():
                    f.result(30)
                wait_until(lambda name=name: leader_and_isr(b0.port, name) == (0, [0, 1]), 30,
                           f"{name} led by broker 0 with both replicas in sync")
            assert (small / "filling-0").is_dir()

            filled = fill(b0.port, "filling", "f")
            assert filled.error == ErrorCode.KAFKA_STORAGE_ERROR and filled.error_seconds < 1.0
            wait_until(lambda: leader_and_isr(b1.port, "filling") == (1, [1]), 30,
                       "the controller to move leadership of filling-0 to broker 1 and drop broker 0 from its ISR")
            with cluster.zookeeper() as z:
                wait_until(lambda: z.get_children("/log_dir_event_notification") == [], 20,
                           "the log dir event to be handled")
            assert leader_and_isr(b1.port, "anchor") == (0, [0, 1])  # broker 0's healthy dir serves on
            produce_ok(b1.port, "filling", [b"after-failover"])
            produce_ok(b0.port, "anchor", [b"anchor-too"])
            got = values_of(b1.bootstrap, "filling", len(filled.acked) + 1)
            assert got.issuperset([*filled.acked, b"after-failover"])
        finally:
            cluster.stop()


def test_a_broker_whose_only_log_dir_fills_halts_and_recovers_after_a_restart(
        brokers: BrokerPool, tmp_path: Path) -> None:
    small = tmp_path / "small"
    with tmpfs(small, SMALL_MB):
        broker = brokers.start({"log.dirs": str(small)})
        try:
            create_topic(broker.bootstrap, "filling")
            filled = fill(broker.port, "filling", "f")
            assert filled.error == ErrorCode.KAFKA_STORAGE_ERROR and filled.error_seconds < 1.0
            assert broker.proc is not None
            code = broker.proc.wait(20)
            assert code != 0
            fatal = [ln for ln in broker.output().splitlines() if "Shutdown broker because all log dirs" in ln]
            assert fatal == [fatal[0]] and f"in {small} have failed" in fatal[0], broker.output()[-3000:]

            grow(small, 64)
            broker.start()
            got = values_of(broker.bootstrap, "filling", len(filled.acked))
            assert got.issuperset(filled.acked), f"{len(set(filled.acked) - got)} acknowledged records lost"
        finally:
            broker.stop()
