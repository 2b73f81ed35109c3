"""The worker's Prometheus metrics at `GET /metrics` on the REST port, scraped and parsed as Prometheus does:
the JMX exporter's names for Kafka Connect's worker, connector, task, source-task and sink-task MBeans, with
values that follow what a file source and a file sink did."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.clients import create_topic, unique_name
from tests.connect_helpers import Worker
from tests.harness import BrokerProcess
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def worker(broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    w = Worker(tmp_path_factory.mktemp("connect-metrics"), broker)
    w.start()
    yield w
    w.stop()


def scrape(worker: Worker) -> dict[tuple[str, frozenset], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{worker.port}/metrics", timeout=30) as resp:
        assert resp.headers["Content-Type"].startswith("text/plain; version=")
        text = resp.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: dict[tuple[str, frozenset], float], name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def test_metrics_follow_a_source_and_a_sink(worker: Worker, broker: BrokerProcess, tmp_path: Path) -> None:
    topic, source, sink = unique_name("metrics"), unique_name("msource"), unique_name("msink")
    create_topic(broker.bootstrap, topic)
    (tmp_path / "in.txt").write_text("1\n2\n3\n")
    worker.call("PUT", f"/connectors/{source}/config", {"connector.class": "FileStreamSource",
                                                        "file": str(tmp_path / "in.txt"), "topic": topic})
    worker.call("PUT", f"/connectors/{sink}/config", {"connector.class": "FileStreamSink",
                                                      "file": str(tmp_path / "out.txt"), "topics": topic})
    src, snk = {"connector": source, "task": "0"}, {"connector": sink, "task": "0"}

    def caught_up() -> bool:
        s = scrape(worker)
        return (value(s, "kafka_connect_source_task_source_record_write_total", **src) == 3 and
                value(s, "kafka_connect_sink_task_sink_record_send_total", **snk) == 3)

    wait_until(caught_up, 60, "3 records written by the source and put to the sink")
    s = scrape(worker)
    assert value(s, "kafka_connect_worker_connector_count") == 2
    assert value(s, "kafka_connect_worker_task_count") == 2
    assert value(s, "kafka_connect_worker_connector_startup_success_total") == 2
    assert value(s, "kafka_connect_worker_connector_startup_failure_total") == 0
    assert value(s, "kafka_connect_worker_task_startup_success_percentage") == 1.0
    assert value(s, "kafka_connect_worker_connector_running_task_count", connector=source) == 1
    assert value(s, "kafka_connect_connector_status", connector=source, status="running") == 1
    assert value(s, "kafka_connect_connector_connector_type", connector=sink, connector_type="sink") == 1
    assert value(s, "kafka_connect_connector_task_status", **snk, status="running") == 1
    assert value(s, "kafka_connect_source_task_source_record_poll_total", **src) == 3
    assert (value(s, "kafka_connect_source_task_source_record_poll_rate", **src) or 0) > 0
    assert value(s, "kafka_connect_sink_task_sink_record_read_total", **snk) == 3
    assert value(s, "kafka_connect_sink_task_partition_count", **snk) == 1
    assert value(s, "kafka_connect_connector_task_batch_size_max", **src) == 3
    assert 0 < (value(s, "kafka_connect_connector_task_running_ratio", **snk) or 0) <= 1
    wait_until(lambda: (value(scrape(worker), "kafka_connect_sink_task_offset_commit_completion_total", **snk) or 0)
               >= 1, 30, "a sink offset commit")
    s = scrape(worker)
    assert value(s, "kafka_connect_connector_task_offset_commit_success_percentage", **snk) == 1.0
    assert value(s, "kafka_connect_connector_task_offset_commit_max_time_ms", **snk) is not None

    assert worker.call("PUT", f"/connectors/{sink}/pause")[0] == 202
    s = scrape(worker)
    assert value(s, "kafka_connect_connector_status", connector=sink, status="paused") == 1
    assert value(s, "kafka_connect_connector_task_status", **snk, status="paused") == 1
    for name in (source, sink):
        assert worker.call("DELETE", f"/connectors/{name}")[0] == 204
    assert value(scrape(worker), "kafka_connect_worker_connector_count") == 0
