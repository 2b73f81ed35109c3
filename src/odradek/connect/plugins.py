"""Plugin discovery: connectors and converters by the names Kafka users write. Kafka's own are known under their
full class names (`org.apache.kafka.connect.file.FileStreamSourceConnector`) and aliases (`FileStreamSourceConnector`,
`FileStreamSource`); Python plugins come from package entry points in the `odradek.connect` group, from Python
files and packages in the directories of `plugin.path`, or by import path (`package.module.ClassName`)."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from odradek.connect.api import Connector, SinkConnector, SourceConnector
from odradek.connect.converters import ByteArrayConverter, Converter, StringConverter, number_converter
from odradek.connect.file_connectors import FileStreamSinkConnector, FileStreamSourceConnector
from odradek.connect.json_converter import JsonConverter
from odradek.connect.sqlite_connectors import SqliteSinkConnector, SqliteSourceConnector

ENTRY_POINT_GROUP = "odradek.connect"


class PluginNotFound(LookupError):
    pass


@dataclass(frozen=True, slots=True)
class ConnectorPlugin:
    class_name: str  # as `/connector-plugins` lists it
    type: str  # "source" | "sink"
    version: str
    factory: Callable[[], Connector]


CONVERTERS: dict[str, Callable[[], Converter]] = {
    "org.apache.kafka.connect.json.JsonConverter": JsonConverter,
    "org.apache.kafka.connect.storage.StringConverter": StringConverter,
    "org.apache.kafka.connect.converters.ByteArrayConverter": ByteArrayConverter,
    "org.apache.kafka.connect.converters.ShortConverter": lambda: number_converter("int16"),
    "org.apache.kafka.connect.converters.IntegerConverter": lambda: number_converter("int32"),
    "org.apache.kafka.connect.converters.LongConverter": lambda: number_converter("int64"),
    "org.apache.kafka.connect.converters.FloatConverter": lambda: number_converter("float32"),
    "org.apache.kafka.connect.converters.DoubleConverter": lambda: number_converter("float64"),
}

BUILTIN_CONNECTORS: dict[str, type[Connector]] = {
    "org.apache.kafka.connect.file.FileStreamSourceConnector": FileStreamSourceConnector,
    "org.apache.kafka.connect.file.FileStreamSinkConnector": FileStreamSinkConnector,
    "odradek.connect.sqlite_connectors.SqliteSourceConnector": SqliteSourceConnector,
    "odradek.connect.sqlite_connectors.SqliteSinkConnector": SqliteSinkConnector,
}


def _aliases(full_name: str, connector: bool) -> list[str]:
    simple = full_name.rsplit(".", 1)[-1].rsplit(":", 1)[-1]
    names = [full_name, simple]
    if connector and simple.endswith("Connector") and simple != "Connector":
        names.append(simple[: -len("Connector")])
    return names


def _kind(cls: type[Connector]) -> str:
    return "sink" if issubclass(cls, SinkConnector) else "source"


def _is_connector(obj: Any) -> bool:
    return (inspect.isclass(obj) and issubclass(obj, SourceConnector | SinkConnector)
            and obj not in (SourceConnector, SinkConnector) and not inspect.isabstract(obj))


class Plugins:
    """The connectors and converters this worker can run (see the module docstring)."""

    def __init__(self, plugin_path: Iterable[str] = ()) -> None:
        self.connectors: dict[str, type[Connector]] = dict(BUILTIN_CONNECTORS)
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            self._add(f"{ep.value.replace(':', '.')}", ep.load())
        for directory in plugin_path:
            self._scan(Path(directory.strip()))
        self._by_alias: dict[str, str] = {}
        for name in self.connectors:
            for alias in _aliases(name, True):
                self._by_alias.setdefault(alias, name)

    def _add(self, name: str, obj: Any) -> None:
        if _is_connector(obj):
            self.connectors[name] = obj

    def _scan(self, directory: Path) -> None:
        """Python plugins on plugin.path: each `*.py` file and package directory is imported (once) and its
        connector classes registered under `module.ClassName`."""
        if not directory.is_dir():
            return
        for entry in sorted(directory.iterdir()):
            if entry.suffix == ".py" or (entry.is_dir() and (entry / "__init__.py").exists()):
                module_name = entry.stem
                path = entry if entry.suffix == ".py" else entry / "__init__.py"
                spec = importlib.util.spec_from_file_location(module_name, path)
                if spec is None or spec.loader is None:
                    continue
                module = importlib.util.module_from_spec(spec)
                sys.modules.setdefault(module_name, module)
                spec.loader.exec_module(module)
                for attr, obj in vars(module).items():
                    if _is_connector(obj) and obj.__module__ == module_name:
                        self._add(f"{module_name}.{attr}", obj)

    def connector_class(self, name: str) -> type[Connector]:
        full = self._by_alias.get(name.strip())
        if full is not None:
            return self.connectors[full]
        cls = _import(name.strip())
        if not _is_connector(cls):
            raise PluginNotFound(f"Failed to find any class that implements Connector and which name matches {name}")
        return cls

    def connector_name(self, name: str) -> str:
        """The full class name `name` stands for."""
        return self._by_alias.get(name.strip(), name.strip())

    def connector_plugins(self) -> list[ConnectorPlugin]:
        out = []
        for name, cls in sorted(self.connectors.items()):
            out.append(ConnectorPlugin(name, _kind(cls), cls().version(), cls))
        return out

    def converter(self, name: str) -> Converter:
        full = next((n for n in CONVERTERS if name.strip() in _aliases(n, False)), None)
        if full is not None:
            return CONVERTERS[full]()
        obj = _import(name.strip())
        if not (inspect.isclass(obj) and all(hasattr(obj, m) for m in ("configure", "from_connect", "to_connect"))):
            raise PluginNotFound(f"Class {name} could not be found.")
        return cast(Converter, obj())


def _import(path: str) -> Any:
    module_name, _, attr = path.replace(":", ".").rpartition(".")
    if not module_name:
        raise PluginNotFound(f"Failed to find any class that implements Connector and which name matches {path}")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError):
        raise PluginNotFound(f"Failed to find any class that implements Connector and which name matches "
                             f"{path}") from None
