"""The Connect REST API of a standalone worker, with the assertions of Kafka's own system test
`connect_rest_test.py` that apply to it: the root resource, the plugins, `config/validate`, creating connectors,
their status and tasks, pause, resume, stop, restart, config updates, delete; and Kafka's error bodies."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clients import create_topic, unique_name
from tests.connect_helpers import Worker
from tests.harness import BrokerProcess
from tests.waiting import wait_until

SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"


@pytest.fixture(scope="module")
def worker(broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    w = Worker(tmp_path_factory.mktemp("connect-rest"), broker)
    w.start()
    yield w
    w.stop()


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
    status, body = worker.call("POST", "/connectors", {"name": source, "config": {
        "connector.class": "FileStreamSource", "tasks.max": "1", "file": str(tmp_path / "in.txt"), "topic": topic}})
    assert status == 201 and body == {"name": source, "config": {
        "connector.class": "FileStreamSource", "tasks.max": "1", "file": str(tmp_path / "in.txt"), "topic": topic,
        "name": source}, "tasks": [{"connector": source, "task": 0}], "type": "source"}
    status, body = worker.call("POST", "/connectors", {"name": source, "config": {"connector.class": SOURCE}})
    assert (status, body) == (409, {"error_code": 409, "message": f"Connector {source} already exists"})
    status, body = worker.call("PUT", f"/connectors/{sink}/config", {
        "connector.class": SINK, "tasks.max": "1", "file": str(tmp_path / "out.txt"), "topics": topic})
    assert status == 201 and body["type"] == "sink"
    wait_until(lambda: states(worker, source) == ("RUNNING", ["RUNNING"]) and
               states(worker, sink) == ("RUNNING", ["RUNNING"]), 60, "both running")
    wait_until(lambda: (tmp_path / "out.txt").exists() and (tmp_path / "out.txt").read_text() == "a\nb\n", 60,
               "the sink file")
    # as Kafka's connect_rest_test expects: the task config names the task class
    assert worker.get(f"/connectors/{source}/tasks") == [{"id": {"connector": source, "task": 0}, "config": {
        "task.class": "org.apache.kafka.connect.file.FileStreamSourceTask", "file": str(tmp_path / "in.txt"),
        "topic": topic, "batch.size": "2000"}}]
    sink_tasks: Any = worker.get(f"/connectors/{sink}/tasks")
    assert sink_tasks[0]["config"]["topics"] == topic  # a sink task's config carries the connector's topics
    listed: Any = worker.get("/connectors?expand=status&expand=info")
    assert listed[source]["status"]["connector"]["state"] == "RUNNING" and listed[sink]["info"]["type"] == "sink"

    assert worker.call("PUT", f"/connectors/{sink}/pause")[0] == 202
    wait_until(lambda: states(worker, sink) == ("PAUSED", ["PAUSED"]), 30, "the sink paused")
    with open(tmp_path / "in.txt", "a") as f:
        f.write("c\n")
    assert worker.call("PUT", f"/connectors/{sink}/resume")[0] == 202
    wait_until(lambda: (tmp_path / "out.txt").read_text() == "a\nb\nc\n", 60, "c after the resume")
    assert states(worker, sink) == ("RUNNING", ["RUNNING"])

    assert worker.call("PUT", f"/connectors/{source}/stop")[0] == 202
    assert states(worker, source) == ("STOPPED", [])
    offsets = worker.get(f"/connectors/{source}/offsets")
    assert offsets == {"offsets": [{"partition": {"filename": str(tmp_path / "in.txt")}, "offset": {"position": 6}}]}
    assert worker.call("PUT", f"/connectors/{source}/resume")[0] == 202
    wait_until(lambda: states(worker, source) == ("RUNNING", ["RUNNING"]), 30, "the source running again")

    status, body = worker.call("POST", f"/connectors/{sink}/restart?includeTasks=true&onlyFailed=false")
    assert status == 202 and body["connector"]["state"] == "RESTARTING" and body["tasks"][0]["state"] == "RESTARTING"
    wait_until(lambda: states(worker, sink) == ("RUNNING", ["RUNNING"]), 30, "the sink restarted")
    assert worker.call("POST", f"/connectors/{sink}/tasks/0/restart")[0] == 204
    assert worker.call("POST", f"/connectors/{sink}/tasks/7/restart")[0] == 404

    status, body = worker.call("PATCH", f"/connectors/{sink}/config", {"tasks.max": "2"})
    assert status == 200 and len(body["tasks"]) == 2
    assert worker.call("DELETE", f"/connectors/{sink}")[0] == 204
    assert worker.call("DELETE", f"/connectors/{source}")[0] == 204
    assert worker.call("GET", f"/connectors/{sink}") == (404, {"error_code": 404, "message": f"Connector {sink} not found"})
    assert sink not in worker.get("/connectors")
