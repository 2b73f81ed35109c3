"""LogConfig from the topic catalogue: server defaults inherited through the catalogue's mapping, topic
overrides winning, bad values refused, and every applied topic config held where it acts."""

from __future__ import annotations

from dataclasses import fields

import pytest

from odradek.config import BrokerConfig
from odradek.config_keys import TOPIC_CONFIGS
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.records import COMPRESSION_GZIP, COMPRESSION_LZ4, COMPRESSION_SNAPPY, COMPRESSION_ZSTD
from odradek.storage.log_config import LogConfig

# applied topic configs that act outside the log: read from the topic's metadata where they act
APPLIED_ELSEWHERE = {"min.insync.replicas", "unclean.leader.election.enable"}


def broker_defaults(**props: str) -> dict[str, str]:
    """The topic defaults of a broker with `props` (dots spelled as double underscores)."""
    return BrokerConfig.from_props({k.replace("__", "."): v for k, v in props.items()}).topic_defaults()


def test_fields_are_the_applied_topic_configs() -> None:
    held = {f.name.replace("_", ".") for f in fields(LogConfig)}
    applied = {name for name, key in TOPIC_CONFIGS.items() if key.applied}
    assert held <= set(TOPIC_CONFIGS)
    assert held == applied - APPLIED_ELSEWHERE


def test_defaults_are_the_catalogue_defaults_and_the_default_broker_agrees() -> None:
    cfg = LogConfig.from_props()
    for f in fields(LogConfig):
        expected = TOPIC_CONFIGS[f.name.replace("_", ".")].default_value
        assert getattr(cfg, f.name) == (tuple(expected) if isinstance(expected, list) else expected), f.name
    assert LogConfig.from_props(broker_defaults()) == cfg


def test_server_defaults_are_inherited() -> None:
    cfg = LogConfig.from_props(
        broker_defaults(
            log__retention__hours="2",
            log__segment__bytes="1048576",
            log__roll__jitter__hours="1",
            log__cleanup__policy="compact,delete",
            log__flush__scheduler__interval__ms="2000",
            message__max__bytes="5000",
            compression__type="gzip",
            compression__gzip__level="9",
            compression__lz4__level="12",
            compression__zstd__level="-5",
        )
    )
    assert (cfg.retention_ms, cfg.segment_bytes, cfg.segment_jitter_ms) == (7_200_000, 1_048_576, 3_600_000)
    assert cfg.cleanup_policy == ("compact", "delete") and cfg.compact and cfg.delete
    assert (cfg.flush_ms, cfg.max_message_bytes, cfg.compression_type) == (2000, 5000, "gzip")
    assert (cfg.compression_gzip_level, cfg.compression_lz4_level, cfg.compression_zstd_level) == (9, 12, -5)
    # the finest unit wins, as in Kafka
    assert (
        LogConfig.from_props(
            broker_defaults(log__retention__hours="2", log__retention__minutes="5")
        ).retention_ms
        == 300_000
    )


def test_topic_overrides_win() -> None:
    defaults = broker_defaults(
        log__retention__hours="2", compression__gzip__level="9", log__segment__bytes="4096"
    )
    cfg = LogConfig.from_props(
        {**defaults, "retention.ms": "-1", "compression.gzip.level": "1", "unknown.key": "x"}
    )
    assert (cfg.retention_ms, cfg.compression_gzip_level, cfg.segment_bytes) == (-1, 1, 4096)


def test_compression_level_by_codec() -> None:
    cfg = LogConfig.from_props(
        {"compression.gzip.level": "4", "compression.lz4.level": "17", "compression.zstd.level": "-131072"}
    )
    assert cfg.compression_level(COMPRESSION_GZIP) == 4
    assert cfg.compression_level(COMPRESSION_LZ4) == 17
    assert cfg.compression_level(COMPRESSION_ZSTD) == -131072
    assert cfg.compression_level(COMPRESSION_SNAPPY) is None


@pytest.mark.parametrize(
    ("name", "value", "why"),
    [
        ("retention.ms", "abc", "Not a number of type LONG"),
        ("retention.ms", "-2", "Value must be at least -1"),
        ("segment.bytes", "3000000000", "Not a number of type INT"),
        ("cleanup.policy", "shred", "String must be one of"),
        ("message.timestamp.type", "Now", "String must be one of"),
        ("min.cleanable.dirty.ratio", "1.5", "Value must be no more than 1"),
        ("preallocate", "yes", "Expected value to be either true or false"),
        ("compression.gzip.level", "0", "Value must be in [1,...,9] or -1"),
        ("compression.gzip.level", "10", "Value must be in [1,...,9] or -1"),
        ("compression.lz4.level", "18", "Value must be no more than 17"),
        ("compression.zstd.level", "-131073", "Value must be at least -131072"),
    ],
)
def test_bad_values_are_refused(name: str, value: str, why: str) -> None:
    with pytest.raises(KafkaError) as info:
        LogConfig.from_props({name: value})
    assert info.value.code == ErrorCode.INVALID_CONFIG
    assert str(info.value).startswith(f"Invalid value {value} for configuration {name}: {why}")


def test_compaction_lags_conflict_across_broker_default_and_topic() -> None:
    defaults = broker_defaults(log__cleaner__max__compaction__lag__ms="1000")
    with pytest.raises(KafkaError) as info:
        LogConfig.from_props({**defaults, "min.compaction.lag.ms": "5000"})
    assert info.value.code == ErrorCode.INVALID_CONFIG
    assert "min.compaction.lag.ms (5000) > max.compaction.lag.ms (1000)" in str(info.value)


def test_compaction_lag_caps_segment_ms_of_compacted_topics() -> None:
    props = {"segment.ms": "100000", "max.compaction.lag.ms": "5000"}
    assert LogConfig.from_props(props).max_segment_ms == 100000
    assert LogConfig.from_props({**props, "cleanup.policy": "compact"}).max_segment_ms == 5000


def test_topic_configs_are_checked_against_the_broker_defaults() -> None:
    from odradek.config import ConfigError, validate_topic_configs

    with pytest.raises(ConfigError, match=r"min.compaction.lag.ms \(5000\) > max.compaction.lag.ms \(1000\)"):
        validate_topic_configs({"min.compaction.lag.ms": "5000"}, {"max.compaction.lag.ms": "1000"})
    assert validate_topic_configs({"min.compaction.lag.ms": "500"}, {"max.compaction.lag.ms": "1000"}) == {
        "min.compaction.lag.ms": "500"
    }
