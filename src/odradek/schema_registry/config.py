"""A Confluent `schema-registry.properties`: its keys (Confluent's names and defaults), the HTTP listeners, the
Kafka client settings of the store (`kafkastore.security.protocol`, `kafkastore.sasl.*`, `kafkastore.ssl.*`,
without their prefix) and the identity the registry advertises to its group."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from odradek.schema_registry.schemas import LEVELS

DEFAULTS = {
    "listeners": "http://0.0.0.0:8081",
    "kafkastore.topic": "_schemas",
    "schema.registry.group.id": "schema-registry",
    "schema.compatibility.level": "backward",
    "leader.eligibility": "true",
    "host.name": "",
    "kafkagroup.session.timeout.ms": "10000",
    "kafkagroup.heartbeat.interval.ms": "3000",
    "kafkagroup.rebalance.timeout.ms": "300000",
    "kafkastore.init.timeout.ms": "60000",
    "authentication.method": "NONE",
    "authentication.realm": "",
    "authentication.roles": "*",
    "ssl.client.authentication": "NONE",
    "inter.instance.protocol": "",
}


class RegistryConfigError(ValueError):
    """A configuration that cannot work (one line)."""


@dataclass(frozen=True)
class Listener:
    scheme: str  # http or https
    host: str
    port: int


def parse_listeners(text: str) -> list[Listener]:
    out = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        url = urlsplit(item)
        if url.scheme not in ("http", "https"):
            raise RegistryConfigError(f"Invalid listener {item}: the scheme must be http or https")
        try:
            port = url.port
        except ValueError:
            port = None
        if port is None:
            raise RegistryConfigError(f"Invalid listener {item}: no port")
        out.append(Listener(url.scheme, url.hostname or "0.0.0.0", port))
    if not out:
        raise RegistryConfigError("listeners names no listener")
    return out


class RegistryConfig:
    def __init__(self, props: Mapping[str, str]) -> None:
        self.props = {**DEFAULTS, **{k: v.strip() for k, v in props.items()}}
        if not self.props.get("kafkastore.bootstrap.servers"):
            raise RegistryConfigError("Missing required configuration \"kafkastore.bootstrap.servers\"")
        self.listeners = parse_listeners(self.props["listeners"])
        level = self.props["schema.compatibility.level"].upper()
        if level not in LEVELS:
            raise RegistryConfigError(f"Invalid value {level} for configuration schema.compatibility.level: "
                                      f"must be one of {', '.join(LEVELS)}")
        self.level = level
        if self.props["authentication.method"].upper() not in ("NONE", "BASIC"):
            raise RegistryConfigError("authentication.method must be NONE or BASIC")

    @property
    def bootstrap(self) -> str:
        """host:port entries, without the `PROTOCOL://` Confluent's examples put before each."""
        return ",".join(entry.strip().split("://", 1)[-1]
                        for entry in self.props["kafkastore.bootstrap.servers"].split(",") if entry.strip())

    @property
    def topic(self) -> str:
        return self.props["kafkastore.topic"]

    @property
    def eligible(self) -> bool:
        return self.props["leader.eligibility"].lower() == "true"

    def ms(self, key: str) -> int:
        try:
            return int(self.props[key])
        except ValueError:
            raise RegistryConfigError(f"Invalid value {self.props[key]} for configuration {key}") from None

    def client_props(self) -> dict[str, str]:
        """The store's Kafka client settings: the `kafkastore.` security keys without their prefix."""
        out = {}
        for key, value in self.props.items():
            if key.startswith(("kafkastore.security.", "kafkastore.sasl.", "kafkastore.ssl.")):
                out[key[len("kafkastore."):]] = value
        return out

    def advertised(self) -> Listener:
        """The listener other members forward to (`inter.instance.protocol` picks http or https), with
        `host.name` (else this machine's name when the listener binds every address)."""
        wanted = self.props["inter.instance.protocol"].lower()
        chosen = next((lst for lst in self.listeners if lst.scheme == wanted), self.listeners[0])
        host = self.props["host.name"] or (chosen.host if chosen.host not in ("0.0.0.0", "::", "")
                                           else socket.gethostname())
        return Listener(chosen.scheme, host, chosen.port)
