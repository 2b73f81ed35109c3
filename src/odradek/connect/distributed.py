"""The distributed herder: workers sharing a `group.id` divide the connectors and tasks of the config topic
among themselves through the Connect group. The leader reads the config topic to its end and assigns: with the
eager `default` protocol it deals connectors, then tasks, round robin over the members sorted by id (each member
having stopped everything before joining); with `compatible` it assigns incrementally (`cooperative`). Every
worker then reads the config topic up to the assignment's offset and starts what it gained. A connector's owner
computes its task configs and has the leader write them when they changed. Any change of the config topic makes
the worker rejoin, so the cluster converges on it; under `compatible` a worker also restarts what it runs of a
connector whose config, task configs or target state changed (eager rebalancing restarts everything anyway).
Local connector and task states are written to the status topic with the group generation."""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from odradek.connect import exactly_once
from odradek.connect.api import Connector, ConnectorContext, SinkConnector
from odradek.connect.connect_protocol import (
    EAGER,
    NO_ERROR,
    PROTOCOL_VERSION,
    SESSIONED,
    Assignment,
    WorkerState,
)
from odradek.connect.cooperative import LeaderMemory, cooperative_assign
from odradek.connect.group_member import Member, WorkerMember
from odradek.connect.kafka_log import ensure_topic
from odradek.connect.kafka_stores import (
    STATUS_CONNECTOR_PREFIX,
    STATUS_TASK_PREFIX,
    ConfigStore,
    KafkaOffsetStore,
    StatusStore,
    StatusTopicActiveTopics,
)
from odradek.connect.plugins import Plugins
from odradek.connect.request_signing import needs_rotation, new_session_key, signature_headers
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
    connector_task_configs,
    note_version,
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
        self.held_connectors: list[str] = []  # what this worker was assigned, all in all
        self.held_tasks: list[tuple[str, int]] = []
        self.memory = LeaderMemory()
        self.local: dict[str, ConnectorState] = {}  # the connectors this worker runs or runs tasks of
        self._lock = threading.RLock()
        self._written: dict[str, tuple[str, str | None, str | None]] = {}
        self._stop = threading.Event()
        self._apply_thread: threading.Thread | None = None
        self._changes: queue.SimpleQueue[tuple[Callable[..., None], tuple[Any, ...]]] = queue.SimpleQueue()
        threading.Thread(target=self._change_loop, name="herder-changes", daemon=True).start()
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
        self.worker = Worker(cfg, self.plugins, self.offsets, self.worker_id)
        # the group's active topics are the status topic's, as every worker reads them (KIP-558)
        self.worker.active_topics = StatusTopicActiveTopics(self.statuses, self.worker.active_topics.enabled)
        self.member = WorkerMember(cfg, self._metadata, self._revoke, self._assign, self._assigned)
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

    def _metadata(self, version: int) -> WorkerState:
        previous = None
        if version >= 1:
            previous = Assignment(NO_ERROR, self.assignment.leader, self.assignment.leader_url,
                                  self.assignment.config_offset, list(self.held_connectors), list(self.held_tasks),
                                  version=version)
        return WorkerState(self.url, self.configs.offset, version, previous)

    def _config_changed(self, kind: str, name: str) -> None:
        member = getattr(self, "member", None)
        if member is None:
            return
        # applied one at a time, in the config topic's order, by one thread (Kafka's herder applies them in its
        # tick): restarts run in parallel would start a task twice, or undo a pause with an older view
        if kind == "restart":
            if name in self.local:
                self._changes.put((self._restart_requested, (name,)))
            return
        # what this worker holds of the connector, running or not (a STOPPED connector has no local state)
        held = name in self.local or name in self.held_connectors or any(t[0] == name for t in self.held_tasks)
        if member.protocol != EAGER and held:
            self._changes.put((self._restart_local, (name, kind != "tasks")))
        member.request_rejoin()

    def _change_loop(self) -> None:
        while True:
            action, args = self._changes.get()
            try:
                action(*args)
            except Exception:  # logged; the next change or rebalance tries again
                log.exception("Applying a config change failed")

    def _assign(self, members: list[Member], leader_id: str, protocol: str) -> dict[str, Assignment]:
        self.configs.log.read_to_end()
        offset, connectors, task_configs, _targets = self.configs.snapshot()
        leader_url = next((m.state.url for m in members if m.member_id == leader_id), self.url)
        counts = {n: len(t) for n, t in task_configs.items()}
        if protocol == EAGER:
            return eager_assign(members, list(connectors), counts, leader_id, leader_url, offset)
        return cooperative_assign(members, list(connectors), counts, leader_id, leader_url, offset, self.memory,
                                  int(self.config.props["scheduled.rebalance.max.delay.ms"]), time.monotonic(),
                                  version=PROTOCOL_VERSION[protocol])

    def _revoke(self) -> None:
        """Eager rebalancing: everything this worker runs stops before it joins again."""
        if self._apply_thread is not None:
            self._apply_thread.join()
        with self._lock:
            self.leader_url = None
            for state in self.local.values():
                self.worker.stop_connector(state)
                for task in state.tasks:
                    task.state, task.runner = UNASSIGNED, None
                state.state = UNASSIGNED
            self._write_statuses()
            self.local.clear()
            self.held_connectors, self.held_tasks = [], []

    def _stop_items(self, connectors: list[str], tasks: list[tuple[str, int]]) -> None:
        """Stop these connectors and tasks (revoked, or to restart), writing UNASSIGNED for them."""
        timeout = self.config.ms("task.shutdown.graceful.timeout.ms")
        with self._lock:
            for name, task_id in tasks:
                state = self.local.get(name)
                if state is None or task_id >= len(state.tasks):
                    continue
                task = state.tasks[task_id]
                if task.runner is not None:
                    task.runner.stop(timeout)
                task.state, task.runner = UNASSIGNED, None
                self._put_status(f"{STATUS_TASK_PREFIX}{name}-{task_id}", UNASSIGNED, None)
            for name in connectors:
                state = self.local.get(name)
                if state is None:
                    continue
                if state.connector is not None:
                    try:
                        state.connector.stop()
                    except Exception as exc:  # logged, not fatal
                        log.error("Error while stopping connector %s", name, exc_info=exc)
                    state.connector = None
                state.state = UNASSIGNED
                self._put_status(f"{STATUS_CONNECTOR_PREFIX}{name}", UNASSIGNED, None)
            for name in {n for n in connectors} | {n for n, _ in tasks}:
                state = self.local.get(name)
                if state is not None and state.connector is None and all(t.runner is None for t in state.tasks):
                    del self.local[name]

    def _restart_local(self, name: str, with_connector: bool) -> None:
        """Under `compatible`: restart what this worker runs of `name` with its new config."""
        with self._lock:
            connectors = [name] if with_connector and name in self.held_connectors else []
            tasks = [t for t in self.held_tasks if t[0] == name]
            self._stop_items(connectors, tasks)
            state = self.local.get(name)
            if state is not None and (with_connector or state.connector is None):
                del self.local[name]
            elif state is not None:  # the connector runs on: only its tasks take the new configs
                state.task_configs = list(self.configs.snapshot()[2].get(name, []))
                state.tasks = [TaskState(i) for i in range(len(state.task_configs))]
        self._start_items(connectors, tasks)

    def _restart_requested(self, name: str) -> None:
        """A restart request of the config topic: restart what this worker holds of it that the request names."""
        include_tasks, only_failed = self.configs.restarts.get(name, (False, False))
        with self._lock:
            state = self.local.get(name)
            if state is None:
                return
            connectors = [name] if name in self.held_connectors and (
                not only_failed or state.state == FAILED) else []
            tasks = [(n, i) for n, i in self.held_tasks if n == name and include_tasks and i < len(state.tasks)
                     and (not only_failed or state.tasks[i].state == FAILED)]
            if not connectors and not tasks:
                return
            self._stop_items(connectors, tasks)
            if connectors and name in self.local and self.local[name].connector is None and \
                    all(t.runner is None for t in self.local[name].tasks):
                del self.local[name]
        self._start_items(connectors, tasks)

    def restart_task(self, name: str, task_id: int) -> bool:
        """Restart a task this worker runs (False when it does not run it)."""
        with self._lock:
            if (name, task_id) not in self.held_tasks or name not in self.local:
                return False
            self._stop_items([], [(name, task_id)])
        self._start_items([], [(name, task_id)])
        return True

    def _assigned(self, assignment: Assignment, generation: int, protocol: str) -> None:
        if self._apply_thread is not None:
            self._apply_thread.join()
        self.generation = generation
        self.leader_url = assignment.leader_url
        self.is_leader = assignment.leader == self.member.member_id
        if protocol == EAGER:
            self.assignment = assignment
            self.held_connectors, self.held_tasks = list(assignment.connectors), list(assignment.tasks)
        else:
            revoked_c, revoked_t = set(assignment.revoked_connectors), set(assignment.revoked_tasks)
            if revoked_c or revoked_t:
                self._stop_items(sorted(revoked_c), sorted(revoked_t))
            with self._lock:
                self.held_connectors = [c for c in self.held_connectors if c not in revoked_c]
                self.held_connectors += [c for c in assignment.connectors if c not in self.held_connectors]
                self.held_tasks = [t for t in self.held_tasks if t not in revoked_t]
                self.held_tasks += [t for t in assignment.tasks if t not in self.held_tasks]
                self.assignment = assignment
            if revoked_c or revoked_t:
                self.member.request_rejoin()  # the revoked work is dealt out in the next round
            if assignment.delay_ms > 0:
                timer = threading.Timer(assignment.delay_ms / 1000, self.member.request_rejoin)
                timer.daemon = True
                timer.start()
        self._apply_thread = threading.Thread(target=self._start_items, name="herder-apply", daemon=True,
                                              args=(list(assignment.connectors), list(assignment.tasks)))
        self._apply_thread.start()

    def _start_items(self, assigned_connectors: list[str], assigned_tasks: list[tuple[str, int]]) -> None:
        try:
            self.configs.log.read_to_end()
        except TimeoutError:
            log.error("Could not read the config topic to offset %d", self.assignment.config_offset)
            self.member.request_rejoin()
            return
        with self._lock:  # the snapshot too: a config change applied meanwhile is not undone by an older view
            _offset, connectors, task_configs, targets = self.configs.snapshot()
            for name in assigned_connectors:
                if name in connectors:
                    state = self._state(name, connectors[name], task_configs, targets)
                    if state.connector is None:  # not started already (by a config change's restart)
                        self._start_connector(state)
            for name, task_id in assigned_tasks:
                configs = task_configs.get(name, [])
                if name in connectors and task_id < len(configs):
                    state = self._state(name, connectors[name], task_configs, targets)
                    if task_id >= len(state.tasks):  # more tasks than when this worker took the connector
                        state.task_configs = list(configs)
                        state.tasks += [TaskState(i) for i in range(len(state.tasks), len(configs))]
                    if state.target != STOPPED and state.tasks[task_id].runner is None:
                        self.worker.start_task(state, state.tasks[task_id])
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
        note_version(self.plugins, state)
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
        configs = connector_task_configs(self.plugins, state, configs)
        if configs != state.task_configs:
            self._write_task_configs(state.name, configs)

    def _fail(self, state: ConnectorState, exc: BaseException) -> None:
        log.error("Failed to start connector %s", state.name, exc_info=exc)
        state.state, state.trace = FAILED, _trace(exc)

    def _write_task_configs(self, name: str, configs: list[dict[str, str]], attempt: int = 0) -> None:
        """Have `configs` written as `name`'s task configs: by this worker if it leads, else by the leader (a
        signed request under `sessioned`), retried with backoff while this worker still owns the connector
        and they are not written (Kafka's reconfigureConnectorTasksWithRetry)."""
        if self.is_leader:
            self.store_task_configs(name, configs)
            return
        body = json.dumps(configs).encode()
        key = self.configs.session_key
        headers = (signature_headers(key, self.config.props["inter.worker.signature.algorithm"], body)
                   if self.signs_requests and key is not None else {})
        try:
            status, answer = forward(str(self.leader_url), "POST", f"/connectors/{name}/tasks", configs, body=body,
                                     headers=headers)
            if status < 300:
                return
            why = f"{status}: {answer.get('message') if isinstance(answer, dict) else answer}"
        except Exception as exc:
            why = str(exc)
        delay = min(0.25 * 2 ** attempt, 10.0)
        log.warning("The task configs of %s were not written by the leader (%s); retrying in %.2f s", name, why,
                    delay)

        def retry() -> None:
            with self._lock:
                if self._stop.is_set() or name not in self.held_connectors:
                    return
                if self.configs.snapshot()[2].get(name) == configs:
                    return  # written meanwhile
                self._write_task_configs(name, configs, attempt + 1)

        timer = threading.Timer(delay, retry)
        timer.daemon = True
        timer.start()

    def store_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        """The leader's write of a connector's task configs; for an exactly-once source connector the tasks the
        new generation drops are fenced first and the task count record follows (KIP-618)."""
        _offset, connectors, previous, _targets = self.configs.snapshot()
        config = connectors.get(name, {})
        source = bool(config) and not issubclass(self.plugins.connector_class(config["connector.class"]),
                                                 SinkConnector)
        eos = self.worker.exactly_once and source
        if eos:
            dropped = range(len(configs), len(previous.get(name, [])))
            exactly_once.fence(self.config, [exactly_once.transactional_id(str(self.config.get("group.id")), name, i)
                                             for i in dropped])
        self.configs.put_task_configs(name, configs)
        if eos:
            self.configs.put_task_count(name, len(configs))

    # ---- statuses ---------------------------------------------------------------------------------------

    def _status_loop(self) -> None:
        while not self._stop.wait(0.5):
            with self._lock:
                self._write_statuses()
            self._rotate_session_key()

    @property
    def signs_requests(self) -> bool:
        """Whether the group's protocol is `sessioned`: internal requests are signed and checked."""
        return self.member.protocol == SESSIONED

    def _rotate_session_key(self) -> None:
        """The leader writes a new session key when there is none, or it expired or no longer fits the
        configured algorithm and size (Kafka's checkForKeyRotation)."""
        if not (self.is_leader and self.signs_requests):
            return
        props = self.config.props
        algorithm, size = props["inter.worker.key.generation.algorithm"], props.get("inter.worker.key.size")
        now = int(time.time() * 1000)
        if not needs_rotation(self.configs.session_key, algorithm, int(size) if size else None,
                              int(props["inter.worker.key.ttl.ms"]), now):
            return
        try:
            key = new_session_key(algorithm, int(size) if size else None, now)
            self.configs.put_session_key(key)
            self.configs.session_key = key
            log.info("Distributed a new session key (%s)", algorithm)
        except Exception as exc:  # tried again in half a second
            log.warning("Could not write a new session key: %s", exc)

    def _write_statuses(self) -> None:
        for state in self.local.values():
            if state.name in self.held_connectors:
                self._put_status(f"{STATUS_CONNECTOR_PREFIX}{state.name}", state.state, state.trace, state.version)
            for task in state.tasks:
                if (state.name, task.id) in self.held_tasks:
                    self._put_status(f"{STATUS_TASK_PREFIX}{state.name}-{task.id}", task.state, task.trace,
                                     task.version)

    def _put_status(self, key: str, state: str, trace: str | None, version: str | None = None) -> None:
        if self._written.get(key) == (state, trace, version):
            return
        self._written[key] = (state, trace, version)
        try:
            self.statuses.put(key, state, trace, self.worker_id, self.generation, version)
        except Exception as exc:  # retried at the next change
            log.warning("Could not write status %s: %s", key, exc)
            self._written.pop(key, None)


def forward(leader_url: str, method: str, path: str, doc: Any, body: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """Send a REST request on to the leader: `doc` as JSON (or `body`, its bytes as signed) with `headers`;
    (status, decoded answer)."""
    data = body if body is not None else None if doc is None else json.dumps(doc).encode()
    request = urllib.request.Request(leader_url.rstrip("/") + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        return exc.code, json.loads(raw) if raw else None
