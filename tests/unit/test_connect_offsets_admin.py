"""KIP-875's request checks (a connector must be STOPPED; Kafka's messages for malformed sink and source
offsets), KIP-558's active-topic tracker and the task metrics' arithmetic, without a broker."""

from __future__ import annotations

import pytest

from odradek.connect import offsets_admin
from odradek.connect.active_topics import ActiveTopics
from odradek.connect.metrics import TaskMetrics
from odradek.connect.offsets_admin import OffsetsError
from odradek.connect.worker import PAUSED, STOPPED, ConnectorState, TaskState


def test_only_a_stopped_connector_without_tasks_has_its_offsets_changed() -> None:
    state = ConnectorState("c", {}, "sink", target=PAUSED, tasks=[TaskState(0)])
    with pytest.raises(OffsetsError, match=r"must be in the STOPPED state .* '/connectors/c/stop' endpoint"):
        offsets_admin.check_stopped(state)
    state.target = STOPPED
    with pytest.raises(OffsetsError):
        offsets_admin.check_stopped(state)  # its tasks have not stopped yet
    state.tasks = []
    offsets_admin.check_stopped(state)


@pytest.mark.parametrize(("entry", "message"), [
    ({"offset": {"kafka_offset": 1}}, "cannot be null or missing"),
    ({"partition": {"kafka_topic": "t"}, "offset": None}, "must contain the keys 'kafka_topic' and 'kafka_partition'"),
    ({"partition": {"kafka_topic": None, "kafka_partition": 0}}, "Kafka topic names must be valid strings"),
    ({"partition": {"kafka_topic": "t", "kafka_partition": None}}, "Kafka partitions must be valid numbers"),
    ({"partition": {"kafka_topic": "t", "kafka_partition": 1.5}}, "Failed to parse the following Kafka partition"),
    ({"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"x": 1}}, "should either be null or contain"),
    ({"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": "ten"}},
     "Failed to parse the following Kafka offset value in the provided offsets: 'ten'"),
])
def test_malformed_sink_offsets_get_kafkas_messages(entry: dict, message: str) -> None:
    with pytest.raises(OffsetsError, match=message) as info:
        offsets_admin._sink_entries([entry])  # noqa: SLF001
    assert info.value.status == 400


def test_sink_and_source_offsets_parse() -> None:
    parsed = offsets_admin._sink_entries([  # noqa: SLF001
        {"partition": {"kafka_topic": "t", "kafka_partition": "3"}, "offset": {"kafka_offset": "10"}},
        {"partition": {"kafka_topic": "t", "kafka_partition": 4}, "offset": None}])
    assert parsed == {("t", 3): 10, ("t", 4): None}
    source = offsets_admin._source_entries([{"partition": {"f": "a"}, "offset": {"position": 2}}])  # noqa: SLF001
    assert source == {b'{"f":"a"}': {"position": 2}}
    with pytest.raises(OffsetsError, match="only contain primitive types"):
        offsets_admin._source_entries([{"partition": {"f": "a"}, "offset": {"position": [1]}}])  # noqa: SLF001


def test_active_topics() -> None:
    tracker = ActiveTopics()
    for topic in ("b", "a", "b"):
        tracker.record("c", topic)
    assert tracker.topics("c") == ["a", "b"] and tracker.topics("other") == []
    tracker.reset("c")
    assert tracker.topics("c") == []
    off = ActiveTopics(enabled=False)
    off.record("c", "a")
    assert off.topics("c") == []


def test_task_metrics_ratios_and_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    import odradek.connect.metrics as metrics

    clock = [1000.0]
    monkeypatch.setattr(metrics.time, "monotonic", lambda: clock[0])
    m = TaskMetrics()
    m.tick(True)
    clock[0] += 3  # three seconds running
    m.tick(False)
    clock[0] += 1  # then one paused
    m.tick(True)
    assert m.ratios() == (0.75, 0.25)
    m.polled(3)
    m.polled(5)
    assert (m.poll_total, m.batches, m.batch_max) == (8, 2, 5) and m.poll_rate.per_second() == 2.0
