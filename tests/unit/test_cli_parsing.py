"""Unit tests of the CLI tools' pure parts: flag and property parsing, formats, dump-log output."""

from __future__ import annotations

import argparse
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, OFFSET_END
from confluent_kafka.admin import ConfigEntry, ConfigSource

from odradek.admin_client import command, connect, errors
from odradek.cli import common, console_consumer, console_producer, dump_log, topic_model, topics
from odradek.cli import main as cli_main
from odradek.protocol.records import COMPRESSION_GZIP, build_batch

# --- common -------------------------------------------------------------------------------------


def test_parse_key_values() -> None:
    assert common.parse_key_values(["a=1", "b=x=y", "c="]) == {"a": "1", "b": "x=y", "c": ""}
    assert common.parse_key_values(None) == {}
    with pytest.raises(errors.UsageError, match="expected key=value"):
        common.parse_key_values(["novalue"])
    with pytest.raises(errors.UsageError):
        common.parse_key_values(["=v"])


def test_parse_bool() -> None:
    assert common.parse_bool("true") and common.parse_bool("TRUE")
    assert not common.parse_bool("yes")
    assert common.parse_bool(None, default=True)


def test_properties_file_of_a_tool(tmp_path: Path) -> None:
    text = (
        "# comment\n"
        "! also a comment\n"
        "\n"
        "a=1\n"
        "b = 2\n"
        "c:3\n"
        "d 4\n"
        "  e=with spaces inside  \n"
        "f=line\\\n"
        "   continued\n"
        "g=tab\\there\n"
        "h\\=k=v\n"
        "empty=\n"
        "u=\\u0041\n"
    )
    (tmp_path / "client.properties").write_text(text)
    props = connect.read_properties_file(str(tmp_path / "client.properties"))
    assert props == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "4",
        "e": "with spaces inside  ",
        "f": "linecontinued",
        "g": "tab\there",
        "h=k": "v",
        "empty": "",
        "u": "A",
    }


def test_read_properties_file(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text("acks=all\nlinger.ms=5\n")
    assert connect.read_properties_file(str(path)) == {"acks": "all", "linger.ms": "5"}
    assert connect.read_properties_file(None) == {}
    with pytest.raises(errors.CliError, match="cannot read"):
        connect.read_properties_file(str(tmp_path / "missing.properties"))


def test_usage_messages_are_one_line() -> None:
    assert command.usage_message("unrecognized arguments: --foo bar") == (
        "Error: --foo is not a recognized option (see --help)"
    )
    assert command.usage_message("the following arguments are required: --topic") == (
        'Error: Missing required argument "[topic]"'
    )


def test_client_config_layers_and_drops_java_only_keys() -> None:
    errors = connect.ClientErrors()
    conf = connect.client_config(
        "h:1", {"a": "file", "key.serializer": "x"}, {"a": "flag"}, errors=errors, defaults={"a": "d", "b": "d"}
    )
    assert conf["a"] == "flag" and conf["b"] == "d"
    assert conf["bootstrap.servers"] == "h:1"
    assert "key.serializer" not in conf
    assert conf["logger"] is errors.logger


def test_create_client_drops_unknown_properties(capsys: pytest.CaptureFixture[str]) -> None:
    from confluent_kafka import Producer

    connect.create_client(Producer, {"bootstrap.servers": "127.0.0.1:1", "no.such.thing": "1"})  # no error
    assert "ignoring unknown client property 'no.such.thing'" in capsys.readouterr().err
    with pytest.raises(errors.CliError, match="invalid client configuration"):
        connect.create_client(Producer, {"bootstrap.servers": "127.0.0.1:1", "acks": "banana"})


def test_run_tool_never_raises(capsys: pytest.CaptureFixture[str]) -> None:
    def boom() -> int:
        raise RuntimeError("kaput")

    assert command.run_tool(boom) == 1
    assert capsys.readouterr().err.strip() == "Error: RuntimeError: kaput"

    def usage() -> int:
        raise errors.UsageError("Error: bad")

    assert command.run_tool(usage) == 1


# --- main ---------------------------------------------------------------------------------------


def test_main_help_lists_tools(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in ("server-start", "topics", "console-producer", "console-consumer", "dump-log"):
        assert name in out


def test_main_unknown_tool(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main.main(["nosuch"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[0] == "odradek: unknown tool 'nosuch'"
    assert "topics" in err


@pytest.mark.parametrize(("typed", "hint"), [
    ("topic", "odradek: unknown tool 'topic' (did you mean topics?)"),
    ("consumer-group", "odradek: unknown tool 'consumer-group' (did you mean consumer-groups or "
                       "consumer-perf-test?)"),
    ("zookeeper", "odradek: unknown tool 'zookeeper' (did you mean zookeeper-server-stop or "
                  "zookeeper-server-start?)"),
])
def test_main_unknown_tool_suggests_the_closest(typed: str, hint: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main.main([typed]) == 2
    assert capsys.readouterr().err.splitlines()[0] == hint


def test_main_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main.main(["--version"]) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith("odradek ") and out.split()[1][0].isdigit()


# --- topics -------------------------------------------------------------------------------------


def topic_args(*argv: str) -> argparse.Namespace:
    return topics.parse_args(["--bootstrap-server", "h:1", *argv])


def test_topics_needs_exactly_one_action() -> None:
    with pytest.raises(errors.UsageError, match="exactly one action"):
        topic_args("--topic", "t")
    with pytest.raises(errors.UsageError, match="exactly one action"):
        topic_args("--list", "--describe")


def test_topics_flag_checks() -> None:
    with pytest.raises(errors.UsageError, match=r'Missing required argument "\[topic\]"'):
        topic_args("--create")
    with pytest.raises(errors.UsageError, match="partitions must be greater than 0"):
        topic_args("--create", "--topic", "t", "--partitions", "0")
    with pytest.raises(errors.UsageError, match="can't be used"):
        topic_args("--list", "--partitions", "3")
    with pytest.raises(errors.UsageError, match="can't be used"):
        topic_args("--create", "--topic", "t", "--replica-assignment", "0:1", "--replication-factor", "2")
    with pytest.raises(errors.UsageError, match="bootstrap-server"):
        topics.parse_args(["--list"])
    assert topics.parse_args(["--zookeeper", "localhost:2181", "--list"]).zookeeper == "localhost:2181"
    with pytest.raises(errors.UsageError, match="Only one of --bootstrap-server or --zookeeper"):
        topics.parse_args(["--zookeeper", "localhost:2181", "--bootstrap-server", "localhost:9092", "--list"])
    opts = topic_args("--alter", "--topic", "t", "--config", "retention.ms=1", "--delete-config", "x")
    assert opts.config == ["retention.ms=1"] and opts.delete_config == ["x"]


def test_replica_assignment() -> None:
    assert topics.parse_replica_assignment("0:1,1:2") == [[0, 1], [1, 2]]
    assert topics.parse_replica_assignment("3") == [[3]]
    with pytest.raises(errors.UsageError, match="duplicate"):
        topics.parse_replica_assignment("1:1")
    with pytest.raises(errors.UsageError):
        topics.parse_replica_assignment("a:b")
    with pytest.raises(errors.UsageError):
        topics.parse_replica_assignment("0:1,2")


def test_topic_pattern_is_a_whole_name_regex() -> None:
    pattern = topic_model.topic_pattern("test.*")
    assert pattern.fullmatch("test-1") and not pattern.fullmatch("atest")
    both = topic_model.topic_pattern("'a,b'")
    assert both.fullmatch("a") and both.fullmatch("b") and not both.fullmatch("a,b")
    with pytest.raises(topics.TopicCommandError, match="Error while executing topic command"):
        topic_model.topic_pattern("(")


def test_topic_name_rules() -> None:
    topics.validate_topic_name("ok.name_1-x")
    for bad in ("", ".", "..", "a b", "x" * 250, "ü"):
        with pytest.raises(topics.TopicCommandError):
            topics.validate_topic_name(bad)


def sample_topic() -> topics.TopicInfo:
    return topics.TopicInfo(
        "t",
        "AAAAAAAAAAEAAAAAAAAAAg",
        False,
        [topics.PartitionInfo(0, 0, [0, 1], [0, 1]), topics.PartitionInfo(1, -1, [1, 0], [0])],
    )


def test_describe_layout() -> None:
    lines = topics.describe_lines(
        sample_topic(), {"retention.ms": "1000", "cleanup.policy": "compact"}, topics.Report(), {0, 1}
    )
    assert lines == [
        "Topic: t\tTopicId: AAAAAAAAAAEAAAAAAAAAAg\tPartitionCount: 2\tReplicationFactor: 2\t"
        "Configs: cleanup.policy=compact,retention.ms=1000",
        "\tTopic: t\tPartition: 0\tLeader: 0\tReplicas: 0,1\tIsr: 0,1",
        "\tTopic: t\tPartition: 1\tLeader: none\tReplicas: 1,0\tIsr: 0",
    ]


def test_describe_without_topic_id_and_reports() -> None:
    info = sample_topic()
    info.topic_id = None
    assert topic_model.topic_line(info, {}) == "Topic: t\tPartitionCount: 2\tReplicationFactor: 2\tConfigs: "
    under = topics.describe_lines(info, {}, topics.Report(under_replicated=True), {0, 1})
    assert under == ["\tTopic: t\tPartition: 1\tLeader: none\tReplicas: 1,0\tIsr: 0"]
    unavailable = topics.describe_lines(info, {}, topics.Report(unavailable=True), {0, 1})
    assert unavailable == under
    assert topics.describe_lines(info, {}, topics.Report(overrides_only=True), {0, 1}) == []
    overrides = topics.describe_lines(info, {"a": "1"}, topics.Report(overrides_only=True), {0, 1})
    assert overrides == ["Topic: t\tPartitionCount: 2\tReplicationFactor: 2\tConfigs: a=1"]
    min_isr = {topics.MIN_ISR_KEY: "2"}
    assert len(topics.describe_lines(info, min_isr, topics.Report(under_min_isr=True), {0, 1})) == 1
    assert len(topics.describe_lines(info, min_isr, topics.Report(at_min_isr=True), {0, 1})) == 1


def test_configs_keep_only_topic_overrides() -> None:
    entries = [
        ConfigEntry("retention.ms", "1000", source=ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ConfigEntry("segment.bytes", "1073741824", source=ConfigSource.STATIC_BROKER_CONFIG),
        ConfigEntry("min.insync.replicas", "1", source=ConfigSource.DEFAULT_CONFIG),
    ]
    assert topics.configs_of(entries) == {"retention.ms": "1000", topics.MIN_ISR_KEY: "1"}


# --- console producer ---------------------------------------------------------------------------


def test_parse_line_plain_and_keyed() -> None:
    plain = console_producer.LineFormat()
    assert console_producer.parse_line(b"a:b", 1, plain) == console_producer.Line(None, b"a:b")
    keyed = console_producer.LineFormat.from_properties({"parse.key": "true", "key.separator": ":"})
    assert console_producer.parse_line(b"k:v:w", 1, keyed) == console_producer.Line(b"k", b"v:w")
    assert console_producer.parse_line(b":v", 1, keyed) == console_producer.Line(b"", b"v")
    with pytest.raises(console_producer.LineError, match="No key separator found on line number 3: 'nokey'"):
        console_producer.parse_line(b"nokey", 3, keyed)
    lenient = console_producer.LineFormat.from_properties({"parse.key": "true", "ignore.error": "true"})
    assert console_producer.parse_line(b"nokey", 1, lenient) == console_producer.Line(None, b"nokey")


def test_parse_line_headers_and_null_marker() -> None:
    fmt = console_producer.LineFormat.from_properties(
        {"parse.headers": "true", "parse.key": "true", "null.marker": "<null>"}
    )
    line = console_producer.parse_line(b"h1:v1,h2:<null>,h3\tkey\t<null>", 1, fmt)
    assert line == console_producer.Line(b"key", None, [("h1", b"v1"), ("h2", None), ("h3", None)])
    line = console_producer.parse_line(b"\tk\tv", 1, fmt)
    assert line.headers == [] and line.key == b"k" and line.value == b"v"


def test_read_lines_strips_line_endings() -> None:
    import io

    stream = io.BytesIO(b"a\r\nb\n\nlast")
    assert list(console_producer.read_lines(stream, prompt=False)) == [b"a", b"b", b"", b"last"]


def test_producer_config_precedence(tmp_path: Path) -> None:
    path = tmp_path / "p.properties"
    path.write_text("acks=1\nlinger.ms=7\nbatch.size=100\n")
    parser = console_producer.build_parser()
    opts = parser.parse_args(
        ["--bootstrap-server", "h:1", "--topic", "t", "--producer.config", str(path),
         "--producer-property", "linger.ms=8", "--request-required-acks", "all", "--compression-codec"]
    )
    conf = console_producer.producer_config(opts)
    assert conf["acks"] == "all"
    assert conf["linger.ms"] == "8"
    assert conf["batch.size"] == "100"
    assert conf["compression.type"] == "gzip"
    assert conf["message.timeout.ms"] == str(console_producer.DEFAULT_DELIVERY_TIMEOUT_MS)
    plain = console_producer.producer_config(parser.parse_args(["--broker-list", "h:1", "--topic", "t"]))
    assert plain["acks"] == "-1" and "compression.type" not in plain


def test_producer_rejects_bad_codec() -> None:
    with pytest.raises(errors.UsageError):
        console_producer.build_parser().parse_args(["--topic", "t", "--compression-codec", "brotli"])


# --- console consumer ---------------------------------------------------------------------------


class FakeMessage:
    def __init__(self, key: bytes | None, value: bytes | None, headers: Any = None, ts: tuple[int, int] = (1, 1234)):
        self._key, self._value, self._headers, self._ts = key, value, headers, ts

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> Any:
        return self._headers

    def timestamp(self) -> tuple[int, int]:
        return self._ts

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return 5


def test_formatter_default_prints_value_only() -> None:
    fmt = console_consumer.Formatter.from_properties({})
    assert fmt.format(FakeMessage(b"k", b"v")) == b"v\n"
    assert fmt.format(FakeMessage(b"k", None)) == b"null\n"


def test_formatter_all_fields() -> None:
    props = {name: "true" for name in (
        "print.timestamp", "print.partition", "print.offset", "print.headers", "print.key")}
    fmt = console_consumer.Formatter.from_properties(props)
    msg = FakeMessage(b"k", b"v", [("h", b"1"), ("n", None)])
    assert fmt.format(msg) == b"CreateTime:1234\tPartition:0\tOffset:5\th:1,n:null\tk\tv\n"
    assert fmt.format(FakeMessage(None, b"v", ts=(0, -1))) == b"NO_TIMESTAMP\tPartition:0\tOffset:5\tNO_HEADERS\tnull\tv\n"
    keyed = console_consumer.Formatter.from_properties({"print.key": "true", "key.separator": ":"})
    assert keyed.format(FakeMessage(b"k", b"v", ts=(2, 9))) == b"k:v\n"
    appended = console_consumer.Formatter.from_properties({"print.timestamp": "true"})
    assert appended.format(FakeMessage(b"k", b"v", ts=(2, 9))) == b"LogAppendTime:9\tv\n"


def consumer_opts(*argv: str) -> argparse.Namespace:
    return console_consumer.build_parser().parse_args(["--bootstrap-server", "h:1", *argv])


def test_consumer_source_checks() -> None:
    with pytest.raises(errors.UsageError, match="Exactly one of --include/--topic"):
        console_consumer.source_of(consumer_opts())
    with pytest.raises(errors.UsageError, match="Exactly one of --include/--topic"):
        console_consumer.source_of(consumer_opts("--topic", "a", "--include", "b"))
    with pytest.raises(errors.UsageError, match="partition is required"):
        console_consumer.source_of(consumer_opts("--topic", "a", "--offset", "3"))
    with pytest.raises(errors.UsageError, match="cannot be specified together"):
        console_consumer.source_of(consumer_opts("--topic", "a", "--partition", "0", "--offset", "3",
                                                 "--from-beginning"))
    with pytest.raises(errors.UsageError, match="incorrect"):
        console_consumer.source_of(consumer_opts("--topic", "a", "--partition", "0", "--offset", "-3"))
    source = console_consumer.source_of(consumer_opts("--topic", "a", "--partition", "1", "--offset", "7"))
    assert (source.topic, source.partition, source.start) == ("a", 1, 7)


def test_parse_offset() -> None:
    assert console_consumer.parse_offset(None, False) == OFFSET_END
    assert console_consumer.parse_offset(None, True) == OFFSET_BEGINNING
    assert console_consumer.parse_offset("earliest", False) == OFFSET_BEGINNING
    assert console_consumer.parse_offset("latest", False) == OFFSET_END
    assert console_consumer.parse_offset("12", False) == 12


def test_consumer_config_random_group_does_not_commit() -> None:
    opts = consumer_opts("--topic", "a", "--from-beginning")
    conf = console_consumer.consumer_config(opts, console_consumer.source_of(opts))
    assert conf["group.id"].startswith("console-consumer-") and len(conf["group.id"]) == len("console-consumer-") + 5
    assert conf["enable.auto.commit"] == "false"
    assert conf["auto.offset.reset"] == "earliest"
    assert conf["enable.auto.offset.store"] == "false"


def test_consumer_config_group_sources_agree() -> None:
    opts = consumer_opts("--topic", "a", "--consumer-property", "group.id=g")
    conf = console_consumer.consumer_config(opts, console_consumer.source_of(opts))
    assert conf["group.id"] == "g" and "enable.auto.commit" not in conf
    assert conf["auto.offset.reset"] == "latest"
    same = consumer_opts("--topic", "a", "--group", "g", "--consumer-property", "group.id=g")
    assert console_consumer.consumer_config(same, console_consumer.source_of(same))["group.id"] == "g"
    clash = consumer_opts("--topic", "a", "--group", "g", "--consumer-property", "group.id=h")
    with pytest.raises(errors.UsageError, match="do not match"):
        console_consumer.consumer_config(clash, console_consumer.source_of(clash))
    reset = consumer_opts("--topic", "a", "--from-beginning", "--consumer-property", "auto.offset.reset=latest")
    with pytest.raises(errors.UsageError, match="simultaneously"):
        console_consumer.consumer_config(reset, console_consumer.source_of(reset))


def test_subscription_pattern() -> None:
    assert console_consumer.subscription_pattern("test.*") == "^(test.*)$"
    assert console_consumer.subscription_pattern("a, b") == "^(a|b)$"


# --- dump-log -----------------------------------------------------------------------------------


def write_segment(directory: Path) -> Path:
    first = build_batch(
        [(None, b"hello"), (b"k", b"world", [("h1", b"x")])], timestamp=1700000000000, partition_leader_epoch=0
    )
    second = build_batch(
        [(b"a", b"b")], base_offset=2, compression=COMPRESSION_GZIP, timestamp=1700000000001,
        producer_id=5, producer_epoch=0, base_sequence=7,
    )
    corrupt = bytearray(build_batch([(None, b"zz")], base_offset=3, timestamp=1))
    corrupt[-1] ^= 0xFF
    path = directory / "00000000000000000000.log"
    path.write_bytes(first + second + bytes(corrupt) + b"\0" * 10)
    return path


def test_dump_log_batches_and_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_segment(tmp_path)
    assert dump_log.main([str(path), "--print-data-log"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"Dumping {path}"
    assert lines[1] == "Log starting offset: 0"
    assert lines[2].startswith(
        "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
        "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000000 size: "
    )
    assert lines[2].endswith("magic: 2 compresscodec: none crc: " + lines[2].split("crc: ")[1])
    assert lines[2].endswith("isvalid: true")
    assert lines[3] == (
        "| offset: 0 CreateTime: 1700000000000 keySize: -1 valueSize: 5 sequence: -1 headerKeys: [] payload: hello"
    )
    assert lines[4] == (
        "| offset: 1 CreateTime: 1700000000000 keySize: 1 valueSize: 5 sequence: -1 headerKeys: [h1] "
        "key: k payload: world"
    )
    assert "baseSequence: 7 lastSequence: 7 producerId: 5" in lines[5] and "compresscodec: gzip" in lines[5]
    assert lines[6].endswith("sequence: 7 headerKeys: [] key: a payload: b")
    assert lines[7].startswith("baseOffset: 3 ") and lines[7].endswith("isvalid: false")
    assert lines[-1] == "Found 10 invalid bytes at the end of 00000000000000000000.log"


def test_dump_log_shallow_and_files_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_segment(tmp_path)
    assert dump_log.main(["--files", str(path)]) == 0
    out = capsys.readouterr().out
    assert "| offset" not in out and out.count("baseOffset:") == 3


def test_dump_indexes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    index = tmp_path / "00000000000000000100.index"
    index.write_bytes(struct.pack(">ii", 0, 0) + struct.pack(">ii", 5, 4096) + b"\0" * 16)
    timeindex = tmp_path / "00000000000000000100.timeindex"
    timeindex.write_bytes(struct.pack(">qi", 1000, 0) + struct.pack(">qi", 2000, 5) + b"\0" * 24)
    assert dump_log.main(["--files", f"{index},{timeindex}"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"Dumping {index}",
        "offset: 100 position: 0",
        "offset: 105 position: 4096",
        f"Dumping {timeindex}",
        "timestamp: 1000 offset: 100",
        "timestamp: 2000 offset: 105",
    ]


def test_dump_log_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert dump_log.main([str(tmp_path / "missing.log")]) == 1
    assert dump_log.main([]) == 1
    garbage = tmp_path / "00000000000000000000.log"
    garbage.write_bytes(b"\0" * 100)
    assert dump_log.main([str(garbage)]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert "Found 100 invalid bytes" in captured.out


def test_topic_id_text_is_url_safe_base64() -> None:
    from confluent_kafka import Uuid

    assert topics.topic_id_text(Uuid(0, 0)) is None
    assert topics.topic_id_text(None) is None
    assert topics.topic_id_text(Uuid(1, 2)) == "AAAAAAAAAAEAAAAAAAAAAg"
    text = topics.topic_id_text(Uuid(-1, -2))
    assert text == "_____________________g" and len(text) == 22


def test_cluster_up_on_a_taken_port_names_it_and_its_flag(tmp_path: Path) -> None:
    import socket

    from odradek.admin_client.errors import CliError
    from odradek.cli import cluster as cluster_cli

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        taken = s.getsockname()[1]
        layout = cluster_cli.plan(tmp_path, "127.0.0.1", 1, 1, zk_base=taken - 7000 if taken > 8000 else 30000,
                                  base=40000, http_base=taken)
        with pytest.raises(CliError) as e:
            cluster_cli.check_ports(layout)
    assert f"{taken}, broker 0's metrics port (--http-base-port)" in str(e.value)


@pytest.mark.parametrize("bad", ["127.0.0.1:90922", "127.0.0.1", "host:0", "a:1,b", ":9092", "h:x"])
def test_a_bootstrap_address_librdkafka_would_misread_is_refused(bad: str) -> None:
    from odradek.admin_client.connect import bootstrap_of
    from odradek.admin_client.errors import UsageError

    with pytest.raises(UsageError, match="invalid url in --bootstrap-server"):
        bootstrap_of(argparse.Namespace(bootstrap_server=bad))


def test_good_bootstrap_addresses_pass() -> None:
    from odradek.admin_client.connect import bootstrap_of

    for good in ("127.0.0.1:9092", "h1:1,h2:65535", "[::1]:9092", "broker-0.kafka.svc:9093"):
        assert bootstrap_of(argparse.Namespace(bootstrap_server=good)) == good


def test_spark_up_lays_out_ports_and_refuses_bad_flags_and_a_missing_pyspark(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from odradek.admin_client.errors import CliError, UsageError
    from odradek.cli import spark_cluster

    layout = spark_cluster.plan(tmp_path, workers=2, cores=1, memory="1g", port=7077, webui_port=8080,
                                worker_webui_port=8081)
    assert layout.master_url == "spark://127.0.0.1:7077" and layout.webui_url == "http://127.0.0.1:8080"
    assert [(w.id, w.webui_port, w.log) for w in layout.workers] == [
        (1, 8081, str(tmp_path / "logs" / "worker1.out")), (2, 8082, str(tmp_path / "logs" / "worker2.out"))]
    overlapping = spark_cluster.plan(tmp_path, 2, 1, "1g", 7077, 8080, worker_webui_port=8080)
    with pytest.raises(UsageError, match="overlap"):
        spark_cluster.check_ports(overlapping)
    assert spark_cluster.parse_memory("512M") == "512m"
    for bad in ("1.5g", "lots", "0g", "12k"):
        with pytest.raises(UsageError, match="is not an amount"):
            spark_cluster.parse_memory(bad)
    monkeypatch.setattr(importlib.util, "find_spec", lambda _name: None)
    with pytest.raises(CliError, match=r"^Error: pyspark is not installed \(pip install -e '\.\[spark\]'\)"):
        spark_cluster.spark_home()


@pytest.mark.parametrize("tool", ["", "cluster", "topics", "pipeline"])  # own usage text, argparse, subcommands
def test_help_into_a_pipe_closed_early_has_no_traceback(tool: str) -> None:
    """`odradek <tool> --help | head -1`: the reader goes away before the help is written. The catch is in
    `main`, the one way into every tool."""
    read, write = os.pipe()
    os.close(read)
    proc = subprocess.run([sys.executable, "-m", "odradek.cli.main", *([tool] if tool else []), "--help"],
                          stdout=write, stderr=subprocess.PIPE, text=True, timeout=60)
    os.close(write)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), proc.stderr
