"""Exactly-once source (KIP-618) on a Connect cluster of two `odradek connect-distributed` workers with
`exactly.once.source.support=enabled`: a file source writes its records and its offsets in one transaction per
batch; while lines are appended to the file, the worker running its task is killed with SIGKILL, the task starts
again on the other worker, and a read_committed consumer of the topic sees every line once, in order. The connector keys are
checked as Kafka's leader checks them."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.connect.test_distributed import DistributedWorker, _status
from tests.harness import BrokerProcess, wait_port
from tests.waiting import wait_until

LINES = 12_000
# lines written before the kill (the rest after it), so that the task's worker always dies mid-file
# (the writer finished the whole file before the first 500 lines were committed on a loaded machine)
BEFORE_KILL = 4_000


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return {"group.min.session.timeout.ms": "1000", "group.initial.rebalance.delay.ms": "0",
            "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1"}


@pytest.fixture
def workers(broker: BrokerProcess, tmp_path: Path) -> Iterator[list[DistributedWorker]]:
    group = f"eos-{os.getpid()}-{tmp_path.name[-16:]}"
    pair = [DistributedWorker(tmp_path / f"w{i}", broker, group) for i in range(2)]
    try:
        for w in pair:
            with (w.cwd / "worker.properties").open("a") as props:
                props.write("exactly.once.source.support=enabled\n")
            w.start()
        for w in pair:
            wait_port(w.port, 60, w.proc)
        yield pair
    finally:
        for w in pair:
            w.stop()


def _committed_lines(broker: BrokerProcess, topic: str) -> list[str]:
    """Every value of `topic`'s partition 0 that a read_committed consumer sees, from the start."""
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"{topic}-check", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "enable.partition.eof": True})
    out: list[str] = []
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        while True:
            m = c.poll(10)
            if m is None:
                break
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    break
                continue
            out.append(m.value().decode())
    finally:
        c.close()
    return out


def _leader_known(w: DistributedWorker) -> bool:
    """Whether a write reaches a leader (a probe that is refused with 404, not a rebalance's 409)."""
    return w.call("PUT", "/connectors/probe/pause")[0] == 404


def test_a_worker_kill_loses_and_duplicates_nothing(workers: list[DistributedWorker], broker: BrokerProcess,
                                                     tmp_path: Path) -> None:
    source, topic = tmp_path / "in.txt", f"eos-{tmp_path.name[-20:]}"
    source.write_text("")
    done, killed = threading.Event(), threading.Event()

    def append() -> None:  # the file grows while the task reads it, through the kill
        for start in range(0, LINES, 40):
            if start >= BEFORE_KILL:  # the rest once the task's worker is dead: the kill is always mid-file
                killed.wait()
            with source.open("a") as f:
                f.writelines(f"line-{i}\n" for i in range(start, min(start + 40, LINES)))
            if done.wait(0.02):
                return

    writer = threading.Thread(target=append, daemon=True)
    w0, w1 = workers
    config = {"connector.class": "FileStreamSource", "file": str(source), "topic": topic, "tasks.max": "1",
              "batch.size": "50", "exactly.once.support": "required", "transaction.boundary": "poll"}
    wait_until(lambda: w0.call("PUT", "/connectors/eos/config", config)[0] in (200, 201), 60, "eos created")
    writer.start()
    try:
        _kill_and_finish(workers, broker, topic, killed)
    finally:
        done.set()
        killed.set()
        writer.join()
    assert _committed_lines(broker, topic) == [f"line-{i}" for i in range(LINES)]


def _kill_and_finish(workers: list[DistributedWorker], broker: BrokerProcess, topic: str,
                     killed: threading.Event) -> None:
    w0, w1 = workers
    wait_until(lambda: len(_committed_lines(broker, topic)) >= 500, 90, "the first committed batches")
    victim_id = _status(w0, "eos")["tasks"][0]["worker_id"]
    victim = next(w for w in workers if w.worker_id == victim_id)
    survivor = w1 if victim is w0 else w0
    assert victim.proc is not None
    victim.proc.send_signal(signal.SIGKILL)
    victim.proc.wait()
    killed.set()
    written = len(_committed_lines(broker, topic))
    assert written < LINES, "the task had read the whole file before the kill: nothing was tested"
    wait_until(lambda: len(_committed_lines(broker, topic)) >= LINES, 180,
               lambda: f"every line committed ({len(_committed_lines(broker, topic))} of {LINES}); the survivor "
                       f"said:\n{survivor.output()[-3000:]}")


def test_the_connector_keys_are_checked(workers: list[DistributedWorker], tmp_path: Path) -> None:
    w0, _w1 = workers
    wait_until(lambda: w0.call("GET", "/connectors")[0] == 200 and _leader_known(w0), 60, "the cluster's leader")
    base = {"connector.class": "FileStreamSource", "topic": "t", "tasks.max": "1"}
    code, body = w0.call("PUT", "/connectors/stdin/config", {**base, "exactly.once.support": "required"})
    assert code == 400 and "The connector does not support exactly-once semantics with the provided configuration." \
        in body["message"], body
    code, body = w0.call("PUT", "/connectors/own/config", {**base, "file": str(tmp_path / "x"),
                                                          "transaction.boundary": "connector"})
    assert code == 400 and "does not support connector-defined transaction boundaries" in body["message"], body
    code, body = w0.call("PUT", "/connectors/odd/config", {**base, "file": str(tmp_path / "x"),
                                                          "exactly.once.support": "sometimes"})
    assert code == 400 and "exactly.once.support" in body["message"], body
