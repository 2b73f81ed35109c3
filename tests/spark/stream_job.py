"""A streaming query run as its own process by the crash tests: topic -> Parquet file sink, with a checkpoint.

    python -m tests.spark.stream_job BOOTSTRAP TOPIC CHECKPOINT OUTPUT [--max-offsets N] [--available-now]

Prints 'batch N committed' lines as batches finish, so a test can kill it (kill -9) between or during them.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("bootstrap")
    ap.add_argument("topic")
    ap.add_argument("checkpoint")
    ap.add_argument("output")
    ap.add_argument("--max-offsets", type=int, default=0)
    ap.add_argument("--available-now", action="store_true")
    args = ap.parse_args(argv)
    from odradek.spark.session import local_session, stop_session

    spark = local_session("odradek-crash-test", conf={"spark.driver.memory": "512m"})
    try:
        reader = (spark.readStream.format("odradek").option("kafka.bootstrap.servers", args.bootstrap)
                  .option("subscribe", args.topic).option("startingOffsets", "earliest"))
        if args.max_offsets:
            reader = reader.option("maxOffsetsPerTrigger", str(args.max_offsets))
        rows = reader.load().selectExpr("CAST(value AS STRING) AS value", "partition", "offset")
        writer = (rows.writeStream.format("parquet").option("path", args.output)
                  .option("checkpointLocation", args.checkpoint))
        writer = writer.trigger(availableNow=True) if args.available_now else writer.trigger(processingTime="0 seconds")
        query = writer.start()
        print("query started", flush=True)
        query.awaitTermination()
        print("query finished", flush=True)
    finally:
        stop_session(spark)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
