"""The stream reader's trigger planning (limits, AvailableNow, new and deleted partitions) against a fake
cluster: no broker and no JVM, just the DataSourceStreamReader methods Spark calls."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows  # noqa: E402

from odradek.spark.dataloss import DataLossError  # noqa: E402
from odradek.spark.offsets import TP  # noqa: E402
from odradek.spark.options import parse_source_options  # noqa: E402
from odradek.spark.partition import KafkaInputPartition  # noqa: E402
from odradek.spark.stream_reader import KafkaStreamReader  # noqa: E402


class FakeCluster:
    """Partitions with a log start and end offset each."""

    def __init__(self, logs: dict[TP, tuple[int, int]]) -> None:
        self.logs = logs

    def partitions(self, sub: object) -> list[TP]:
        return sorted(self.logs)

    def earliest(self, tps: list[TP]) -> dict[TP, int]:
        return {tp: self.logs[tp][0] for tp in tps}

    def latest(self, tps: list[TP]) -> dict[TP, int]:
        return {tp: self.logs[tp][1] for tp in tps}

    def close(self) -> None:
        pass


def make_reader(cluster: FakeCluster, **opts: str) -> KafkaStreamReader:
    options = {"kafka.bootstrap.servers": "127.0.0.1:1", "subscribe": "t", "startingOffsets": "earliest",
               "commitOffsets": "false", **opts}  # no broker behind it to commit to
    reader = KafkaStreamReader(parse_source_options(options, streaming=True))
    reader._cluster = cluster  # type: ignore[assignment]
    return reader


T0, T1, T2 = TP("t", 0), TP("t", 1), TP("t", 2)


def test_initial_offset_and_read_all() -> None:
    reader = make_reader(FakeCluster({T0: (0, 100), T1: (5, 50)}))
    start = reader.initialOffset()
    assert start == {"t": {"0": 0, "1": 5}}
    assert reader.getDefaultReadLimit() == ReadAllAvailable()
    end = reader.latestOffset(start, ReadAllAvailable())
    assert end == {"t": {"0": 100, "1": 50}}
    parts = reader.partitions(start, end)
    assert [(p.topic, p.partition, p.start, p.until) for p in parts] == [("t", 0, 0, 100), ("t", 1, 5, 50)]
    assert all(isinstance(p, KafkaInputPartition) for p in parts)
    assert reader.latestOffset(end, ReadAllAvailable()) == end  # nothing new: same offset, no batch


def test_max_offsets_per_trigger_split_by_backlog_and_ignored_for_read_all() -> None:
    reader = make_reader(FakeCluster({T0: (0, 900), T1: (0, 100)}), maxOffsetsPerTrigger="100")
    assert reader.getDefaultReadLimit() == ReadMaxRows(100)
    start = reader.initialOffset()
    assert reader.latestOffset(start, ReadMaxRows(100)) == {"t": {"0": 90, "1": 10}}
    assert reader.latestOffset(start, ReadAllAvailable()) == {"t": {"0": 900, "1": 100}}


def test_min_offsets_per_trigger_waits_up_to_max_trigger_delay() -> None:
    cluster = FakeCluster({T0: (0, 10)})
    reader = make_reader(cluster, minOffsetsPerTrigger="100", maxTriggerDelay="1h")
    assert reader.getDefaultReadLimit() == ReadMinRows(100)
    start = reader.initialOffset()
    first = reader.latestOffset(start, ReadMinRows(100))
    assert first == {"t": {"0": 10}}  # the first trigger never waits (as in Spark)
    cluster.logs[T0] = (0, 50)
    assert reader.latestOffset(first, ReadMinRows(100)) == first  # 40 < 100: wait
    cluster.logs[T0] = (0, 200)
    assert reader.latestOffset(first, ReadMinRows(100)) == {"t": {"0": 200}}
    cluster.logs[T0] = (0, 210)
    reader._last_trigger_ms -= 3_600_000  # an hour later: maxTriggerDelay passed
    assert reader.latestOffset({"t": {"0": 200}}, ReadMinRows(100)) == {"t": {"0": 210}}


def test_available_now_stops_at_the_offsets_seen_at_start() -> None:
    cluster = FakeCluster({T0: (0, 100), T1: (0, 100)})
    reader = make_reader(cluster, maxOffsetsPerTrigger="60")
    start = reader.initialOffset()
    reader.prepareForTriggerAvailableNow()
    cluster.logs = {T0: (0, 500), T1: (0, 500), T2: (0, 500)}  # more data and a new partition arrive
    b1 = reader.latestOffset(start, ReadMaxRows(60))
    assert b1 == {"t": {"0": 30, "1": 30}}
    b2 = reader.latestOffset(b1, ReadMaxRows(60))
    b3 = reader.latestOffset(b2, ReadMaxRows(60))
    b4 = reader.latestOffset(b3, ReadMaxRows(60))
    assert b4 == {"t": {"0": 100, "1": 100}}
    assert reader.latestOffset(b4, ReadMaxRows(60)) == b4  # done: the query ends


def test_new_partitions_start_at_earliest() -> None:
    cluster = FakeCluster({T0: (0, 10)})
    reader = make_reader(cluster)
    start = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    cluster.logs[T1] = (0, 7)
    end = reader.latestOffset(start, ReadAllAvailable())
    assert end == {"t": {"0": 10, "1": 7}}
    assert [(p.partition, p.start, p.until) for p in reader.partitions(start, end)] == [(1, 0, 7)]


def test_deleted_partition_or_lost_records_per_fail_on_data_loss() -> None:
    cluster = FakeCluster({T0: (0, 10)})
    strict = make_reader(cluster)
    with pytest.raises(DataLossError, match=r"t-1: partition was deleted.*failOnDataLoss"):
        strict.partitions({"t": {"0": 0, "1": 4}}, {"t": {"0": 10}})
    cluster.logs[T2] = (3, 9)  # new partition whose first records are already gone
    with pytest.raises(DataLossError, match="t-2"):
        strict.partitions({"t": {"0": 0}}, {"t": {"0": 10, "2": 9}})
    lenient = make_reader(cluster, failOnDataLoss="false")
    parts = lenient.partitions({"t": {"0": 0, "1": 4}}, {"t": {"0": 10, "2": 9}})
    assert [(p.partition, p.start, p.until) for p in parts] == [(0, 0, 10), (2, 3, 9)]
    # offsets that went backwards (topic recreated): skipped when lenient
    assert lenient.partitions({"t": {"0": 50}}, {"t": {"0": 10}}) == []


def test_reader_pickles_without_clients() -> None:
    import pickle

    reader = make_reader(FakeCluster({T0: (0, 1)}))
    clone = pickle.loads(pickle.dumps(reader))
    assert clone._cluster is None and clone.opts == reader.opts
