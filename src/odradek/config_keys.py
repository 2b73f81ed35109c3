"""Catalogue of Apache Kafka's broker and topic configuration keys.

This module is data plus the small amount of code needed to read it: for every broker key that
Kafka documents (3.x ZooKeeper-mode brokers, the KRaft and 4.x additions, and the keys that
0.8-2.x brokers accepted and later releases removed) it records the type, the default as Kafka
documents it (``None`` where Kafka has none), the valid values, the dynamic update mode (which
keys AlterConfigs may change on a running broker: ``ConfigKey.dynamic``), whether Odradek applies
the key, and a deprecation note where Kafka deprecated or removed it.  A few keys are Odradek's own
(two under KIP-578's names, ``max.partitions`` and ``max.broker.partitions``; ``http.listener`` and its
``http.listener.*`` settings; ``ssl.handshake.timeout.ms``; ``connections.max.unauthenticated.ms``), and one default is Odradek's (``queued.max.request.bytes``); comments at
those keys say why; and a few are Confluent Server's, for Schema ID Validation (``confluent.schema.registry.url``,
``confluent.basic.auth.*``, and the topic configs ``confluent.{key,value}.schema.validation`` and ``confluent.{key,value}.subject.name.strategy``).
The topic catalogue maps each topic-level config to the broker property that
supplies its default, and so does the group catalogue (Kafka's group configs, KIP-848/KIP-932/KIP-1071)
for each group-level config.

Values are parsed with Kafka's rules (``ConfigDef.parseType``): surrounding whitespace is
trimmed, booleans are ``true``/``false`` in any case, numbers must fit their Java type, lists
are comma-separated.  Error messages follow Kafka's wording, e.g.
``Invalid value abc for configuration num.partitions: Not a number of type INT``.
:mod:`odradek.config` builds the broker's configuration on top of this catalogue.
"""

from __future__ import annotations

import enum
import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BROKER_KEYS",
    "BROKER_SYNONYMS",
    "GROUP_CONFIGS",
    "NOT_APPLICABLE_PREFIXES",
    "READ_ONLY_IN_ODRADEK",
    "TOPIC_CONFIGS",
    "ConfigError",
    "ConfigKey",
    "ConfigType",
    "ListOf",
    "NonEmptyList",
    "NonEmptyString",
    "OneOf",
    "Password",
    "Range",
    "ThrottledReplicas",
    "Validator",
    "VersionString",
    "check_group_configs",
    "check_topic_configs",
    "invalid_value",
    "format_typed",
    "parse_typed",
]


class ConfigError(Exception):
    """A configuration problem; the message is one line naming the key and the value."""


class ConfigType(enum.Enum):
    """Kafka's ``ConfigDef.Type`` values, named as the documentation names them."""

    BOOLEAN = "boolean"
    INT = "int"
    SHORT = "short"
    LONG = "long"
    DOUBLE = "double"
    STRING = "string"
    LIST = "list"
    PASSWORD = "password"
    CLASS = "class"


BOOLEAN = ConfigType.BOOLEAN
INT = ConfigType.INT
SHORT = ConfigType.SHORT
LONG = ConfigType.LONG
DOUBLE = ConfigType.DOUBLE
STRING = ConfigType.STRING
LIST = ConfigType.LIST
PASSWORD = ConfigType.PASSWORD
CLASS = ConfigType.CLASS

# Kafka's dynamic update modes (the "Update Mode" column of the broker config table).
R = "read-only"
B = "per-broker"
C = "cluster-wide"

# Keys Kafka updates dynamically that Odradek keeps read-only: listeners cannot be added or rebound on a
# running Odradek broker, and the security keys configure protocols it does not speak.
READ_ONLY_IN_ODRADEK = frozenset({
    "listeners", "advertised.listeners", "listener.security.protocol.map", "principal.builder.class",
})

# Kafka's synonyms of a broker key (DynamicBrokerConfig.brokerConfigSynonyms): the keys that set the same
# value, highest precedence first.
BROKER_SYNONYMS: dict[str, tuple[str, ...]] = {
    "log.retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "log.roll.ms": ("log.roll.ms", "log.roll.hours"),
    "log.roll.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    "log.flush.interval.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
}

# Key prefixes that Kafka accepts as families of keys; Odradek accepts and ignores them.
NOT_APPLICABLE_PREFIXES: tuple[str, ...] = (
    "listener.name.",  # per-listener overrides: listener.name.<listener>.<key> (the ssl.*/sasl.* ones applied)
    "ssl.",
    "sasl.",
    "rlmm.config.",  # passed through to the remote log metadata manager
    "rsm.config.",  # passed through to the remote storage manager
    "config.providers.",  # config.providers.<name>.class / .param.*
)


class Password:
    """A secret value that never shows itself in ``str``/``repr`` (Kafka prints ``[hidden]``)."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "[hidden]"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)


def invalid_value(name: str, value: object, reason: str | None = None) -> ConfigError:
    """Kafka's ``ConfigException(name, value, message)`` wording."""
    text = f"Invalid value {value} for configuration {name}"
    return ConfigError(f"{text}: {reason}" if reason else text)


_INT_BITS = {INT: 32, SHORT: 16, LONG: 64}
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")
_LIST_SPLIT = re.compile(r"\s*,\s*")


def parse_typed(name: str, ctype: ConfigType, raw: str) -> Any:
    """Parse ``raw`` as Kafka parses a string value of type ``ctype``.

    Returns ``bool``, ``int``, ``float``, ``str``, ``list[str]`` or :class:`Password`.
    """
    text = raw.strip()
    if ctype is BOOLEAN:
        if text.lower() == "true":
            return True
        if text.lower() == "false":
            return False
        raise invalid_value(name, raw, "Expected value to be either true or false")
    if ctype in _INT_BITS:
        bits = _INT_BITS[ctype]
        if _INTEGER.fullmatch(text):
            number = int(text)
            if -(1 << (bits - 1)) <= number < (1 << (bits - 1)):
                return number
        raise invalid_value(name, raw, f"Not a number of type {ctype.name}")
    if ctype is DOUBLE:
        if _DOUBLE.fullmatch(text):
            return float(text.rstrip("fFdD").replace("Infinity", "inf"))
        raise invalid_value(name, raw, "Not a number of type DOUBLE")
    if ctype is LIST:
        return [] if not text else _LIST_SPLIT.split(text)
    if ctype is PASSWORD:
        return Password(text)
    return text  # STRING, CLASS


def format_typed(ctype: ConfigType, value: Any) -> str | None:
    """The string form Kafka reports for a typed value (lists comma-joined, ``None`` kept)."""
    if value is None:
        return None
    if ctype is BOOLEAN:
        return "true" if value else "false"
    if ctype is LIST:
        return ",".join(value)
    if ctype is PASSWORD:
        return value.value if isinstance(value, Password) else str(value)
    if ctype is DOUBLE:
        return repr(float(value))
    return str(value)


class Validator:
    """Checks a parsed value; ``check`` returns Kafka's reason text, or ``None`` when valid."""

    def check(self, value: Any) -> str | None:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Range(Validator):
    """``[lo,...]`` or ``[lo,...,hi]``, optionally with extra allowed values (``... or -1``)."""

    lo: float | None = None
    hi: float | None = None
    also: tuple[float, ...] = ()

    def check(self, value: Any) -> str | None:
        if value is None or value in self.also:
            return None
        if self.lo is not None and value < self.lo:
            if self.also:
                return f"Value must be in {self.describe()}"
            return f"Value must be at least {_num(self.lo)}"
        if self.hi is not None and value > self.hi:
            if self.also:
                return f"Value must be in {self.describe()}"
            return f"Value must be no more than {_num(self.hi)}"
        return None

    def describe(self) -> str:
        lo = "..." if self.lo is None else _num(self.lo)
        text = f"[{lo},...]" if self.hi is None else f"[{lo},...,{_num(self.hi)}]"
        for extra in self.also:
            text += f" or {_num(extra)}"
        return text


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


@dataclass(frozen=True, slots=True, init=False)
class OneOf(Validator):
    """A string that must be one of a fixed set (optionally case-insensitively)."""

    choices: tuple[str, ...]
    case_insensitive: bool

    def __init__(self, *choices: str, case_insensitive: bool = False) -> None:
        object.__setattr__(self, "choices", tuple(choices))
        object.__setattr__(self, "case_insensitive", case_insensitive)

    def check(self, value: Any) -> str | None:
        if value is None:
            return None
        if self.case_insensitive:
            ok = str(value).lower() in {c.lower() for c in self.choices}
        else:
            ok = value in self.choices
        if ok:
            return None
        if self.case_insensitive:
            return f"String must be one of (case insensitive): {', '.join(self.choices)}"
        return f"String must be one of: {', '.join(self.choices)}"

    def describe(self) -> str:
        prefix = "(case insensitive) " if self.case_insensitive else ""
        return f"{prefix}[{', '.join(self.choices)}]"


@dataclass(frozen=True, slots=True, init=False)
class ListOf(Validator):
    """A list whose every element must be one of a fixed set."""

    choices: tuple[str, ...]

    def __init__(self, *choices: str) -> None:
        object.__setattr__(self, "choices", tuple(choices))

    def check(self, value: Any) -> str | None:
        for item in value or ():
            if item not in self.choices:
                return f"String must be one of: {', '.join(self.choices)}"
        return None

    def describe(self) -> str:
        return f"[{', '.join(self.choices)}]"


class NonEmptyList(Validator):
    """A list with at least one element."""

    def check(self, value: Any) -> str | None:
        return "Empty list not allowed" if not value else None

    def describe(self) -> str:
        return "non-empty list"


class HttpUrls(Validator):
    """A list of http:// or https:// URLs, each naming a host."""

    def check(self, value: Any) -> str | None:
        for url in value or ():
            parts = urllib.parse.urlsplit(str(url).strip())
            try:
                port_ok = parts.port is None or parts.port > 0
            except ValueError:
                port_ok = False
            if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
                return f"Not an http:// or https:// URL: {parts.scheme}://{parts.hostname or ''}"
        return None

    def describe(self) -> str:
        return "http:// or https:// URLs"


class NonEmptyString(Validator):
    """A string that is not empty."""

    def check(self, value: Any) -> str | None:
        return "String may not be empty" if value is not None and not str(value) else None

    def describe(self) -> str:
        return "non-empty string"


# Kafka's releases and how many internal versions (IV0, IV1, ...) each had; 0 for releases before
# internal versions. This is the table Kafka's MetadataVersion parses version strings against.
_RELEASES: dict[str, int] = {
    "0.8.0": 0, "0.8.1": 0, "0.8.2": 0, "0.9.0": 0, "0.10.0": 2, "0.10.1": 3, "0.10.2": 1, "0.11.0": 3,
    "1.0": 1, "1.1": 1, "2.0": 2, "2.1": 3, "2.2": 2, "2.3": 2, "2.4": 2, "2.5": 1, "2.6": 1, "2.7": 3,
    "2.8": 2, "3.0": 2, "3.1": 1, "3.2": 1, "3.3": 4, "3.4": 1, "3.5": 3, "3.6": 3, "3.7": 5, "3.8": 1,
    "3.9": 1, "4.0": 4, "4.1": 2,
}
KNOWN_VERSIONS: frozenset[str] = frozenset(
    [*_RELEASES] + [f"{release}-IV{i}" for release, count in _RELEASES.items() for i in range(count)])


def known_version(text: str) -> bool:
    """Whether Kafka's version parser accepts `text`: it keeps the first three dotted parts of a 0.x
    version and the first two of any other (``0.10.0.1`` is ``0.10.0``, ``2.8.1`` is ``2.8``) and looks
    the result up among the releases and their internal versions (``0.10.0-IV1``, ``2.1-IV2``)."""
    parts = text.split(".")
    keep = 3 if text.startswith("0.") else 2
    key = text if keep >= len(parts) else ".".join(parts[:keep])
    return key in KNOWN_VERSIONS


class VersionString(Validator):
    """A Kafka release or internal version such as ``2.8``, ``0.10.0.0``, ``0.10.1`` or ``3.0-IV1``."""

    def check(self, value: Any) -> str | None:
        if value is None or known_version(str(value)):
            return None
        return f"Version {value} is not a valid version (examples: 2.8, 0.10.0.0, 2.1-IV2, 3.0-IV1)"

    def describe(self) -> str:
        return "[0.8.0, ..., 4.1-IV1]"


class ThrottledReplicas(Validator):
    """``*`` or a list of ``partitionId:brokerId`` pairs (replication throttling)."""

    _PAIR = re.compile(r"[0-9]+:[0-9]+")

    def check(self, value: Any) -> str | None:
        items = value or []
        if items == ["*"] or all(self._PAIR.fullmatch(item.strip()) for item in items):
            return None
        return "must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."

    def describe(self) -> str:
        return "[partitionId]:[brokerId],[partitionId]:[brokerId],..."


# Java's Duration.parse (ISO-8601 PnDTnHnMn.nS, case-insensitive): days, then after T hours, minutes and
# seconds with up to nine fraction digits; at least one part, and at least one after a T.
_ISO_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


def iso_duration_seconds(text: str) -> float | None:
    """The duration in seconds, or None when Java's Duration.parse would refuse `text`."""
    m = _ISO_DURATION.fullmatch(text)
    if m is None or not any(m.group(i) for i in (2, 4, 5, 6)) or (m.group(3) and not any(m.group(i) for i in (4, 5, 6))):
        return None
    seconds = float(int(m.group(2) or 0) * 86400 + int(m.group(4) or 0) * 3600 + int(m.group(5) or 0) * 60)
    whole = m.group(6) or "0"
    fraction = float(f"0.{m.group(7)}") if m.group(7) else 0.0
    seconds += int(whole) - fraction if whole.startswith("-") else int(whole) + fraction
    return -seconds if m.group(1) == "-" else seconds


class ShareAutoOffsetReset(Validator):
    """``share.auto.offset.reset``: ``earliest``, ``latest`` or ``by_duration:<ISO-8601 duration>`` (not
    negative), as Kafka's ShareGroupAutoOffsetResetStrategy accepts them (any case)."""

    def check(self, value: Any) -> str | None:
        text = str(value)
        kind, _, duration = text.partition(":")
        if ":" not in text and kind.lower() in ("earliest", "latest"):
            return None
        if kind.lower() == "by_duration" and duration.count(":") == 0:
            seconds = iso_duration_seconds(duration)
            if seconds is not None and seconds >= 0:
                return None
        return (f"Invalid value `{text}` for configuration share.auto.offset.reset. The value must be either "
                "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'.")

    def describe(self) -> str:
        return "[earliest, latest, by_duration:PnDTnHnMn.nS]"


NON_EMPTY_LIST = NonEmptyList()
NON_EMPTY_STRING = NonEmptyString()
VERSION = VersionString()
THROTTLED_REPLICAS = ThrottledReplicas()


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One documented configuration key.

    ``default`` is the documented default as text (``None``: Kafka has no default; the few
    defaults of Odradek's own are commented in the catalogue).  ``mode`` is
    Kafka's dynamic update mode for broker keys.  ``applied`` says whether Odradek acts on the key;
    a key that is not applied is accepted and ignored with a warning.  ``deprecated`` holds a note
    for keys that Kafka deprecated or removed.  ``server_default`` (topic configs only) names the
    broker property that supplies the topic-level default.
    """

    name: str
    type: ConfigType
    default: str | None
    valid: Validator | None = None
    mode: str = R
    applied: bool = False
    deprecated: str | None = None
    server_default: str | None = None

    @property
    def dynamic(self) -> bool:
        """Whether AlterConfigs may change the key on a running broker (KIP-226): Kafka's per-broker and
        cluster-wide keys, less the listener keys and the security keys Odradek builds its listeners from
        at start-up (every ``ssl.*`` key, and the ``sasl.*`` keys it applies: mechanisms, JAAS), which stay
        read-only. The other ``sasl.*`` keys (Kerberos, login refresh) are stored, described and ignored,
        as Kafka's other keys with no meaning here."""
        if self.mode == R or self.name in READ_ONLY_IN_ODRADEK or self.name.startswith("ssl."):
            return False
        return not (self.name.startswith("sasl.") and self.applied)

    @property
    def per_broker_only(self) -> bool:
        """Kafka's "per-broker" update mode: the key may be set for one broker, never as the cluster
        default."""
        return self.mode == B

    @property
    def sensitive(self) -> bool:
        """Whether the value is secret (type ``password``): never logged nor described."""
        return self.type is PASSWORD

    def parse(self, raw: str) -> Any:
        """Parse and validate ``raw``; raises :class:`ConfigError` in Kafka's wording."""
        value = parse_typed(self.name, self.type, raw)
        if self.valid is not None:
            reason = self.valid.check(value)
            if reason is not None:
                raise invalid_value(self.name, raw.strip(), reason)
        return value

    @property
    def default_value(self) -> Any:
        """The typed default (``None`` when Kafka documents no default)."""
        if self.default is None:
            return None
        return parse_typed(self.name, self.type, self.default)

    def format(self, value: Any) -> str | None:
        """The string form of a typed value of this key."""
        return format_typed(self.type, value)

    def documentation(self, level: str = "broker") -> str:
        """What DescribeConfigs v3+ sends as the key's documentation when asked (include_documentation):
        the catalogue's facts about it, in the columns of Kafka's config tables (type, default, valid
        values, update mode; `level` "topic" or "group": a config set per topic or per group), then where
        a topic or group config's default comes from, whether Odradek acts on the key, and its deprecation
        note."""
        parts = [f"Type: {self.type.value}."]
        if self.sensitive:
            parts.append("Default: [hidden].")
        else:
            parts.append(f"Default: {self.default}." if self.default is not None else "Default: null.")
        if self.valid is not None:
            parts.append(f"Valid values: {self.valid.describe()}.")
        if level != "broker":
            parts.append(f"{level.capitalize()}-level config.")
            if self.server_default is not None:
                parts.append(f"The broker config {self.server_default} sets its default.")
        else:
            mode = self.mode if self.dynamic else R
            parts.append(f"Update mode: {mode}.")
        if not self.applied:
            parts.append("Accepted and ignored by Odradek.")
        if self.deprecated is not None:
            parts.append(f"Deprecated: {self.deprecated}.")
        return " ".join(parts)


def _key(
    name: str,
    ctype: ConfigType,
    default: str | None,
    *,
    valid: Validator | None = None,
    mode: str = R,
    applied: bool = False,
    deprecated: str | None = None,
    server_default: str | None = None,
) -> ConfigKey:
    return ConfigKey(name, ctype, default, valid, mode, applied, deprecated, server_default)


def _catalogue(*keys: ConfigKey) -> dict[str, ConfigKey]:
    table = {key.name: key for key in keys}
    assert len(table) == len(keys), "duplicate key in catalogue"
    return table


# ---------------------------------------------------------------------------------------------
# The broker catalogue.  Names, types, defaults, valid values and update modes are Kafka's
# (3.9 documentation; keys that only 4.x documents, and keys that only 0.8-2.x brokers knew,
# added).  "applied" and the deprecation notes are Odradek's, and so are the exceptions commented
# at their keys.
# ---------------------------------------------------------------------------------------------

# fmt: off
BROKER_KEYS: dict[str, ConfigKey] = _catalogue(
    _key("add.partitions.to.txn.retry.backoff.max.ms", INT, "100", valid=Range(0)),
    _key("add.partitions.to.txn.retry.backoff.ms", INT, "20", valid=Range(1)),
    _key("advertised.host.name", STRING, None, deprecated="removed in Kafka 3.0; use advertised.listeners"),
    _key("advertised.listeners", STRING, None, mode=B, applied=True),
    _key("advertised.port", INT, None, deprecated="removed in Kafka 3.0; use advertised.listeners"),
    _key("allow.everyone.if.no.acl.found", BOOLEAN, "false", applied=True),
    _key("alter.config.policy.class.name", CLASS, None),
    _key("alter.log.dirs.replication.quota.window.num", INT, "11", valid=Range(1)),
    _key("alter.log.dirs.replication.quota.window.size.seconds", INT, "1", valid=Range(1)),
    _key("authorizer.class.name", STRING, "", applied=True),
    _key("auto.create.topics.enable", BOOLEAN, "true", applied=True),
    _key("auto.include.jmx.reporter", BOOLEAN, "true", deprecated="deprecated, removed in Kafka 4.0"),
    _key("auto.leader.rebalance.enable", BOOLEAN, "true", applied=True),
    _key("background.threads", INT, "10", valid=Range(1), mode=C),
    _key("broker.heartbeat.interval.ms", INT, "2000"),
    _key("broker.id", INT, "-1", applied=True),
    _key("broker.id.generation.enable", BOOLEAN, "true", applied=True),
    _key("broker.rack", STRING, None, applied=True),
    _key("broker.session.timeout.ms", INT, "9000"),
    _key("client.quota.callback.class", CLASS, None),
    _key("compression.gzip.level", INT, "-1", valid=Range(1, 9, also=(-1,)), mode=C, applied=True),
    _key("compression.lz4.level", INT, "9", valid=Range(1, 17), mode=C, applied=True),
    _key("compression.type", STRING, "producer", valid=OneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), mode=C, applied=True),
    _key("compression.zstd.level", INT, "3", valid=Range(-131072, 22), mode=C, applied=True),
    _key("config.providers", LIST, ""),
    _key("connection.failed.authentication.delay.ms", INT, "100", valid=Range(0), applied=True),
    # Confluent Server's, for Schema ID Validation (the topic configs confluent.key/value.schema.validation): the
    # schema registry's URLs (comma separated; the first that answers is used). Unset while the broker runs the
    # registry itself (schema_registry_api): that one is consulted in process.
    _key("confluent.schema.registry.url", LIST, None, valid=HttpUrls(), applied=True),
    # ... and how the broker authenticates to it (HTTP basic auth): credentials in the URLs (user:password@host),
    # or confluent.basic.auth.user.info (user:password)
    _key("confluent.basic.auth.credentials.source", STRING, "URL", valid=OneOf("URL", "USER_INFO"), applied=True),
    _key("confluent.basic.auth.user.info", PASSWORD, None, applied=True),
    _key("connections.max.idle.ms", LONG, "600000", applied=True),
    _key("connections.max.reauth.ms", LONG, "0", applied=True),
    # Odradek's own (Kafka has no such key: its only bound is connections.max.idle.ms): how long a
    # connection on a SASL listener may stay unauthenticated (from its TLS handshake's end, or its
    # accept); one that has not completed SASL authentication by then is closed, its place freed.
    # -1: no deadline.
    _key("connections.max.unauthenticated.ms", LONG, "10000", valid=Range(1, also=(-1,)), applied=True),
    _key("control.plane.listener.name", STRING, None),
    _key("controlled.shutdown.enable", BOOLEAN, "true", applied=True),
    _key("controlled.shutdown.max.retries", INT, "3", deprecated="ZooKeeper-mode only; removed in Kafka 4.0"),
    _key("controlled.shutdown.retry.backoff.ms", LONG, "5000", deprecated="ZooKeeper-mode only; removed in Kafka 4.0"),
    _key("controller.listener.names", STRING, None),
    _key("controller.message.queue.size", INT, "10", valid=Range(1), deprecated="removed in Kafka 0.9"),
    _key("controller.quorum.append.linger.ms", INT, "25"),
    _key("controller.quorum.bootstrap.servers", LIST, "", valid=NON_EMPTY_LIST),
    _key("controller.quorum.election.backoff.max.ms", INT, "1000"),
    _key("controller.quorum.election.timeout.ms", INT, "1000"),
    _key("controller.quorum.fetch.timeout.ms", INT, "2000"),
    _key("controller.quorum.request.timeout.ms", INT, "2000"),
    _key("controller.quorum.retry.backoff.ms", INT, "20"),
    _key("controller.quorum.voters", LIST, "", valid=NON_EMPTY_LIST),
    _key("controller.quota.window.num", INT, "11", valid=Range(1)),
    _key("controller.quota.window.size.seconds", INT, "1", valid=Range(1)),
    _key("controller.socket.timeout.ms", INT, "30000"),
    _key("create.topic.policy.class.name", CLASS, None),
    _key("default.replication.factor", INT, "1", applied=True),
    _key("delegation.token.expiry.check.interval.ms", LONG, "3600000", valid=Range(1)),
    _key("delegation.token.expiry.time.ms", LONG, "86400000", valid=Range(1)),
    _key("delegation.token.master.key", PASSWORD, None, deprecated="deprecated; use delegation.token.secret.key"),
    _key("delegation.token.max.lifetime.ms", LONG, "604800000", valid=Range(1)),
    _key("delegation.token.secret.key", PASSWORD, None),
    _key("delete.records.purgatory.purge.interval.requests", INT, "1"),
    _key("delete.topic.enable", BOOLEAN, "true", applied=True),
    _key("early.start.listeners", STRING, None),
    _key("eligible.leader.replicas.enable", BOOLEAN, "false"),
    _key("fetch.max.bytes", INT, "57671680", valid=Range(1024), applied=True),
    _key("fetch.purgatory.purge.interval.requests", INT, "1000"),
    _key("group.consumer.assignors", LIST, "org.apache.kafka.coordinator.group.assignor.UniformAssignor,org.apache.kafka.coordinator.group.assignor.RangeAssignor", applied=True),
    _key("group.consumer.heartbeat.interval.ms", INT, "5000", valid=Range(1), applied=True),
    _key("group.consumer.max.heartbeat.interval.ms", INT, "15000", valid=Range(1), applied=True),
    _key("group.consumer.max.session.timeout.ms", INT, "60000", valid=Range(1), applied=True),
    _key("group.consumer.max.size", INT, "2147483647", valid=Range(1), applied=True),
    _key("group.consumer.migration.policy", STRING, "bidirectional", valid=OneOf("DISABLED", "DOWNGRADE", "UPGRADE", "BIDIRECTIONAL", case_insensitive=True), applied=True),
    _key("group.consumer.min.heartbeat.interval.ms", INT, "5000", valid=Range(1), applied=True),
    _key("group.consumer.min.session.timeout.ms", INT, "45000", valid=Range(1), applied=True),
    _key("group.consumer.session.timeout.ms", INT, "45000", valid=Range(1), applied=True),
    _key("group.coordinator.append.linger.ms", INT, "10", valid=Range(0)),
    _key("group.coordinator.rebalance.protocols", LIST, "classic,consumer,streams", valid=ListOf("consumer", "classic", "share", "streams", "unknown"), applied=True),
    _key("group.coordinator.threads", INT, "1", valid=Range(1)),
    _key("group.initial.rebalance.delay.ms", INT, "3000", applied=True),
    _key("group.max.session.timeout.ms", INT, "1800000", applied=True),
    _key("group.max.size", INT, "2147483647", valid=Range(1), applied=True),
    _key("group.min.session.timeout.ms", INT, "6000", applied=True),
    _key("group.share.assignors", LIST, "simple"),
    _key("group.share.delivery.count.limit", INT, "5", valid=Range(2, 10), applied=True),
    _key("group.share.heartbeat.interval.ms", INT, "5000", valid=Range(1), applied=True),
    _key("group.share.max.groups", SHORT, "10", valid=Range(1, 100)),
    _key("group.share.max.heartbeat.interval.ms", INT, "15000", valid=Range(1), applied=True),
    _key("group.share.max.record.lock.duration.ms", INT, "60000", valid=Range(30000, 3600000), applied=True),
    _key("group.share.max.session.timeout.ms", INT, "60000", valid=Range(1), applied=True),
    _key("group.share.max.share.sessions", INT, "2000", valid=Range(1), applied=True),
    _key("group.share.max.size", SHORT, "200", valid=Range(10, 1000), applied=True),
    _key("group.share.min.heartbeat.interval.ms", INT, "5000", valid=Range(1), applied=True),
    _key("group.share.min.record.lock.duration.ms", INT, "15000", valid=Range(1000, 30000), applied=True),
    _key("group.share.min.session.timeout.ms", INT, "45000", valid=Range(1), applied=True),
    _key("group.share.partition.max.record.locks", INT, "2000", valid=Range(100, 10000), applied=True),
    _key("group.share.persister.class.name", STRING, "org.apache.kafka.server.share.persister.DefaultStatePersister"),
    _key("group.share.record.lock.duration.ms", INT, "30000", valid=Range(1000, 60000), applied=True),
    _key("group.share.session.timeout.ms", INT, "45000", valid=Range(1), applied=True),
    _key("group.streams.heartbeat.interval.ms", INT, "5000", valid=Range(1), applied=True),
    _key("group.streams.initial.rebalance.delay.ms", INT, "3000", valid=Range(0), applied=True),
    _key("group.streams.max.heartbeat.interval.ms", INT, "15000", valid=Range(1), applied=True),
    _key("group.streams.max.session.timeout.ms", INT, "60000", valid=Range(1), applied=True),
    _key("group.streams.max.size", INT, "2147483647", valid=Range(1), applied=True),
    _key("group.streams.max.standby.replicas", INT, "2", valid=Range(0), applied=True),
    _key("group.streams.min.heartbeat.interval.ms", INT, "5000", valid=Range(1), applied=True),
    _key("group.streams.min.session.timeout.ms", INT, "45000", valid=Range(1), applied=True),
    _key("group.streams.num.standby.replicas", INT, "0", valid=Range(0), applied=True),
    _key("group.streams.session.timeout.ms", INT, "45000", valid=Range(1), applied=True),
    _key("group.streams.topology.description.plugin.class", CLASS, None),
    _key("host.name", STRING, "", deprecated="removed in Kafka 3.0; use listeners"),
    _key("initial.broker.registration.timeout.ms", INT, "60000"),
    _key("inter.broker.listener.name", STRING, None, applied=True),
    _key("inter.broker.protocol.version", STRING, "3.9-IV0", valid=VERSION, deprecated="removed in Kafka 4.0 (replaced by metadata.version)"),
    _key("kafka.metrics.polling.interval.secs", INT, "10", valid=Range(1)),
    _key("kafka.metrics.reporters", LIST, ""),
    _key("leader.imbalance.check.interval.seconds", LONG, "300", valid=Range(1), applied=True),
    _key("leader.imbalance.per.broker.percentage", INT, "10", applied=True),
    _key("listener.security.protocol.map", STRING, "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT", mode=B, applied=True),
    _key("listeners", STRING, "PLAINTEXT://:9092", mode=B, applied=True),
    _key("log.cleaner.backoff.ms", LONG, "15000", valid=Range(0), mode=C, applied=True),
    _key("log.cleaner.dedupe.buffer.size", LONG, "134217728", mode=C, applied=True),
    _key("log.cleaner.delete.retention.ms", LONG, "86400000", valid=Range(0), mode=C, applied=True),
    _key("log.cleaner.enable", BOOLEAN, "true", applied=True),
    _key("log.cleaner.io.buffer.load.factor", DOUBLE, "0.9", mode=C),
    _key("log.cleaner.io.buffer.size", INT, "524288", valid=Range(0), mode=C, applied=True),
    _key("log.cleaner.io.max.bytes.per.second", DOUBLE, "1.7976931348623157E308", mode=C),
    _key("log.cleaner.max.compaction.lag.ms", LONG, "9223372036854775807", valid=Range(1), mode=C, applied=True),
    _key("log.cleaner.min.cleanable.ratio", DOUBLE, "0.5", valid=Range(0, 1), mode=C, applied=True),
    _key("log.cleaner.min.compaction.lag.ms", LONG, "0", valid=Range(0), mode=C, applied=True),
    _key("log.cleaner.threads", INT, "1", valid=Range(0), mode=C, applied=True),
    _key("log.cleanup.interval.mins", INT, "10", valid=Range(1), deprecated="renamed in Kafka 0.8.1 to log.retention.check.interval.ms"),
    _key("log.cleanup.policy", LIST, "delete", valid=ListOf("compact", "delete"), mode=C, applied=True),
    _key("log.dir", STRING, "/tmp/kafka-logs", applied=True),
    _key("log.dir.failure.timeout.ms", LONG, "30000", valid=Range(1)),
    _key("log.dirs", STRING, None, applied=True),
    _key("log.flush.interval.messages", LONG, "9223372036854775807", valid=Range(1), mode=C, applied=True),
    _key("log.flush.interval.ms", LONG, None, mode=C, applied=True),
    _key("log.flush.offset.checkpoint.interval.ms", INT, "60000", valid=Range(0), applied=True),
    _key("log.flush.scheduler.interval.ms", LONG, "9223372036854775807", applied=True),
    _key("log.flush.start.offset.checkpoint.interval.ms", INT, "60000", valid=Range(0), applied=True),
    _key("log.index.interval.bytes", INT, "4096", valid=Range(0), mode=C, applied=True),
    _key("log.index.size.max.bytes", INT, "10485760", valid=Range(4), mode=C, applied=True),
    _key("log.local.retention.bytes", LONG, "-2", valid=Range(-2)),
    _key("log.local.retention.ms", LONG, "-2", valid=Range(-2)),
    _key("log.message.downconversion.enable", BOOLEAN, "true", mode=C, deprecated="deprecated, removed in Kafka 4.0"),
    _key("log.message.format.version", STRING, "3.0-IV1", valid=VERSION, deprecated="deprecated since Kafka 3.0, removed in 4.0; record batches are always v2"),
    _key("log.message.timestamp.after.max.ms", LONG, "9223372036854775807", valid=Range(0), mode=C, applied=True),
    _key("log.message.timestamp.before.max.ms", LONG, "9223372036854775807", valid=Range(0), mode=C, applied=True),
    _key("log.message.timestamp.difference.max.ms", LONG, "9223372036854775807", valid=Range(0), mode=C, applied=True, deprecated="deprecated since Kafka 3.6; use log.message.timestamp.before.max.ms and log.message.timestamp.after.max.ms"),
    _key("log.message.timestamp.type", STRING, "CreateTime", valid=OneOf("CreateTime", "LogAppendTime"), mode=C, applied=True),
    _key("log.preallocate", BOOLEAN, "false", mode=C),
    _key("log.retention.bytes", LONG, "-1", mode=C, applied=True),
    _key("log.retention.check.interval.ms", LONG, "300000", valid=Range(1), applied=True),
    _key("log.retention.hours", INT, "168", applied=True),
    _key("log.retention.minutes", INT, None, applied=True),
    _key("log.retention.ms", LONG, None, mode=C, applied=True),
    _key("log.roll.hours", INT, "168", valid=Range(1), applied=True),
    _key("log.roll.jitter.hours", INT, "0", valid=Range(0), applied=True),
    _key("log.roll.jitter.ms", LONG, None, mode=C, applied=True),
    _key("log.roll.ms", LONG, None, mode=C, applied=True),
    _key("log.segment.bytes", INT, "1073741824", valid=Range(14), mode=C, applied=True),
    _key("log.segment.delete.delay.ms", LONG, "60000", valid=Range(0), mode=C),
    _key("max.connection.creation.rate", INT, "2147483647", valid=Range(0), mode=C, applied=True),
    # KIP-578's names (proposed for Kafka, not in its documentation): the most partition replicas one
    # broker may host, and the most partitions the cluster may hold. CreateTopics, CreatePartitions and
    # auto-creation that would pass them are refused before any work. 100,000 per broker leaves room
    # for the 50,000-partition benchmark at under 20 KB of memory each; 200,000 in the cluster is the
    # ceiling commonly quoted for ZooKeeper-mode Kafka.
    _key("max.broker.partitions", INT, "100000", valid=Range(1), mode=C, applied=True),
    # Odradek's own: HOST:PORT of the broker's HTTP endpoint (GET /metrics in Prometheus' format,
    # GET /v1/status/ready); off when unset. Kafka exposes JMX instead.
    _key("http.listener", STRING, None, applied=True),
    # Odradek's own, for the HTTP endpoint: the Host names it answers besides loopback names, IP
    # addresses, this machine's name and the advertised listeners' hosts (the console's DNS-rebinding
    # defence); a secret that, when set, every request must present (Authorization: Bearer <secret>, or
    # Basic with it as the password); and how many connections it holds at once (more are closed at
    # accept; each has http.listener.request.timeout.ms to send its request and read the answer).
    _key("http.listener.allowed.hosts", LIST, "", applied=True),
    _key("http.listener.auth.token", PASSWORD, None, applied=True),
    _key("http.listener.max.connections", INT, "64", valid=Range(1), applied=True),
    _key("http.listener.request.timeout.ms", INT, "10000", valid=Range(1), applied=True),
    # Odradek's own, named after Redpanda's `schema_registry_api` listener: the URLs (http://HOST:PORT, comma
    # separated) on which `odradek server-start` also runs a schema registry with Confluent's REST API, kept
    # in this cluster's `_schemas` topic through the broker's first PLAINTEXT listener; off when unset.
    _key("schema_registry_api", STRING, None, applied=True),
    _key("max.connections", INT, "2147483647", valid=Range(0), mode=C, applied=True),
    _key("max.connections.per.ip", INT, "2147483647", valid=Range(0), mode=C, applied=True),
    _key("max.connections.per.ip.overrides", STRING, "", mode=C, applied=True),
    _key("max.incremental.fetch.session.cache.slots", INT, "1000", valid=Range(0), applied=True),
    _key("max.request.partition.size.limit", INT, "2000", valid=Range(1)),
    _key("max.partitions", INT, "200000", valid=Range(1), mode=C, applied=True),
    _key("message.max.bytes", INT, "1048588", valid=Range(0), mode=C, applied=True),
    _key("metadata.log.dir", STRING, None),
    _key("metadata.log.max.record.bytes.between.snapshots", LONG, "20971520", valid=Range(1)),
    _key("metadata.log.max.snapshot.interval.ms", LONG, "3600000", valid=Range(0)),
    _key("metadata.log.segment.bytes", INT, "1073741824", valid=Range(12)),
    _key("metadata.log.segment.ms", LONG, "604800000"),
    _key("metadata.max.idle.interval.ms", INT, "500", valid=Range(0)),
    _key("metadata.max.retention.bytes", LONG, "104857600"),
    _key("metadata.max.retention.ms", LONG, "604800000"),
    _key("metric.reporters", LIST, "", mode=C),
    _key("metrics.num.samples", INT, "2", valid=Range(1)),
    _key("metrics.recording.level", STRING, "INFO"),
    _key("metrics.sample.window.ms", LONG, "30000", valid=Range(1)),
    _key("min.insync.replicas", INT, "1", valid=Range(1), mode=C, applied=True),
    _key("node.id", INT, "-1", applied=True),
    _key("num.io.threads", INT, "8", valid=Range(1), mode=C),
    _key("num.network.threads", INT, "3", valid=Range(1), mode=C),
    _key("num.partitions", INT, "1", valid=Range(1), applied=True),
    _key("num.recovery.threads.per.data.dir", INT, "1", valid=Range(1), mode=C),
    _key("num.replica.alter.log.dirs.threads", INT, None),
    _key("num.replica.fetchers", INT, "1", mode=C, applied=True),
    _key("offset.metadata.max.bytes", INT, "4096", applied=True),
    _key("offsets.commit.required.acks", SHORT, "-1", deprecated="deprecated since Kafka 3.8, removed in 4.0"),
    _key("offsets.commit.timeout.ms", INT, "5000", valid=Range(1), applied=True),
    _key("offsets.load.buffer.size", INT, "5242880", valid=Range(1)),
    _key("offsets.retention.check.interval.ms", LONG, "600000", valid=Range(1), applied=True),
    _key("offsets.retention.minutes", INT, "10080", valid=Range(1), applied=True),
    _key("offsets.topic.compression.codec", INT, "0", deprecated="legacy numeric codec id; the offsets topic is written uncompressed"),
    _key("offsets.topic.num.partitions", INT, "50", valid=Range(1), applied=True),
    _key("offsets.topic.replication.factor", SHORT, "3", valid=Range(1), applied=True),
    _key("offsets.topic.segment.bytes", INT, "104857600", valid=Range(1), applied=True),
    _key("password.encoder.cipher.algorithm", STRING, "AES/CBC/PKCS5Padding"),
    _key("password.encoder.iterations", INT, "4096", valid=Range(1024)),
    _key("password.encoder.key.length", INT, "128", valid=Range(8)),
    _key("password.encoder.keyfactory.algorithm", STRING, None),
    _key("password.encoder.old.secret", PASSWORD, None),
    _key("password.encoder.secret", PASSWORD, None),
    _key("port", INT, "9092", deprecated="removed in Kafka 3.0; use listeners"),
    _key("principal.builder.class", CLASS, "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder", mode=B),
    _key("process.roles", LIST, "", valid=ListOf("broker", "controller")),
    _key("producer.id.expiration.ms", INT, "86400000", valid=Range(1), mode=C),
    _key("producer.purgatory.purge.interval.requests", INT, "1000"),
    # Kafka's default is -1 (no limit). Odradek's is 500 MiB: an unbounded queue lets a few clients
    # sending at full speed (or a flood of large frames) grow the broker until the kernel kills it,
    # and 500 MiB still holds five maximum-size requests (socket.request.max.bytes) in flight.
    _key("queued.max.request.bytes", LONG, "524288000", valid=Range(1, also=(-1,)), applied=True),
    # not applied: requests waiting are bounded per connection (64) and in bytes (queued.max.request.bytes)
    _key("queued.max.requests", INT, "500", valid=Range(1)),
    _key("quota.consumer.default", LONG, "9223372036854775807", valid=Range(1), deprecated="removed in Kafka 3.0; use default client quotas"),
    _key("quota.producer.default", LONG, "9223372036854775807", valid=Range(1), deprecated="removed in Kafka 3.0; use default client quotas"),
    _key("quota.window.num", INT, "11", valid=Range(1)),
    _key("quota.window.size.seconds", INT, "1", valid=Range(1)),
    _key("remote.fetch.max.wait.ms", INT, "500", valid=Range(1)),
    _key("remote.list.offsets.request.timeout.ms", LONG, "30000", valid=Range(1), mode=C),
    _key("remote.log.index.file.cache.total.size.bytes", LONG, "1073741824", valid=Range(1)),
    _key("remote.log.manager.copier.thread.pool.size", INT, "-1", valid=Range(1, also=(-1,))),
    _key("remote.log.manager.copy.max.bytes.per.second", LONG, "9223372036854775807", valid=Range(1)),
    _key("remote.log.manager.copy.quota.window.num", INT, "11", valid=Range(1)),
    _key("remote.log.manager.copy.quota.window.size.seconds", INT, "1", valid=Range(1)),
    _key("remote.log.manager.expiration.thread.pool.size", INT, "-1", valid=Range(1, also=(-1,))),
    _key("remote.log.manager.fetch.max.bytes.per.second", LONG, "9223372036854775807", valid=Range(1)),
    _key("remote.log.manager.fetch.quota.window.num", INT, "11", valid=Range(1)),
    _key("remote.log.manager.fetch.quota.window.size.seconds", INT, "1", valid=Range(1)),
    _key("remote.log.manager.task.interval.ms", LONG, "30000", valid=Range(1)),
    _key("remote.log.manager.thread.pool.size", INT, "10", valid=Range(1)),
    _key("remote.log.metadata.consume.wait.ms", LONG, "120000", valid=Range(0)),
    _key("remote.log.metadata.custom.metadata.max.bytes", INT, "128", valid=Range(0)),
    _key("remote.log.metadata.initialization.retry.interval.ms", LONG, "100", valid=Range(0)),
    _key("remote.log.metadata.initialization.retry.max.timeout.ms", LONG, "120000", valid=Range(0)),
    _key("remote.log.metadata.manager.class.name", STRING, "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager", valid=NON_EMPTY_STRING),
    _key("remote.log.metadata.manager.class.path", STRING, None),
    _key("remote.log.metadata.manager.impl.prefix", STRING, "rlmm.config.", valid=NON_EMPTY_STRING),
    _key("remote.log.metadata.manager.listener.name", STRING, None, valid=NON_EMPTY_STRING),
    _key("remote.log.metadata.topic.num.partitions", INT, "50", valid=Range(1)),
    _key("remote.log.metadata.topic.replication.factor", SHORT, "3", valid=Range(1)),
    _key("remote.log.metadata.topic.retention.ms", LONG, "-1"),
    _key("remote.log.reader.max.pending.tasks", INT, "100", valid=Range(1)),
    _key("remote.log.reader.threads", INT, "10", valid=Range(1)),
    _key("remote.log.storage.manager.class.name", STRING, None, valid=NON_EMPTY_STRING),
    _key("remote.log.storage.manager.class.path", STRING, None),
    _key("remote.log.storage.manager.impl.prefix", STRING, "rsm.config.", valid=NON_EMPTY_STRING),
    _key("remote.log.storage.system.enable", BOOLEAN, "false"),
    _key("replica.fetch.backoff.ms", INT, "1000", valid=Range(0), applied=True),
    _key("replica.fetch.max.bytes", INT, "1048576", valid=Range(0), applied=True),
    _key("replica.fetch.min.bytes", INT, "1", applied=True),
    _key("replica.fetch.response.max.bytes", INT, "10485760", valid=Range(0), applied=True),
    _key("replica.fetch.wait.max.ms", INT, "500", applied=True),
    _key("replica.high.watermark.checkpoint.interval.ms", LONG, "5000", applied=True),
    _key("replica.lag.max.messages", LONG, "4000", valid=Range(0), deprecated="removed in Kafka 0.9; ISR membership is time-based, see replica.lag.time.max.ms"),
    _key("replica.lag.time.max.ms", LONG, "30000", applied=True),
    _key("replica.selector.class", STRING, None),
    _key("replica.socket.receive.buffer.bytes", INT, "65536"),
    _key("replica.socket.timeout.ms", INT, "30000", applied=True),
    _key("replication.quota.window.num", INT, "11", valid=Range(1)),
    _key("replication.quota.window.size.seconds", INT, "1", valid=Range(1)),
    _key("request.timeout.ms", INT, "30000"),
    _key("reserved.broker.max.id", INT, "1000", valid=Range(0), applied=True),
    _key("sasl.client.callback.handler.class", CLASS, None),
    _key("sasl.enabled.mechanisms", LIST, "GSSAPI", mode=B, applied=True),
    _key("sasl.jaas.config", PASSWORD, None, mode=B, applied=True),
    _key("sasl.kerberos.kinit.cmd", STRING, "/usr/bin/kinit", mode=B),
    _key("sasl.kerberos.min.time.before.relogin", LONG, "60000", mode=B),
    _key("sasl.kerberos.principal.to.local.rules", LIST, "DEFAULT", mode=B),
    _key("sasl.kerberos.service.name", STRING, None, mode=B),
    _key("sasl.kerberos.ticket.renew.jitter", DOUBLE, "0.05", mode=B),
    _key("sasl.kerberos.ticket.renew.window.factor", DOUBLE, "0.8", mode=B),
    _key("sasl.login.callback.handler.class", CLASS, None),
    _key("sasl.login.class", CLASS, None),
    _key("sasl.login.connect.timeout.ms", INT, None),
    _key("sasl.login.read.timeout.ms", INT, None),
    _key("sasl.login.refresh.buffer.seconds", SHORT, "300", mode=B),
    _key("sasl.login.refresh.min.period.seconds", SHORT, "60", mode=B),
    _key("sasl.login.refresh.window.factor", DOUBLE, "0.8", mode=B),
    _key("sasl.login.refresh.window.jitter", DOUBLE, "0.05", mode=B),
    _key("sasl.login.retry.backoff.max.ms", LONG, "10000"),
    _key("sasl.login.retry.backoff.ms", LONG, "100"),
    _key("sasl.mechanism.controller.protocol", STRING, "GSSAPI"),
    _key("sasl.mechanism.inter.broker.protocol", STRING, "GSSAPI", mode=B),
    _key("sasl.oauthbearer.assertion.algorithm", STRING, "RS256", valid=OneOf("ES256", "RS256", case_insensitive=True)),
    _key("sasl.oauthbearer.assertion.claim.aud", STRING, None),
    _key("sasl.oauthbearer.assertion.claim.exp.seconds", INT, "300", valid=Range(0, 86400)),
    _key("sasl.oauthbearer.assertion.claim.iss", STRING, None),
    _key("sasl.oauthbearer.assertion.claim.jti.include", BOOLEAN, "false"),
    _key("sasl.oauthbearer.assertion.claim.nbf.seconds", INT, "60", valid=Range(0, 3600)),
    _key("sasl.oauthbearer.assertion.claim.sub", STRING, None),
    _key("sasl.oauthbearer.assertion.file", STRING, None),
    _key("sasl.oauthbearer.assertion.private.key.file", STRING, None),
    _key("sasl.oauthbearer.assertion.private.key.passphrase", PASSWORD, None),
    _key("sasl.oauthbearer.assertion.template.file", STRING, None),
    _key("sasl.oauthbearer.client.credentials.client.id", STRING, None),
    _key("sasl.oauthbearer.client.credentials.client.secret", PASSWORD, None),
    _key("sasl.oauthbearer.clock.skew.seconds", INT, "30"),
    _key("sasl.oauthbearer.expected.audience", LIST, None),
    _key("sasl.oauthbearer.expected.issuer", STRING, None),
    _key("sasl.oauthbearer.jwks.endpoint.refresh.ms", LONG, "3600000"),
    _key("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", LONG, "10000"),
    _key("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", LONG, "100"),
    _key("sasl.oauthbearer.jwks.endpoint.url", STRING, None),
    _key("sasl.oauthbearer.jwt.retriever.class", CLASS, "org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever"),
    _key("sasl.oauthbearer.jwt.validator.class", CLASS, "org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator"),
    _key("sasl.oauthbearer.scope", STRING, None),
    _key("sasl.oauthbearer.scope.claim.name", STRING, "scope"),
    _key("sasl.oauthbearer.sub.claim.name", STRING, "sub"),
    _key("sasl.oauthbearer.token.endpoint.url", STRING, None),
    _key("sasl.server.callback.handler.class", CLASS, None),
    _key("sasl.server.max.receive.size", INT, "524288", valid=Range(1), applied=True),
    _key("security.inter.broker.protocol", STRING, "PLAINTEXT", valid=OneOf("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"), applied=True),
    _key("security.providers", STRING, None),
    _key("share.coordinator.append.linger.ms", INT, "5", valid=Range(0)),
    _key("share.coordinator.load.buffer.size", INT, "5242880", valid=Range(1), applied=True),
    _key("share.coordinator.snapshot.update.records.per.snapshot", INT, "500", valid=Range(0), applied=True),
    _key("share.coordinator.state.topic.compression.codec", INT, "0"),
    _key("share.coordinator.state.topic.min.isr", SHORT, "2", valid=Range(1), applied=True),
    _key("share.coordinator.state.topic.num.partitions", INT, "50", valid=Range(1), applied=True),
    _key("share.coordinator.state.topic.replication.factor", SHORT, "3", valid=Range(1), applied=True),
    _key("share.coordinator.state.topic.segment.bytes", INT, "104857600", valid=Range(1), applied=True),
    _key("share.coordinator.threads", INT, "1", valid=Range(1)),
    _key("share.coordinator.write.timeout.ms", INT, "5000", valid=Range(1), applied=True),
    _key("share.fetch.purgatory.purge.interval.requests", INT, "1000"),
    _key("socket.connection.setup.timeout.max.ms", LONG, "30000"),
    _key("socket.connection.setup.timeout.ms", LONG, "10000"),
    _key("socket.listen.backlog.size", INT, "50", valid=Range(1)),
    _key("socket.receive.buffer.bytes", INT, "102400"),
    _key("socket.request.max.bytes", INT, "104857600", valid=Range(1), applied=True),
    _key("socket.send.buffer.bytes", INT, "102400"),
    _key("ssl.allow.dn.changes", BOOLEAN, "false"),
    _key("ssl.allow.san.changes", BOOLEAN, "false"),
    _key("ssl.cipher.suites", LIST, "", mode=B, applied=True),
    _key("ssl.client.auth", STRING, "none", valid=OneOf("required", "requested", "none"), mode=B, applied=True),
    _key("ssl.enabled.protocols", LIST, "TLSv1.2,TLSv1.3", mode=B, applied=True),
    _key("ssl.endpoint.identification.algorithm", STRING, "https", mode=B),
    _key("ssl.engine.factory.class", CLASS, None, mode=B),
    # Odradek's own (Kafka has no such key): how long a client on an SSL or SASL_SSL listener has to
    # complete the TLS handshake once its connection is accepted (it counts against max.connections
    # meanwhile); one that takes longer is closed. It also bounds the TLS close_notify exchange on close.
    _key("ssl.handshake.timeout.ms", LONG, "10000", valid=Range(1), applied=True),
    _key("ssl.key.password", PASSWORD, None, mode=B, applied=True),
    _key("ssl.keymanager.algorithm", STRING, "SunX509", mode=B),
    _key("ssl.keystore.certificate.chain", PASSWORD, None, mode=B, applied=True),
    _key("ssl.keystore.key", PASSWORD, None, mode=B, applied=True),
    _key("ssl.keystore.location", STRING, None, mode=B, applied=True),
    _key("ssl.keystore.password", PASSWORD, None, mode=B),
    _key("ssl.keystore.type", STRING, "JKS", mode=B, applied=True),
    _key("ssl.principal.mapping.rules", STRING, "DEFAULT"),
    _key("ssl.protocol", STRING, "TLSv1.3", mode=B),
    _key("ssl.provider", STRING, None, mode=B),
    _key("ssl.secure.random.implementation", STRING, None, mode=B),
    _key("ssl.trustmanager.algorithm", STRING, "PKIX", mode=B),
    _key("ssl.truststore.certificates", PASSWORD, None, mode=B, applied=True),
    _key("ssl.truststore.location", STRING, None, mode=B, applied=True),
    _key("ssl.truststore.password", PASSWORD, None, mode=B),
    _key("ssl.truststore.type", STRING, "JKS", mode=B, applied=True),
    _key("super.users", STRING, None, applied=True),  # semicolon-separated, as Kafka
    _key("telemetry.max.bytes", INT, "1048576", valid=Range(1)),
    _key("transaction.abort.timed.out.transaction.cleanup.interval.ms", INT, "10000", valid=Range(1), applied=True),
    _key("transaction.max.timeout.ms", INT, "900000", valid=Range(1), applied=True),
    _key("transaction.partition.verification.enable", BOOLEAN, "true", mode=C, applied=True),
    _key("transaction.remove.expired.transaction.cleanup.interval.ms", INT, "3600000", valid=Range(1), applied=True),
    _key("transaction.state.log.load.buffer.size", INT, "5242880", valid=Range(1), applied=True),
    _key("transaction.state.log.min.isr", INT, "2", valid=Range(1), applied=True),
    _key("transaction.state.log.num.partitions", INT, "50", valid=Range(1), applied=True),
    _key("transaction.state.log.replication.factor", SHORT, "3", valid=Range(1), applied=True),
    _key("transaction.state.log.segment.bytes", INT, "104857600", valid=Range(1), applied=True),
    _key("transaction.two.phase.commit.enable", BOOLEAN, "false"),
    # Odradek's own (Kafka sets the level with `kafka-storage format --feature transaction.version=N` or
    # `kafka-features upgrade`, both KRaft's): the level of the transaction.version feature this broker
    # finalizes in ApiVersions; 2 (Kafka 4's default on a new cluster) has Java clients from 4.0 run
    # KIP-890 part 2's transactions, 0 or 1 the older protocol.
    _key("transaction.version", SHORT, "2", valid=Range(0, 2), applied=True),
    _key("transactional.id.expiration.ms", INT, "604800000", valid=Range(1), applied=True),
    _key("unclean.leader.election.enable", BOOLEAN, "false", mode=C, applied=True),
    _key("zookeeper.clientCnxnSocket", STRING, None),
    _key("zookeeper.connect", STRING, None, applied=True),
    _key("zookeeper.connection.timeout.ms", INT, None, applied=True),
    _key("zookeeper.max.in.flight.requests", INT, "10", valid=Range(1)),
    _key("zookeeper.metadata.migration.enable", BOOLEAN, "false"),
    _key("zookeeper.session.timeout.ms", INT, "18000", applied=True),
    _key("zookeeper.sasl.client", BOOLEAN, None, applied=True),  # ZooKeeper's client property (also a -D in KAFKA_OPTS)
    _key("zookeeper.sasl.clientconfig", STRING, None, applied=True),  # ZooKeeper's; the JAAS section, "Client"
    # Odradek's: the JAAS file with the Client section (Kafka: -Djava.security.auth.login.config in KAFKA_OPTS)
    _key("zookeeper.sasl.jaas.file", STRING, None, applied=True),
    _key("zookeeper.set.acl", BOOLEAN, "false", applied=True),
    _key("zookeeper.ssl.cipher.suites", LIST, None),
    _key("zookeeper.ssl.client.enable", BOOLEAN, "false", applied=True),
    _key("zookeeper.ssl.crl.enable", BOOLEAN, "false"),
    _key("zookeeper.ssl.enabled.protocols", LIST, None),
    _key("zookeeper.ssl.endpoint.identification.algorithm", STRING, "HTTPS", applied=True),
    _key("zookeeper.ssl.keystore.location", STRING, None, applied=True),
    _key("zookeeper.ssl.keystore.password", PASSWORD, None, applied=True),
    _key("zookeeper.ssl.keystore.type", STRING, None, applied=True),
    _key("zookeeper.ssl.ocsp.enable", BOOLEAN, "false"),
    _key("zookeeper.ssl.protocol", STRING, "TLSv1.2"),
    _key("zookeeper.ssl.truststore.location", STRING, None, applied=True),
    _key("zookeeper.ssl.truststore.password", PASSWORD, None),
    _key("zookeeper.ssl.truststore.type", STRING, None, applied=True),
    _key("zookeeper.sync.time.ms", INT, "2000", deprecated="removed in Kafka 3.2; it was never used"),
)

_SUBJECT_NAME_STRATEGY = OneOf("io.confluent.kafka.serializers.subject.TopicNameStrategy",
                               "io.confluent.kafka.serializers.subject.RecordNameStrategy",
                               "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy")

# Topic-level configs; server_default names the broker property that supplies the default.
# file.delete.delay.ms (and log.segment.delete.delay.ms) is not applied: Kafka delays deleting a segment's
# files for readers still holding them, but Odradek copies what it reads under the log's lock.
TOPIC_CONFIGS: dict[str, ConfigKey] = _catalogue(
    _key("cleanup.policy", LIST, "delete", valid=ListOf("compact", "delete"), applied=True, server_default="log.cleanup.policy"),
    _key("compression.gzip.level", INT, "-1", valid=Range(1, 9, also=(-1,)), applied=True, server_default="compression.gzip.level"),
    _key("compression.lz4.level", INT, "9", valid=Range(1, 17), applied=True, server_default="compression.lz4.level"),
    _key("compression.type", STRING, "producer", valid=OneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), applied=True, server_default="compression.type"),
    _key("compression.zstd.level", INT, "3", valid=Range(-131072, 22), applied=True, server_default="compression.zstd.level"),
    # Confluent Server's Schema ID Validation (no broker-level default): the leader refuses batches whose keys /
    # values do not carry a schema id registered under the subject the topic's strategy names.
    _key("confluent.key.schema.validation", BOOLEAN, "false", applied=True),
    _key("confluent.key.subject.name.strategy", STRING, "io.confluent.kafka.serializers.subject.TopicNameStrategy", valid=_SUBJECT_NAME_STRATEGY, applied=True),
    _key("confluent.value.schema.validation", BOOLEAN, "false", applied=True),
    _key("confluent.value.subject.name.strategy", STRING, "io.confluent.kafka.serializers.subject.TopicNameStrategy", valid=_SUBJECT_NAME_STRATEGY, applied=True),
    _key("delete.retention.ms", LONG, "86400000", valid=Range(0), applied=True, server_default="log.cleaner.delete.retention.ms"),
    _key("file.delete.delay.ms", LONG, "60000", valid=Range(0), server_default="log.segment.delete.delay.ms"),
    _key("flush.messages", LONG, "9223372036854775807", valid=Range(1), applied=True, server_default="log.flush.interval.messages"),
    _key("flush.ms", LONG, "9223372036854775807", valid=Range(0), applied=True, server_default="log.flush.interval.ms"),
    _key("follower.replication.throttled.replicas", LIST, "", valid=THROTTLED_REPLICAS),
    _key("index.interval.bytes", INT, "4096", valid=Range(0), applied=True, server_default="log.index.interval.bytes"),
    _key("leader.replication.throttled.replicas", LIST, "", valid=THROTTLED_REPLICAS),
    _key("local.retention.bytes", LONG, "-2", valid=Range(-2), server_default="log.local.retention.bytes"),
    _key("local.retention.ms", LONG, "-2", valid=Range(-2), server_default="log.local.retention.ms"),
    _key("max.compaction.lag.ms", LONG, "9223372036854775807", valid=Range(1), applied=True, server_default="log.cleaner.max.compaction.lag.ms"),
    _key("max.message.bytes", INT, "1048588", valid=Range(0), applied=True, server_default="message.max.bytes"),
    _key("message.downconversion.enable", BOOLEAN, "true", server_default="log.message.downconversion.enable", deprecated="deprecated, removed in Kafka 4.0"),
    _key("message.format.version", STRING, "3.0-IV1", valid=VERSION, server_default="log.message.format.version", deprecated="deprecated since Kafka 3.0, removed in 4.0"),
    _key("message.timestamp.after.max.ms", LONG, "9223372036854775807", valid=Range(0), applied=True, server_default="log.message.timestamp.after.max.ms"),
    _key("message.timestamp.before.max.ms", LONG, "9223372036854775807", valid=Range(0), applied=True, server_default="log.message.timestamp.before.max.ms"),
    _key("message.timestamp.difference.max.ms", LONG, "9223372036854775807", valid=Range(0), applied=True, server_default="log.message.timestamp.difference.max.ms", deprecated="deprecated since Kafka 3.6; use message.timestamp.before.max.ms and message.timestamp.after.max.ms"),
    _key("message.timestamp.type", STRING, "CreateTime", valid=OneOf("CreateTime", "LogAppendTime"), applied=True, server_default="log.message.timestamp.type"),
    _key("min.cleanable.dirty.ratio", DOUBLE, "0.5", valid=Range(0, 1), applied=True, server_default="log.cleaner.min.cleanable.ratio"),
    _key("min.compaction.lag.ms", LONG, "0", valid=Range(0), applied=True, server_default="log.cleaner.min.compaction.lag.ms"),
    _key("min.insync.replicas", INT, "1", valid=Range(1), applied=True, server_default="min.insync.replicas"),
    _key("preallocate", BOOLEAN, "false", server_default="log.preallocate"),
    _key("remote.log.copy.disable", BOOLEAN, "false"),
    _key("remote.log.delete.on.disable", BOOLEAN, "false"),
    _key("remote.storage.enable", BOOLEAN, "false"),
    _key("retention.bytes", LONG, "-1", applied=True, server_default="log.retention.bytes"),
    _key("retention.ms", LONG, "604800000", valid=Range(-1), applied=True, server_default="log.retention.ms"),
    _key("segment.bytes", INT, "1073741824", valid=Range(14), applied=True, server_default="log.segment.bytes"),
    _key("segment.index.bytes", INT, "10485760", valid=Range(4), applied=True, server_default="log.index.size.max.bytes"),
    _key("segment.jitter.ms", LONG, "0", valid=Range(0), applied=True, server_default="log.roll.jitter.ms"),
    _key("segment.ms", LONG, "604800000", valid=Range(1), applied=True, server_default="log.roll.ms"),
    _key("unclean.leader.election.enable", BOOLEAN, "false", applied=True, server_default="unclean.leader.election.enable"),
)
# fmt: on


def check_topic_configs(values: Mapping[str, Any]) -> None:
    """Kafka's rule across topic configs, on typed values by name (those absent are not checked)."""
    lo, hi = values.get("min.compaction.lag.ms"), values.get("max.compaction.lag.ms")
    if lo is not None and hi is not None and lo > hi:
        raise ConfigError(
            f"conflict topic config setting min.compaction.lag.ms ({lo}) > max.compaction.lag.ms ({hi})"
        )


# Group-level configs (Kafka 4.2's GroupConfig: KIP-848 consumer groups, KIP-932 share groups, KIP-1071
# streams groups), set per group id; server_default names the broker key that supplies the default (the
# broker's current value, dynamic configs included). The two share keys without one have Kafka's
# constant defaults.
# fmt: off
GROUP_CONFIGS: dict[str, ConfigKey] = _catalogue(
    _key("consumer.heartbeat.interval.ms", INT, "5000", valid=Range(1), server_default="group.consumer.heartbeat.interval.ms",
         applied=True),
    _key("consumer.session.timeout.ms", INT, "45000", valid=Range(1), server_default="group.consumer.session.timeout.ms",
         applied=True),
    _key("share.auto.offset.reset", STRING, "latest", valid=ShareAutoOffsetReset(),
         applied=True),
    _key("share.heartbeat.interval.ms", INT, "5000", valid=Range(1), server_default="group.share.heartbeat.interval.ms",
         applied=True),
    _key("share.isolation.level", STRING, "read_uncommitted", valid=OneOf("read_committed", "read_uncommitted"),
         applied=True),
    _key("share.record.lock.duration.ms", INT, "30000", valid=Range(1000), server_default="group.share.record.lock.duration.ms",
         applied=True),
    _key("share.session.timeout.ms", INT, "45000", valid=Range(1), server_default="group.share.session.timeout.ms",
         applied=True),
    _key("streams.heartbeat.interval.ms", INT, "5000", valid=Range(1), server_default="group.streams.heartbeat.interval.ms",
         applied=True),
    _key("streams.initial.rebalance.delay.ms", INT, "3000", valid=Range(0), server_default="group.streams.initial.rebalance.delay.ms",
         applied=True),
    _key("streams.num.standby.replicas", INT, "0", valid=Range(0), server_default="group.streams.num.standby.replicas",
         applied=True),
    _key("streams.session.timeout.ms", INT, "45000", valid=Range(1), server_default="group.streams.session.timeout.ms",
         applied=True),
)
# fmt: on

# The broker keys that bound a group config (GroupConfig.validateValues): (lower, upper), in Kafka's order
# of checking; None where Kafka checks no bound.
GROUP_CONFIG_BOUNDS: dict[str, tuple[str | None, str | None]] = {
    "consumer.heartbeat.interval.ms": ("group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"),
    "consumer.session.timeout.ms": ("group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"),
    "share.heartbeat.interval.ms": ("group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"),
    "share.session.timeout.ms": ("group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
    "share.record.lock.duration.ms": ("group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"),
    "streams.heartbeat.interval.ms": ("group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms"),
    "streams.session.timeout.ms": ("group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"),
    "streams.num.standby.replicas": (None, "group.streams.max.standby.replicas"),
}
# (session timeout, heartbeat interval): the timeout must exceed the interval
_GROUP_SESSION_PAIRS = (
    ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
    ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
    ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"),
)


def check_group_configs(values: Mapping[str, Any], broker: Callable[[str], Any]) -> None:
    """Kafka's rules across a group's configs (GroupConfig.validateValues), on the typed values of every
    group key (the group's overrides over the broker's values): each within the bounds the broker keys
    set (`broker` reads a broker key's current value), and each session timeout above its heartbeat
    interval. Raises ConfigError in Kafka's words."""
    for name, (lower, upper) in GROUP_CONFIG_BOUNDS.items():
        value = values[name]
        if lower is not None and value < broker(lower):
            raise ConfigError(f"{name} must be greater than or equal to {lower}")
        if upper is not None and value > broker(upper):
            raise ConfigError(f"{name} must be less than or equal to {upper}")
    for session, heartbeat in _GROUP_SESSION_PAIRS:
        if values[session] <= values[heartbeat]:
            raise ConfigError(f"{session} must be greater than {heartbeat}")
