"""`odradek zookeeper-server-start|stop|status` against real ZooKeeper servers, as the guides use
zkServer.sh: a standalone server, Kafka's zookeeper.properties, and a three-node ensemble on one
host (server.1..3, myid files) whose leader is stopped so the other two elect a new one."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.cli.zookeeper import GENERATED_CFG, PID_FILE
from tests.harness import odradek_cmd, run_cli
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot, ZooKeeperEnsemble, free_ports, kill_daemons

TOOLS = ("zookeeper-server-start", "zookeeper-server-stop", "zookeeper-server-status")
NOT_RUNNING = "Error contacting service. It is probably not running."


@pytest.fixture
def cleanup() -> Iterator[list[Path]]:
    """Data dirs whose servers are SIGKILLed (by pid) after the test, whatever happened."""
    data_dirs: list[Path] = []
    yield data_dirs
    kill_daemons(*data_dirs)


def zk(*args: str, env: dict[str, str] | None = None, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(odradek_cmd(*args), capture_output=True, text=True, timeout=timeout, env=full_env)


def assert_one_line_error(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "Traceback" not in r.stdout + r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    return lines[0]


def mode_of(config: Path) -> str | None:
    r = run_cli("zookeeper-server-status", str(config), timeout=30)
    for line in r.stdout.splitlines():
        if line.startswith("Mode: "):
            return line.removeprefix("Mode: ")
    return None


def write_standalone(root: Path, port: int) -> Path:
    cfg = root / "zoo.cfg"
    cfg.write_text(f"tickTime=2000\ndataDir={root / 'data'}\nclientPort={port}\n")
    return cfg


def write_guide_ensemble(root: Path) -> list[Path]:
    """Three zoo.cfg + myid files laid out like the kafka-vs-mq guide's pseudo-cluster."""
    ports = free_ports(9)
    servers = "".join(f"server.{n}=127.0.0.1:{ports[3 + n - 1]}:{ports[6 + n - 1]}\n" for n in (1, 2, 3))
    configs = []
    for n in (1, 2, 3):
        home = root / f"zookeeper{n}"
        (home / "data").mkdir(parents=True)
        (home / "data" / "myid").write_text(f"{n}\n")
        cfg = home / "zoo.cfg"
        cfg.write_text(
            "tickTime=2000\ninitLimit=10\nsyncLimit=5\n"
            f"dataDir={home / 'data'}\nclientPort={ports[n - 1]}\n{servers}"
        )
        configs.append(cfg)
    return configs


def wait_modes(configs: list[Path], timeout: float) -> list[str | None]:
    """The servers' modes once every one has a mode and one of them leads."""
    def settled() -> list[str | None] | None:
        modes = [mode_of(c) for c in configs]
        return None if None in modes or modes.count("leader") != 1 else modes

    return wait_until(settled, timeout, lambda: f"one leader among {[mode_of(c) for c in configs]}")


# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", TOOLS)
def test_help_and_bad_flags(tool: str) -> None:
    r = run_cli(tool, "--help")
    assert r.returncode == 0 and "usage: odradek " + tool in r.stdout
    bad = zk(tool, "--no-such-flag", "x.cfg")
    assert_one_line_error(bad)
    assert "--no-such-flag" in bad.stderr


def test_standalone_start_status_stop(tmp_path: Path, cleanup: list[Path]) -> None:
    port = free_ports(1)[0]
    cfg = write_standalone(tmp_path, port)
    cleanup.append(tmp_path / "data")
    r = zk("zookeeper-server-start", "-daemon", str(cfg))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "Starting zookeeper ... STARTED"
    pid = int((tmp_path / "data" / PID_FILE).read_text())
    assert Path(f"/proc/{pid}").exists()
    assert (tmp_path / "logs" / "zookeeper.out").exists()  # <dataDir>/../logs

    again = zk("zookeeper-server-start", "--daemon", str(cfg))
    assert "already running as process" in assert_one_line_error(again)

    status = zk("zookeeper-server-status", str(cfg))
    assert status.returncode == 0, status.stderr
    assert status.stdout.splitlines() == [f"Client port found: {port}. Client address: 127.0.0.1.", "Mode: standalone"]
    by_address = zk("zookeeper-server-status", "--server", f"127.0.0.1:{port}")
    assert by_address.returncode == 0 and "Mode: standalone" in by_address.stdout

    stop = zk("zookeeper-server-stop", str(cfg))
    assert stop.returncode == 0, stop.stderr
    assert stop.stdout.strip() == "Stopping zookeeper ... STOPPED"
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    assert not (tmp_path / "data" / PID_FILE).exists()

    down = zk("zookeeper-server-status", str(cfg))
    assert assert_one_line_error(down) == NOT_RUNNING
    assert f"Client port found: {port}." in down.stdout


def test_kafka_zookeeper_properties(tmp_path: Path, cleanup: list[Path]) -> None:
    """Kafka's config/zookeeper.properties, with LOG_DIR as kafka-run-class.sh uses it."""
    port = free_ports(1)[0]
    props = tmp_path / "zookeeper.properties"
    props.write_text(
        "# the directory where the snapshot is stored.\n"
        f"dataDir={tmp_path / 'zookeeper'}\n"
        "# the port at which the clients will connect\n"
        f"clientPort={port}\n"
        "# disable the per-ip limit on the number of connections since this is a non-production config\n"
        "maxClientCnxns=0\n"
        "# Disable the adminserver by default to avoid port conflicts.\n"
        "admin.enableServer=false\n"
        "# admin.serverPort=8080\n"
    )
    cleanup.append(tmp_path / "zookeeper")
    r = zk("zookeeper-server-start", "--daemon", str(props), env={"LOG_DIR": str(tmp_path / "kafka-logs")})
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "kafka-logs" / "zookeeper.out").exists()
    generated = (tmp_path / "zookeeper" / GENERATED_CFG).read_text()
    assert "maxClientCnxns=0" in generated and "admin.enableServer=false" in generated
    assert "4lw.commands.whitelist=srvr,stat,ruok,mntr,conf" in generated
    assert mode_of(props) == "standalone"
    assert zk("zookeeper-server-stop", str(props)).returncode == 0
    assert mode_of(props) is None


def test_guide_ensemble_leader_failover(tmp_path: Path, cleanup: list[Path]) -> None:
    """The guide's drill: three servers, one leader and two followers; stop the leader and the
    other two elect a new one; the old leader comes back as a follower."""
    configs = write_guide_ensemble(tmp_path)
    cleanup.extend(c.parent / "data" for c in configs)
    for cfg in configs:
        r = zk("zookeeper-server-start", "-daemon", str(cfg))
        assert r.returncode == 0, r.stderr + r.stdout
        assert "STARTED" in r.stdout

    modes = wait_modes(configs, 30)
    assert sorted(modes) == ["follower", "follower", "leader"], modes  # type: ignore[type-var]
    leader = configs[modes.index("leader")]
    others = [c for c in configs if c != leader]

    stop = zk("zookeeper-server-stop", str(leader))
    assert stop.returncode == 0 and "STOPPED" in stop.stdout
    assert_one_line_error(zk("zookeeper-server-status", str(leader)))

    t0 = time.monotonic()
    new_modes = wait_modes(others, 10)
    assert sorted(new_modes) == ["follower", "leader"], new_modes  # type: ignore[type-var]
    assert time.monotonic() - t0 < 10

    assert zk("zookeeper-server-start", "-daemon", str(leader)).returncode == 0
    wait_until(lambda: mode_of(leader) == "follower", 20, "the restarted server to follow")

    for cfg in configs:
        assert zk("zookeeper-server-stop", str(cfg)).returncode == 0
    assert all(mode_of(c) is None for c in configs)


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("no-datadir", "dataDir"),
        ("bad-port", "clientPort"),
        ("no-myid", "myid"),
        ("foreign-myid", "myid"),
        ("missing-file", "does not exist"),
        ("bad-number", "tickTime"),
    ],
)
def test_bad_config_is_one_line(tmp_path: Path, case: str, expected: str) -> None:
    data = tmp_path / "data"
    servers = "initLimit=10\nsyncLimit=5\nserver.1=127.0.0.1:1:2\nserver.2=127.0.0.1:3:4\nserver.3=127.0.0.1:5:6\n"
    texts = {
        "no-datadir": "tickTime=2000\nclientPort=2181\n",
        "bad-port": f"dataDir={data}\nclientPort=70000\n",
        "no-myid": f"dataDir={data}\nclientPort=2181\n{servers}",
        "foreign-myid": f"dataDir={data}\nclientPort=2181\n{servers}",
        "bad-number": f"dataDir={data}\nclientPort=2181\ntickTime=2s\n",
    }
    cfg = tmp_path / "zoo.cfg"
    if case in texts:
        cfg.write_text(texts[case])
    if case == "foreign-myid":
        data.mkdir()
        (data / "myid").write_text("9\n")
    line = assert_one_line_error(zk("zookeeper-server-start", "--daemon", str(cfg)))
    assert expected in line
    if case == "no-myid":
        assert str(data / "myid") in line
        assert not (data / "myid").exists()  # never invented


def test_daemon_that_dies_reports_its_last_log_line(tmp_path: Path, cleanup: list[Path]) -> None:
    cfg = tmp_path / "zoo.cfg"
    cfg.write_text(
        f"dataDir={tmp_path / 'data'}\nclientPort={free_ports(1)[0]}\nminSessionTimeout=9000\nmaxSessionTimeout=5000\n"
    )
    cleanup.append(tmp_path / "data")
    r = zk("zookeeper-server-start", "--daemon", str(cfg))
    line = assert_one_line_error(r)
    assert "FAILED TO START" in r.stdout
    assert "minSessionTimeout must not be larger than maxSessionTimeout" in line
    assert not (tmp_path / "data" / PID_FILE).exists()


def test_status_of_nothing(tmp_path: Path) -> None:
    port = free_ports(1)[0]
    assert assert_one_line_error(zk("zookeeper-server-status", "--server", f"127.0.0.1:{port}")) == NOT_RUNNING
    cfg = write_standalone(tmp_path, port)
    assert assert_one_line_error(zk("zookeeper-server-status", str(cfg))) == NOT_RUNNING
    stop = zk("zookeeper-server-stop", str(cfg))
    assert stop.returncode == 1 and "no zookeeper to stop" in stop.stdout


# --- the test harness's ensemble (fixtures shared with other modules) -------------------------


def test_harness_standalone(zk_standalone: ZooKeeperChroot) -> None:
    assert zk_standalone.server.modes() == ["standalone"]
    assert zk_standalone.server.leader_index() == 0


def test_harness_ensemble_failover(zk_ensemble: ZooKeeperEnsemble) -> None:
    from kazoo.client import KazooClient

    assert sorted(zk_ensemble.modes()) == ["follower", "follower", "leader"]  # type: ignore[type-var]
    client = KazooClient(hosts=zk_ensemble.connect_string)
    client.start(timeout=15)
    try:
        client.ensure_path("/odradek-test/a")
        leader = zk_ensemble.leader_index()
        assert leader is not None
        zk_ensemble.kill_node(leader)
        new_leader = zk_ensemble.wait_for_leader(timeout=10, exclude=leader)
        assert new_leader != leader
        assert client.get_children("/odradek-test") == ["a"]  # data survived, session moved over
        zk_ensemble.start_node(leader)
        assert zk_ensemble.mode(leader) == "follower"
        zk_ensemble.stop_node(new_leader)
        zk_ensemble.wait_for_leader(timeout=10, exclude=new_leader)
        zk_ensemble.start_node(new_leader)
        assert sorted(zk_ensemble.modes()) == ["follower", "follower", "leader"]  # type: ignore[type-var]
    finally:
        client.stop()
        client.close()
