"""`odradek cluster up|status|down`: the guides' pseudo-cluster on one host, in one command.

``up`` lays out a directory (default ``./odradek-cluster``) the way the Kafka guides do by hand:
``zk<N>/zoo.cfg`` and ``zk<N>/data/myid`` for each ZooKeeper server (client port
``zk-base-port + N - 1``; quorum and election ports ``zk-base-port + 707 + N - 1`` and
``zk-base-port + 1707 + N - 1``, i.e. 2888 and 3888 for the default 2181, so clusters with
different bases can coexist), starts them with ``odradek zookeeper-server-start --daemon``, waits
for a leader, then writes ``broker<N>/server.properties`` (``broker.id = N - 1``, port
``base-port + N - 1``, ``zookeeper.connect`` naming every server) and starts each broker with
``odradek server-start -daemon``, waiting until all are registered under ``/brokers/ids``.
Everything started is recorded in ``cluster.json`` (ports, configs, pids) as it goes.

``status`` shows each ZooKeeper server's mode, each broker's registration and pid, and the
controller; it exits 1 when any part is down. ``down`` stops the brokers (SIGTERM, up to 60 s),
then the ZooKeeper servers, found by command line (psutil: a reused pid is never signalled); it is
idempotent. A failed ``up`` stops whatever it had started.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import psutil

from odradek.admin_client.command import ArgParser, parse_int
from odradek.admin_client.errors import CliError, UsageError
from odradek.cli import processes
from odradek.cli.cluster_security import PROTOCOLS, ClusterSecurity, write_private
from odradek.cli.common import run_subcommand
from odradek.cli.server_stop import find_processes, running
from odradek.cli.zk_session import ZkSession, broker_ids, controller_id
from odradek.cli.zookeeper import GENERATED_CFG, PID_FILE, find_servers, server_mode, servers
from odradek.cluster.store import MetadataStore
from odradek.fsutil import atomic_write

STATE_FILE = "cluster.json"
BROKER_OUT = "odradek-server.out"  # what server-start -daemon writes in $LOG_DIR
DEFAULT_DIR = "odradek-cluster"
QUORUM_OFFSET = 707  # 2181 -> 2888, as in the guides
ELECTION_OFFSET = 1707  # 2181 -> 3888
SECURE_OFFSET = 100  # 2181 -> 2281: the TLS client port (secureClientPort) with --security ssl/sasl_ssl
BROKER_STOP_TIMEOUT = 60.0
ZOOKEEPER_STOP_TIMEOUT = 30.0
R = TypeVar("R")  # what load_record builds of a record


# ---------------------------------------------------------------------------------------------
# The layout, recorded in cluster.json
# ---------------------------------------------------------------------------------------------


def save_record(path: Path, data: dict[str, Any]) -> None:
    """Write a cluster's JSON record (`cluster.json`, `spark.json`) whole or not at all."""
    atomic_write(path, json.dumps(data, indent=2) + "\n")


def load_record(path: Path, what: str, build: Callable[[dict[str, Any]], R]) -> R | None:
    """What `build` makes of the JSON record at `path`; None when there is none. A record that does not
    parse or build is a CliError: `path` is not `what`."""
    if not path.is_file():
        return None
    try:
        return build(json.loads(path.read_text()))
    except (ValueError, KeyError, TypeError) as exc:
        raise CliError(f"Error: {path} is not {what}: {exc}") from None



class Node:
    """A process of the cluster: the config file it runs (whose directory is its home), its pid."""

    config: str
    pid: int | None

    @property
    def home(self) -> Path:
        return Path(self.config).parent


@dataclass
class ZkNode(Node):
    """One ZooKeeper server of the cluster."""

    id: int
    client_port: int
    quorum_port: int
    election_port: int
    config: str
    pid: int | None = None
    secure_port: int = 0  # the TLS client port, 0: none

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    @property
    def generated_cfg(self) -> Path:
        return self.data_dir / GENERATED_CFG


@dataclass
class BrokerNode(Node):
    """One broker of the cluster."""

    id: int
    port: int
    config: str
    pid: int | None = None
    http_port: int = 0  # the broker's http.listener (metrics), 0: none


@dataclass
class LocalCluster:
    """The whole pseudo-cluster: where it lives, its hosts, ports and pids."""

    dir: str
    host: str
    zookeepers: list[ZkNode] = field(default_factory=list)
    brokers: list[BrokerNode] = field(default_factory=list)
    security: str = "PLAINTEXT"  # the brokers' listener: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL

    @property
    def secured(self) -> ClusterSecurity:
        return ClusterSecurity(self.security, Path(self.dir) / "security")

    @property
    def zookeeper_connect(self) -> str:
        return ",".join(f"{self.host}:{z.client_port}" for z in self.zookeepers)

    @property
    def broker_zookeeper_connect(self) -> str:
        """What the brokers connect to: the TLS client ports when the servers have them."""
        if all(z.secure_port for z in self.zookeepers):
            return ",".join(f"{self.host}:{z.secure_port}" for z in self.zookeepers)
        return self.zookeeper_connect

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{self.host}:{b.port}" for b in self.brokers)

    @property
    def state_file(self) -> Path:
        return Path(self.dir) / STATE_FILE

    def save(self) -> None:
        save_record(self.state_file, asdict(self) | {"zookeeper_connect": self.zookeeper_connect,
                                                     "bootstrap_servers": self.bootstrap_servers})

    @classmethod
    def load(cls, directory: Path) -> LocalCluster | None:
        return load_record(directory / STATE_FILE, "a cluster record", cls.from_record)

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> LocalCluster:
        return cls(
            dir=data["dir"],
            host=data["host"],
            zookeepers=[ZkNode(**z) for z in data["zookeepers"]],
            brokers=[BrokerNode(**b) for b in data["brokers"]],
            security=data.get("security", "PLAINTEXT"),
        )


def plan(directory: Path, host: str, zookeepers: int, brokers: int, zk_base: int, base: int,
         http_base: int = 0, security: str = "PLAINTEXT") -> LocalCluster:
    """The layout for `zookeepers` servers and `brokers` brokers (nothing is written); with `http_base`
    each broker's metrics endpoint listens on http_base + N - 1."""
    highest = max(zk_base + ELECTION_OFFSET + zookeepers - 1, base + brokers - 1, http_base + brokers - 1)
    if highest > 65535:
        raise UsageError(f"Error: ports would go up to {highest}; choose lower --zk-base-port/--base-port")
    cluster = LocalCluster(str(directory), host, security=security)
    for n in range(1, zookeepers + 1):
        ports = (zk_base + n - 1, zk_base + QUORUM_OFFSET + n - 1, zk_base + ELECTION_OFFSET + n - 1)
        secure = zk_base + SECURE_OFFSET + n - 1 if cluster.secured.tls else 0
        cluster.zookeepers.append(ZkNode(n, *ports, config=str(directory / f"zk{n}" / "zoo.cfg"),
                                         secure_port=secure))
    for n in range(1, brokers + 1):
        config = str(directory / f"broker{n}" / "server.properties")
        cluster.brokers.append(BrokerNode(n - 1, base + n - 1, config,
                                          http_port=http_base + n - 1 if http_base else 0))
    return cluster


def cluster_ports(cluster: LocalCluster) -> list[int]:
    zk = [p for z in cluster.zookeepers for p in (z.client_port, z.quorum_port, z.election_port, z.secure_port) if p]
    return zk + [b.port for b in cluster.brokers] + [b.http_port for b in cluster.brokers if b.http_port]


def port_is_free(host: str, port: int) -> bool:
    """Whether a server could bind host:port now (SO_REUSEADDR, as servers set it)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def check_ports(cluster: LocalCluster) -> None:
    ports = cluster_ports(cluster)
    if len(set(ports)) != len(ports):
        raise UsageError("Error: the ZooKeeper, broker and HTTP port ranges overlap; change --base-port, "
                         "--zk-base-port or --http-base-port")
    busy = [p for p in ports if not port_is_free(cluster.host, p)]
    if busy:
        raise CliError(f"Error: port(s) on {cluster.host} already in use: {'; '.join(_port_roles(cluster, busy))}")


def _port_roles(cluster: LocalCluster, ports: list[int]) -> list[str]:
    """Each busy port with what it was for and the flag that moves it."""
    roles: dict[int, str] = {}
    for z in cluster.zookeepers:
        roles[z.client_port] = f"ZooKeeper {z.id}'s client port (--zk-base-port)"
        roles[z.quorum_port] = f"ZooKeeper {z.id}'s quorum port (--zk-base-port)"
        roles[z.election_port] = f"ZooKeeper {z.id}'s election port (--zk-base-port)"
        if z.secure_port:
            roles[z.secure_port] = f"ZooKeeper {z.id}'s TLS client port (--zk-base-port)"
    for b in cluster.brokers:
        roles[b.port] = f"broker {b.id}'s port (--base-port)"
        if b.http_port:
            roles[b.http_port] = f"broker {b.id}'s metrics port (--http-base-port)"
    return [f"{p}, {roles.get(p, 'a cluster port')}" for p in ports]


# ---------------------------------------------------------------------------------------------
# Config files
# ---------------------------------------------------------------------------------------------


def zk_config_text(cluster: LocalCluster, node: ZkNode) -> str:
    lines = ["tickTime=2000", "initLimit=10", "syncLimit=5", f"dataDir={node.data_dir}",
             f"clientPort={node.client_port}", f"clientPortAddress={cluster.host}"]
    if len(cluster.zookeepers) > 1:
        lines += [f"server.{z.id}={cluster.host}:{z.quorum_port}:{z.election_port}" for z in cluster.zookeepers]
    lines += cluster.secured.zookeeper_config(cluster.host, node.secure_port)
    return "\n".join(lines) + "\n"


def write_zk_config(cluster: LocalCluster, node: ZkNode) -> None:
    node.data_dir.mkdir(parents=True, exist_ok=True)
    Path(node.config).write_text(zk_config_text(cluster, node))
    if len(cluster.zookeepers) > 1:
        (node.data_dir / "myid").write_text(f"{node.id}\n")


def broker_properties(cluster: LocalCluster, broker: BrokerNode) -> dict[str, str]:
    replication = str(min(3, len(cluster.brokers)))
    return {
        "broker.id": str(broker.id),
        **cluster.secured.broker_properties(f"{cluster.host}:{broker.port}", cluster.host),
        "log.dirs": str(broker.home / "data"),
        "zookeeper.connect": cluster.broker_zookeeper_connect,
        "offsets.topic.replication.factor": replication,
        "default.replication.factor": "1",
        "num.partitions": "1",
        "group.initial.rebalance.delay.ms": "0",
    } | ({"http.listener": f"{cluster.host}:{broker.http_port}"} if broker.http_port else {})


def metrics_url(cluster: LocalCluster, broker: BrokerNode) -> str:
    host = f"[{cluster.host}]" if ":" in cluster.host else cluster.host
    return f"http://{host}:{broker.http_port}/metrics"


def write_broker_config(cluster: LocalCluster, broker: BrokerNode) -> None:
    broker.home.mkdir(parents=True, exist_ok=True)
    props = broker_properties(cluster, broker)
    header = "# Written by odradek cluster up; one broker of the pseudo-cluster in this directory.\n"
    write_private(Path(broker.config), header + "".join(f"{k}={v}\n" for k, v in props.items()))


# ---------------------------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------------------------


def run_odradek(args: list[str], log_dir: Path, timeout: float = 120.0, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess[str]:
    """Run `odradek <args>` with LOG_DIR (and `env`) set; its output is captured."""
    env = {**os.environ, **(env or {}), "LOG_DIR": str(log_dir)}
    cmd = [sys.executable, "-m", "odradek.cli.main", *args]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise CliError(f"Error: odradek {' '.join(args)} did not finish within {timeout:.0f} s") from None


def failure_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = [ln.strip() for ln in (result.stderr + "\n" + result.stdout).splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("Error")]
    return (errors or lines or [f"exit status {result.returncode}"])[0].removeprefix("Error: ")


def lines_written(out: Path, offset: int) -> list[str]:
    """The lines a process wrote to its output file `out` after `offset` (none if it cannot be read)."""
    try:
        with open(out, "rb") as fh:
            fh.seek(offset)
            return fh.read().decode(errors="replace").splitlines()
    except OSError:
        return []


def broker_error(out: Path, offset: int) -> str | None:
    """The broker's own one-line complaint ('Error: ...') written to its output after `offset`."""
    errors = [ln.strip() for ln in lines_written(out, offset) if ln.startswith("Error:") or " ERROR " in ln]
    return errors[-1].removeprefix("Error: ") if errors else None


def zk_pids(node: ZkNode) -> list[int]:
    """Live servers of `node` (found by their generated config)."""
    return find_servers(node.generated_cfg)


def broker_pids(broker: BrokerNode) -> list[int]:
    """Live broker processes of `broker`'s config."""
    return find_processes("server-start", broker.config)


def wait_for(condition: Callable[[], bool], timeout: float, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True


# ---------------------------------------------------------------------------------------------
# ZooKeeper queries
# ---------------------------------------------------------------------------------------------


def zk_modes(cluster: LocalCluster) -> list[str | None]:
    return [server_mode(cluster.host, z.client_port, timeout=2.0) for z in cluster.zookeepers]


def has_quorum(modes: list[str | None]) -> bool:
    """Every server serves, with exactly one leader (or is the standalone server)."""
    if None in modes:
        return False
    return modes == ["standalone"] or modes.count("leader") == 1


@dataclass
class Registry:
    """What the brokers registered in ZooKeeper."""

    broker_ids: list[int]
    controller: int | None


def read_registry(connect: str, timeout: float = 10.0) -> Registry | None:
    """/brokers/ids children and the /controller's brokerid, or None when ZooKeeper is unreachable."""

    async def body(store: MetadataStore) -> Registry:
        return Registry(await broker_ids(store), await controller_id(store))

    try:
        with ZkSession(connect, int(timeout * 1000), require_cluster=False) as zk:
            return zk.run(body)
    except CliError:
        return None


# ---------------------------------------------------------------------------------------------
# cluster up
# ---------------------------------------------------------------------------------------------


def up_parser() -> ArgParser:
    parser = ArgParser(
        "cluster up",
        "Start a local cluster: a ZooKeeper ensemble and brokers in ZooKeeper mode, all on one host.",
        allow_abbrev=False,
    )
    parser.add_argument("--zookeepers", default="3", metavar="N", help="ZooKeeper servers (default 3)")
    parser.add_argument("--brokers", default="3", metavar="N", help="brokers (default 3)")
    parser.add_argument("--dir", default=DEFAULT_DIR, metavar="DIR", help=f"where it lives (default ./{DEFAULT_DIR})")
    parser.add_argument("--base-port", default="9092", metavar="PORT", help="port of broker 0 (default 9092)")
    parser.add_argument("--http-base-port", default=None, metavar="PORT",
                        help="metrics endpoint (http.listener) of broker 0, the next brokers on the following "
                             "ports (default: --base-port + 10000, or - 10000 near 65535; 0 for none)")
    parser.add_argument("--zk-base-port", default="2181", metavar="PORT",
                        help="client port of ZooKeeper 1 (default 2181; quorum/election ports +707/+1707)")
    parser.add_argument("--host", default="127.0.0.1", metavar="HOST", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--timeout", default="120", metavar="SECONDS", help="how long to wait for each stage")
    parser.add_argument("--security", default="plaintext", choices=sorted(PROTOCOLS), type=str.lower,
                        help="the brokers' listener (also between brokers): with ssl/sasl_ssl a CA and broker "
                             "certificate are generated, with sasl_* an admin user (SASL/PLAIN) with a generated "
                             "password; clients use <dir>/security/client.properties (default plaintext)")
    return parser


def default_http_base(base: int, brokers: int) -> int:
    """The metrics ports' default: 10000 above the broker ports, or 10000 below when that would pass
    65535, or none (0)."""
    if base + 10000 + brokers - 1 <= 65535:
        return base + 10000
    return base - 10000 if base - 10000 >= 1024 else 0


def http_base(args: Any) -> int:
    if args.http_base_port is None:
        return default_http_base(parse_int(args.base_port, "--base-port", minimum=1),
                                 parse_int(args.brokers, "--brokers", minimum=1))
    return parse_int(args.http_base_port, "--http-base-port", minimum=0)


def up(argv: list[str]) -> int:
    args = up_parser().parse_args(argv)
    directory = Path(args.dir).expanduser().absolute()
    cluster = plan(
        directory,
        args.host,
        parse_int(args.zookeepers, "--zookeepers", minimum=1),
        parse_int(args.brokers, "--brokers", minimum=1),
        parse_int(args.zk_base_port, "--zk-base-port", minimum=1),
        parse_int(args.base_port, "--base-port", minimum=1),
        http_base(args),
        PROTOCOLS[args.security],
    )
    timeout = float(parse_int(args.timeout, "--timeout", minimum=1))
    refuse_if_running(directory)
    check_ports(cluster)
    if not all_or_nothing(directory, lambda: bring_up(cluster, timeout), lambda: tear_down(cluster, quiet=True),
                          "the cluster"):
        return 130
    print_usage(cluster)
    return 0


def all_or_nothing(directory: Path, start: Callable[[], None], stop: Callable[[], None], what: str) -> bool:
    """Create `directory` and `start` everything in it (`odradek spark up` too). A failed start `stop`s what
    it had started and its error goes on; an interrupted one (Ctrl-C) stops it saying so and returns False."""
    directory.mkdir(parents=True, exist_ok=True)
    try:
        start()
    except CliError:
        stop()
        raise
    except KeyboardInterrupt:
        print("\ninterrupted: stopping the servers started so far ...", file=sys.stderr, flush=True)
        stop()
        print(f"stopped; nothing of {what} is left running", file=sys.stderr)
        return False
    return True


def refuse_if_running(directory: Path) -> None:
    existing = LocalCluster.load(directory)
    if existing is None:
        return
    if any(zk_pids(z) for z in existing.zookeepers) or any(broker_pids(b) for b in existing.brokers):
        raise CliError(f"Error: a cluster is already running in {directory} (odradek cluster down --dir {directory})")


def bring_up(cluster: LocalCluster, timeout: float) -> None:
    if len(cluster.zookeepers) % 2 == 0:
        print(f"Note: {len(cluster.zookeepers)} ZooKeeper servers tolerate no more failures than "
              f"{len(cluster.zookeepers) - 1}; an odd number is usual.")
    cluster.save()
    if cluster.security != "PLAINTEXT":
        cluster.secured.prepare(cluster.host)
        print(f"security: {cluster.security} listeners; clients use {cluster.secured.client_properties}")
    for node in cluster.zookeepers:
        start_zookeeper(cluster, node, timeout)
    wait_for_quorum(cluster, timeout)
    for broker in cluster.brokers:
        start_broker(cluster, broker, timeout)
    wait_for_registration(cluster, timeout)


def start_zookeeper(cluster: LocalCluster, node: ZkNode, timeout: float) -> None:
    write_zk_config(cluster, node)
    print(f"zookeeper {node.id}: {cluster.host}:{node.client_port} ... ", end="", flush=True)
    result = run_odradek(["zookeeper-server-start", "--daemon", "--timeout", str(int(timeout)), node.config],
                         node.home / "logs", timeout + 30, cluster.secured.zookeeper_env())
    pids = zk_pids(node)
    node.pid = pids[0] if pids else None
    cluster.save()
    if result.returncode != 0:
        print("FAILED", flush=True)
        raise CliError(f"Error: zookeeper {node.id} did not start: {failure_line(result)}")
    print(f"STARTED (pid {node.pid})", flush=True)


def wait_for_quorum(cluster: LocalCluster, timeout: float) -> None:
    waiting = "the ZooKeeper ensemble to elect a leader" if len(cluster.zookeepers) > 1 else "ZooKeeper"
    print(f"waiting for {waiting} ... ", end="", flush=True)
    if not wait_for(lambda: has_quorum(zk_modes(cluster)), timeout):
        print("FAILED", flush=True)
        shown = ", ".join(f"zk{z.id}={m or 'not serving'}" for z, m in zip(cluster.zookeepers, zk_modes(cluster), strict=True))
        raise CliError(f"Error: the ZooKeeper ensemble has no leader after {timeout:.0f} s ({shown})")
    modes = zk_modes(cluster)
    leader = next((z.id for z, m in zip(cluster.zookeepers, modes, strict=True) if m in ("leader", "standalone")), None)
    print(f"zookeeper {leader} leads" if len(modes) > 1 else "serving (standalone)", flush=True)


def start_broker(cluster: LocalCluster, broker: BrokerNode, timeout: float) -> None:
    write_broker_config(cluster, broker)
    print(f"broker {broker.id}: {cluster.host}:{broker.port} ... ", end="", flush=True)
    out = broker.home / "logs" / BROKER_OUT
    offset = out.stat().st_size if out.exists() else 0
    result = run_odradek(["server-start", "-daemon", broker.config], broker.home / "logs", timeout + 30)
    match = re.search(r"\(pid (\d+)\)", result.stdout)
    pids = broker_pids(broker)
    broker.pid = int(match.group(1)) if match and int(match.group(1)) in pids else (pids[0] if pids else None)
    cluster.save()
    if result.returncode != 0:
        print("FAILED", flush=True)
        detail = broker_error(out, offset) or failure_line(result)
        raise CliError(f"Error: broker {broker.id} did not start: {detail} (log: {out})")
    metrics = f", metrics {metrics_url(cluster, broker)}" if broker.http_port else ""
    print(f"STARTED (pid {broker.pid}{metrics})", flush=True)


def wait_for_registration(cluster: LocalCluster, timeout: float) -> None:
    wanted = {b.id for b in cluster.brokers}
    print("waiting for the brokers to register in ZooKeeper ... ", end="", flush=True)
    seen: list[Registry | None] = [None]

    def registered() -> bool:
        seen[0] = read_registry(cluster.zookeeper_connect, timeout=min(10.0, timeout))
        return seen[0] is not None and wanted <= set(seen[0].broker_ids)

    if not wait_for(registered, timeout, interval=0.5):
        print("FAILED", flush=True)
        got = seen[0].broker_ids if seen[0] else "ZooKeeper unreachable"
        raise CliError(f"Error: brokers {sorted(wanted)} not all registered after {timeout:.0f} s (got {got})")
    print("done", flush=True)


def print_usage(cluster: LocalCluster) -> None:
    b, z, d = cluster.bootstrap_servers, cluster.zookeeper_connect, cluster.dir
    rf = min(3, len(cluster.brokers))
    admin = producer = consumer = secured = ""
    if cluster.security != "PLAINTEXT":
        props = cluster.secured.client_properties
        admin, producer, consumer = (f" --command-config {props}", f" --producer.config {props}",
                                     f" --consumer.config {props}")
        secured = f"  security:          {cluster.security} (client properties: {props})\n"
        tls = f", brokers over TLS to {cluster.broker_zookeeper_connect}" if cluster.secured.tls else ""
        secured += (f"  zookeeper:         SASL{tls}, znodes ACLed (tools with --zookeeper: KAFKA_OPTS="
                    f"-Djava.security.auth.login.config={cluster.secured.zk_client_jaas})\n")
    print(
        f"\nThe cluster is up ({d}, recorded in {STATE_FILE}).\n"
        f"  bootstrap servers: {b}\n"
        f"  zookeeper.connect: {z}\n{secured}\n"
        "Try:\n"
        f"  odradek topics --bootstrap-server {b}{admin} --create --topic my-replicated-topic"
        f" --partitions 3 --replication-factor {rf}\n"
        f"  odradek topics --bootstrap-server {b}{admin} --describe --topic my-replicated-topic\n"
        f"  odradek console-producer --bootstrap-server {b}{producer} --topic my-replicated-topic\n"
        f"  odradek console-consumer --bootstrap-server {b}{consumer} --topic my-replicated-topic --from-beginning\n"
        f"  odradek zookeeper-server-status {cluster.zookeepers[0].config}\n"
        f"  odradek cluster status --dir {d}\n"
        f"  odradek cluster down --dir {d}"
    )


# ---------------------------------------------------------------------------------------------
# cluster status
# ---------------------------------------------------------------------------------------------


def dir_parser(command: str, description: str, tool: str = "cluster", default_dir: str = DEFAULT_DIR) -> ArgParser:
    """The parser of `odradek <tool> <command> [--dir DIR]` (also `odradek spark`'s)."""
    parser = ArgParser(f"{tool} {command}", description, allow_abbrev=False)
    parser.add_argument("--dir", default=default_dir, metavar="DIR", help=f"the cluster's directory (default ./{default_dir})")
    return parser


def load_cluster(directory: str) -> LocalCluster | None:
    return LocalCluster.load(Path(directory).expanduser().absolute())


def status(argv: list[str]) -> int:
    args = dir_parser("status", "Show the ZooKeeper modes, broker registrations and controller.").parse_args(argv)
    cluster = load_cluster(args.dir)
    if cluster is None:
        raise CliError(f"Error: no cluster in {args.dir} ({STATE_FILE} not found); start one with odradek cluster up")
    healthy = zk_status(cluster)
    return 0 if broker_status(cluster) and healthy else 1


def describe_pid(pids: list[int]) -> str:
    return f"pid {pids[0]}" if pids else "not running"


def zk_status(cluster: LocalCluster) -> bool:
    print(f"ZooKeeper ({cluster.zookeeper_connect}):")
    modes = zk_modes(cluster)
    for node, mode in zip(cluster.zookeepers, modes, strict=True):
        shown = f"Mode: {mode}" if mode else "not serving"
        print(f"  zookeeper {node.id}  {cluster.host}:{node.client_port}  {describe_pid(zk_pids(node))}  {shown}")
    return has_quorum(modes)


def broker_status(cluster: LocalCluster) -> bool:
    print(f"Brokers ({cluster.bootstrap_servers}):")
    registry = read_registry(cluster.zookeeper_connect, timeout=5.0)
    registered = set(registry.broker_ids) if registry else set()
    healthy = registry is not None
    for broker in cluster.brokers:
        pids = broker_pids(broker)
        state = "registered" if broker.id in registered else "not registered"
        healthy = healthy and bool(pids) and broker.id in registered
        metrics = f"  {metrics_url(cluster, broker)}" if broker.http_port else ""
        print(f"  broker {broker.id}  {cluster.host}:{broker.port}  {describe_pid(pids)}  {state}{metrics}")
    if registry is None:
        print("Controller: unknown (ZooKeeper is unreachable)")
        return False
    print(f"Controller: broker {registry.controller}" if registry.controller is not None else "Controller: none")
    return healthy and registry.controller is not None


# ---------------------------------------------------------------------------------------------
# cluster down
# ---------------------------------------------------------------------------------------------


def down(argv: list[str]) -> int:
    args = dir_parser("down", "Stop the brokers, then the ZooKeeper servers, of a cluster (SIGTERM).").parse_args(argv)
    return stop_recorded(args.dir, load_cluster(args.dir), f"cluster in {args.dir} ({STATE_FILE} not found)", tear_down)


def stop_recorded(directory: str, cluster: R | None, missing: str, tear_down: Callable[..., None]) -> int:
    """`odradek cluster down` and `odradek spark down`: tear down the cluster recorded in `directory`, or
    say there is none (`missing`: "cluster in DIR (cluster.json not found)") and that nothing needs stopping."""
    if cluster is None:
        print(f"No {missing}; nothing to stop")
        return 0
    tear_down(cluster, quiet=False)
    return 0


def tear_down(cluster: LocalCluster, *, quiet: bool) -> None:
    """Stop brokers (up to 60 s), then ZooKeeper servers; forget their pids."""
    say: Callable[[str], Any] = (lambda _text: None) if quiet else print
    brokers = [p for b in cluster.brokers for p in running("server-start", b.config)]
    stop_group("brokers", brokers, BROKER_STOP_TIMEOUT, say)
    stop_group("zookeepers", [p for z in cluster.zookeepers for p in servers(z.generated_cfg)], ZOOKEEPER_STOP_TIMEOUT, say)
    nodes: list[Node] = [*cluster.brokers, *cluster.zookeepers]
    for node in nodes:
        node.pid = None
    for zk in cluster.zookeepers:
        (zk.data_dir / PID_FILE).unlink(missing_ok=True)
    if cluster.state_file.parent.is_dir():
        cluster.save()


def stop_group(what: str, procs: list[psutil.Process], timeout: float, say: Callable[[str], Any]) -> None:
    """SIGTERM, up to `timeout` seconds, then SIGKILL for whatever is left."""
    if not procs:
        say(f"Stopping {what} ... none running")
        return
    procs = sorted(procs, key=lambda p: p.pid)
    stubborn = processes.terminate(procs, timeout, kill=True)
    killed = f"; killed pid {', '.join(str(p.pid) for p in stubborn)} after {timeout:.0f} s" if stubborn else ""
    say(f"Stopping {what} ... STOPPED (pid {', '.join(str(p.pid) for p in procs)}{killed})")


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------

USAGE = f"""usage: odradek cluster {{up,status,down}} [--dir DIR] [options]

A local pseudo-cluster: a ZooKeeper ensemble and brokers on one host, under ./{DEFAULT_DIR}.
  up      start it: odradek cluster up [--zookeepers 3] [--brokers 3] [--dir DIR]
          [--base-port 9092] [--zk-base-port 2181] [--http-base-port 19092] [--host 127.0.0.1]
  status  each ZooKeeper server's mode, each broker's registration, the controller
  down    stop the brokers, then the ZooKeeper servers (idempotent)
Run 'odradek cluster <command> --help' for its flags."""


def main(argv: list[str]) -> int:
    """`odradek cluster up|status|down [flags]`."""
    return run_subcommand("cluster", {"up": up, "status": status, "down": down}, USAGE, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
