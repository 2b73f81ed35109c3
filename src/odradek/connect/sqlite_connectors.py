"""SQLite connectors, written against the Python plugin API as a user's connector would be (the example the
README walks through): `SqliteSource` copies the new rows of a table to a topic, in the order of an increasing
column (the JDBC source connector's "incrementing" mode: its offset is the last value copied), each row a struct
record keyed by that column; `SqliteSink` writes each record's struct (or map) value as a row of a table,
inserting or, with `insert.mode=upsert` and `pk.fields`, replacing the row of the same key. Class names:
`odradek.connect.sqlite_connectors.SqliteSourceConnector` and `...SqliteSinkConnector` (aliases `SqliteSource`,
`SqliteSink`)."""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Mapping
from typing import Any

from odradek import __version__
from odradek.connect.api import (
    ConfigDef,
    ConfigException,
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
from odradek.connect.data import Schema, Struct, struct_schema

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SQLITE_TYPES = {"INTEGER": "int64", "INT": "int64", "REAL": "float64", "TEXT": "string", "BLOB": "bytes"}


def identifier(name: str, value: Any) -> None:
    """Table and column names are spliced into SQL: only plain identifiers are accepted."""
    values = value if isinstance(value, list) else [value]
    for v in values:
        if v is not None and v != "" and not _IDENTIFIER.fullmatch(str(v)):
            raise ConfigException(f"Invalid value {v} for configuration {name}: not a plain SQL identifier")


SOURCE_CONFIG = (ConfigDef()
                 .define("sqlite.path", "STRING", documentation="The SQLite database file to read.",
                         validator=non_empty_string)
                 .define("table", "STRING", documentation="The table whose new rows are copied.", validator=identifier)
                 .define("incrementing.column.name", "STRING", "id", "HIGH",
                         "A strictly increasing column: rows with a greater value than the last copied are new.",
                         validator=identifier)
                 .define("topic", "STRING", documentation="The topic the rows go to.", validator=non_empty_string)
                 .define("poll.interval.ms", "INT", "1000", "MEDIUM", "How long to wait between looks for new rows.",
                         validator=at_least(1))
                 .define("batch.max.rows", "INT", "100", "LOW", "At most this many rows per poll.",
                         validator=at_least(1)))

SINK_CONFIG = (ConfigDef()
               .define("sqlite.path", "STRING", documentation="The SQLite database file to write.",
                       validator=non_empty_string)
               .define("table", "STRING", "", "HIGH", "The table to write (default: the record's topic).",
                       validator=identifier)
               .define("insert.mode", "STRING", "insert", "HIGH", "insert, or upsert (replace the row of the same "
                       "pk.fields).", validator=lambda n, v: _one_of(n, v, ("insert", "upsert")))
               .define("pk.fields", "LIST", "", "MEDIUM", "The primary key columns (upsert).", validator=identifier)
               .define("auto.create", "BOOLEAN", "true", "MEDIUM", "Create the table from the first record's fields."))


def _one_of(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigException(f"Invalid value {value} for configuration {name}: String must be one of: "
                              f"{', '.join(allowed)}")


class SqliteSourceConnector(ConfiguredConnector, SourceConnector):
    CONFIG = SOURCE_CONFIG
    SINGLE_TASK = True

    def task_class(self) -> type[Task]:
        return SqliteSourceTask


class SqliteSourceTask(SourceTask):
    def version(self) -> str:
        return __version__

    def start(self, props: dict[str, str]) -> None:
        cfg = SOURCE_CONFIG.parse(props)
        self.path, self.table, self.column = cfg["sqlite.path"], cfg["table"], cfg["incrementing.column.name"]
        self.topic, self.wait_s, self.batch = cfg["topic"], cfg["poll.interval.ms"] / 1000, cfg["batch.max.rows"]
        self.partition = {"table": self.table}
        stored = self.context.offset_storage_reader.offset(self.partition)
        self.last: Any = stored.get(self.column) if stored else None
        self.db = sqlite3.connect(self.path, check_same_thread=False)
        self.stopping = threading.Event()

    def _schema(self, cursor: sqlite3.Cursor) -> Schema:
        columns = self.db.execute(f"PRAGMA table_info({self.table})").fetchall()
        declared = {row[1]: str(row[2]).upper() for row in columns}
        fields = [(d[0], Schema(_SQLITE_TYPES.get(declared.get(d[0], ""), "string"), True)) for d in cursor.description]
        return struct_schema(self.table, fields)

    def poll(self) -> list[SourceRecord] | None:
        if self.last is None:
            cursor = self.db.execute(f"SELECT * FROM {self.table} ORDER BY {self.column} LIMIT ?", (self.batch,))
        else:
            cursor = self.db.execute(f"SELECT * FROM {self.table} WHERE {self.column} > ? ORDER BY {self.column} "
                                     "LIMIT ?", (self.last, self.batch))
        rows = cursor.fetchall()
        if not rows:
            self.stopping.wait(self.wait_s)
            return None
        schema = self._schema(cursor)
        key_schema = next(f.schema for f in schema.fields if f.name == self.column)
        records = []
        for row in rows:
            values = dict(zip([d[0] for d in cursor.description], row, strict=True))
            self.last = values[self.column]
            records.append(SourceRecord(self.topic, None, key_schema, self.last, schema, Struct(schema, values),
                                        source_partition=self.partition, source_offset={self.column: self.last}))
        return records

    def stop(self) -> None:
        self.stopping.set()
        self.db.close()


class SqliteSinkConnector(ConfiguredConnector, SinkConnector):
    CONFIG = SINK_CONFIG

    def configure(self, parsed: dict[str, Any], props: dict[str, str]) -> dict[str, str]:
        if parsed["insert.mode"] == "upsert" and not parsed["pk.fields"]:
            raise ConfigException("insert.mode=upsert needs pk.fields")
        return dict(props)

    def task_class(self) -> type[Task]:
        return SqliteSinkTask


class SqliteSinkTask(SinkTask):
    def version(self) -> str:
        return __version__

    def start(self, props: dict[str, str]) -> None:
        cfg = SINK_CONFIG.parse(props)
        self.table, self.upsert, self.pk = cfg["table"], cfg["insert.mode"] == "upsert", cfg["pk.fields"]
        self.auto_create = cfg["auto.create"]
        self.db = sqlite3.connect(cfg["sqlite.path"], check_same_thread=False)

    def _row(self, record: SinkRecord) -> dict[str, Any]:
        if isinstance(record.value, Struct):
            return {f.name: record.value.get(f.name) for f in record.value.schema.fields}
        if isinstance(record.value, Mapping):
            return dict(record.value)
        raise ConnectException(f"SqliteSink writes struct or map values; the record at {record.topic}-"
                               f"{record.kafka_partition}@{record.kafka_offset} has a {type(record.value).__name__}")

    def put(self, records: list[SinkRecord]) -> None:
        for record in records:
            if record.value is None:
                continue
            row = self._row(record)
            table = self.table or record.topic.replace("-", "_").replace(".", "_")
            identifier("table", table)
            identifier("column", list(row))
            if self.auto_create:
                pk = f", PRIMARY KEY ({', '.join(self.pk)})" if self.pk else ""
                self.db.execute(f"CREATE TABLE IF NOT EXISTS {table} ({', '.join(row)}{pk})")
            verb = "INSERT OR REPLACE" if self.upsert else "INSERT"
            self.db.execute(f"{verb} INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                            [v if isinstance(v, int | float | str | bytes) or v is None else str(v)
                             for v in row.values()])

    def flush(self, offsets: Mapping[tuple[str, int], int]) -> None:
        self.db.commit()

    def stop(self) -> None:
        self.db.commit()
        self.db.close()
