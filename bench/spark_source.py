"""Throughput of the `odradek` Spark connector on a single-node broker, beside Spark's own ceiling.

Source: rows/s read by format("odradek") from a topic of N records of 100 B into the `noop` sink (a
streaming query with Trigger.AvailableNow, and a batch read), beside rows/s of Spark's built-in rate source
(`rate-micro-batch`, N rows in one batch) into the same sink, in the same run.
Writer: rows/s written by format("odradek") from a DataFrame of N rows of 100 B, beside the same DataFrame
into `noop`.

Cluster mode (`--cluster`): the source's rows/s over a topic of 8 partitions in local[2] (the baseline) and on a
Spark standalone cluster started by `odradek spark up --workers 2 --cores 1`, the application taking one
worker's core (spark.cores.max=1: one executor) and then both (two executors), in the same run, printed as
ratios to the baseline.

    python bench/spark_source.py            # N = 2,000,000
    python bench/spark_source.py --quick    # N = 200,000
    python bench/spark_source.py --cluster [--quick]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from tests.clients import create_topic  # noqa: E402
from tests.harness import BrokerProcess, free_ports, odradek_cmd  # noqa: E402

VALUE = bytes(range(100))


def fill_topic(bootstrap: str, topic: str, n: int, partitions: int) -> float:
    """Produce n records of 100 B round-robin over the partitions; returns records/s."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                  "queue.buffering.max.messages": 1_000_000})
    start = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, VALUE, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(120) == 0
    return n / (time.perf_counter() - start)


def records_in(bootstrap: str, topic: str, partitions: int) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-count"})
    try:
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=20)[1] for p in range(partitions))
    finally:
        c.close()


def timed_stream(query_fn: Any) -> tuple[float, int]:
    """Run a streaming query to its end; (seconds, rows) from start to termination."""
    start = time.perf_counter()
    q = query_fn()
    q.awaitTermination()
    took = time.perf_counter() - start
    if q.exception() is not None:
        raise RuntimeError(str(q.exception()))
    return took, sum(p["numInputRows"] for p in q.recentProgress)


def odradek_stream(spark: Any, bootstrap: str, topic: str, checkpoint: Path) -> Any:
    df = (spark.readStream.format("odradek").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", topic).option("startingOffsets", "earliest").load())
    return (df.writeStream.format("noop").option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True).start())


def rate_stream(spark: Any, n: int, checkpoint: Path) -> Any:
    df = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", n).option("numPartitions", 2).load())
    return (df.writeStream.format("noop").option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True).start())


def timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def source_rates(spark: Any, bootstrap: str, work: Path, tag: str) -> tuple[float, float]:
    """Rows/s of the odradek source over bench-src into noop: (stream AvailableNow, batch read), after a
    warm-up on another topic (JVM code paths, the executors' Python workers)."""
    timed_stream(lambda: odradek_stream(spark, bootstrap, "bench-warm", work / f"ck-warm-{tag}"))
    src_s, src_rows = timed_stream(lambda: odradek_stream(spark, bootstrap, "bench-src", work / f"ck-src-{tag}"))
    batch_df = spark.read.format("odradek").option("kafka.bootstrap.servers", bootstrap).option("subscribe", "bench-src").load()
    batch_s = timed(lambda: batch_df.write.format("noop").mode("overwrite").save())
    return src_rows / src_s, src_rows / batch_s


def cluster_mode(n: int, partitions: int) -> int:
    """The source in local[2] and on a standalone cluster with one and two executors of one core."""
    from odradek.spark.session import local_session, spark_session, stop_session

    rows: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="odradek-spark-bench-") as tmp:
        work = Path(tmp)
        port, webui, worker_webui = free_ports(3)
        spark_dir = work / "spark"
        broker = BrokerProcess(work / "broker").start()
        spark = None
        try:
            up = subprocess.run(odradek_cmd("spark", "up", "--workers", "2", "--cores", "1", "--dir", str(spark_dir),
                                            "--port", str(port), "--webui-port", str(webui),
                                            "--worker-webui-port", str(worker_webui)), capture_output=True, text=True)
            if up.returncode != 0:
                raise RuntimeError(f"odradek spark up failed: {up.stdout}{up.stderr}")
            create_topic(broker.bootstrap, "bench-src", partitions=partitions)
            create_topic(broker.bootstrap, "bench-warm", partitions=partitions)
            produce_rate = fill_topic(broker.bootstrap, "bench-src", n, partitions)
            fill_topic(broker.bootstrap, "bench-warm", 20_000, partitions)
            spark = local_session("odradek-bench", log_file=work / "spark-local.log")
            rows.append(("local[2]", *source_rates(spark, broker.bootstrap, work, "local")))
            stop_session(spark)
            for executors in (1, 2):
                spark = spark_session(f"odradek-bench-{executors}", f"spark://127.0.0.1:{port}",
                                      conf={"spark.cores.max": str(executors), "spark.executor.memory": "768m"},
                                      log_file=work / f"spark-{executors}.log")
                label = f"standalone, {executors} worker{'s' if executors > 1 else ''} x 1 core"
                rows.append((label, *source_rates(spark, broker.bootstrap, work, f"cluster-{executors}")))
                stop_session(spark)
                spark = None
        finally:
            if spark is not None:
                stop_session(spark)
            subprocess.run(odradek_cmd("spark", "down", "--dir", str(spark_dir)), capture_output=True)
            broker.stop()
            broker.kill()

    print(f"odradek source -> noop, single-node broker, topic of {n:,} records x 100 B in {partitions} partitions "
          f"(filled at {produce_rate:,.0f} records/s)")
    base_stream, base_batch = rows[0][1], rows[0][2]
    print(f"{'Spark':<34} {'stream rows/s':>14} {'ratio':>6} {'batch rows/s':>13} {'ratio':>6}")
    for label, stream, batch in rows:
        print(f"{label:<34} {stream:>14,.0f} {stream / base_stream:>6.2f} {batch:>13,.0f} {batch / base_batch:>6.2f}")
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="200,000 records instead of 2,000,000")
    ap.add_argument("--records", type=int, default=None)
    ap.add_argument("--partitions", type=int, default=None, help="partitions of the topic (default 4; 8 with --cluster)")
    ap.add_argument("--cluster", action="store_true",
                    help="the source in local mode and on a standalone cluster of one and two workers")
    args = ap.parse_args(argv)
    n = args.records or (200_000 if args.quick else 2_000_000)
    if args.cluster:
        return cluster_mode(n, args.partitions or 8)
    args.partitions = args.partitions or 4
    from odradek.spark.session import local_session, stop_session

    with tempfile.TemporaryDirectory(prefix="odradek-spark-bench-") as tmp:
        work = Path(tmp)
        broker = BrokerProcess(work / "broker").start()
        spark = None
        try:
            create_topic(broker.bootstrap, "bench-src", partitions=args.partitions)
            create_topic(broker.bootstrap, "bench-warm", partitions=2)
            create_topic(broker.bootstrap, "bench-sink", partitions=args.partitions)
            produce_rate = fill_topic(broker.bootstrap, "bench-src", n, args.partitions)
            fill_topic(broker.bootstrap, "bench-warm", 20_000, 2)
            spark = local_session("odradek-bench", log_file=work / "spark.log")
            # warm-up: JVM code paths and the Python workers, on another topic
            timed_stream(lambda: odradek_stream(spark, broker.bootstrap, "bench-warm", work / "ck-warm"))
            timed_stream(lambda: rate_stream(spark, 20_000, work / "ck-rate-warm"))

            src_s, src_rows = timed_stream(lambda: odradek_stream(spark, broker.bootstrap, "bench-src", work / "ck-src"))
            rate_s, rate_rows = timed_stream(lambda: rate_stream(spark, n, work / "ck-rate"))
            batch_df = (spark.read.format("odradek").option("kafka.bootstrap.servers", broker.bootstrap)
                        .option("subscribe", "bench-src").load())
            batch_s = timed(lambda: batch_df.write.format("noop").mode("overwrite").save())
            assert src_rows == n, f"the source read {src_rows} rows of {n}"

            rows = spark.range(0, n, 1, 2).selectExpr("CAST(repeat('x', 100) AS BINARY) AS value").cache()
            rows.count()
            noop_w = timed(lambda: rows.write.format("noop").mode("overwrite").save())
            sink_w = timed(lambda: rows.write.format("odradek").option("kafka.bootstrap.servers", broker.bootstrap)
                           .option("topic", "bench-sink").mode("append").save())
            written = records_in(broker.bootstrap, "bench-sink", args.partitions)
            assert written == n, f"the sink wrote {written} records of {n}"
        finally:
            if spark is not None:
                stop_session(spark)
            broker.stop()
            broker.kill()

    print(f"Spark local[2], single-node broker, topic of {n:,} records x 100 B in {args.partitions} partitions "
          f"(filled at {produce_rate:,.0f} records/s)")
    print(f"{'read':<48} {'rows/s':>12} {'seconds':>8}")
    print(f"{'odradek source -> noop (stream, AvailableNow)':<48} {n / src_s:>12,.0f} {src_s:>8.2f}")
    print(f"{'odradek source -> noop (batch read)':<48} {n / batch_s:>12,.0f} {batch_s:>8.2f}")
    print(f"{'rate-micro-batch source -> noop (stream)':<48} {rate_rows / rate_s:>12,.0f} {rate_s:>8.2f}")
    print(f"{'write':<48} {'rows/s':>12} {'seconds':>8}")
    print(f"{'DataFrame of 100 B rows -> odradek sink':<48} {n / sink_w:>12,.0f} {sink_w:>8.2f}")
    print(f"{'same DataFrame -> noop':<48} {n / noop_w:>12,.0f} {noop_w:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
