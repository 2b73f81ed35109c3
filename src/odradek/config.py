"""Broker configuration: server.properties parsing, Kafka's names, types, defaults, validation.

``parse_properties`` reads Java ``.properties`` text exactly as ``java.util.Properties.load``
does.  ``BrokerConfig`` checks every key against the catalogue in :mod:`odradek.config_keys`
(every documented Kafka broker key), parses values with Kafka's rules and wording, rejects
unknown keys with a did-you-mean suggestion, maps the pre-3.0 aliases (``port``, ``host.name``,
``advertised.host.name``, ``advertised.port``) onto listeners, and collects one warning line for
every deprecated or not-applicable key, which the broker logs once at start-up.

Single-node mode: when ``zookeeper.connect`` is absent the broker keeps its metadata in the
embedded store, and ``broker.id = -1`` (the default) means broker 0.  In ZooKeeper mode
``broker.id = -1`` is kept and means the broker asks the store for a generated id above
``reserved.broker.max.id``, as Kafka does.

``TOPIC_CONFIGS`` / ``validate_topic_configs`` cover topic-level configs, and
``BrokerConfig.topic_defaults`` gives the broker-level default of each of them.
"""

from __future__ import annotations

import copy
import difflib
import enum
import ipaddress
import re
import socket
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, overload

from odradek.config_keys import (
    BROKER_KEYS,
    BROKER_SYNONYMS,
    NOT_APPLICABLE_PREFIXES,
    TOPIC_CONFIGS,
    ConfigError,
    ConfigKey,
    ConfigType,
    Password,
    check_topic_configs,
    invalid_value,
    parse_typed,
)

if TYPE_CHECKING:
    from odradek.config_key_types import (
        BoolKey,
        FloatKey,
        IntKey,
        ListKey,
        OptionalIntKey,
        OptionalListKey,
        OptionalPasswordKey,
        OptionalStrKey,
        StrKey,
    )

__all__ = [
    "BROKER_KEYS",
    "SECURITY_PROTOCOLS",
    "TOPIC_CONFIGS",
    "BrokerConfig",
    "BrokerConfigEntry",
    "ConfigError",
    "ConfigKey",
    "ConfigSource",
    "Listener",
    "Synonym",
    "UnknownConfigError",
    "Password",
    "ZooKeeperConfig",
    "parse_listeners",
    "parse_properties",
    "read_properties_file",
    "validate_topic_configs",
]

# ---------------------------------------------------------------------------------------------
# Java .properties syntax
# ---------------------------------------------------------------------------------------------

_WS = " \t\f"  # the only whitespace java.util.Properties knows
_NATURAL_LINES = re.compile(r"\r\n|\r|\n")
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str, lineno: int) -> str:
    """Apply Properties escapes: ``\\t \\n \\r \\f``, ``\\uXXXX``; ``\\c`` is ``c`` otherwise."""
    if "\\" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        i += 1
        if i >= n:  # a lone trailing backslash is dropped
            break
        ch = text[i]
        if ch == "u":
            digits = text[i + 1 : i + 5]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError(f"Malformed \\uxxxx encoding on line {lineno}: \\u{digits}")
            out.append(chr(int(digits, 16)))
            i += 5
        else:
            out.append(_SIMPLE_ESCAPES.get(ch, ch))
            i += 1
    return "".join(out)


def _trailing_backslashes(line: str) -> int:
    return len(line) - len(line.rstrip("\\"))


def _split_key_value(line: str) -> tuple[str, str]:
    """Split a logical line at the first unescaped ``=``, ``:`` or whitespace."""
    escaped = False
    key_end = len(line)
    value_start = len(line)
    has_separator = False
    for i, ch in enumerate(line):
        if not escaped and ch in "=:":
            key_end, value_start, has_separator = i, i + 1, True
            break
        if not escaped and ch in _WS:
            key_end, value_start = i, i + 1
            break
        escaped = ch == "\\" and not escaped
    i = value_start
    while i < len(line):
        ch = line[i]
        if ch in _WS:
            i += 1
        elif ch in "=:" and not has_separator:
            has_separator = True
            i += 1
        else:
            break
    return line[:key_end], line[i:]


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text as ``java.util.Properties.load`` does.

    ``key = value``, ``key=value``, ``key value`` and ``key:value``; ``#`` and ``!`` comment
    lines; blank lines; a line ending in an odd number of backslashes continues on the next
    line, whose leading whitespace is dropped; escapes ``\\t \\n \\r \\f \\\\ \\= \\: \\ `` and
    ``\\uXXXX`` in keys and values.  Trailing whitespace belongs to the value, and so does a
    ``#`` that is not at the start of a line.  Later keys override earlier ones.
    """
    result: dict[str, str] = {}
    lines = _NATURAL_LINES.split(text)
    i = 0
    while i < len(lines):
        lineno = i + 1
        line = lines[i].lstrip(_WS)
        i += 1
        if not line or line[0] in "#!":
            continue
        logical = line
        while _trailing_backslashes(logical) % 2 == 1:
            logical = logical[:-1]
            if i >= len(lines):
                break
            logical += lines[i].lstrip(_WS)
            i += 1
        raw_key, raw_value = _split_key_value(logical)
        result[_unescape(raw_key, lineno)] = _unescape(raw_value, lineno)
    return result


def read_properties_file(path: str | Path) -> dict[str, str]:
    """Read and parse a ``.properties`` file.

    The bytes are decoded as UTF-8 (a leading BOM is dropped), falling back to ISO-8859-1 (what
    Java uses) when they are not valid UTF-8.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ConfigError(f"Cannot read configuration file {path}: {e.strerror or e}") from e
    data = data.removeprefix(b"\xef\xbb\xbf")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    return parse_properties(text)


# ---------------------------------------------------------------------------------------------
# Listeners
# ---------------------------------------------------------------------------------------------

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SUPPORTED_SECURITY_PROTOCOLS = SECURITY_PROTOCOLS
_ENDPOINT = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")
_ANY_ADDRESSES = ("0.0.0.0", "::")


@dataclass(frozen=True, slots=True)
class Listener:
    """One endpoint: listener name, host ('' = default interface), port, security protocol."""

    name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    @property
    def url(self) -> str:
        """``NAME://host:port``, with IPv6 hosts in brackets."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"

    def __str__(self) -> str:
        return self.url


def _parse_protocol_map(raw: str) -> dict[str, str]:
    mapping: dict[str, str] = {}
    for entry in (e.strip() for e in raw.split(",")):
        if not entry:
            continue
        name, sep, proto = entry.partition(":")
        name, proto = name.strip().upper(), proto.strip().upper()
        if not sep or not name or not proto:
            raise invalid_value(
                "listener.security.protocol.map", raw, f"map entry '{entry}' is not of the form NAME:PROTOCOL"
            )
        if proto not in SECURITY_PROTOCOLS:
            raise invalid_value(
                "listener.security.protocol.map",
                raw,
                f"unknown security protocol {proto} (expected one of {', '.join(SECURITY_PROTOCOLS)})",
            )
        if name in mapping:
            raise invalid_value("listener.security.protocol.map", raw, f"listener {name} appears twice")
        mapping[name] = proto
    return mapping


def parse_listeners(
    raw: str,
    protocol_map: Mapping[str, str] | None = None,
    *,
    config_name: str = "listeners",
    distinct_ports: bool = True,
) -> list[Listener]:
    """Parse a comma-separated listener list such as ``PLAINTEXT://:9092,INTERNAL://host:9093``.

    Raises :class:`ConfigError` (``Invalid value ... for configuration listeners: ...``) on a
    malformed endpoint, a port outside 0..65535, a listener name without a security protocol,
    or a repeated listener name (or port, when ``distinct_ports``).
    """
    if protocol_map is None:
        protocol_map = {p: p for p in SECURITY_PROTOCOLS}
    listeners: list[Listener] = []
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        m = _ENDPOINT.fullmatch(item)
        if m is None:
            raise invalid_value(config_name, raw, f"Unable to parse {item} to a broker endpoint")
        name, host, port_text = m.group(1).strip().upper(), m.group(2), m.group(3)
        port = int(port_text)
        if not name:
            raise invalid_value(config_name, raw, f"Unable to parse {item} to a broker endpoint")
        if not 0 <= port <= 65535:
            raise invalid_value(config_name, raw, f"port {port} of {item} is out of range 0..65535")
        if name not in protocol_map:
            raise invalid_value(config_name, raw, f"No security protocol defined for listener {name}")
        listeners.append(Listener(name, host, port, protocol_map[name]))
    names = [lst.name for lst in listeners]
    for name in names:
        if names.count(name) > 1:
            raise invalid_value(config_name, raw, f"Each listener must have a different name; {name} repeats")
    if distinct_ports:
        seen: dict[tuple[int, int], Listener] = {}
        for lst in listeners:
            family = 6 if ":" in lst.host else 4
            if (lst.port, family) in seen and lst.port != 0:
                raise invalid_value(
                    config_name, raw, f"Each listener must have a different port; {lst.port} repeats"
                )
            seen[(lst.port, family)] = lst
    return listeners


def _resolve(host: str) -> list[str] | None:
    """The addresses ``host`` resolves to here, or ``None`` when it does not resolve."""
    try:
        infos = socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):
        return None
    return sorted({str(info[4][0]) for info in infos})


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


# ---------------------------------------------------------------------------------------------
# DescribeConfigs support
# ---------------------------------------------------------------------------------------------


class ConfigSource(enum.IntEnum):
    """Kafka's DescribeConfigs ``config_source`` codes."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class Synonym(NamedTuple):
    """One place a config's value is set (DescribeConfigs ``synonyms``), highest precedence first."""

    name: str
    value: str | None
    source: int


class BrokerConfigEntry(NamedTuple):
    """One row of a DescribeConfigs answer for a BROKER resource."""

    name: str
    value: str | None
    is_default: bool
    is_sensitive: bool
    source: int
    read_only: bool = True
    synonyms: tuple[Synonym, ...] = ()


class UnknownConfigError(ConfigError):
    """A dynamic update names a key the catalogue does not know."""


# ---------------------------------------------------------------------------------------------
# The broker configuration
# ---------------------------------------------------------------------------------------------

_MS_PER_MINUTE = 60_000
_MS_PER_HOUR = 3_600_000
_INLINE_COMMENT = re.compile(r"\s#")
_INLINE_COMMENT_HINT = (
    " (a .properties file has no end-of-line comments: '#' starts a comment only at the"
    " beginning of a line, so the text after it is part of the value)"
)

# Keys whose effective value is computed from a family of keys ("synonyms" in Kafka's terms): Kafka's
# families, and three of Odradek's where one key falls back on another.
_SYNONYMS: dict[str, tuple[str, ...]] = {
    **BROKER_SYNONYMS,
    "log.dirs": ("log.dirs", "log.dir"),
    "broker.id": ("broker.id", "node.id"),
    "zookeeper.connection.timeout.ms": ("zookeeper.connection.timeout.ms", "zookeeper.session.timeout.ms"),
}
# The synonyms reported for a key: its family from the key itself down (log.retention.hours is no
# synonym of log.retention.minutes's, but log.retention.minutes is one of log.retention.ms's).
_FAMILY: dict[str, tuple[str, ...]] = {
    name: family[i:] for family in _SYNONYMS.values() for i, name in enumerate(family)
}


def _scala_set(names: Iterable[str]) -> str:
    """How Kafka's error messages print a set of names: ``Set(a, b)`` (``HashSet(...)`` past four)."""
    items = sorted(names)
    return f"{'Set' if len(items) <= 4 else 'HashSet'}({', '.join(items)})"


def _is_removed(key: ConfigKey) -> bool:
    """Keys that no Kafka 3.x broker knows (removed in 0.9, 3.0, 3.2; renamed in 0.8.1)."""
    note = key.deprecated or ""
    return note.startswith(("removed in Kafka 0.", "removed in Kafka 3.", "renamed in Kafka"))


def _prefixed(name: str) -> bool:
    return name.startswith(NOT_APPLICABLE_PREFIXES)


def _suggest(name: str) -> str | None:
    """The closest known key to an unknown ``name``, if any is close."""
    topic = TOPIC_CONFIGS.get(name)
    if topic is not None and topic.server_default:
        return topic.server_default
    lowered = name.strip().lower()
    if lowered in BROKER_KEYS:
        return lowered
    matches = difflib.get_close_matches(lowered, list(BROKER_KEYS), n=1, cutoff=0.6)
    return matches[0] if matches else None


_PASSWORD_KEYS = tuple(k.name for k in BROKER_KEYS.values() if k.sensitive)


def _sensitive_name(name: str) -> bool:
    """Whether a (possibly prefixed) key holds a secret, e.g. listener.name.x.ssl.key.password."""
    key = BROKER_KEYS.get(name)
    if key is not None:
        return key.sensitive
    return name.endswith(_PASSWORD_KEYS) or any(w in name for w in ("password", "secret", "jaas.config"))


def _applied_listener_key(name: str) -> bool:
    """Whether a per-listener key (``listener.name.<l>.<key>``) overrides a key Odradek applies, including
    ``listener.name.<l>.<mechanism>.sasl.jaas.config``."""
    if not name.startswith("listener.name."):
        return False
    rest = name[len("listener.name."):].partition(".")[2]
    key = BROKER_KEYS.get(rest)
    if key is not None:
        return key.applied and (rest.startswith(("ssl.", "sasl.")) or rest == "max.connections")
    return rest.partition(".")[2] == "sasl.jaas.config"


def _shown(key: ConfigKey | None, raw: str) -> str:
    return "[hidden]" if key is not None and key.sensitive else raw.strip()


def _plaintext_listener(host: str, port: int) -> str:
    """The listener that the pre-3.0 host/port aliases stand for."""
    return f"PLAINTEXT://{f'[{host}]' if ':' in host else host}:{port}"


def _parse_overrides(overrides: Iterable[str]) -> dict[str, str]:
    parsed: dict[str, str] = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"Invalid override '{item}': expected key=value")
        parsed[key.strip()] = value.strip()
    return parsed


@dataclass
class BrokerConfig:
    """A validated broker configuration.

    Build it with :meth:`load` (a server.properties file plus ``--override key=value`` strings)
    or :meth:`from_props`.  Every catalogue key reads through :meth:`get` (its value, or the
    documented default when unset), typed by the key for mypy (``cfg.get("num.partitions")`` is an
    ``int``, ``cfg.get("broker.rack")`` a ``str | None``: overloads over the key groups that
    ``config_key_types.py`` generates from the catalogue); :meth:`value` reads a name known only at
    run time.  The computed values are properties:
    ``broker_id``, ``listeners``, ``advertised_listeners``, ``log_dirs``, ``zookeeper_connect``,
    ``log_retention_ms``, ``log_roll_ms``, ``log_roll_jitter_ms``, ``log_flush_interval_ms``.
    ``warnings`` holds one line per deprecated or not-applicable key that was set.

    Dynamic configs (KIP-226) sit above the static ones: the per-broker layer (``/config/brokers/<id>``)
    over the cluster default (``/config/brokers/<default>``) over server.properties over the documented
    defaults. :meth:`check_dynamic` validates an update of a layer, :meth:`set_dynamic` installs both
    layers as the metadata store holds them, and :meth:`get` and everything built on it (the computed
    properties, :meth:`topic_defaults`) read through them.
    """

    origin: str = "server.properties"
    props: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    _values: dict[str, object] = field(default_factory=dict, init=False, repr=False)
    _extra: dict[str, str] = field(default_factory=dict, init=False, repr=False)
    _listeners: list[Listener] = field(default_factory=list, init=False, repr=False)
    _advertised: list[Listener] = field(default_factory=list, init=False, repr=False)
    _inter_broker: Listener | None = field(default=None, init=False, repr=False)
    _log_dirs: list[str] = field(default_factory=list, init=False, repr=False)
    _broker_id: int = field(default=-1, init=False)
    _zookeeper_connect: str | None = field(default=None, init=False)
    # (per-broker, cluster default): typed values, and the strings as stored; replaced whole, never mutated
    _dynamic: tuple[dict[str, object], dict[str, object]] = field(default=({}, {}), init=False, repr=False)
    _dynamic_raw: tuple[dict[str, str], dict[str, str]] = field(default=({}, {}), init=False, repr=False)

    def secret_keys(self) -> list[str]:
        """The keys set whose values are secrets (passwords, JAAS configs), sorted."""
        return sorted(name for name in self.props if _sensitive_name(name))

    # -- construction --------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path, overrides: Sequence[str] = ()) -> BrokerConfig:
        """Load ``path`` (a server.properties file) and apply ``overrides`` (``key=value``)."""
        props = read_properties_file(path)
        override_props = _parse_overrides(overrides)
        origins = dict.fromkeys(props, str(path))
        origins.update(dict.fromkeys(override_props, "--override"))
        props.update(override_props)
        return cls._build(props, str(path), origins)

    @classmethod
    def from_props(cls, props: Mapping[str, str], origin: str = "server.properties") -> BrokerConfig:
        """Build from already-parsed properties; ``origin`` names their source in messages."""
        return cls._build(dict(props), origin, dict.fromkeys(props, origin))

    @classmethod
    def _build(cls, props: dict[str, str], origin: str, origins: Mapping[str, str]) -> BrokerConfig:
        cfg = cls(origin=origin, props=dict(props))
        cfg._check_names(origins)
        cfg._parse_values()
        cfg._resolve()
        return cfg

    def _check_names(self, origins: Mapping[str, str]) -> None:
        problems: list[str] = []
        for name in self.props:
            if name in BROKER_KEYS or _prefixed(name):
                continue
            text = f"Unknown configuration '{name}' in {origins.get(name, self.origin)}"
            suggestion = _suggest(name)
            if suggestion:
                text += f" (did you mean {suggestion}?)"
            problems.append(text)
        if problems:
            raise ConfigError("; ".join(problems))

    def _parse_values(self) -> None:
        for name, raw in self.props.items():
            key = BROKER_KEYS.get(name)
            if key is None:
                self._extra[name] = raw
                if not _applied_listener_key(name):
                    self._warn_not_applicable(name, None, raw)
                continue
            try:
                self._values[name] = key.parse(raw)
            except ConfigError as e:
                if _INLINE_COMMENT.search(raw):
                    raise ConfigError(f"{e}{_INLINE_COMMENT_HINT}") from None
                raise
            if key.type in (ConfigType.STRING, ConfigType.LIST) and _INLINE_COMMENT.search(raw):
                self.warnings.append(
                    f"Configuration {name} = {raw.strip()} contains ' #'; {_INLINE_COMMENT_HINT.strip(' ()')}"
                )
            if name in (
                "port",
                "host.name",
                "advertised.host.name",
                "advertised.port",
                "log.cleanup.interval.mins",
            ):
                continue  # warned where they are mapped
            if key.deprecated:
                outcome = "still applied" if key.applied else "ignored"
                self.warnings.append(
                    f"Configuration {name} = {_shown(key, raw)} is deprecated ({key.deprecated}); {outcome}"
                )
            elif not key.applied:
                self._warn_not_applicable(name, key, raw)

    def _warn_deprecated(self, names: Iterable[str], outcome: str) -> None:
        """One warning per deprecated alias that was set, saying what became of it."""
        for name in names:
            self.warnings.append(
                f"Configuration {name} = {self.props[name].strip()} is deprecated"
                f" ({BROKER_KEYS[name].deprecated}); {outcome}"
            )

    def _warn_not_applicable(self, name: str, key: ConfigKey | None, raw: str) -> None:
        shown = "[hidden]" if _sensitive_name(name) else _shown(key, raw)
        text = f"Configuration {name} = {shown} is accepted but not applicable to Odradek; ignored"
        if key is None and name.startswith(("ssl.", "sasl.")):
            close = difflib.get_close_matches(name, list(BROKER_KEYS), n=1, cutoff=0.85)
            if close:
                text += f" (did you mean {close[0]}?)"
        self.warnings.append(text)

    # -- cross-key resolution ------------------------------------------------------------------

    def _resolve(self) -> None:
        zk = self._given("zookeeper.connect")
        self._zookeeper_connect = zk if zk else None
        if self._zookeeper_connect is not None:
            self._check_zookeeper_connect(self._zookeeper_connect)
        self._resolve_broker_id()
        self._resolve_legacy_keys()
        self._resolve_listeners()
        self._resolve_log_dirs()
        self._check_durations()
        self._check_replication()
        self._check_connection_limits()
        factor = self.get("offsets.topic.replication.factor")
        if self.single_node and factor > 1:
            shown = factor if self.is_set("offsets.topic.replication.factor") else f"{factor} (the default)"
            self.warnings.append(
                f"Configuration offsets.topic.replication.factor = {shown} exceeds the size of a single-node"
                " cluster (no zookeeper.connect): __consumer_offsets will be created with replication factor 1"
                " (Kafka would refuse to create it); set offsets.topic.replication.factor=1 to say so"
            )

    @staticmethod
    def _check_zookeeper_connect(connect: str) -> None:
        hosts, slash, chroot = connect.partition("/")
        for part in hosts.split(","):
            host, colon, port = part.strip().rpartition(":") if ":" in part else (part.strip(), "", "")
            if not host or (colon and not (port.isdigit() and 0 <= int(port) <= 65535)):
                raise invalid_value(
                    "zookeeper.connect", connect, f"'{part.strip()}' is not of the form host:port"
                )
        if slash and chroot.endswith("/"):
            raise invalid_value("zookeeper.connect", connect, "the chroot path must not end with '/'")

    def _resolve_broker_id(self) -> None:
        broker_id = self._given("broker.id")
        node_id = self._given("node.id")
        if broker_id is not None and node_id is not None and broker_id != node_id:
            raise invalid_value("node.id", node_id, f"must equal broker.id ({broker_id}) when both are set")
        configured = broker_id if broker_id is not None else node_id
        value = -1 if configured is None else configured
        name = "broker.id" if broker_id is not None or node_id is None else "node.id"
        if self.get("broker.id.generation.enable"):
            reserved = self.get("reserved.broker.max.id")
            if not -1 <= value <= reserved:
                raise invalid_value(
                    name,
                    value,
                    "broker.id must be greater than or equal to -1 and not greater than reserved.broker.max.id",
                )
        elif value < 0:
            raise invalid_value(name, value, "broker.id must be greater than or equal to 0")
        if value == -1 and self.single_node:
            value = 0
        self._broker_id = value

    def _resolve_legacy_keys(self) -> None:
        mins = self._given("log.cleanup.interval.mins")
        if mins is not None:
            if "log.retention.check.interval.ms" in self._values:
                outcome = "ignored because log.retention.check.interval.ms is set"
            else:
                self._values["log.retention.check.interval.ms"] = mins * _MS_PER_MINUTE
                outcome = f"mapped to log.retention.check.interval.ms={mins * _MS_PER_MINUTE}"
            self._warn_deprecated(["log.cleanup.interval.mins"], outcome)

    def _resolve_listeners(self) -> None:
        protocol_map = _parse_protocol_map(self.get("listener.security.protocol.map"))
        port = self._given("port")
        host_name = self._given("host.name")
        legacy_set = [n for n in ("port", "host.name") if n in self._values]

        # listeners, or the 0.9-2.x aliases port / host.name
        given = self._given("listeners")
        if given is not None:
            raw_listeners = given
            self._warn_deprecated(legacy_set, "ignored because listeners is set")
        elif legacy_set:
            raw_listeners = _plaintext_listener(host_name or "", 9092 if port is None else port)
            self._values["listeners"] = raw_listeners
            self._warn_deprecated(legacy_set, f"mapped to listeners={raw_listeners}")
        else:
            raw_listeners = self.get("listeners")
        listeners = parse_listeners(raw_listeners, protocol_map)
        if not listeners:
            raise invalid_value("listeners", raw_listeners, "at least one listener is required")
        self._listeners = listeners

        # advertised.listeners, or the aliases advertised.host.name / advertised.port
        adv_host = self._given("advertised.host.name")
        adv_port = self._given("advertised.port")
        adv_legacy = [n for n in ("advertised.host.name", "advertised.port") if n in self._values]
        explicit = True
        given_adv = self._given("advertised.listeners")
        if given_adv is not None and given_adv.strip():
            raw_adv = given_adv
            self._warn_deprecated(adv_legacy, "ignored because advertised.listeners is set")
        elif adv_legacy:
            host = adv_host if adv_host is not None else (host_name or "")
            if adv_port is not None:
                adv_port_value = adv_port
            elif port is not None:
                adv_port_value = port
            else:
                adv_port_value = listeners[0].port
            raw_adv = _plaintext_listener(host, adv_port_value)
            self._values["advertised.listeners"] = raw_adv
            self._warn_deprecated(adv_legacy, f"mapped to advertised.listeners={raw_adv}")
        else:
            raw_adv = raw_listeners
            explicit = False

        advertised = list(listeners)
        if explicit:
            advertised = parse_listeners(
                raw_adv, protocol_map, config_name="advertised.listeners", distinct_ports=False
            )
            listener_names = {lst.name for lst in listeners}
            for lst in advertised:
                if lst.name not in listener_names:
                    raise invalid_value(
                        "advertised.listeners",
                        raw_adv,
                        "advertised.listeners listener names must be equal to or a subset of the ones"
                        " defined in listeners",
                    )
                if lst.host in _ANY_ADDRESSES:
                    raise invalid_value(
                        "advertised.listeners",
                        raw_adv,
                        f"advertised.listeners cannot use the nonroutable meta-address {lst.host}."
                        " Use a routable IP address.",
                    )
        self._advertised = [self._advertisable(lst) for lst in advertised]

        inter_name = self._given("inter.broker.listener.name")
        if inter_name is not None:
            if "security.inter.broker.protocol" in self._values:
                raise invalid_value(
                    "inter.broker.listener.name",
                    inter_name,
                    "inter.broker.listener.name and security.inter.broker.protocol should not both be set",
                )
            if inter_name.upper() not in {lst.name for lst in self._advertised}:
                raise invalid_value(
                    "inter.broker.listener.name",
                    inter_name,
                    "inter.broker.listener.name must be a listener name defined in advertised.listeners",
                )
            inter = next(lst for lst in self._advertised if lst.name == inter_name.upper())
        else:
            protocol = self.get("security.inter.broker.protocol")
            if protocol not in SECURITY_PROTOCOLS:
                raise invalid_value("security.inter.broker.protocol", protocol,
                                    f"String must be one of: {', '.join(SECURITY_PROTOCOLS)}")
            found = next((lst for lst in self._advertised if lst.name == protocol), None)
            if found is not None:
                inter = found
            else:
                if not self.single_node:
                    raise invalid_value(
                        "security.inter.broker.protocol", protocol,
                        f"the inter-broker listener {protocol} must be defined in advertised.listeners",
                    )
                inter = self._advertised[0]  # a single node has no other broker to talk to
        self._inter_broker = inter

    def _advertisable(self, lst: Listener) -> Listener:
        """Replace an empty or wildcard host by this machine's host name, and check it resolves."""
        if lst.host and lst.host not in _ANY_ADDRESSES:
            return lst
        hostname = socket.gethostname()
        addresses = _resolve(hostname)
        if addresses is None:
            self.warnings.append(
                f"Advertised listener {lst.name} uses this machine's host name '{hostname}', which does"
                " not resolve here; clients will not be able to connect. Set advertised.listeners to an"
                f" address clients can reach, e.g. advertised.listeners={lst.name}://<ip-address>:{lst.port}"
            )
        elif self._zookeeper_remote() and all(_is_loopback(a) for a in addresses):
            self.warnings.append(
                f"Advertised listener {lst.name} uses this machine's host name '{hostname}', which resolves"
                f" only to loopback addresses ({', '.join(addresses)}); brokers and clients on other hosts"
                f" cannot reach it. Set advertised.listeners={lst.name}://<routable-address>:{lst.port}"
            )
        return Listener(lst.name, hostname, lst.port, lst.security_protocol)

    def _zookeeper_remote(self) -> bool:
        """Whether the ZooKeeper ensemble names a host other than this machine's loopback."""
        if self._zookeeper_connect is None:
            return False
        for part in self._zookeeper_connect.partition("/")[0].split(","):
            host = part.strip().rpartition(":")[0] or part.strip()
            host = host.strip("[]")
            if host.lower() != "localhost" and not _is_loopback(host):
                return True
        return False

    def _resolve_log_dirs(self) -> None:
        given = self._given("log.dirs")
        if given is not None:
            raw = given
            name = "log.dirs"
            log_dir = self._given("log.dir")
            if log_dir is not None and log_dir != raw:
                self.warnings.append(
                    f"Configuration log.dir = {log_dir} is ignored because log.dirs is set"
                    f" (log.dirs = {raw})"
                )
        else:
            raw = self.get("log.dir")
            name = "log.dir"
        dirs = [d.strip() for d in raw.split(",") if d.strip()]
        if not dirs:
            raise invalid_value(
                name, raw, "At least one log directory must be defined via log.dirs or log.dir"
            )
        normalized = [str(Path(d).expanduser()) for d in dirs]
        for d in normalized:
            if normalized.count(d) > 1:
                raise invalid_value(name, raw, f"log directory {d} is listed more than once")
        self._log_dirs = dirs

    def _check_durations(self) -> None:
        retention = self.log_retention_ms
        if retention == 0:
            name = next(n for n in _SYNONYMS["log.retention.ms"] if self.value(n) is not None)
            raise invalid_value(
                name,
                self.value(name),
                "log.retention.ms must be unlimited (-1) or, equal or greater than 1",
            )
        if self.log_roll_ms < 1:
            raise invalid_value("log.roll.ms", self.log_roll_ms, "Value must be at least 1")
        if self.log_roll_jitter_ms < 0:
            raise invalid_value("log.roll.jitter.ms", self.log_roll_jitter_ms, "Value must be at least 0")
        if self.get("group.min.session.timeout.ms") > self.get("group.max.session.timeout.ms"):
            raise invalid_value(
                "group.min.session.timeout.ms",
                self.get("group.min.session.timeout.ms"),
                "must not exceed group.max.session.timeout.ms",
            )

    def _check_replication(self) -> None:
        wait = self.get("replica.fetch.wait.max.ms")
        if wait > self.get("replica.socket.timeout.ms"):
            raise invalid_value(
                "replica.socket.timeout.ms",
                self.get("replica.socket.timeout.ms"),
                "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms to prevent"
                " unnecessary socket timeouts",
            )
        if wait > self.get("replica.lag.time.max.ms"):
            raise invalid_value(
                "replica.fetch.wait.max.ms",
                wait,
                "replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms"
                " to prevent frequent changes in ISR",
            )

    def _check_connection_limits(self) -> None:
        overrides = self.max_connections_per_ip_overrides
        if self.get("max.connections.per.ip") == 0 and not overrides:
            raise invalid_value(
                "max.connections.per.ip", 0,
                "max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides is set",
            )

    # -- access --------------------------------------------------------------------------------

    @overload
    def get(self, name: BoolKey) -> bool: ...
    @overload
    def get(self, name: IntKey) -> int: ...
    @overload
    def get(self, name: OptionalIntKey) -> int | None: ...
    @overload
    def get(self, name: FloatKey) -> float: ...
    @overload
    def get(self, name: StrKey) -> str: ...
    @overload
    def get(self, name: OptionalStrKey) -> str | None: ...
    @overload
    def get(self, name: ListKey) -> list[str]: ...
    @overload
    def get(self, name: OptionalListKey) -> list[str] | None: ...
    @overload
    def get(self, name: OptionalPasswordKey) -> Password | None: ...

    def get(self, name: str) -> object:
        """The typed value of catalogue key ``name``: as configured, else Kafka's documented default.

        Typed by the key (the overloads, generated from the catalogue in ``config_key_types.py``): a
        name that is not a literal catalogue key does not type-check; :meth:`value` takes any name.
        """
        return self.value(name)

    def static_value(self, name: str) -> object:
        """A catalogued key's value from server.properties (or its documented default), whatever the dynamic
        layers say."""
        return self._values[name] if name in self._values else BROKER_KEYS[name].default_value

    def value(self, name: str) -> object:
        """:meth:`get` for a name known only at run time (a loop over keys, a prefixed key).

        Prefixed keys (``listener.name.*``, ``ssl.*``, ...) that are not in the catalogue give
        their raw string, or ``None`` when unset.  An unknown name raises ``KeyError``.
        """
        per_broker, cluster_default = self._dynamic
        if name in per_broker:
            return per_broker[name]
        if name in cluster_default:
            return cluster_default[name]
        if name in self._values:
            return self._values[name]
        key = BROKER_KEYS.get(name)
        if key is not None:
            return key.default_value
        if _prefixed(name):
            return self._extra.get(name)
        suggestion = _suggest(name)
        hint = f" (did you mean {suggestion}?)" if suggestion else ""
        raise KeyError(f"Unknown configuration '{name}'{hint}")

    @overload
    def _given(self, name: IntKey | OptionalIntKey) -> int | None: ...
    @overload
    def _given(self, name: StrKey | OptionalStrKey) -> str | None: ...

    def _given(self, name: str) -> object:
        """The value given statically for ``name`` (the file, an override, a deprecated alias), None
        when not given: for resolving keys from one another at construction, before any dynamic layer."""
        return self._values.get(name)

    def is_set(self, name: str) -> bool:
        """Whether ``name`` was given statically (in the file, an override, or through a deprecated alias)."""
        return name in self._values or name in self._extra

    @property
    def single_node(self) -> bool:
        """True when there is no ``zookeeper.connect``: metadata lives in the embedded store."""
        return self._zookeeper_connect is None

    @property
    def broker_id(self) -> int:
        """``broker.id`` (or its alias ``node.id``).

        Unset or -1 means 0 in single-node mode; in ZooKeeper mode it stays -1 and the broker
        obtains a generated id above ``reserved.broker.max.id`` from the store.
        """
        return self._broker_id

    @property
    def listeners(self) -> list[Listener]:
        """The endpoints to bind (host '' = the default interface)."""
        return list(self._listeners)

    @property
    def advertised_listeners(self) -> list[Listener]:
        """The endpoints published to clients; empty and wildcard hosts become the host name."""
        return list(self._advertised)

    @property
    def inter_broker_listener(self) -> Listener:
        """The advertised listener other brokers reach this one on (registered first in /brokers/ids)."""
        assert self._inter_broker is not None
        return self._inter_broker

    @property
    def log_dirs(self) -> list[str]:
        """``log.dirs`` (comma-separated), else ``log.dir``."""
        return list(self._log_dirs)

    @property
    def zookeeper_connect(self) -> str | None:
        """The ZooKeeper connect string, or ``None`` in single-node (embedded store) mode."""
        return self._zookeeper_connect

    @property
    def listener_max_connections(self) -> dict[str, int]:
        """``listener.name.<listener>.max.connections`` of each listener that sets it, by listener name."""
        out: dict[str, int] = {}
        for listener in self._listeners:
            for name in (f"listener.name.{listener.name.lower()}.max.connections",
                         f"listener.name.{listener.name}.max.connections"):
                if self.is_set(name):
                    out[listener.name] = BROKER_KEYS["max.connections"].parse(str(self.value(name)))
                    break
        return out

    @property
    def max_connections_per_ip_overrides(self) -> dict[str, int]:
        """``max.connections.per.ip.overrides`` as {host or address: limit}, Kafka's
        ``host:count,host:count`` (split at the last colon, so IPv6 addresses work)."""
        raw = self.get("max.connections.per.ip.overrides") or ""
        out: dict[str, int] = {}
        for item in filter(None, (part.strip() for part in raw.split(","))):
            host, sep, count = item.rpartition(":")
            if not sep or not host.strip() or not count.strip().isdigit():
                raise invalid_value("max.connections.per.ip.overrides", raw.strip(),
                                    "must be a list of host:count pairs, e.g. 10.0.0.1:100,client.example:5")
            out[host.strip()] = int(count)
        return out

    @property
    def zookeeper_connection_timeout_ms(self) -> int:
        """``zookeeper.connection.timeout.ms``, else ``zookeeper.session.timeout.ms``."""
        value = self.get("zookeeper.connection.timeout.ms")
        return self.get("zookeeper.session.timeout.ms") if value is None else value

    @property
    def log_retention_ms(self) -> int:
        """``log.retention.ms`` > ``log.retention.minutes`` > ``log.retention.hours``; -1 = unlimited."""
        ms = self.get("log.retention.ms")
        if ms is None:
            minutes = self.get("log.retention.minutes")
            ms = (
                minutes * _MS_PER_MINUTE
                if minutes is not None
                else self.get("log.retention.hours") * _MS_PER_HOUR
            )
        return -1 if ms < 0 else ms

    @property
    def log_roll_ms(self) -> int:
        """``log.roll.ms``, else ``log.roll.hours`` in milliseconds."""
        ms = self.get("log.roll.ms")
        return ms if ms is not None else self.get("log.roll.hours") * _MS_PER_HOUR

    @property
    def log_roll_jitter_ms(self) -> int:
        """``log.roll.jitter.ms``, else ``log.roll.jitter.hours`` in milliseconds."""
        ms = self.get("log.roll.jitter.ms")
        return ms if ms is not None else self.get("log.roll.jitter.hours") * _MS_PER_HOUR

    @property
    def log_flush_interval_ms(self) -> int:
        """``log.flush.interval.ms``, else ``log.flush.scheduler.interval.ms``."""
        ms = self.get("log.flush.interval.ms")
        return ms if ms is not None else self.get("log.flush.scheduler.interval.ms")

    @property
    def offsets_retention_ms(self) -> int:
        """``offsets.retention.minutes`` in milliseconds."""
        return self.get("offsets.retention.minutes") * _MS_PER_MINUTE

    # -- topic defaults ------------------------------------------------------------------------

    def topic_defaults(self) -> dict[str, str]:
        """Each topic-level config's broker default, under the topic config's name.

        The catalogue names the server key each topic config inherits from; its effective value
        counts (``retention.ms`` follows the log.retention.* precedence, ``segment.ms`` and
        ``segment.jitter.ms`` the log.roll.* ones, ``flush.ms`` falls back to
        log.flush.scheduler.interval.ms).  Configs without a server key give their topic-level
        default.
        """
        computed = self._computed()
        defaults: dict[str, str] = {}
        for name, key in TOPIC_CONFIGS.items():
            server = key.server_default
            if server is None:
                defaults[name] = key.default or ""
            else:
                value = computed[server] if server in computed else self.value(server)
                defaults[name] = BROKER_KEYS[server].format(value) or ""
        return defaults

    def _computed(self) -> dict[str, object]:
        """The effective value of each key computed from a family of keys (see ``_SYNONYMS``)."""
        return {
            "log.retention.ms": self.log_retention_ms,
            "log.roll.ms": self.log_roll_ms,
            "log.roll.jitter.ms": self.log_roll_jitter_ms,
            "log.flush.interval.ms": self.log_flush_interval_ms,
            "log.dirs": ",".join(self._log_dirs),
            "broker.id": self._broker_id,
            "zookeeper.connection.timeout.ms": self.zookeeper_connection_timeout_ms,
        }

    # -- dynamic configs (KIP-226) ---------------------------------------------------------------

    def dynamic_props(self, per_broker: bool) -> dict[str, str]:
        """The dynamic configs in force: this broker's own layer, or the cluster default."""
        return dict(self._dynamic_raw[0 if per_broker else 1])

    def shadowed_statics(self) -> list[str]:
        """One line per key given in server.properties (or an override) that a dynamic layer overrides
        with another value: the file then says one thing and the broker does another, so the broker
        says so at start (a cluster-level ``min.insync.replicas`` written by another broker, say)."""
        lines = []
        for name in sorted(self._values):
            for layer, label in ((0, "this broker's dynamic config"), (1, "the cluster-level dynamic default")):
                if name in self._dynamic[layer]:
                    if self._dynamic[layer][name] != self._values[name]:
                        lines.append(f"{name}={self._dynamic_raw[layer][name]} from {label} overrides "
                                     f"{name}={self._values[name]} of the broker's configuration file")
                    break
        return lines

    def check_dynamic(self, props: Mapping[str, str], per_broker: bool) -> dict[str, str]:
        """Validate ``props`` as the new content of one dynamic layer; returns them trimmed.

        Raises :class:`UnknownConfigError` for names the catalogue does not know, and
        :class:`ConfigError` in Kafka's wording for keys that cannot change on a running broker
        (``Cannot update these configs dynamically: Set(broker.id)``), bad values, and rules across
        keys broken by the configuration the update would produce.
        """
        unknown = [name for name in props if name not in BROKER_KEYS and not _prefixed(name)]
        if unknown:
            hints = [f"{n} (did you mean {s}?)" if (s := _suggest(n)) else n for n in sorted(unknown)]
            raise UnknownConfigError(f"Unknown broker config name: {', '.join(hints)}")
        static = [name for name in props if name not in BROKER_KEYS or not BROKER_KEYS[name].dynamic]
        if static:
            raise ConfigError(f"Cannot update these configs dynamically: {_scala_set(static)}")
        broker_only = [name for name in props if BROKER_KEYS[name].per_broker_only]
        if broker_only and not per_broker:
            raise ConfigError("Cannot update these configs at default cluster level, broker id must be specified: "
                              f"{_scala_set(broker_only)}")
        typed = {name: BROKER_KEYS[name].parse(raw) for name, raw in props.items()}
        raw = {name: value.strip() for name, value in props.items()}
        candidate = self._layered(typed, raw, per_broker)
        candidate._check_dynamic_rules()
        return raw

    def set_dynamic(self, per_broker: Mapping[str, str], cluster_default: Mapping[str, str]) -> list[str]:
        """Install both dynamic layers as the store holds them; returns one warning per entry ignored.

        As Kafka does with what it reads from ZooKeeper, an entry that is unknown, not dynamic or
        malformed is dropped (and warned about) rather than refusing the rest; a layer whose values
        break a rule across keys is not installed and the previous one stays.
        """
        warnings: list[str] = []
        layers: list[tuple[dict[str, object], dict[str, str]]] = []
        for label, props in (("broker", per_broker), ("default cluster", cluster_default)):
            typed: dict[str, object] = {}
            raw: dict[str, str] = {}
            for name, value in props.items():
                key = BROKER_KEYS.get(name)
                if key is None or not key.dynamic:
                    warnings.append(f"Dynamic {label} config {name} cannot be updated dynamically; ignored")
                    continue
                try:
                    typed[name] = key.parse(value)
                except ConfigError as exc:
                    warnings.append(f"Dynamic {label} config contains an invalid value, ignored: {exc}")
                    continue
                raw[name] = value.strip()
            layers.append((typed, raw))
        new = copy.copy(self)
        new._dynamic = (layers[0][0], layers[1][0])
        new._dynamic_raw = (layers[0][1], layers[1][1])
        try:
            new._check_dynamic_rules()
        except ConfigError as exc:
            warnings.append(f"Dynamic broker configs could not be applied, keeping the previous ones: {exc}")
            return warnings
        self._dynamic, self._dynamic_raw = new._dynamic, new._dynamic_raw
        return warnings

    def _layered(self, typed: dict[str, object], raw: dict[str, str], per_broker: bool) -> BrokerConfig:
        """A copy of this configuration with one dynamic layer replaced."""
        new = copy.copy(self)
        i = 0 if per_broker else 1
        layers, raws = list(self._dynamic), list(self._dynamic_raw)
        layers[i], raws[i] = typed, raw
        new._dynamic = (layers[0], layers[1])
        new._dynamic_raw = (raws[0], raws[1])
        return new

    def _check_dynamic_rules(self) -> None:
        """The rules across keys that dynamic keys take part in (Kafka checks them on the whole new config)."""
        self._check_durations()
        self._check_connection_limits()
        check_topic_configs({name: TOPIC_CONFIGS[name].parse(v) for name, v in self.topic_defaults().items()})

    # -- DescribeConfigs -----------------------------------------------------------------------

    def synonyms(self, name: str) -> list[Synonym]:
        """Where the value of broker key ``name`` is set, highest precedence first, as Kafka lists them:
        per-broker dynamic, cluster-default dynamic, static, then documented defaults, each over the
        key's family (``log.retention.ms``, ``log.retention.minutes``, ``log.retention.hours``)."""
        family = _FAMILY.get(name, (name,))
        per_broker, cluster_default = self._dynamic_raw
        out: list[Synonym] = []
        for layer, source in ((per_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
                              (cluster_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)):
            out += [Synonym(n, self._secret(n, layer[n]), int(source)) for n in family if n in layer]
        for n in family:
            if self.is_set(n):
                raw = self.props.get(n)
                text = raw.strip() if raw is not None else self._format(n, self._values.get(n, self._extra.get(n)))
                out.append(Synonym(n, self._secret(n, text), int(ConfigSource.STATIC_BROKER_CONFIG)))
        for n in family:
            key = BROKER_KEYS.get(n)
            if key is not None and key.default is not None:
                out.append(Synonym(n, self._secret(n, key.default), int(ConfigSource.DEFAULT_CONFIG)))
        return out

    def topic_synonyms(self, name: str) -> list[Synonym]:
        """The broker synonyms of a topic config whose server default is ``name``: as Kafka lists them, none
        before the first synonym that is ``name`` itself (`retention.ms` lists none while `log.retention.ms`
        is unset, though `log.retention.hours` has a default: Apache Kafka 4.4 answers so)."""
        out = self.synonyms(name)
        first = next((i for i, syn in enumerate(out) if syn.name == name), len(out))
        return out[first:]

    @staticmethod
    def _secret(name: str, value: str | None) -> str | None:
        return None if _sensitive_name(name) else value

    @staticmethod
    def _format(name: str, value: object) -> str | None:
        key = BROKER_KEYS.get(name)
        return key.format(value) if key is not None else (None if value is None else str(value))

    def describe_broker(self) -> list[BrokerConfigEntry]:
        """Rows for DescribeConfigs on this broker, with their synonyms.

        Every key a Kafka 3.x broker knows is listed, plus removed or prefixed keys that were
        set.  Passwords are sensitive and their value is ``None``.  Keys computed from a family
        (``log.retention.ms``, ``log.roll.ms``, ``log.dirs``, ``broker.id``, ...) show the
        effective value.  A row's source is that of its first synonym (DYNAMIC_BROKER_CONFIG,
        DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG), DEFAULT_CONFIG when it has none;
        a key that cannot be updated dynamically is read-only.
        """
        computed = self._computed()
        rows: list[BrokerConfigEntry] = []
        for name in sorted(BROKER_KEYS):
            key = BROKER_KEYS[name]
            if _is_removed(key) and not self.is_set(name):
                continue
            if name in computed:
                value: str | None = key.format(computed[name])
            else:
                value = key.format(self.value(name))
            if key.sensitive:
                value = None
            synonyms = tuple(self.synonyms(name))
            set_somewhere = synonyms and synonyms[0].source != ConfigSource.DEFAULT_CONFIG
            source = synonyms[0].source if set_somewhere else int(ConfigSource.DEFAULT_CONFIG)
            rows.append(BrokerConfigEntry(name, value, not set_somewhere, key.sensitive, source,
                                          not key.dynamic, synonyms))
        for name in sorted(self._extra):
            sensitive = _sensitive_name(name)
            value = None if sensitive else self._extra[name].strip()
            source = int(ConfigSource.STATIC_BROKER_CONFIG)
            rows.append(BrokerConfigEntry(name, value, False, sensitive, source, True, (Synonym(name, value, source),)))
        return rows

    def describe_dynamic_default(self) -> list[BrokerConfigEntry]:
        """Rows for DescribeConfigs on the cluster default (resource name ""): only the keys set there,
        with only their cluster-default synonyms, as Kafka answers."""
        source = int(ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
        rows = []
        for name, raw in sorted(self._dynamic_raw[1].items()):
            synonyms = tuple(s for s in self.synonyms(name) if s.source == source)
            sensitive = _sensitive_name(name)
            rows.append(BrokerConfigEntry(name, None if sensitive else raw, False, sensitive, source, False, synonyms))
        return rows


# ---------------------------------------------------------------------------------------------
# Topic configs
# ---------------------------------------------------------------------------------------------


def validate_topic_configs(props: Mapping[str, str], defaults: Mapping[str, str] | None = None) -> dict[str, str]:
    """Validate topic-level configs (CreateTopics / AlterConfigs on a TOPIC resource).

    Raises :class:`ConfigError` with ``Unknown topic config name: x`` for an unknown name and
    Kafka's ``Invalid value ... for configuration ...: ...`` for a bad value.  Rules across keys are
    checked on the configs over ``defaults`` (the broker's topic defaults), as the log will see them.
    Returns the configs with surrounding whitespace trimmed from the values.
    """
    checked: dict[str, str] = {}
    parsed: dict[str, object] = {
        name: TOPIC_CONFIGS[name].parse(raw) for name, raw in (defaults or {}).items() if name not in props
    }
    for name, raw in props.items():
        key = TOPIC_CONFIGS.get(name)
        if key is None:
            raise ConfigError(f"Unknown topic config name: {name}")
        if raw is None:
            raise invalid_value(name, raw, "a value is required")
        parsed[name] = key.parse(raw)
        checked[name] = raw.strip()
    check_topic_configs(parsed)
    return checked


# ---------------------------------------------------------------------------------------------
# zoo.cfg / zookeeper.properties
# ---------------------------------------------------------------------------------------------

_ZK_INT = {
    "tickTime", "initLimit", "syncLimit", "clientPort", "secureClientPort", "maxClientCnxns",
    "minSessionTimeout", "maxSessionTimeout", "autopurge.snapRetainCount", "autopurge.purgeInterval",
    "admin.serverPort", "admin.idleTimeout", "snapCount", "preAllocSize", "globalOutstandingLimit",
    "electionAlg", "electionPortBindRetry", "jute.maxbuffer", "cnxTimeout", "connectToLearnerMasterLimit",
    "commitLogCount", "snapSizeLimitInKb", "txnLogSizeLimitInKb", "maxResponseCacheSize",
    "maxGetChildrenResponseCacheSize", "fsync.warningthresholdms", "zookeeper.request_throttle_max_requests",
}  # fmt: skip
_ZK_BOOL = {
    "admin.enableServer", "standaloneEnabled", "reconfigEnabled", "quorumListenOnAllIPs", "syncEnabled",
    "sslQuorum", "portUnification", "sslQuorumReloadCertFiles", "client.portUnification",
    "localSessionsEnabled", "localSessionsUpgradingEnabled", "leaderServes", "4lw.commands.enable",
    "audit.enable", "multiAddress.enabled", "quorum.auth.enableSasl",
}  # fmt: skip
_ZK_STRING = {
    "dataDir", "dataLogDir", "clientPortAddress", "secureClientPortAddress", "admin.serverAddress",
    "admin.commandURL", "4lw.commands.whitelist", "peerType", "dynamicConfigFile", "serverCnxnFactory",
    "metricsProvider.className", "skipACL", "forceSync", "ssl.keyStore.location", "ssl.trustStore.location",
    "ssl.keyStore.password", "ssl.trustStore.password", "ssl.quorum.keyStore.location",
    "ssl.quorum.trustStore.location", "authProvider.1", "initLimit.ms",
}  # fmt: skip
_ZK_NUMBERED = re.compile(r"(server|group|weight|authProvider|metricsProvider)\.(.+)")
_ZK_SERVER = re.compile(
    r"(?P<host>\[[^\]]+\]|[^:;\s]+):(?P<peer>[0-9]+):(?P<election>[0-9]+)(:(participant|observer))?"
    r"(;((?P<chost>[^:;\s]+):)?(?P<cport>[0-9]+))?"
)


@dataclass
class ZooKeeperConfig:
    """A checked ``zoo.cfg`` / ``config/zookeeper.properties``, for operators running ZooKeeper.

    Numbers and booleans of the well-known keys are checked, ``server.N`` entries are parsed
    into ``servers`` (id -> (host, quorum port, election port)); keys ZooKeeper does not know are
    kept and reported in ``warnings`` (ZooKeeper passes them on as ``zookeeper.*`` properties).
    """

    props: dict[str, str]
    servers: dict[int, tuple[str, int, int]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def data_dir(self) -> str:
        return self.props["dataDir"].strip()

    @property
    def client_port(self) -> int | None:
        raw = self.props.get("clientPort")
        return None if raw is None else int(raw.strip())

    @classmethod
    def load(cls, path: str | Path) -> ZooKeeperConfig:
        return cls.from_props(read_properties_file(path))

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> ZooKeeperConfig:
        cfg = cls(props=dict(props))
        for name, raw in props.items():
            if name in _ZK_INT:
                parse_typed(name, ConfigType.INT, raw)
            elif name in _ZK_BOOL:
                parse_typed(name, ConfigType.BOOLEAN, raw)
            elif name in _ZK_STRING or name.startswith(("ssl.", "zookeeper.", "authProvider.", "sasl")):
                pass
            elif (m := _ZK_NUMBERED.fullmatch(name)) is not None:
                if m.group(1) == "server":
                    cfg._add_server(name, m.group(2), raw)
            else:
                cfg.warnings.append(
                    f"Setting {name} = {raw.strip()} is not a ZooKeeper setting; ZooKeeper passes it on as"
                    f" system property zookeeper.{name}"
                )
        if not props.get("dataDir", "").strip():
            raise ConfigError("Invalid value for configuration dataDir: dataDir is not set")
        if cfg.servers:
            for name in ("initLimit", "syncLimit"):
                if name not in props:
                    raise ConfigError(
                        f"Invalid value for configuration {name}: {name} is required with server.N"
                    )
        return cfg

    def _add_server(self, name: str, sid_text: str, raw: str) -> None:
        value = raw.strip()
        if not sid_text.isdigit():
            raise invalid_value(name, value, "the server id must be a number")
        m = _ZK_SERVER.fullmatch(value)
        if m is None:
            raise invalid_value(
                name, value, "expected host:quorumPort:electionPort[:role][;[clientHost:]clientPort]"
            )
        ports = (int(m.group("peer")), int(m.group("election")))
        if not all(0 < p <= 65535 for p in ports):
            raise invalid_value(name, value, "ports must be in 1..65535")
        self.servers[int(sid_text)] = (m.group("host").strip("[]"), *ports)
