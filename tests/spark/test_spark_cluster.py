"""The weblogs pipeline on a Spark standalone cluster (`odradek spark up`: two workers of one core) against a
3-broker Odradek cluster: the archive job and the streaming job give exactly what local mode gives, the
streaming job through kill -9 of an executor in the middle of a task (Spark retries it), kill -9 of a
partition leader and kill -9 of its driver, restarted from its checkpoint where it stopped.

One Spark cluster and one Odradek cluster serve the module; the Spark cluster starts (a process of its own)
while the brokers do. Jobs on the cluster run as `odradek pipeline ... --master` processes; local mode's
output comes from the shared local session. Every process started here is stopped by pid at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

import psutil  # noqa: E402
import pyarrow.dataset as ds  # noqa: E402

from odradek.cli import processes  # noqa: E402
from odradek.cli.spark_cluster import (  # noqa: E402
    SparkCluster,
    executor_processes,
    launched_processes,
    master_processes,
    worker_processes,
)
from odradek.pipelines.weblogs import DLQ_TOPIC, LOGS_TOPIC, METRICS_TOPIC  # noqa: E402
from odradek.pipelines.weblogs.generator import produce_records  # noqa: E402
from tests.clients import admin, consume_all, create_topic  # noqa: E402
from tests.harness import BrokerCluster, BrokerPool, free_ports, odradek_cmd, run_cli  # noqa: E402
from tests.spark.helpers import batch_ids, kill_mid_batch, wait_session_gone  # noqa: E402
from tests.spark.weblogs_reference import N, generated, parquet_metrics  # noqa: E402
from tests.waiting import wait_until  # noqa: E402

pytestmark = [pytest.mark.timeout(600), pytest.mark.cluster]
ROOT = Path(__file__).resolve().parents[2]
BATCH = 1500  # records per micro-batch of the faulted run: eight batches for the 12,000 records


@dataclass
class SparkUp:
    """`odradek spark up` running (or done) and where its cluster lives."""

    proc: subprocess.Popen[str]
    directory: Path

    def cluster(self) -> SparkCluster:
        """The cluster once `up` has returned; fails with its output if it did not come up."""
        out, err = self.proc.communicate(timeout=180)
        assert self.proc.returncode == 0, out + err
        cluster = SparkCluster.load(self.directory)
        assert cluster is not None and out.rstrip().endswith(cluster.master_url), out
        return cluster


def spark_pids(cluster: SparkCluster) -> list[psutil.Process]:
    return [*master_processes(cluster), *(p for w in cluster.workers for p in worker_processes(w)),
            *launched_processes(cluster)]


@pytest.fixture(scope="module")
def spark_up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkUp]:
    """`odradek spark up --workers 2 --cores 1` started in the background (the brokers start meanwhile);
    `odradek spark down` at the end, then nothing of it may be left (whatever is, is killed by pid)."""
    directory = tmp_path_factory.mktemp("spark-cluster")
    port, webui, worker_webui = free_ports(3)
    proc = subprocess.Popen(odradek_cmd("spark", "up", "--workers", "2", "--cores", "1", "--memory", "1g",
                                        "--dir", str(directory), "--port", str(port), "--webui-port", str(webui),
                                        "--worker-webui-port", str(worker_webui)),
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    up = SparkUp(proc, directory)
    try:
        yield up
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        down = run_cli("spark", "down", "--dir", str(directory), timeout=120)
        cluster = SparkCluster.load(directory)
        left = spark_pids(cluster) if cluster is not None else []
        processes.terminate(left, 5, kill=True)
        assert down.returncode == 0, down.stdout + down.stderr
        assert not left, f"left running after spark down: {left}"


@pytest.fixture(scope="module")
def brokers3(spark_up: SparkUp, zk_standalone: Any, module_brokers: BrokerPool) -> BrokerCluster:
    """Three brokers; the pipeline's topics replicated on all three, the input loaded."""
    cluster = module_brokers.start_cluster(zk_standalone.connect_string, 3, {"default.replication.factor": "3"},
                                           name="odradek")
    for topic, partitions in ((LOGS_TOPIC, 3), (METRICS_TOPIC, 1), (DLQ_TOPIC, 1)):
        create_topic(cluster.bootstrap, topic, partitions=partitions, rf=3)
    produce_records(cluster.bootstrap, LOGS_TOPIC, generated())
    return cluster


@pytest.fixture(scope="module")
def master(spark_up: SparkUp, brokers3: BrokerCluster) -> SparkCluster:
    return spark_up.cluster()


def start_pipeline(log: Path, *args: str) -> subprocess.Popen[bytes]:
    """`odradek pipeline <args>` as a process of its own session (its driver, JVM and Python workers),
    its output to `log`."""
    with open(log, "wb") as out:
        return subprocess.Popen(odradek_cmd("pipeline", *args), cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def kill_session(job: subprocess.Popen[bytes]) -> None:
    """kill -9 the job's whole session (driver, its JVM, its Python workers) if it still runs."""
    if job.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)
        job.wait(30)


def finished(job: subprocess.Popen[bytes], log: Path, timeout: float = 300) -> str:
    """The job's output once it has ended with status 0 (killed by pid if it outlives `timeout`)."""
    try:
        job.wait(timeout)
    finally:
        kill_session(job)
    output = log.read_text(errors="replace")
    assert job.returncode == 0, output[-3000:]
    return output


def executors_of_workers(master: SparkCluster) -> set[str]:
    """Which workers' work dirs hold an executor's output (`<app-id>/<executor-id>/stderr`)."""
    return {w.work_dir for w in master.workers if any(Path(w.work_dir).glob("app-*/*/stderr"))}


def test_spark_cli_status_help_and_a_busy_port(master: SparkCluster, tmp_path: Path) -> None:
    status = run_cli("spark", "status", "--dir", master.dir)
    assert status.returncode == 0, status.stdout + status.stderr
    assert re.search(rf"^master  {master.master_url}  pid \d+  status ALIVE", status.stdout, re.M), status.stdout
    assert len(re.findall(r"^worker \d  pid \d+  ALIVE", status.stdout, re.M)) == 2, status.stdout
    for args in (("spark", "--help"), ("spark", "up", "--help"), ("spark", "down", "--help"),
                 ("spark", "status", "--help")):
        helped = run_cli(*args)
        assert helped.returncode == 0 and "--dir" in helped.stdout, (args, helped.stdout)
    busy = run_cli("spark", "up", "--dir", str(tmp_path / "other"), "--port", str(master.port),
                   "--webui-port", str(master.webui_port + 100))
    assert busy.returncode == 1 and busy.stdout == "", busy.stdout + busy.stderr
    assert busy.stderr == f"Error: port(s) on 127.0.0.1 already in use: {master.port}, the master's port (--port)\n"
    again = run_cli("spark", "up", "--dir", master.dir)
    assert again.returncode == 1 and "a Spark cluster is already running in" in again.stderr, again.stderr
    assert run_cli("spark", "down", "--dir", str(tmp_path / "none")).stdout.startswith("No Spark cluster in")


def test_archive_on_the_cluster_equals_local_mode(spark: Any, master: SparkCluster, brokers3: BrokerCluster,
                                                  tmp_path: Path) -> None:
    from odradek.pipelines.weblogs.archive_job import ArchiveConfig, archive

    job = start_pipeline(tmp_path / "archive.log", "archive", "weblogs", "--master", master.master_url,
                         "--bootstrap-server", brokers3.bootstrap, "--output", str(tmp_path / "cluster"))
    local = archive(spark, ArchiveConfig(brokers3.bootstrap, tmp_path / "local"))  # meanwhile, in local mode
    output = finished(job, tmp_path / "archive.log")
    assert f"Starting Spark on {master.master_url}" in output, output
    assert json.loads((tmp_path / "cluster" / "summary.json").read_text()) == local
    assert local["records"] == N

    def events(d: Path) -> list[dict[str, Any]]:
        rows = ds.dataset(str(d / "events"), format="parquet", partitioning="hive").to_table().to_pylist()
        return sorted(rows, key=lambda r: (r["ts"], r["ip"], r["path"], r["latency_ms"]))

    assert events(tmp_path / "cluster") == events(tmp_path / "local")
    assert len(executors_of_workers(master)) == 2  # the tasks ran in executors on both workers


def broker_ports(cluster: BrokerCluster) -> set[int]:
    return {b.port for b in cluster.brokers}


def reading_executor(master: SparkCluster, ports: set[int]) -> psutil.Process | None:
    """An executor (its JVM) with a task talking to a broker now: a process of its tree (the task's Python
    worker) holds a connection to a broker port. Executors connect only in tasks, the driver plans."""
    for executor in executor_processes(master):
        try:
            tree = [executor, *executor.children(recursive=True)]
            for proc in tree:
                if any(c.raddr and c.raddr.port in ports and c.status == psutil.CONN_ESTABLISHED
                       for c in proc.net_connections(kind="tcp")):
                    return executor
        except psutil.Error:
            continue
    return None


def partition_leader(cluster: BrokerCluster, topic: str, partition: int) -> int:
    return admin(cluster.bootstrap).list_topics(topic, timeout=10).topics[topic].partitions[partition].leader


def dlq_origins(bootstrap: str, topic: str) -> list[tuple[bytes, bytes]]:
    """Where each dead letter of `topic` came from (its origin headers), every record up to the end."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "t-dlq-end"})
    try:
        end = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=20)[1]
    finally:
        c.close()
    msgs = consume_all(bootstrap, topic, end, timeout=60)
    return [(dict(m.headers())["odradek.dlq.partition"], dict(m.headers())["odradek.dlq.offset"]) for m in msgs]


def test_streaming_on_the_cluster_through_executor_leader_and_driver_kills_equals_local_mode(
        spark: Any, master: SparkCluster, brokers3: BrokerCluster, tmp_path: Path) -> None:
    from odradek.pipelines.weblogs.stream_job import JobConfig, start

    bootstrap = brokers3.bootstrap
    ck, out, log = tmp_path / "ck", tmp_path / "out", tmp_path / "run1.log"
    args = ("run", "weblogs", "--master", master.master_url, "--bootstrap-server", bootstrap, "--checkpoint", str(ck),
            "--output", str(out))
    commits = ck / "metrics" / "commits"
    job = start_pipeline(log, *args, "--trigger", "0s", "--max-offsets-per-trigger", str(BATCH))
    # meanwhile, local mode in this process, into topics of its own
    for topic in ("local-dlq", "local-metrics"):
        create_topic(bootstrap, topic, rf=3)
    local = JobConfig(bootstrap=bootstrap, checkpoint=tmp_path / "local-ck", output=tmp_path / "local",
                      trigger="available-now", dlq_topic="local-dlq", metrics_topic="local-metrics")
    local_queries = start(spark, local)
    try:
        def running(at_least: int) -> bool:
            if job.poll() is not None:
                raise AssertionError(f"the job ended with {job.returncode}:\n{log.read_text()[-3000:]}")
            return len(batch_ids(commits)) >= at_least

        # kill -9 an executor while one of its tasks reads or writes a partition: Spark runs the task again
        wait_until(lambda: running(1), 240, "the job's first batch")
        executor = wait_until(lambda: running(0) and reading_executor(master, broker_ports(brokers3)), 60,
                              "an executor in the middle of a task", interval=0.02)
        executor.kill()
        done = len(batch_ids(commits))

        def driver_log() -> str:
            return (ck / "spark.log").read_text(errors="replace")

        # the driver hears of it from the master (ERROR "Lost executor") and fails the task the executor was
        # running, if it was still running one (WARN "Lost task ... ExecutorLostFailure"; it may have just
        # ended), and runs it again; the stream goes on
        wait_until(lambda: running(0) and "Lost executor" in driver_log(),
                   120, lambda: f"the driver to lose the executor:\n{driver_log()[-3000:]}")
        wait_until(lambda: running(done + 1), 120, "a batch after the executor's kill")

        # kill -9 the leader of a partition the job reads: the executors read from the new leader
        leader = brokers3.by_id(partition_leader(brokers3, LOGS_TOPIC, 0))
        leader.kill()
        done = len(batch_ids(commits))
        wait_until(lambda: running(done + 1), 120, "a batch after the leader's kill")
        # kill -9 the driver (its whole session) in the middle of a batch
        kill_mid_batch(job, ck / "metrics", log, timeout=120)
    except BaseException:
        for q in local_queries:  # they run in the session the next modules share: none may outlive the test
            q.stop()
        raise
    finally:
        kill_session(job)
    wait_session_gone(job.pid, "the killed driver's processes")
    for q in local_queries:
        q.awaitTermination(300)
        assert q.exception() is None, q.exception()
    leader.start()
    brokers3.wait_registered()
    wait_until(lambda: not launched_processes(master), 60, "the killed application's executors to be stopped")
    stopped_at = max(batch_ids(commits))
    assert stopped_at < N // BATCH - 1, "the job was killed after its last batch"
    planned = {i: (ck / "metrics" / "offsets" / str(i)).read_text() for i in batch_ids(ck / "metrics" / "offsets")}

    rerun = finished(start_pipeline(tmp_path / "run2.log", *args, "--trigger", "available-now"), tmp_path / "run2.log")
    # it resumed where it stopped: the batches planned before are kept as they were, the first batch it
    # ran is the next one, and it ended at the end of the topic
    assert {i: (ck / "metrics" / "offsets" / str(i)).read_text() for i in planned} == planned
    ran = [int(b) for b in re.findall(r"^batch (\d+): ", rerun, re.M)]
    assert ran and min(ran) > stopped_at, rerun
    assert re.search(r"lag 0 records$", rerun, re.M), rerun
    # exactly local mode's metrics, and every dead letter local mode wrote (at-least-once: maybe twice)
    assert parquet_metrics(out / "metrics") == parquet_metrics(local.metrics_dir)
    want = dlq_origins(bootstrap, "local-dlq")
    assert len(want) == len(set(want)) > 0
    assert set(dlq_origins(bootstrap, DLQ_TOPIC)) == set(want)
