"""A Connect worker's configuration: Kafka's worker keys and defaults (`bootstrap.servers`, the converters and
their `key.converter.`/`value.converter.` settings, offsets, `listeners`, `plugin.path`, the distributed keys)
and the clients it builds from them: the worker's security keys apply to every client, then the
`producer.`/`consumer.`/`admin.` overrides, written with the Java client's names (translated for librdkafka)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from odradek.connect.api import ConfigException

WORKER_DEFAULTS = {
    "bootstrap.servers": "localhost:9092",
    "header.converter": "org.apache.kafka.connect.storage.SimpleHeaderConverter",
    "offset.flush.interval.ms": "60000",
    "offset.flush.timeout.ms": "5000",
    "listeners": "http://:8083",
    "task.shutdown.graceful.timeout.ms": "5000",
    "plugin.path": "",
    "config.storage.replication.factor": "3",
    "offset.storage.replication.factor": "3",
    "offset.storage.partitions": "25",
    "status.storage.replication.factor": "3",
    "status.storage.partitions": "5",
    "scheduled.rebalance.max.delay.ms": "300000",
    "connect.protocol": "sessioned",
    "exactly.once.source.support": "disabled",
    "session.timeout.ms": "10000",
    "heartbeat.interval.ms": "3000",
    "rebalance.timeout.ms": "60000",
    "topic.tracking.enable": "true",
    "topic.tracking.allow.reset": "true",
    "inter.worker.key.generation.algorithm": "HmacSHA256",
    "inter.worker.key.ttl.ms": "3600000",
    "inter.worker.signature.algorithm": "HmacSHA256",
    "inter.worker.verification.algorithms": "HmacSHA256",
}
REQUIRED = ("key.converter", "value.converter")
STANDALONE_REQUIRED = ("offset.storage.file.filename",)
DISTRIBUTED_REQUIRED = ("group.id", "config.storage.topic", "offset.storage.topic", "status.storage.topic")
# worker keys every client takes as they are (the connection to the cluster)
_CLIENT_KEYS = ("security.protocol", "client.dns.lookup")
_CLIENT_PREFIXES = ("sasl.", "ssl.")


@dataclass(frozen=True)
class WorkerConfig:
    props: dict[str, str]
    distributed: bool = False

    @classmethod
    def of(cls, props: Mapping[str, str], distributed: bool = False) -> WorkerConfig:
        merged = {**WORKER_DEFAULTS, **{k: v.strip() for k, v in props.items()}}
        required = REQUIRED + (DISTRIBUTED_REQUIRED if distributed else STANDALONE_REQUIRED)
        for key in required:
            if not merged.get(key):
                raise ConfigException(f'Missing required configuration "{key}" which has no default value.')
        for key in ("offset.flush.interval.ms", "offset.flush.timeout.ms", "task.shutdown.graceful.timeout.ms"):
            try:
                int(merged[key])
            except ValueError:
                raise ConfigException(f"Invalid value {merged[key]} for configuration {key}: Not a number of type "
                                      "LONG") from None
        if distributed:
            from odradek.connect.request_signing import check_config

            problem = check_config(merged)
            if problem is not None:
                raise ConfigException(problem)
        return cls(merged, distributed)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.props.get(key, default)

    def ms(self, key: str) -> float:
        """A duration key in seconds."""
        return int(self.props[key]) / 1000

    @property
    def bootstrap_servers(self) -> str:
        return self.props["bootstrap.servers"]

    @property
    def plugin_path(self) -> list[str]:
        return [p for p in self.props.get("plugin.path", "").split(",") if p.strip()]

    def converter_configs(self, prefix: str) -> dict[str, str]:
        """The settings under `prefix` (`key.converter.`), without it."""
        return {k[len(prefix):]: v for k, v in self.props.items() if k.startswith(prefix)}

    def client_props(self, kind: str) -> dict[str, str]:
        """Java-named properties of a `kind` ("producer", "consumer", "admin") client: the worker's connection
        keys, then its `kind.` overrides."""
        out = {k: v for k, v in self.props.items()
               if k in _CLIENT_KEYS or k.startswith(_CLIENT_PREFIXES)}
        out.update(self.converter_configs(f"{kind}."))
        return out

    def rest_listener(self) -> tuple[str, int]:
        """(host, port) of the first `listeners` entry (http only)."""
        first = self.props["listeners"].split(",")[0].strip()
        scheme, _, rest = first.partition("://")
        if scheme.lower() != "http" or not rest:
            raise ConfigException(f"Invalid value {first} for configuration listeners: only http listeners are "
                                  "served")
        host, _, port = rest.rpartition(":")
        try:
            return host.strip("[]") or "0.0.0.0", int(port)
        except ValueError:
            raise ConfigException(f"Invalid value {first} for configuration listeners: no port") from None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.props)
