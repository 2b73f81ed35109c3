"""Test harness: start real `odradek` broker processes on 127.0.0.1, free ports, temp dirs; stop by pid.

`BrokerPool` is what the fixtures use: it starts brokers and clusters in fresh directories and stops every
one of them when the fixture that owns it ends.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from kazoo.client import KazooClient

from tests.waiting import wait_until

REPO_ROOT = Path(__file__).resolve().parent.parent  # the checkout these tests run from

# For tests of consumer groups: a group's first rebalance does not wait for more members to join.
NO_REBALANCE_DELAY = {"group.initial.rebalance.delay.ms": "0"}


def group_timers(kind: str, heartbeat_ms: int, session_ms: int | None = None) -> dict[str, str]:
    """Broker settings giving `kind` ("consumer" or "share") groups this heartbeat interval and session
    timeout, with the broker's bounds widened to allow them (Kafka's minimums are 5 s and 45 s)."""
    timers = {f"group.{kind}.heartbeat.interval.ms": str(heartbeat_ms),
              f"group.{kind}.min.heartbeat.interval.ms": str(heartbeat_ms)}
    if session_ms is not None:
        timers |= {f"group.{kind}.session.timeout.ms": str(session_ms),
                   f"group.{kind}.min.session.timeout.ms": str(min(session_ms, 45_000)),
                   f"group.{kind}.max.session.timeout.ms": str(max(session_ms, 60_000))}
    return timers


def _ephemeral_low() -> int:
    """The first port of the kernel's range for outgoing connections (Linux's default: 32768)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports(count: int) -> list[int]:
    """`count` distinct ports of 127.0.0.1 that were free a moment ago (bound together, then released).

    They are picked at random below the kernel's ephemeral range: a port the kernel hands out for bind(0) may
    be taken as the source port of any outgoing connection (a client of another test, another xdist worker)
    between this pick and the server's bind, and a broker that then fails to bind is not seen as failed when
    something else answers on its port."""
    low = max(_ephemeral_low(), 12000)
    rng = random.SystemRandom()
    held: list[socket.socket] = []
    try:
        while len(held) < count:
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", rng.randrange(10000, low)))
            except OSError:
                s.close()  # in use (or in TIME_WAIT): another
                continue
            held.append(s)
        return [s.getsockname()[1] for s in held]
    finally:
        for s in held:
            s.close()


def free_port() -> int:
    """One port of 127.0.0.1 that was free a moment ago (see free_ports)."""
    return free_ports(1)[0]


def wait_port(port: int, timeout: float = 20.0, proc: subprocess.Popen | None = None) -> None:
    """Until something listens on 127.0.0.1:`port`; fails at once if `proc` exits first."""

    def listening() -> bool:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {port}")
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True

    wait_until(listening, timeout, f"a listener on 127.0.0.1:{port}", interval=0.05, ignoring=(OSError,))


def stop_process(proc: subprocess.Popen, timeout: float = 20.0) -> None:
    """Stop a test's child process by pid: SIGTERM, then SIGKILL if it has not exited after `timeout` s."""
    if proc.poll() is not None:
        return
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)


def odradek_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "odradek.cli.main", *args]


def run_cli(*args: str, input: str | None = None, timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run(odradek_cmd(*args), input=input, capture_output=True, text=True, timeout=timeout)


@dataclass
class BrokerProcess:
    """One broker subprocess with its own properties file and data dir."""

    workdir: Path
    broker_id: int = 0
    port: int = 0
    overrides: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # added to the environment, e.g. KAFKA_OPTS
    proc: subprocess.Popen | None = None

    def __post_init__(self) -> None:
        if not self.port:
            self.port = free_port()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log_dir = self.workdir / "data"
        self.config_path = self.workdir / "server.properties"
        self.stdout_path = self.workdir / "broker.out"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def write_config(self) -> None:
        props = {
            "broker.id": str(self.broker_id),
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.log_dir),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "log.retention.check.interval.ms": "1000",
        }
        props.update(self.overrides)
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))

    def start(self, timeout: float = 30.0) -> BrokerProcess:
        self.write_config()
        with open(self.stdout_path, "ab") as out:
            self.proc = subprocess.Popen(
                odradek_cmd("server-start", str(self.config_path)),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, **self.env} if self.env else None,
            )
        try:
            wait_port(self.port, timeout, self.proc)
        except Exception:
            self.kill()
            raise RuntimeError(f"broker failed to start:\n{self.output()}") from None
        return self

    def partition_log_bytes(self, topic: str, partition: int) -> bytes:
        """The bytes of the partition's .log segments on this broker, in order (replicas compare equal)."""
        d = self.log_dir / f"{topic}-{partition}"
        return b"".join(f.read_bytes() for f in sorted(d.glob("*.log")))

    def output(self) -> str:
        try:
            return self.stdout_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 30.0) -> int | None:
        """Clean shutdown with SIGTERM, then SIGKILL if it does not exit in time."""
        if not self.alive():
            return self.proc.returncode if self.proc else None
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        """kill -9, as a crash."""
        if self.alive():
            assert self.proc is not None
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def restart(self, timeout: float = 30.0) -> BrokerProcess:
        self.stop()
        return self.start(timeout)


@dataclass
class BrokerCluster:
    """Several brokers sharing one ZooKeeper connect string (each a BrokerProcess of its own)."""

    workdir: Path
    zookeeper_connect: str
    size: int = 3
    overrides: dict[str, str] = field(default_factory=dict)
    per_broker: list[dict[str, str]] = field(default_factory=list)  # overrides of broker i, over `overrides`
    brokers: list[BrokerProcess] = field(default_factory=list)

    def __post_init__(self) -> None:
        chroot = "/odradek-" + uuid.uuid4().hex[:12]  # each cluster its own namespace in a shared ZooKeeper
        for i in range(self.size):
            props = {
                "zookeeper.connect": self.zookeeper_connect + chroot,
                "zookeeper.session.timeout.ms": "6000",
                "offsets.topic.replication.factor": str(min(3, self.size)),
                "replica.lag.time.max.ms": "6000",
                "replica.fetch.wait.max.ms": "200",
                **NO_REBALANCE_DELAY,
                **self.overrides,
                **(self.per_broker[i] if i < len(self.per_broker) else {}),
            }
            self.brokers.append(BrokerProcess(self.workdir / f"broker{i}", broker_id=i, overrides=props))

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers)

    def start(self, timeout: float = 60.0) -> BrokerCluster:
        for b in self.brokers:
            b.start()
        self.wait_registered(timeout)
        return self

    def wait_registered(self, timeout: float = 60.0) -> None:
        """Until every live broker's metadata lists every live broker (so topic creation sees them all)."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        live = [b for b in self.brokers if b.alive()]
        for b in live:
            client = AdminClient({"bootstrap.servers": b.bootstrap})
            wait_until(lambda client=client: len(client.list_topics(timeout=5).brokers) >= len(live), timeout,
                       f"broker {b.broker_id} to see all {len(live)} brokers", ignoring=(KafkaException,))

    def stop(self) -> None:
        for b in self.brokers:
            b.stop()

    @contextmanager
    def zookeeper(self) -> Iterator[KazooClient]:
        """A ZooKeeper client inside the cluster's namespace (chroot), closed afterwards."""
        z = KazooClient(hosts=self.brokers[0].overrides["zookeeper.connect"], timeout=10)
        z.start(timeout=15)
        try:
            yield z
        finally:
            z.stop()
            z.close()

    def controller_id(self) -> int:
        """The broker id in /controller."""
        with self.zookeeper() as z:
            return int(json.loads(z.get("/controller")[0])["brokerid"])

    def by_id(self, broker_id: int) -> BrokerProcess:
        return self.brokers[broker_id]


class BrokerPool:
    """Starts brokers and clusters, each in a fresh directory from `mktemp`, and stops them all on close()."""

    def __init__(self, mktemp: Callable[[str], Path]) -> None:
        self._mktemp = mktemp
        self._started: list[BrokerProcess | BrokerCluster] = []

    def start(self, overrides: Mapping[str, str] | None = None, name: str = "broker", port: int = 0) -> BrokerProcess:
        """A started single-node broker with these server.properties overrides; `port` (default: a free one)
        is the PLAINTEXT port the harness waits on, for overrides that name it in `listeners`."""
        broker = BrokerProcess(self._mktemp(name), port=port, overrides=dict(overrides or {}))
        self._started.append(broker)
        return broker.start()

    def directory(self, name: str) -> Path:
        """A fresh directory for a broker the test runs itself."""
        return self._mktemp(name)

    def start_cluster(self, zookeeper_connect: str, size: int = 3, overrides: Mapping[str, str] | None = None,
                      name: str = "cluster", per_broker: list[dict[str, str]] | None = None) -> BrokerCluster:
        """`size` started brokers registered in ZooKeeper at `zookeeper_connect`, each seeing all the others."""
        cluster = BrokerCluster(self._mktemp(name), zookeeper_connect, size=size, overrides=dict(overrides or {}),
                                per_broker=list(per_broker or []))
        self._started.append(cluster)
        return cluster.start()

    def close(self) -> None:
        for started in reversed(self._started):
            started.stop()  # SIGTERM by pid, SIGKILL when a broker does not exit in time
        self._started.clear()
