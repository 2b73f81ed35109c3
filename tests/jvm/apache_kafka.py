"""Apache Kafka itself, run beside Odradek as the oracle: its jars (tests/jvm/pom.xml, fetched once from
Maven Central by the test command's `kafka_jars` into ~/.cache/odradek), a single-node KRaft broker started
the way tests start Odradek (127.0.0.1, free ports, a temp dir, stopped by pid), and Kafka's own command-line
tools, run by their main classes in one long-lived JVM (tests/jvm/ToolRunner.java) so that dozens of tool
runs cost one JVM start."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from tests.harness import free_port, stop_process, wait_port

POM = Path(__file__).with_name("pom.xml")
_SLF4J = re.compile(r"^SLF4J: .*\n", re.M)

# Kafka's scripts and the main classes they run (bin/kafka-*.sh of 4.x)
TOOLS = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
}


# tools whose last output comes from a JVM shutdown hook (closing the producer or consumer): each gets a JVM of
# its own, as its script gives it
OWN_JVM = frozenset({"kafka-verifiable-producer", "kafka-verifiable-consumer"})


def kafka_version() -> str:
    m = re.search(r"<kafka.version>([^<]+)</kafka.version>", POM.read_text())
    assert m is not None
    return m.group(1)


def kafka_home() -> Path:
    """Where the test command put Apache Kafka's jars (and the tool runner)."""
    home = os.environ.get("ODRADEK_KAFKA_HOME")
    path = Path(home) if home else (Path(os.environ.get("ODRADEK_CACHE", Path.home() / ".cache" / "odradek"))
                                    / f"apache-kafka-{kafka_version()}")
    if not (path / ".complete").exists():
        raise RuntimeError(f"Apache Kafka's jars are not in {path}: run `bash scripts/test.sh` once (it fetches them "
                           "from Maven Central), or `. scripts/env.sh && kafka_jars`")
    return path


def classpath() -> str:
    return str(kafka_home() / "libs" / "*")


def logging_classpath() -> str:
    """SLF4J's simple logger (tests/jvm/logging/pom.xml), for JVMs whose logs a failing test shows."""
    path = kafka_home() / "logging" / ".complete"
    if not path.exists():
        raise RuntimeError(f"the JVM logging binding is not in {path.parent}: run `. scripts/env.sh && kafka_jars`")
    return str(path.parent / "libs" / "*")


def run_kafka2(main: str, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    """A Kafka 2.x tool (tests/jvm/kafka2/pom.xml) by main class, in a JVM of its own: the guides' versions,
    whose --zookeeper commands write ZooKeeper directly."""
    home = os.environ.get("ODRADEK_KAFKA2_HOME")
    m = re.search(r"<kafka.version>([^<]+)</kafka.version>", (POM.parent / "kafka2" / "pom.xml").read_text())
    assert m is not None
    path = Path(home) if home else (Path(os.environ.get("ODRADEK_CACHE", Path.home() / ".cache" / "odradek"))
                                    / f"apache-kafka-{m.group(1)}")
    if not (path / ".complete").exists():
        raise RuntimeError(f"Kafka {m.group(1)}'s jars are not in {path}: run `. scripts/env.sh && kafka_jars`")
    r = subprocess.run(java("-cp", str(path / "libs" / "*"), main, *args), capture_output=True, text=True,
                       timeout=timeout)
    r.stderr = _SLF4J.sub("", r.stderr)
    return r


def runner_dir() -> Path:
    """The build of this checkout's Java programs (tests/jvm/*.java), by the hash of their sources (as
    scripts/env.sh's kafka_jars names it)."""
    sources = sorted(Path(__file__).parent.glob("*.java"), key=lambda p: p.name.encode())
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:16]
    built = kafka_home() / f"runner-{digest}"
    if not (built / "ToolRunner.class").exists():
        raise RuntimeError(f"the Java test programs are not built for these sources ({built}): run "
                           "`. scripts/env.sh && kafka_jars`")
    return built


def java(*args: str) -> list[str]:
    return ["java", "-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", *args]


@dataclass
class ApacheKafkaBroker:
    """One Apache Kafka broker, KRaft combined mode (broker and controller), node id 0, like a fresh
    `kafka-storage.sh format --standalone` + `kafka-server-start.sh` of the quickstart."""

    workdir: Path
    overrides: dict[str, str] = field(default_factory=dict)
    port: int = 0
    controller_port: int = 0
    heap: str = "-Xmx512m"  # "default": kafka-server-start.sh's -Xmx1G -Xms1G (the benchmarks)
    proc: subprocess.Popen | None = None

    def __post_init__(self) -> None:
        self.port = self.port or free_port()
        self.controller_port = self.controller_port or free_port()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config_path = self.workdir / "server.properties"
        self.stdout_path = self.workdir / "kafka.out"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 90.0) -> ApacheKafkaBroker:
        props = {
            "process.roles": "broker,controller",
            "node.id": "0",  # as the test brokers of Odradek: the same ids in both outputs
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.workdir / "data"),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            **self.overrides,
        }
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        if not (self.workdir / "data" / "meta.properties").exists():
            cluster_id = uuid.uuid4().hex[:22]
            subprocess.run(java("-cp", classpath(), "kafka.tools.StorageTool", "format", "--standalone", "-t",
                                cluster_id, "-c", str(self.config_path)),
                           check=True, capture_output=True, timeout=120)
        with open(self.stdout_path, "ab") as out:
            # the benchmarks run kafka-server-start.sh's JVM; the tests a lighter one (C1 only: a test's broker
            # lives a minute, and the C2 compiler's threads would take a core for much of it)
            jvm = (["-Xmx1G", "-Xms1G"] if self.heap == "default"
                   else [*self.heap.split(), "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
            self.proc = subprocess.Popen(["java", *jvm, "-cp", classpath(), "kafka.Kafka", str(self.config_path)],
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        wait_port(self.port, timeout, self.proc)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            stop_process(self.proc)


@dataclass
class ToolResult:
    exit: int
    stdout: str
    stderr: str


class KafkaTools:
    """Kafka's command-line tools by script name, run one at a time in one JVM (see the module docstring)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(java("-cp", f"{runner_dir()}{os.pathsep}{classpath()}", "ToolRunner"),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, start_new_session=True)
        self._lock = threading.Lock()

    def run(self, tool: str, *args: str, stdin: str = "", timeout: float = 120.0) -> ToolResult:
        """Run `tool` (a script name such as "kafka-topics") with `args`; its exit code, stdout and stderr."""
        if tool in OWN_JVM:
            r = subprocess.run(java("-cp", classpath(), TOOLS[tool], *args), input=stdin, capture_output=True,
                               text=True, timeout=timeout)
            return ToolResult(r.returncode, r.stdout, _SLF4J.sub("", r.stderr))
        return self.run_main(TOOLS[tool], *args, stdin=stdin, timeout=timeout)

    def run_main(self, main: str, *args: str, stdin: str = "", timeout: float = 120.0) -> ToolResult:
        """Run the main method of class `main` (a tool's, or a test program's of tests/jvm) with `args`."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        tool = main
        command = json.dumps({"main": main, "args": list(args), "stdin": stdin})
        with self._lock:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
            answer: list[str] = []
            reader = threading.Thread(target=lambda: answer.append(self.proc.stdout.readline()),  # type: ignore[union-attr]
                                      daemon=True)
            reader.start()
            reader.join(timeout)
            if not answer or not answer[0]:
                self.close()
                raise TimeoutError(f"{tool} {' '.join(args)} gave no answer in {timeout} s")
        out = json.loads(answer[0])
        return ToolResult(out["exit"], out["stdout"], _SLF4J.sub("", out["stderr"]))

    def close(self) -> None:
        if self.proc.poll() is None:
            stop_process(self.proc, 5)
