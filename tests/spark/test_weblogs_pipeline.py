"""The weblogs pipeline end to end on a real broker and real Spark: metrics equal a plain-Python computation
of the same seeded input, malformed lines land in the dead-letter topic, the archive job's report matches,
and a streaming run killed with kill -9 and restarted ends with the same output (behind --run-slow: the Spark
cluster's drill, tests/spark/test_spark_cluster.py, kills the same job's driver mid-batch by default, and checks its
rerun against local mode, which test_streaming_metrics_equal_plain_python checks against plain Python)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

import pyarrow.dataset as ds  # noqa: E402

from odradek.pipelines.weblogs import DLQ_TOPIC, LOGS_TOPIC, METRICS_TOPIC  # noqa: E402
from odradek.pipelines.weblogs.generator import produce_records  # noqa: E402
from odradek.pipelines.weblogs.topics import ensure_topics  # noqa: E402
from tests.clients import consume_all  # noqa: E402
from tests.spark.helpers import batch_ids, kill_mid_batch, wait_session_gone  # noqa: E402
from tests.spark.weblogs_reference import (  # noqa: E402
    START_MS,
    N,
    assert_metrics_equal,
    generated,
    parquet_metrics,
    reference_metrics,
)
from tests.waiting import interrupt_at_line, wait_until  # noqa: E402

pytestmark = pytest.mark.timeout(400)
ROOT = Path(__file__).resolve().parents[2]


def dlq_messages(bootstrap: str, expected: int) -> list:
    return consume_all(bootstrap, DLQ_TOPIC, expected, timeout=60)


def read_whole_topic(bootstrap: str, topic: str) -> list:
    """Every record of a one-partition topic, up to its current end."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "t-end"})
    try:
        _low, end = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=20)
    finally:
        c.close()
    return consume_all(bootstrap, topic, end, timeout=60)


def lag_rows(bootstrap: str, group: str) -> int | None:
    """Records the group has committed as read (`consumer-groups --describe`), once no partition lags."""
    from tests.harness import run_cli

    r = run_cli("consumer-groups", "--bootstrap-server", bootstrap, "--describe", "--group", group)
    rows = [line.split() for line in r.stdout.splitlines()[1:] if line.startswith(group + " ")]
    if not rows or any(row[5] != "0" or row[3] != row[4] for row in rows):
        return None
    return sum(int(row[3]) for row in rows)


@pytest.fixture(scope="module")
def loaded(broker: Any) -> list:
    ensure_topics(broker.bootstrap)
    records = generated()
    produce_records(broker.bootstrap, LOGS_TOPIC, records)
    return records


def test_streaming_metrics_equal_plain_python(spark: Any, broker: Any, loaded: list, tmp_path: Path) -> None:
    from odradek.pipelines.weblogs.stream_job import JobConfig, group_id, start

    cfg = JobConfig(bootstrap=broker.bootstrap, checkpoint=tmp_path / "ck", output=tmp_path / "out",
                    trigger="available-now", max_offsets_per_trigger=4000)
    queries = start(spark, cfg)
    for q in queries:
        q.awaitTermination(300)
        assert q.exception() is None, q.exception()
    # each query's progress is in its consumer group: every record read, no lag
    for q in queries:
        assert wait_until(lambda q=q: lag_rows(broker.bootstrap, group_id(q.name)), 60, f"{q.name}'s group") == N
    want = reference_metrics(loaded)
    assert len(want) == 3
    assert_metrics_equal(parquet_metrics(cfg.metrics_dir), want)
    assert sorted(p.name for p in cfg.metrics_dir.iterdir()) == ["date=2025-11-21"]
    assert sorted(p.name for p in (cfg.metrics_dir / "date=2025-11-21").iterdir()) == ["hour=12"]

    # the metrics topic: the last record of each window key holds the final figures, as JSON
    def latest_per_window() -> dict[str, dict]:
        msgs = consume_all(broker.bootstrap, METRICS_TOPIC, 10_000, timeout=3)
        latest = {m.key().decode(): json.loads(m.value()) for m in msgs}
        return latest if len(latest) == 3 else {}

    latest = wait_until(latest_per_window, 30, "the metrics of three windows")
    for key, m in latest.items():
        assert key == m["window_start"] and key.endswith("Z")
        start = int(time.mktime(time.strptime(key, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone) * 1000
        assert m["requests"] == want[start]["requests"] and m["top_paths"] == want[start]["top_paths"]

    # dead letters: every malformed line, once, with its reason and origin in headers
    bad = [r for r in loaded if r.malformed]
    dlq = dlq_messages(broker.bootstrap, len(bad))
    assert len(dlq) == len(bad)
    reasons = Counter(dict(m.headers())["odradek.dlq.reason"].decode() for m in dlq)
    assert reasons == Counter(r.malformed for r in bad)
    assert sorted((m.value() or b"") for m in dlq) == sorted((r.value or b"") for r in bad)
    assert {dict(m.headers())["odradek.dlq.topic"] for m in dlq} == {LOGS_TOPIC.encode()}


def test_archive_by_offsets_and_by_time(spark: Any, broker: Any, loaded: list, tmp_path: Path) -> None:
    from odradek.pipelines.weblogs.archive_job import ArchiveConfig, archive, format_report

    summary = archive(spark, ArchiveConfig(broker.bootstrap, tmp_path / "all"))
    events = [r.event for r in loaded if r.event]
    assert summary["records"] == N and summary["events"] == len(events)
    assert summary["malformed_by_reason"] == dict(sorted(Counter(r.malformed for r in loaded if r.malformed).items()))
    assert summary["status"]["s5xx"] == sum(e.status >= 500 for e in events)
    assert summary["bytes"] == sum(e.bytes for e in events)
    top = Counter(e.path for e in events)
    assert summary["top_paths"] == [{"path": p, "requests": c} for p, c in sorted(top.items(), key=lambda kv: (-kv[1], kv[0]))[:10]]
    assert json.loads((tmp_path / "all" / "summary.json").read_text()) == summary
    assert ds.dataset(str(tmp_path / "all" / "events"), format="parquet", partitioning="hive").count_rows() == len(events)
    assert "records read" in format_report(summary)

    # one minute of event time, by record timestamps
    lo, hi = START_MS + 60_000, START_MS + 120_000
    minute = archive(spark, ArchiveConfig(broker.bootstrap, tmp_path / "minute", range_options={
        "startingTimestamp": str(lo), "endingTimestamp": str(hi)}))
    assert minute["records"] == sum(lo <= r.ts_ms < hi for r in loaded)
    assert minute["first_event"] == "2025-11-21T12:01:00Z" and minute["last_event"] == "2025-11-21T12:01:59Z"


@pytest.mark.slow
def test_kill_9_mid_stream_and_restart_gives_the_same_output(fresh_broker: Any, tmp_path: Path) -> None:
    bootstrap = fresh_broker.bootstrap
    ensure_topics(bootstrap)
    records = generated()
    produce_records(bootstrap, LOGS_TOPIC, records)
    ck, out = tmp_path / "ck", tmp_path / "out"
    cmd = [sys.executable, "-m", "odradek.cli.main", "pipeline", "run", "weblogs", "--bootstrap-server", bootstrap,
           "--checkpoint", str(ck), "--output", str(out)]
    with open(tmp_path / "run1.log", "wb") as log:
        job = subprocess.Popen([*cmd, "--trigger", "0s", "--max-offsets-per-trigger", "2500"], cwd=ROOT, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
        kill_mid_batch(job, ck / "metrics", tmp_path / "run1.log", timeout=180)
    wait_session_gone(job.pid, "the killed job's processes")
    assert len(batch_ids(ck / "metrics" / "commits")) < 5  # stopped before the end of the input

    rerun = subprocess.run([*cmd, "--trigger", "available-now"], cwd=ROOT, capture_output=True, text=True,
                           timeout=300)
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    # progress in one line per batch, with the lag behind the topic's end; Spark's own log in a file
    assert re.search(r"^batch \d+: [\d,]+ rows in, [\d,]+ rows/s, watermark \S+, lag 0 records$", rerun.stdout, re.M), \
        rerun.stdout
    assert "WARN" not in rerun.stdout + rerun.stderr and (ck / "spark.log").stat().st_size > 0
    assert_metrics_equal(parquet_metrics(out / "metrics"), reference_metrics(records))
    bad = [r for r in records if r.malformed]
    dlq = read_whole_topic(bootstrap, DLQ_TOPIC)
    origins = {(dict(m.headers())["odradek.dlq.partition"], dict(m.headers())["odradek.dlq.offset"]) for m in dlq}
    assert len(origins) == len(bad) <= len(dlq)  # at-least-once: each malformed line, maybe twice


def test_ctrl_c_stops_a_running_job_with_its_closing_line(fresh_broker: Any, tmp_path: Path) -> None:
    """SIGINT to the job's process group, as a terminal's Ctrl-C: one "stopping" line, no traceback, the
    closing line, exit 0 (Ctrl-C is how `pipeline run` is stopped), nothing left running."""
    bootstrap = fresh_broker.bootstrap
    ensure_topics(bootstrap)
    produce_records(bootstrap, LOGS_TOPIC, generated()[:2000])
    job = subprocess.Popen([sys.executable, "-m", "odradek.cli.main", "pipeline", "run", "weblogs", "--bootstrap-server",
                            bootstrap, "--checkpoint", str(tmp_path / "ck"), "--output", str(tmp_path / "out"),
                            "--trigger", "1s"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    groups = "odradek-pipeline-weblogs-metrics, odradek-pipeline-weblogs-dead-letters"
    out, err = interrupt_at_line(
        job, lambda line: re.match(r"batch \d+: ", line) is not None,  # a batch line: the job is running
        # while it runs, its progress is a consumer group's (the console's groups page shows it)
        before=lambda: wait_until(lambda: lag_rows(bootstrap, "odradek-pipeline-weblogs-metrics") == 2000, 60,
                                  "the metrics query's group at the end of the topic"))
    assert f"progress and lag in consumer groups {groups};" in out, out
    assert job.returncode == 0, out + err
    assert "Traceback" not in out + err and err.count("stopping ...") == 1, err
    assert f"weblogs: stopped; Parquet metrics in {tmp_path / 'out' / 'metrics'}" in out, out
    wait_session_gone(job.pid, "the stopped job's processes")


def test_ctrl_c_stops_an_archive_mid_job(fresh_broker: Any, tmp_path: Path) -> None:
    """SIGINT while the archive's Spark jobs run: Spark's jobs are cancelled, one "stopping" line, no
    traceback, exit 130 with a closing line, nothing left running."""
    bootstrap = fresh_broker.bootstrap
    ensure_topics(bootstrap)
    produce_records(bootstrap, LOGS_TOPIC, generated())
    job = subprocess.Popen([sys.executable, "-m", "odradek.cli.main", "pipeline", "archive", "weblogs",
                            "--bootstrap-server", bootstrap, "--output", str(tmp_path / "arch")], cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    out, err = interrupt_at_line(job, lambda line: line.startswith("Archiving "))  # the Spark jobs start now
    assert job.returncode == 130, out + err
    assert "Traceback" not in out + err and err.count("stopping the archive job ...") == 1, err
    assert f"Stopped: archive interrupted; partial output may be in {tmp_path / 'arch'}" in out, out
    assert not (tmp_path / "arch" / "summary.json").exists()
    wait_session_gone(job.pid, "the stopped archive's processes")
