"""The worker: runs connectors and their tasks, each task on a thread of its own with its own client.

A source task's loop polls records, converts key, value and headers with the connector's converters and
produces them; every `offset.flush.interval.ms` (and when it stops) it waits for the producer to deliver what
was sent, then commits the source offsets of those records, so a restarted task resumes after the last
delivered record (at least once). A sink task's consumer is in the group `connect-<connector>`; its loop
converts what it reads to SinkRecords and `put`s them; every `offset.flush.interval.ms`, on a rebalance and
when it stops, `flush` then commits the consumer offsets of what was put.

States and traces are Kafka's (`RUNNING`, `PAUSED`, `STOPPED`, `FAILED` with the exception's trace,
`UNASSIGNED`); a failed task stays failed until restarted."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from odradek.admin_client.connect import ClientErrors, client_config, create_client
from odradek.connect import exactly_once, transforms
from odradek.connect.active_topics import ActiveTopics, TopicTracker
from odradek.connect.api import (
    ConfigDef,
    ConfigException,
    Connector,
    ConnectorContext,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SinkTaskContext,
    SourceConnector,
    SourceRecord,
    SourceTask,
    SourceTaskContext,
    at_least,
    non_empty_string,
)
from odradek.connect.converters import Converter
from odradek.connect.data import Schema
from odradek.connect.metrics import TaskMetrics, WorkerMetrics
from odradek.connect.offset_store import ConnectorOffsetReader, OffsetStore, _compact, offset_key
from odradek.connect.plugins import PluginNotFound, Plugins
from odradek.connect.worker_config import WorkerConfig

log = logging.getLogger("odradek.connect")

RUNNING, PAUSED, STOPPED, FAILED, UNASSIGNED, RESTARTING = "RUNNING", "PAUSED", "STOPPED", "FAILED", "UNASSIGNED", "RESTARTING"

# Keys every connector configuration has (Kafka's ConnectorConfig), plus the sink keys (SinkConnectorConfig)
COMMON_CONFIG = (ConfigDef()
                 .define("name", "STRING", "", "HIGH", "Globally unique name to use for this connector.",
                         validator=non_empty_string, group="Common")
                 .define("connector.class", "STRING", None, "HIGH", "Name or alias of the class for this connector.",
                         group="Common")
                 .define("tasks.max", "INT", "1", "HIGH", "Maximum number of tasks to use for this connector.",
                         validator=at_least(1), group="Common")
                 .define("key.converter", "CLASS", None, "LOW", "Converter class used to convert between Kafka Connect "
                         "format and the serialized form that is written to Kafka.", group="Common")
                 .define("value.converter", "CLASS", None, "LOW", "Converter class used to convert between Kafka "
                         "Connect format and the serialized form that is written to Kafka.", group="Common")
                 .define("header.converter", "CLASS", None, "LOW", "HeaderConverter class used to convert between "
                         "Kafka Connect format and the serialized form that is written to Kafka.", group="Common")
                 .define("transforms", "LIST", "", "LOW", "Aliases for the transformations to be applied to records.",
                         group="Transforms")
                 .define("predicates", "LIST", "", "LOW", "Aliases for the predicates used by transformations.",
                         group="Predicates")
                 .define("errors.tolerance", "STRING", "none", "MEDIUM", "Behavior for tolerating errors during "
                         "connector operation. 'none' is the default value and signals that any error will result "
                         "in an immediate connector task failure; 'all' changes the behavior to skip over "
                         "problematic records.", group="Error Handling"))
SINK_KEYS = ("topics", "topics.regex")


def connector_task_configs(plugins: Plugins, state: ConnectorState, configs: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The task configs a connector's own give, as Kafka's Worker writes them: each names the task class (as
    Kafka's connectors name theirs: FileStreamSinkConnector runs FileStreamSinkTask; a Java worker needs it to run
    the task) and, for a sink, carries the connector's topics or regex (a task validates them from its own
    config)."""
    connector = plugins.connector_name(state.config["connector.class"])
    task_class = connector[:-len("Connector")] + "Task" if connector.endswith("Connector") else connector + "Task"
    sink = {k: state.config[k] for k in SINK_KEYS if state.kind == "sink" and k in state.config}
    return [{**{str(k): str(v) for k, v in c.items()}, "task.class": task_class, **sink} for c in configs]


@dataclass
class TaskState:
    id: int
    state: str = UNASSIGNED
    trace: str | None = None
    runner: TaskRunner | None = None
    version: str | None = None  # the task's version(), once started (Kafka 4.x's statuses carry it)


@dataclass
class ConnectorState:
    name: str
    config: dict[str, str]
    kind: str  # "source" | "sink"
    connector: Connector | None = None
    state: str = UNASSIGNED
    trace: str | None = None
    target: str = RUNNING  # the state asked for: RUNNING, PAUSED or STOPPED
    task_configs: list[dict[str, str]] = field(default_factory=list)
    tasks: list[TaskState] = field(default_factory=list)
    created_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    version: str | None = None  # the connector's version() (Kafka 4.x's statuses carry it)


def _trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)).rstrip()


class TaskRunner:
    """One task's thread (see the module docstring); `stop()` asks it to end and waits."""

    def __init__(self, worker: Worker, connector: ConnectorState, task: TaskState, props: dict[str, str]) -> None:
        self.worker = worker
        self.connector = connector
        self.task = task
        self.props = props
        self.stopping = threading.Event()
        self.paused = threading.Event()
        self.metrics = TaskMetrics()
        self.thread = threading.Thread(target=self._run, name=f"task-thread-{connector.name}-{task.id}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout: float) -> None:
        self.stopping.set()
        self.thread.join(timeout)

    def _run(self) -> None:
        try:
            self.run()
        except Exception as exc:  # the task failed: its status says why, the other tasks go on
            if self.task.state not in (RUNNING, PAUSED):
                self.worker.metrics.startup("task", False)
            log.error("%s Task threw an uncaught and unrecoverable exception. Task is being killed and will not "
                      "recover until manually restarted", self.label(), exc_info=exc)
            self.task.state, self.task.trace = FAILED, _trace(exc)

    def label(self) -> str:
        return f"WorkerTask{{id={self.connector.name}-{self.task.id}}}"

    def _tolerated(self, exc: Exception, record: object) -> None:
        """errors.tolerance=all: the record is skipped; errors.log.enable logs why."""
        config = self.connector.config
        if config.get("errors.log.enable", "false") == "true":
            detail = f" {record}" if config.get("errors.log.include.messages", "false") == "true" else ""
            log.error("%s Error encountered in task %s-%d. Tolerating it and skipping the record.%s",
                      self.label(), self.connector.name, self.task.id, detail, exc_info=exc)

    def run(self) -> None:
        raise NotImplementedError

    def converter(self, which: str) -> Converter:
        return self.worker.converter(self.connector.config, which)


class SourceTaskRunner(TaskRunner):
    def run(self) -> None:
        cfg = self.worker.config
        task_cls = self.worker.plugins.connector_class(self.connector.config["connector.class"])().task_class()
        task = task_cls()
        assert isinstance(task, SourceTask)
        self.task.version = plugin_version(task)
        eos = self.worker.exactly_once
        # a task resumes from everything committed before it, by whichever instance on whichever worker (Kafka's
        # offset reader reads its store to the end too)
        self.worker.offsets.read_to_end()
        task.initialize(SourceTaskContext(dict(self.props), ConnectorOffsetReader(self.worker.offsets,
                                                                                  self.connector.name)))
        key_converter, value_converter = self.converter("key.converter"), self.converter("value.converter")
        transform = transforms.chain(self.connector.config)
        tolerate = self.connector.config.get("errors.tolerance", "none") == "all"
        errors = ClientErrors()
        defaults: dict[str, Any] = {"client.id": f"connector-producer-{self.connector.name}-{self.task.id}",
                                    "acks": "all", "enable.idempotence": False, "linger.ms": 5,
                                    "partitioner": "murmur2_random"}  # a keyed record's partition as Java's
        if eos:
            defaults.update({"enable.idempotence": True, "transactional.id": exactly_once.transactional_id(
                str(cfg.props["group.id"]), self.connector.name, self.task.id)})
        producer = create_client(Producer, client_config(cfg.bootstrap_servers, cfg.client_props("producer"),
                                                         errors=errors, defaults=defaults))
        if eos:
            producer.init_transactions(60)  # fences this task's earlier instance, aborting what it left open
        task.start(dict(self.props))
        self.task.state = PAUSED if self.paused.is_set() else RUNNING  # started paused: stays so
        self.worker.metrics.startup("task", True)
        log.info("%s Source task finished initialization and start", self.label())
        pending: dict[bytes, Any] = {}  # the offsets of records sent since the last commit, by source partition
        failures: list[KafkaError] = []
        interval = (exactly_once.boundary_interval_s(self.connector.config, cfg.props["offset.flush.interval.ms"])
                    if eos and exactly_once.boundary(self.connector.config) == "interval" else None)
        next_flush = time.monotonic() + (interval if interval is not None else cfg.ms("offset.flush.interval.ms"))
        in_transaction = False
        try:
            while not self.stopping.is_set():
                self.metrics.tick(not self.paused.is_set())
                if self.paused.is_set():
                    self.stopping.wait(0.1)
                    continue
                records = task.poll() or []
                # a poll's records mostly share one partition object (alive while `records` is): one JSON each
                keys: dict[int, bytes] = {}
                if records:
                    self.metrics.polled(len(records))
                    if eos and not in_transaction:
                        producer.begin_transaction()
                        in_transaction = True
                for record in records:
                    try:
                        changed = transform(record)
                        if changed is not None:
                            assert isinstance(changed, SourceRecord)
                            self._send(producer, changed, key_converter, value_converter, failures)
                    except Exception as exc:
                        if not tolerate:
                            raise
                        self._tolerated(exc, record)
                    # a dropped or skipped record's offset counts too, as in Kafka
                    if record.source_partition is not None and record.source_offset is not None:
                        key = keys.get(id(record.source_partition))
                        if key is None:
                            key = keys[id(record.source_partition)] = json.dumps(
                                record.source_partition, separators=(",", ":")).encode()
                        pending[key] = record.source_offset
                producer.poll(0)
                if failures:
                    raise KafkaException(failures[0])
                if eos:
                    # transaction.boundary=poll: every batch polled is a transaction; interval: every interval
                    if in_transaction and (interval is None or time.monotonic() >= next_flush):
                        self._commit_transaction(producer, task, pending, failures)
                        in_transaction = False
                        next_flush = time.monotonic() + (interval or 0)
                elif time.monotonic() >= next_flush:
                    self._commit(producer, task, pending, failures)
                    next_flush = time.monotonic() + cfg.ms("offset.flush.interval.ms")
            if in_transaction:
                self._commit_transaction(producer, task, pending, failures)
                in_transaction = False
            elif not eos:
                self._commit(producer, task, pending, failures)
        finally:
            task.stop()
            if in_transaction:
                with contextlib.suppress(Exception):  # what it sent is aborted, its offsets with it
                    producer.abort_transaction(cfg.ms("offset.flush.timeout.ms"))
            producer.flush(cfg.ms("offset.flush.timeout.ms"))

    def _commit_transaction(self, producer: Producer, task: SourceTask, pending: dict[bytes, Any],
                            failures: list[KafkaError]) -> None:
        """KIP-618: the batch's source offsets join its records in the offsets topic, in the same transaction,
        which is then committed: both are seen, or neither."""
        started = time.perf_counter()
        topic = self.worker.offsets.topic
        assert topic is not None
        for partition_json, offset in pending.items():
            producer.produce(topic, key=offset_key(self.connector.name, json.loads(partition_json)),
                             value=None if offset is None else _compact(offset))
        producer.commit_transaction(self.worker.config.ms("offset.flush.timeout.ms") * 6)
        if failures:
            raise KafkaException(failures[0])
        self.metrics.committed(started, True)
        pending.clear()
        task.commit()

    def _send(self, producer: Producer, record: SourceRecord, key_converter: Converter, value_converter: Converter,
              failures: list[KafkaError]) -> None:
        key = key_converter.from_connect(record.topic, record.key_schema, record.key)
        value = value_converter.from_connect(record.topic, record.value_schema, record.value)
        headers = [(name, _header_bytes(v)) for name, _schema, v in record.headers]

        def delivered(err: KafkaError | None, _msg: Any) -> None:
            if err is not None:
                failures.append(err)
            else:
                self.worker.active_topics.record(self.connector.name, record.topic, self.task.id)
                self.metrics.written()

        kwargs: dict[str, Any] = {"key": key, "value": value, "on_delivery": delivered}
        if record.kafka_partition is not None:
            kwargs["partition"] = record.kafka_partition
        if record.timestamp is not None:
            kwargs["timestamp"] = record.timestamp
        if headers:
            kwargs["headers"] = headers
        while True:
            try:
                producer.produce(record.topic, **kwargs)
                return
            except BufferError:  # the producer's queue is full: let it deliver some
                producer.poll(0.1)

    def _commit(self, producer: Producer, task: SourceTask, pending: dict[bytes, Any],
                failures: list[KafkaError]) -> None:
        """Deliver what was sent, then commit the offsets it reached (Kafka's offset flush)."""
        started = time.perf_counter()
        left = producer.flush(self.worker.config.ms("offset.flush.timeout.ms"))
        if failures:
            raise KafkaException(failures[0])
        if pending:
            self.metrics.committed(started, not left)
        if left:
            log.warning("%s Failed to flush, timed out while waiting for producer to flush outstanding %d messages",
                        self.label(), left)
            return
        if pending:
            self.worker.offsets.commit(self.connector.name, dict(pending))
            pending.clear()
            task.commit()


class SinkTaskRunner(TaskRunner):
    def run(self) -> None:
        cfg = self.worker.config
        name = self.connector.name
        task_cls = self.worker.plugins.connector_class(self.connector.config["connector.class"])().task_class()
        task = task_cls()
        assert isinstance(task, SinkTask)
        self.task.version = plugin_version(task)
        context = SinkTaskContext(dict(self.props))
        task.initialize(context)
        key_converter, value_converter = self.converter("key.converter"), self.converter("value.converter")
        transform = transforms.chain(self.connector.config)
        tolerate = self.connector.config.get("errors.tolerance", "none") == "all"
        dlq = DeadLetterQueue.of(self.worker.config, self.connector.config, name, self.task.id) if tolerate else None
        errors = ClientErrors()
        consumer = create_client(Consumer, client_config(
            cfg.bootstrap_servers, cfg.client_props("consumer"), errors=errors,
            defaults={"group.id": f"connect-{name}", "client.id": f"connector-consumer-{name}-{self.task.id}",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"}))
        positions: dict[tuple[str, int], int] = {}  # next offset to commit, of what was put

        def flush_and_commit() -> None:
            if not positions:
                return
            started = time.perf_counter()
            task.flush(dict(positions))
            try:
                consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in positions.items()],
                                asynchronous=False)
            except KafkaException:
                self.metrics.committed(started, False)
                raise
            self.metrics.committed(started, True)
            positions.clear()

        def on_assign(_c: Any, partitions: list[TopicPartition]) -> None:
            context.assignment |= {(tp.topic, tp.partition) for tp in partitions}
            self.metrics.partitions = len(context.assignment)
            task.open([(tp.topic, tp.partition) for tp in partitions])

        def on_revoke(_c: Any, partitions: list[TopicPartition]) -> None:
            flush_and_commit()
            gone = [(tp.topic, tp.partition) for tp in partitions]
            task.close(gone)
            context.assignment -= set(gone)
            self.metrics.partitions = len(context.assignment)

        task.start(dict(self.props))
        topics = self.connector.config.get("topics", "")
        regex = self.connector.config.get("topics.regex", "")
        subscription = [t.strip() for t in topics.split(",") if t.strip()] if topics else [f"^{regex}"]
        consumer.subscribe(subscription, on_assign=on_assign, on_revoke=on_revoke)
        self.task.state = PAUSED if self.paused.is_set() else RUNNING  # started paused: stays so
        self.worker.metrics.startup("task", True)
        log.info("%s Sink task finished initialization and start", self.label())
        next_flush = time.monotonic() + cfg.ms("offset.flush.interval.ms")
        try:
            while not self.stopping.is_set():
                self.metrics.tick(not self.paused.is_set())
                if self.paused.is_set():
                    self.stopping.wait(0.1)
                    continue
                batch: list[SinkRecord] = []
                messages = consumer.consume(500, 0.5)
                if messages:
                    self.metrics.read(len(messages))
                for msg in messages:
                    error = msg.error()
                    if error is not None:
                        # a topic not created yet: Kafka's sink task waits for it too
                        if error.code() in (KafkaError._PARTITION_EOF, KafkaError.UNKNOWN_TOPIC_OR_PART):
                            continue
                        raise KafkaException(error)
                    topic, partition, offset = str(msg.topic()), int(msg.partition() or 0), int(msg.offset() or 0)
                    positions[(topic, partition)] = offset + 1
                    self.worker.active_topics.record(name, topic, self.task.id)
                    try:
                        key_schema, key = key_converter.to_connect(topic, msg.key())
                        value_schema, value = value_converter.to_connect(topic, msg.value())
                        ts_type, ts = msg.timestamp()
                        headers: list[tuple[str, Schema | None, Any]] = [
                            (str(h[0]), None, h[1]) for h in (msg.headers() or [])]
                        record = transform(SinkRecord(topic, partition, key_schema, key, value_schema, value,
                                                      ts if ts_type else None, headers, kafka_offset=offset,
                                                      timestamp_type="LogAppendTime" if ts_type == 2 else "CreateTime"))
                    except Exception as exc:
                        if not tolerate:
                            raise
                        self._tolerated(exc, f"{topic}-{partition}@{offset}")
                        if dlq is not None:
                            dlq.send(msg, exc, self.connector.config["connector.class"])
                        continue
                    if record is not None:
                        assert isinstance(record, SinkRecord)
                        batch.append(record)
                if batch:
                    task.put(batch)
                    self.metrics.sent(len(batch))
                if time.monotonic() >= next_flush or context.commit_requested:
                    context.commit_requested = False
                    if dlq is not None:
                        dlq.flush()
                    flush_and_commit()
                    next_flush = time.monotonic() + cfg.ms("offset.flush.interval.ms")
            flush_and_commit()
        finally:
            task.stop()
            consumer.close()
            if dlq is not None:
                dlq.flush()


class DeadLetterQueue:
    """A sink connector's dead letter queue (`errors.deadletterqueue.topic.name`): the original bytes of a record
    that failed conversion or transformation, with Kafka's `__connect.errors.*` context headers when
    `errors.deadletterqueue.context.headers.enable`."""

    def __init__(self, producer: Producer, topic: str, headers: bool, connector: str, task: int) -> None:
        self.producer, self.topic, self.headers = producer, topic, headers
        self.connector, self.task = connector, task

    @classmethod
    def of(cls, worker: WorkerConfig, config: Mapping[str, str], connector: str, task: int) -> DeadLetterQueue | None:
        topic = config.get("errors.deadletterqueue.topic.name", "").strip()
        if not topic:
            return None
        producer = create_client(Producer, client_config(worker.bootstrap_servers, worker.client_props("producer"),
                                                         errors=ClientErrors(), defaults={"acks": "all"}))
        return cls(producer, topic, config.get("errors.deadletterqueue.context.headers.enable", "false") == "true",
                   connector, task)

    def send(self, msg: Any, exc: Exception, connector_class: str) -> None:
        headers = list(msg.headers() or [])
        if self.headers:
            context = {
                "__connect.errors.topic": msg.topic(), "__connect.errors.partition": str(msg.partition()),
                "__connect.errors.offset": str(msg.offset()), "__connect.errors.connector.name": self.connector,
                "__connect.errors.task.id": str(self.task), "__connect.errors.stage": "VALUE_CONVERTER",
                "__connect.errors.class.name": connector_class,
                "__connect.errors.exception.class.name": type(exc).__name__,
                "__connect.errors.exception.message": str(exc),
                "__connect.errors.exception.stacktrace": _trace(exc)}
            headers += [(k, v.encode()) for k, v in context.items()]
        self.producer.produce(self.topic, key=msg.key(), value=msg.value(), headers=headers)
        self.producer.poll(0)

    def flush(self) -> None:
        self.producer.flush(30)


class Worker:
    """Connectors and their tasks on this worker (standalone: all of them)."""

    def __init__(self, config: WorkerConfig, plugins: Plugins, offsets: OffsetStore, worker_id: str) -> None:
        self.config = config
        # KIP-618: source tasks write in transactions (distributed workers only, as in Kafka)
        self.exactly_once = config.distributed and config.props.get("exactly.once.source.support") == "enabled"
        self.plugins = plugins
        self.offsets = offsets
        self.worker_id = worker_id
        self.connectors: dict[str, ConnectorState] = {}
        self._lock = threading.RLock()
        self.active_topics: TopicTracker = ActiveTopics(config.get("topic.tracking.enable", "true") == "true")
        self.metrics = WorkerMetrics(self)

    # ---- configuration ----------------------------------------------------------------------------------

    def converter(self, connector_config: Mapping[str, str], which: str) -> Converter:
        """The connector's `which` converter ("key.converter", "value.converter"), or the worker's."""
        source = connector_config if connector_config.get(which) else self.config.props
        name = source[which]
        converter = self.plugins.converter(name)
        settings = {k[len(which) + 1:]: v for k, v in source.items() if k.startswith(which + ".")}
        converter.configure(settings, which == "key.converter")
        return converter

    def validate(self, config: Mapping[str, str]) -> tuple[str, list[Any]]:
        """(the connector's full class name, a ConfigValue per key of the common and the connector's keys)."""
        if not config.get("connector.class"):
            raise ConfigException("Connector config contains no connector type")  # Kafka 4.4's (no values)
        try:
            cls = self.plugins.connector_class(config["connector.class"])
        except PluginNotFound as exc:
            raise ConfigException(str(exc)) from None
        values = COMMON_CONFIG.validate(config)
        if issubclass(cls, SinkConnector):
            has_topics, has_regex = bool(config.get("topics", "").strip()), bool(config.get("topics.regex", "").strip())
            if has_topics == has_regex:
                values.append(_error_value("topics", config.get("topics"),
                                           "Must configure one of topics or topics.regex"))
        connector = cls()
        values += connector.validate(config)
        if self.config.distributed and isinstance(connector, SourceConnector):
            values += exactly_once.validate(config, connector, self.exactly_once)
        try:
            transforms.chain(config)
        except ConfigException as exc:
            values.append(_error_value("transforms", config.get("transforms"), str(exc)))
        return self.plugins.connector_name(config["connector.class"]), values

    def check(self, name: str, config: Mapping[str, str]) -> None:
        _full, values = self.validate({**config, "name": name})
        errors = [e for v in values for e in v.errors]
        if errors:
            raise ConfigException(f"Connector configuration is invalid and contains the following {len(errors)} "
                                  f"error(s):\n" + "\n".join(errors) +
                                  "\nYou can also find the above list of errors at the endpoint "
                                  "`/connector-plugins/{connectorType}/config/validate`")

    # ---- lifecycle --------------------------------------------------------------------------------------

    def put_connector(self, name: str, config: dict[str, str], initial_state: str = RUNNING) -> tuple[bool, ConnectorState]:
        """Create or reconfigure `name` with `config`: (created, its state)."""
        config = {**config, "name": name}
        self.check(name, config)
        with self._lock:
            existing = self.connectors.get(name)
            if existing is not None:
                self.stop_connector(existing)
            cls = self.plugins.connector_class(config["connector.class"])
            state = ConnectorState(name, config, "sink" if issubclass(cls, SinkConnector) else "source",
                                   target=existing.target if existing else initial_state)
            self.connectors[name] = state
            self._start_connector(state)
            return existing is None, state

    def _start_connector(self, state: ConnectorState) -> None:
        note_version(self.plugins, state)
        if state.target == STOPPED:
            state.state, state.tasks = STOPPED, []
            return
        self.metrics.startup("connector", None)
        try:
            connector = self.plugins.connector_class(state.config["connector.class"])()
            connector.initialize(ConnectorContext(lambda: self._reconfigure(state.name),
                                                  lambda exc: self._fail(state, exc)))
            connector.start(dict(state.config))
            state.connector = connector
            max_tasks = int(state.config.get("tasks.max", "1"))
            state.task_configs = connector_task_configs(self.plugins, state, connector.task_configs(max_tasks)[:max_tasks])
            state.state, state.trace = (PAUSED if state.target == PAUSED else RUNNING), None
            log.info("[Worker clientId=connect-%s] Finished creating connector %s", self.worker_id, state.name)
        except Exception as exc:
            self.metrics.startup("connector", False)
            self._fail(state, exc)
            return
        self.metrics.startup("connector", True)
        state.tasks = [TaskState(i) for i in range(len(state.task_configs))]
        for task in state.tasks:
            self.start_task(state, task)

    def start_task(self, state: ConnectorState, task: TaskState) -> None:
        props = {**state.task_configs[task.id], "name": state.name}
        runner_cls: type[TaskRunner] = SinkTaskRunner if state.kind == "sink" else SourceTaskRunner
        runner = runner_cls(self, state, task, props)
        self.metrics.startup("task", None)
        task.runner, task.trace = runner, None
        task.state = UNASSIGNED
        if state.target == PAUSED:
            runner.paused.set()
        runner.start()
        if state.target == PAUSED:
            task.state = PAUSED

    def _fail(self, state: ConnectorState, exc: BaseException) -> None:
        log.error("[Worker clientId=connect-%s] Failed to start connector %s", self.worker_id, state.name, exc_info=exc)
        state.state, state.trace = FAILED, _trace(exc)

    def _reconfigure(self, name: str) -> None:
        """A connector asked for its tasks to be configured again: restart it with them."""
        threading.Thread(target=self.restart, args=(name, True, False), daemon=True).start()

    def stop_connector(self, state: ConnectorState) -> None:
        timeout = self.config.ms("task.shutdown.graceful.timeout.ms")
        for task in state.tasks:
            if task.runner is not None:
                task.runner.stop(timeout)
        if state.connector is not None:
            try:
                state.connector.stop()
            except Exception as exc:  # a connector that fails to stop is logged, not fatal
                log.error("Error while stopping connector %s", state.name, exc_info=exc)
            state.connector = None

    def delete(self, name: str) -> ConnectorState:
        with self._lock:
            state = self.connectors.pop(name)
            self.stop_connector(state)
            self.active_topics.reset(name)
            return state

    def set_target(self, name: str, target: str) -> None:
        """PAUSED, RUNNING or STOPPED (KIP-875): tasks pause in place; STOPPED shuts the connector and tasks."""
        with self._lock:
            state = self.connectors[name]
            previous, state.target = state.target, target
            if target == STOPPED:
                self.stop_connector(state)
                state.state, state.tasks = STOPPED, []
            elif previous == STOPPED:
                self._start_connector(state)
            else:
                state.state = PAUSED if target == PAUSED and state.state != FAILED else (
                    RUNNING if state.state != FAILED else FAILED)
                for task in state.tasks:
                    if task.runner is None or task.state == FAILED:
                        continue
                    if target == PAUSED:
                        task.runner.paused.set()
                        task.state = PAUSED
                    else:
                        task.runner.paused.clear()
                        task.state = RUNNING

    def restart(self, name: str, include_tasks: bool, only_failed: bool) -> ConnectorState:
        with self._lock:
            state = self.connectors[name]
            restart_connector = not only_failed or state.state == FAILED
            tasks = [t for t in state.tasks if include_tasks and (not only_failed or t.state == FAILED)]
            if restart_connector:
                self.stop_connector(state)
                state.state = RESTARTING
                self._start_connector(state)
                return state
            for task in tasks:
                self.restart_task(name, task.id)
            return state

    def restart_task(self, name: str, task_id: int) -> None:
        with self._lock:
            state = self.connectors[name]
            task = state.tasks[task_id]
            if task.runner is not None:
                task.runner.stop(self.config.ms("task.shutdown.graceful.timeout.ms"))
            self.start_task(state, task)

    def stop(self) -> None:
        with self._lock:
            for state in list(self.connectors.values()):
                self.stop_connector(state)

    def sink_offsets(self, name: str) -> dict[tuple[str, int], int]:
        """The committed offsets of a sink connector's consumer group (`connect-<name>`)."""
        from confluent_kafka import ConsumerGroupTopicPartitions
        from confluent_kafka.admin import AdminClient

        admin = create_client(AdminClient, client_config(self.config.bootstrap_servers, self.config.client_props("admin"),
                                                         errors=ClientErrors()))
        group = f"connect-{name}"
        result = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(timeout=30)
        return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions if tp.offset >= 0}


def _header_bytes(value: Any) -> bytes | None:
    """A header value as Kafka's SimpleHeaderConverter writes strings and bytes (others as their JSON text)."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return json.dumps(value, separators=(",", ":")).encode()


def note_version(plugins: Plugins, state: ConnectorState) -> None:
    """The connector class's version() into its state (Kafka's statuses carry it, a stopped connector's too)."""
    if state.version is None:
        try:
            state.version = plugin_version(plugins.connector_class(state.config["connector.class"])())
        except Exception:  # an unknown class fails the start, with its own message
            pass


def plugin_version(plugin: Any) -> str | None:
    """A connector's or task's version(), None if it has none or fails to say."""
    try:
        version = plugin.version()
    except Exception:
        return None
    return version if isinstance(version, str) and version else None


def _error_value(name: str, value: Any, error: str) -> Any:
    from odradek.connect.api import ConfigValue

    return ConfigValue(name, value, errors=[error])

