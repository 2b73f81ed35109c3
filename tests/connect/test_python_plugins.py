"""Connectors written in Python: the SQLite example (rows of a table through a topic into another database's
table, upserted by key, resuming from the source's stored offset) and a user's plugin found on `plugin.path`,
both run by a standalone worker and managed through the REST API."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients import create_topic, unique_name
from tests.connect_helpers import Worker
from tests.harness import BrokerProcess
from tests.waiting import wait_until

USER_PLUGIN = '''
from odradek.connect.api import ConfigDef, SourceConnector, SourceRecord, SourceTask
from odradek.connect.data import INT64_SCHEMA, STRING_SCHEMA


class CounterSource(SourceConnector):
    def version(self): return "1.0"
    def start(self, props): self.props = props
    def task_class(self): return CounterTask
    def task_configs(self, max_tasks): return [dict(self.props)]
    def stop(self): pass
    def config(self):
        return ConfigDef().define("topic", "STRING").define("count", "INT", "5")


class CounterTask(SourceTask):
    def start(self, props):
        self.topic, self.left = props["topic"], int(props.get("count", "5"))
    def poll(self):
        if self.left <= 0:
            import time; time.sleep(0.2); return None
        self.left -= 1
        return [SourceRecord(self.topic, None, INT64_SCHEMA, self.left, STRING_SCHEMA, f"tick {self.left}")]
    def stop(self): pass
'''


@pytest.fixture(scope="module")
def worker(broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    cwd = tmp_path_factory.mktemp("connect-plugins")
    (cwd / "plugins").mkdir()
    (cwd / "plugins" / "counters.py").write_text(USER_PLUGIN)
    w = Worker(cwd, broker, {"plugin.path": str(cwd / "plugins")})
    w.start()
    yield w
    w.stop()


def running(worker: Worker, name: str) -> bool:
    status = worker.get(f"/connectors/{name}/status")
    return status["connector"]["state"] == "RUNNING" and [t["state"] for t in status["tasks"]] == ["RUNNING"]


def rows(path: Path, table: str) -> list[tuple]:
    if not path.exists():
        return []
    with sqlite3.connect(path) as db:
        try:
            return db.execute(f"SELECT id, name, score FROM {table} ORDER BY id").fetchall()
        except sqlite3.OperationalError:
            return []


def test_sqlite_table_to_table(worker: Worker, broker: BrokerProcess, tmp_path: Path) -> None:
    topic = unique_name("players")
    create_topic(broker.bootstrap, topic)
    source_db, sink_db = tmp_path / "game.db", tmp_path / "copy.db"
    with sqlite3.connect(source_db) as db:
        db.execute("CREATE TABLE players (id INTEGER PRIMARY KEY, name TEXT, score REAL)")
        db.executemany("INSERT INTO players VALUES (?, ?, ?)", [(1, "ada", 3.5), (2, "bob", 1.0)])
    source, sink = unique_name("sqlite-source"), unique_name("sqlite-sink")
    status, _ = worker.call("PUT", f"/connectors/{source}/config", {
        "connector.class": "SqliteSource", "sqlite.path": str(source_db), "table": "players", "topic": topic,
        "poll.interval.ms": "100"})
    assert status == 201
    status, _ = worker.call("PUT", f"/connectors/{sink}/config", {
        "connector.class": "SqliteSink", "sqlite.path": str(sink_db), "table": "players", "topics": topic,
        "insert.mode": "upsert", "pk.fields": "id"})
    assert status == 201
    wait_until(lambda: rows(sink_db, "players") == [(1, "ada", 3.5), (2, "bob", 1.0)], 60, "the two rows copied")
    with sqlite3.connect(source_db) as db:
        db.execute("INSERT INTO players VALUES (3, 'cy', 2.0)")
    wait_until(lambda: rows(sink_db, "players")[-1:] == [(3, "cy", 2.0)], 60, "the new row copied")
    # restarted, the source goes on after the last row it copied (its stored offset): nothing twice
    assert worker.call("POST", f"/connectors/{source}/restart")[0] == 204
    wait_until(lambda: running(worker, source), 30, "the source running again")
    with sqlite3.connect(source_db) as db:
        db.execute("INSERT INTO players VALUES (4, 'di', 0.5)")
    wait_until(lambda: len(rows(sink_db, "players")) == 4, 60, "row 4")
    wait_until(lambda: worker.get(f"/connectors/{source}/offsets")["offsets"] == [
        {"partition": {"table": "players"}, "offset": {"id": 4}}], 30, "the offset of row 4 committed")
    # a bad identifier is refused by validation, before any SQL runs
    status, body = worker.call("PUT", f"/connectors/{unique_name('bad')}/config", {
        "connector.class": "SqliteSink", "sqlite.path": str(sink_db), "table": "x; DROP TABLE players", "topics": topic})
    assert status == 400 and "not a plain SQL identifier" in body["message"]
    for name in (source, sink):
        assert worker.call("DELETE", f"/connectors/{name}")[0] == 204


def test_a_plugin_on_the_plugin_path(worker: Worker, broker: BrokerProcess, tmp_path: Path) -> None:
    plugins = {p["class"]: p for p in worker.get("/connector-plugins")}
    assert plugins["counters.CounterSource"] == {"class": "counters.CounterSource", "type": "source", "version": "1.0"}
    topic = unique_name("ticks")
    create_topic(broker.bootstrap, topic)
    name = unique_name("counter")
    assert worker.call("PUT", f"/connectors/{name}/config", {"connector.class": "CounterSource", "topic": topic,
                                                             "count": "3"})[0] == 201
    out = tmp_path / "ticks.txt"
    sink = unique_name("ticks-sink")
    assert worker.call("PUT", f"/connectors/{sink}/config", {"connector.class": "FileStreamSink", "file": str(out),
                                                             "topics": topic})[0] == 201
    wait_until(lambda: out.exists() and out.read_text().splitlines() == ["tick 2", "tick 1", "tick 0"], 60, "3 ticks")
