"""`odradek cluster up|status|down`: a ZooKeeper ensemble and brokers in ZooKeeper mode on one
host, as the guides build it by hand; status shows one leader, the registrations and the
controller; down leaves no process behind."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.cli.cluster import ELECTION_OFFSET, QUORUM_OFFSET, SECURE_OFFSET, default_http_base
from odradek.cli.server_stop import find_processes
from tests.harness import REPO_ROOT, odradek_cmd
from tests.waiting import interrupt_at_line
from tests.zkharness import kill_daemons

SRC = REPO_ROOT / "src" / "odradek"
ZK_STORE = SRC / "cluster" / "zk.py"
BROKER = SRC / "server" / "broker.py"


def _zookeeper_mode_missing() -> str | None:
    if not ZK_STORE.exists():
        return "the broker's ZooKeeper mode (src/odradek/cluster/zk.py) does not exist yet"
    if "cluster mode is not available in this build yet" in BROKER.read_text():
        return "the broker does not start in ZooKeeper mode yet (cluster mode not available in this build)"
    return None


pytestmark = pytest.mark.skipif(_zookeeper_mode_missing() is not None, reason=str(_zookeeper_mode_missing()))


def ports_free(ports: list[int]) -> bool:
    for port in ports:
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def pick_bases(zookeepers: int, brokers: int) -> tuple[int, int]:
    """A ZooKeeper base port (client, +707 quorum, +1707 election) and a broker base port, all free."""
    rng = random.Random()
    for _ in range(200):
        zk_base = rng.randrange(20000, 40000)
        base = rng.randrange(40000, 60000)
        zk_ports = [zk_base + off + i for off in (0, QUORUM_OFFSET, ELECTION_OFFSET, SECURE_OFFSET)
                    for i in range(zookeepers)]
        broker_ports = [base + i for i in range(brokers)]
        http_ports = [default_http_base(base, brokers) + i for i in range(brokers)]  # the metrics endpoints
        if len(set(zk_ports + broker_ports + http_ports)) == 4 * zookeepers + 2 * brokers and \
                ports_free(zk_ports + broker_ports + http_ports):
            return zk_base, base
    raise RuntimeError("no free port ranges found")


def cluster(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(odradek_cmd("cluster", *args), capture_output=True, text=True, timeout=timeout)


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def leftovers(directory: Path) -> list[int]:
    """Processes of a cluster directory still running: recorded pids and /proc matches."""
    pids: set[int] = set()
    state = directory / "cluster.json"
    if state.exists():
        data = json.loads(state.read_text())
        pids |= {n["pid"] for n in data["zookeepers"] + data["brokers"] if n.get("pid") and alive(n["pid"])}
    for props in directory.glob("broker*/server.properties"):
        pids |= set(find_processes("server-start", str(props)))
    return sorted(pids)


@pytest.fixture
def cluster_dir(tmp_path: Path) -> Iterator[Path]:
    """A cluster directory whose processes are SIGKILLed (by pid) after the test, whatever happened."""
    directory = tmp_path / "cluster"
    yield directory
    for pid in leftovers(directory):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    kill_daemons(*directory.glob("zk*/data"))


def test_up_status_down(cluster_dir: Path) -> None:
    zk_base, base = pick_bases(3, 2)
    up = cluster("up", "--brokers", "2", "--zookeepers", "3", "--dir", str(cluster_dir),
                 "--base-port", str(base), "--zk-base-port", str(zk_base))
    assert up.returncode == 0, up.stdout + up.stderr
    assert f"bootstrap servers: 127.0.0.1:{base},127.0.0.1:{base + 1}" in up.stdout
    connect = ",".join(f"127.0.0.1:{zk_base + i}" for i in range(3))
    assert f"zookeeper.connect: {connect}" in up.stdout

    zoo_cfg = (cluster_dir / "zk2" / "zoo.cfg").read_text()
    assert f"clientPort={zk_base + 1}" in zoo_cfg
    assert f"server.3=127.0.0.1:{zk_base + QUORUM_OFFSET + 2}:{zk_base + ELECTION_OFFSET + 2}" in zoo_cfg
    assert (cluster_dir / "zk2" / "data" / "myid").read_text().strip() == "2"
    props = (cluster_dir / "broker2" / "server.properties").read_text()
    assert "broker.id=1" in props and f"zookeeper.connect={connect}" in props
    assert "offsets.topic.replication.factor=2" in props

    state = json.loads((cluster_dir / "cluster.json").read_text())
    pids = [n["pid"] for n in state["zookeepers"] + state["brokers"]]
    assert len(pids) == 5 and all(alive(p) for p in pids)

    status = cluster("status", "--dir", str(cluster_dir), timeout=60)
    assert status.returncode == 0, status.stdout + status.stderr
    assert status.stdout.count("Mode: leader") == 1 and status.stdout.count("Mode: follower") == 2
    registered = [ln for ln in status.stdout.splitlines() if re.search(r"broker \d .* registered  http://", ln)]
    assert len(registered) == 2 and not any("not registered" in ln for ln in registered)
    # every broker serves its metrics where `up` and `status` say (the default --http-base-port)
    for i in range(2):
        url = f"http://127.0.0.1:{default_http_base(base, 2) + i}/metrics"
        assert url in up.stdout and url in status.stdout
        with urllib.request.urlopen(url, timeout=10) as resp:
            assert b"kafka_server_replicamanager_partitioncount" in resp.read()
    assert re.search(r"^Controller: broker [01]$", status.stdout, re.MULTILINE)

    down = cluster("down", "--dir", str(cluster_dir), timeout=120)
    assert down.returncode == 0, down.stdout + down.stderr
    assert "Stopping brokers ... STOPPED" in down.stdout and "Stopping zookeepers ... STOPPED" in down.stdout
    assert not any(alive(p) for p in pids)
    assert leftovers(cluster_dir) == []

    again = cluster("down", "--dir", str(cluster_dir), timeout=60)
    assert again.returncode == 0 and "none running" in again.stdout
    after = cluster("status", "--dir", str(cluster_dir), timeout=60)
    assert after.returncode == 1 and "not running" in after.stdout


def _assert_zookeeper_refuses_the_unauthenticated(connect: str) -> set[tuple[str, str]]:
    """An unauthenticated client's writes are refused; returns who may write /brokers/ids/0."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoAuthError
    from kazoo.security import Permissions

    anonymous = KazooClient(hosts=connect, timeout=10)
    anonymous.start(timeout=15)
    try:
        assert anonymous.get("/brokers/ids/0")[0]  # world-readable, as in Kafka
        acls = anonymous.get_acls("/brokers/ids/0")[0]
        for attempt in (lambda: anonymous.create("/kafka-acl/Topic/secret-alpha", b"{}", makepath=True),
                        lambda: anonymous.create("/config/changes/config_change_", b"{}", sequence=True),
                        lambda: anonymous.create("/config/brokers/0", b"{}"),
                        lambda: anonymous.create("/brokers/ids/9", b"{}"),
                        lambda: anonymous.set("/brokers/ids/0", b"{}")):
            with pytest.raises(NoAuthError):
                attempt()
    finally:
        anonymous.stop()
        anonymous.close()
    return {(a.id.scheme, a.id.id) for a in acls if a.perms == Permissions.ALL}


def test_up_with_sasl_ssl_replicates_and_serves_the_printed_client_config(cluster_dir: Path) -> None:
    """--security sasl_ssl: generated CA and certificate, an admin user; the brokers replicate over their
    SASL_SSL listener, and the client.properties `up` prints serves the tools and a librdkafka client."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    from odradek.config import parse_properties
    from odradek.security.client_config import librdkafka_config

    zk_base, base = pick_bases(1, 2)
    up = cluster("up", "--brokers", "2", "--zookeepers", "1", "--dir", str(cluster_dir), "--security", "sasl_ssl",
                 "--base-port", str(base), "--zk-base-port", str(zk_base), "--http-base-port", "0")
    assert up.returncode == 0, up.stdout + up.stderr
    props_file = cluster_dir / "security" / "client.properties"
    assert f"--command-config {props_file}" in up.stdout and f"--producer.config {props_file}" in up.stdout
    assert oct(props_file.stat().st_mode & 0o777) == "0o600"
    server = (cluster_dir / "broker1" / "server.properties").read_text()
    assert f"listeners=SASL_SSL://127.0.0.1:{base}" in server and "security.inter.broker.protocol=SASL_SSL" in server
    # the ACL authorizer runs, the brokers and the admin (both User:admin) its only super user
    assert "super.users=User:admin" in server and "allow.everyone.if.no.acl.found=false" in server
    assert "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer" in server
    # issue #36: every file holding a secret is its owner's alone, and ZooKeeper refuses who did not log in
    for name in ("broker1/server.properties", "broker2/server.properties", "security/admin.password",
                 "security/zookeeper.password", "security/zookeeper_server_jaas.conf",
                 "security/zookeeper_client_jaas.conf", "security/broker.pem", "security/admin.pem"):
        assert oct((cluster_dir / name).stat().st_mode & 0o777) == "0o600", name
    # the brokers reach ZooKeeper over TLS (its secure client port) and log in with SASL too
    assert "zookeeper.set.acl=true" in server and "zookeeper.ssl.client.enable=true" in server
    assert f"zookeeper.connect=127.0.0.1:{zk_base + SECURE_OFFSET}" in server
    creators = _assert_zookeeper_refuses_the_unauthenticated(f"127.0.0.1:{zk_base}")
    assert creators == {("sasl", "kafka"), ("x509", "CN=odradek-broker 127.0.0.1")}
    bootstrap = f"127.0.0.1:{base},127.0.0.1:{base + 1}"
    topics = subprocess.run(odradek_cmd("topics", "--bootstrap-server", bootstrap, "--command-config", str(props_file),
                                        "--create", "--topic", "secured", "--partitions", "1", "--replication-factor",
                                        "2"), capture_output=True, text=True, timeout=60)
    assert topics.returncode == 0, topics.stdout + topics.stderr
    conf = librdkafka_config(dict(parse_properties(props_file.read_text())))
    producer = Producer({**conf, "bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(50):
        producer.produce("secured", f"m{i}".encode())
    assert producer.flush(60) == 0  # acks=all: the follower fetched over SASL_SSL
    describe = subprocess.run(odradek_cmd("topics", "--bootstrap-server", bootstrap, "--command-config",
                                          str(props_file), "--describe", "--topic", "secured"),
                              capture_output=True, text=True, timeout=60)
    assert re.search(r"Replicas: (0,1|1,0)\tIsr: (0,1|1,0)", describe.stdout), describe.stdout
    consumer = Consumer({**conf, "bootstrap.servers": bootstrap, "group.id": "g", "enable.auto.commit": False})
    consumer.assign([TopicPartition("secured", 0, 0)])
    got: list[bytes] = []
    try:
        while len(got) < 50:
            got += [m.value() for m in consumer.consume(50, 1.0) if not m.error()]
    finally:
        consumer.close()
    assert got == [f"m{i}".encode() for i in range(50)]
    plain = Producer({"bootstrap.servers": bootstrap, "socket.timeout.ms": 3000, "message.timeout.ms": 3000})
    outcome: list[object] = []
    plain.produce("secured", b"x", on_delivery=lambda err, _msg: outcome.append(err))
    plain.flush(15)
    assert len(outcome) == 1 and outcome[0] is not None  # a plaintext client is not served
    down = cluster("down", "--dir", str(cluster_dir), timeout=120)
    assert down.returncode == 0, down.stdout + down.stderr


def test_up_with_ssl_requires_client_certificates_and_authorizes_them(cluster_dir: Path) -> None:
    """--security ssl: mutual TLS (the brokers replicate with their certificate, the admin of
    client.properties has one of its own), both super users; a TLS client without a certificate is refused."""
    from confluent_kafka import KafkaException, Producer
    from confluent_kafka.admin import AdminClient

    from odradek.config import parse_properties
    from odradek.security.client_config import librdkafka_config

    zk_base, base = pick_bases(1, 2)
    up = cluster("up", "--brokers", "2", "--zookeepers", "1", "--dir", str(cluster_dir), "--security", "ssl",
                 "--base-port", str(base), "--zk-base-port", str(zk_base), "--http-base-port", "0")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        server = (cluster_dir / "broker1" / "server.properties").read_text()
        assert "ssl.client.auth=required" in server
        assert "super.users=User:CN=odradek-broker 127.0.0.1;User:CN=admin" in server
        # ZooKeeper is secured whatever the listeners' protocol (issue #36)
        assert _assert_zookeeper_refuses_the_unauthenticated(f"127.0.0.1:{zk_base}") == {
            ("sasl", "kafka"), ("x509", "CN=odradek-broker 127.0.0.1")}
        props_file = cluster_dir / "security" / "client.properties"
        conf = {**librdkafka_config(dict(parse_properties(props_file.read_text()))),
                "bootstrap.servers": f"127.0.0.1:{base},127.0.0.1:{base + 1}"}
        topics = subprocess.run(odradek_cmd("topics", "--bootstrap-server", conf["bootstrap.servers"],
                                            "--command-config", str(props_file), "--create", "--topic", "mtls",
                                            "--partitions", "1", "--replication-factor", "2"),
                                capture_output=True, text=True, timeout=60)
        assert topics.returncode == 0, topics.stdout + topics.stderr
        producer = Producer({**conf, "acks": "all"})
        for i in range(20):
            producer.produce("mtls", f"m{i}".encode())
        assert producer.flush(60) == 0  # acks=all: the follower fetched as the broker's certificate
        anonymous = {k: v for k, v in conf.items() if k not in ("ssl.certificate.location", "ssl.key.location")}
        with pytest.raises(KafkaException):
            AdminClient({**anonymous, "socket.timeout.ms": 3000}).list_topics(timeout=5)
    finally:
        down = cluster("down", "--dir", str(cluster_dir), timeout=120)
        assert down.returncode == 0, down.stdout + down.stderr


def test_failed_up_stops_what_it_started(cluster_dir: Path) -> None:
    zk_base, base = pick_bases(1, 1)
    (cluster_dir / "broker1").mkdir(parents=True)
    (cluster_dir / "broker1" / "data").write_text("a file where the log directory should be")
    up = cluster("up", "--brokers", "1", "--zookeepers", "1", "--dir", str(cluster_dir),
                 "--base-port", str(base), "--zk-base-port", str(zk_base))
    assert up.returncode == 1
    assert "Traceback" not in up.stdout + up.stderr
    assert len(up.stderr.strip().splitlines()) == 1 and "broker 0 did not start" in up.stderr
    assert "log.dirs" in up.stderr
    assert leftovers(cluster_dir) == []
    assert kill_daemons(cluster_dir / "zk1" / "data") == []


def test_ctrl_c_during_up_stops_what_it_started(cluster_dir: Path) -> None:
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) once the first ZooKeeper server runs and
    while the rest of a three-server ensemble and its broker start: one line saying so, exit 130, no
    traceback, nothing left running. (With one ZooKeeper server the signal raced the rest of `up`, a
    broker's start: on a loaded machine the whole `up` could end before the test had read the line.)"""
    zk_base, base = pick_bases(3, 1)
    up = subprocess.Popen(odradek_cmd("cluster", "up", "--brokers", "1", "--zookeepers", "3", "--dir",
                                      str(cluster_dir), "--base-port", str(base), "--zk-base-port", str(zk_base)),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    out, err = interrupt_at_line(up, lambda line: line.startswith("zookeeper 1: ") and "STARTED" in line,
                                 timeout=120)
    assert up.returncode == 130, out + err
    assert "Traceback" not in out + err
    assert "interrupted: stopping the servers started so far ..." in err, err
    assert leftovers(cluster_dir) == []
    assert [pid for i in (1, 2, 3) for pid in kill_daemons(cluster_dir / f"zk{i}" / "data")] == []


def test_usage_errors(tmp_path: Path) -> None:
    assert cluster("--help").returncode == 0
    for args, text in [
        (("up", "--brokers", "none"), "--brokers"),
        (("up", "--no-such-flag"), "--no-such-flag"),
        (("status", "--dir", str(tmp_path / "nothing")), "no cluster"),
    ]:
        r = cluster(*args, timeout=60)
        assert r.returncode != 0 and text in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    r = cluster("down", "--dir", str(tmp_path / "nothing"), timeout=60)
    assert r.returncode == 0 and "nothing to stop" in r.stdout
