"""The weblogs pipeline as a command (`odradek pipeline run|archive weblogs`), each run a Spark driver of its own
on a broker of the test's: a streaming run killed with kill -9 and restarted ends with the same output (behind
--run-slow: the Spark cluster's drill, tests/spark/test_spark_cluster.py, kills the same job's driver mid-batch by
default, and checks its rerun against local mode, which test_weblogs_pipeline checks against plain Python), and
Ctrl-C stops a streaming run and an archive with their closing lines. No test here uses the suite's in-process
SparkSession, so under xdist this module runs beside the other Spark tests (tests/conftest.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from odradek.pipelines.weblogs import DLQ_TOPIC, LOGS_TOPIC  # noqa: E402
from odradek.pipelines.weblogs.generator import produce_records  # noqa: E402
from odradek.pipelines.weblogs.topics import ensure_topics  # noqa: E402
from tests.spark.helpers import batch_ids, kill_mid_batch, lag_rows, read_whole_topic, wait_session_gone  # noqa: E402
from tests.spark.weblogs_reference import (  # noqa: E402
    assert_metrics_equal,
    generated,
    parquet_metrics,
    reference_metrics,
)
from tests.waiting import interrupt_at_line, wait_until  # noqa: E402

pytestmark = pytest.mark.timeout(400)
ROOT = Path(__file__).resolve().parents[2]


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
