"""Start-up, configuration errors, clean shutdown, crash recovery and retention of a real broker process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import NewTopic

from tests.clients import admin, consume_all, consume_to_end, create_topic, produce
from tests.harness import BrokerPool, BrokerProcess, free_port, odradek_cmd, run_cli
from tests.waiting import wait_until


@pytest.fixture
def broker_config() -> dict[str, str]:
    """Recovery points checkpointed often, so a kill -9 lands between checkpoints of advancing ones; high
    watermarks more often still, log start offsets only at start and shut-down (each file has its key)."""
    return {"log.flush.offset.checkpoint.interval.ms": "300", "replica.high.watermark.checkpoint.interval.ms": "100",
            "log.flush.start.offset.checkpoint.interval.ms": "3600000"}


def _start_fails(tmp_path: Path, text: str, timeout: float = 30) -> subprocess.CompletedProcess:
    cfg = tmp_path / "server.properties"
    cfg.write_text(text)
    return subprocess.run(odradek_cmd("server-start", str(cfg)), capture_output=True, text=True, timeout=timeout)


def _base(tmp_path: Path, port: int | None = None) -> str:
    return f"broker.id=0\nlisteners=PLAINTEXT://127.0.0.1:{port or free_port()}\nlog.dirs={tmp_path / 'data'}\n"


@contextmanager
def _port_taken() -> Iterator[int]:
    """A port another socket listens on for the length of the block."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_unknown_key_stops_start_up_with_did_you_mean(tmp_path: Path) -> None:
    r = _start_fails(tmp_path, _base(tmp_path) + "eplica.lag.time.max.ms=10000\n")
    assert r.returncode != 0
    assert "eplica.lag.time.max.ms" in r.stderr and "did you mean replica.lag.time.max.ms" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout


def test_wrong_type_names_key_and_value(tmp_path: Path) -> None:
    r = _start_fails(tmp_path, _base(tmp_path) + "num.partitions=many\n")
    assert r.returncode != 0
    assert "num.partitions" in r.stderr and "many" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout


def test_unusable_log_dir(tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("not a directory")
    r = _start_fails(tmp_path, f"broker.id=0\nlisteners=PLAINTEXT://127.0.0.1:{free_port()}\nlog.dirs={blocker}/x\n")
    assert r.returncode != 0
    assert str(blocker) in r.stderr
    assert "Traceback" not in r.stderr + r.stdout


def test_port_in_use(tmp_path: Path) -> None:
    with _port_taken() as port:
        r = _start_fails(tmp_path, _base(tmp_path, port))
    assert r.returncode != 0
    assert str(port) in r.stderr and "listeners" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout


def test_port_in_use_on_a_terminal_is_said_once(tmp_path: Path) -> None:
    """On a terminal the ERROR log line is the message; the stderr copy would repeat it."""
    import pty

    with _port_taken() as port:
        cfg = tmp_path / "server.properties"
        cfg.write_text(_base(tmp_path, port))
        leader, follower = pty.openpty()
        try:
            proc = subprocess.Popen(odradek_cmd("server-start", str(cfg)), stdin=subprocess.DEVNULL, stdout=follower,
                                    stderr=follower)
            os.close(follower)
            out = b""
            while True:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # EIO: the child closed its end
                    break
                if not chunk:
                    break
                out += chunk
            assert proc.wait(30) != 0
        finally:
            os.close(leader)
    text = out.decode(errors="replace")
    assert text.count("address already in use") == 1, text
    assert "Fatal error during broker start-up" in text and "Traceback" not in text


def test_missing_config_file(tmp_path: Path) -> None:
    r = run_cli("server-start", str(tmp_path / "nope.properties"))
    assert r.returncode != 0 and "nope.properties" in r.stderr and "Traceback" not in r.stderr


def test_start_up_logs_and_clean_shutdown_checkpoints(fresh_broker: BrokerProcess) -> None:
    b = fresh_broker
    create_topic(b.bootstrap, "keep", partitions=2)
    produce(b.bootstrap, "keep", [b"a", b"b", b"c"], partition=0)
    out = b.output()
    assert "Registered broker 0 at path /brokers/ids/0" in out
    assert "Awaiting socket connections on 127.0.0.1" in out
    wait_until(lambda: "keep 0 3" in (b.log_dir / "replication-offset-checkpoint").read_text(), 30,
               "the high watermark checkpointed")
    assert "keep" not in (b.log_dir / "log-start-offset-checkpoint").read_text()  # its interval is an hour
    assert b.stop() == 0
    for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint", ".kafka_cleanshutdown",
                 "meta.properties"):
        assert (b.log_dir / name).exists(), name
    assert "keep 0 3" in (b.log_dir / "recovery-point-offset-checkpoint").read_text()
    assert "keep 0 0" in (b.log_dir / "log-start-offset-checkpoint").read_text()  # shut-down writes them all
    b.start()
    assert "Recovering" not in b.output().split("starting")[-1]
    assert [m.value() for m in consume_all(b.bootstrap, "keep", 3)] == [b"a", b"b", b"c"]
    produce(b.bootstrap, "keep", [b"d"], partition=0)
    assert [m.offset() for m in consume_all(b.bootstrap, "keep", 4)] == [0, 1, 2, 3]


@pytest.mark.parametrize("config", [
    {},
    # a flush per message (on the disk worker, the answer waits for it) and a roll every few KB (each
    # rolled segment flushed in the background): the recovery points checkpointed meanwhile must hold
    {"flush.messages": "1", "segment.bytes": "4096"},
], ids=["defaults", "flush-every-message-small-segments"])
def test_kill_9_during_writes_loses_no_acknowledged_record(fresh_broker: BrokerProcess, config: dict[str, str]) -> None:
    b = fresh_broker
    create_topic(b.bootstrap, "crash", partitions=2, config=config)
    acked: list[tuple[int, int, bytes]] = []
    stop = threading.Event()

    def writer() -> None:
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 1,
                      "message.timeout.ms": 3000, "retries": 0})

        def cb(err: object, msg: object) -> None:
            if err is None:
                acked.append((msg.partition(), msg.offset(), msg.value()))  # type: ignore[attr-defined]

        i = 0
        while not stop.is_set():
            try:
                p.produce("crash", b"n%d" % i, on_delivery=cb)
            except BufferError:
                pass
            p.poll(0.001)
            i += 1
        p.flush(5)

    t = threading.Thread(target=writer)
    t.start()
    wait_until(lambda: len(acked) > 500, 30, "acknowledged writes before the crash")
    b.kill()
    stop.set()
    t.join(20)
    b.start()
    assert "Recovering" in b.output() or "recovery" in b.output().lower()
    got = consume_to_end(b.bootstrap, "crash", 2)
    stored = {(m.partition(), m.offset()): m.value() for m in got}
    for part, off, val in acked:
        assert stored.get((part, off)) == val
    for part in (0, 1):
        offs = sorted(o for p, o in stored if p == part)
        assert offs == list(range(len(offs)))


def test_time_and_size_retention(fresh_broker: BrokerProcess) -> None:
    b = fresh_broker
    a = admin(b.bootstrap)
    a.create_topics([NewTopic("old", 1, 1, config={"retention.ms": "1000", "segment.bytes": "2000"}),
                     NewTopic("big", 1, 1, config={"retention.bytes": "5000", "segment.bytes": "2000"})])["big"].result(20)
    produce(b.bootstrap, "old", [b"x" * 500 for _ in range(20)], **{"linger.ms": 0, "batch.num.messages": 1})
    produce(b.bootstrap, "big", [b"y" * 500 for _ in range(40)], **{"linger.ms": 0, "batch.num.messages": 1})
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "ret"})

    def trimmed_watermarks() -> dict[str, tuple[int, int]]:
        """Low and high watermark of both topics once both have lost their first segments, else {}."""
        marks = {t: c.get_watermark_offsets(TopicPartition(t, 0), timeout=5) for t in ("old", "big")}
        return marks if all(low > 0 for low, _ in marks.values()) else {}

    marks = wait_until(trimmed_watermarks, 20, "retention to delete segments of both topics")
    c.close()
    assert marks["old"][1] == 20  # whole old segments went; the active one stays
    assert marks["big"][1] == 40
    big_bytes = sum(f.stat().st_size for f in (b.log_dir / "big-0").glob("*.log"))
    assert big_bytes <= 5000 + 2000 + 600
    assert "due to retention" in b.output()


def test_daemon_mode_and_server_stop(tmp_path: Path) -> None:
    port = free_port()
    cfg = tmp_path / "server.properties"
    cfg.write_text(_base(tmp_path, port))
    env = dict(os.environ, LOG_DIR=str(tmp_path / "logs"))
    r = subprocess.run(odradek_cmd("server-start", "-daemon", str(cfg)), capture_output=True, text=True,
                       timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    pid = int(r.stdout.split("(pid ")[1].split(")")[0])
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        r = run_cli("server-stop", str(cfg))
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "data" / ".kafka_cleanshutdown").exists()
        assert "shut down completed" in (tmp_path / "logs" / "odradek-server.out").read_text()
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_offsets_topic_factor_beyond_a_single_node_is_said_and_done(brokers: BrokerPool) -> None:
    """offsets.topic.replication.factor=3 on one broker: start-up says __consumer_offsets will get one
    replica, and creating it for the first group says so again; the group then works."""
    b = brokers.start({"offsets.topic.replication.factor": "3"})
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "factor-check", "auto.offset.reset": "earliest"})
    try:
        c.subscribe(["factor-topic"])
        produce(b.bootstrap, "factor-topic", [b"x"])
        got = wait_until(lambda: [m for m in c.consume(10, 1.0) if not m.error()], 60, "the group's first record")
        assert got[0].value() == b"x"
    finally:
        c.close()
    out = b.output()
    assert ("exceeds the size of a single-node cluster (no zookeeper.connect): __consumer_offsets will be created "
            "with replication factor 1") in out
    assert ("Creating __consumer_offsets with replication factor 1: offsets.topic.replication.factor is 3 but only "
            "1 broker(s) are alive") in out
    assert "cannot be created" not in out
