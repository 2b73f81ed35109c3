"""The Connect REST API, with the assertions of Kafka's own system test `connect_rest_test.py`: the root resource,
the plugins, `config/validate`, creating connectors, their status and tasks, pause, resume, stop, restart, config
updates, delete, and Kafka's error bodies; asked of a standalone worker and, as Kafka's test asks them, of a
Connect cluster of two distributed workers with each rebalance protocol (`default` (eager), `compatible`,
`sessioned`), where a write may go through a follower to the leader and states change asynchronously."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clients import create_topic, unique_name
from tests.connect_helpers import Worker
from tests.harness import BrokerProcess, wait_port
from tests.waiting import wait_until

SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return {"group.min.session.timeout.ms": "1000", "group.initial.rebalance.delay.ms": "0"}


@pytest.fixture(scope="module", params=["standalone", "default", "compatible", "sessioned"])
def worker(request: pytest.FixtureRequest, broker: BrokerProcess,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    """The worker the test asks: the standalone one, or the first of a two-worker cluster."""
    from tests.connect.test_distributed import DistributedWorker

    if request.param == "standalone":
        w = Worker(tmp_path_factory.mktemp("connect-rest"), broker)
        w.start()
        yield w
        w.stop()
        return
    root = tmp_path_factory.mktemp(f"connect-rest-{request.param}")
    cluster = [DistributedWorker(root / f"w{i}", broker, f"rest-{request.param}-{root.name}", request.param)
               for i in range(2)]
    try:
        for w in cluster:
            w.start()
        for w in cluster:
            wait_port(w.port, 60, w.proc)
        wait_until(lambda: all(w.call("GET", "/connectors")[0] == 200 for w in cluster), 60, "the cluster formed")
        yield cluster[0]
    finally:
        for w in cluster:
            w.stop()


def _ok(answer: tuple[int, Any]) -> tuple[int, Any] | None:
    """An answer that is not a rebalance's 409 (a Connect cluster's, while it has no leader)."""
    return None if answer[0] == 409 and "already exists" not in str(answer[1]) else answer


def _write(worker: Worker, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """A write, sent again while a Connect cluster answers a rebalance's 409 (Kafka's clients retry it too)."""
    answer: tuple[int, Any] = wait_until(lambda: _ok(worker.call(method, path, body)), 30, f"{method} {path}")
    return answer


def states(worker: Worker, name: str) -> tuple[str, list[str]]:
    status = worker.get(f"/connectors/{name}/status")
    return status["connector"]["state"], [t["state"] for t in status["tasks"]]


def test_root_health_and_plugins(worker: Worker) -> None:
    root = worker.get("/")
    assert set(root) == {"version", "commit", "kafka_cluster_id"} and root["kafka_cluster_id"]
    assert worker.get("/health")["status"] == "healthy"
    plugins = {p["class"]: p["type"] for p in worker.get("/connector-plugins")}
    assert plugins[SOURCE] == "source" and plugins[SINK] == "sink"
    everything = {p["class"] for p in worker.get("/connector-plugins?connectorsOnly=false")}
    assert "org.apache.kafka.connect.json.JsonConverter" in everything


def test_validate(worker: Worker) -> None:
    status, body = worker.call("PUT", "/connector-plugins/FileStreamSinkConnector/config/validate",
                               {"connector.class": SINK, "name": "v", "tasks.max": "1", "topics": "t", "file": "/tmp/x"})
    assert status == 200 and body["name"] == SINK and body["error_count"] == 0
    names = {c["value"]["name"] for c in body["configs"]}
    assert {"name", "connector.class", "tasks.max", "file"} <= names
    # a sink needs topics or topics.regex; tasks.max must be a number at least 1
    status, body = worker.call("PUT", "/connector-plugins/FileStreamSinkConnector/config/validate",
                               {"connector.class": SINK, "name": "v", "tasks.max": "0"})
    assert status == 200 and body["error_count"] == 2
    errors = {c["value"]["name"]: c["value"]["errors"] for c in body["configs"] if c["value"]["errors"]}
    assert errors == {"tasks.max": ["Invalid value 0 for configuration tasks.max: Value must be at least 1"],
                      "topics": ["Must configure one of topics or topics.regex"]}
    status, body = worker.call("PUT", "/connector-plugins/FileStreamSource/config/validate",
                               {"connector.class": SINK, "name": "v"})
    assert status == 400 and body["error_code"] == 400


def test_connector_lifecycle(worker: Worker, broker: BrokerProcess, tmp_path: Path) -> None:
    topic = unique_name("rest")
    create_topic(broker.bootstrap, topic)
    source, sink = unique_name("source"), unique_name("sink")
    (tmp_path / "in.txt").write_text("a\nb\n")
    status, body = wait_until(lambda: _ok(worker.call("POST", "/connectors", {"name": source, "config": {
        "connector.class": "FileStreamSource", "tasks.max": "1", "file": str(tmp_path / "in.txt"), "topic": topic}})),
        30, "the source created")
    # a standalone worker answers with the connector's tasks; a cluster, like Kafka's, before its leader has written
    # their configs (tasks [])
    tasks = [{"connector": source, "task": 0}] if type(worker) is Worker else []
    assert status == 201 and body == {"name": source, "config": {
        "connector.class": "FileStreamSource", "tasks.max": "1", "file": str(tmp_path / "in.txt"), "topic": topic,
        "name": source}, "tasks": tasks, "type": "source"}
    assert wait_until(lambda: _ok(worker.call("POST", "/connectors", {"name": source, "config": {
        "connector.class": SOURCE}})), 30, "the second create's answer") == (
        409, {"error_code": 409, "message": f"Connector {source} already exists"})
    status, body = wait_until(lambda: _ok(worker.call("PUT", f"/connectors/{sink}/config", {
        "connector.class": SINK, "tasks.max": "1", "file": str(tmp_path / "out.txt"), "topics": topic})), 30,
        "the sink created")
    assert status == 201 and body["type"] == "sink"
    wait_until(lambda: states(worker, source) == ("RUNNING", ["RUNNING"]) and
               states(worker, sink) == ("RUNNING", ["RUNNING"]), 60, "both running")
    wait_until(lambda: (tmp_path / "out.txt").exists() and (tmp_path / "out.txt").read_text() == "a\nb\n", 60,
               lambda: f"the sink file: {(tmp_path / 'out.txt').read_text() if (tmp_path / 'out.txt').exists() else None!r}")
    # as Kafka's connect_rest_test expects: the task config is the connector's, naming the task class too
    assert worker.get(f"/connectors/{source}/tasks") == [{"id": {"connector": source, "task": 0}, "config": {
        **worker.get(f"/connectors/{source}/config"), "task.class": "org.apache.kafka.connect.file.FileStreamSourceTask"}}]
    assert worker.get(f"/connectors/{source}/config")["file"] == str(tmp_path / "in.txt")
    sink_tasks: Any = worker.get(f"/connectors/{sink}/tasks")
    assert sink_tasks[0]["config"]["topics"] == topic  # a sink task's config carries the connector's topics
    listed: Any = worker.get("/connectors?expand=status&expand=info")
    assert listed[source]["status"]["connector"]["state"] == "RUNNING" and listed[sink]["info"]["type"] == "sink"

    assert _write(worker, "PUT", f"/connectors/{sink}/pause")[0] == 202
    wait_until(lambda: states(worker, sink) == ("PAUSED", ["PAUSED"]), 30,
               lambda: f"the sink paused: {worker.get(f'/connectors/{sink}/status')}")
    with open(tmp_path / "in.txt", "a") as f:
        f.write("c\n")
    assert _write(worker, "PUT", f"/connectors/{sink}/resume")[0] == 202
    wait_until(lambda: (tmp_path / "out.txt").read_text() == "a\nb\nc\n", 60, "c after the resume")
    wait_until(lambda: states(worker, sink) == ("RUNNING", ["RUNNING"]), 30, "the sink running")

    assert _write(worker, "PUT", f"/connectors/{source}/stop")[0] == 204
    wait_until(lambda: states(worker, source) == ("STOPPED", []), 30, "the source stopped")
    wait_until(lambda: worker.get(f"/connectors/{source}/offsets") == {"offsets": [
        {"partition": {"filename": str(tmp_path / "in.txt")}, "offset": {"position": 6}}]}, 30, "the source's offsets")
    assert wait_until(lambda: _ok(worker.call("PUT", f"/connectors/{source}/resume")), 30, "the resume")[0] == 202
    wait_until(lambda: states(worker, source) == ("RUNNING", ["RUNNING"]), 30, "the source running again")

    status, body = _write(worker, "POST", f"/connectors/{sink}/restart?includeTasks=true&onlyFailed=false")
    assert status == 202 and body["connector"]["state"] == "RESTARTING" and body["tasks"][0]["state"] == "RESTARTING"
    wait_until(lambda: states(worker, sink) == ("RUNNING", ["RUNNING"]), 30, "the sink restarted")
    # (a cluster answers 409 while the restart's rebalance is under way, as Kafka's does)
    wait_until(lambda: worker.call("POST", f"/connectors/{sink}/tasks/0/restart")[0] == 204, 30, "the task restarted")
    assert worker.call("POST", f"/connectors/{sink}/tasks/7/restart")[0] == 404

    status, body = wait_until(lambda: _ok(worker.call("PATCH", f"/connectors/{sink}/config", {"tasks.max": "2"})), 30,
                              "the config patched")
    assert status == 200 and body["config"]["tasks.max"] == "2"
    # the new task configs: at once on a standalone worker, once the connector has written them in a cluster
    wait_until(lambda: len(worker.get(f"/connectors/{sink}")["tasks"]) == 2, 30, "the sink's two tasks")
    assert _write(worker, "DELETE", f"/connectors/{sink}")[0] == 204
    assert _write(worker, "DELETE", f"/connectors/{source}")[0] == 204
    assert worker.call("GET", f"/connectors/{sink}") == (404, {"error_code": 404, "message": f"Connector {sink} not found"})
    assert sink not in worker.get("/connectors")


def test_unknown_connectors_and_tasks_get_kafkas_messages(worker: Worker, request: pytest.FixtureRequest) -> None:
    """Each endpoint's 404 for a connector or task that does not exist, worded as Kafka 4.4's herders word it:
    the standalone and the distributed one differ on restarts (tests/jvm/test_connect_interop.py compares the
    distributed worker's with Kafka's own)."""
    standalone = request.node.callspec.params["worker"] == "standalone"
    expected = {
        ("GET", "/connectors/nope"): "Connector nope not found",
        ("GET", "/connectors/nope/status"): "No status found for connector nope",
        ("GET", "/connectors/nope/tasks/0/status"): "No status found for task nope-0",
        ("PUT", "/connectors/nope/pause"): "Unknown connector nope",
        ("PUT", "/connectors/nope/resume"): "Unknown connector nope",
        ("PUT", "/connectors/nope/stop"): "Unknown connector nope",
        ("POST", "/connectors/nope/restart"): "Connector nope not found" if standalone else "Unknown connector: nope",
        ("POST", "/connectors/nope/restart?includeTasks=true"): "Unknown connector: nope",
        ("POST", "/connectors/nope/tasks/0/restart"):
            "Connector nope not found" if standalone else "Unknown connector: nope",
    }
    for (method, path), message in expected.items():
        assert _write(worker, method, path) == (404, {"error_code": 404, "message": message}), (method, path)
    assert _write(worker, "POST", "/connectors", {"name": "no-class", "config": {"file": "x"}}) == (
        400, {"error_code": 400, "message": "Connector config contains no connector type"})
