"""An unmodified REST client from PyPI, kafka-connect-py (its `kc` command and its `KafkaConnect` class), drives
a standalone worker: cluster info, create, list (plain, expanded, filtered by state), status, pause, resume,
restart with tasks, a task's status, active topics, plugins, delete."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka_connect import kafka_connect

from odradek import __version__
from tests.clients import create_topic, unique_name
from tests.connect_helpers import Worker
from tests.harness import BrokerProcess
from tests.waiting import wait_until

KC = [sys.executable, "-c", "from kafka_connect.cli import cli; cli()"]


@pytest.fixture(scope="module")
def worker(broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    w = Worker(tmp_path_factory.mktemp("connect-kc"), broker)
    w.start()
    yield w
    w.stop()


def kc(worker: Worker, *args: str) -> Any:
    """`kc --url ... ARGS`: its JSON output (None when it prints nothing or "null")."""
    done = subprocess.run([*KC, "--url", f"http://127.0.0.1:{worker.port}", *args], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    out = done.stdout.strip()
    return json.loads(out) if out else None


def test_kc_manages_connectors(worker: Worker, broker: BrokerProcess, tmp_path: Path) -> None:
    topic, name = unique_name("kc"), unique_name("kc-source")
    create_topic(broker.bootstrap, topic)
    (tmp_path / "in.txt").write_text("x\ny\n")
    assert kc(worker, "info")["kafka_cluster_id"]
    created = kc(worker, "create", "-d", json.dumps({"name": name, "config": {
        "connector.class": "FileStreamSource", "file": str(tmp_path / "in.txt"), "topic": topic}}))
    assert created["name"] == name and created["type"] == "source"
    assert name in kc(worker, "list")
    client = kafka_connect.KafkaConnect(url=f"http://127.0.0.1:{worker.port}")
    wait_until(lambda: client.get_connector_status(name)["tasks"][:1] == [
        {"id": 0, "state": "RUNNING", "worker_id": client.get_connector_status(name)["connector"]["worker_id"],
         "version": __version__}],  # Kafka 4.x's statuses carry the task's version
               30, "the task running")
    assert name in client.list_connectors(expand="status", state="RUNNING")
    assert {p["class"] for p in client.list_connector_plugins()} >= {
        "org.apache.kafka.connect.file.FileStreamSourceConnector"}

    kc(worker, "pause", name)
    wait_until(lambda: client.get_connector_status(name)["connector"]["state"] == "PAUSED", 30, "paused")
    assert name in client.list_connectors(expand="info", state="PAUSED")
    kc(worker, "resume", name)
    wait_until(lambda: client.get_connector_status(name)["connector"]["state"] == "RUNNING", 30, "resumed")
    assert kc(worker, "restart", name, "--include-tasks")["name"] == name  # kc prints the status after
    wait_until(lambda: client.get_connector_task_status(name, 0)["state"] == "RUNNING", 30, "the task restarted")
    planned = client.restart_connector(name, include_tasks=True)
    assert planned["connector"]["state"] == "RESTARTING" and planned["tasks"][0]["state"] == "RESTARTING"
    wait_until(lambda: client.get_connector_task_status(name, 0)["state"] == "RUNNING", 30, "the task restarted")
    wait_until(lambda: client.list_connector_topics(name) == {name: {"topics": [topic]}}, 30, "the active topic")
    assert kc(worker, "task-status", name, "0")["state"] == "RUNNING"
    assert kc(worker, "list-topics", name) == {name: {"topics": [topic]}}

    kc(worker, "delete", name)
    assert name not in kc(worker, "list")
