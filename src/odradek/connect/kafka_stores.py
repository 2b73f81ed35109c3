"""The distributed worker's three stores over its internal topics, with Kafka's keys and schemaless JSON values:
the config topic (`connector-NAME` {"properties": {...}}, `task-NAME-N` {"properties": {...}}, `commit-NAME`
{"tasks": N}, `target-state-NAME` {"state": ..., "state.v2": ...}; task configs take effect only with their
commit record, as in Kafka), the offsets topic (`["NAME",{partition}]` -> {offset}) and the status topic
(`status-connector-NAME`, `status-task-NAME-N` -> {"state","trace","worker_id","generation","version"}; KIP-558's active
topics `status-topic-TOPIC:connector-NAME` -> {"topic": {"name","connector","task","discoverTimestamp"}}, a
tombstone when reset). A restart request
is the config topic's `restart-connector-NAME` {"include-tasks": bool, "only-failed": bool}, done by whichever
workers hold what it names."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from odradek.connect.kafka_log import kafka_log
from odradek.connect.offset_store import _compact, offset_key
from odradek.connect.request_signing import SESSION_KEY_KEY, SessionKey
from odradek.connect.worker_config import WorkerConfig

log = logging.getLogger("odradek.connect.distributed")

CONNECTOR_PREFIX, TASK_PREFIX, COMMIT_PREFIX, TARGET_PREFIX = "connector-", "task-", "commit-", "target-state-"
RESTART_PREFIX = "restart-connector-"
STATUS_CONNECTOR_PREFIX, STATUS_TASK_PREFIX = "status-connector-", "status-task-"
STATUS_TOPIC_PREFIX, STATUS_TOPIC_SEPARATOR = "status-topic-", ":connector-"


def _json(raw: bytes | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


class ConfigStore:
    """What the config topic says; `on_change(kind, name)` is told of each applied change."""

    def __init__(self, config: WorkerConfig, client_id: str, on_change: Callable[[str, str], None]) -> None:
        self.lock = threading.RLock()
        self.connectors: dict[str, dict[str, str]] = {}
        self.task_configs: dict[str, list[dict[str, str]]] = {}
        self.targets: dict[str, str] = {}
        self.offset = -1  # the next offset to read (Kafka's config offset: -1 before any record)
        self._pending: dict[str, dict[int, dict[str, str]]] = {}  # task configs awaiting their commit
        self.restarts: dict[str, tuple[bool, bool]] = {}  # the last restart request: (include tasks, only failed)
        self.session_key: SessionKey | None = None  # the leader's last (KIP-507)
        self.on_change = on_change
        self.log = kafka_log(config, str(config.get("config.storage.topic")), self._apply, f"{client_id}-configs")

    def _apply(self, key: bytes | None, value: bytes | None, offset: int) -> None:
        k = (key or b"").decode(errors="replace")
        doc = _json(value)
        change: tuple[str, str] | None = None
        with self.lock:
            self.offset = offset + 1
            if k.startswith(CONNECTOR_PREFIX):
                name = k[len(CONNECTOR_PREFIX):]
                if doc is None:
                    self.connectors.pop(name, None)
                    self.task_configs.pop(name, None)
                    self.targets.pop(name, None)
                else:
                    self.connectors[name] = {str(a): str(b) for a, b in (doc.get("properties") or {}).items()}
                change = ("connector", name)
            elif k.startswith(TASK_PREFIX):
                name, _, task = k[len(TASK_PREFIX):].rpartition("-")
                if doc is not None and task.isdigit():
                    self._pending.setdefault(name, {})[int(task)] = {
                        str(a): str(b) for a, b in (doc.get("properties") or {}).items()}
            elif k.startswith(COMMIT_PREFIX):
                name = k[len(COMMIT_PREFIX):]
                count = int((doc or {}).get("tasks", 0))
                pending = self._pending.pop(name, {})
                old = self.task_configs.get(name, [])
                self.task_configs[name] = [pending.get(i, old[i] if i < len(old) else {}) for i in range(count)]
                change = ("tasks", name)
            elif k.startswith(RESTART_PREFIX):
                name = k[len(RESTART_PREFIX):]
                if isinstance(doc, dict):
                    self.restarts[name] = (bool(doc.get("include-tasks", False)), bool(doc.get("only-failed", False)))
                    change = ("restart", name)
            elif k == SESSION_KEY_KEY:
                session_key = SessionKey.from_record(doc)
                if session_key is None:
                    log.error("Ignoring session key because it is not in the expected format")
                else:
                    self.session_key = session_key
            elif k.startswith(TARGET_PREFIX):
                name = k[len(TARGET_PREFIX):]
                if doc is not None:
                    self.targets[name] = str(doc.get("state.v2") or doc.get("state") or "STARTED")
                    change = ("target", name)
        if change is not None:
            self.on_change(*change)

    def snapshot(self) -> tuple[int, dict[str, dict[str, str]], dict[str, list[dict[str, str]]], dict[str, str]]:
        with self.lock:
            return (self.offset, {k: dict(v) for k, v in self.connectors.items()},
                    {k: list(v) for k, v in self.task_configs.items()}, dict(self.targets))

    # writes (the leader's)
    def put_connector(self, name: str, config: Mapping[str, str], target: str | None) -> None:
        if target is not None:
            self.put_target(name, target)
        self.log.send(f"{CONNECTOR_PREFIX}{name}".encode(), _compact({"properties": dict(config)}))

    def delete_connector(self, name: str) -> None:
        self.log.send(f"{CONNECTOR_PREFIX}{name}".encode(), None)
        self.log.send(f"{TARGET_PREFIX}{name}".encode(), None)

    def put_target(self, name: str, target: str) -> None:
        """STARTED, PAUSED or STOPPED (written as Kafka does: `state` PAUSED for STOPPED for old readers)."""
        self.log.send(f"{TARGET_PREFIX}{name}".encode(),
                      _compact({"state": "PAUSED" if target == "STOPPED" else target, "state.v2": target}))

    def put_restart(self, name: str, include_tasks: bool, only_failed: bool) -> None:
        self.log.send(f"{RESTART_PREFIX}{name}".encode(),
                      _compact({"include-tasks": include_tasks, "only-failed": only_failed}))

    def put_session_key(self, key: SessionKey) -> None:
        self.log.send(SESSION_KEY_KEY.encode(), _compact(key.record()))

    def put_task_count(self, name: str, count: int) -> None:
        """KIP-618's task count record (`tasks-fencing-NAME`), written once a generation's zombies are fenced."""
        self.log.send(f"tasks-fencing-{name}".encode(), _compact({"task-count": count}))

    def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        for i, task in enumerate(configs):
            self.log.send(f"{TASK_PREFIX}{name}-{i}".encode(), _compact({"properties": task}), sync=False)
        self.log.send(f"{COMMIT_PREFIX}{name}".encode(), _compact({"tasks": len(configs)}))


class KafkaOffsetStore:
    """Source offsets in the offsets topic (an OffsetStore, as FileOffsetStore is)."""

    def __init__(self, config: WorkerConfig, client_id: str) -> None:
        self._lock = threading.Lock()
        self._data: dict[bytes, bytes] = {}
        self.log = kafka_log(config, str(config.get("offset.storage.topic")), self._apply, f"{client_id}-offsets")

    @property
    def topic(self) -> str | None:
        return self.log.topic

    def read_to_end(self) -> None:
        self.log.read_to_end()

    def _apply(self, key: bytes | None, value: bytes | None, _offset: int) -> None:
        if key is None:
            return
        with self._lock:
            if value is None:
                self._data.pop(key, None)
            else:
                self._data[key] = value

    def get(self, connector: str, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        with self._lock:
            raw = self._data.get(offset_key(connector, partition))
        return None if raw is None else json.loads(raw)

    def commit(self, connector: str, offsets: Mapping[bytes, Any]) -> None:
        self.write(connector, offsets)  # a None offset is a tombstone in the topic, as Kafka's writer sends it

    def write(self, connector: str, entries: Mapping[bytes, Any]) -> None:
        items = [(offset_key(connector, json.loads(p)), None if o is None else _compact(o)) for p, o in entries.items()]
        for key, value in items[:-1]:
            self.log.send(key, value, sync=False)
        if items:
            self.log.send(*items[-1])
        with self._lock:
            for key, value in items:
                if value is None:
                    self._data.pop(key, None)
                else:
                    self._data[key] = value

    def connector_offsets(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        with self._lock:
            items = list(self._data.items())
        out = []
        for key, value in items:
            parsed = _json(key)
            if isinstance(parsed, list) and len(parsed) == 2 and parsed[0] == connector:
                out.append((parsed[1], json.loads(value)))
        return out


class StatusStore:
    """Every worker's connector and task states as the status topic has them."""

    def __init__(self, config: WorkerConfig, client_id: str) -> None:
        self._lock = threading.Lock()
        self.states: dict[str, dict[str, Any]] = {}
        self.on_read: Callable[[str], None] | None = None  # told each key read, once applied
        self.log = kafka_log(config, str(config.get("status.storage.topic")), self._apply, f"{client_id}-statuses")

    def _apply(self, key: bytes | None, value: bytes | None, _offset: int) -> None:
        k = (key or b"").decode(errors="replace")
        doc = _json(value)
        with self._lock:
            if not isinstance(doc, dict):
                self.states.pop(k, None)
            else:
                old = self.states.get(k)
                # a record of an older generation does not replace a newer one (a stale worker's late write)
                if old is None or int(doc.get("generation", 0)) >= int(old.get("generation", 0)):
                    self.states[k] = doc
        if self.on_read is not None:
            self.on_read(k)

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            return self.states.get(key)

    def put(self, key: str, state: str, trace: str | None, worker_id: str, generation: int,
            version: str | None = None) -> None:
        doc: dict[str, Any] = {"state": state, "trace": trace, "worker_id": worker_id, "generation": generation}
        if version is not None:
            doc["version"] = version
        self.log.send(key.encode(), _compact(doc), sync=False)


def topic_status_key(connector: str, topic: str) -> str:
    return f"{STATUS_TOPIC_PREFIX}{topic}{STATUS_TOPIC_SEPARATOR}{connector}"


def parse_topic_status_key(key: str) -> tuple[str, str] | None:
    """(connector, topic) of a `status-topic-TOPIC:connector-NAME` key, as Kafka's status store splits it (at the
    first colon: a topic name has none); None if it is not one."""
    if not key.startswith(STATUS_TOPIC_PREFIX):
        return None
    colon = key.find(":")
    topic = key[len(STATUS_TOPIC_PREFIX):colon] if colon >= 0 else ""
    if not topic or not key.startswith(STATUS_TOPIC_SEPARATOR, colon):
        return None
    connector = key[colon + len(STATUS_TOPIC_SEPARATOR):]
    return (connector, topic) if connector else None


class StatusTopicActiveTopics:
    """A distributed worker's active topics (see `connect/active_topics.py`): what the status topic holds, so
    every worker of the group, Kafka's too, answers the same. A task's first record to a topic writes its topic
    status; this worker does not write it again while the write is on its way back through the topic (until
    the topic's next record of that key: its own, or another worker's reset). `record` runs for every record a
    task moves: a known topic costs a dict and a set lookup, as in the standalone tracker."""

    def __init__(self, statuses: StatusStore, enabled: bool = True) -> None:
        self.enabled = enabled
        self.statuses = statuses
        self._lock = threading.Lock()
        self._known: dict[str, set[str]] = {}  # connector -> its topics, as the status topic has them
        self._sent: set[str] = set()
        statuses.on_read = self._read

    def _read(self, key: str) -> None:
        parsed = parse_topic_status_key(key)
        if parsed is None:
            return
        connector, topic = parsed
        present = self.statuses.get(key) is not None
        with self._lock:
            self._sent.discard(key)
            topics = self._known.setdefault(connector, set())
            if present:
                topics.add(topic)
            else:
                topics.discard(topic)

    def record(self, connector: str, topic: str, task: int = 0) -> None:
        known = self._known.get(connector)
        if not self.enabled or (known is not None and topic in known):
            return
        key = topic_status_key(connector, topic)
        with self._lock:
            if key in self._sent:
                return
            self._sent.add(key)
        self.statuses.log.send(key.encode(), _compact({"topic": {
            "name": topic, "connector": connector, "task": task, "discoverTimestamp": int(time.time() * 1000)}}),
            sync=False)

    def topics(self, connector: str) -> list[str]:
        with self._lock:
            return sorted(self._known.get(connector, ()))

    def reset(self, connector: str) -> None:
        """Tombstones for the connector's topic statuses (Kafka's resetConnectorActiveTopics), those on their
        way back through the topic too."""
        with self._lock:
            pending = {k for k in self._sent if _connector_of(k) == connector}
            self._sent -= pending
        for key in sorted(pending | {topic_status_key(connector, t) for t in self.topics(connector)}):
            self.statuses.log.send(key.encode(), None, sync=False)


def _connector_of(key: str) -> str | None:
    parsed = parse_topic_status_key(key)
    return None if parsed is None else parsed[0]
