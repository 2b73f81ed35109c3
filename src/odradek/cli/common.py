"""Helpers shared by the client tools: flag parsing, client configuration and one-line errors.

The tools talk to a broker through confluent-kafka (librdkafka). This module builds their
configurations from Kafka-style sources (`--property k=v`, `--producer-property`,
`--consumer.config FILE` ...), silences librdkafka's own logging while remembering its last
error, probes the bootstrap servers with a bounded timeout, and turns every failure into one
line on stderr with a non-zero exit code instead of a stack trace.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from confluent_kafka import KafkaError, KafkaException

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

# librdkafka errors meaning "no broker could be talked to".
UNREACHABLE_CODES = frozenset(
    {
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._RESOLVE,
        KafkaError._WAIT_COORD,
    }
)

T = TypeVar("T")


class CliError(Exception):
    """A failure reported to the user as exactly one line on stderr."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class UsageError(CliError):
    """Bad or missing command-line flags."""


class ArgParser(argparse.ArgumentParser):
    """argparse that reports bad flags as a single-line UsageError instead of usage + exit 2."""

    def __init__(self, prog: str, description: str, **kwargs: Any) -> None:
        super().__init__(
            prog=f"odradek {prog}",
            description=description,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            **kwargs,
        )

    def error(self, message: str) -> NoReturn:
        raise UsageError(usage_message(message))


def usage_message(message: str) -> str:
    """Rephrase an argparse complaint in the style of Kafka's tools (one line)."""
    unknown = re.match(r"unrecognized arguments: (\S+)", message)
    if unknown:
        return f"Error: {unknown.group(1)} is not a recognized option (see --help)"
    missing = re.match(r"the following arguments are required: (.+)", message)
    if missing:
        return f'Error: Missing required argument "[{missing.group(1).lstrip("-")}]"'
    return f"Error: {message}"


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
    return str(value)


# --- key=value properties -------------------------------------------------------------------


def parse_key_values(items: Iterable[str] | None, flag: str = "--property") -> dict[str, str]:
    """Parse repeated `k=v` flag values into a dict; a value may be empty, a key may not."""
    result: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"Error: invalid {flag} '{item}': expected key=value")
        result[key] = value
    return result


def parse_bool(value: str | None, default: bool = False) -> bool:
    """Kafka's lenient boolean: 'true' (any case) is true, anything else false."""
    if value is None:
        return default
    return value.strip().lower() == "true"


def read_properties_file(path: str | None) -> dict[str, str]:
    """Load a Java .properties file (empty dict when `path` is None)."""
    if not path:
        return {}
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise CliError(f"Error: cannot read {path}: {exc.strerror or exc}") from None
    return dict(parse_properties(text))


# --- librdkafka clients ---------------------------------------------------------------------


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


def kafka_message(exc: BaseException) -> str:
    """The human text of a KafkaException (or any exception)."""
    err = exc.args[0] if exc.args else None
    if isinstance(err, KafkaError):
        return err.str()
    return str(exc) or type(exc).__name__


# --- running a tool ---------------------------------------------------------------------------


def run_tool(body: Callable[[], int]) -> int:
    """Run a tool's body; map every failure to one stderr line and an exit code."""
    try:
        return body()
    except CliError as exc:
        print(str(exc), file=sys.stderr)
        return exc.exit_code
    except SystemExit as exc:  # argparse --help
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KafkaException as exc:
        print(f"Error: {kafka_message(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # stdout closed by the reader (e.g. `| head`)
        silence_stdout()
        return 1
    except Exception as exc:  # never a stack trace
        print(f"Error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


def silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail on a closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def parse_int(value: str, flag: str, minimum: int | None = None) -> int:
    """An integer flag value with a Kafka-like one-line complaint."""
    try:
        number = int(value)
    except ValueError:
        raise UsageError(f"Error: {flag} expects an integer, got '{value}'") from None
    if minimum is not None and number < minimum:
        raise UsageError(f"Error: {flag} must be at least {minimum}, got {number}")
    return number
