"""Source offsets: a connector's source partition maps to the offset its last committed record reached. Keys and
values are Kafka's bytes, `["<connector>",{<partition>}]` and `{<offset>}` as schemaless JSON, so the same
entries can live in the offsets topic of a distributed worker. The standalone worker keeps them in the file of
`offset.storage.file.filename`, replaced atomically at each flush (departure: JSON lines, where Kafka's file is
a Java-serialized map)."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from odradek.connect.api import OffsetStorageReader
from odradek.fsutil import atomic_write


def _compact(node: Any) -> bytes:
    return json.dumps(node, separators=(",", ":"), sort_keys=False).encode()


def offset_key(connector: str, partition: Mapping[str, Any]) -> bytes:
    return _compact([connector, dict(partition)])


class OffsetStore(Protocol):
    """Where a worker keeps its source connectors' offsets: a file (standalone) or the offsets topic."""

    def get(self, connector: str, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        """The offset stored for one source partition of `connector`."""

    def commit(self, connector: str, offsets: Mapping[bytes, Any]) -> None:
        """Store these offsets (keyed by the JSON of their partition), durably before returning."""

    def write(self, connector: str, entries: Mapping[bytes, Any]) -> None:
        """KIP-875's alter and reset: as commit, and a None offset erases its partition's entry."""

    def connector_offsets(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Every (partition, offset) stored for `connector` (KIP-875's GET offsets)."""


class FileOffsetStore:
    """Committed source offsets in a file (standalone mode)."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._data: dict[bytes, bytes] = {}
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    entry = json.loads(line)
                    self._data[entry["key"].encode()] = entry["value"].encode()

    def get(self, connector: str, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        with self._lock:
            raw = self._data.get(offset_key(connector, partition))
        return None if raw is None else json.loads(raw)

    def commit(self, connector: str, offsets: Mapping[bytes, Any]) -> None:
        """Store these offsets (keyed by the JSON of their partition) and write the file."""
        with self._lock:
            for partition_json, offset in offsets.items():
                self._data[offset_key(connector, json.loads(partition_json))] = _compact(offset)
            text = "".join(json.dumps({"key": k.decode(), "value": v.decode()}) + "\n" for k, v in self._data.items())
            atomic_write(self.path, text)

    def write(self, connector: str, entries: Mapping[bytes, Any]) -> None:
        """KIP-875's alter and reset: set these offsets (keyed by the JSON of their partition); a None offset
        erases its partition's entry, as Kafka's tombstone does."""
        with self._lock:
            for partition_json, offset in entries.items():
                key = offset_key(connector, json.loads(partition_json))
                if offset is None:
                    self._data.pop(key, None)
                else:
                    self._data[key] = _compact(offset)
            text = "".join(json.dumps({"key": k.decode(), "value": v.decode()}) + "\n" for k, v in self._data.items())
            atomic_write(self.path, text)

    def connector_offsets(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Every (partition, offset) stored for `connector` (KIP-875's GET offsets)."""
        with self._lock:
            items = list(self._data.items())
        out = []
        for key, value in items:
            name, partition = json.loads(key)
            if name == connector:
                out.append((partition, json.loads(value)))
        return out


class ConnectorOffsetReader(OffsetStorageReader):
    """One connector's view of the store."""

    def __init__(self, store: OffsetStore, connector: str) -> None:
        self.store = store
        self.connector = connector

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.store.get(self.connector, partition)
