"""The distributed herder: workers sharing a `group.id` divide the connectors and tasks of the config topic
among themselves through the Connect group (eager `default` protocol). The leader reads the config topic to its
end and deals connectors, then tasks, round robin over the members sorted by id; every worker then reads the
config topic up to the assignment's offset and starts what it was given. A connector's owner computes its task
configs and has the leader write them when they changed. Any change of the config topic (a connector added,
changed or deleted, new task configs, a target state) makes the worker rejoin, so the cluster converges on it.
Local connector and task states are written to the status topic with the group generation."""

from __future__ import annotations

import json
import logging
import threading
import urllib.request
from typing import Any

from odradek.connect.api import Connector, ConnectorContext, SinkConnector
from odradek.connect.connect_protocol import NO_ERROR, Assignment, WorkerState
from odradek.connect.group_member import GroupMember, Member
from odradek.connect.kafka_log import ensure_topic
from odradek.connect.kafka_stores import (
    STATUS_CONNECTOR_PREFIX,
    STATUS_TASK_PREFIX,
    ConfigStore,
    KafkaOffsetStore,
    StatusStore,
)
from odradek.connect.plugins import Plugins
from odradek.connect.worker import (
    FAILED,
    PAUSED,
    RUNNING,
    STOPPED,
    UNASSIGNED,
    ConnectorState,
    TaskState,
    Worker,
    _trace,
)
from odradek.connect.worker_config import WorkerConfig

log = logging.getLogger("odradek.connect.distributed")

TARGETS = {"STARTED": RUNNING, "PAUSED": PAUSED, "STOPPED": STOPPED}


def eager_assign(members: list[Member], connectors: list[str], task_counts: dict[str, int], leader: str,
                 leader_url: str, offset: int) -> dict[str, Assignment]:
    """Kafka's eager assignment: connectors then tasks dealt round robin over the members sorted by id."""
    ids = sorted(m.member_id for m in members)
    plan = {mid: Assignment(NO_ERROR, leader, leader_url, offset) for mid in ids}
    turn = 0
    for name in sorted(connectors):
        plan[ids[turn % len(ids)]].connectors.append(name)
        turn += 1
    for name in sorted(connectors):
        for task in range(task_counts.get(name, 0)):
            plan[ids[turn % len(ids)]].tasks.append((name, task))
            turn += 1
    return plan


class DistributedHerder:
    def __init__(self, config: WorkerConfig, plugins: Plugins, worker_id: str, url: str) -> None:
        self.config = config
        self.plugins = plugins
        self.worker_id = worker_id
        self.url = url
        self.leader_url: str | None = None
        self.is_leader = False
        self.generation = -1
        self.assignment = Assignment()
        self.local: dict[str, ConnectorState] = {}  # the connectors this worker runs or runs tasks of
        self._lock = threading.RLock()
        self._written: dict[str, tuple[str, str | None]] = {}
        self._stop = threading.Event()
        self._apply_thread: threading.Thread | None = None
        self.ready = threading.Event()

    # ---- lifecycle --------------------------------------------------------------------------------------

    def start(self) -> None:
        cfg = self.config
        client_id = f"connect-{self.worker_id}"
        ensure_topic(cfg, str(cfg.get("config.storage.topic")), 1, int(cfg.props["config.storage.replication.factor"]))
        ensure_topic(cfg, str(cfg.get("offset.storage.topic")), int(cfg.props["offset.storage.partitions"]),
                     int(cfg.props["offset.storage.replication.factor"]))
        ensure_topic(cfg, str(cfg.get("status.storage.topic")), int(cfg.props["status.storage.partitions"]),
                     int(cfg.props["status.storage.replication.factor"]))
        self.offsets = KafkaOffsetStore(cfg, client_id)
        self.statuses = StatusStore(cfg, client_id)
        self.configs = ConfigStore(cfg, client_id, self._config_changed)
        self.offsets.log.start()
        self.statuses.log.start()
        self.configs.log.start()
        self.worker = Worker(cfg, self.plugins, self.offsets, self.worker_id)  # type: ignore[arg-type]
        self.member = GroupMember(cfg, self._metadata, self._revoke, self._assign, self._assigned)
        self.member.start()
        threading.Thread(target=self._status_loop, name="status-writer", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        self._revoke()
        self.member.stop()
        self._write_statuses()
        for store in (self.configs, self.offsets, self.statuses):
            store.log.stop()

    # ---- group callbacks --------------------------------------------------------------------------------

    def _metadata(self) -> WorkerState:
        return WorkerState(self.url, self.configs.offset)

    def _config_changed(self, _kind: str, _name: str) -> None:
        member = getattr(self, "member", None)
        if member is not None:
            member.request_rejoin()

    def _assign(self, members: list[Member], leader_id: str) -> dict[str, Assignment]:
        self.configs.log.read_to_end()
        offset, connectors, task_configs, _targets = self.configs.snapshot()
        leader_url = next((m.state.url for m in members if m.member_id == leader_id), self.url)
        return eager_assign(members, list(connectors), {n: len(t) for n, t in task_configs.items()},
                            leader_id, leader_url, offset)

    def _revoke(self) -> None:
        """Eager rebalancing: everything this worker runs stops before it joins again."""
        if self._apply_thread is not None:
            self._apply_thread.join()
        with self._lock:
            self.leader_url = None
            for state in self.local.values():
                self.worker._stop_connector(state)
                for task in state.tasks:
                    task.state, task.runner = UNASSIGNED, None
                state.state = UNASSIGNED
            self._write_statuses()
            self.local.clear()

    def _assigned(self, assignment: Assignment, generation: int) -> None:
        self.assignment, self.generation = assignment, generation
        self.leader_url = assignment.leader_url
        self.is_leader = assignment.leader == self.member.member_id
        self._apply_thread = threading.Thread(target=self._apply, args=(assignment,), name="herder-apply",
                                              daemon=True)
        self._apply_thread.start()

    def _apply(self, assignment: Assignment) -> None:
        try:
            self.configs.log.read_to_end()
        except TimeoutError:
            log.error("Could not read the config topic to offset %d", assignment.config_offset)
            self.member.request_rejoin()
            return
        _offset, connectors, task_configs, targets = self.configs.snapshot()
        with self._lock:
            for name in assignment.connectors:
                if name in connectors:
                    self._start_connector(self._state(name, connectors[name], task_configs, targets))
            for name, task_id in assignment.tasks:
                configs = task_configs.get(name, [])
                if name in connectors and task_id < len(configs):
                    state = self._state(name, connectors[name], task_configs, targets)
                    if state.target != STOPPED:
                        self.worker._start_task(state, state.tasks[task_id])
            self._write_statuses()
        self.ready.set()

    def _state(self, name: str, config: dict[str, str], task_configs: dict[str, list[dict[str, str]]],
               targets: dict[str, str]) -> ConnectorState:
        state = self.local.get(name)
        if state is None:
            try:
                sink = issubclass(self.plugins.connector_class(config.get("connector.class", "")), SinkConnector)
            except Exception:
                sink = False
            state = ConnectorState(name, config, "sink" if sink else "source",
                                   target=TARGETS.get(targets.get(name, "STARTED"), RUNNING))
            state.task_configs = list(task_configs.get(name, []))
            state.tasks = [TaskState(i) for i in range(len(state.task_configs))]
            self.local[name] = state
        return state

    def _start_connector(self, state: ConnectorState) -> None:
        """Start the connector (not its tasks) and have its task configs written if they changed."""
        if state.target == STOPPED:
            state.state = STOPPED
            if state.task_configs:
                self._write_task_configs(state.name, [])
            return
        try:
            connector: Connector = self.plugins.connector_class(state.config["connector.class"])()
            connector.initialize(ConnectorContext(lambda: self.member.request_rejoin(),
                                                  lambda exc: self._fail(state, exc)))
            connector.start(dict(state.config))
            state.connector = connector
            max_tasks = int(state.config.get("tasks.max", "1"))
            configs = connector.task_configs(max_tasks)[:max_tasks]
            state.state, state.trace = (PAUSED if state.target == PAUSED else RUNNING), None
        except Exception as exc:
            self._fail(state, exc)
            return
        task_class = _task_class_name(self.plugins.connector_name(state.config["connector.class"]))
        configs = [{**{str(k): str(v) for k, v in c.items()}, "task.class": task_class} for c in configs]
        if configs != state.task_configs:
            self._write_task_configs(state.name, configs)

    def _fail(self, state: ConnectorState, exc: BaseException) -> None:
        log.error("Failed to start connector %s", state.name, exc_info=exc)
        state.state, state.trace = FAILED, _trace(exc)

    def _write_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        if self.is_leader:
            self.configs.put_task_configs(name, configs)
            return
        try:
            forward(str(self.leader_url), "POST", f"/connectors/{name}/tasks", configs)
        except Exception as exc:  # the next rebalance tries again
            log.warning("Could not forward the task configs of %s to the leader: %s", name, exc)
            self.member.request_rejoin()

    # ---- statuses ---------------------------------------------------------------------------------------

    def _status_loop(self) -> None:
        while not self._stop.wait(0.5):
            with self._lock:
                self._write_statuses()

    def _write_statuses(self) -> None:
        for state in self.local.values():
            if state.name in self.assignment.connectors:
                self._put_status(f"{STATUS_CONNECTOR_PREFIX}{state.name}", state.state, state.trace)
            for task in state.tasks:
                if (state.name, task.id) in self.assignment.tasks:
                    self._put_status(f"{STATUS_TASK_PREFIX}{state.name}-{task.id}", task.state, task.trace)

    def _put_status(self, key: str, state: str, trace: str | None) -> None:
        if self._written.get(key) == (state, trace):
            return
        self._written[key] = (state, trace)
        try:
            self.statuses.put(key, state, trace, self.worker_id, self.generation)
        except Exception as exc:  # retried at the next change
            log.warning("Could not write status %s: %s", key, exc)
            self._written.pop(key, None)


def _task_class_name(connector: str) -> str:
    """The `task.class` of a task config, which a Java worker needs to run it: the task class named as Kafka's
    connectors name theirs (org.apache.kafka.connect.file.FileStreamSinkConnector runs FileStreamSinkTask)."""
    return connector[:-len("Connector")] + "Task" if connector.endswith("Connector") else connector + "Task"


def forward(leader_url: str, method: str, path: str, body: Any) -> tuple[int, Any]:
    """Send a REST request on to the leader: (status, decoded body)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(leader_url.rstrip("/") + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        return exc.code, json.loads(raw) if raw else None
