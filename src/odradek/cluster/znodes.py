"""Kafka's znode layout and the JSON each znode holds, as Kafka (ZooKeeper mode) writes it."""

from __future__ import annotations

import base64
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
BROKER_SEQID = "/brokers/seqid"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CONFIG_TOPICS = "/config/topics"
CONFIG_BROKERS = "/config/brokers"
CONFIG_CHANGES = "/config/changes"
CONFIG_USERS = "/config/users"
DELETE_TOPICS = "/admin/delete_topics"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
LOG_DIR_FAILURE_EVENT = 1
CLUSTER_ID = "/cluster/id"

PERSISTENT_PATHS = (
    BROKER_IDS,
    BROKER_TOPICS,
    BROKER_SEQID,
    CONFIG_TOPICS,
    CONFIG_BROKERS,
    CONFIG_CHANGES,
    DELETE_TOPICS,
    ISR_CHANGE_NOTIFICATION,
    LOG_DIR_EVENT_NOTIFICATION,
    "/cluster",
)


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def log_dir_event_json(broker_id: int) -> dict[str, Any]:
    """Content of a /log_dir_event_notification/log_dir_event_NNNNNNNNNN notification (Kafka's
    LogDirEventNotificationSequenceZNode): a log dir of that broker failed."""
    return {"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE_EVENT}


# the entity name of the cluster-wide default broker config (ZooKeeperInternals.DEFAULT_STRING)
DEFAULT_ENTITY = "<default>"
CONFIG_CHANGE_PREFIX = "config_change_"


def broker_config_path(entity: str) -> str:
    """/config/brokers/<broker id>, or /config/brokers/<default> for the cluster default."""
    return f"{CONFIG_BROKERS}/{entity}"


def config_change_json(entity_path: str) -> dict[str, Any]:
    """Content of a /config/changes/config_change_NNNNNNNNNN notification (version 2: entity_path such as
    brokers/0 or brokers/<default>)."""
    return {"version": 2, "entity_path": entity_path}


def now_ms() -> int:
    return int(time.time() * 1000)


def uuid_to_str(raw: bytes) -> str:
    """Kafka's Uuid.toString: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def uuid_from_str(s: str) -> bytes:
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def new_uuid() -> bytes:
    return uuid.uuid4().bytes


@dataclass(slots=True)
class BrokerInfo:
    """/brokers/ids/<id>. host/port are the first endpoint, the inter-broker one; `endpoints` holds every
    advertised listener by name with its security protocol in `protocols`. `offline_replicas` (Odradek's
    field, absent while there are none): the broker's replicas whose log dir failed, which the controller
    treats as offline (Kafka's controller learns them from the LeaderAndIsr answers instead)."""

    broker_id: int
    host: str
    port: int
    rack: str | None = None
    listener_name: str = "PLAINTEXT"
    endpoints: dict[str, tuple[str, int]] = field(default_factory=dict)
    protocols: dict[str, str] = field(default_factory=dict)
    offline_replicas: list[tuple[str, int]] = field(default_factory=list)

    def endpoint(self, listener: str) -> tuple[str, int] | None:
        """(host, port) of `listener`; a registration without listener names has one endpoint for all."""
        if not self.endpoints:
            return self.host, self.port
        return self.endpoints.get(listener)

    def to_json(self) -> dict[str, Any]:
        endpoints = self.endpoints or {self.listener_name: (self.host, self.port)}
        protocols = {name: self.protocols.get(name, "PLAINTEXT") for name in endpoints}
        return {
            "listener_security_protocol_map": protocols,
            "endpoints": [f"{name}://{_host(h)}:{p}" for name, (h, p) in endpoints.items()],
            "jmx_port": -1,
            "features": {},
            "host": self.host,
            "timestamp": str(now_ms()),
            "port": self.port,
            "version": 5,
            **({"rack": self.rack} if self.rack else {}),
            **({"offline_replicas": _by_topic(self.offline_replicas)} if self.offline_replicas else {}),
        }

    @classmethod
    def from_json(cls, broker_id: int, d: dict[str, Any]) -> BrokerInfo:
        host, port = d.get("host"), d.get("port")
        endpoints: dict[str, tuple[str, int]] = {}
        for ep in d.get("endpoints") or []:
            name, _, hp = ep.partition("://")
            h, _, p = hp.rpartition(":")
            endpoints[name] = (h.strip("[]"), int(p))
        listener_name = "PLAINTEXT"
        if endpoints:
            listener_name, (host, port) = next(iter(endpoints.items()))
        if not isinstance(host, str) or not isinstance(port, int):
            raise ValueError(f"broker {broker_id} registration has no usable endpoint")
        protocols = {str(k): str(v) for k, v in (d.get("listener_security_protocol_map") or {}).items()}
        offline = [(str(t), int(p)) for t, ps in (d.get("offline_replicas") or {}).items() for p in ps]
        return cls(broker_id, host, port, d.get("rack"), listener_name, endpoints, protocols, offline)


def _by_topic(replicas: list[tuple[str, int]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for topic, p in sorted(replicas):
        out.setdefault(topic, []).append(p)
    return out


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


@dataclass(slots=True)
class TopicAssignment:
    """Content of /brokers/topics/<t>: partition -> replica list, and the topic id."""

    partitions: dict[int, list[int]]
    topic_id: bytes = field(default_factory=new_uuid)
    adding: dict[int, list[int]] = field(default_factory=dict)
    removing: dict[int, list[int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 3,
            "topic_id": uuid_to_str(self.topic_id),
            "partitions": {str(p): r for p, r in sorted(self.partitions.items())},
            "adding_replicas": {str(p): r for p, r in self.adding.items()},
            "removing_replicas": {str(p): r for p, r in self.removing.items()},
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TopicAssignment:
        parts = {int(p): [int(b) for b in r] for p, r in d["partitions"].items()}
        tid = uuid_from_str(d["topic_id"]) if d.get("topic_id") else new_uuid()
        adding = {int(p): [int(b) for b in r] for p, r in (d.get("adding_replicas") or {}).items()}
        removing = {int(p): [int(b) for b in r] for p, r in (d.get("removing_replicas") or {}).items()}
        return cls(parts, tid, adding, removing)


@dataclass(slots=True)
class PartitionState:
    """Content of /brokers/topics/<t>/partitions/<p>/state."""

    leader: int
    leader_epoch: int
    isr: list[int]
    controller_epoch: int
    zk_version: int = 0  # the znode version this state was read at (for conditional writes)

    def to_json(self) -> dict[str, Any]:
        return {
            "controller_epoch": self.controller_epoch,
            "leader": self.leader,
            "version": 1,
            "leader_epoch": self.leader_epoch,
            "isr": list(self.isr),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any], zk_version: int = 0) -> PartitionState:
        return cls(
            int(d["leader"]), int(d["leader_epoch"]), [int(b) for b in d["isr"]], int(d["controller_epoch"]), zk_version
        )


def config_json(config: dict[str, str]) -> dict[str, Any]:
    return {"version": 1, "config": dict(config)}


def config_from_json(d: Any) -> dict[str, str]:
    """The overrides in the content of /config/topics/<t> (or /config/brokers/<b>); {} when none."""
    config = d.get("config") if isinstance(d, dict) else None
    return {str(k): str(v) for k, v in (config or {}).items()}


def controller_from_json(d: dict[str, Any]) -> int:
    """The broker id in the content of /controller."""
    return int(d["brokerid"])
