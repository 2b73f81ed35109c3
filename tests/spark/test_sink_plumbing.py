"""The sink's transactionalIdPrefix plumbing, with a stand-in for confluent_kafka.Producer (no broker)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

import pyarrow as pa  # noqa: E402

from odradek.spark import producer as producer_mod  # noqa: E402
from odradek.spark.options import parse_sink_options  # noqa: E402
from odradek.spark.producer import producer_conf, task_transactional_id  # noqa: E402
from odradek.spark.writers import _write  # noqa: E402


class FakeProducer:
    made: list[FakeProducer] = []

    def __init__(self, conf: dict[str, Any]) -> None:
        self.conf = conf
        self.calls: list[str] = []
        self.values: list[bytes] = []
        FakeProducer.made.append(self)

    def init_transactions(self, timeout: float) -> None:
        self.calls.append("init")

    def begin_transaction(self) -> None:
        self.calls.append("begin")

    def produce(self, topic: str, value: Any, key: Any, **kw: Any) -> None:
        self.values.append(value)

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        self.calls.append("flush")
        return 0

    def commit_transaction(self, timeout: float) -> None:
        self.calls.append("commit")

    def abort_transaction(self, timeout: float) -> None:
        self.calls.append("abort")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> type[FakeProducer]:
    FakeProducer.made = []
    monkeypatch.setattr(producer_mod, "Producer", FakeProducer)
    return FakeProducer


def batches(n: int, fail_at: int | None = None) -> Iterator[pa.RecordBatch]:
    for i in range(n):
        if i == fail_at:
            raise RuntimeError("task failed midway")
        yield pa.record_batch([pa.array([f"v{i}".encode()])], names=["value"])


def test_sink_option_and_forbidden_transactional_id() -> None:
    s = parse_sink_options({"kafka.bootstrap.servers": "x:1", "topic": "t", "transactionalIdPrefix": " job7 "})
    assert s.transactional_id_prefix == "job7"
    assert parse_sink_options({"kafka.bootstrap.servers": "x:1"}).transactional_id_prefix is None
    with pytest.raises(ValueError, match="transactionalIdPrefix"):
        parse_sink_options({"kafka.bootstrap.servers": "x:1", "kafka.transactional.id": "x"})
    with pytest.raises(ValueError, match="must not be empty"):
        parse_sink_options({"kafka.bootstrap.servers": "x:1", "transactionalIdPrefix": " "})


def test_transactional_producer_is_idempotent() -> None:
    conf = producer_conf({"bootstrap.servers": "127.0.0.1:1"}, transactional=True)
    assert conf["enable.idempotence"] is True
    with pytest.raises(ValueError, match="idempotent"):
        producer_conf({"bootstrap.servers": "127.0.0.1:1", "enable.idempotence": "false"}, transactional=True)
    assert task_transactional_id("job7", 3) == "job7-3"


def test_each_task_commits_its_own_transaction(fake: type[FakeProducer]) -> None:
    msg = _write({"bootstrap.servers": "x:1"}, "t", batches(3), "job7", partition_id=4)
    [p] = fake.made
    assert msg.records == 3 and p.values == [b"v0", b"v1", b"v2"]
    assert p.conf["transactional.id"] == "job7-4"
    assert p.calls == ["init", "begin", "flush", "commit"]


def test_a_failing_task_aborts_and_fails(fake: type[FakeProducer]) -> None:
    with pytest.raises(RuntimeError, match="midway"):
        _write({"bootstrap.servers": "x:1"}, "t", batches(3, fail_at=2), "job7", partition_id=0)
    [p] = fake.made
    assert p.values == [b"v0", b"v1"] and p.calls == ["init", "begin", "abort"]


def test_without_prefix_no_transaction(fake: type[FakeProducer]) -> None:
    _write({"bootstrap.servers": "x:1"}, "t", batches(2), None)
    [p] = fake.made
    assert "transactional.id" not in p.conf and p.calls == ["flush"]
