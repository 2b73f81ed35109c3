"""The plugin API connectors are written against, shaped like Kafka's `connect-api`: `SourceConnector` and
`SinkConnector` split a job into task configurations; `SourceTask.poll` returns `SourceRecord`s (with the source
partition and offset the worker stores), `SinkTask.put` takes `SinkRecord`s and `flush` makes them durable
before the worker commits their offsets. `ConfigDef` declares a plugin's keys (type, default, importance,
documentation, validators): the worker parses a connector's configuration with it, and the REST API's
`config/validate` reports each key's errors from it.

A Python connector is a subclass of `SourceConnector` or `SinkConnector` found by its import path, by a package
entry point in the `odradek.connect` group, or in a file or directory on `plugin.path`."""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from odradek.connect.data import Schema


class ConnectException(Exception):
    """A connector or task failed (Kafka's ConnectException)."""


class ConfigException(ConnectException):
    """A configuration is invalid (Kafka's ConfigException): the message names the key and the value."""


class RetriableException(ConnectException):
    """A failure that may pass if the same call is made again (Kafka's RetriableException)."""


# ---- configuration ------------------------------------------------------------------------------

NO_DEFAULT = object()
TYPES = ("BOOLEAN", "STRING", "INT", "SHORT", "LONG", "DOUBLE", "LIST", "CLASS", "PASSWORD")


@dataclass(frozen=True, slots=True)
class ConfigKey:
    name: str
    type: str
    default: Any
    importance: str
    documentation: str
    validator: Callable[[str, Any], None] | None = None
    group: str | None = None
    order: int = -1
    width: str = "NONE"
    display_name: str | None = None
    dependents: tuple[str, ...] = ()

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT


@dataclass(slots=True)
class ConfigValue:
    """One key's result of a validation: its value, and the errors found (Kafka's ConfigValue)."""

    name: str
    value: Any = None
    recommended_values: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    visible: bool = True


def _parse_value(key: ConfigKey, raw: Any) -> Any:
    """A value of `key`'s type from its text (or an already typed value), as Kafka's ConfigDef.parseType."""
    if raw is None:
        return None
    kind = key.type
    text = raw.strip() if isinstance(raw, str) else raw
    try:
        if kind == "BOOLEAN":
            if isinstance(text, bool):
                return text
            if str(text).lower() in ("true", "false"):
                return str(text).lower() == "true"
            raise ValueError("Expected value to be either true or false")
        if kind in ("INT", "SHORT", "LONG"):
            value = int(text)
            bound = {"INT": 1 << 31, "SHORT": 1 << 15, "LONG": 1 << 63}[kind]
            if not -bound <= value < bound:
                raise ValueError(f"Not a number of type {kind}")
            return value
        if kind == "DOUBLE":
            return float(text)
        if kind == "LIST":
            if isinstance(text, list):
                return text
            return [item.strip() for item in str(text).split(",")] if str(text).strip() else []
        return str(raw) if kind in ("STRING", "PASSWORD") else str(text)
    except (TypeError, ValueError) as exc:
        reason = str(exc) if "Expected" in str(exc) or "Not a number" in str(exc) else f"Not a number of type {kind}"
        raise ConfigException(f"Invalid value {raw} for configuration {key.name}: {reason}") from None


class ConfigDef:
    """The keys of a plugin's configuration (Kafka's ConfigDef)."""

    def __init__(self) -> None:
        self.keys: dict[str, ConfigKey] = {}

    def define(self, name: str, type: str, default: Any = NO_DEFAULT, importance: str = "HIGH",
               documentation: str = "", validator: Callable[[str, Any], None] | None = None,
               group: str | None = None, display_name: str | None = None) -> ConfigDef:
        if type not in TYPES:
            raise ValueError(f"unknown config type {type}")
        if name in self.keys:
            raise ValueError(f"Configuration {name} is defined twice.")
        order = sum(1 for k in self.keys.values() if k.group == group and group is not None) + 1 if group else -1
        self.keys[name] = ConfigKey(name, type, default, importance, documentation, validator, group, order,
                                    display_name=display_name)
        return self

    def parse(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Every defined key's typed value (its default when absent); ConfigException for the first bad one."""
        out: dict[str, Any] = {}
        for key in self.keys.values():
            if key.name in props:
                value = _parse_value(key, props[key.name])
            elif key.required:
                raise ConfigException(f'Missing required configuration "{key.name}" which has no default value.')
            else:
                value = _parse_value(key, key.default) if isinstance(key.default, str) else key.default
            if key.validator is not None:
                key.validator(key.name, value)
            out[key.name] = value
        return out

    def validate(self, props: Mapping[str, Any]) -> list[ConfigValue]:
        """Each defined key's value and errors, none raised (what `config/validate` reports)."""
        results = []
        for key in self.keys.values():
            result = ConfigValue(key.name)
            try:
                if key.name in props:
                    result.value = _parse_value(key, props[key.name])
                elif key.required:
                    result.errors.append(f'Missing required configuration "{key.name}" which has no default value.')
                else:
                    result.value = _parse_value(key, key.default) if isinstance(key.default, str) else key.default
                if not result.errors and key.validator is not None:
                    key.validator(key.name, result.value)
            except ConfigException as exc:
                result.errors.append(str(exc))
            results.append(result)
        return results


def non_empty_string(name: str, value: Any) -> None:
    if value is not None and not str(value).strip():
        raise ConfigException(f"Invalid value {value} for configuration {name}: String must be non-empty")


def at_least(minimum: int) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        if value is not None and value < minimum:
            raise ConfigException(f"Invalid value {value} for configuration {name}: Value must be at least {minimum}")

    return check


# ---- records --------------------------------------------------------------------------------------


@dataclass(slots=True)
class ConnectRecord:
    topic: str
    kafka_partition: int | None
    key_schema: Schema | None
    key: Any
    value_schema: Schema | None
    value: Any
    timestamp: int | None = None
    headers: list[tuple[str, Schema | None, Any]] = field(default_factory=list)


@dataclass(slots=True)
class SourceRecord(ConnectRecord):
    source_partition: dict[str, Any] | None = None
    source_offset: dict[str, Any] | None = None


@dataclass(slots=True)
class SinkRecord(ConnectRecord):
    kafka_offset: int = -1
    timestamp_type: str = "CreateTime"


# ---- contexts ------------------------------------------------------------------------------------------


class OffsetStorageReader(abc.ABC):
    """The last committed offsets of a connector's source partitions."""

    @abc.abstractmethod
    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None: ...


@dataclass(slots=True)
class ConnectorContext:
    request_task_reconfiguration: Callable[[], None]
    raise_error: Callable[[Exception], None]


@dataclass(slots=True)
class SourceTaskContext:
    configs: dict[str, str]
    offset_storage_reader: OffsetStorageReader


@dataclass(slots=True)
class SinkTaskContext:
    configs: dict[str, str]
    assignment: set[tuple[str, int]] = field(default_factory=set)
    commit_requested: bool = False

    def request_commit(self) -> None:
        self.commit_requested = True


# ---- plugins -----------------------------------------------------------------------------------------


class Task(abc.ABC):
    def version(self) -> str:
        return "unknown"

    @abc.abstractmethod
    def start(self, props: dict[str, str]) -> None: ...

    @abc.abstractmethod
    def stop(self) -> None: ...


class SourceTask(Task):
    context: SourceTaskContext

    def initialize(self, context: SourceTaskContext) -> None:
        self.context = context

    @abc.abstractmethod
    def poll(self) -> list[SourceRecord] | None:
        """Records ready now, or None/[] after waiting a little (at most about a second) for some."""

    def commit(self) -> None:
        """The worker has committed the offsets of the records polled so far."""


class SinkTask(Task):
    context: SinkTaskContext

    def initialize(self, context: SinkTaskContext) -> None:
        self.context = context

    @abc.abstractmethod
    def put(self, records: list[SinkRecord]) -> None: ...

    def flush(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """Make everything `put` so far durable: the worker commits `offsets` (next offsets to read) after."""

    def open(self, partitions: list[tuple[str, int]]) -> None:
        pass

    def close(self, partitions: list[tuple[str, int]]) -> None:
        pass


class Connector(abc.ABC):
    context: ConnectorContext

    def version(self) -> str:
        return "unknown"

    def initialize(self, context: ConnectorContext) -> None:
        self.context = context

    @abc.abstractmethod
    def start(self, props: dict[str, str]) -> None: ...

    @abc.abstractmethod
    def task_class(self) -> type[Task]: ...

    @abc.abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]: ...

    @abc.abstractmethod
    def stop(self) -> None: ...

    @abc.abstractmethod
    def config(self) -> ConfigDef: ...

    def validate(self, props: Mapping[str, str]) -> list[ConfigValue]:
        return self.config().validate(props)

    def alter_offsets(self, config: Mapping[str, str], offsets: Mapping[Any, Any]) -> bool:
        """KIP-875: offsets are about to be altered (or reset: every offset None) through the REST API. A
        source connector gets {partition JSON bytes: offset dict or None}, a sink {(topic, partition): offset or
        None}. Raise to refuse them; return True if the connector manages no offsets outside the framework's
        (Kafka's `alterOffsets`, whose default answers False)."""
        return False


class SourceConnector(Connector):
    pass


class SinkConnector(Connector):
    pass


class ConfiguredConnector(Connector):
    """The usual connector: its keys are `CONFIG`, `start` parses them (`configure` may check more), and each
    task gets the connector's own properties, one task if `SINGLE_TASK` else `tasks.max` of them. Mixed in
    before `SourceConnector` or `SinkConnector`; the subclass names its `task_class`."""

    CONFIG: ClassVar[ConfigDef]
    SINGLE_TASK: ClassVar[bool] = False
    props: dict[str, str]

    def version(self) -> str:
        from odradek import __version__

        return __version__

    def start(self, props: dict[str, str]) -> None:
        self.props = self.configure(self.CONFIG.parse(props), props)

    def configure(self, parsed: dict[str, Any], props: dict[str, str]) -> dict[str, str]:
        """The properties the tasks get, from the parsed and the given ones; raise ConfigException to refuse."""
        return dict(props)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props) for _ in range(1 if self.SINGLE_TASK else max_tasks)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return self.CONFIG
