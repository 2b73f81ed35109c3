"""Apache Kafka's Connect worker (connect-runtime 4.4.0, `ConnectDistributed`) and an Odradek worker in one
Connect group on an Odradek broker: the group forms with the `sessioned` protocol (KIP-507: each side signs the
task configs it has the other's leader write, with the session key either leader wrote), a connector created
through either REST API runs on the worker the leader gives it, and each worker reads the other's config and
status records. The Java side's
FileStream connectors are tests/jvm/FileStream*.java (Maven Central has no connect-file 4.4.0)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.connect.test_distributed import DistributedWorker
from tests.harness import BrokerProcess, stop_process, wait_port
from tests.jvm.apache_kafka import classpath, java, runner_dir
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return {"group.min.session.timeout.ms": "1000", "group.initial.rebalance.delay.ms": "0"}


class JavaWorker(DistributedWorker):
    """Kafka's own distributed worker with the same properties."""

    def start(self, *_files: str) -> None:
        props = (self.cwd / "worker.properties").read_text() + "rest.advertised.host.name=127.0.0.1\n"
        (self.cwd / "worker.properties").write_text(props)
        with open(self.cwd / "connect.out", "ab") as out:
            self.proc = subprocess.Popen(java("-Xmx256m", "-cp", f"{runner_dir()}{os.pathsep}{classpath()}",
                                              "org.apache.kafka.connect.cli.ConnectDistributed", "worker.properties"),
                                         cwd=self.cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


@contextmanager
def _running_workers(ours: DistributedWorker, theirs: JavaWorker) -> Iterator[tuple[DistributedWorker, JavaWorker]]:
    try:
        ours.start()
        theirs.start()
        wait_port(ours.port, 60, ours.proc)
        wait_port(theirs.port, 90, theirs.proc)
        # Jetty answers before the herder's resources are there
        wait_until(lambda: ready_of(ours) and ready_of(theirs), 90, "both REST APIs")
        yield ours, theirs
    finally:
        for w in (ours, theirs):
            if w.proc is not None:
                stop_process(w.proc)


@pytest.fixture(scope="module")
def pair(broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[tuple[DistributedWorker, JavaWorker]]:
    """One group of the two workers."""
    tmp_path = tmp_path_factory.mktemp("interop")
    group = f"interop-{os.getpid()}"
    with _running_workers(DistributedWorker(tmp_path / "odradek", broker, group),
                          JavaWorker(tmp_path / "kafka", broker, group)) as workers:
        yield workers


@pytest.fixture(scope="module")
def solo(broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[tuple[DistributedWorker, JavaWorker]]:
    """An Odradek worker and a Kafka worker each alone in a group of its own: each leads its group, so each
    answers every REST call itself, writes included."""
    tmp_path = tmp_path_factory.mktemp("solo")
    with _running_workers(DistributedWorker(tmp_path / "odradek", broker, f"solo-odradek-{os.getpid()}"),
                          JavaWorker(tmp_path / "kafka", broker, f"solo-kafka-{os.getpid()}")) as workers:
        yield workers


def ready_of(w: DistributedWorker) -> bool:
    try:
        return w.call("GET", "/connectors")[0] == 200
    except ValueError:  # Jetty's HTML 404 page
        return False


def _status(w: DistributedWorker, name: str) -> dict[str, Any]:
    code, body = w.call("GET", f"/connectors/{name}/status")
    return body if code == 200 else {}


def _running(w: DistributedWorker, name: str) -> bool:
    s = _status(w, name)
    return s.get("connector", {}).get("state") == "RUNNING" and bool(s.get("tasks")) and \
        all(t["state"] == "RUNNING" for t in s["tasks"])


def create(w: DistributedWorker, name: str, config: dict[str, str]) -> None:
    def attempt() -> bool:  # 409 while the group rebalances
        code, body = w.call("POST", "/connectors", {"name": name, "config": config})
        assert code in (201, 409), (code, body)
        return code == 201
    wait_until(attempt, 90, lambda: f"{name} created\n{w.output()[-3000:]}")


def test_a_kafka_worker_and_an_odradek_worker_share_connectors(pair: tuple[DistributedWorker, JavaWorker],
                                                               tmp_path: Path) -> None:
    ours, theirs = pair
    source, sink = tmp_path / "in.txt", tmp_path / "out.txt"
    topic = f"interop-{tmp_path.name[-20:]}"
    source.write_text("".join(f"line-{i}\n" for i in range(10)))

    create(theirs, "src", {"connector.class": "FileStreamSource", "file": str(source), "topic": topic})
    create(ours, "snk", {"connector.class": "FileStreamSink", "file": str(sink), "topics": topic})
    both = (ours, theirs)
    wait_until(lambda: all(_running(w, n) for w in both for n in ("src", "snk")), 120,
               lambda: f"both connectors running as both workers see them: {_status(ours, 'src')} "
                       f"{_status(theirs, 'snk')}\n{ours.output()[-3000:]}")
    wait_until(lambda: sink.exists() and set(sink.read_text().splitlines()) >= {f"line-{i}" for i in range(10)}, 60,
               lambda: f"the sink file to hold every line: {sink.read_text() if sink.exists() else None}")
    for w in both:  # each reads the configs the other's side wrote, and the statuses of both
        assert sorted(w.get("/connectors")) == ["snk", "src"]
        assert w.get("/connectors/src/config")["file"] == str(source)
        assert w.get("/connectors/snk/config")["topics"] == topic
    workers = {s["worker_id"] for n in ("src", "snk") for s in [_status(ours, n)["connector"],
                                                                *_status(ours, n)["tasks"]]}
    assert workers == {ours.worker_id, theirs.worker_id}, workers
    for name in ("src", "snk"):  # the same states and workers through either API
        mine, kafkas = _status(ours, name), _status(theirs, name)
        assert mine["connector"]["worker_id"] == kafkas["connector"]["worker_id"]
        assert [(t["id"], t["state"], t["worker_id"]) for t in mine["tasks"]] == \
            [(t["id"], t["state"], t["worker_id"]) for t in kafkas["tasks"]]

    # our worker leaves and comes back: the Java worker leads now; a connector created through our REST API is
    # forwarded to it, and task configs our worker computes are written by it
    assert ours.proc is not None
    stop_process(ours.proc)
    wait_until(lambda: all(_running(theirs, n) and {_status(theirs, n)["connector"]["worker_id"]} == {theirs.worker_id}
                           for n in ("src", "snk")), 60, lambda: f"the Java worker runs both: {_status(theirs, 'src')}")
    ours.start()
    wait_port(ours.port, 60, ours.proc)
    sink2 = tmp_path / "out2.txt"
    for i in range(3):
        create(ours, f"snk{i}", {"connector.class": "FileStreamSink", "file": str(sink2), "topics": topic})
    wait_until(lambda: all(_running(w, f"snk{i}") for w in both for i in range(3)), 120,
               lambda: f"the new sinks running: {[_status(theirs, f'snk{i}') for i in range(3)]}\n"
                       f"{ours.output()[-3000:]}")
    workers = {s["worker_id"] for i in range(3) for s in [_status(theirs, f"snk{i}")["connector"],
                                                         *_status(theirs, f"snk{i}")["tasks"]]}
    assert ours.worker_id in workers, workers
    wait_until(lambda: sink2.exists() and len(sink2.read_text().splitlines()) >= 30, 60,
               lambda: f"the three sinks wrote every line: {sink2.read_text() if sink2.exists() else None}")


def test_both_rest_apis_answer_alike(solo: tuple[DistributedWorker, JavaWorker], tmp_path: Path) -> None:
    """The same REST calls to an Odradek worker and to a Kafka worker, each leading a group of its own, get the
    same status and body (worker ids aside): a connector created, read (config, tasks, status, active topics,
    offsets), PUT unchanged, PATCHed, paused, resumed, restarted, stopped and deleted, and the errors (an
    existing name, no connector class, a name that differs from the path's, unknown connectors and tasks). Each
    side runs its own FileStream classes (tests/jvm's Java ones behave as Kafka's), so versions are masked."""
    ours, theirs = solo
    source = tmp_path / "in.txt"
    source.write_text("a\nb\n")
    name = f"alike-{os.getpid()}"
    config = {"connector.class": "FileStreamSource", "file": str(source), "topic": name, "tasks.max": "1"}
    workers = {"Odradek": ours, "Kafka": theirs}
    differ: list[str] = []

    def masked(w: DistributedWorker, answer: tuple[int, Any]) -> tuple[int, Any]:
        """Worker ids and plugin versions (each side runs its own FileStream classes) masked."""
        text = re.sub(r'"version": "[^"]*"', '"version": "<version>"', json.dumps(answer[1]))
        return answer[0], json.loads(text.replace(w.worker_id, "<worker>"))

    def alike(method: str, path: str, body: Any = None) -> tuple[int, Any]:
        answers = {k: masked(w, w.call(method, path, body)) for k, w in workers.items()}
        if answers["Odradek"] != answers["Kafka"]:
            differ.append(f"{method} {path}\n  Odradek: {answers['Odradek']}\n  Kafka:   {answers['Kafka']}")
        return answers["Odradek"]

    def settled(what: str, check: Callable[[DistributedWorker], bool]) -> None:
        wait_until(lambda: all(check(w) for w in workers.values()), 90,
                   lambda: f"{what}: {[_status(w, name) for w in workers.values()]}")

    def state_is(state: str) -> Callable[[DistributedWorker], bool]:
        return lambda w: _status(w, name).get("connector", {}).get("state") == state

    assert alike("POST", "/connectors", {"name": name, "config": config})[0] == 201
    settled("running", lambda w: _running(w, name))
    settled("the active topic recorded", lambda w: bool(w.get(f"/connectors/{name}/topics")[name]["topics"]))
    settled("both lines' offset committed", lambda w: (w.get(f"/connectors/{name}/offsets")["offsets"] or [{}])[0]
            .get("offset") == {"position": 4})
    for path in ("", "/config", "/tasks", "/status", "/topics", "/offsets", "/tasks/0/status"):
        alike("GET", f"/connectors/{name}{path}")
    alike("GET", "/connectors?expand=status&expand=info")
    alike("PUT", f"/connectors/{name}/config", config)
    alike("PATCH", f"/connectors/{name}/config", {"tasks.max": "1"})
    alike("POST", "/connectors", {"name": name, "config": config})
    alike("POST", "/connectors", {"name": "no-class", "config": {"file": "x"}})
    alike("POST", "/connectors", {"name": "no-topic", "config": {"connector.class": "FileStreamSource", "file": "x"}})
    alike("POST", "/connectors", {"name": f"{name}-stopped", "initial_state": "STOPPED", "config": config})
    alike("PUT", f"/connectors/{name}-put/config", {**config, "name": f"{name}-put"})
    wait_until(lambda: all(_status(w, f"{name}-stopped").get("connector", {}).get("state") == "STOPPED"
                           for w in workers.values()), 90, "the connector created stopped, stopped")
    alike("GET", f"/connectors/{name}-stopped/status")
    alike("PUT", f"/connectors/{name}/config", {**config, "name": "another"})
    alike("GET", f"/connectors/{name}/tasks/7/status")
    alike("PUT", f"/connectors/{name}/pause")
    settled("paused", state_is("PAUSED"))
    alike("GET", f"/connectors/{name}/status")
    alike("PUT", f"/connectors/{name}/resume")
    settled("resumed", lambda w: _running(w, name))
    alike("POST", f"/connectors/{name}/restart")
    settled("restarted", lambda w: _running(w, name))
    alike("POST", f"/connectors/{name}/restart?includeTasks=true&onlyFailed=true")
    alike("POST", f"/connectors/{name}/tasks/0/restart")
    settled("running again", lambda w: _running(w, name))
    alike("PUT", f"/connectors/{name}/stop")
    settled("stopped", state_is("STOPPED"))
    alike("GET", f"/connectors/{name}/status")
    alike("GET", f"/connectors/{name}/offsets")
    alike("PATCH", f"/connectors/{name}/offsets",
          {"offsets": [{"partition": {"filename": str(source)}, "offset": {"position": 2}}]})
    alike("GET", f"/connectors/{name}/offsets")
    alike("PATCH", f"/connectors/{name}/offsets", {"offsets": [{"partition": {"filename": str(source)},
                                                                "offset": {"position": -1}}]})
    alike("DELETE", f"/connectors/{name}/offsets")
    alike("GET", f"/connectors/{name}/offsets")
    alike("PUT", f"/connectors/{name}/topics/reset")
    # both answer from what they have read of the status topic: the tombstones, once read back
    settled("the active topics reset", lambda w: w.get(f"/connectors/{name}/topics")[name]["topics"] == [])
    alike("DELETE", f"/connectors/{name}")
    for method, path, body in [
        ("GET", "/connectors/nope", None), ("GET", "/connectors/nope/status", None),
        ("GET", "/connectors/nope/config", None), ("GET", "/connectors/nope/tasks", None),
        ("GET", "/connectors/nope/topics", None), ("GET", "/connectors/nope/offsets", None),
        ("GET", "/connectors/nope/tasks/0/status", None), ("DELETE", "/connectors/nope", None),
        ("PATCH", "/connectors/nope/config", {"a": "b"}), ("PUT", "/connectors/nope/pause", None),
        ("PUT", "/connectors/nope/resume", None), ("PUT", "/connectors/nope/stop", None),
        ("POST", "/connectors/nope/restart", None), ("POST", "/connectors/nope/tasks/0/restart", None),
    ]:
        alike(method, path, body)
    assert not differ, "\n".join(differ)
