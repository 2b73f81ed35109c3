"""Kafka's file connectors (`connect-file`): FileStreamSource reads a file's lines (standard input when no file is
set) into a topic, each line a string record whose source offset is `{"position": <bytes read>}` under the source
partition `{"filename": <file>}`, so a restarted task goes on where the last committed offset says;
FileStreamSink writes each record's value as a line to a file (standard output when none)."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Mapping
from typing import IO, Any

from odradek import __version__
from odradek.connect.api import (
    NO_DEFAULT,
    ConfigDef,
    ConfiguredConnector,
    ConnectException,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
    at_least,
    non_empty_string,
)
from odradek.connect.data import STRING_SCHEMA

FILE = "file"
TOPIC = "topic"
BATCH_SIZE = "batch.size"
POLL_WAIT_S = 1.0
READ_SIZE = 65536


SOURCE_CONFIG = (ConfigDef()
                 .define(FILE, "STRING", None, "HIGH", "Source filename. If not specified, the standard input will be used")
                 .define(TOPIC, "STRING", NO_DEFAULT, "HIGH", "The topic to publish data to",
                         validator=non_empty_string)
                 .define(BATCH_SIZE, "INT", "2000", "LOW", "The maximum number of records the source task can read "
                         "from the file each time it is polled", validator=at_least(1)))
SINK_CONFIG = ConfigDef().define(FILE, "STRING", None, "HIGH",
                                 "Destination filename. If not specified, the standard output will be used")


class FileStreamSourceConnector(ConfiguredConnector, SourceConnector):
    CONFIG = SOURCE_CONFIG
    SINGLE_TASK = True  # one file, one task

    def task_class(self) -> type[Task]:
        return FileStreamSourceTask

    def exactly_once_support(self, config: Mapping[str, str]) -> str | None:
        # a file's positions are offsets that can be committed with the records; stdin's cannot (Kafka's rule)
        return "SUPPORTED" if config.get(FILE) else "UNSUPPORTED"

    def alter_offsets(self, config: Mapping[str, str], offsets: Mapping[Any, Any]) -> bool:
        if not config.get(FILE):
            raise ConnectException(f"Offsets cannot be modified if the '{FILE}' configuration is unspecified. This "
                                   "is because stdin is used for input and offsets are not tracked.")
        for partition_json, offset in offsets.items():
            if offset is None:
                continue
            if "position" not in offset:
                raise ConnectException("Offset objects should either be null or contain the key 'position'")
            position = offset["position"]
            if isinstance(position, bool) or not isinstance(position, int):
                raise ConnectException("The value for the 'position' key in the offset is expected to be a Long value")
            if position < 0:
                raise ConnectException("The value for the 'position' key in the offset should be a non-negative value")
            if "filename" not in json.loads(partition_json):
                raise ConnectException("Partition objects should contain the key 'filename'")
        return True

class FileStreamSourceTask(SourceTask):
    def version(self) -> str:
        return __version__

    def start(self, props: dict[str, str]) -> None:
        self.filename = props.get(FILE) or None
        self.topic = props[TOPIC]
        self.batch_size = int(props.get(BATCH_SIZE, "2000"))
        self.stream: IO[bytes] | None = None
        self.position = 0
        self.pending = b""
        self.stopping = threading.Event()

    def _open(self) -> IO[bytes] | None:
        if self.filename is None:
            return sys.stdin.buffer
        try:
            stream = open(self.filename, "rb")  # noqa: SIM115 - held open across polls, closed in stop()
        except FileNotFoundError:
            return None  # Kafka's task waits for the file to appear
        stored = self.context.offset_storage_reader.offset({"filename": self.filename})
        if stored is not None:
            position = stored.get("position")
            if not isinstance(position, int):
                raise ConnectException("Offset position is the incorrect type")
            stream.seek(position)
            self.position = position
        return stream

    def poll(self) -> list[SourceRecord] | None:
        if self.stream is None:
            self.stream = self._open()
            if self.stream is None:
                self.stopping.wait(POLL_WAIT_S)
                return None
        # what is held stays bounded when batch.size takes fewer lines per poll than a read brings
        if len(self.pending) < READ_SIZE or _line_end(self.pending) is None:
            chunk = self.stream.read1(READ_SIZE) if hasattr(self.stream, "read1") else self.stream.read(READ_SIZE)
            if chunk:
                self.pending += chunk
        data, start = self.pending, 0
        records: list[SourceRecord] = []
        partition = {"filename": self.filename} if self.filename else None
        now = int(time.time() * 1000)
        while len(records) < self.batch_size:
            cut = _line_end(data, start)
            if cut is None:
                break
            end, skip = cut
            line = data[start:end]
            start = end + skip
            self.position += len(line) + skip
            records.append(SourceRecord(self.topic, None, None, None, STRING_SCHEMA,
                                        line.decode("utf-8", errors="replace"), now,
                                        source_partition=partition,
                                        source_offset={"position": self.position} if partition else None))
        self.pending = data[start:]  # one copy per poll, not one per line
        if not records:
            self.stopping.wait(POLL_WAIT_S)
            return None
        return records

    def stop(self) -> None:
        self.stopping.set()
        if self.stream is not None and self.stream is not sys.stdin.buffer:
            self.stream.close()


def _line_end(data: bytes, start: int = 0) -> tuple[int, int] | None:
    """Where the first line of `data` from `start` ends and how many separator bytes follow (\\n, \\r or \\r\\n),
    or None while no line is complete (a \\r at the very end may be the start of \\r\\n)."""
    newline = data.find(b"\n", start)
    ret = data.find(b"\r", start, newline if newline >= 0 else len(data))
    if ret < 0:
        return None if newline < 0 else (newline, 1)
    if ret + 1 == len(data):
        return None
    return ret, 2 if data[ret + 1] == 0x0A else 1


class FileStreamSinkConnector(ConfiguredConnector, SinkConnector):
    CONFIG = SINK_CONFIG

    def task_class(self) -> type[Task]:
        return FileStreamSinkTask

    def alter_offsets(self, config: Mapping[str, str], offsets: Mapping[Any, Any]) -> bool:
        return True  # no offsets of its own, nothing to check


class FileStreamSinkTask(SinkTask):
    def version(self) -> str:
        return __version__

    def start(self, props: dict[str, str]) -> None:
        filename = props.get(FILE) or None
        self.out: IO[str] = open(filename, "a", encoding="utf-8") if filename else sys.stdout  # noqa: SIM115

    def put(self, records: list[SinkRecord]) -> None:
        self.out.write("".join(f"{_text(record.value)}\n" for record in records))
        # Kafka's task prints each line straight to the file: what was put is there to read, not held in a
        # buffer until the next offset flush
        self.out.flush()

    def flush(self, offsets: Mapping[tuple[str, int], int]) -> None:
        self.out.flush()

    def stop(self) -> None:
        if self.out is not sys.stdout:
            self.out.close()


def _text(value: Any) -> str:
    """A value as Java's String.valueOf prints it (null, true/false)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
