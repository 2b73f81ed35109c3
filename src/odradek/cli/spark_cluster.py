"""`odradek spark up|status|down`: a Spark standalone cluster on this host for the pipelines, in one command.

``up`` starts a master and N workers from the installed pyspark's own launcher (``<pyspark>/bin/spark-class``
with ``org.apache.spark.deploy.master.Master`` and ``...deploy.worker.Worker``), everything on 127.0.0.1
(``SPARK_LOCAL_IP``: RPC ports, web UIs and the executors the workers launch; the master's REST submission
server is off), and returns once the master lists N alive workers (its JSON, ``http://127.0.0.1:W/json/``).
The directory (default ``./odradek-spark``) holds ``spark.json`` (ports, pids, written as it goes),
``logs/master.out`` and ``logs/worker<N>.out`` (each daemon's log4j output), and ``worker<N>/work``, where
each application's executors keep their ``stdout`` and ``stderr`` (``<app-id>/<executor-id>/``). Ports are
checked before anything starts and the daemons never move to the next port (``spark.port.maxRetries=0``),
so a busy port is one error line, not a cluster on other ports.

``status`` shows the master and each worker (pid, state in the master) and exits 1 when any is down.
``down`` stops the workers with the executors they launched, then the master (SIGTERM, then SIGKILL after
a grace period), found by command line (psutil: a reused pid is never signalled); it is idempotent. A
failed ``up`` stops whatever it had started.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from odradek.admin_client.command import ArgParser, parse_int
from odradek.admin_client.errors import CliError, UsageError
from odradek.cli import cluster as cluster_tool
from odradek.cli import processes
from odradek.cli.cluster import port_is_free, stop_group, wait_for
from odradek.cli.common import run_subcommand

STATE_FILE = "spark.json"
DEFAULT_DIR = "odradek-spark"
HOST = "127.0.0.1"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
DAEMON_MEMORY = "256m"  # the master's and workers' own heap (SPARK_DAEMON_MEMORY), not the executors'
STOP_TIMEOUT = 30.0
PYSPARK_MISSING = "pyspark is not installed (pip install -e '.[spark]'); odradek spark runs its Spark"


@dataclass
class SparkWorker:
    """One worker: its web UI port, work dir (executors' output) and log."""

    id: int
    webui_port: int
    work_dir: str
    log: str
    pid: int | None = None


@dataclass
class SparkCluster:
    """The master and its workers: where they live, their ports and pids."""

    dir: str
    port: int
    webui_port: int
    cores: int
    memory: str
    workers: list[SparkWorker] = field(default_factory=list)
    pid: int | None = None
    host: str = HOST

    @property
    def master_url(self) -> str:
        return f"spark://{self.host}:{self.port}"

    @property
    def webui_url(self) -> str:
        return f"http://{self.host}:{self.webui_port}"

    @property
    def log_dir(self) -> Path:
        return Path(self.dir) / "logs"

    @property
    def master_log(self) -> Path:
        return self.log_dir / "master.out"

    @property
    def state_file(self) -> Path:
        return Path(self.dir) / STATE_FILE

    def save(self) -> None:
        cluster_tool.save_record(self.state_file, asdict(self) | {"master_url": self.master_url})

    @classmethod
    def load(cls, directory: Path) -> SparkCluster | None:
        return cluster_tool.load_record(directory / STATE_FILE, "a Spark cluster record", cls.from_record)

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> SparkCluster:
        data.pop("master_url", None)
        data["workers"] = [SparkWorker(**w) for w in data["workers"]]
        return cls(**data)


def plan(directory: Path, workers: int, cores: int, memory: str, port: int, webui_port: int,
         worker_webui_port: int) -> SparkCluster:
    """The layout (nothing is written): worker N's web UI on worker_webui_port + N - 1."""
    highest = max(port, webui_port, worker_webui_port + workers - 1)
    if highest > 65535:
        raise UsageError(f"Error: ports would go up to {highest}; choose lower --port/--webui-port/--worker-webui-port")
    cluster = SparkCluster(str(directory), port, webui_port, cores, memory)
    for n in range(1, workers + 1):
        cluster.workers.append(SparkWorker(n, worker_webui_port + n - 1, str(directory / f"worker{n}" / "work"),
                                           str(cluster.log_dir / f"worker{n}.out")))
    return cluster


def check_ports(cluster: SparkCluster) -> None:
    roles = {cluster.port: "the master's port (--port)", cluster.webui_port: "the master's web UI (--webui-port)"}
    for w in cluster.workers:
        roles.setdefault(w.webui_port, f"worker {w.id}'s web UI (--worker-webui-port)")
    if len(roles) != 2 + len(cluster.workers):
        raise UsageError("Error: the master's port, its web UI and the workers' web UIs overlap; change --port, "
                         "--webui-port or --worker-webui-port")
    busy = [f"{p}, {role}" for p, role in roles.items() if not port_is_free(cluster.host, p)]
    if busy:
        raise CliError(f"Error: port(s) on {cluster.host} already in use: {'; '.join(busy)}")


# ---------------------------------------------------------------------------------------------
# The installed Spark and its processes
# ---------------------------------------------------------------------------------------------


def spark_home() -> Path:
    """The installed pyspark package, which is a Spark distribution (bin/spark-class, jars/)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise CliError(f"Error: {PYSPARK_MISSING}")
    home = Path(spec.origin).parent
    if not (home / "bin" / "spark-class").is_file():
        raise CliError(f"Error: {home} has no bin/spark-class; install pyspark from PyPI (pip install -e '.[spark]')")
    if not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        raise CliError("Error: Java not found (set JAVA_HOME or put java on PATH); Spark needs Java 17 or 21")
    return home


def daemon_env(home: Path) -> dict[str, str]:
    """The master's and workers' environment: everything on 127.0.0.1, executors run this Python."""
    env = dict(os.environ)
    opts = f"{env.get('SPARK_DAEMON_JAVA_OPTS', '')} -Dspark.port.maxRetries=0".strip()
    env.update(SPARK_HOME=str(home), SPARK_LOCAL_IP=HOST, SPARK_LOCAL_HOSTNAME=HOST, SPARK_PUBLIC_DNS=HOST,
               SPARK_DAEMON_JAVA_OPTS=opts, PYSPARK_PYTHON=sys.executable,
               SPARK_MASTER_OPTS=f"{env.get('SPARK_MASTER_OPTS', '')} -Dspark.master.rest.enabled=false".strip())
    env.setdefault("SPARK_DAEMON_MEMORY", DAEMON_MEMORY)
    return env


def _flag(args: list[str], name: str, value: str) -> bool:
    return any(a == name and b == value for a, b in zip(args, args[1:], strict=False))


def master_processes(cluster: SparkCluster) -> list[psutil.Process]:
    return processes.find(lambda a: MASTER_CLASS in a and _flag(a, "--port", str(cluster.port)))


def worker_processes(worker: SparkWorker) -> list[psutil.Process]:
    return processes.find(lambda a: WORKER_CLASS in a and _flag(a, "--work-dir", worker.work_dir))


def launched_processes(cluster: SparkCluster) -> list[psutil.Process]:
    """Every live process the cluster's workers launched: executors and their Python workers, by pid."""
    found: dict[int, psutil.Process] = {}
    for w in cluster.workers:
        for proc in worker_processes(w):
            try:
                children = proc.children(recursive=True)
            except psutil.Error:
                continue
            found.update({c.pid: c for c in children if processes.alive(c)})
    return [found[pid] for pid in sorted(found)]


def executor_processes(cluster: SparkCluster) -> list[psutil.Process]:
    """The executors the cluster's workers launched (CoarseGrainedExecutorBackend JVMs), by pid."""

    def is_executor(proc: psutil.Process) -> bool:
        try:
            return EXECUTOR_CLASS in proc.cmdline()
        except psutil.Error:
            return False

    return [p for p in launched_processes(cluster) if is_executor(p)]


def _launch(home: Path, args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """`spark-class <args>` in a session of its own, its output appended to `log` (spark-class execs the JVM,
    so the pid is the daemon's)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        return subprocess.Popen([str(home / "bin" / "spark-class"), *args], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)


def log_error(log: Path, offset: int) -> str | None:
    """The daemon's own last complaint (an ERROR line or an exception) written after `offset`."""
    errors = [ln.strip() for ln in cluster_tool.lines_written(log, offset)
              if " ERROR " in ln or "Exception" in ln or ln.startswith("Error")]
    return errors[-1] if errors else None


def master_state(cluster: SparkCluster, timeout: float = 2.0) -> dict[str, Any] | None:
    """The master's JSON (status, workers, apps), or None when its web UI does not answer."""
    try:
        with urllib.request.urlopen(f"{cluster.webui_url}/json/", timeout=timeout) as page:
            data = json.loads(page.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def worker_states(cluster: SparkCluster, state: dict[str, Any] | None) -> dict[int, str]:
    """Each worker's state in the master (ALIVE, DEAD...), matched by its web UI port; the newest entry wins."""
    out: dict[int, str] = {}
    for entry in (state or {}).get("workers", []):
        address = str(entry.get("webuiaddress", ""))
        for w in cluster.workers:
            if address.endswith(f":{w.webui_port}") and out.get(w.id) != "ALIVE":
                out[w.id] = str(entry.get("state", "?"))
    return out


# ---------------------------------------------------------------------------------------------
# spark up
# ---------------------------------------------------------------------------------------------


def up_parser() -> ArgParser:
    parser = ArgParser(
        "spark up",
        "Start a Spark standalone master and workers from the installed pyspark, all on 127.0.0.1, and wait "
        "until every worker has registered; prints the master URL for --master.",
        allow_abbrev=False,
    )
    parser.add_argument("--workers", default="2", metavar="N", help="workers (default 2)")
    parser.add_argument("--cores", default="1", metavar="C", help="cores each worker offers (default 1)")
    parser.add_argument("--memory", default="1g", metavar="M",
                        help="memory each worker offers its executors, e.g. 512m, 2g (default 1g)")
    parser.add_argument("--dir", default=DEFAULT_DIR, metavar="DIR",
                        help=f"where its record, logs and work dirs live (default ./{DEFAULT_DIR})")
    parser.add_argument("--port", default="7077", metavar="PORT", help="the master's port (default 7077)")
    parser.add_argument("--webui-port", default="8080", metavar="PORT", help="the master's web UI (default 8080)")
    parser.add_argument("--worker-webui-port", default=None, metavar="PORT",
                        help="worker 1's web UI, the next workers on the following ports (default --webui-port + 1)")
    parser.add_argument("--timeout", default="120", metavar="SECONDS", help="how long to wait for each stage")
    return parser


def parse_memory(text: str) -> str:
    value = text.strip().lower()
    if not (value[:-1].isdigit() and value[-1] in "mg" and int(value[:-1]) > 0):
        raise UsageError(f"Error: --memory {text!r} is not an amount such as 512m or 2g")
    return value


def up(argv: list[str]) -> int:
    args = up_parser().parse_args(argv)
    directory = Path(args.dir).expanduser().absolute()
    webui = parse_int(args.webui_port, "--webui-port", minimum=1)
    cluster = plan(
        directory,
        parse_int(args.workers, "--workers", minimum=1),
        parse_int(args.cores, "--cores", minimum=1),
        parse_memory(args.memory),
        parse_int(args.port, "--port", minimum=1),
        webui,
        parse_int(args.worker_webui_port, "--worker-webui-port", minimum=1) if args.worker_webui_port else webui + 1,
    )
    timeout = float(parse_int(args.timeout, "--timeout", minimum=1))
    home = spark_home()
    refuse_if_running(directory)
    check_ports(cluster)
    if not cluster_tool.all_or_nothing(directory, lambda: bring_up(cluster, home, timeout),
                                       lambda: tear_down(cluster, quiet=True), "the Spark cluster"):
        return 130
    print_usage(cluster)
    return 0


def refuse_if_running(directory: Path) -> None:
    existing = SparkCluster.load(directory)
    if existing is None:
        return
    if master_processes(existing) or any(worker_processes(w) for w in existing.workers):
        raise CliError(f"Error: a Spark cluster is already running in {directory} (odradek spark down --dir {directory})")


def bring_up(cluster: SparkCluster, home: Path, timeout: float) -> None:
    env = daemon_env(home)
    cluster.save()
    start_master(cluster, home, env, timeout)
    for worker in cluster.workers:
        start_worker(cluster, worker, home, env, timeout)
    wait_for_workers(cluster, timeout)


def _started(proc: subprocess.Popen[bytes], log: Path, offset: int, what: str, ready: Callable[[], bool],
             timeout: float) -> None:
    """Wait until `ready()`; fail with the daemon's own error line when it exits or time runs out."""

    def up_or_exited() -> bool:
        return proc.poll() is not None or ready()

    if wait_for(up_or_exited, timeout) and proc.poll() is None:
        return
    print("FAILED", flush=True)
    why = log_error(log, offset) or (f"it exited with status {proc.returncode}" if proc.poll() is not None
                                     else f"not ready after {timeout:.0f} s")
    raise CliError(f"Error: {what} did not start: {why} (log: {log})")


def start_master(cluster: SparkCluster, home: Path, env: dict[str, str], timeout: float) -> None:
    print(f"master: {cluster.master_url} ... ", end="", flush=True)
    log = cluster.master_log
    offset = log.stat().st_size if log.exists() else 0
    proc = _launch(home, [MASTER_CLASS, "--host", cluster.host, "--port", str(cluster.port),
                          "--webui-port", str(cluster.webui_port)], log, env)
    cluster.pid = proc.pid
    cluster.save()
    _started(proc, log, offset, "the Spark master",
             lambda: (master_state(cluster) or {}).get("status") == "ALIVE", timeout)
    print(f"STARTED (pid {proc.pid}, web UI {cluster.webui_url})", flush=True)


def start_worker(cluster: SparkCluster, worker: SparkWorker, home: Path, env: dict[str, str], timeout: float) -> None:
    print(f"worker {worker.id}: {cluster.cores} core(s), {cluster.memory} ... ", end="", flush=True)
    Path(worker.work_dir).mkdir(parents=True, exist_ok=True)
    log = Path(worker.log)
    offset = log.stat().st_size if log.exists() else 0
    proc = _launch(home, [WORKER_CLASS, cluster.master_url, "--host", cluster.host, "--cores", str(cluster.cores),
                          "--memory", cluster.memory, "--work-dir", worker.work_dir,
                          "--webui-port", str(worker.webui_port)], log, env)
    worker.pid = proc.pid
    cluster.save()
    _started(proc, log, offset, f"worker {worker.id}",
             lambda: not port_is_free(cluster.host, worker.webui_port), timeout)
    print(f"STARTED (pid {proc.pid}, web UI http://{cluster.host}:{worker.webui_port})", flush=True)


def wait_for_workers(cluster: SparkCluster, timeout: float) -> None:
    n = len(cluster.workers)
    print(f"waiting for {n} worker(s) to register with the master ... ", end="", flush=True)
    seen: list[dict[int, str]] = [{}]

    def registered() -> bool:
        seen[0] = worker_states(cluster, master_state(cluster))
        return sum(s == "ALIVE" for s in seen[0].values()) == n

    if not wait_for(registered, timeout, interval=0.3):
        print("FAILED", flush=True)
        shown = ", ".join(f"worker {w.id}={seen[0].get(w.id, 'not registered')}" for w in cluster.workers)
        raise CliError(f"Error: not every worker registered with the master after {timeout:.0f} s ({shown}; "
                       f"logs in {cluster.log_dir})")
    print("done", flush=True)


def print_usage(cluster: SparkCluster) -> None:
    d = cluster.dir
    print(
        f"\nThe Spark cluster is up ({d}, recorded in {STATE_FILE}): {len(cluster.workers)} worker(s) of "
        f"{cluster.cores} core(s) and {cluster.memory}.\n"
        f"  master URL: {cluster.master_url}\n"
        f"  web UI:     {cluster.webui_url}\n"
        f"  logs:       {cluster.log_dir} (master.out, worker<N>.out); executors' stdout and stderr in "
        f"{Path(d) / 'worker<N>' / 'work'}/<app-id>/<executor-id>/\n\n"
        "Try:\n"
        f"  odradek pipeline run weblogs --master {cluster.master_url} --bootstrap-server 127.0.0.1:9092 "
        "--checkpoint /tmp/ck --output /tmp/out\n"
        f"  odradek spark status --dir {d}\n"
        f"  odradek spark down --dir {d}\n"
        f"{cluster.master_url}"
    )


# ---------------------------------------------------------------------------------------------
# spark status / down
# ---------------------------------------------------------------------------------------------


def load_cluster(command: str, description: str, argv: list[str]) -> tuple[str, SparkCluster | None]:
    """The --dir of `odradek spark <command>` and the cluster recorded there, if any."""
    args = cluster_tool.dir_parser(command, description, "spark", DEFAULT_DIR).parse_args(argv)
    return args.dir, SparkCluster.load(Path(args.dir).expanduser().absolute())


def _pid(procs: list[psutil.Process]) -> str:
    return f"pid {procs[0].pid}" if procs else "not running"


def status(argv: list[str]) -> int:
    directory, cluster = load_cluster("status", "Show the master and each worker: pid and state in the master.", argv)
    if cluster is None:
        raise CliError(f"Error: no Spark cluster in {directory} ({STATE_FILE} not found); start one with odradek spark up")
    state = master_state(cluster)
    masters = master_processes(cluster)
    shown = f"status {state.get('status')}" if state else "web UI not answering"
    print(f"master  {cluster.master_url}  {_pid(masters)}  {shown}  {cluster.webui_url}")
    states = worker_states(cluster, state)
    healthy = bool(masters) and state is not None and state.get("status") == "ALIVE"
    for w in cluster.workers:
        procs = worker_processes(w)
        healthy = healthy and bool(procs) and states.get(w.id) == "ALIVE"
        print(f"worker {w.id}  {_pid(procs)}  {states.get(w.id, 'not registered')}  "
              f"http://{cluster.host}:{w.webui_port}  log {w.log}")
    apps = [f"{a.get('id')} ({a.get('name')})" for a in (state or {}).get("activeapps", [])]
    print(f"applications: {', '.join(apps) or 'none running'}")
    return 0 if healthy else 1


def down(argv: list[str]) -> int:
    directory, cluster = load_cluster("down", "Stop the workers (with their executors), then the master (SIGTERM).", argv)
    return cluster_tool.stop_recorded(directory, cluster, f"Spark cluster in {directory} ({STATE_FILE} not found)", tear_down)


def tear_down(cluster: SparkCluster, *, quiet: bool) -> None:
    """Stop the workers and the executors they launched, then the master; forget their pids."""
    say: Callable[[str], Any] = (lambda _text: None) if quiet else print
    executors = launched_processes(cluster)
    stop_group("workers", [p for w in cluster.workers for p in worker_processes(w)], STOP_TIMEOUT, say)
    left = [p for p in executors if processes.alive(p)]
    if left:  # a worker that was killed leaves its executors to notice their driver or worker is gone
        stop_group("executors and their Python workers", left, STOP_TIMEOUT, say)
    stop_group("master", master_processes(cluster), STOP_TIMEOUT, say)
    cluster.pid = None
    for w in cluster.workers:
        w.pid = None
    if cluster.state_file.parent.is_dir():
        cluster.save()


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------

USAGE = f"""usage: odradek spark {{up,status,down}} [--dir DIR] [options]

A Spark standalone cluster on 127.0.0.1 for the pipelines (--master), under ./{DEFAULT_DIR}.
  up      start it: odradek spark up [--workers 2] [--cores 1] [--memory 1g] [--dir DIR]
          [--port 7077] [--webui-port 8080] [--worker-webui-port 8081]
  status  the master and each worker: pid, state, web UI, log
  down    stop the workers with their executors, then the master (idempotent)
Run 'odradek spark <command> --help' for its flags."""


def main(argv: list[str]) -> int:
    """`odradek spark up|status|down [flags]`."""
    return run_subcommand("spark", {"up": up, "status": status, "down": down}, USAGE, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
