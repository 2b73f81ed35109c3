"""The bytes of Kafka Connect's group protocol (JoinGroup protocol type `connect`): a worker's metadata (its
REST URL and how far it has read the config topic) and the leader's assignment (its error, the leader's id and
URL, the config offset it assigned at, and per connector the task ids given, -1 standing for the connector
itself). Version 0 is the eager `default` protocol; versions 1 (`compatible`) and 2 (`sessioned`) are the
incremental cooperative ones, whose metadata also carries the worker's previous assignment and whose
assignment adds the revoked connectors and tasks and a scheduled rebalance delay. Integers big-endian, strings
INT16-length prefixed, arrays INT32-counted (-1 for null), as Kafka's protocol Struct writes them."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

EAGER, COMPATIBLE, SESSIONED = "default", "compatible", "sessioned"
PROTOCOL_VERSION = {EAGER: 0, COMPATIBLE: 1, SESSIONED: 2}
CONNECTOR_TASK = -1
NO_ERROR, CONFIG_MISMATCH = 0, 1


class ConnectProtocolError(ValueError):
    """Bytes that are not a Connect protocol message of a known version."""


@dataclass
class WorkerState:
    url: str
    config_offset: int
    version: int = 0
    previous: Assignment | None = None  # v1+: the assignment the worker holds


@dataclass
class Assignment:
    error: int = NO_ERROR
    leader: str = ""
    leader_url: str = ""
    config_offset: int = -1
    connectors: list[str] = field(default_factory=list)
    tasks: list[tuple[str, int]] = field(default_factory=list)
    revoked_connectors: list[str] = field(default_factory=list)
    revoked_tasks: list[tuple[str, int]] = field(default_factory=list)
    delay_ms: int = 0
    version: int = 0


class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def int16(self, v: int) -> None:
        self.parts.append(struct.pack(">h", v))

    def int32(self, v: int) -> None:
        self.parts.append(struct.pack(">i", v))

    def int64(self, v: int) -> None:
        self.parts.append(struct.pack(">q", v))

    def string(self, v: str) -> None:
        raw = v.encode()
        self.int16(len(raw))
        self.parts.append(raw)

    def nullable_bytes(self, v: bytes | None) -> None:
        if v is None:
            self.int32(-1)
        else:
            self.int32(len(v))
            self.parts.append(v)

    def bytes(self) -> bytes:
        return b"".join(self.parts)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.pos = 0

    def _take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise ConnectProtocolError("truncated Connect protocol message")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int16(self) -> int:
        return int(struct.unpack(">h", self._take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def int64(self) -> int:
        return int(struct.unpack(">q", self._take(8))[0])

    def string(self) -> str:
        n = self.int16()
        if n < 0:
            raise ConnectProtocolError("null string in Connect protocol message")
        return bytes(self._take(n)).decode()

    def nullable_bytes(self) -> bytes | None:
        n = self.int32()
        return None if n < 0 else bytes(self._take(n))

    def at_end(self) -> bool:
        return self.pos >= len(self.data)


def _check_version(version: int) -> None:
    if version < 0:
        raise ConnectProtocolError(f"Unsupported subscription version: {version}")


def encode_metadata(state: WorkerState) -> bytes:
    w = _Writer()
    w.int16(state.version)
    w.string(state.url)
    w.int64(state.config_offset)
    if state.version >= 1:
        previous = state.previous
        w.nullable_bytes(None if previous is None else
                         encode_assignment(Assignment(**{**previous.__dict__, "version": state.version})))
    return w.bytes()


def decode_metadata(data: bytes) -> WorkerState:
    r = _Reader(data)
    version = r.int16()
    _check_version(version)
    url, offset = r.string(), r.int64()
    previous = None
    if version >= 1 and not r.at_end():
        raw = r.nullable_bytes()
        previous = decode_assignment(raw) if raw else None
    return WorkerState(url, offset, version, previous)


def _write_assignments(w: _Writer, connectors: list[str], tasks: list[tuple[str, int]]) -> None:
    by_connector: dict[str, list[int]] = {}
    for name in connectors:
        by_connector.setdefault(name, []).append(CONNECTOR_TASK)
    for name, task in tasks:
        by_connector.setdefault(name, []).append(task)
    w.int32(len(by_connector))
    for name, ids in by_connector.items():
        w.string(name)
        w.int32(len(ids))
        for i in ids:
            w.int32(i)


def _read_assignments(r: _Reader) -> tuple[list[str], list[tuple[str, int]]]:
    connectors: list[str] = []
    tasks: list[tuple[str, int]] = []
    count = r.int32()
    for _ in range(max(count, 0)):
        name = r.string()
        n = r.int32()
        for _ in range(max(n, 0)):
            task = r.int32()
            if task == CONNECTOR_TASK:
                connectors.append(name)
            else:
                tasks.append((name, task))
    return connectors, tasks


def encode_assignment(a: Assignment) -> bytes:
    w = _Writer()
    w.int16(a.version)
    w.int16(a.error)
    w.string(a.leader)
    w.string(a.leader_url)
    w.int64(a.config_offset)
    _write_assignments(w, a.connectors, a.tasks)
    if a.version >= 1:
        _write_assignments(w, a.revoked_connectors, a.revoked_tasks)
        w.int32(a.delay_ms)
    return w.bytes()


def decode_assignment(data: bytes) -> Assignment:
    r = _Reader(data)
    version = r.int16()
    _check_version(version)
    a = Assignment(error=r.int16(), leader=r.string(), leader_url=r.string(), config_offset=r.int64(), version=version)
    a.connectors, a.tasks = _read_assignments(r)
    if version >= 1 and not r.at_end():
        a.revoked_connectors, a.revoked_tasks = _read_assignments(r)
        if not r.at_end():
            a.delay_ms = r.int32()
    return a
