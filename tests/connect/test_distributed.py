"""`odradek connect-distributed`: three worker processes in one Connect group on one broker. A file source and a
file sink created through one worker's REST API run somewhere in the cluster (every worker's REST API shows
them, a follower forwards writes to the leader); the worker running tasks is killed with SIGKILL, its tasks move
to the others after the session timeout and the sink file ends with every source line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from odradek.connect.connect_protocol import (
    Assignment,
    WorkerState,
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
)
from odradek.connect.cooperative import LeaderMemory, cooperative_assign
from odradek.connect.distributed import eager_assign
from odradek.connect.group_member import Member
from odradek.connect.request_signing import SessionKey, signature_headers
from tests.connect_helpers import Worker
from tests.harness import BrokerProcess, free_port, odradek_cmd, run_cli, wait_port
from tests.waiting import wait_until

PROPS = ("group.id={group}\nkey.converter=org.apache.kafka.connect.storage.StringConverter\n"
         "value.converter=org.apache.kafka.connect.storage.StringConverter\n"
         "config.storage.topic={group}-configs\noffset.storage.topic={group}-offsets\n"
         "status.storage.topic={group}-status\nconfig.storage.replication.factor=1\n"
         "offset.storage.replication.factor=1\nstatus.storage.replication.factor=1\noffset.storage.partitions=2\n"
         "status.storage.partitions=2\nsession.timeout.ms=3000\nheartbeat.interval.ms=500\n"
         "rebalance.timeout.ms=10000\noffset.flush.interval.ms=300\nscheduled.rebalance.max.delay.ms=1000\n"
         # the sink task's consumer: its dead predecessor leaves the group `connect-snk` soon too
         "consumer.session.timeout.ms=3000\nconsumer.heartbeat.interval.ms=500\n")


class DistributedWorker(Worker):
    """A worker process of the group `group` (Worker's REST client; its own properties, no connector files)."""

    def __init__(self, cwd: Path, broker: BrokerProcess, group: str, protocol: str = "sessioned") -> None:
        cwd.mkdir(parents=True, exist_ok=True)
        self.cwd = cwd
        self.port = free_port()
        (cwd / "worker.properties").write_text(f"bootstrap.servers={broker.bootstrap}\n"
                                               f"listeners=http://127.0.0.1:{self.port}\nconnect.protocol={protocol}\n"
                                               + PROPS.format(group=group))
        self.proc = None

    def start(self, *_files: str) -> None:
        """Start the process (without waiting for its REST port: `wait_port` does)."""
        with open(self.cwd / "connect.out", "ab") as out:
            self.proc = subprocess.Popen(odradek_cmd("connect-distributed", "worker.properties"), cwd=self.cwd,
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def worker_id(self) -> str:
        return f"127.0.0.1:{self.port}"


def test_protocol_bytes_round_trip() -> None:
    state = WorkerState("http://w1:8083/", 42)
    raw = encode_metadata(state)
    assert raw == b"\x00\x00" + b"\x00\x0fhttp://w1:8083/" + (42).to_bytes(8, "big")
    assert decode_metadata(raw) == state
    a = Assignment(0, "leader-1", "http://w1:8083/", 7, ["c1"], [("c1", 0), ("c2", 1)])
    assert decode_assignment(encode_assignment(a)) == a
    v1 = Assignment(0, "l", "u", 3, ["c"], [("c", 0)], ["d"], [("d", 2)], 5000, version=1)
    assert decode_assignment(encode_assignment(v1)) == v1
    meta1 = WorkerState("u", 3, 1, v1)
    assert decode_metadata(encode_metadata(meta1)) == meta1


def test_eager_assignment_is_round_robin() -> None:
    members = [Member(m, WorkerState("u", 0)) for m in ("b", "a", "c")]
    plan = eager_assign(members, ["sink", "source"], {"sink": 2, "source": 1}, "a", "u", 9)
    assert (plan["a"].connectors, plan["b"].connectors, plan["c"].connectors) == (["sink"], ["source"], [])
    assert (plan["c"].tasks, plan["a"].tasks, plan["b"].tasks) == ([("sink", 0)], [("sink", 1)], [("source", 0)])


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return {"group.min.session.timeout.ms": "1000", "group.initial.rebalance.delay.ms": "0"}


@pytest.fixture(params=["sessioned", "default"])
def cluster(request: pytest.FixtureRequest, broker: BrokerProcess, tmp_path: Path) -> Iterator[list[DistributedWorker]]:
    """Three workers, incremental cooperative (`sessioned` configured: `compatible` offered) or eager."""
    group = f"dist-{os.getpid()}-{tmp_path.name[-20:]}"
    workers = [DistributedWorker(tmp_path / f"w{i}", broker, group, request.param) for i in range(3)]
    try:
        for w in workers:  # started side by side: the setup costs one start-up, not three
            w.start()
        for w in workers:
            try:
                wait_port(w.port, 60, w.proc)
            except RuntimeError as exc:  # exited: what it said is the diagnosis
                raise RuntimeError(f"{exc}\n{w.output()[-4000:]}") from None
        yield workers
    finally:
        for w in workers:
            if w.proc is not None and w.proc.poll() is None:
                w.proc.terminate()
        for w in workers:
            w.stop()


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _status(w: DistributedWorker, name: str) -> dict[str, Any]:
    code, body = w.call("GET", f"/connectors/{name}/status")
    return body if code == 200 else {}


def _running(w: DistributedWorker, name: str, tasks: int) -> bool:
    s = _status(w, name)
    return (s.get("connector", {}).get("state") == "RUNNING" and len(s.get("tasks", [])) == tasks
            and all(t["state"] == "RUNNING" for t in s["tasks"]))


def test_three_workers_share_connectors_and_survive_a_kill(cluster: list[DistributedWorker], tmp_path: Path) -> None:
    source, sink = tmp_path / "in.txt", tmp_path / "out.txt"
    topic = f"dist-{tmp_path.name[-20:]}"
    source.write_text("".join(f"line-{i}\n" for i in range(20)))
    w0, w1, w2 = cluster

    def create(w: DistributedWorker, name: str, config: dict[str, str]) -> None:
        def attempt() -> bool:  # 409 while the group is still forming
            code, body = w.call("POST", "/connectors", {"name": name, "config": config})
            assert code in (201, 409), (code, body)
            return code == 201
        wait_until(attempt, 60, lambda: f"{name} created\n{w.output()[-3000:]}")

    create(w1, "src", {"connector.class": "FileStreamSource", "file": str(source), "topic": topic})
    create(w2, "snk", {"connector.class": "FileStreamSink", "file": str(sink), "topics": topic})
    wait_until(lambda: all(_running(w, n, 1) for w in cluster for n in ("src", "snk")), 90,
               lambda: f"both running as every worker sees it: {_status(w0, 'src')} {_status(w0, 'snk')}\n"
                       + "\n".join(w.output()[-2000:] for w in cluster))
    assert w0.get("/connectors") == ["snk", "src"]
    # as Kafka's workers write them: the task class, and a sink's topics (a Java worker validates them there)
    sink_task = w1.get("/connectors/snk/tasks")[0]["config"]
    assert sink_task["topics"] == topic and sink_task["task.class"].endswith("FileStreamSinkTask")
    assert w2.get("/connectors/src/config")["file"] == str(source)
    wait_until(lambda: set(_lines(sink)) >= {f"line-{i}" for i in range(20)}, 60,
               lambda: f"sink has the first lines: {_lines(sink)}")
    # KIP-558's active topics are the status topic's: every worker answers alike, whichever runs the tasks,
    # and a reset through one is seen by all
    for name in ("src", "snk"):
        wait_until(lambda name=name: all(w.get(f"/connectors/{name}/topics") == {name: {"topics": [topic]}}
                                         for w in cluster), 30,
                   lambda name=name: f"{name}'s active topic through every worker: "
                                     f"{[w.get(f'/connectors/{name}/topics') for w in cluster]}")
    assert w0.call("PUT", "/connectors/snk/topics/reset") == (202, None)
    wait_until(lambda: all(w.get("/connectors/snk/topics") == {"snk": {"topics": []}} for w in cluster), 30,
               lambda: f"snk's topics reset everywhere: {[w.get('/connectors/snk/topics') for w in cluster]}")

    # kill -9 the worker running the sink task: it moves after the session timeout
    victim_id = _status(w0, "snk")["tasks"][0]["worker_id"]
    victim = next(w for w in cluster if w.worker_id == victim_id)
    assert victim.proc is not None
    victim.proc.send_signal(signal.SIGKILL)
    victim.proc.wait()
    with source.open("a") as f:
        f.writelines(f"line-{i}\n" for i in range(20, 40))
    survivor = next(w for w in cluster if w is not victim)
    wait_until(lambda: _running(survivor, "snk", 1) and _status(survivor, "snk")["tasks"][0]["worker_id"] != victim_id
               and _running(survivor, "src", 1) and _status(survivor, "src")["tasks"][0]["worker_id"] != victim_id,
               90, lambda: f"tasks moved off {victim_id}: {_status(survivor, 'snk')} {_status(survivor, 'src')}\n"
                           + survivor.output()[-3000:])
    wait_until(lambda: set(_lines(sink)) >= {f"line-{i}" for i in range(40)}, 60,
               lambda: f"sink has every line: {sorted(set(_lines(sink)))}\n{survivor.output()[-3000:]}")
    # the sink's later records record its topic again, for every worker to see
    wait_until(lambda: survivor.get("/connectors/snk/topics") == {"snk": {"topics": [topic]}}, 30,
               lambda: f"snk's topic recorded again: {survivor.get('/connectors/snk/topics')}")
    # the internal topics hold Kafka's records
    code, offsets = survivor.call("GET", "/connectors/src/offsets")
    assert code == 200 and offsets["offsets"][0]["partition"] == {"filename": str(source)}, offsets
    assert json.loads(json.dumps(survivor.get("/connectors/snk")))["type"] == "sink"


def _member(mid: str, connectors: list[str], tasks: list[tuple[str, int]]) -> Member:
    return Member(mid, WorkerState("u", 0, 1, Assignment(connectors=connectors, tasks=tasks, version=1)))


def test_cooperative_assignment_keeps_work_holds_lost_work_back_and_balances() -> None:
    memory = LeaderMemory()
    counts = {"a": 2, "b": 1}
    plan = cooperative_assign([_member("m1", [], []), _member("m2", [], [])], ["a", "b"], counts, "m1", "u", 5,
                              memory, 1000, now=0.0)
    held = {mid: (a.connectors, a.tasks) for mid, a in plan.items()}
    assert sorted(c for cs, _ in held.values() for c in cs) == ["a", "b"]
    assert sorted(t for _, ts in held.values() for t in ts) == [("a", 0), ("a", 1), ("b", 0)]
    assert all(a.version == 1 and not a.revoked_tasks and a.delay_ms == 0 for a in plan.values())
    # m2 vanishes: its work is held back for the delay, then given to m1
    plan = cooperative_assign([_member("m1", *held["m1"])], ["a", "b"], counts, "m1", "u", 5, memory, 1000, now=1.0)
    assert plan["m1"].connectors == [] and plan["m1"].tasks == [] and 0 < plan["m1"].delay_ms <= 1000
    plan = cooperative_assign([_member("m1", *held["m1"])], ["a", "b"], counts, "m1", "u", 5, memory, 1000, now=2.5)
    assert sorted(plan["m1"].connectors + held["m1"][0]) == ["a", "b"] and plan["m1"].delay_ms == 0
    everything = (["a", "b"], [("a", 0), ("a", 1), ("b", 0)])
    # a new member: the loaded one gives up its excess, dealt out next round; a deleted connector is revoked
    plan = cooperative_assign([_member("m1", *everything), _member("m3", [], [])], ["a"], {"a": 2}, "m1", "u", 5,
                              memory, 1000, now=3.0)
    assert "b" in plan["m1"].revoked_connectors and ("b", 0) in plan["m1"].revoked_tasks
    assert len(plan["m1"].revoked_tasks) + len(plan["m1"].revoked_connectors) == 3  # b, b-0 and one to balance


@pytest.mark.parametrize("cluster", ["sessioned"], indirect=True)
def test_restarts_through_any_worker(cluster: list[DistributedWorker], tmp_path: Path) -> None:
    """A connector restart is a config-topic record its holders act on; a task restart goes to the task's worker."""
    source = tmp_path / "in.txt"
    source.write_text("x\n")
    w0, w1, _w2 = cluster
    config = {"connector.class": "FileStreamSource", "file": str(source), "topic": f"r-{tmp_path.name[-20:]}",
              "tasks.max": "1"}
    wait_until(lambda: w0.call("PUT", "/connectors/r/config", config)[0] in (200, 201), 60, "r created")
    wait_until(lambda: all(_running(w, "r", 1) for w in cluster), 60, lambda: f"r running: {_status(w0, 'r')}")
    code, body = w1.call("POST", "/connectors/r/restart?includeTasks=true")
    assert code == 202 and body["connector"]["state"] == "RESTARTING" and body["tasks"][0]["state"] == "RESTARTING"
    # a worker answers 409 while the restart's rebalance is under way (Kafka's "rebalance in progress")
    for w in cluster:
        wait_until(lambda w=w: w.call("POST", "/connectors/r/tasks/0/restart")[0] == 204, 60,
                   "the task restarted through each worker")
    wait_until(lambda: w0.call("POST", "/connectors/r/restart")[0] == 204, 60, "the connector restarted")
    assert w0.call("POST", "/connectors/nope/restart")[0] == 404
    assert w0.call("POST", "/connectors/r/tasks/7/restart")[0] == 404
    wait_until(lambda: all(_running(w, "r", 1) for w in cluster), 60, lambda: f"r running again: {_status(w0, 'r')}")
    started = sum(w.output().count("WorkerTask{id=r-0} Source task finished initialization") for w in cluster)
    assert started >= 1 + len(cluster), started  # the first start, then one per task restart at least
    # a write already forwarded once is not sent on again by a worker that is not the leader: 409, the client
    # retries (the leader takes it)
    codes = []
    for w in cluster:
        req = urllib.request.Request(f"http://127.0.0.1:{w.port}/connectors/r/resume", method="PUT",
                                     headers={"X-Odradek-Forwarded": "1"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                codes.append(resp.status)
        except urllib.error.HTTPError as err:
            codes.append(err.code)
    assert sorted(codes) == [202, 409, 409], codes


def test_a_worker_without_its_distributed_keys_is_refused(tmp_path: Path) -> None:
    props = tmp_path / "worker.properties"
    props.write_text("bootstrap.servers=127.0.0.1:1\nkey.converter=org.apache.kafka.connect.json.JsonConverter\n"
                     "value.converter=org.apache.kafka.connect.json.JsonConverter\n")
    r = run_cli("connect-distributed", str(props), timeout=60)
    assert r.returncode == 1
    assert r.stderr.strip() == 'Error: Missing required configuration "group.id" which has no default value.'


def _session_key(broker: BrokerProcess, topic: str) -> SessionKey | None:
    """The last session key in the config topic `topic`."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"{topic}-reader", "enable.auto.commit": False})
    try:
        _low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        c.assign([TopicPartition(topic, 0, 0)])
        key, read = None, 0
        while read < high:
            m = c.poll(5)
            if m is None:
                break
            read += 1
            if not m.error() and m.key() == b"session-key":
                key = SessionKey.from_record(json.loads(m.value()))
        return key
    finally:
        c.close()


def _post_tasks(w: DistributedWorker, name: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    req = urllib.request.Request(f"http://127.0.0.1:{w.port}/connectors/{name}/tasks", data=body, method="POST",
                                 headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, None
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


@pytest.mark.parametrize("cluster", ["sessioned"], indirect=True)
def test_sessioned_workers_sign_their_internal_requests(cluster: list[DistributedWorker], broker: BrokerProcess,
                                                        tmp_path: Path) -> None:
    """KIP-507: the leader writes a session key to the config topic in Kafka's format; a connector owned by any
    worker gets its task configs written (the owner signs them to the leader); a forged or unsigned task-config
    write is refused by every worker in Kafka's words, and one signed with the key is taken."""
    props = dict(line.split("=", 1) for line in (cluster[0].cwd / "worker.properties").read_text().splitlines())
    topic = props["config.storage.topic"]
    key = wait_until(lambda: _session_key(broker, topic), 60, "the leader's session key in the config topic")
    assert key.algorithm == "HmacSHA256" and len(key.key) == 32
    source = tmp_path / "in.txt"
    source.write_text("x\n")
    for i in range(3):  # spread over the workers: some are owned by followers, whose writes are signed
        config = {"connector.class": "FileStreamSource", "file": str(source), "topic": f"s-{tmp_path.name[-20:]}",
                  "tasks.max": "1"}
        wait_until(lambda i=i, config=config: cluster[0].call("PUT", f"/connectors/s{i}/config", config)[0]
                   in (200, 201), 60, f"s{i} created")
    for i in range(3):
        wait_until(lambda i=i: _running(cluster[0], f"s{i}", 1), 60, lambda i=i: f"s{i}: {_status(cluster[0], f's{i}')}")
    assert not any("refused the task configs" in w.output() for w in cluster)

    forged = json.dumps([{"task.class": "x", "file": "/etc/passwd"}]).encode()
    for w in cluster:
        assert _post_tasks(w, "s0", forged, {}) == (400, {"error_code": 400,
                                                         "message": "Internal request missing required signature"})
        bad = signature_headers(SessionKey(b"\x00" * 32, "HmacSHA256", 0), "HmacSHA256", forged)
        assert _post_tasks(w, "s0", forged, bad) == (403, {"error_code": 403,
                                                          "message": "Internal request contained invalid signature."})
        code, body = _post_tasks(w, "s0", forged, signature_headers(key, "HmacSHA512", forged))
        assert code == 400 and "does not support the 'HmacSHA512' key signing algorithm" in body["message"]
    assert cluster[0].call("GET", "/connectors/s0/tasks")[1][0]["config"].get("file") == str(source)
    # the key's holder may write them (the signature covers the exact bytes)
    genuine = json.dumps([{"task.class": "org.apache.kafka.connect.file.FileStreamSourceTask",
                           "file": str(source), "topic": "elsewhere"}]).encode()
    assert _post_tasks(cluster[2], "s0", genuine, signature_headers(key, "HmacSHA256", genuine))[0] == 204
    wait_until(lambda: cluster[0].call("GET", "/connectors/s0/tasks")[1][0]["config"].get("topic") == "elsewhere",
               30, "the signed task configs written")


@pytest.mark.parametrize("cluster", ["sessioned"], indirect=True)
def test_offsets_of_a_stopped_source_change_through_any_worker(cluster: list[DistributedWorker],
                                                               tmp_path: Path) -> None:
    """KIP-875 on a Connect cluster: a running connector's offsets are refused; once STOPPED (the target state in
    the config topic), a follower alters them in the offsets topic, every worker shows them, and a reset through
    another worker erases them."""
    infile, topic = tmp_path / "in.txt", f"o-{tmp_path.name[-20:]}"
    infile.write_text("a\nb\n")
    w0, w1, w2 = cluster
    config = {"connector.class": "FileStreamSource", "file": str(infile), "topic": topic, "tasks.max": "1"}
    wait_until(lambda: w0.call("PUT", "/connectors/o/config", config)[0] in (200, 201), 60, "o created")
    position = {"partition": {"filename": str(infile)}, "offset": {"position": 4}}
    wait_until(lambda: w1.call("GET", "/connectors/o/offsets")[1] == {"offsets": [position]}, 60,
               lambda: f"o's offsets committed: {w1.call('GET', '/connectors/o/offsets')}")
    code, body = w1.call("PATCH", "/connectors/o/offsets", {"offsets": [position]})
    assert code == 400 and body["message"].startswith("Connectors must be in the STOPPED state"), body
    wait_until(lambda: w2.call("PUT", "/connectors/o/stop")[0] == 204, 60, "o stopped")
    wait_until(lambda: _status(w0, "o").get("connector", {}).get("state") == "STOPPED"
               and w0.call("GET", "/connectors/o/tasks")[1] == [], 60, "o stopped, without tasks")
    back = {"partition": {"filename": str(infile)}, "offset": {"position": 2}}
    assert w1.call("PATCH", "/connectors/o/offsets", {"offsets": [back]}) == (
        200, {"message": "The offsets for this connector have been altered successfully"})
    for w in cluster:
        wait_until(lambda w=w: w.call("GET", "/connectors/o/offsets")[1] == {"offsets": [back]}, 30,
                   "the altered offsets on every worker")
    assert w2.call("DELETE", "/connectors/o/offsets") == (
        200, {"message": "The offsets for this connector have been reset successfully"})
    for w in cluster:
        wait_until(lambda w=w: w.call("GET", "/connectors/o/offsets")[1] == {"offsets": []}, 30,
                   "the offsets erased on every worker")
