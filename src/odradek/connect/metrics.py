"""A Connect worker's metrics in Prometheus' text format at `GET /metrics` on its REST port, named as the
Prometheus JMX exporter's Kafka Connect rules (Strimzi's and the exporter's examples) name Kafka's Connect
MBeans, so Connect dashboards work:

- `connect-worker-metrics` -> `kafka_connect_worker_<attribute>` (connector-count, task-count, the connector and
  task startup attempts/success/failure totals and percentages), and per connector with a `connector` label
  (connector-total-task-count, connector-running-task-count, ...);
- `connector-metrics` -> `kafka_connect_connector_status{connector,status}` = 1 (and connector_class,
  connector_type, connector_version the same way);
- `connector-task-metrics` -> `kafka_connect_connector_task_status{connector,task,status}` = 1 and
  `kafka_connect_connector_task_<attribute>{connector,task}` (running-ratio, pause-ratio, batch-size-avg/max,
  offset-commit-avg/max-time-ms, offset-commit-success/failure-percentage);
- `source-task-metrics` / `sink-task-metrics` -> `kafka_connect_source_task_<attribute>` (source-record-poll-
  total/rate, source-record-write-total/rate) and `kafka_connect_sink_task_<attribute>` (sink-record-read-
  total/rate, sink-record-send-total/rate, offset-commit-completion-total/rate, offset-commit-skip-total,
  partition-count).

Every family is a gauge, as the exporter's rules type them. Task threads bump plain counters per batch (a
delivered source record counts one); rates are over the last 30 s, as Kafka's default metric window; the
rest is read from the worker's state when Prometheus scrapes."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from odradek.connect.worker import Worker

WINDOW_S = 30.0


class Rate:
    """Events per second over the last WINDOW_S seconds (or since creation, when younger)."""

    __slots__ = ("_buckets", "_created")

    def __init__(self) -> None:
        self._created = time.monotonic()
        self._buckets: deque[list[float]] = deque()  # [second, count]

    def record(self, n: int) -> None:
        now = float(int(time.monotonic()))
        if self._buckets and self._buckets[-1][0] == now:
            self._buckets[-1][1] += n
        else:
            self._buckets.append([now, float(n)])
            while self._buckets and self._buckets[0][0] <= now - WINDOW_S:
                self._buckets.popleft()

    def per_second(self) -> float:
        now = time.monotonic()
        recent = sum(c for s, c in list(self._buckets) if s > now - WINDOW_S)
        return recent / max(1.0, min(WINDOW_S, now - self._created))


class TaskMetrics:
    """What one task's thread counts (see the module docstring)."""

    def __init__(self) -> None:
        self.created = self.last_tick = time.monotonic()
        self.last_running: bool | None = None
        self.running_s = self.paused_s = 0.0
        self.batches = self.batch_records = self.batch_max = 0
        self.commits = self.commit_failures = 0
        self.commit_ms_total = self.commit_ms_max = 0.0
        self.poll_total = self.write_total = self.read_total = self.send_total = 0
        self.poll_rate, self.write_rate, self.read_rate, self.send_rate, self.commit_rate = (
            Rate(), Rate(), Rate(), Rate(), Rate())
        self.partitions = 0

    def tick(self, running: bool) -> None:
        """Once per loop of the task: the time since the last tick counts as running or paused."""
        now = time.monotonic()
        if self.last_running is True:
            self.running_s += now - self.last_tick
        elif self.last_running is False:
            self.paused_s += now - self.last_tick
        self.last_tick, self.last_running = now, running

    def _batch(self, n: int) -> None:
        self.batches += 1
        self.batch_records += n
        self.batch_max = max(self.batch_max, n)

    def polled(self, n: int) -> None:
        self.poll_total += n
        self.poll_rate.record(n)
        self._batch(n)

    def written(self) -> None:
        self.write_total += 1
        self.write_rate.record(1)

    def read(self, n: int) -> None:
        self.read_total += n
        self.read_rate.record(n)

    def sent(self, n: int) -> None:
        self.send_total += n
        self.send_rate.record(n)
        self._batch(n)

    def committed(self, started: float, ok: bool) -> None:
        """An offset commit that began at `started` (time.perf_counter()) ended."""
        ms = (time.perf_counter() - started) * 1000
        self.commits += 1
        self.commit_ms_total += ms
        self.commit_ms_max = max(self.commit_ms_max, ms)
        if ok:
            self.commit_rate.record(1)
        else:
            self.commit_failures += 1

    def ratios(self) -> tuple[float, float]:
        elapsed = max(self.last_tick - self.created, 1e-9)
        return min(1.0, self.running_s / elapsed), min(1.0, self.paused_s / elapsed)


class WorkerMetrics:
    """The worker's startup counters and the registry `/metrics` renders."""

    def __init__(self, worker: Worker) -> None:
        self._lock = threading.Lock()
        self.startups = {"connector": [0, 0, 0], "task": [0, 0, 0]}  # attempts, successes, failures
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_Collector(worker, self))
        ProcessCollector(registry=self.registry)

    def startup(self, kind: str, ok: bool | None) -> None:
        """A connector or task start was attempted (ok None), or succeeded or failed."""
        with self._lock:
            counts = self.startups[kind]
            if ok is None:
                counts[0] += 1
            else:
                counts[1 if ok else 2] += 1

    def render(self) -> bytes:
        return generate_latest(self.registry)


def _gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=labels)


class _Collector(Collector):
    def __init__(self, worker: Worker, metrics: WorkerMetrics) -> None:
        self.worker = worker
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        states = list(self.worker.connectors.values())
        tasks = [(state, task) for state in states for task in list(state.tasks)]
        yield GaugeMetricFamily("kafka_connect_worker_connector_count", "The number of connectors run in this "
                                "worker", value=len(states))
        yield GaugeMetricFamily("kafka_connect_worker_task_count", "The number of tasks run in this worker",
                                value=len(tasks))
        for kind, (attempts, ok, failed) in self.metrics.startups.items():
            prefix = f"kafka_connect_worker_{kind}_startup"
            yield GaugeMetricFamily(f"{prefix}_attempts_total", f"{kind} startups attempted", value=attempts)
            yield GaugeMetricFamily(f"{prefix}_success_total", f"{kind} starts that succeeded", value=ok)
            yield GaugeMetricFamily(f"{prefix}_failure_total", f"{kind} starts that failed", value=failed)
            yield GaugeMetricFamily(f"{prefix}_success_percentage", f"Share of {kind} starts that succeeded",
                                    value=ok / attempts if attempts else 0.0)
            yield GaugeMetricFamily(f"{prefix}_failure_percentage", f"Share of {kind} starts that failed",
                                    value=failed / attempts if attempts else 0.0)
        yield from self._per_connector(states)
        yield from self._tasks(tasks)

    def _per_connector(self, states: list) -> Iterator[Metric]:
        counts = {s: _gauge(f"kafka_connect_worker_connector_{s}_task_count", f"Tasks of the connector: {s}",
                            ["connector"])
                  for s in ("total", "running", "paused", "failed", "unassigned", "restarting", "destroyed")}
        status = _gauge("kafka_connect_connector_status", "The connector's status (value 1)", ["connector", "status"])
        info = {key: _gauge(f"kafka_connect_connector_{key}", f"The connector's {key} (value 1)", ["connector", key])
                for key in ("connector_class", "connector_type", "connector_version")}
        for state in states:
            task_states = [t.state.lower() for t in list(state.tasks)]
            counts["total"].add_metric([state.name], len(task_states))
            for s, family in counts.items():
                if s != "total":
                    family.add_metric([state.name], task_states.count(s))
            status.add_metric([state.name, state.state.lower()], 1)
            connector = state.connector
            info["connector_class"].add_metric([state.name, state.config.get("connector.class", "")], 1)
            info["connector_type"].add_metric([state.name, state.kind], 1)
            info["connector_version"].add_metric([state.name, connector.version() if connector else "unknown"], 1)
        yield from counts.values()
        yield status
        yield from info.values()

    def _tasks(self, tasks: list) -> Iterator[Metric]:
        labels = ["connector", "task"]
        status = _gauge("kafka_connect_connector_task_status", "The task's status (value 1)", [*labels, "status"])
        common = {name: _gauge(f"kafka_connect_connector_task_{name}", doc, labels) for name, doc in (
            ("running_ratio", "Fraction of time the task spent running"),
            ("pause_ratio", "Fraction of time the task spent paused"),
            ("batch_size_avg", "Average records per batch (polled by a source, put to a sink)"),
            ("batch_size_max", "Most records in one batch"),
            ("offset_commit_avg_time_ms", "Average time of an offset commit (ms)"),
            ("offset_commit_max_time_ms", "Longest offset commit (ms)"),
            ("offset_commit_success_percentage", "Share of offset commits that succeeded"),
            ("offset_commit_failure_percentage", "Share of offset commits that failed"))}
        source = {name: _gauge(f"kafka_connect_source_task_{name}", doc, labels) for name, doc in (
            ("source_record_poll_total", "Records polled from the task (before transforms)"),
            ("source_record_poll_rate", "Records polled per second"),
            ("source_record_write_total", "Records written to Kafka (delivered)"),
            ("source_record_write_rate", "Records written to Kafka per second"))}
        sink = {name: _gauge(f"kafka_connect_sink_task_{name}", doc, labels) for name, doc in (
            ("sink_record_read_total", "Records read from Kafka (before transforms)"),
            ("sink_record_read_rate", "Records read from Kafka per second"),
            ("sink_record_send_total", "Records put to the task (after transforms)"),
            ("sink_record_send_rate", "Records put to the task per second"),
            ("offset_commit_completion_total", "Offset commits completed"),
            ("offset_commit_completion_rate", "Offset commits completed per second"),
            ("offset_commit_skip_total", "Offset commits that completed too late and were skipped"),
            ("partition_count", "Topic partitions assigned to the task"))}
        for state, task in tasks:
            key = [state.name, str(task.id)]
            status.add_metric([*key, task.state.lower()], 1)
            runner = task.runner
            m: TaskMetrics | None = getattr(runner, "metrics", None)
            if m is None:
                continue
            running, paused = m.ratios()
            commits = m.commits
            values = {"running_ratio": running, "pause_ratio": paused,
                      "batch_size_avg": m.batch_records / m.batches if m.batches else 0.0,
                      "batch_size_max": m.batch_max,
                      "offset_commit_avg_time_ms": m.commit_ms_total / commits if commits else 0.0,
                      "offset_commit_max_time_ms": m.commit_ms_max,
                      "offset_commit_success_percentage": (commits - m.commit_failures) / commits if commits else 0.0,
                      "offset_commit_failure_percentage": m.commit_failures / commits if commits else 0.0}
            for name, value in values.items():
                common[name].add_metric(key, value)
            if state.kind == "source":
                for name, value in (("source_record_poll_total", m.poll_total),
                                    ("source_record_poll_rate", m.poll_rate.per_second()),
                                    ("source_record_write_total", m.write_total),
                                    ("source_record_write_rate", m.write_rate.per_second())):
                    source[name].add_metric(key, value)
            else:
                for name, value in (("sink_record_read_total", m.read_total),
                                    ("sink_record_read_rate", m.read_rate.per_second()),
                                    ("sink_record_send_total", m.send_total),
                                    ("sink_record_send_rate", m.send_rate.per_second()),
                                    ("offset_commit_completion_total", commits - m.commit_failures),
                                    ("offset_commit_completion_rate", m.commit_rate.per_second()),
                                    ("offset_commit_skip_total", 0), ("partition_count", m.partitions)):
                    sink[name].add_metric(key, value)
        yield status
        yield from common.values()
        yield from source.values()
        yield from sink.values()
