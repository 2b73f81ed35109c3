"""Kafka's Connect quickstart, verbatim with the shipped `config/` files (only the broker's address and the REST
port changed, as a user of another broker would): `echo -e "foo\nbar" > test.txt`, `connect-standalone` with the
file source and sink, `test.sink.txt` gets both lines, the console consumer on `connect-test` shows the
JsonConverter's envelope; then what the REST API says of them, and a restarted worker goes on from its offsets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek import __version__
from tests.connect_helpers import Worker
from tests.harness import BrokerProcess, run_cli
from tests.waiting import wait_until

FILES = ("config/connect-file-source.properties", "config/connect-file-sink.properties")

@pytest.fixture
def worker(broker: BrokerProcess, tmp_path: Path) -> Iterator[Worker]:
    w = Worker(tmp_path, broker)
    yield w
    w.stop()


def sink_lines(worker: Worker) -> list[str]:
    path = worker.cwd / "test.sink.txt"
    return path.read_text().splitlines() if path.exists() else []


def test_the_quickstart_verbatim(worker: Worker, broker: BrokerProcess) -> None:
    (worker.cwd / "test.txt").write_text("foo\nbar\n")
    worker.start(*FILES)
    wait_until(lambda: sink_lines(worker) == ["foo", "bar"], 60,
               lambda: f"test.sink.txt to hold foo and bar: {sink_lines(worker)}\n{worker.output()[-3000:]}")
    r = run_cli("console-consumer", "--bootstrap-server", broker.bootstrap, "--topic", "connect-test",
                "--from-beginning", "--max-messages", "2")
    assert r.stdout.splitlines() == ['{"schema":{"type":"string","optional":false},"payload":"foo"}',
                                     '{"schema":{"type":"string","optional":false},"payload":"bar"}'], r.stderr

    assert sorted(worker.get("/connectors")) == ["local-file-sink", "local-file-source"]
    status = worker.get("/connectors/local-file-source/status")
    me = f"127.0.0.1:{worker.port}"
    assert status == {"name": "local-file-source",
                      "connector": {"state": "RUNNING", "worker_id": me, "version": __version__},
                      "tasks": [{"id": 0, "state": "RUNNING", "worker_id": me, "version": __version__}],
                      "type": "source"}
    assert worker.get("/connectors/local-file-sink")["config"]["topics"] == "connect-test"
    wait_until(lambda: worker.get("/connectors/local-file-source/offsets") == {
        "offsets": [{"partition": {"filename": "test.txt"}, "offset": {"position": 8}}]}, 30, "the source offsets")

    # a line appended while the worker runs follows; after a restart the worker goes on from its offsets
    with open(worker.cwd / "test.txt", "a") as f:
        f.write("baz\n")
    wait_until(lambda: sink_lines(worker) == ["foo", "bar", "baz"], 60, "baz in test.sink.txt")
    worker.stop()
    with open(worker.cwd / "test.txt", "a") as f:
        f.write("qux\n")
    worker.start(*FILES)
    wait_until(lambda: sink_lines(worker) == ["foo", "bar", "baz", "qux"], 60,
               lambda: f"qux, once: {sink_lines(worker)}\n{worker.output()[-3000:]}")
