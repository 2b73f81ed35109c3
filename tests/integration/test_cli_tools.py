"""The `odradek` client tools end to end against a real broker: Kafka's quickstart and TopicCommand
behaviour, console producer/consumer formats and groups, dump-log on a real segment, and one-line
errors (bad flags, unreachable server) without stack traces."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.harness import BrokerPool, BrokerProcess, free_port, odradek_cmd, run_cli
from tests.waiting import wait_until

TOOLS = {
    "topics": ["--bootstrap-server", "--create", "--list", "--describe", "--alter", "--delete", "--topic",
               "--partitions", "--replication-factor", "--config"],
    "console-producer": ["--bootstrap-server", "--topic", "--property", "--producer-property"],
    "console-consumer": ["--bootstrap-server", "--topic", "--from-beginning", "--max-messages", "--group",
                         "--partition", "--offset", "--property"],
    "dump-log": ["--files", "--print-data-log", "--deep-iteration"],
    "log-dirs": ["--bootstrap-server", "--describe", "--topic-list", "--broker-list"],
    "transactions": ["--bootstrap-server", "--command-config", "list", "describe", "describe-producers",
                     "find-hanging", "abort"],
    "share-groups": ["--bootstrap-server", "--list", "--describe", "--delete", "--reset-offsets", "--delete-offsets",
                     "--members", "--offsets", "--state", "--verbose", "--to-earliest", "--to-latest", "--to-datetime",
                     "--dry-run", "--execute"],
    "producer-perf-test": ["--topic", "--num-records", "--record-size", "--payload-file", "--throughput",
                           "--producer-props", "--producer.config"],
    "zookeeper-security-migration": ["--zookeeper.acl", "--zookeeper.connect", "--zookeeper.session.timeout",
                                     "--zookeeper.connection.timeout", "--enable.path.check", "--zk-tls-config-file"],
    "consumer-perf-test": ["--bootstrap-server", "--topic", "--messages", "--group", "--from-latest", "--timeout",
                           "--show-detailed-stats", "--hide-header"],
}
CONSUME_TIMEOUT_MS = "30000"
TOPIC_LINE = re.compile(
    r"Topic: (?P<topic>\S+)(\tTopicId: [A-Za-z0-9_-]{22})?\tPartitionCount: (?P<count>\d+)"
    r"\tReplicationFactor: (?P<rf>\d+)\tConfigs: (?P<configs>\S*)"
)
PARTITION_LINE = re.compile(
    r"\tTopic: (?P<topic>\S+)\tPartition: (?P<partition>\d+)\tLeader: (?P<leader>\d+|none)"
    r"\tReplicas: (?P<replicas>[\d,]+)\tIsr: (?P<isr>[\d,]*)"
)


def ok(*args: str, input: str | None = None, timeout: float = 60.0) -> subprocess.CompletedProcess:
    result = run_cli(*args, input=input, timeout=timeout)
    assert result.returncode == 0, f"{args} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr
    return result


def fails(*args: str, input: str | None = None, timeout: float = 60.0) -> subprocess.CompletedProcess:
    result = run_cli(*args, input=input, timeout=timeout)
    assert result.returncode != 0, f"{args} should have failed:\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr + result.stdout
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result


def topics(broker: BrokerProcess, *args: str) -> subprocess.CompletedProcess:
    return ok("topics", "--bootstrap-server", broker.bootstrap, *args)


def create(broker: BrokerProcess, topic: str, partitions: int = 1, *extra: str) -> None:
    result = topics(broker, "--create", "--topic", topic, "--partitions", str(partitions),
                    "--replication-factor", "1", *extra)
    assert result.stdout.splitlines()[-1] == f"Created topic {topic}."


def produce(broker: BrokerProcess, topic: str, lines: list[str], *extra: str) -> None:
    ok("console-producer", "--bootstrap-server", broker.bootstrap, "--topic", topic, *extra,
       input="".join(line + "\n" for line in lines))


def consume(broker: BrokerProcess, topic: str, *extra: str) -> subprocess.CompletedProcess:
    return ok("console-consumer", "--bootstrap-server", broker.bootstrap, "--topic", topic,
              "--timeout-ms", CONSUME_TIMEOUT_MS, *extra, timeout=90)


def describe(broker: BrokerProcess, topic: str) -> list[str]:
    return topics(broker, "--describe", "--topic", topic).stdout.splitlines()


# --- without a broker ---------------------------------------------------------------------------


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_help(tool: str) -> None:
    result = ok(tool, "--help")
    for flag in TOOLS[tool]:
        assert flag in result.stdout


def test_top_level_help_and_unknown_tool() -> None:
    listing = ok("--help").stdout
    for tool in TOOLS:
        assert tool in listing
    result = run_cli("nosuch")
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == "odradek: unknown tool 'nosuch'"


@pytest.mark.parametrize(
    "args",
    [
        ("topics", "--bootstrap-server", "127.0.0.1:1", "--list", "--no-such-flag"),
        ("topics", "--bootstrap-server", "127.0.0.1:1"),
        ("topics", "--bootstrap-server", "127.0.0.1:1", "--create"),
        ("topics", "--bootstrap-server", "127.0.0.1:1", "--create", "--topic", "t", "--partitions", "x"),
        ("topics", "--list"),
        ("topics", "--zookeeper", "127.0.0.1:2181", "--list"),
        ("console-producer", "--bootstrap-server", "127.0.0.1:1"),
        ("console-producer", "--bootstrap-server", "127.0.0.1:1", "--topic", "t", "--compression-codec", "nope"),
        ("console-consumer", "--bootstrap-server", "127.0.0.1:1"),
        ("console-consumer", "--bootstrap-server", "127.0.0.1:1", "--topic", "t", "--offset", "3"),
        ("console-consumer", "--bootstrap-server", "127.0.0.1:1", "--topic", "t", "--max-messages", "x"),
        ("dump-log",),
        ("dump-log", "/nonexistent/00000000000000000000.log"),
    ],
)
def test_bad_flags_fail_with_one_line(args: tuple[str, ...]) -> None:
    fails(*args)


def test_unreachable_server_is_one_line() -> None:
    bootstrap = f"127.0.0.1:{free_port()}"
    commands = [
        ["topics", "--bootstrap-server", bootstrap, "--list"],
        ["topics", "--bootstrap-server", bootstrap, "--create", "--topic", "t"],
        ["console-producer", "--bootstrap-server", bootstrap, "--topic", "t"],
        ["console-consumer", "--bootstrap-server", bootstrap, "--topic", "t"],
    ]
    started = time.monotonic()
    procs = [
        subprocess.Popen(odradek_cmd(*c), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
        for c in commands
    ]
    outputs = [p.communicate(input="x\n", timeout=60) for p in procs]
    assert time.monotonic() - started < 30
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode != 0
        assert "Traceback" not in out + err
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith(f"Error: could not reach any broker at {bootstrap}")


# --- against the broker -------------------------------------------------------------------------


def test_quickstart(broker: BrokerProcess) -> None:
    create(broker, "quickstart-events")
    produce(broker, "quickstart-events", ["This is my first event", "This is my second event", "third"])
    result = consume(broker, "quickstart-events", "--from-beginning", "--max-messages", "3")
    assert result.stdout.splitlines() == ["This is my first event", "This is my second event", "third"]
    assert "Processed a total of 3 messages" in result.stderr


def test_list(broker: BrokerProcess) -> None:
    for name in ("list-b", "list-a", "other"):
        create(broker, name)
    names = topics(broker, "--list").stdout.splitlines()
    assert names == sorted(names)
    assert {"list-a", "list-b", "other"} <= set(names)
    assert topics(broker, "--list", "--topic", "list-.*").stdout.splitlines() == ["list-a", "list-b"]
    assert "__consumer_offsets" not in topics(broker, "--list", "--exclude-internal").stdout.splitlines()


def test_describe_layout(broker: BrokerProcess) -> None:
    create(broker, "described", 2)
    lines = describe(broker, "described")
    assert len(lines) == 3, lines
    head = TOPIC_LINE.fullmatch(lines[0])
    assert head, lines[0]
    assert head["topic"] == "described" and head["count"] == "2" and head["rf"] == "1" and head["configs"] == ""
    for number, line in enumerate(lines[1:]):
        part = PARTITION_LINE.fullmatch(line)
        assert part, line
        assert part["topic"] == "described" and part["partition"] == str(number)
        assert part["leader"] == "0" and part["replicas"] == "0" and part["isr"] == "0"


def test_describe_regex_and_missing_topic(broker: BrokerProcess) -> None:
    create(broker, "rx-one")
    create(broker, "rx-two")
    lines = topics(broker, "--describe", "--topic", "rx-.*").stdout.splitlines()
    assert [TOPIC_LINE.fullmatch(x)["topic"] for x in lines if TOPIC_LINE.fullmatch(x)] == ["rx-one", "rx-two"]
    result = fails("topics", "--bootstrap-server", broker.bootstrap, "--describe", "--topic", "no-such-topic")
    assert result.stderr.strip() == (
        "Error while executing topic command : Topic 'no-such-topic' does not exist as expected"
    )
    assert topics(broker, "--describe", "--topic", "no-such-topic", "--if-exists").stdout == ""


def test_alter_partitions(broker: BrokerProcess) -> None:
    create(broker, "grow", 2)
    topics(broker, "--alter", "--topic", "grow", "--partitions", "4")
    lines = describe(broker, "grow")
    assert TOPIC_LINE.fullmatch(lines[0])["count"] == "4"
    assert [PARTITION_LINE.fullmatch(x)["partition"] for x in lines[1:]] == ["0", "1", "2", "3"]


def test_alter_config(broker: BrokerProcess) -> None:
    create(broker, "configured", 1, "--config", "cleanup.policy=compact")
    assert TOPIC_LINE.fullmatch(describe(broker, "configured")[0])["configs"] == "cleanup.policy=compact"
    topics(broker, "--alter", "--topic", "configured", "--config", "retention.ms=86400000")
    configs = TOPIC_LINE.fullmatch(describe(broker, "configured")[0])["configs"]
    assert configs == "cleanup.policy=compact,retention.ms=86400000"
    topics(broker, "--alter", "--topic", "configured", "--delete-config", "cleanup.policy")
    assert TOPIC_LINE.fullmatch(describe(broker, "configured")[0])["configs"] == "retention.ms=86400000"
    overridden = topics(broker, "--describe", "--topics-with-overrides").stdout.splitlines()
    assert any(line.startswith("Topic: configured\t") for line in overridden)
    assert not any(line.startswith("\t") for line in overridden)


def test_delete(broker: BrokerProcess) -> None:
    create(broker, "doomed")
    topics(broker, "--delete", "--topic", "doomed")
    wait_until(lambda: "doomed" not in topics(broker, "--list").stdout.splitlines(), 10, "the deleted topic to go")
    fails("topics", "--bootstrap-server", broker.bootstrap, "--delete", "--topic", "doomed")
    topics(broker, "--delete", "--topic", "doomed", "--if-exists")


def test_create_existing_topic(broker: BrokerProcess) -> None:
    create(broker, "twice")
    result = fails("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", "twice")
    assert result.returncode == 1
    assert result.stderr.strip() == "Error while executing topic command : Topic 'twice' already exists."
    assert topics(broker, "--create", "--topic", "twice", "--if-not-exists").stdout == ""


def test_keys_round_trip(broker: BrokerProcess) -> None:
    create(broker, "keyed")
    produce(broker, "keyed", ["k1:v1", "k2:v:2"], "--property", "parse.key=true", "--property", "key.separator=:")
    result = consume(broker, "keyed", "--from-beginning", "--max-messages", "2", "--property", "print.key=true")
    assert result.stdout.splitlines() == ["k1\tv1", "k2\tv:2"]
    result = consume(
        broker, "keyed", "--from-beginning", "--max-messages", "2", "--property", "print.key=true",
        "--property", "key.separator=|", "--property", "print.offset=true", "--property", "print.partition=true",
        "--property", "print.timestamp=true",
    )
    lines = result.stdout.splitlines()
    assert re.fullmatch(r"CreateTime:\d{13}\|Partition:0\|Offset:0\|k1\|v1", lines[0]), lines[0]
    assert re.fullmatch(r"CreateTime:\d{13}\|Partition:0\|Offset:1\|k2\|v:2", lines[1]), lines[1]


def test_headers_round_trip(broker: BrokerProcess) -> None:
    create(broker, "headed")
    produce(broker, "headed", ["h1:a,h2:b\tk\tv"], "--property", "parse.headers=true", "--property", "parse.key=true")
    result = consume(broker, "headed", "--from-beginning", "--max-messages", "1",
                     "--property", "print.headers=true", "--property", "print.key=true")
    assert result.stdout.splitlines() == ["h1:a,h2:b\tk\tv"]


def test_partition_and_offset(broker: BrokerProcess) -> None:
    create(broker, "positioned")
    produce(broker, "positioned", [f"m{i}" for i in range(5)])
    result = consume(broker, "positioned", "--partition", "0", "--offset", "2", "--max-messages", "3")
    assert result.stdout.splitlines() == ["m2", "m3", "m4"]
    result = consume(broker, "positioned", "--partition", "0", "--offset", "earliest", "--max-messages", "1")
    assert result.stdout.splitlines() == ["m0"]
    result = consume(broker, "positioned", "--partition", "0", "--from-beginning", "--max-messages", "5")
    assert result.stdout.splitlines() == [f"m{i}" for i in range(5)]


def test_group_resumes(broker: BrokerProcess) -> None:
    create(broker, "grouped")
    produce(broker, "grouped", [str(i) for i in range(1, 7)])
    first = consume(broker, "grouped", "--group", "resumers", "--from-beginning", "--max-messages", "3")
    assert first.stdout.splitlines() == ["1", "2", "3"]
    second = consume(broker, "grouped", "--consumer-property", "group.id=resumers", "--max-messages", "3")
    assert second.stdout.splitlines() == ["4", "5", "6"]


def test_include_regex(broker: BrokerProcess) -> None:
    create(broker, "inc-a")
    create(broker, "inc-b")
    produce(broker, "inc-a", ["from-a"])
    produce(broker, "inc-b", ["from-b"])
    result = ok("console-consumer", "--bootstrap-server", broker.bootstrap, "--include", "inc-.*",
                "--from-beginning", "--max-messages", "2", "--timeout-ms", CONSUME_TIMEOUT_MS, timeout=90)
    assert sorted(result.stdout.splitlines()) == ["from-a", "from-b"]


def test_idle_timeout(broker: BrokerProcess) -> None:
    create(broker, "quiet")
    started = time.monotonic()
    result = ok("console-consumer", "--bootstrap-server", broker.bootstrap, "--topic", "quiet",
                "--from-beginning", "--timeout-ms", "3000")
    assert time.monotonic() - started < 30
    assert result.stdout == ""
    assert "Processed a total of 0 messages" in result.stderr


def test_compressed_produce(broker: BrokerProcess) -> None:
    create(broker, "squeezed")
    produce(broker, "squeezed", ["a", "b", "c"], "--compression-codec", "gzip")
    assert consume(broker, "squeezed", "--from-beginning", "--max-messages", "3").stdout.splitlines() == [
        "a", "b", "c"]


def test_dump_log_on_real_segment(broker: BrokerProcess) -> None:
    create(broker, "dumped")
    produce(broker, "dumped", ["hello", "world"], "--sync")
    segment = segment_of(broker, "dumped")
    result = ok("dump-log", "--files", str(segment), "--print-data-log")
    lines = result.stdout.splitlines()
    assert lines[0] == f"Dumping {segment}"
    batches = [x for x in lines if x.startswith("baseOffset:")]
    assert batches and all(x.endswith("isvalid: true") for x in batches)
    payloads = [x.split(" payload: ")[1] for x in lines if x.startswith("| offset:")]
    assert payloads == ["hello", "world"]
    assert re.match(r"baseOffset: 0 lastOffset: 0 count: 1 .* position: 0 CreateTime: \d+ size: \d+ magic: 2 "
                    r"compresscodec: none crc: \d+ isvalid: true", batches[0])


def segment_of(broker: BrokerProcess, topic: str) -> Path:
    directory = broker.log_dir / f"{topic}-0"

    def first_segment_with_data() -> Path | None:
        logs = sorted(directory.glob("*.log")) if directory.exists() else []
        return logs[0] if logs and logs[0].stat().st_size > 0 else None

    return wait_until(first_segment_with_data, 10, f"a segment with data under {directory}")


def test_producer_names_a_missing_topic_at_once(brokers: BrokerPool) -> None:
    """With auto.create.topics.enable=false the console producer fails before reading a line, naming the
    topic and the reason, instead of every record waiting out its delivery timeout; with auto-create on
    the topic is created on first use as in Kafka."""
    strict = brokers.start({"auto.create.topics.enable": "false"})
    r = run_cli("console-producer", "--bootstrap-server", strict.bootstrap, "--topic", "absent",
                input="one\n", timeout=60)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr.strip() == ("Error: topic 'absent' does not exist and the cluster does not create topics on "
                                "first use (auto.create.topics.enable=false): create it with "
                                "`odradek topics --create --topic absent`")
    assert "absent" not in ok("topics", "--bootstrap-server", strict.bootstrap, "--list").stdout.split()

    ok("console-producer", "--bootstrap-server", brokers.start().bootstrap, "--topic", "made-on-use", input="one\n")


PRODUCER_SUMMARY = re.compile(
    r"^(?P<count>\d+) records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, [\d.]+ ms max "
    r"latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99.9th\.$")


def test_perf_tools_measure_what_they_move(broker: BrokerProcess, tmp_path: Path) -> None:
    """producer-perf-test then consumer-perf-test, with Kafka's output lines and the numbers adding up."""
    r = ok("producer-perf-test", "--topic", "perf", "--num-records", "5000", "--record-size", "100",
           "--throughput", "-1", "--producer-props", f"bootstrap.servers={broker.bootstrap}", "acks=all")
    summary = PRODUCER_SUMMARY.match(r.stdout.splitlines()[-1])
    assert summary and summary["count"] == "5000", r.stdout
    payloads = tmp_path / "payloads.txt"
    payloads.write_text("alpha\nbeta\n")
    r = ok("producer-perf-test", "--topic", "perf", "--num-records", "1000", "--payload-file", str(payloads),
           "--throughput", "5000", "--bootstrap-server", broker.bootstrap)
    assert r.stdout.splitlines()[:2] == [f"Reading payloads from: {payloads}", "Number of messages read: 2"]
    assert PRODUCER_SUMMARY.match(r.stdout.splitlines()[-1])

    r = ok("consumer-perf-test", "--bootstrap-server", broker.bootstrap, "--topic", "perf", "--messages", "6000",
           "--timeout", "60000")
    header, line = r.stdout.splitlines()
    assert header == ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
                      "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
    fields = line.split(", ")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}", fields[0])
    assert int(fields[4]) == 6000
    low, high = (5000 * 100 + 1000 * len("beta")) / 2**20, (5000 * 100 + 1000 * len("alpha")) / 2**20
    assert round(low, 4) <= float(fields[2]) <= round(high, 4)  # 5,000 x 100 B and 1,000 of alpha or beta

    bad = run_cli("producer-perf-test", "--topic", "perf", "--num-records", "10", "--record-size", "10",
                  "--payload-file", str(payloads), "--throughput", "-1", "--bootstrap-server", broker.bootstrap)
    assert (bad.returncode, bad.stderr.strip()) == (
        1, "Error: either --record-size or --payload-file must be specified but not both.")
    late = run_cli("consumer-perf-test", "--bootstrap-server", broker.bootstrap, "--topic", "perf", "--messages",
                   "10", "--from-latest", "--timeout", "1000", "--hide-header")
    assert late.returncode == 0 and late.stdout.count("\n") == 1 and ", 0, 0.0000, " in late.stdout
    assert "WARNING: Exiting before consuming the expected number of messages: timeout (1000 ms)" in late.stderr


def test_log_dirs_describe(broker: BrokerProcess) -> None:
    """kafka-log-dirs.sh's output: two progress lines and the JSON of every log dir with partition sizes."""
    import json

    from tests.clients import create_topic, produce

    create_topic(broker.bootstrap, "dirs", 2)
    produce(broker.bootstrap, "dirs", [b"x" * 100], partition=1)
    r = ok("log-dirs", "--bootstrap-server", broker.bootstrap, "--describe", "--topic-list", "dirs")
    lines = r.stdout.splitlines()
    assert lines[:2] == ["Querying brokers for log directories information",
                         "Received log directory information from brokers 0"]
    report = json.loads(lines[2])
    assert report["version"] == 1 and [b["broker"] for b in report["brokers"]] == [0]
    (log_dir,) = report["brokers"][0]["logDirs"]
    assert log_dir["logDir"] == str(broker.log_dir) and log_dir["error"] is None
    sizes = {p["partition"]: p["size"] for p in log_dir["partitions"]}
    assert sizes["dirs-0"] == 0 and sizes["dirs-1"] > 100 and set(sizes) == {"dirs-0", "dirs-1"}
    bad = run_cli("log-dirs", "--bootstrap-server", broker.bootstrap, "--describe", "--broker-list", "7")
    assert (bad.returncode, bad.stderr.strip()) == (1, "Error: brokers 7 are not in the cluster (brokers: 0)")
    assert run_cli("log-dirs", "--bootstrap-server", broker.bootstrap).stderr.strip() == (
        "Error: Command must include option '--describe'")
