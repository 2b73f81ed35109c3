"""Streaming reads with format("odradek") from a real broker, in a real local[2] Spark; one test kills a
streaming query with kill -9 mid-batch and checks that the restarted query writes every record exactly once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from confluent_kafka import Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import NewPartitions  # noqa: E402

from tests.clients import admin, create_topic  # noqa: E402
from tests.spark.helpers import kill_mid_batch, wait_session_gone  # noqa: E402
from tests.waiting import wait_until  # noqa: E402

pytestmark = pytest.mark.timeout(300)
ROOT = Path(__file__).resolve().parents[2]


def produce_values(bootstrap: str, topic: str, values: list[str], partitions: int | None = None) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, v in enumerate(values):
        kw = {"partition": i % partitions} if partitions else {}
        p.produce(topic, v.encode(), **kw)
        if i % 1000 == 0:
            p.poll(0)
    assert p.flush(30) == 0


def stream(spark: Any, bootstrap: str, topic: str, **opts: str) -> Any:
    r = (spark.readStream.format("odradek").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", topic).option("startingOffsets", "earliest"))
    for k, v in opts.items():
        r = r.option(k, v)
    return r.load()


def test_available_now_with_rate_limit_reads_everything_once(spark: Any, broker: Any, tmp_path: Path) -> None:
    create_topic(broker.bootstrap, "an", partitions=3)
    produce_values(broker.bootstrap, "an", [f"r{i}" for i in range(3000)], partitions=3)
    df = stream(spark, broker.bootstrap, "an", maxOffsetsPerTrigger="700")
    q = (df.selectExpr("CAST(value AS STRING) v", "partition", "offset").writeStream.format("memory")
         .queryName("an_rows").option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    assert q.awaitTermination(120)
    assert q.exception() is None
    rows = spark.sql("SELECT v, partition, offset FROM an_rows").collect()
    assert sorted(r.v for r in rows) == sorted(f"r{i}" for i in range(3000))
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert len(sizes) >= 5 and max(sizes) <= 700 and sum(sizes) == 3000
    # the checkpoint holds Kafka-style offsets: {"an": {"0": n, "1": n, "2": n}}
    offsets_dir = tmp_path / "ck" / "offsets"
    last = max(int(f.name) for f in offsets_dir.iterdir() if f.name.isdigit())
    source_offset = json.loads((offsets_dir / str(last)).read_text().splitlines()[-1])
    assert source_offset == {"an": {"0": 1000, "1": 1000, "2": 1000}}


def test_new_partitions_are_picked_up(spark: Any, broker: Any, tmp_path: Path) -> None:
    create_topic(broker.bootstrap, "grow", partitions=1)
    produce_values(broker.bootstrap, "grow", ["a0", "a1"])
    df = stream(spark, broker.bootstrap, "grow")
    q = (df.selectExpr("CAST(value AS STRING) v", "partition").writeStream.format("memory").queryName("grow_rows")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="200 milliseconds").start())
    try:
        def seen() -> set[tuple[str, int]]:
            return {(r.v, r.partition) for r in spark.sql("SELECT v, partition FROM grow_rows").collect()}

        wait_until(lambda: seen() == {("a0", 0), ("a1", 0)}, 60, lambda: f"the first two rows, not {seen()}")
        fs = admin(broker.bootstrap).create_partitions([NewPartitions("grow", 3)])
        fs["grow"].result(20)
        p = Producer({"bootstrap.servers": broker.bootstrap, "topic.metadata.refresh.interval.ms": 200})
        p.produce("grow", b"b2", partition=2)
        p.produce("grow", b"b1", partition=1)
        assert p.flush(30) == 0
        want = {("a0", 0), ("a1", 0), ("b1", 1), ("b2", 2)}
        wait_until(lambda: seen() == want, 60, lambda: f"rows of the new partitions too, not {seen()}")
    finally:
        q.stop()


def test_deleted_records_fail_the_query_or_are_skipped(spark: Any, broker: Any, tmp_path: Path) -> None:
    create_topic(broker.bootstrap, "lossy", partitions=1)
    produce_values(broker.bootstrap, "lossy", [f"x{i}" for i in range(10)])

    def run(checkpoint: Path, **opts: str) -> Any:
        df = stream(spark, broker.bootstrap, "lossy", **opts).selectExpr("CAST(value AS STRING) v")
        q = (df.writeStream.format("parquet").option("path", str(checkpoint / "out"))
             .option("checkpointLocation", str(checkpoint / "ck")).trigger(availableNow=True).start())
        try:
            q.awaitTermination(120)
        except Exception:  # noqa: S110 - the test inspects q.exception()
            pass
        return q

    strict, lenient = tmp_path / "strict", tmp_path / "lenient"
    assert run(strict).exception() is None
    assert run(lenient, failOnDataLoss="false").exception() is None
    produce_values(broker.bootstrap, "lossy", [f"x{i}" for i in range(10, 50)])
    for f in admin(broker.bootstrap).delete_records([TopicPartition("lossy", 0, 30)]).values():
        f.result(20)
    failed = run(strict)
    assert failed.exception() is not None
    text = str(failed.exception())
    assert "DataLossError" in text and "'lossy' partition 0" in text and "[10, 30)" in text
    q = run(lenient, failOnDataLoss="false")
    assert q.exception() is None
    got = sorted(r.v for r in spark.read.parquet(str(lenient / "out")).collect())
    assert got == sorted(f"x{i}" for i in [*range(10), *range(30, 50)])


def test_kill_9_mid_batch_then_restart_gives_every_record_exactly_once(spark: Any, broker: Any,
                                                                        tmp_path: Path) -> None:
    create_topic(broker.bootstrap, "crash", partitions=3)
    n = 12_000
    produce_values(broker.bootstrap, "crash", [f"rec-{i:06d}" for i in range(n)], partitions=3)
    ck, out = tmp_path / "ck", tmp_path / "out"
    cmd = [sys.executable, "-m", "tests.spark.stream_job", broker.bootstrap, "crash", str(ck), str(out)]
    with open(tmp_path / "job1.log", "wb") as log:
        job = subprocess.Popen([*cmd, "--max-offsets", "2000"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
        kill_mid_batch(job, ck, tmp_path / "job1.log", timeout=150)
    wait_session_gone(job.pid, "the killed job's processes")

    rerun = subprocess.run([*cmd, "--available-now"], cwd=ROOT, capture_output=True, text=True, timeout=200)
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    rows = spark.read.parquet(str(out)).collect()  # through the sink's _spark_metadata log
    values = [r.value for r in rows]
    assert len(values) == n, f"{len(values)} rows for {n} records: duplicates or losses"
    assert set(values) == {f"rec-{i:06d}" for i in range(n)}
    assert len({(r.partition, r.offset) for r in rows}) == n
