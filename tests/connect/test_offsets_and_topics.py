"""KIP-875's offset changes (`PATCH`/`DELETE /connectors/{name}/offsets`) and KIP-558's active topics
(`GET /connectors/{name}/topics`, `PUT .../topics/reset`) on a standalone worker with Kafka's file connectors:
a source's offsets in the worker's offset store, a sink's in its consumer group, each changed only when the
connector is STOPPED, then seen by the connector when it runs again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients import create_topic, unique_name
from tests.connect_helpers import Worker
from tests.harness import BrokerProcess
from tests.waiting import wait_until

NOT_STOPPED = ("Connectors must be in the STOPPED state before their offsets can be modified. This can be done for "
               "the specified connector by issuing a 'PUT' request to the '/connectors/{}/stop' endpoint")


@pytest.fixture(scope="module")
def worker(broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    w = Worker(tmp_path_factory.mktemp("connect-offsets"), broker)
    w.start()
    yield w
    w.stop()


def running(worker: Worker, name: str) -> bool:
    status = worker.get(f"/connectors/{name}/status")
    return status["connector"]["state"] == "RUNNING" and [t["state"] for t in status["tasks"]] == ["RUNNING"]


def test_alter_and_reset_offsets_of_a_source_and_a_sink(worker: Worker, broker: BrokerProcess, tmp_path: Path) -> None:
    topic = unique_name("kip875")
    create_topic(broker.bootstrap, topic)
    source, sink = unique_name("source"), unique_name("sink")
    infile, outfile = tmp_path / "in.txt", tmp_path / "out.txt"
    infile.write_text("a\nb\n")
    worker.call("PUT", f"/connectors/{source}/config", {"connector.class": "FileStreamSource", "file": str(infile),
                                                        "topic": topic})
    worker.call("PUT", f"/connectors/{sink}/config", {"connector.class": "FileStreamSink", "file": str(outfile),
                                                      "topics": topic})
    wait_until(lambda: outfile.exists() and outfile.read_text() == "a\nb\n", 60, "the sink file")
    wait_until(lambda: worker.get(f"/connectors/{source}/offsets")["offsets"], 30, "the source offsets committed")
    assert worker.get(f"/connectors/{source}/topics") == {source: {"topics": [topic]}}
    assert worker.get(f"/connectors/{sink}/topics") == {sink: {"topics": [topic]}}

    # only a STOPPED connector's offsets change
    position = {"partition": {"filename": str(infile)}, "offset": {"position": 2}}
    assert worker.call("PATCH", f"/connectors/{source}/offsets", {"offsets": [position]}) == (
        400, {"error_code": 400, "message": NOT_STOPPED.format(source)})
    assert worker.call("DELETE", f"/connectors/{sink}/offsets") == (
        400, {"error_code": 400, "message": NOT_STOPPED.format(sink)})
    assert worker.call("PATCH", "/connectors/nope/offsets", {"offsets": [position]})[0] == 404

    # the source: back to position 2, so "b" is read again
    assert worker.call("PUT", f"/connectors/{source}/stop")[0] == 204
    assert worker.call("PATCH", f"/connectors/{source}/offsets", {"offsets": []}) == (
        400, {"error_code": 400, "message": "Partitions / offsets need to be provided for an alter offsets request"})
    status, body = worker.call("PATCH", f"/connectors/{source}/offsets", {"offsets": [
        {"partition": {"filename": str(infile)}, "offset": {"position": -1}}]})
    assert (status, body["message"]) == (500, "The value for the 'position' key in the offset should be a "
                                              "non-negative value")
    assert worker.call("PATCH", f"/connectors/{source}/offsets", {"offsets": [position]}) == (
        200, {"message": "The offsets for this connector have been altered successfully"})
    assert worker.get(f"/connectors/{source}/offsets") == {"offsets": [position]}
    assert worker.call("PUT", f"/connectors/{source}/resume")[0] == 202
    wait_until(lambda: outfile.read_text() == "a\nb\nb\n", 60, "b read again after the alter")

    # the sink: its group's committed offset moved back, deleted per partition, then the group reset
    assert worker.call("PUT", f"/connectors/{sink}/stop")[0] == 204
    tp = {"kafka_topic": topic, "kafka_partition": 0}
    wait_until(lambda: worker.get(f"/connectors/{sink}/offsets") == {"offsets": [
        {"partition": tp, "offset": {"kafka_offset": 3}}]}, 30, "the sink's committed offsets")
    status, body = worker.call("PATCH", f"/connectors/{sink}/offsets", {"offsets": [
        {"partition": {"kafka_topic": topic, "kafka_partition": "x"}, "offset": {"kafka_offset": 1}}]})
    assert status == 400 and body["message"].startswith("Failed to parse the following Kafka partition value")
    assert worker.call("PATCH", f"/connectors/{sink}/offsets", {"offsets": [
        {"partition": {**tp, "kafka_partition": "0"}, "offset": {"kafka_offset": "2"}}]}) == (
        200, {"message": "The offsets for this connector have been altered successfully"})
    assert worker.get(f"/connectors/{sink}/offsets") == {"offsets": [{"partition": tp, "offset": {"kafka_offset": 2}}]}
    assert worker.call("PATCH", f"/connectors/{sink}/offsets", {"offsets": [{"partition": tp, "offset": None}]})[0] \
        == 200
    assert worker.get(f"/connectors/{sink}/offsets") == {"offsets": []}
    worker.call("PATCH", f"/connectors/{sink}/offsets", {"offsets": [{"partition": tp, "offset": {"kafka_offset": 2}}]})
    assert worker.call("DELETE", f"/connectors/{sink}/offsets") == (
        200, {"message": "The offsets for this connector have been reset successfully"})
    assert worker.get(f"/connectors/{sink}/offsets") == {"offsets": []}
    assert worker.call("DELETE", f"/connectors/{sink}/offsets")[0] == 200  # idempotent: the group is gone already
    assert worker.call("PUT", f"/connectors/{sink}/resume")[0] == 202
    wait_until(lambda: outfile.read_text() == "a\nb\nb\n" * 2, 60, "the topic read again from the start")

    # the source reset erases its entries
    assert worker.call("PUT", f"/connectors/{source}/stop")[0] == 204
    assert worker.call("DELETE", f"/connectors/{source}/offsets") == (
        200, {"message": "The offsets for this connector have been reset successfully"})
    assert worker.get(f"/connectors/{source}/offsets") == {"offsets": []}

    # active topics: reset, then forgotten with the connector
    assert worker.call("PUT", f"/connectors/{sink}/topics/reset")[0] == 202
    assert worker.get(f"/connectors/{sink}/topics") == {sink: {"topics": []}}
    assert worker.call("DELETE", f"/connectors/{source}")[0] == 204
    assert worker.get(f"/connectors/{source}/topics") == {source: {"topics": []}}
    assert worker.call("DELETE", f"/connectors/{sink}")[0] == 204
