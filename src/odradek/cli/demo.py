"""`odradek demo [--duration S]`: the main job. Starts an embedded single-node broker in a temp dir, creates
the weblogs topics (with --schema-registry the broker runs its schema registry, `schema_registry_api`, and
the pipeline's topics hold Avro in Confluent's wire format, their schemas registered), starts the web console (`odradek console`) on it, runs the access-log generator and the
Spark streaming job (local mode, or a standalone cluster with `--spark-master`), and shows the console and
metrics URLs and the live per-minute metrics (read back from topic `access-metrics`) as a live table with a
legend of its columns; the run's
clock starts with the first metrics, after Spark's start-up. Then it stops everything and prints the
final table and where the Parquet output is. Ctrl-C at any moment stops it the same way: one "stopping"
line, the table so far, its temporary directories removed, exit status 130."""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from odradek.interrupts import StopRequest

FIRST_METRICS_TIMEOUT_S = 600.0  # Spark's start-up and first micro-batch, however busy the machine


class _Stopped(Exception):
    """Ctrl-C (or SIGTERM) arrived during a start-up phase: skip to the shutdown."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_broker(workdir: Path, port: int, http_port: int, registry_url: str | None) -> subprocess.Popen:
    cfg = workdir / "server.properties"
    cfg.write_text(
        f"broker.id=0\nlisteners=PLAINTEXT://127.0.0.1:{port}\nlog.dirs={workdir / 'data'}\n"
        "num.partitions=3\noffsets.topic.replication.factor=1\ngroup.initial.rebalance.delay.ms=0\n"
        f"http.listener=127.0.0.1:{http_port}\n"
        + (f"schema_registry_api={registry_url}\n" if registry_url else "")
    )
    out = open(workdir / "broker.out", "wb")  # noqa: SIM115 - handed to the child process
    return subprocess.Popen([sys.executable, "-m", "odradek.cli.main", "server-start", str(cfg)],
                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _wait_ready(bootstrap: str, proc: subprocess.Popen, stop: StopRequest, timeout: float = 30) -> None:
    from confluent_kafka.admin import AdminClient

    deadline = time.monotonic() + timeout
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    while time.monotonic() < deadline:
        if stop.is_set():
            raise _Stopped
        if proc.poll() is not None:
            raise SystemExit(f"Error: the broker exited with status {proc.returncode}")
        try:
            admin.list_topics(timeout=1)
            return
        except Exception:
            time.sleep(0.2)
    raise SystemExit("Error: the broker did not become ready in time")


def _register_schemas(registry_url: str, stop: StopRequest, timeout: float = 60) -> bool:
    """Register the pipeline's schemas once the broker's registry takes writes (it elects its primary after
    the broker is up); False, with a warning, when it never does: the demo then runs without it."""
    from odradek.pipelines.weblogs.schemas import register_job_schemas
    from odradek.serde.registry_client import RegistryError

    deadline = time.monotonic() + timeout
    while True:
        if stop.is_set():
            raise _Stopped
        try:
            register_job_schemas(registry_url)
            return True
        except RegistryError as exc:
            if time.monotonic() >= deadline:
                print(f"Warning: the broker's schema registry did not take the pipeline's schemas ({exc}); "
                      "going on without it", file=sys.stderr)
                return False
            time.sleep(0.3)


def _start_console(workdir: Path, bootstrap: str, port: int, metrics_url: str) -> tuple[subprocess.Popen, str] | None:
    """The web console (`odradek console`) on `port` and its login URL (with the access token the demo gives
    it), once it answers HTTP; None (with a warning) when it does not come up: the demo goes on without it."""
    import secrets
    import urllib.request

    token = secrets.token_urlsafe(32)
    out = open(workdir / "console.out", "wb")  # noqa: SIM115 - handed to the child process
    proc = subprocess.Popen([sys.executable, "-m", "odradek.cli.main", "console", "--bootstrap-server", bootstrap,
                             "--host", "127.0.0.1", "--port", str(port),
                             "--metrics-url-template", metrics_url.replace("127.0.0.1", "{host}")],
                            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "ODRADEK_CONSOLE_TOKEN": token},
                            start_new_session=True)  # Ctrl-C is the demo's to handle: it stops the console
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:  # the login page is the one page that needs no session
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/login", timeout=5) as page:
                if page.status == 200:
                    return proc, f"http://127.0.0.1:{port}/?token={token}"
        except OSError:
            time.sleep(0.2)
    print(f"Warning: the web console did not start (its output: {workdir / 'console.out'}); going on without it",
          file=sys.stderr)
    _stop_process(proc)
    return None


def _stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def metrics_from_avro(deserializer: Any, raw: bytes) -> dict[str, Any] | None:
    """A WindowMetrics record in the JSON records' shape (window bounds as ISO 8601 text); None for a value
    that does not decode (the view skips it, as it skips null values)."""
    from odradek.pipelines.weblogs.sinks import iso_ms
    from odradek.serde.avro import DecodeError

    try:
        value: dict[str, Any] = deserializer.decode(raw)
    except DecodeError:
        return None
    for k in ("window_start", "window_end"):
        value[k] = iso_ms(int(value[k].timestamp() * 1000))
    return value


class MetricsView:
    """Follows `access-metrics` (latest figures per window) and counts the dead letters."""

    def __init__(self, bootstrap: str, metrics_topic: str, dlq_topic: str, registry_url: str | None = None) -> None:
        from confluent_kafka import Consumer, TopicPartition

        self.avro = None
        if registry_url:
            from odradek.pipelines.weblogs.schemas import metrics_deserializer

            self.avro = metrics_deserializer(registry_url)

        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "odradek-demo-view",
                                  "enable.auto.commit": False, "log_level": 0})
        self.consumer.assign([TopicPartition(metrics_topic, 0, -2), TopicPartition(dlq_topic, 0, -2)])
        self.metrics_topic = metrics_topic
        self.windows: dict[str, dict[str, Any]] = {}
        self.dead_letters = 0

    def poll(self, timeout: float) -> bool:
        """Read what is there; True when some window's figures changed."""
        changed = False
        for m in self.consumer.consume(1000, timeout):
            if m.error():
                continue
            if m.topic() == self.metrics_topic:
                raw = m.value()
                if raw is None:
                    continue
                value = json.loads(raw) if self.avro is None else metrics_from_avro(self.avro, raw)
                if value is None:
                    continue
                self.windows[value["window_start"]] = value
                changed = True
            else:
                self.dead_letters += 1
        return changed

    def close(self) -> None:
        self.consumer.close()


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="odradek demo", description=__doc__)
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of metrics to show, counted from the first micro-batch (default 60)")
    ap.add_argument("--rate", type=float, default=300.0, help="access events per second (default 300)")
    ap.add_argument("--malformed-fraction", type=float, default=0.01, help="share of damaged lines (default 0.01)")
    ap.add_argument("--trigger", default="5s", help="micro-batch interval of the streaming job (default 5s)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--port", type=int, default=0, help="broker port (default: a free one)")
    ap.add_argument("--output", default=None, help="directory for the Parquet output (default: a new temp dir)")
    ap.add_argument("--console-port", type=int, default=0,
                    help="port of the web console (default: a free one); -1 runs the demo without it")
    ap.add_argument("--schema-registry", action="store_true",
                    help="run the schema registry in the broker: the pipeline's topics then hold Avro in "
                         "Confluent's wire format, schemas registered under <topic>-value (default: log lines as "
                         "text, metrics as JSON)")
    ap.add_argument("--spark-master", default=None, metavar="URL",
                    help="run the streaming job on this Spark standalone master, spark://HOST:PORT (odradek spark "
                         "up starts one); default: Spark's local mode, local[2]")
    args = ap.parse_args(argv)
    try:
        import rich  # noqa: F401 - the live screen

        from odradek.spark.session import MasterError, check_master, spark_session, stop_session
    except ImportError as exc:
        print(f"Error: the demo needs the spark extra ({exc}); run: pip install -e '.[spark]'", file=sys.stderr)
        return 1
    if args.spark_master:
        try:
            check_master(args.spark_master)
        except MasterError as exc:
            print(f"Error: --spark-master: {exc}", file=sys.stderr)
            return 1
    from rich.console import Console
    from rich.live import Live

    from odradek.pipelines.weblogs import DLQ_TOPIC, LOGS_TOPIC, METRICS_TOPIC
    from odradek.pipelines.weblogs.dashboard import render_table
    from odradek.pipelines.weblogs.generator import (
        GeneratorConfig,
        ProduceStats,
        WeblogGenerator,
        produce_records,
    )
    from odradek.pipelines.weblogs.screen import DemoState, render, status_text
    from odradek.pipelines.weblogs.stream_job import JobConfig, start
    from odradek.pipelines.weblogs.topics import ensure_topics

    stop = StopRequest("stopping the demo")

    def check_stop() -> None:
        if stop.is_set():
            raise _Stopped

    port = args.port or _free_port()
    bootstrap = f"127.0.0.1:{port}"
    http_port = _free_port()
    metrics_url = f"http://127.0.0.1:{http_port}/metrics"
    links = {"broker metrics (Prometheus)": metrics_url}
    registry_url = f"http://127.0.0.1:{_free_port()}" if args.schema_registry else None
    own_output = not args.output
    output = Path(args.output) if args.output else Path(tempfile.mkdtemp(prefix="odradek-demo-output-"))
    workdir = Path(tempfile.mkdtemp(prefix="odradek-demo-"))
    console = Console()
    tty = console.is_terminal
    broker = None
    web_console = None
    spark = None
    view = None
    gen_thread = None
    stats = ProduceStats()
    finished = False
    try:
        with console.status("Starting the broker ..."):
            broker = _start_broker(workdir, port, http_port, registry_url)
            _wait_ready(bootstrap, broker, stop)
        print(f"Broker running at {bootstrap} (data in {workdir / 'data'}); metrics at {metrics_url}", flush=True)
        if registry_url is not None:
            with console.status("Registering the pipeline's schemas ..."):
                if _register_schemas(registry_url, stop):
                    print(f"Schema registry running at {registry_url} (Avro values, subjects <topic>-value)",
                          flush=True)
                else:
                    registry_url = None
        ensure_topics(bootstrap)
        print(f"Topics: {LOGS_TOPIC}, {METRICS_TOPIC}, {DLQ_TOPIC}", flush=True)
        check_stop()
        if args.console_port >= 0:
            console_port = args.console_port or _free_port()
            with console.status("Starting the web console ..."):
                started_console = _start_console(workdir, bootstrap, console_port, metrics_url)
            if started_console is not None:
                web_console, console_url = started_console
                links["web console"] = console_url
                print(f"Web console running at {console_url} (topics, messages, the streaming job's lag in "
                      "consumer groups odradek-pipeline-weblogs-*, the metrics as charts)", flush=True)

        def generate() -> None:
            cfg = GeneratorConfig(seed=args.seed, rate=args.rate, malformed_fraction=args.malformed_fraction)
            produce_records(bootstrap, LOGS_TOPIC, WeblogGenerator(cfg).records(), live=True, stop=stop.event,
                            on_progress=lambda s: setattr(stats, "produced", s.produced),
                            schema_registry_url=registry_url)

        check_stop()
        gen_thread = threading.Thread(target=generate, name="generator", daemon=True)
        gen_thread.start()
        print(f"Generator: ~{args.rate:g} access events/s to {LOGS_TOPIC}", flush=True)
        with console.status(f"Starting Spark ({args.spark_master or 'local[2]'}) and the streaming job ..."):
            spark = spark_session("odradek-demo", args.spark_master, log_file=workdir / "spark.log")
            job = JobConfig(bootstrap=bootstrap, checkpoint=workdir / "checkpoint", output=output, trigger=args.trigger,
                            schema_registry_url=registry_url)
            check_stop()
            queries = start(spark, job)
        check_stop()
        print(f"Streaming job running on {args.spark_master or 'local[2]'} (trigger {args.trigger}; Spark's log: "
              f"{workdir / 'spark.log'}); "
              f"the {args.duration:g} s run starts with its first metrics", flush=True)
        view = MetricsView(bootstrap, METRICS_TOPIC, DLQ_TOPIC, registry_url)
        state = DemoState(bootstrap, f"{LOGS_TOPIC} -> {METRICS_TOPIC}, {DLQ_TOPIC}", str(output), args.duration,
                          phase="waiting", links=links)
        first_metrics_at: float | None = None
        give_up = time.monotonic() + FIRST_METRICS_TIMEOUT_S
        # The clock starts with the first metrics: Spark's start-up and first micro-batch take a while,
        # longer still on a busy machine, and a run that ends before them shows nothing.
        live = Live(render(state, *console.size), console=console, refresh_per_second=4, transient=True) if tty else None
        with live if live is not None else nullcontext():
            while not stop.is_set():
                changed = view.poll(0.25)
                failed = [q for q in queries if q.exception() is not None]
                if failed:
                    print(f"Error: query {failed[0].name} failed: {failed[0].exception()} "
                          f"(Spark log: {workdir / 'spark.log'})", file=sys.stderr)
                    return 1
                now = time.monotonic()
                if first_metrics_at is None and view.windows:
                    first_metrics_at = now
                    state.phase = "running"
                if first_metrics_at is None and now >= give_up:
                    print(f"Error: no metrics from the streaming job after {FIRST_METRICS_TIMEOUT_S:g} s "
                          f"(Spark log: {workdir / 'spark.log'})", file=sys.stderr)
                    return 1
                state.clock_s = now - first_metrics_at if first_metrics_at is not None else 0.0
                state.produced, state.dead_letters = stats.produced, view.dead_letters
                state.batch = queries[0].lastProgress or {}
                state.windows = list(view.windows.values())
                if first_metrics_at is not None and state.clock_s >= args.duration:
                    finished = True
                    break
                if live is not None:
                    live.update(render(state, *console.size))
                elif changed:
                    print(status_text(state).plain, flush=True)
        view.poll(0.5)
        if not stop.signalled:
            print("Stopping ...", flush=True)
    except _Stopped:
        pass
    finally:
        stop.set()
        if gen_thread is not None:
            gen_thread.join(30)
        if view is not None:
            view.close()
        if spark is not None:
            stop_session(spark)
            spark = None
            # the metrics sink's producer lives on in this process until collected, and would log the
            # broker's going away below
            gc.collect()
        if web_console is not None:
            _stop_process(web_console)
        if broker is not None:
            _stop_process(broker)
        shutil.rmtree(workdir, ignore_errors=True)
        if own_output and not any((output / "metrics").glob("**/*.parquet")):
            shutil.rmtree(output, ignore_errors=True)  # interrupted before any output: nothing to keep
    windows = list(view.windows.values()) if view else []
    if windows:
        print(render_table(windows, width=shutil.get_terminal_size().columns))
    verb = "Done" if finished or not stop.signalled else "Stopped"
    print(f"\n{verb}: {stats.produced:,} events produced, {view.dead_letters if view else 0:,} dead letters.")
    if output.exists():
        print(f"Parquet metrics (one file per window, partitioned by date and hour): {output / 'metrics'}")
    return 130 if stop.signalled and not finished else 0
