"""Replaying the reference guides on one host: their config files, their commands, their checks.

* :func:`guide_file` + :func:`localize` -- the config files under ``tests/guides/data`` are the guides'
  files verbatim; ``localize`` rewrites the values of named keys only (ports, hosts, directories), keeping
  every other byte, and fails when a key is missing (a guide file that changed shape).
* :class:`GuideHost` -- the processes a guide starts (``zkServer.sh start``, ``kafka-server-start.sh
  -daemon``, ``... &``), each command run as ``odradek <tool>`` in the host's directory; everything it
  started is SIGKILLed by pid at the end (ZooKeeper JVMs found by their generated config in /proc,
  brokers by their server.properties, foreground children by their Popen).
* :func:`parse_describe` -- reads ``topics --describe`` output in both layouts the guides show
  (0.9-1.x ``Topic:t<TAB>PartitionCount:2`` and 2.x+ ``Topic: t<TAB>PartitionCount: 2``), so a guide's
  check can be run on the guide's own printed output and on ours alike.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from odradek.cli.cluster import read_registry
from odradek.cli.server_stop import find_processes
from odradek.cli.zookeeper import four_letter
from odradek.groups.offsets import partition_for
from tests.harness import odradek_cmd, wait_port
from tests.waiting import wait_until
from tests.zkharness import free_ports, kill_daemons

DATA = Path(__file__).parent / "data"
LOCAL = "127.0.0.1"
# Test-speed settings passed with `server-start --override`, never written into a guide's file: a broker
# killed with -9 leaves /brokers/ids after its ZooKeeper session times out (18 s by default).
FAST_FAILOVER = ("zookeeper.session.timeout.ms=6000",)
T = TypeVar("T")

__all__ = ["DATA", "LOCAL", "FAST_FAILOVER", "Described", "GuideHost", "Partition", "first_violation", "free_ports", "guide_file",
           "live_coordinator_group", "localize", "parse_describe"]


# --- config files ------------------------------------------------------------------------------


def guide_file(name: str) -> str:
    """The text of a data file (a guide's config, verbatim)."""
    return (DATA / name).read_text(encoding="utf-8")


_PROPERTY = re.compile(r"^(?P<key>[^#!\s=:][^=:\s]*)(?P<sep>\s*[=:]\s*)(?P<value>.*?)(?P<note>\s+#.*)?(?P<end>\s*)$")


def localize(text: str, values: Mapping[str, str]) -> str:
    """Rewrite the value of every `key=value` line whose key is in `values`; all else stays as it is
    (comments, blanks, trailing blanks, an end-of-line `#` note). Every key must occur."""
    seen: set[str] = set()
    out: list[str] = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        newline = line[len(body):]
        match = _PROPERTY.match(body)
        if match and match.group("key") in values:
            key = match.group("key")
            seen.add(key)
            body = f"{key}{match.group('sep')}{values[key]}{match.group('note') or ''}{match.group('end')}"
        out.append(body + newline)
    missing = sorted(set(values) - seen)
    if missing:
        raise KeyError(f"keys not in the guide's file: {missing}")
    return "".join(out)


# --- describe output ---------------------------------------------------------------------------

_TOPIC_LINE = re.compile(
    r"^\s*(?:[a-z]\.\s*)?Topic:\s*(?P<topic>\S+)\s+(?:TopicId:\s*\S+\s+)?PartitionCount:\s*(?P<count>\d+)\s+"
    r"ReplicationFactor:\s*(?P<rf>\d+)\s+Configs:[ \t]*(?P<configs>\S*)"
)
_PARTITION_LINE = re.compile(
    r"^\s*(?:[a-z]\.\s*)?Topic:\s*(?P<topic>\S+)\s+Partition:\s*(?P<p>\d+)\s+Leader:\s*(?P<leader>\S+)\s+"
    r"Replicas:\s*(?P<replicas>[\d,]*)\s+Isr:\s*(?P<isr>[\d,]*)"
)


@dataclass
class Partition:
    leader: int | None
    replicas: list[int]
    isr: list[int]


@dataclass
class Described:
    """One topic of `--describe` output."""

    topic: str
    partition_count: int
    replication_factor: int
    configs: str
    partitions: dict[int, Partition] = field(default_factory=dict)

    def leaders(self) -> dict[int, int | None]:
        return {p: part.leader for p, part in self.partitions.items()}


def _ids(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def parse_describe(text: str) -> dict[str, Described]:
    """Topics of a `topics --describe` output (either layout); partition lines need their header."""
    topics: dict[str, Described] = {}
    for line in text.splitlines():
        header = _TOPIC_LINE.match(line)
        if header:
            topics[header["topic"]] = Described(header["topic"], int(header["count"]), int(header["rf"]),
                                                header["configs"])
            continue
        part = _PARTITION_LINE.match(line)
        if part:
            leader = None if part["leader"] in ("none", "-1") else int(part["leader"])
            topics[part["topic"]].partitions[int(part["p"])] = Partition(
                leader, _ids(part["replicas"]), _ids(part["isr"]))
    return topics


# --- sampling -----------------------------------------------------------------------------------


def first_violation(sample: Callable[[], T], holds: Callable[[T], bool], seconds: float,
                    interval: float = 0.2) -> T | None:
    """Sample for `seconds`; the first sample for which `holds` is false, or None if it always held."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = sample()
        if not holds(value):
            return value
        time.sleep(interval)
    return None


def live_coordinator_group(offsets: Described, live: set[int], prefix: str = "console-consumer-") -> str:
    """A group id whose __consumer_offsets partition has a live leader (Kafka's abs(hashCode) % N)."""
    for n in range(10000, 100000):
        group = f"{prefix}{n}"
        part = offsets.partitions.get(partition_for(group, offsets.partition_count))
        if part is not None and part.leader in live:
            return group
    raise AssertionError("no __consumer_offsets partition has a live leader")


# --- the host ----------------------------------------------------------------------------------


@dataclass
class GuideHost:
    """One machine of a guide: its directory, the processes started on it, and `odradek` to run."""

    root: Path
    zk_data_dirs: list[Path] = field(default_factory=list)
    broker_configs: list[Path] = field(default_factory=list)
    children: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def path(self, rel: str) -> Path:
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def write(self, rel: str, text: str) -> Path:
        p = self.path(rel)
        p.write_text(text, encoding="utf-8")
        return p

    def install(self, data_name: str, rel: str, values: Mapping[str, str],
                added: Mapping[str, str] | None = None) -> Path:
        """Copy a guide's config file to `rel`, with `values` for ports, hosts and directories, and the `added`
        keys the guide's file lacks appended (a ZooKeeper's clientPortAddress: the guides' servers listen on every
        interface of their own hosts; on the test's one host they listen on loopback only)."""
        text = localize(guide_file(data_name), values)
        if added:
            text += ("" if text.endswith("\n") else "\n") + "".join(f"{k}={v}\n" for k, v in added.items())
        return self.write(rel, text)

    def env(self, log_dir: Path | None = None) -> dict[str, str]:
        return {**os.environ, "LOG_DIR": str(log_dir or self.root / "logs")}

    def run(self, *args: str, input: str | None = None, timeout: float = 60,
            log_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
        """`odradek <args>` in the host's directory."""
        return subprocess.run(odradek_cmd(*args), input=input, capture_output=True, text=True, timeout=timeout,
                              cwd=self.root, env=self.env(log_dir))

    def ok(self, *args: str, input: str | None = None, timeout: float = 60,
           log_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
        """Like run, failing the test (with the tool's output) unless it exits 0."""
        r = self.run(*args, input=input, timeout=timeout, log_dir=log_dir)
        assert r.returncode == 0, f"odradek {' '.join(args)} -> {r.returncode}\n{r.stdout}\n{r.stderr}"
        return r

    def background(self, *args: str, log: Path) -> subprocess.Popen[bytes]:
        """`odradek <args> &`: a child of the test in its own process group, output to `log`."""
        with open(log, "ab") as out:
            proc = subprocess.Popen(odradek_cmd(*args), stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, cwd=self.root, env=self.env(), process_group=0)
        self.children.append(proc)
        return proc

    # ZooKeeper

    def zk_start_daemon(self, config: Path, data_dir: Path) -> None:
        """`zkServer.sh start`."""
        self.zk_data_dirs.append(data_dir)
        r = self.ok("zookeeper-server-start", "--daemon", str(config), timeout=90)
        assert "STARTED" in r.stdout, r.stdout + r.stderr

    def zk_start_background(self, config: Path, data_dir: Path, port: int) -> subprocess.Popen[bytes]:
        """`zookeeper-server-start.sh config/zookeeper.properties &`."""
        self.zk_data_dirs.append(data_dir)
        proc = self.background("zookeeper-server-start", str(config), log=self.path("logs/zookeeper.out"))
        wait_until(lambda: four_letter(LOCAL, port, "ruok", timeout=1.0) == "imok", 60, f"zookeeper on {port}")
        return proc

    def zk_mode(self, config: Path) -> str | None:
        """The `Mode:` printed by `zkServer.sh status` (None when it reports the server down)."""
        r = self.run("zookeeper-server-status", str(config), timeout=30)
        match = re.search(r"^Mode: (\S+)", r.stdout, re.MULTILINE)
        return match.group(1) if match else None

    # brokers

    def broker_start_daemon(self, config: Path, log_dir: Path, *overrides: str) -> None:
        """`kafka-server-start.sh -daemon config` (every install its own logs directory)."""
        if config not in self.broker_configs:
            self.broker_configs.append(config)
        extra = [a for o in overrides for a in ("--override", o)]
        r = self.ok("server-start", "-daemon", str(config), *extra, log_dir=log_dir, timeout=90)
        assert "started" in r.stdout, r.stdout + r.stderr

    def broker_start_background(self, config: Path, port: int, log: Path,
                                *overrides: str) -> subprocess.Popen[bytes]:
        """`kafka-server-start.sh config &`."""
        if config not in self.broker_configs:
            self.broker_configs.append(config)
        extra = [a for o in overrides for a in ("--override", o)]
        proc = self.background("server-start", str(config), *extra, log=log)
        try:
            wait_port(port, 60, proc)
        except Exception:
            raise AssertionError(f"broker {config} did not start:\n{log.read_text(errors='replace')[-3000:]}") from None
        return proc

    def broker_pids(self, config: Path) -> list[int]:
        """`ps aux | grep server2.properties`."""
        return find_processes("server-start", str(config))

    def kill9(self, config: Path) -> int:
        """`kill -9 <pid of the broker started with config>`; returns the pid."""
        pids = self.broker_pids(config)
        assert len(pids) == 1, f"expected one broker running {config}, found {pids}"
        os.kill(pids[0], signal.SIGKILL)
        wait_until(lambda: not self.broker_pids(config), 10, f"pid {pids[0]} to die")
        for child in self.children:
            if child.pid == pids[0]:
                child.wait(10)
        return pids[0]

    def wait_registered(self, zk_connect: str, ids: set[int], timeout: float = 60) -> None:
        """Wait until exactly the brokers `ids` are registered under /brokers/ids."""
        def registered() -> bool:
            registry = read_registry(zk_connect, timeout=5)
            return registry is not None and set(registry.broker_ids) == ids

        wait_until(registered, timeout, f"brokers {sorted(ids)} registered in {zk_connect}")

    # the end

    def cleanup(self) -> None:
        """SIGKILL, by pid, everything this host started."""
        for config in self.broker_configs:
            for pid in self.broker_pids(config):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        kill_daemons(*self.zk_data_dirs)
        for child in self.children:
            if child.poll() is None:
                try:
                    os.kill(child.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                pass
