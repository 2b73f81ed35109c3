"""A cluster whose every process runs on a test host of its own (tests/faults/netns.py): ZooKeeper on `zk`,
brokers on `b0`..`bN`, and the clients on `client`. The test process stays in the machine's namespace
and reaches the cluster only through commands run on the client host (`client_run`), so what a client sees
is what crosses the simulated network. Processes are started and stopped by pid, their directories are
temp dirs, and close() removes processes and namespaces whatever happened."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from tests.faults.netns import Network, Node
from tests.harness import REPO_ROOT, odradek_cmd

ZK_PORT, BROKER_PORT = 2181, 9092
SESSION_MS = 6000


def _wait(predicate: Callable[[], bool], timeout: float, what: str, output: Callable[[], str] = lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}\n{output()[-3000:]}")
        time.sleep(0.2)


class Proc:
    """One server process on a test host."""

    def __init__(self, node: Node, argv: list[str], out: Path) -> None:
        self.node, self.argv, self.out = node, argv, out
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.out, "ab") as f:
            self.proc = subprocess.Popen(self.node.exec_prefix() + self.argv, stdout=f, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True, cwd=REPO_ROOT)

    def pids(self) -> list[int]:
        """The process and its descendants (ZooKeeper's launcher runs the JVM as its child)."""
        if self.proc is None or self.proc.poll() is not None:
            return []
        try:
            root = psutil.Process(self.proc.pid)
            return [root.pid, *(c.pid for c in root.children(recursive=True))]
        except psutil.NoSuchProcess:
            return []

    def signal(self, signum: int) -> None:
        for pid in reversed(self.pids()):
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 20.0) -> None:
        if self.proc is None:
            return
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        if self.proc is None:
            return
        self.signal(signal.SIGKILL)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass

    def output(self) -> str:
        try:
            return self.out.read_text(errors="replace")
        except OSError:
            return ""


class FaultCluster:
    """ZooKeeper and `size` brokers, each on its own host, plus a client host."""

    def __init__(self, workdir: Path, size: int = 3, overrides: dict[str, str] | None = None,
                 tmpfs_mb: int = 0) -> None:
        """`tmpfs_mb`: give each broker's log dir a tmpfs of that size (the fill-disk nemesis needs one);
        `self.tmpfs` says whether the mounts could be made."""
        self.workdir = workdir
        self.size = size
        self.net = Network()
        self.procs: dict[str, Proc] = {}
        self.mounts: list[Path] = []
        self.tmpfs = False
        try:
            self.net.add("zk")
            for i in range(size):
                self.net.add(f"b{i}")
            self.net.add("client")
            self._configure(overrides or {})
            if tmpfs_mb:
                self.tmpfs = self._mount(tmpfs_mb)
        except BaseException:
            self._unmount()
            self.net.close()
            raise

    def data_dir(self, i: int) -> Path:
        return self.workdir / f"broker{i}" / "data"

    def _mount(self, size_mb: int) -> bool:
        for i in range(self.size):
            d = self.data_dir(i)
            d.mkdir(parents=True, exist_ok=True)
            res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(d)],
                                 capture_output=True, text=True, timeout=30)
            if res.returncode != 0:
                return False
            self.mounts.append(d)
        return True

    def _unmount(self) -> None:
        for d in self.mounts:
            subprocess.run(["umount", "-l", str(d)], capture_output=True, timeout=30)
        self.mounts.clear()

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.net.nodes[f'b{i}'].address}:{BROKER_PORT}" for i in range(self.size))

    @property
    def zk_connect(self) -> str:
        return f"{self.net.nodes['zk'].address}:{ZK_PORT}"

    def _configure(self, overrides: dict[str, str]) -> None:
        zk_dir = self.workdir / "zk"
        (zk_dir / "data").mkdir(parents=True, exist_ok=True)
        (zk_dir / "zoo.cfg").write_text(f"tickTime=500\ndataDir={zk_dir / 'data'}\nclientPort={ZK_PORT}\n"
                                        f"clientPortAddress={self.net.nodes['zk'].address}\nmaxSessionTimeout=20000\n")
        self.procs["zk"] = Proc(self.net.nodes["zk"], odradek_cmd("zookeeper-server-start", str(zk_dir / "zoo.cfg")),
                                zk_dir / "zookeeper.out")
        for i in range(self.size):
            node = self.net.nodes[f"b{i}"]
            d = self.workdir / f"broker{i}"
            d.mkdir(parents=True, exist_ok=True)
            props = {
                "broker.id": str(i), "listeners": f"PLAINTEXT://{node.address}:{BROKER_PORT}",
                "log.dirs": str(d / "data"), "zookeeper.connect": self.zk_connect,
                "zookeeper.session.timeout.ms": str(SESSION_MS), "replica.lag.time.max.ms": "6000",
                "replica.fetch.wait.max.ms": "200", "min.insync.replicas": "2",
                "default.replication.factor": str(min(3, self.size)), "num.partitions": "3",
                "offsets.topic.replication.factor": str(min(3, self.size)),
                "transaction.state.log.replication.factor": str(min(3, self.size)),
                "transaction.state.log.min.isr": "2", "group.initial.rebalance.delay.ms": "0",
                "auto.create.topics.enable": "false", "log.retention.check.interval.ms": "5000",
                **overrides,
            }
            (d / "server.properties").write_text("".join(f"{k}={v}\n" for k, v in props.items()))
            self.procs[f"b{i}"] = Proc(node, odradek_cmd("server-start", str(d / "server.properties")),
                                       d / "broker.out")

    # ---- life cycle ------------------------------------------------------------------------------
    def start(self, timeout: float = 90.0) -> FaultCluster:
        zk = self.procs["zk"]
        zk.start()
        _wait(lambda: self.client_run(["zk-ready", self.zk_connect], check=False).returncode == 0, timeout,
              "ZooKeeper to answer", zk.output)
        for i in range(self.size):
            self.start_broker(i, wait=False)
        for i in range(self.size):
            self.wait_started(i, timeout)
        self.client_run(["wait-brokers", self.bootstrap, str(self.size)], timeout=timeout)
        return self

    def broker(self, i: int) -> Proc:
        return self.procs[f"b{i}"]

    def start_broker(self, i: int, wait: bool = True) -> None:
        p = self.broker(i)
        p.start()
        if wait:
            self.wait_started(i)

    def wait_started(self, i: int, timeout: float = 90.0) -> None:
        p = self.broker(i)
        _wait(lambda: "] started (cluster id" in p.output() or not p.alive(), timeout, f"broker {i} to start",
              p.output)
        if not p.alive():
            raise AssertionError(f"broker {i} exited:\n{p.output()[-3000:]}")

    def restart_broker(self, i: int) -> None:
        p = self.broker(i)
        marker = p.output().count("] started (cluster id")
        p.start()
        _wait(lambda: p.output().count("] started (cluster id") > marker or not p.alive(), 90,
              f"broker {i} to start again", p.output)

    def keep_data(self, into: Path) -> None:
        """Copy every broker's log dir into `into` (they live on tmpfs mounts that close() removes), so a
        failed run's batches can be read afterwards with `odradek dump-log` (producer ids, epochs,
        sequences)."""
        for i in range(self.size):
            if self.data_dir(i).exists():
                shutil.copytree(self.data_dir(i), into / f"data-b{i}", dirs_exist_ok=True)

    def dump_stacks(self) -> None:
        """Every broker prints its threads' stacks into its log (SIGUSR1, see cli/server_start.py)."""
        for i in range(self.size):
            p = self.broker(i)
            if p.alive() and p.proc is not None:
                p.proc.send_signal(signal.SIGUSR1)
        time.sleep(1)  # the dumps are written by the brokers' signal handlers, at once

    def close(self) -> None:
        try:
            for name, p in self.procs.items():
                if name != "zk":
                    p.kill()
            self.procs["zk"].stop()
        finally:
            self._unmount()
            self.net.close()

    # ---- clients -----------------------------------------------------------------------------------
    def client_cmd(self, args: list[str]) -> list[str]:
        return self.net.nodes["client"].exec_prefix() + [sys.executable, "-m", "tests.faults.client", *args]

    def client_run(self, args: list[str], timeout: float = 120.0, check: bool = True
                   ) -> subprocess.CompletedProcess[str]:
        """Run a tests/faults/client.py command on the client host and wait for it."""
        res = subprocess.run(self.client_cmd(args), capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT)
        if check and res.returncode != 0:
            raise AssertionError(f"client {args[0]} failed ({res.returncode}):\n{res.stdout[-2000:]}\n"
                                 f"{res.stderr[-3000:]}")
        return res

    def client_start(self, args: list[str], log: Path) -> subprocess.Popen[bytes]:
        """Start a client command on the client host in the background (its output to `log`)."""
        with open(log, "ab") as f:
            return subprocess.Popen(self.client_cmd(args), stdout=f, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, cwd=REPO_ROOT, start_new_session=True)
