"""librdkafka clients for the tools and the console.

Their configurations are built from Kafka-style sources (`--property k=v`, `--producer-property`,
`--consumer.config FILE` ...); librdkafka's own logging is silenced while its last error is remembered;
the bootstrap servers are probed with a bounded timeout, and a failure becomes one `CliError` line.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException

from odradek.admin_client.errors import UNREACHABLE_CODES, CliError, UsageError, kafka_message
from odradek.config import parse_properties

DEFAULT_CONNECT_TIMEOUT_MS = 10_000
DEFAULT_REQUEST_TIMEOUT_MS = 30_000

# Java client settings that have no librdkafka counterpart and are common in Kafka config files:
# dropped silently (librdkafka always works on bytes).
SILENTLY_DROPPED = frozenset(
    {
        "key.serializer",
        "value.serializer",
        "key.deserializer",
        "value.deserializer",
    }
)

T = TypeVar("T")


def add_bootstrap_flags(parser: argparse.ArgumentParser, *, broker_list: bool = False) -> None:
    """--bootstrap-server (and optionally the deprecated --broker-list alias)."""
    parser.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT[,HOST:PORT]",
        help="REQUIRED: the server(s) to connect to",
    )
    if broker_list:
        parser.add_argument(
            "--broker-list",
            metavar="HOST:PORT[,HOST:PORT]",
            help="DEPRECATED, use --bootstrap-server instead",
        )


def bootstrap_of(opts: argparse.Namespace) -> str:
    """The bootstrap servers given by --bootstrap-server or --broker-list, or a UsageError."""
    value = getattr(opts, "bootstrap_server", None) or getattr(opts, "broker_list", None)
    if not value:
        raise UsageError('Error: Missing required argument "[bootstrap-server]"')
    for entry in str(value).split(","):
        check_address(entry.strip())
    return str(value)


_ADDRESS = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[^:\s\[\]]+):(\d{1,5})$")


def check_address(entry: str) -> None:
    """HOST:PORT (or [IPv6]:PORT) with a port librdkafka can use; it would otherwise take 90922 modulo 65536
    and connect somewhere else entirely."""
    m = _ADDRESS.match(entry)
    if m is None or not 0 < int(m.group(1)) <= 65535:
        raise UsageError(f"Error: invalid url in --bootstrap-server: {entry!r} (expected HOST:PORT, port 1-65535)")


def read_properties_file(path: str | None) -> dict[str, str]:
    """Load a Java .properties file (empty dict when `path` is None)."""
    if not path:
        return {}
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise CliError(f"Error: cannot read {path}: {exc.strerror or exc}") from None
    return dict(parse_properties(text))


class ClientErrors:
    """Keeps librdkafka quiet: its log lines are dropped and its errors remembered, not printed."""

    def __init__(self) -> None:
        self.last: KafkaError | None = None
        self.logger = logging.getLogger("odradek.cli.librdkafka")
        self.logger.addHandler(logging.NullHandler())
        self.logger.propagate = False

    def on_error(self, err: KafkaError) -> None:
        self.last = err

    def config(self) -> dict[str, Any]:
        return {"error_cb": self.on_error, "logger": self.logger}

    def detail(self) -> str:
        """The last librdkafka error as a short suffix, or ''."""
        return f" ({self.last.str()})" if self.last is not None else ""


def client_config(
    bootstrap: str,
    *layers: Mapping[str, str],
    errors: ClientErrors,
    defaults: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Build a librdkafka config: defaults < layers (in order) < bootstrap.servers + callbacks. A layer may
    use the Java client's security keys (sasl.jaas.config, PEM ssl.truststore.location, ...), which become
    librdkafka's, so one --command-config file serves every tool."""
    from odradek.config_keys import ConfigError
    from odradek.security.client_config import librdkafka_config

    conf: dict[str, Any] = dict(defaults or {})
    for layer in layers:
        try:
            conf.update(librdkafka_config(layer))
        except ConfigError as exc:
            raise CliError(f"Error: {exc}") from None
    for key in SILENTLY_DROPPED:
        conf.pop(key, None)
    conf["bootstrap.servers"] = bootstrap
    conf.update(errors.config())
    return conf


def create_client(factory: Callable[[dict[str, Any]], T], conf: dict[str, Any]) -> T:
    """Instantiate a client, dropping (with a warning) properties librdkafka does not know."""
    conf = dict(conf)
    while True:
        try:
            return factory(conf)
        except KafkaException as exc:
            name = _unknown_property(exc)
            if name is None or name not in conf:
                raise CliError(f"Error: invalid client configuration: {kafka_message(exc)}") from None
            print(f"WARNING: ignoring unknown client property '{name}'", file=sys.stderr)
            del conf[name]
        except ValueError as exc:
            raise CliError(f"Error: invalid client configuration: {exc}") from None


def _unknown_property(exc: KafkaException) -> str | None:
    err = exc.args[0] if exc.args else None
    if not isinstance(err, KafkaError) or err.code() != KafkaError._INVALID_ARG:
        return None
    match = re.match(r'No such configuration property: "(.+)"', err.str())
    return match.group(1) if match else None


def ensure_reachable(
    client: Any, bootstrap: str, errors: ClientErrors, timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS
) -> Any:
    """Fetch cluster metadata within `timeout_ms`, or fail with one clear line; returns it."""
    try:
        metadata = client.list_topics(timeout=timeout_ms / 1000)
    except KafkaException as exc:
        err = exc.args[0] if exc.args else None
        if isinstance(err, KafkaError) and err.code() in UNREACHABLE_CODES:
            serve_callbacks(client)
            raise CliError(
                f"Error: could not reach any broker at {bootstrap} within {timeout_ms} ms{errors.detail()}"
            ) from None
        raise
    return metadata


def open_client(
    factory: Callable[[dict[str, Any]], T],
    bootstrap: str,
    *layers: Mapping[str, str],
    defaults: Mapping[str, Any] | None = None,
    timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS,
    on_unreachable: Callable[[T], None] | None = None,
) -> tuple[T, Any]:
    """A librdkafka client configured from `layers` (see client_config) and the cluster metadata proving
    it reached a broker within `timeout_ms`; `on_unreachable` gets the client when it did not."""
    errors = ClientErrors()
    client = create_client(factory, client_config(bootstrap, *layers, errors=errors, defaults=defaults))
    try:
        return client, ensure_reachable(client, bootstrap, errors, timeout_ms)
    except Exception:
        if on_unreachable is not None:
            on_unreachable(client)
        raise


def serve_callbacks(client: Any) -> None:
    """Let librdkafka deliver queued error callbacks (best effort)."""
    poll = getattr(client, "poll", None)
    if poll is None:
        return
    try:
        poll(0)
    except Exception:
        pass
