"""Unit tests for odradek.config: .properties syntax, the key catalogue, validation, warnings,
precedence rules, topic configs, DescribeConfigs rows, and the configs printed in the guides."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from odradek.config import (
    BROKER_KEYS,
    TOPIC_CONFIGS,
    BrokerConfig,
    ConfigError,
    ConfigSource,
    Listener,
    Password,
    ZooKeeperConfig,
    parse_listeners,
    parse_properties,
    validate_topic_configs,
)

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parents[2]


def cfg(**props: str) -> BrokerConfig:
    """A config from keyword props, dots spelled as double underscores: log__dirs -> log.dirs."""
    return BrokerConfig.from_props({k.replace("__", "."): v for k, v in props.items()})


def error_of(props: dict[str, str]) -> str:
    with pytest.raises(ConfigError) as info:
        BrokerConfig.from_props(props)
    return str(info.value)


@pytest.fixture
def hostname(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Pin socket.gethostname() and what it resolves to."""
    state: dict[str, Any] = {"name": "odradek-test-host", "addresses": ["192.0.2.10"]}

    def fake_getaddrinfo(host: str, *args: Any, **kwargs: Any) -> list[Any]:
        if host != state["name"] or state["addresses"] is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, 0)) for a in state["addresses"]]

    monkeypatch.setattr(socket, "gethostname", lambda: state["name"])
    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo)
    return state


# ---------------------------------------------------------------------------------------------
# .properties syntax
# ---------------------------------------------------------------------------------------------


PROPERTIES = [  # (.properties text, what it parses to)
    pytest.param(
        "a=1\nb = 2\nc 3\nd:4\ne\t:\t5\nf   6\ng  =  7\nh: 8\n",
        {"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6", "g": "7", "h": "8"},
        id="separator_forms",
    ),
    pytest.param(
        "alone\nempty=\nspaced =   \n",
        {"alone": "", "empty": "", "spaced": ""},
        id="key_without_value",
    ),
    pytest.param(
        "# hash comment\n! bang comment\n   # indented comment\n\n   \n\t\na=1\n  !b=2\n",
        {"a": "1"},
        id="comments_and_blank_lines",
    ),
    pytest.param(
        "a=1 # not a comment\n",
        {"a": "1 # not a comment"},
        id="hash_after_value_is_part_of_the_value",
    ),
    pytest.param(
        "   broker.id=0  \n\tx = y \t\n",
        {"broker.id": "0  ", "x": "y \t"},
        id="leading_whitespace_dropped_trailing_kept",
    ),
    pytest.param(
        "fruits = apple, banana, \\\n          pear, \\\n\t  cantaloupe\nnext=1\n",
        {"fruits": "apple, banana, pear, cantaloupe", "next": "1"},
        id="line_continuation",
    ),
    pytest.param(
        "even=a\\\\\nodd=b\\\\\\\n  c\nthree=\\\\\\\\\\\nx\n",
        {"even": "a\\", "odd": "b\\c", "three": "\\\\x"},
        id="continuation_needs_an_odd_number_of_backslashes",
    ),
    pytest.param("a=1\\\n  #2\n", {"a": "1#2"}, id="continuation_line_starting_with_hash_is_not_a_comment"),
    pytest.param("# comment \\\na=1\n", {"a": "1"}, id="comment_line_cannot_continue"),
    pytest.param("log.\\\n   dirs=/d\n", {"log.dirs": "/d"}, id="continuation_into_key"),
    pytest.param("a=1\\", {"a": "1"}, id="continuation_at_end_of_file"),
    pytest.param("a=1\\\n\nb=2\n", {"a": "1", "b": "2"}, id="empty_continuation_line_ends_the_value"),
    pytest.param(
        "v=tab\\tnl\\nret\\rff\\fbs\\\\eq\\=colon\\:space\\ end\\q\n",
        {"v": "tab\tnl\nret\rff\fbs\\eq=colon:space endq"},
        id="escapes_in_values",
    ),
    pytest.param(
        "key\\ with\\ spaces=1\nkey\\=eq=2\nkey\\:colon:3\n\\#not.comment=4\n",
        {"key with spaces": "1", "key=eq": "2", "key:colon": "3", "#not.comment": "4"},
        id="escapes_in_keys",
    ),
    pytest.param("a=\\  x\n", {"a": "  x"}, id="escaped_leading_space_in_value"),
    pytest.param(
        "greeting=\\u4f60\\u597D\nk\\u00e9y=caf\\u00E9\n",
        {"greeting": "你好", "kéy": "café"},
        id="unicode_escapes",
    ),
    pytest.param("a=1\nb=2\na=3\n", {"a": "3", "b": "2"}, id="later_keys_override_earlier"),
    # Only space, tab and form feed separate; a vertical tab belongs to the key.
    pytest.param("a\vb=1\n", {"a\vb": "1"}, id="non_java_whitespace_is_not_a_separator"),
]


class TestParseProperties:
    @pytest.mark.parametrize(("text", "expected"), PROPERTIES)
    def test_parses(self, text: str, expected: dict[str, str]) -> None:
        assert parse_properties(text) == expected

    def test_only_first_separator_splits(self) -> None:
        props = parse_properties("listeners=PLAINTEXT://:9092\nmap = A:B,C:D\nk = = v\nx::y\n")
        assert props == {"listeners": "PLAINTEXT://:9092", "map": "A:B,C:D", "k": "= v", "x": ":y"}

    def test_malformed_unicode_escape(self) -> None:
        with pytest.raises(ConfigError, match="Malformed"):
            parse_properties("a=\\u12G4\n")
        with pytest.raises(ConfigError, match="Malformed"):
            parse_properties("a=\\u12\n")

    def test_line_endings(self) -> None:
        assert parse_properties("a=1\r\nb=2\rc=3\nd=4") == {"a": "1", "b": "2", "c": "3", "d": "4"}
        assert parse_properties("a=x\\\r\n  y\r\n") == {"a": "xy"}


# ---------------------------------------------------------------------------------------------
# The catalogue
# ---------------------------------------------------------------------------------------------

APPLIED = [
    "broker.id",
    "transaction.state.log.replication.factor",
    "transaction.state.log.min.isr",
    "transaction.state.log.num.partitions",
    "transaction.state.log.segment.bytes",
    "transaction.max.timeout.ms",
    "transactional.id.expiration.ms",
    "node.id",
    "listeners",
    "advertised.listeners",
    "listener.security.protocol.map",
    "log.dirs",
    "log.dir",
    "num.partitions",
    "default.replication.factor",
    "auto.create.topics.enable",
    "delete.topic.enable",
    "log.segment.bytes",
    "log.roll.ms",
    "log.roll.hours",
    "log.roll.jitter.ms",
    "log.roll.jitter.hours",
    "log.retention.ms",
    "log.retention.minutes",
    "log.retention.hours",
    "log.retention.bytes",
    "log.retention.check.interval.ms",
    "log.index.interval.bytes",
    "log.index.size.max.bytes",
    "log.flush.interval.messages",
    "log.flush.interval.ms",
    "log.flush.scheduler.interval.ms",
    "log.cleanup.policy",
    "log.cleaner.enable",
    "log.cleaner.threads",
    "log.cleaner.delete.retention.ms",
    "log.cleaner.min.cleanable.ratio",
    "log.message.timestamp.type",
    "message.max.bytes",
    "socket.request.max.bytes",
    "queued.max.request.bytes",
    "max.connections",
    "max.connections.per.ip",
    "max.connections.per.ip.overrides",
    "max.partitions",
    "max.broker.partitions",
    "zookeeper.connect",
    "zookeeper.session.timeout.ms",
    "zookeeper.connection.timeout.ms",
    "offsets.topic.num.partitions",
    "offsets.topic.replication.factor",
    "offsets.retention.minutes",
    "offsets.commit.timeout.ms",
    "offset.metadata.max.bytes",
    "group.initial.rebalance.delay.ms",
    "group.min.session.timeout.ms",
    "group.max.session.timeout.ms",
    "group.max.size",
    "min.insync.replicas",
    "unclean.leader.election.enable",
    "replica.lag.time.max.ms",
    "replica.fetch.max.bytes",
    "replica.fetch.wait.max.ms",
    "replica.fetch.min.bytes",
    "num.replica.fetchers",
    "controlled.shutdown.enable",
    "auto.leader.rebalance.enable",
    "leader.imbalance.check.interval.seconds",
    "leader.imbalance.per.broker.percentage",
    "compression.type",
]

NOT_APPLIED = [
    "num.io.threads",
    "num.network.threads",
    "socket.send.buffer.bytes",
    "socket.receive.buffer.bytes",
    "num.recovery.threads.per.data.dir",
    "background.threads",
    "log.segment.delete.delay.ms",  # Odradek reads copy under the log's lock: no reader needs the delay
    "process.roles",
    "controller.quorum.voters",
]

DEFAULTS = {
    "broker.id": -1,
    "listeners": "PLAINTEXT://:9092",
    "log.dir": "/tmp/kafka-logs",
    "log.dirs": None,
    "num.partitions": 1,
    "default.replication.factor": 1,
    "auto.create.topics.enable": True,
    "delete.topic.enable": True,
    "log.segment.bytes": 1073741824,
    "log.roll.hours": 168,
    "log.retention.hours": 168,
    "log.retention.ms": None,
    "log.retention.bytes": -1,
    "log.retention.check.interval.ms": 300000,
    "log.index.interval.bytes": 4096,
    "log.index.size.max.bytes": 10485760,
    "log.flush.interval.messages": 2**63 - 1,
    "log.flush.interval.ms": None,
    "log.cleanup.policy": ["delete"],
    "message.max.bytes": 1048588,
    "socket.request.max.bytes": 104857600,
    "queued.max.request.bytes": 524288000,  # Odradek's bounded default; Kafka's is -1
    "max.connections": 2147483647,
    "max.connections.per.ip": 2147483647,
    "max.partitions": 200000,  # KIP-578 names, Odradek's defaults
    "max.broker.partitions": 100000,
    "zookeeper.connect": None,
    "zookeeper.session.timeout.ms": 18000,
    "offsets.topic.num.partitions": 50,
    "offsets.topic.replication.factor": 3,
    "offsets.retention.minutes": 10080,
    "offset.metadata.max.bytes": 4096,
    "group.initial.rebalance.delay.ms": 3000,
    "group.min.session.timeout.ms": 6000,
    "group.max.session.timeout.ms": 1800000,
    "min.insync.replicas": 1,
    "unclean.leader.election.enable": False,
    "replica.lag.time.max.ms": 30000,
    "compression.type": "producer",
    "log.message.timestamp.type": "CreateTime",
    "log.cleaner.min.cleanable.ratio": 0.5,
    "sasl.enabled.mechanisms": ["GSSAPI"],
}


class TestCatalogue:
    def test_size(self) -> None:
        assert len(BROKER_KEYS) >= 350
        assert len(TOPIC_CONFIGS) >= 30

    @pytest.mark.parametrize("name", APPLIED)
    def test_applied_keys(self, name: str) -> None:
        assert BROKER_KEYS[name].applied, name

    @pytest.mark.parametrize("name", NOT_APPLIED)
    def test_not_applied_keys(self, name: str) -> None:
        assert not BROKER_KEYS[name].applied, name

    @pytest.mark.parametrize(("name", "default"), sorted(DEFAULTS.items()))
    def test_documented_defaults(self, name: str, default: Any) -> None:
        assert BROKER_KEYS[name].default_value == default

    def test_families_present(self) -> None:
        for prefix in ("log.", "num.", "socket.", "replica.", "controller.", "zookeeper.", "offsets.",
                       "transaction.", "group.", "ssl.", "sasl.", "listener", "quota.", "metric", "auto.",
                       "delete.", "leader.", "unclean.", "inter.broker.", "queued.", "share.", "remote.log."):  # fmt: skip
            assert any(name.startswith(prefix) for name in BROKER_KEYS), prefix

    def test_removed_keys_are_known_and_deprecated(self) -> None:
        for name in ("port", "host.name", "advertised.host.name", "advertised.port", "replica.lag.max.messages",
                     "zookeeper.sync.time.ms", "controlled.shutdown.retry.backoff.ms", "inter.broker.protocol.version",
                     "log.message.format.version", "quota.consumer.default"):  # fmt: skip
            assert BROKER_KEYS[name].deprecated, name

    def test_types(self) -> None:
        assert BROKER_KEYS["ssl.keystore.password"].sensitive
        assert BROKER_KEYS["log.flush.interval.messages"].type.value == "long"
        assert BROKER_KEYS["offsets.topic.replication.factor"].type.value == "short"
        assert BROKER_KEYS["principal.builder.class"].type.value == "class"

    def test_every_topic_config_has_a_usable_broker_default(self) -> None:
        for key in TOPIC_CONFIGS.values():
            if key.server_default is not None:
                assert key.server_default in BROKER_KEYS, key.name

    def test_password_is_hidden(self) -> None:
        secret = Password("s3cret")
        assert str(secret) == repr(secret) == "[hidden]"
        assert secret.value == "s3cret"


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------


class TestValidation:
    def test_unknown_key_with_did_you_mean(self) -> None:
        message = error_of({"eplica.lag.time.max.ms": "10000"})
        assert message == (
            "Unknown configuration 'eplica.lag.time.max.ms' in server.properties"
            " (did you mean replica.lag.time.max.ms?)"
        )

    def test_unknown_key_without_a_close_match(self) -> None:
        assert error_of({"zzzz": "1"}) == "Unknown configuration 'zzzz' in server.properties"

    def test_topic_config_name_suggests_broker_name(self) -> None:
        assert "(did you mean log.retention.ms?)" in error_of({"retention.ms": "1000"})
        assert "(did you mean message.max.bytes?)" in error_of({"max.message.bytes": "1000"})

    def test_all_unknown_keys_reported(self) -> None:
        message = error_of({"nmu.partitions": "1", "log.retention.hour": "1"})
        assert "'nmu.partitions'" in message and "did you mean num.partitions?" in message
        assert "'log.retention.hour'" in message and "did you mean log.retention.hours?" in message

    @pytest.mark.parametrize(
        ("props", "message"),
        [
            ({"num.partitions": "abc"}, "Invalid value abc for configuration num.partitions: Not a number of type INT"),
            ({"num.partitions": "2147483648"}, "Invalid value 2147483648 for configuration num.partitions: Not a number of type INT"),
            ({"num.partitions": "1.5"}, "Invalid value 1.5 for configuration num.partitions: Not a number of type INT"),
            ({"log.retention.bytes": "1e9"}, "Invalid value 1e9 for configuration log.retention.bytes: Not a number of type LONG"),
            ({"offsets.topic.replication.factor": "40000"}, "Invalid value 40000 for configuration offsets.topic.replication.factor: Not a number of type SHORT"),
            ({"delete.topic.enable": "yes"}, "Invalid value yes for configuration delete.topic.enable: Expected value to be either true or false"),
            ({"log.cleaner.min.cleanable.ratio": "half"}, "Invalid value half for configuration log.cleaner.min.cleanable.ratio: Not a number of type DOUBLE"),
            ({"num.partitions": "0"}, "Invalid value 0 for configuration num.partitions: Value must be at least 1"),
            ({"message.max.bytes": "-1"}, "Invalid value -1 for configuration message.max.bytes: Value must be at least 0"),
            ({"log.segment.bytes": "13"}, "Invalid value 13 for configuration log.segment.bytes: Value must be at least 14"),
            ({"log.cleaner.min.cleanable.ratio": "1.5"}, "Invalid value 1.5 for configuration log.cleaner.min.cleanable.ratio: Value must be no more than 1"),
            ({"compression.type": "brotli"}, "Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"),
            ({"compression.gzip.level": "11"}, "Invalid value 11 for configuration compression.gzip.level: Value must be in [1,...,9] or -1"),
            ({"compression.lz4.level": "0"}, "Invalid value 0 for configuration compression.lz4.level: Value must be at least 1"),
            ({"compression.zstd.level": "99"}, "Invalid value 99 for configuration compression.zstd.level: Value must be no more than 22"),
            ({"log.cleanup.policy": "delete,shred"}, "Invalid value delete,shred for configuration log.cleanup.policy: String must be one of: compact, delete"),
            ({"log.message.timestamp.type": "createtime"}, "Invalid value createtime for configuration log.message.timestamp.type: String must be one of: CreateTime, LogAppendTime"),
        ],
    )  # fmt: skip
    def test_bad_values(self, props: dict[str, str], message: str) -> None:
        assert error_of(props) == message

    def test_values_are_trimmed_and_case_insensitive_booleans(self) -> None:
        c = cfg(
            num__partitions=" 3  ", delete__topic__enable="FALSE", log__cleanup__policy=" compact , delete "
        )
        assert c.get("num.partitions") == 3
        assert c.get("delete.topic.enable") is False
        assert c.get("log.cleanup.policy") == ["compact", "delete"]

    @pytest.mark.parametrize(
        ("listeners", "reason"),
        [
            ("PLAINTEXT:/9092", "Unable to parse PLAINTEXT:/9092 to a broker endpoint"),
            ("PLAINTEXT://host", "Unable to parse PLAINTEXT://host to a broker endpoint"),
            ("://:9092", "Unable to parse ://:9092 to a broker endpoint"),
            ("PLAINTEXT://:65536", "out of range 0..65535"),
            ("FOO://:9092", "No security protocol defined for listener FOO"),
            ("PLAINTEXT://:9092,PLAINTEXT://:9093", "different name"),
            ("PLAINTEXT://:9092,SSL://:9092", "different port"),
            ("", "at least one listener is required"),
        ],
    )
    def test_malformed_listeners(self, listeners: str, reason: str) -> None:
        message = error_of({"listeners": listeners})
        assert message.startswith(f"Invalid value {listeners} for configuration listeners")
        assert reason in message

    def test_listener_parsing(self, hostname: dict[str, Any]) -> None:
        c = cfg(listeners="PLAINTEXT://:9092,internal://127.0.0.1:9093,V6://[::1]:9094",
                listener__security__protocol__map="PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,V6:PLAINTEXT")  # fmt: skip
        assert c.listeners == [
            Listener("PLAINTEXT", "", 9092, "PLAINTEXT"),
            Listener("INTERNAL", "127.0.0.1", 9093, "PLAINTEXT"),
            Listener("V6", "::1", 9094, "PLAINTEXT"),
        ]
        assert [lst.url for lst in c.listeners] == [
            "PLAINTEXT://:9092",
            "INTERNAL://127.0.0.1:9093",
            "V6://[::1]:9094",
        ]

    def test_parse_listeners_directly(self) -> None:
        assert parse_listeners("PLAINTEXT://h:1, SSL://:2") == [
            Listener("PLAINTEXT", "h", 1, "PLAINTEXT"),
            Listener("SSL", "", 2, "SSL"),
        ]

    def test_protocol_map_errors(self) -> None:
        assert "listener.security.protocol.map" in error_of({"listener.security.protocol.map": "PLAINTEXT"})
        assert "unknown security protocol" in error_of({"listener.security.protocol.map": "A:TLS"})

    def test_zookeeper_connect(self) -> None:
        assert (
            cfg(zookeeper__connect="zk1:2181,zk2:2181/odradek").zookeeper_connect
            == "zk1:2181,zk2:2181/odradek"
        )
        assert cfg(zookeeper__connect="").zookeeper_connect is None
        assert "zookeeper.connect" in error_of({"zookeeper.connect": "zk1:port"})

    def test_replica_fetch_wait_limits(self) -> None:
        assert "replica.socket.timeout.ms should always be at least" in error_of(
            {"replica.fetch.wait.max.ms": "40000"}
        )
        message = error_of({"replica.fetch.wait.max.ms": "40000", "replica.socket.timeout.ms": "60000"})
        assert "less than or equal to replica.lag.time.max.ms" in message

    def test_inline_comment_hint(self) -> None:
        message = error_of({"num.partitions": "2 # two partitions"})
        assert message.startswith("Invalid value 2 # two partitions for configuration num.partitions")
        assert "no end-of-line comments" in message

    def test_inline_comment_in_string_value_warns(self) -> None:
        c = cfg(log__dirs="/tmp/x #the data dir")
        assert any("log.dirs" in w and "end-of-line comments" in w for w in c.warnings)


# ---------------------------------------------------------------------------------------------
# Identity, listeners, advertised listeners
# ---------------------------------------------------------------------------------------------


class TestIdentity:
    def test_broker_id_default_single_node_is_zero(self) -> None:
        assert cfg().broker_id == 0

    def test_broker_id_default_zookeeper_mode_is_generated(self) -> None:
        assert cfg(zookeeper__connect="localhost:2181").broker_id == -1

    def test_node_id_alias(self) -> None:
        assert cfg(node__id="7").broker_id == 7
        assert cfg(node__id="7", broker__id="7").broker_id == 7
        assert "must equal broker.id" in error_of({"node.id": "7", "broker.id": "8"})

    def test_broker_id_range(self) -> None:
        assert "reserved.broker.max.id" in error_of({"broker.id": "1001"})
        assert cfg(broker__id="1001", reserved__broker__max__id="2000").broker_id == 1001
        assert "greater than or equal to -1" in error_of({"broker.id": "-2"})


class TestListeners:
    def test_default_listener(self, hostname: dict[str, Any]) -> None:
        c = cfg()
        assert c.listeners == [Listener("PLAINTEXT", "", 9092, "PLAINTEXT")]
        assert c.advertised_listeners == [Listener("PLAINTEXT", "odradek-test-host", 9092, "PLAINTEXT")]

    def test_advertised_defaults_to_listeners(self) -> None:
        c = cfg(listeners="PLAINTEXT://127.0.0.1:9092")
        assert c.advertised_listeners == c.listeners

    def test_wildcard_host_is_advertised_as_host_name(self, hostname: dict[str, Any]) -> None:
        c = cfg(listeners="PLAINTEXT://0.0.0.0:9092")
        assert c.listeners[0].host == "0.0.0.0"
        assert c.advertised_listeners[0].host == "odradek-test-host"

    def test_unresolvable_host_name_warns(self, hostname: dict[str, Any]) -> None:
        hostname["name"] = "iZ25wuzqk91Z"
        hostname["addresses"] = None
        c = cfg(listeners="PLAINTEXT://:9092", zookeeper__connect="10.0.0.100:2181")
        assert c.advertised_listeners[0].host == "iZ25wuzqk91Z"
        (warning,) = [w for w in c.warnings if "iZ25wuzqk91Z" in w]
        assert "does not resolve" in warning and "advertised.listeners" in warning

    def test_loopback_host_name_warns_for_remote_ensemble(self, hostname: dict[str, Any]) -> None:
        hostname["addresses"] = ["127.0.1.1"]
        remote = cfg(listeners="PLAINTEXT://:9092", zookeeper__connect="10.0.0.100:2181")
        assert any("loopback" in w for w in remote.warnings)
        local = cfg(listeners="PLAINTEXT://:9092", zookeeper__connect="localhost:2181")
        assert not any("loopback" in w for w in local.warnings)

    def test_resolvable_host_name_does_not_warn(self, hostname: dict[str, Any]) -> None:
        assert cfg(listeners="PLAINTEXT://:9092", offsets__topic__replication__factor="1").warnings == []

    def test_explicit_advertised_listeners(self, hostname: dict[str, Any]) -> None:
        c = cfg(
            listeners="PLAINTEXT://0.0.0.0:9092", advertised__listeners="PLAINTEXT://broker1.example:19092"
        )
        assert c.advertised_listeners == [Listener("PLAINTEXT", "broker1.example", 19092, "PLAINTEXT")]

    def test_advertised_wildcard_is_rejected(self) -> None:
        message = error_of({"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"})
        assert "nonroutable meta-address 0.0.0.0" in message

    def test_advertised_names_must_be_listeners(self) -> None:
        assert "subset" in error_of({"advertised.listeners": "SSL://h:9093"})

    def test_inter_broker_listener_name(self) -> None:
        c = cfg(listeners="PLAINTEXT://127.0.0.1:9092", inter__broker__listener__name="PLAINTEXT")
        assert c.get("inter.broker.listener.name") == "PLAINTEXT"
        assert "must be a listener name" in error_of({"inter.broker.listener.name": "REPLICATION"})


class TestDeprecatedAliases:
    def test_port_and_host_name_become_a_listener(self) -> None:
        c = cfg(port="9093", host__name="127.0.0.1")
        assert c.listeners == [Listener("PLAINTEXT", "127.0.0.1", 9093, "PLAINTEXT")]
        assert c.advertised_listeners == c.listeners
        assert c.get("listeners") == "PLAINTEXT://127.0.0.1:9093"
        assert (
            "Configuration port = 9093 is deprecated (removed in Kafka 3.0; use listeners);"
            " mapped to listeners=PLAINTEXT://127.0.0.1:9093"
        ) in c.warnings
        assert any(w.startswith("Configuration host.name = 127.0.0.1 is deprecated") for w in c.warnings)

    def test_port_alone(self, hostname: dict[str, Any]) -> None:
        c = cfg(port="9095")
        assert c.listeners == [Listener("PLAINTEXT", "", 9095, "PLAINTEXT")]
        assert c.advertised_listeners[0].host == "odradek-test-host"

    def test_advertised_aliases(self) -> None:
        c = cfg(
            host__name="127.0.0.1", port="9092", advertised__host__name="10.0.0.100", advertised__port="19092"
        )
        assert c.advertised_listeners == [Listener("PLAINTEXT", "10.0.0.100", 19092, "PLAINTEXT")]
        assert (
            sum("mapped to advertised.listeners=PLAINTEXT://10.0.0.100:19092" in w for w in c.warnings) == 2
        )

    def test_advertised_host_defaults_to_host_name(self) -> None:
        c = cfg(host__name="127.0.0.1", port="9092", advertised__port="19092")
        assert c.advertised_listeners == [Listener("PLAINTEXT", "127.0.0.1", 19092, "PLAINTEXT")]

    def test_aliases_ignored_when_listeners_set(self) -> None:
        c = cfg(listeners="PLAINTEXT://127.0.0.1:9092", port="9999", host__name="10.9.9.9")
        assert c.listeners == [Listener("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT")]
        assert sum("ignored because listeners is set" in w for w in c.warnings) == 2

    def test_replica_lag_max_messages_accepted_and_ignored(self) -> None:
        c = cfg(replica__lag__max__messages="4000")
        assert c.get("replica.lag.max.messages") == 4000
        assert any(
            w.startswith("Configuration replica.lag.max.messages = 4000 is deprecated (removed in Kafka 0.9")
            and w.endswith("ignored")
            for w in c.warnings
        )

    def test_other_removed_keys_warn(self) -> None:
        c = cfg(zookeeper__sync__time__ms="2000", controlled__shutdown__retry__backoff__ms="5000",
                inter__broker__protocol__version="0.11.0", log__message__format__version="2.8",
                offsets__topic__compression__codec="0")  # fmt: skip
        for name in ("zookeeper.sync.time.ms", "controlled.shutdown.retry.backoff.ms",
                     "inter.broker.protocol.version", "log.message.format.version", "offsets.topic.compression.codec"):  # fmt: skip
            assert any(w.startswith(f"Configuration {name} = ") and "deprecated" in w for w in c.warnings), (
                name
            )

    def test_log_cleanup_interval_mins_is_mapped(self) -> None:
        c = cfg(log__cleanup__interval__mins="2")
        assert c.get("log.retention.check.interval.ms") == 120000


class TestNotApplicable:
    def test_warning_text(self) -> None:
        c = cfg(
            num__network__threads="3",
            offsets__topic__replication__factor="1",
            listeners="PLAINTEXT://127.0.0.1:9092",
        )
        assert c.warnings == [
            "Configuration num.network.threads = 3 is accepted but not applicable to Odradek; ignored"
        ]
        assert c.get("num.network.threads") == 3

    def test_prefixed_keys_accepted(self) -> None:
        c = cfg(
            listener__name__internal__ssl__keystore__password="pw",
            listener__name__sasl_ssl__plain__sasl__jaas__config="secret stuff",
            ssl__keystore__location="/ks.jks",
            sasl__some__future__key="x",
        )
        assert c.get("listener.name.internal.ssl.keystore.password") == "pw"
        assert c.is_set("ssl.keystore.location")
        assert not any("pw" in w or "secret stuff" in w for w in c.warnings)
        assert any("listener.name.internal.ssl.keystore.password = [hidden]" in w for w in c.warnings)
        assert any(w.startswith("Configuration sasl.some.future.key = x is accepted") for w in c.warnings)

    def test_prefixed_typo_gets_a_hint(self) -> None:
        (warning,) = cfg(ssl__keystore__locaton="/ks.jks", offsets__topic__replication__factor="1").warnings
        assert warning.endswith("ignored (did you mean ssl.keystore.location?)")

    def test_password_values_hidden_in_warnings(self) -> None:
        c = cfg(ssl__truststore__password="changeit")
        assert c.get("ssl.truststore.password") == Password("changeit")
        assert all("changeit" not in w for w in c.warnings)

    def test_single_node_replication_factor_warning(self) -> None:
        assert any("__consumer_offsets" in w for w in cfg().warnings)
        assert not any(
            "__consumer_offsets" in w for w in cfg(offsets__topic__replication__factor="1").warnings
        )
        assert not any("__consumer_offsets" in w for w in cfg(zookeeper__connect="localhost:2181").warnings)


# ---------------------------------------------------------------------------------------------
# Precedence and typed access
# ---------------------------------------------------------------------------------------------


class TestPrecedence:
    def test_retention_default(self) -> None:
        assert cfg().log_retention_ms == 168 * 3_600_000

    def test_retention_hours(self) -> None:
        assert cfg(log__retention__hours="1").log_retention_ms == 3_600_000

    def test_retention_minutes_beat_hours(self) -> None:
        assert cfg(log__retention__hours="1", log__retention__minutes="5").log_retention_ms == 300_000

    def test_retention_ms_beats_minutes(self) -> None:
        c = cfg(log__retention__hours="1", log__retention__minutes="5", log__retention__ms="1234")
        assert c.log_retention_ms == 1234

    def test_retention_unlimited(self) -> None:
        assert cfg(log__retention__ms="-1").log_retention_ms == -1
        assert cfg(log__retention__hours="-5").log_retention_ms == -1

    def test_retention_zero_rejected(self) -> None:
        assert "must be unlimited (-1)" in error_of({"log.retention.minutes": "0"})

    def test_roll(self) -> None:
        assert cfg().log_roll_ms == 168 * 3_600_000
        assert cfg(log__roll__hours="2").log_roll_ms == 7_200_000
        assert cfg(log__roll__hours="2", log__roll__ms="500").log_roll_ms == 500
        assert cfg(log__roll__jitter__hours="1").log_roll_jitter_ms == 3_600_000
        assert cfg(log__roll__jitter__hours="1", log__roll__jitter__ms="7").log_roll_jitter_ms == 7

    def test_flush_interval_falls_back_to_scheduler_interval(self) -> None:
        assert cfg().log_flush_interval_ms == 2**63 - 1
        assert cfg(log__flush__scheduler__interval__ms="3000").log_flush_interval_ms == 3000
        assert (
            cfg(
                log__flush__scheduler__interval__ms="3000", log__flush__interval__ms="100"
            ).log_flush_interval_ms
            == 100
        )

    def test_log_dirs(self) -> None:
        assert cfg().log_dirs == ["/tmp/kafka-logs"]
        assert cfg(log__dir="/a").log_dirs == ["/a"]
        c = cfg(log__dir="/a", log__dirs="/b, /c,")
        assert c.log_dirs == ["/b", "/c"]
        assert any("log.dir = /a is ignored because log.dirs is set" in w for w in c.warnings)
        assert "more than once" in error_of({"log.dirs": "/a,/a"})
        assert "At least one log directory" in error_of({"log.dirs": " , "})

    def test_zookeeper_connection_timeout_falls_back_to_session_timeout(self) -> None:
        assert cfg().zookeeper_connection_timeout_ms == 18000
        assert cfg(zookeeper__connection__timeout__ms="6000").zookeeper_connection_timeout_ms == 6000


class TestAccess:
    def test_get_and_is_set(self) -> None:
        c = cfg(num__partitions="4")
        assert c.get("num.partitions") == 4 and c.is_set("num.partitions")
        assert c.get("default.replication.factor") == 1 and not c.is_set("default.replication.factor")
        assert c.get("log.retention.ms") is None
        assert c.get("listener.name.x.ssl.keystore.location") is None
        with pytest.raises(KeyError, match="did you mean num.partitions"):
            c.get("num.partition")

    def test_reads(self) -> None:
        c = cfg(message__max__bytes="2000000")
        assert c.get("message.max.bytes") == 2000000
        assert c.get("auto.create.topics.enable") is True
        assert c.get("log.cleaner.min.cleanable.ratio") == 0.5
        assert c.offsets_retention_ms == 10080 * 60_000
        with pytest.raises(AttributeError):  # keys read through get(), typed; no untyped attributes
            _ = c.message_max_bytes

    def test_origin(self) -> None:
        assert BrokerConfig.from_props({}, origin="x.properties").origin == "x.properties"


class TestLoad:
    def test_overrides(self, tmp_path: Path) -> None:
        path = tmp_path / "server.properties"
        path.write_text("num.partitions=2\nlisteners=PLAINTEXT://127.0.0.1:9092\n")
        c = BrokerConfig.load(path, ["num.partitions=6", "log.dirs = /data/a,/data/b", "broker.id=3"])
        assert c.get("num.partitions") == 6
        assert c.log_dirs == ["/data/a", "/data/b"]
        assert c.broker_id == 3
        assert c.origin == str(path)

    def test_override_keeps_equals_in_value(self, tmp_path: Path) -> None:
        path = tmp_path / "server.properties"
        path.write_text("")
        c = BrokerConfig.load(path, ["listener.security.protocol.map=PLAINTEXT:PLAINTEXT,X:PLAINTEXT"])
        assert c.get("listener.security.protocol.map") == "PLAINTEXT:PLAINTEXT,X:PLAINTEXT"

    @pytest.mark.parametrize("bad", ["num.partitions", "=5", " = 5"])
    def test_malformed_override(self, tmp_path: Path, bad: str) -> None:
        path = tmp_path / "server.properties"
        path.write_text("")
        with pytest.raises(ConfigError, match="Invalid override"):
            BrokerConfig.load(path, [bad])

    def test_unknown_override_names_its_origin(self, tmp_path: Path) -> None:
        path = tmp_path / "server.properties"
        path.write_text("")
        with pytest.raises(ConfigError) as info:
            BrokerConfig.load(path, ["num.partiton=3"])
        assert (
            str(info.value)
            == "Unknown configuration 'num.partiton' in --override (did you mean num.partitions?)"
        )

    def test_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="Cannot read configuration file"):
            BrokerConfig.load(tmp_path / "absent.properties")

    def test_latin1_and_bom(self, tmp_path: Path) -> None:
        path = tmp_path / "server.properties"
        path.write_bytes(b"\xef\xbb\xbfbroker.id=5\n# caf\xe9 in latin-1 is not utf-8\n")
        assert BrokerConfig.load(path).broker_id == 5


# ---------------------------------------------------------------------------------------------
# Topic configs
# ---------------------------------------------------------------------------------------------


class TestTopicConfigs:
    def test_topic_defaults_cover_every_topic_config(self) -> None:
        assert set(cfg().topic_defaults()) == set(TOPIC_CONFIGS)

    def test_topic_defaults_follow_broker_settings(self) -> None:
        c = cfg(log__retention__minutes="30", message__max__bytes="500000", log__roll__hours="1",
                log__cleanup__policy="compact, delete", log__segment__bytes="1048576",
                log__flush__scheduler__interval__ms="2000", min__insync__replicas="2",
                log__cleaner__delete__retention__ms="1000", log__index__size__max__bytes="4096")  # fmt: skip
        d = c.topic_defaults()
        expected = {
            "retention.ms": "1800000",
            "max.message.bytes": "500000",
            "segment.ms": "3600000",
            "segment.jitter.ms": "0",
            "cleanup.policy": "compact,delete",
            "segment.bytes": "1048576",
            "flush.ms": "2000",
            "flush.messages": str(2**63 - 1),
            "min.insync.replicas": "2",
            "delete.retention.ms": "1000",
            "segment.index.bytes": "4096",
            "compression.type": "producer",
            "message.timestamp.type": "CreateTime",
            "unclean.leader.election.enable": "false",
            "min.cleanable.dirty.ratio": "0.5",
            "retention.bytes": "-1",
            "local.retention.ms": "-2",
            "remote.storage.enable": "false",
            "preallocate": "false",
        }
        assert {k: d[k] for k in expected} == expected

    def test_valid_topic_configs(self) -> None:
        assert validate_topic_configs(
            {"cleanup.policy": "compact,delete", "retention.ms": " -1 ", "compression.type": "zstd",
             "message.timestamp.type": "LogAppendTime", "min.insync.replicas": "2", "segment.bytes": "1024"}
        ) == {"cleanup.policy": "compact,delete", "retention.ms": "-1", "compression.type": "zstd",
              "message.timestamp.type": "LogAppendTime", "min.insync.replicas": "2", "segment.bytes": "1024"}  # fmt: skip
        assert validate_topic_configs({}) == {}

    def test_unknown_topic_config(self) -> None:
        with pytest.raises(ConfigError) as info:
            validate_topic_configs({"retention.hours": "1"})
        assert str(info.value) == "Unknown topic config name: retention.hours"

    @pytest.mark.parametrize(
        ("name", "value", "reason"),
        [
            ("cleanup.policy", "shred", "String must be one of: compact, delete"),
            ("message.timestamp.type", "WallClock", "String must be one of: CreateTime, LogAppendTime"),
            (
                "compression.type",
                "brotli",
                "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer",
            ),
            ("retention.ms", "-2", "Value must be at least -1"),
            ("segment.bytes", "10", "Value must be at least 14"),
            ("min.insync.replicas", "0", "Value must be at least 1"),
            ("min.cleanable.dirty.ratio", "2", "Value must be no more than 1"),
            ("max.message.bytes", "big", "Not a number of type INT"),
            ("unclean.leader.election.enable", "maybe", "Expected value to be either true or false"),
            ("compression.gzip.level", "0", "Value must be in [1,...,9] or -1"),
            ("compression.gzip.level", "10", "Value must be in [1,...,9] or -1"),
            ("compression.lz4.level", "0", "Value must be at least 1"),
            ("compression.lz4.level", "18", "Value must be no more than 17"),
            ("compression.zstd.level", "23", "Value must be no more than 22"),
            ("compression.zstd.level", "-131073", "Value must be at least -131072"),
            ("leader.replication.throttled.replicas", "0-1", "[partitionId]:[brokerId]"),
        ],
    )
    def test_bad_topic_values(self, name: str, value: str, reason: str) -> None:
        with pytest.raises(ConfigError) as info:
            validate_topic_configs({name: value})
        assert str(info.value).startswith(f"Invalid value {value} for configuration {name}: ")
        assert reason in str(info.value)

    def test_compaction_lag_conflict(self) -> None:
        with pytest.raises(ConfigError, match="min.compaction.lag.ms"):
            validate_topic_configs({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})

    def test_throttled_replicas(self) -> None:
        assert validate_topic_configs({"leader.replication.throttled.replicas": "0:1,1:2"})
        assert validate_topic_configs({"follower.replication.throttled.replicas": "*"})


# ---------------------------------------------------------------------------------------------
# DescribeConfigs
# ---------------------------------------------------------------------------------------------


class TestDescribe:
    def test_rows(self) -> None:
        c = cfg(num__partitions="3", log__retention__hours="1", ssl__keystore__password="pw",
                listener__name__a__ssl__key__password="x", listeners="PLAINTEXT://127.0.0.1:9092")  # fmt: skip
        rows = {row.name: row for row in c.describe_broker()}
        assert rows["num.partitions"][:5] == ("num.partitions", "3", False, False, 4)
        assert rows["default.replication.factor"][:5] == ("default.replication.factor", "1", True, False, 5)
        assert rows["ssl.keystore.password"][:5] == ("ssl.keystore.password", None, False, True, 4)
        assert rows["log.retention.ms"][:5] == ("log.retention.ms", "3600000", False, False, 4)
        assert rows["log.retention.hours"].value == "1"
        assert rows["log.roll.ms"][:5] == ("log.roll.ms", str(168 * 3_600_000), True, False, 5)
        assert rows["log.dirs"].value == "/tmp/kafka-logs"
        assert rows["broker.id"].value == "0"
        assert rows["listener.name.a.ssl.key.password"].is_sensitive
        assert rows["listener.name.a.ssl.key.password"].value is None
        assert rows["zookeeper.connect"].value is None
        assert rows["log.cleanup.policy"].value == "delete"
        assert rows["auto.create.topics.enable"].value == "true"
        assert "port" not in rows  # removed in 3.0 and not set
        assert ConfigSource.STATIC_BROKER_CONFIG == 4 and ConfigSource.DEFAULT_CONFIG == 5

    def test_removed_key_listed_when_set(self) -> None:
        rows = {row.name: row for row in cfg(port="9093").describe_broker()}
        assert rows["port"].value == "9093"


# ---------------------------------------------------------------------------------------------
# The configs printed in the guides under shared/reference, and the shipped samples
# ---------------------------------------------------------------------------------------------

GUIDE_CONFIGS = [
    "guide_0.11_server.properties",
    "guide_0.11_server1.properties",
    "guide_0.11_server2.properties",
    "guide_0.9_server.properties",
    "guide_in_practice_server-1.properties",
    "guide_in_practice_server-2.properties",
    "guide_mq_single.properties",
    "guide_mq_node1_fixed.properties",
    "guide_mq_node3_fixed.properties",
]


class TestGuides:
    @pytest.mark.parametrize("name", GUIDE_CONFIGS)
    def test_guide_config_loads(self, name: str, hostname: dict[str, Any]) -> None:
        c = BrokerConfig.load(DATA / name)
        assert c.listeners and c.log_dirs

    def test_eplica_typo_is_rejected(self) -> None:
        path = DATA / "guide_mq_node1.properties"
        with pytest.raises(ConfigError) as info:
            BrokerConfig.load(path)
        assert str(info.value) == (
            f"Unknown configuration 'eplica.lag.time.max.ms' in {path} (did you mean replica.lag.time.max.ms?)"
        )

    def test_wrapped_comment_and_typo_are_both_reported(self) -> None:
        with pytest.raises(ConfigError) as info:
            BrokerConfig.load(DATA / "guide_mq_node2.properties")
        message = str(info.value)
        assert "Unknown configuration 'wer" in message
        assert "'eplica.lag.time.max.ms'" in message and "(did you mean replica.lag.time.max.ms?)" in message

    def test_annotated_listing_fails_with_a_hint(self) -> None:
        with pytest.raises(ConfigError) as info:
            BrokerConfig.load(DATA / "guide_mq_single_annotated.properties")
        assert "for configuration broker.id: Not a number of type INT" in str(info.value)
        assert "no end-of-line comments" in str(info.value)

    def test_0_9_guide_advertises_the_configured_address(self) -> None:
        c = BrokerConfig.load(DATA / "guide_0.9_server.properties")
        assert c.broker_id == 0
        assert c.listeners == [Listener("PLAINTEXT", "", 9092, "PLAINTEXT")]
        assert c.advertised_listeners == [Listener("PLAINTEXT", "10.0.0.100", 9092, "PLAINTEXT")]
        assert c.zookeeper_connect == "10.0.0.100:2181,10.0.0.101:2181,10.0.0.102:2181"
        assert c.log_retention_ms == 168 * 3_600_000
        assert any("num.io.threads = 8 is accepted but not applicable" in w for w in c.warnings)
        assert any(
            "port = 9092 is deprecated" in w and "ignored because listeners is set" in w for w in c.warnings
        )

    def test_mq_guide_values(self, hostname: dict[str, Any]) -> None:
        c = BrokerConfig.load(DATA / "guide_mq_single.properties")
        assert c.get("num.partitions") == 2
        assert c.zookeeper_connection_timeout_ms == 6000
        assert c.get("group.initial.rebalance.delay.ms") == 0
        assert c.get("socket.send.buffer.bytes") == 1024000
        not_applicable = {
            w.split(" = ")[0].removeprefix("Configuration ") for w in c.warnings if "not applicable" in w
        }
        assert not_applicable == {
            "num.network.threads",
            "num.io.threads",
            "socket.send.buffer.bytes",
            "socket.receive.buffer.bytes",
            "num.recovery.threads.per.data.dir",
        }

    def test_in_practice_guide_uses_log_dir(self, hostname: dict[str, Any]) -> None:
        assert BrokerConfig.load(DATA / "guide_in_practice_server-2.properties").log_dirs == [
            "/tmp/kafka-logs-2"
        ]

    @pytest.mark.parametrize(
        "name",
        [
            "guide_0.9_zoo.cfg",
            "guide_mq_zoo_single.cfg",
            "guide_mq_zoo1.cfg",
            "guide_mq_zoo2.cfg",
            "guide_mq_zoo3.cfg",
        ],
    )
    def test_guide_zoo_cfg_loads(self, name: str) -> None:
        z = ZooKeeperConfig.load(DATA / name)
        assert z.data_dir and z.client_port in (2181, 2182, 2183) and z.warnings == []

    def test_zoo_cfg_server_entries(self) -> None:
        z = ZooKeeperConfig.load(DATA / "guide_0.9_zoo.cfg")
        assert z.servers == {
            0: ("10.0.0.100", 4001, 4002),
            1: ("10.0.0.101", 4001, 4002),
            2: ("10.0.0.102", 4001, 4002),
        }
        fragment = parse_properties((DATA / "guide_0.11_zoo_servers.cfg").read_text())
        z = ZooKeeperConfig.from_props(
            {**fragment, "dataDir": "/tmp/zk", "initLimit": "10", "syncLimit": "5"}
        )
        assert sorted(z.servers) == [1, 2, 3]
        with pytest.raises(ConfigError):
            ZooKeeperConfig.from_props({"dataDir": "/tmp/zk", "tickTime": "2000 #ms"})
        with pytest.raises(ConfigError):
            ZooKeeperConfig.from_props({"clientPort": "2181"})

    def test_shipped_server_properties(self) -> None:
        c = BrokerConfig.load(REPO / "config" / "server.properties")
        assert c.broker_id == 0
        assert c.listeners == [Listener("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT")]
        assert c.advertised_listeners == c.listeners
        assert c.log_dirs == ["/tmp/odradek-logs"]
        assert c.get("offsets.topic.replication.factor") == 1
        assert c.zookeeper_connect is None
        assert c.warnings == []

    def test_shipped_zookeeper_properties(self) -> None:
        z = ZooKeeperConfig.load(REPO / "config" / "zookeeper.properties")
        assert z.data_dir == "/tmp/zookeeper" and z.client_port == 2181
        assert z.props["maxClientCnxns"] == "0" and z.props["admin.enableServer"] == "false"
        assert z.warnings == []


# ---------------------------------------------------------------------------------------------
# version strings (message.format.version, inter.broker.protocol.version, ...)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["0.8.2", "0.10.0", "0.10.0.0", "0.10.0.1", "0.10.0-IV1", "0.11.0.3", "1.0",
                                     "1.0.2", "1.0-IV0", "2.1-IV2", "2.8.1", "3.0-IV1", "3.9-IV0", "4.0-IV3"])
def test_versions_kafka_accepts(version: str) -> None:
    assert validate_topic_configs({"message.format.version": version}) == {"message.format.version": version}
    assert cfg(inter__broker__protocol__version=version, log__message__format__version=version)


@pytest.mark.parametrize("version", ["0.10", "0.10.3", "0.7.0", "2.1-IV3", "3.0-IV", "9.9", "v2.8", "", "2"])
def test_versions_kafka_refuses(version: str) -> None:
    with pytest.raises(ConfigError, match=f"Version {version} is not a valid version"):
        validate_topic_configs({"message.format.version": version})
