"""Apache Kafka's own command-line tools (4.4, from Maven Central) against Odradek and against Apache Kafka
itself, side by side: the same commands on both brokers, their output compared after masking what depends on
the broker's identity (topic ids, node ids, paths, timings). A difference is a defect of Odradek or a
departure written in docs/DESIGN.md."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from odradek.server.dispatcher import APIS
from odradek.server.features import STREAMS_GROUP_HEARTBEAT_KEY
from tests.clients import unique_name
from tests.harness import BrokerProcess
from tests.jvm.apache_kafka import ApacheKafkaBroker, KafkaTools, ToolResult

Masker = Callable[[str], str]


def _masks(*pairs: tuple[str, str]) -> Masker:
    compiled = [(re.compile(p, re.M), r) for p, r in pairs]

    def mask(text: str) -> str:
        for pattern, repl in compiled:
            text = pattern.sub(repl, text)
        return text

    return mask


# what differs between two healthy brokers (both have node id 0): topic ids
IDENTITY = _masks((r"TopicId: [A-Za-z0-9_-]{22}", "TopicId: <id>"))


def both(tools: KafkaTools, odradek: BrokerProcess, apache: ApacheKafkaBroker, tool: str, *args: str,
         stdin: str = "", mask: Masker = IDENTITY) -> tuple[ToolResult, ToolResult]:
    """`tool args` against each broker ({bootstrap} in an argument is its address); the two results, masked."""
    results = []
    for bootstrap in (odradek.bootstrap, apache.bootstrap):
        r = tools.run(tool, *(a.replace("{bootstrap}", bootstrap) for a in args), stdin=stdin)
        results.append(ToolResult(r.exit, mask(r.stdout.replace(bootstrap, "<bootstrap>")),
                                  mask(r.stderr.replace(bootstrap, "<bootstrap>"))))
    return results[0], results[1]


def same(tools: KafkaTools, odradek: BrokerProcess, apache: ApacheKafkaBroker, tool: str, *args: str,
         stdin: str = "", mask: Masker = IDENTITY) -> ToolResult:
    """Run on both and assert the same exit code and output; Odradek's result."""
    ours, theirs = both(tools, odradek, apache, tool, *args, stdin=stdin, mask=mask)
    assert (ours.exit, ours.stdout) == (theirs.exit, theirs.stdout), (
        f"{tool} {' '.join(args)}\n--- Odradek (exit {ours.exit}):\n{ours.stdout}{ours.stderr}\n"
        f"--- Apache Kafka (exit {theirs.exit}):\n{theirs.stdout}{theirs.stderr}")
    return ours


def test_kafka_topics(tools: KafkaTools, broker: BrokerProcess, apache: ApacheKafkaBroker) -> None:
    t = unique_name("diff-topics")
    run = lambda *args: same(tools, broker, apache, "kafka-topics", "--bootstrap-server", "{bootstrap}", *args)  # noqa: E731
    assert run("--create", "--topic", t, "--partitions", "3", "--replication-factor", "1").stdout == (
        f"Created topic {t}.\n")
    run("--describe", "--topic", t)
    run("--alter", "--topic", t, "--partitions", "4")
    run("--describe", "--topic", t, "--partitions", "4")
    run("--create", "--topic", t, "--partitions", "1")  # exists
    run("--create", "--topic", t + "-cfg", "--config", "retention.ms=1000", "--config", "cleanup.policy=compact")
    run("--describe", "--topic", t + "-cfg")
    run("--describe", "--topic", "no-such-topic")
    run("--delete", "--topic", t + "-cfg")
    run("--create", "--topic", "bad name!")


def test_console_producer_and_consumer(tools: KafkaTools, broker: BrokerProcess, apache: ApacheKafkaBroker) -> None:
    t = unique_name("diff-console")
    same(tools, broker, apache, "kafka-topics", "--bootstrap-server", "{bootstrap}", "--create", "--topic", t,
         "--partitions", "1")
    same(tools, broker, apache, "kafka-console-producer", "--bootstrap-server", "{bootstrap}", "--topic", t,
         "--reader-property", "parse.key=true", stdin="k1\tfirst\nk2\tsecond\n")
    out = same(tools, broker, apache, "kafka-console-consumer", "--bootstrap-server", "{bootstrap}", "--topic", t,
               "--from-beginning", "--max-messages", "2", "--formatter-property", "print.key=true",
               "--formatter-property", "print.partition=true", "--formatter-property", "print.offset=true",
               "--group", t + "-g")
    assert out.stdout == "Partition:0\tOffset:0\tk1\tfirst\nPartition:0\tOffset:1\tk2\tsecond\n"
    same(tools, broker, apache, "kafka-get-offsets", "--bootstrap-server", "{bootstrap}", "--topic", t)
    no_consumer_id = _masks((r"[a-zA-Z0-9._-]*consumer-[^\s]+", "<consumer-id>"), (r"/127\.0\.0\.1", "<host>"))
    same(tools, broker, apache, "kafka-consumer-groups", "--bootstrap-server", "{bootstrap}", "--describe",
         "--group", t + "-g", mask=no_consumer_id)


def test_kafka_configs(tools: KafkaTools, broker: BrokerProcess, apache: ApacheKafkaBroker) -> None:
    t = unique_name("diff-configs")
    same(tools, broker, apache, "kafka-topics", "--bootstrap-server", "{bootstrap}", "--create", "--topic", t)
    run = lambda *args: same(tools, broker, apache, "kafka-configs", "--bootstrap-server", "{bootstrap}", *args)  # noqa: E731
    run("--entity-type", "topics", "--entity-name", t, "--alter", "--add-config", "retention.ms=123456,segment.ms=600000")
    run("--entity-type", "topics", "--entity-name", t, "--describe")
    run("--entity-type", "topics", "--entity-name", t, "--alter", "--delete-config", "segment.ms")
    run("--entity-type", "topics", "--entity-name", t, "--describe")
    run("--entity-type", "topics", "--entity-name", t, "--alter", "--add-config", "no.such.config=1")
    run("--entity-type", "topics", "--entity-name", t, "--alter", "--add-config", "retention.ms=abc")
    run("--entity-type", "topics", "--entity-name", "no-such-topic", "--describe")
    run("--entity-type", "groups", "--entity-name", t, "--alter", "--add-config", "consumer.session.timeout.ms=50000")
    run("--entity-type", "groups", "--entity-name", t, "--describe")


def test_records_offsets_and_log_dirs(tools: KafkaTools, broker: BrokerProcess, apache: ApacheKafkaBroker) -> None:
    t = unique_name("diff-records")
    same(tools, broker, apache, "kafka-topics", "--bootstrap-server", "{bootstrap}", "--create", "--topic", t,
         "--partitions", "2")
    same(tools, broker, apache, "kafka-console-producer", "--bootstrap-server", "{bootstrap}", "--topic", t,
         "--producer-property", "partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner",
         stdin="".join(f"r{i}\n" for i in range(10)))
    same(tools, broker, apache, "kafka-get-offsets", "--bootstrap-server", "{bootstrap}", "--topic", t, "--time", "-2")
    same(tools, broker, apache, "kafka-get-offsets", "--bootstrap-server", "{bootstrap}", "--topic", t, "--time", "-1")
    same(tools, broker, apache, "kafka-get-offsets", "--bootstrap-server", "{bootstrap}", "--topic-partitions",
         f"{t}:0")
    spec = f'{{"partitions": [{{"topic": "{t}", "partition": 0, "offset": 2}}], "version": 1}}'
    path = broker.workdir / f"{t}-delete.json"
    path.write_text(spec)
    same(tools, broker, apache, "kafka-delete-records", "--bootstrap-server", "{bootstrap}", "--offset-json-file",
         str(path))
    same(tools, broker, apache, "kafka-get-offsets", "--bootstrap-server", "{bootstrap}", "--topic", t, "--time", "-2")
    ours, theirs = both(tools, broker, apache, "kafka-log-dirs", "--bootstrap-server", "{bootstrap}", "--describe",
                        "--topic-list", t)
    assert ours.stdout.splitlines()[:2] == theirs.stdout.splitlines()[:2]

    def shape(out: str) -> object:
        """The JSON line with sizes and paths left out, partitions in name order (Kafka's come in hash order)."""
        doc = json.loads(out.splitlines()[2])
        for b in doc["brokers"]:
            for d in b["logDirs"]:
                d["logDir"] = "<dir>"
                d["partitions"] = sorted(({**p, "size": "<n>"} for p in d["partitions"]), key=lambda p: p["partition"])
        return doc

    assert (ours.exit, shape(ours.stdout)) == (theirs.exit, shape(theirs.stdout))


def test_transactions_and_elections(tools: KafkaTools, broker: BrokerProcess,
                                             apache: ApacheKafkaBroker) -> None:
    t = unique_name("diff-admin")
    same(tools, broker, apache, "kafka-topics", "--bootstrap-server", "{bootstrap}", "--create", "--topic", t)
    same(tools, broker, apache, "kafka-transactions", "--bootstrap-server", "{bootstrap}", "describe-producers",
         "--topic", t, "--partition", "0")
    same(tools, broker, apache, "kafka-transactions", "--bootstrap-server", "{bootstrap}", "describe",
         "--transactional-id", "no-such-txn")
    same(tools, broker, apache, "kafka-leader-election", "--bootstrap-server", "{bootstrap}", "--election-type",
         "preferred", "--topic", t, "--partition", "0")


NUMBERS = _masks((r"[0-9]+(\.[0-9]+)?", "<n>"))


def _json_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_verifiable_producer_and_consumer(tools: KafkaTools, broker: BrokerProcess, apache: ApacheKafkaBroker) -> None:
    t = unique_name("diff-verifiable")
    same(tools, broker, apache, "kafka-topics", "--bootstrap-server", "{bootstrap}", "--create", "--topic", t)
    ours, theirs = both(tools, broker, apache, "kafka-verifiable-producer", "--bootstrap-server", "{bootstrap}",
                        "--topic", t, "--max-messages", "20", "--acks", "-1")
    assert ours.exit == theirs.exit == 0, ours.stderr + theirs.stderr

    def produced(out: str) -> list[tuple[str, object, object]]:
        return [(e["name"], e.get("offset"), e.get("value")) for e in _json_lines(out)
                if e["name"] in ("producer_send_success", "shutdown_complete")]

    assert produced(ours.stdout) == produced(theirs.stdout)
    assert len(produced(ours.stdout)) == 21
    ours, theirs = both(tools, broker, apache, "kafka-verifiable-consumer", "--bootstrap-server", "{bootstrap}",
                        "--topic", t, "--group-id", t + "-g", "--max-messages", "20", "--reset-policy", "earliest")
    assert ours.exit == theirs.exit == 0, ours.stderr + theirs.stderr

    def consumed(out: str) -> list[tuple[str, object]]:
        events = _json_lines(out)
        total = sum(e["count"] for e in events if e["name"] == "records_consumed")
        committed = [p["offset"] for e in events if e["name"] == "offsets_committed" for p in e["offsets"]]
        return [("records", total), ("last committed", max(committed) if committed else None)]

    assert consumed(ours.stdout) == consumed(theirs.stdout) == [("records", 20), ("last committed", 20)]


def test_perf_tools(tools: KafkaTools, broker: BrokerProcess, apache: ApacheKafkaBroker) -> None:
    t = unique_name("diff-perf")
    same(tools, broker, apache, "kafka-topics", "--bootstrap-server", "{bootstrap}", "--create", "--topic", t)
    same(tools, broker, apache, "kafka-producer-perf-test", "--topic", t, "--num-records", "5000", "--record-size",
         "100", "--throughput", "-1", "--producer-props", "bootstrap.servers={bootstrap}", "acks=all", mask=NUMBERS)
    same(tools, broker, apache, "kafka-consumer-perf-test", "--bootstrap-server", "{bootstrap}", "--topic", t,
         "--messages", "5000", mask=NUMBERS)


def test_share_groups_tool(tools: KafkaTools, broker: BrokerProcess, apache: ApacheKafkaBroker) -> None:
    t = unique_name("diff-share")
    same(tools, broker, apache, "kafka-topics", "--bootstrap-server", "{bootstrap}", "--create", "--topic", t)
    same(tools, broker, apache, "kafka-console-producer", "--bootstrap-server", "{bootstrap}", "--topic", t,
         stdin="a\nb\nc\n")
    same(tools, broker, apache, "kafka-share-groups", "--bootstrap-server", "{bootstrap}", "--reset-offsets",
         "--group", t + "-sg", "--topic", t, "--to-earliest", "--execute")
    same(tools, broker, apache, "kafka-share-groups", "--bootstrap-server", "{bootstrap}", "--describe",
         "--group", t + "-sg", "--offsets")
    same(tools, broker, apache, "kafka-share-groups", "--bootstrap-server", "{bootstrap}", "--describe",
         "--group", t + "-sg", "--state")
    same(tools, broker, apache, "kafka-share-groups", "--bootstrap-server", "{bootstrap}", "--delete",
         "--group", t + "-sg")
    same(tools, broker, apache, "kafka-share-groups", "--bootstrap-server", "{bootstrap}", "--describe",
         "--group", t + "-sg")


def test_acls_without_an_authorizer_and_reassignment(tools: KafkaTools, broker: BrokerProcess,
                                                     apache: ApacheKafkaBroker) -> None:
    t = unique_name("diff-reassign")
    same(tools, broker, apache, "kafka-acls", "--bootstrap-server", "{bootstrap}", "--list")
    same(tools, broker, apache, "kafka-acls", "--bootstrap-server", "{bootstrap}", "--add", "--allow-principal",
         "User:bob", "--operation", "Read", "--topic", t)
    same(tools, broker, apache, "kafka-topics", "--bootstrap-server", "{bootstrap}", "--create", "--topic", t,
         "--partitions", "2")
    topics = broker.workdir / f"{t}-topics.json"
    topics.write_text(json.dumps({"topics": [{"topic": t}], "version": 1}))
    paths = _masks((r'"/[^"]*/data"', '"<dir>"'))
    same(tools, broker, apache, "kafka-reassign-partitions", "--bootstrap-server", "{bootstrap}", "--generate",
         "--topics-to-move-json-file", str(topics), "--broker-list", "0", mask=paths)
    plan = broker.workdir / f"{t}-plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": [0], "log_dirs": ["any"]} for p in (0, 1)]}))
    same(tools, broker, apache, "kafka-reassign-partitions", "--bootstrap-server", "{bootstrap}", "--execute",
         "--reassignment-json-file", str(plan), mask=paths)
    same(tools, broker, apache, "kafka-reassign-partitions", "--bootstrap-server", "{bootstrap}", "--verify",
         "--reassignment-json-file", str(plan))
    same(tools, broker, apache, "kafka-reassign-partitions", "--bootstrap-server", "{bootstrap}", "--list")
# ---- protocol levels: kafka-broker-api-versions and kafka-features ------------------------------------------
# APIs Odradek serves at other versions than Apache Kafka 4.4 (mirrored in docs/DESIGN.md, "Protocol levels")
API_VERSION_DEPARTURES = {
    "TxnOffsetCommit": ("0 to 5", "v6 is KIP-1319's topic ids"),
}
# APIs Apache Kafka 4.4 serves and Odradek does not, each for a reason
NOT_SERVED = {
    "CreateDelegationToken": "no delegation tokens", "RenewDelegationToken": "no delegation tokens",
    "ExpireDelegationToken": "no delegation tokens", "DescribeDelegationToken": "no delegation tokens",
    "DescribeQuorum": "KRaft's quorum: Odradek has none", "UpdateFeatures": "the levels follow the code",
    "UnregisterBroker": "KRaft's broker registrations", "UnregisterController": "KRaft's controllers",
    "AddRaftVoter": "KRaft's quorum", "RemoveRaftVoter": "KRaft's quorum",
}
_API_LINE = re.compile(r"^\t(\w+)\((\d+)\): (UNSUPPORTED|(\d+)(?: to (\d+))? \[usable: \d+\])", re.M)


def _api_ranges(out: str) -> dict[str, str]:
    """kafka-broker-api-versions' table of one broker: API name -> "min to max" (or "n"), unsupported left out."""
    return {m[1]: m[3].split(" [")[0] for m in _API_LINE.finditer(out) if m[3] != "UNSUPPORTED"}


def test_broker_api_versions(tools: KafkaTools, broker: BrokerProcess, apache: ApacheKafkaBroker) -> None:
    """Every API Odradek serves at Apache Kafka 4.4's versions, but for the departures listed above."""
    ours, theirs = both(tools, broker, apache, "kafka-broker-api-versions", "--bootstrap-server", "{bootstrap}")
    assert ours.exit == theirs.exit == 0, ours.stderr + theirs.stderr
    mine, kafka = _api_ranges(ours.stdout), _api_ranges(theirs.stdout)
    assert len(kafka) > 60, theirs.stdout
    assert set(mine) <= set(kafka), f"served by Odradek only: {set(mine) - set(kafka)}"
    assert set(kafka) - set(mine) <= set(NOT_SERVED), f"not served, with no reason given: {set(kafka) - set(mine)}"
    differing = {name: (mine[name], kafka[name]) for name in mine if mine[name] != kafka[name]}
    assert differing == {name: (ranges, kafka[name]) for name, (ranges, _why) in API_VERSION_DEPARTURES.items()}
    assert "Produce(0): 0 to 13 [usable: 13]" in ours.stdout  # v0-2 advertised, as Kafka 4 does (KAFKA-18659)


# Feature levels where Odradek departs from Apache Kafka 4.4 on purpose (server/features.py, docs/DESIGN.md):
# name -> Odradek's (supported min, supported max, finalized level), None where it advertises none
FEATURE_DEPARTURES: dict[str, tuple[str, str, str] | None] = {
    "share.version": ("0", "1", "1"),  # level 2 is the share groups' dead-letter queue (Kafka 4.4): not served
    "metadata.version": None,  # KRaft's metadata log: Odradek has none
    "kraft.version": None,  # KRaft's quorum
    "eligible.leader.replicas.version": None,  # KIP-966's ELR: not kept
}
if STREAMS_GROUP_HEARTBEAT_KEY not in APIS:  # streams.version is advertised once KIP-1071's APIs are served
    FEATURE_DEPARTURES["streams.version"] = None
_FEATURE_LINE = re.compile(r"^Feature: (\S+)\s+SupportedMinVersion: (\S+)\s+SupportedMaxVersion: (\S+)\s+"
                           r"FinalizedVersionLevel: (\S+)\s+Epoch: (\S+)", re.M)


def test_kafka_features_describe(tools: KafkaTools, broker: BrokerProcess, apache: ApacheKafkaBroker) -> None:
    """The levels both brokers have agree (the epoch aside: Kafka's is its metadata log's offset); the others
    are the departures above."""
    ours, theirs = both(tools, broker, apache, "kafka-features", "--bootstrap-server", "{bootstrap}", "describe")
    assert ours.exit == theirs.exit == 0, ours.stderr + theirs.stderr
    mine = {m[1]: (m[2], m[3], m[4]) for m in _FEATURE_LINE.finditer(ours.stdout)}
    kafka = {m[1]: (m[2], m[3], m[4]) for m in _FEATURE_LINE.finditer(theirs.stdout)}
    assert "group.version" in kafka, theirs.stdout
    assert set(mine) <= set(kafka)
    for name in kafka:
        expected = FEATURE_DEPARTURES[name] if name in FEATURE_DEPARTURES else kafka[name]
        assert mine.get(name) == expected, f"{name}: Odradek {mine.get(name)}, Apache Kafka {kafka[name]}"
    assert mine["group.version"] == kafka["group.version"] == ("0", "1", "1")
