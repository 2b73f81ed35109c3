"""ZooKeeper for tests: a standalone server or an N-node ensemble on 127.0.0.1, each node on free
ports (client, quorum, election) with its own directory, started through Odradek's launcher.

Every node runs ``odradek zookeeper-server-start CFG`` in the foreground as a child of the test
process, in its own process group, with PR_SET_PDEATHSIG: the launcher gets SIGTERM if the test
process dies, and forwards it to the JVM, which also gets SIGTERM when the launcher dies. Nodes
are stopped by pid (SIGTERM, then SIGKILL); ``kill_node`` SIGKILLs the JVM itself, as a crash. An
``atexit`` hook stops whatever is left, so no server outlives the test session.

    with ZooKeeperEnsemble(tmp_path, 3) as zk:
        zk.connect_string      # "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"
        zk.leader_index()      # 0..2
        zk.stop_node(zk.leader_index()); zk.wait_for_leader()

A ``ZooKeeperChroot`` is one namespace of a shared server: the session's standalone server is shared by
every test module, each module in a chroot of its own (``zk_standalone`` in tests/conftest.py).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from odradek.cli.zookeeper import GENERATED_CFG, find_servers, four_letter, server_mode
from tests.harness import free_ports, odradek_cmd
from tests.waiting import wait_until

HOST = "127.0.0.1"
_LIVE: list[ZooKeeperEnsemble] = []
__all__ = ["ZooKeeperChroot", "ZooKeeperEnsemble", "free_ports", "kill_daemons"]


def _die_with_parent() -> None:
    """Child side, before exec: SIGTERM when the test process (the forking thread) dies."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _wait_gone(pids: list[int], timeout: float) -> list[int]:
    """The pids still alive after waiting up to `timeout` seconds for all of them to exit."""
    try:
        wait_until(lambda: not any(_alive(p) for p in pids), timeout, f"pids {pids} to exit", interval=0.05)
    except AssertionError:
        pass  # the caller kills what is left
    return [p for p in pids if _alive(p)]


def kill_daemons(*data_dirs: Path) -> list[int]:
    """Test clean-up: SIGKILL the servers started (e.g. with --daemon) with those dataDirs, found
    by their generated config in /proc; returns the pids that were still running."""
    pids = sorted({pid for d in data_dirs for pid in find_servers(Path(d).absolute() / GENERATED_CFG)})
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _wait_gone(pids, 10)
    return pids


@dataclass
class ZooKeeperNode:
    """One server: its directory, ports and launcher process."""

    myid: int
    workdir: Path
    client_port: int
    quorum_port: int
    election_port: int
    secure_port: int = 0  # TLS client port (secureClientPort), when the ensemble has TLS
    proc: subprocess.Popen[bytes] | None = None

    @property
    def config_path(self) -> Path:
        return self.workdir / "zoo.cfg"

    @property
    def data_dir(self) -> Path:
        return self.workdir / "data"

    @property
    def log_path(self) -> Path:
        return self.workdir / "zookeeper.out"

    @property
    def address(self) -> str:
        return f"{HOST}:{self.client_port}"

    def server_line(self) -> str:
        return f"server.{self.myid}={HOST}:{self.quorum_port}:{self.election_port}"

    @property
    def jaas_path(self) -> Path:
        return self.workdir / "zk_jaas.conf"

    @property
    def secure_address(self) -> str:
        return f"{HOST}:{self.secure_port}"

    def write_config(self, server_lines: list[str], tick_ms: int, sasl_users: dict[str, str] | None = None,
                     tls: tuple[Path, Path] | None = None) -> None:
        """zoo.cfg; with `sasl_users` (user -> password) also SASL DIGEST-MD5 for clients (a JAAS Server
        section the launcher hands the JVM), which ZooKeeper then names in ACLs as sasl:<user>; with `tls`
        (CA file, key + certificate chain file, PEM) a TLS client port too (Netty), whose clients'
        certificates ZooKeeper names as x509:<subject>."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        lines = [f"tickTime={tick_ms}", "initLimit=10", "syncLimit=5", f"dataDir={self.data_dir}",
                 f"clientPort={self.client_port}", f"clientPortAddress={HOST}", *server_lines]
        if sasl_users:
            lines.append("authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider")
            users = " ".join(f'user_{u}="{p}"' for u, p in sasl_users.items())
            self.jaas_path.write_text(
                f"Server {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required {users};\n}};\n")
            self.jaas_path.chmod(0o600)
        if tls is not None:
            lines += [f"secureClientPort={self.secure_port}", f"secureClientPortAddress={HOST}",
                      "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
                      f"ssl.keyStore.location={tls[1]}", "ssl.keyStore.type=PEM",
                      f"ssl.trustStore.location={tls[0]}", "ssl.trustStore.type=PEM",
                      "authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider"]
        self.config_path.write_text("\n".join(lines) + "\n")
        if server_lines:
            (self.data_dir / "myid").write_text(f"{self.myid}\n")

    def launch(self) -> None:
        """Start the launcher in the foreground as our child (does not wait for the server)."""
        env = {k: v for k, v in os.environ.items() if k != "KAFKA_OPTS"}
        if self.jaas_path.exists():
            env["KAFKA_OPTS"] = f"-Djava.security.auth.login.config={self.jaas_path}"
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(
                odradek_cmd("zookeeper-server-start", str(self.config_path)),
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                process_group=0, preexec_fn=_die_with_parent,
            )

    def launcher_alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def java_pids(self) -> list[int]:
        """The JVMs serving this node's config (normally one)."""
        return find_servers(self.data_dir / GENERATED_CFG)

    def answers(self) -> bool:
        return four_letter(HOST, self.client_port, "ruok", timeout=1.0) == "imok"

    def output(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def signal_all(self, signum: int) -> list[int]:
        """Send `signum` to the launcher and its JVM; returns the pids signalled."""
        pids = self.java_pids()
        if self.launcher_alive():
            assert self.proc is not None
            pids.append(self.proc.pid)
        for pid in pids:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass
        return pids

    def reap(self, timeout: float) -> None:
        if self.proc is not None:
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@dataclass
class ZooKeeperEnsemble:
    """`size` ZooKeeper servers on 127.0.0.1 (size 1 = standalone), each under root/zk<myid>."""

    root: Path
    size: int = 3
    tick_ms: int = 2000
    sasl_users: dict[str, str] = field(default_factory=dict)  # SASL DIGEST-MD5 users of the servers
    tls: tuple[Path, Path] | None = None  # (CA, key + certificate chain), PEM: a TLS client port per node
    nodes: list[ZooKeeperNode] = field(default_factory=list)

    def __post_init__(self) -> None:
        ports = free_ports(4 * self.size)
        self.nodes = [
            ZooKeeperNode(i + 1, self.root / f"zk{i + 1}", *ports[4 * i : 4 * i + 4]) for i in range(self.size)
        ]
        servers = [n.server_line() for n in self.nodes] if self.size > 1 else []
        for node in self.nodes:
            node.write_config(servers, self.tick_ms, self.sasl_users, self.tls)

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self, timeout: float = 45.0) -> ZooKeeperEnsemble:
        """Start every node and wait until the ensemble has a leader and all nodes serve."""
        _LIVE.append(self)
        for node in self.nodes:
            node.launch()
        try:
            self.wait_serving(range(self.size), timeout)
            self.wait_for_leader(timeout)
            self.wait_all_serving(timeout)
        except Exception:
            self.stop_all()
            raise
        return self

    def start_node(self, i: int, timeout: float = 30.0) -> None:
        """(Re)start node `i` and wait until it serves requests."""
        node = self.nodes[i]
        if node.launcher_alive():
            raise RuntimeError(f"node {i} is already running")
        node.launch()
        self.wait_serving([i], timeout)
        wait_until(lambda: self.mode(i), timeout, lambda: f"node {i} to join the ensemble:\n{node.output()[-3000:]}",
                   interval=0.1)

    def stop_node(self, i: int, timeout: float = 30.0) -> None:
        """Clean stop of node `i`: SIGTERM by pid, SIGKILL if it does not exit within `timeout`."""
        node = self.nodes[i]
        pids = node.signal_all(signal.SIGTERM)
        for pid in _wait_gone(pids, timeout):
            os.kill(pid, signal.SIGKILL)
        node.reap(timeout)

    def kill_node(self, i: int) -> None:
        """kill -9 the JVM of node `i`, as a crash (the launcher then exits with 137)."""
        node = self.nodes[i]
        pids = node.java_pids()
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        _wait_gone(pids, 10)
        node.reap(10)

    def stop_all(self, timeout: float = 30.0) -> None:
        """Stop every node (SIGTERM to all at once, then SIGKILL what is left)."""
        pids = [pid for node in self.nodes for pid in node.signal_all(signal.SIGTERM)]
        for pid in _wait_gone(pids, timeout):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for node in self.nodes:
            node.reap(5)
        if self in _LIVE:
            _LIVE.remove(self)

    def __enter__(self) -> ZooKeeperEnsemble:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop_all()

    # -- queries ------------------------------------------------------------------------------

    @property
    def connect_string(self) -> str:
        return ",".join(node.address for node in self.nodes)

    @property
    def secure_connect_string(self) -> str:
        """The TLS client ports (an ensemble started with `tls`)."""
        return ",".join(node.secure_address for node in self.nodes)

    def mode(self, i: int) -> str | None:
        """'leader', 'follower' or 'standalone'; None when node `i` does not serve requests."""
        return server_mode(HOST, self.nodes[i].client_port, timeout=2.0)

    def modes(self) -> list[str | None]:
        return [self.mode(i) for i in range(self.size)]

    def leader_index(self) -> int | None:
        """The index of the leader (of the standalone server for size 1), or None."""
        for i, mode in enumerate(self.modes()):
            if mode in ("leader", "standalone"):
                return i
        return None

    def wait_for_leader(self, timeout: float = 30.0, exclude: int | None = None) -> int:
        """Wait until some node other than `exclude` leads; returns its index."""
        def leader() -> tuple[int] | None:
            """(index,) of a leader other than `exclude`: a tuple, as index 0 is falsy."""
            index = self.leader_index()
            return None if index is None or index == exclude else (index,)

        return wait_until(leader, timeout, lambda: f"a leader; modes {self.modes()}\n{self._outputs()}",
                          interval=0.1)[0]

    def wait_serving(self, indexes: range | list[int], timeout: float) -> None:
        """Wait until the nodes answer ruok (their client port is up); fails at once if one exits."""
        pending = list(indexes)

        def all_up() -> bool:
            for i in list(pending):
                node = self.nodes[i]
                if node.answers():
                    pending.remove(i)
                elif not node.launcher_alive():
                    raise RuntimeError(f"zookeeper node {i} exited:\n{node.output()[-3000:]}")
            return not pending

        wait_until(all_up, timeout, lambda: f"zookeeper nodes {pending} to serve\n{self._outputs()}", interval=0.1)

    def wait_all_serving(self, timeout: float) -> None:
        """Wait until every node has a mode (followers have synced with the leader)."""
        wait_until(lambda: None not in self.modes(), timeout,
                   lambda: f"every node to have a mode: {self.modes()}\n{self._outputs()}", interval=0.1)

    def _outputs(self) -> str:
        return "\n".join(f"--- zk{n.myid}\n{n.output()[-1500:]}" for n in self.nodes)


@atexit.register
def _stop_leftovers() -> None:
    for ensemble in list(_LIVE):
        ensemble.stop_all(timeout=10)


@dataclass(frozen=True)
class ZooKeeperChroot:
    """One namespace (chroot) of a shared ZooKeeper server: what a test module sees of it. Clients and brokers
    given `connect_string` see only the znodes under `chroot`, so modules sharing the server stay apart."""

    server: ZooKeeperEnsemble
    chroot: str

    @property
    def connect_string(self) -> str:
        return self.server.connect_string + self.chroot

    def create(self) -> ZooKeeperChroot:
        """Create the chroot znode (a client in a chroot that does not exist cannot create anything)."""
        from kazoo.client import KazooClient

        client = KazooClient(hosts=self.server.connect_string, timeout=10)
        client.start(timeout=15)
        try:
            client.ensure_path(self.chroot)
        finally:
            client.stop()
            client.close()
        return self
