"""The weblogs actions of `odradek pipeline`: generate, run (streaming) and archive (batch).

Each takes the argparse namespace built by odradek.cli.pipeline and returns an exit code. Spark is only
imported by run and archive, so generate works without the spark extra.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from datetime import datetime
from pathlib import Path
from typing import Any

from odradek.interrupts import StopRequest
from odradek.pipelines.progress import ProgressLine
from odradek.pipelines.weblogs import LOGS_TOPIC
from odradek.pipelines.weblogs.topics import ensure_topics
from odradek.spark.offsets import TP


def parse_time_ms(text: str) -> int:
    """Epoch milliseconds, or an ISO 8601 time (UTC unless it says otherwise)."""
    if text.strip().lstrip("-").isdigit():
        return int(text)
    t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if t.tzinfo is None:
        from datetime import UTC

        t = t.replace(tzinfo=UTC)
    return int(t.timestamp() * 1000)


def _stop_on_signals() -> threading.Event:
    """Set by Ctrl-C or SIGTERM, which say "stopping" once (odradek.interrupts)."""
    return StopRequest().event


def _check_master(master: str | None) -> None:
    """A wrong or unreachable --master is one line before anything starts, not Spark's minute of retries."""
    from odradek.spark.session import MasterError, check_master

    if master:
        try:
            check_master(master)
        except MasterError as exc:
            raise SystemExit(f"Error: --master: {exc}") from None


def _session(app_name: str, master: str | None, log_file: Path | None) -> Any:
    """The job's SparkSession: local mode, or the standalone cluster at `master`."""
    from odradek.spark.session import spark_session

    where = f"on {master}" if master else "in local mode"
    log = f"its log: {log_file}; --verbose to see it here" if log_file else "its log on this terminal"
    print(f"Starting Spark {where} ({log}) ...", flush=True)
    return spark_session(app_name, master, log_file=log_file)


def generate(args: argparse.Namespace) -> int:
    from odradek.pipelines.weblogs.generator import (
        GeneratorConfig,
        ProduceStats,
        WeblogGenerator,
        produce_records,
    )

    live = args.start_time is None
    cfg = GeneratorConfig(seed=args.seed, rate=args.rate, malformed_fraction=args.malformed_fraction,
                          start_ms=None if live else parse_time_ms(args.start_time))
    if args.topic == LOGS_TOPIC or args.partitions:
        ensure_topics(args.bootstrap_server, {args.topic: args.partitions or 3})
    gen = WeblogGenerator(cfg)
    records = gen.take(args.count) if args.count else gen.records()
    stop = _stop_on_signals()
    pace = f"~{args.rate:g} events/s" if live else "as fast as the broker takes them"
    print(f"Generating web access events to {args.topic} at {args.bootstrap_server}, {pace}"
          f"{'' if args.count or args.duration else ' (Ctrl-C to stop)'}", flush=True)
    line = ProgressLine()
    started = time.monotonic()

    def show(s: ProduceStats) -> None:
        took = max(time.monotonic() - started, 1e-9)
        line.update(f"produced {s.produced:,} events in {took:.0f} s ({s.produced / took:,.0f}/s), "
                    f"malformed {sum(s.malformed.values()):,}")

    try:
        stats = produce_records(args.bootstrap_server, args.topic, records, live=live, stop=stop,
                                duration_s=args.duration, on_progress=show,
                                schema_registry_url=args.schema_registry_url)
    finally:
        line.done()
    took = time.monotonic() - started
    bad = ", ".join(f"{k}: {v}" for k, v in sorted(stats.malformed.items())) or "none"
    print(f"Produced {stats.produced:,} records to {args.topic} in {took:.1f} s (malformed: {bad})")
    return 0


def run(args: argparse.Namespace) -> int:
    from odradek.pipelines.weblogs.stream_job import AVAILABLE_NOW, JobConfig, group_id, start
    from odradek.spark.progress import status_line
    from odradek.spark.session import stop_session

    _check_master(args.master)
    ensure_topics(args.bootstrap_server)
    if args.schema_registry_url:  # a registry that is down or refuses is one line before Spark starts
        from odradek.pipelines.weblogs.schemas import register_job_schemas

        register_job_schemas(args.schema_registry_url)
    cfg = JobConfig(bootstrap=args.bootstrap_server, checkpoint=Path(args.checkpoint), output=Path(args.output),
                    trigger=args.trigger, watermark=args.watermark, starting_offsets=args.starting_offsets,
                    max_offsets_per_trigger=args.max_offsets_per_trigger,
                    schema_registry_url=args.schema_registry_url)
    stop = _stop_on_signals()
    log_file = None
    if not args.verbose:  # Spark's own WARN lines go to a file: the terminal shows the job's progress
        cfg.checkpoint.mkdir(parents=True, exist_ok=True)
        log_file = cfg.checkpoint / "spark.log"
    spark = _session("odradek-weblogs", args.master, log_file)
    failed = False
    ends = EndOffsets(args.bootstrap_server, cfg.source_topic)
    line = ProgressLine()
    try:
        queries = start(spark, cfg)
        print(f"weblogs: running ({cfg.trigger}); metrics in {cfg.metrics_dir}; progress and lag in consumer "
              f"groups {', '.join(group_id(q.name) for q in queries)}; Ctrl-C to stop", flush=True)
        started = time.monotonic()
        last_batch = -1
        while not stop.is_set():
            if all(not q.isActive for q in queries):
                break
            if args.duration is not None and time.monotonic() - started >= args.duration:
                break
            progress: Any = queries[0].lastProgress
            batch = progress["batchId"] if progress else -1
            line.update(status_line(progress, ends.read()), force=batch != last_batch)
            last_batch = batch
            stop.wait(1.0)
        line.update(status_line(queries[0].lastProgress, ends.read()), force=True)
        line.done()
        for q in queries:
            if cfg.trigger == AVAILABLE_NOW and q.isActive and not stop.is_set():
                q.awaitTermination()
            if q.exception() is not None:
                failed = True
                print(f"query {q.name} failed: {q.exception()}", file=sys.stderr)
    finally:
        line.done()
        ends.close()
        stop_session(spark)
    print(f"weblogs: stopped; Parquet metrics in {cfg.metrics_dir}")
    return 1 if failed else 0


class EndOffsets:
    """The end offset of every partition of a topic, read with one client kept open (for the lag)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Consumer

        self.topic = topic
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "odradek-weblogs-lag",
                                   "enable.auto.commit": False, "log_level": 2})

    def read(self) -> dict[TP, int]:
        from confluent_kafka import KafkaException, TopicPartition

        out: dict[TP, int] = {}
        try:
            md = self._consumer.list_topics(self.topic, timeout=2).topics.get(self.topic)
            for p in (md.partitions if md is not None else {}):
                _, high = self._consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=2)
                out[TP(self.topic, p)] = high
        except KafkaException:
            pass  # the lag shows as unknown for a moment
        return out

    def close(self) -> None:
        self._consumer.close()


def archive(args: argparse.Namespace) -> int:
    from odradek.pipelines.weblogs.archive_job import ArchiveConfig, archive, format_report
    from odradek.spark.session import stop_session

    _check_master(args.master)
    if args.schema_registry_url:  # the topic's subject must be there: one line, not a failed Spark task
        from odradek.serde.avro import subject_for
        from odradek.serde.registry_client import RegistryClient

        RegistryClient(args.schema_registry_url).latest(subject_for(args.topic))
    opts: dict[str, str] = {}
    if args.starting_offsets:
        opts["startingOffsets"] = args.starting_offsets
    if args.ending_offsets:
        opts["endingOffsets"] = args.ending_offsets
    if args.starting_timestamp:
        opts["startingTimestamp"] = str(parse_time_ms(args.starting_timestamp))
        opts["startingOffsetsByTimestampStrategy"] = "latest"
    if args.ending_timestamp:
        opts["endingTimestamp"] = str(parse_time_ms(args.ending_timestamp))
    log_file = None
    if not args.verbose:  # Spark's banner and WARN lines go to a file: the terminal shows the report
        Path(args.output).mkdir(parents=True, exist_ok=True)
        log_file = Path(args.output) / "spark.log"
    stop = StopRequest("stopping the archive job")
    spark = _session("odradek-weblogs-archive", args.master, log_file)
    pool = ThreadPoolExecutor(1, thread_name_prefix="odradek-archive")
    try:
        # The job runs in a thread: Ctrl-C sets `stop` here, which cancels Spark's jobs, instead of a
        # KeyboardInterrupt torn through the Py4J call
        job: Future[dict[str, Any]] | None = None
        if not stop.is_set():
            print(f"Archiving {args.topic} from {args.bootstrap_server} to {args.output} ...", flush=True)
            job = pool.submit(archive, spark, ArchiveConfig(args.bootstrap_server, Path(args.output), args.topic, opts,
                                                            args.schema_registry_url))
        while job is not None and not wait([job], timeout=0.5).done:
            if stop.is_set():  # again and again: the archive runs several Spark jobs one after another
                spark.sparkContext.cancelAllJobs()
    finally:
        pool.shutdown(wait=False)
        stop_session(spark)
    if stop.signalled:
        print(f"Stopped: archive interrupted; partial output may be in {args.output}")
        return 130
    assert job is not None
    summary = job.result()
    print(format_report(summary))
    print(f"Parquet events in {Path(args.output) / 'events'}, summary in {Path(args.output) / 'summary.json'}")
    return 0
