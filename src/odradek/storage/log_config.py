"""A topic's log configuration, built from the topic catalogue (`odradek.config_keys.TOPIC_CONFIGS`).

Names, types, documented defaults and valid values are the catalogue's, not restated here. The broker's
default for each topic config is the effective value of the server key the catalogue names for it
(`BrokerConfig.topic_defaults`: `retention.ms` <- log.retention.{ms,minutes,hours}, `segment.bytes` <-
log.segment.bytes, ...); the LogManager merges a topic's own configs over those and builds a LogConfig.

LogConfig holds the topic configs that the log and its cleaner act on, and the schema validation settings
the produce handler reads from the partition's log (Confluent's confluent.{key,value}.*: a topic's settings
in one attribute read, updated with the log's config). The catalogue's other applied
topic configs are read where they act: min.insync.replicas by replication, unclean.leader.election.enable
by the controller.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from odradek.config_keys import TOPIC_CONFIGS, ConfigError, check_topic_configs
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.records import COMPRESSION_GZIP, COMPRESSION_LZ4, COMPRESSION_ZSTD

MIN_DECOMPRESSED_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The topic configs of one log; field `x_y` is the catalogue's topic config `x.y`."""

    segment_bytes: int
    segment_ms: int
    segment_jitter_ms: int
    segment_index_bytes: int
    index_interval_bytes: int
    retention_ms: int
    retention_bytes: int
    cleanup_policy: tuple[str, ...]
    max_message_bytes: int
    message_timestamp_type: str
    message_timestamp_difference_max_ms: int
    message_timestamp_before_max_ms: int
    message_timestamp_after_max_ms: int
    flush_messages: int
    flush_ms: int
    delete_retention_ms: int
    min_cleanable_dirty_ratio: float
    min_compaction_lag_ms: int
    max_compaction_lag_ms: int
    compression_type: str
    compression_gzip_level: int
    compression_lz4_level: int
    compression_zstd_level: int
    # Confluent Server's Schema ID Validation: read by the produce handler, not by the log
    confluent_key_schema_validation: bool
    confluent_key_subject_name_strategy: str
    confluent_value_schema_validation: bool
    confluent_value_subject_name_strategy: str

    @classmethod
    def from_props(cls, props: Mapping[str, str] | None = None) -> LogConfig:
        """From topic configs by Kafka's names (the broker's defaults with the topic's own on top).

        Every catalogued config given is parsed and checked by the catalogue; one not given takes the
        catalogue's topic-level default; names the catalogue does not know are ignored (CreateTopics and
        AlterConfigs refuse them). A bad value raises INVALID_CONFIG in Kafka's wording.
        """
        values = {name: key.default_value for name, key in TOPIC_CONFIGS.items()}
        try:
            for name, raw in (props or {}).items():
                key = TOPIC_CONFIGS.get(name)
                if key is not None and raw is not None:
                    values[name] = key.parse(raw)
            check_topic_configs(values)
        except ConfigError as exc:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        values["cleanup.policy"] = tuple(values["cleanup.policy"])
        return cls(**{attr: values[name] for attr, name in _CONFIG_NAMES.items()})

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def max_decompressed_bytes(self) -> int:
        """How far the compressed batches of one produced partition may inflate when the leader decodes their
        records (recompression, keys, timestamps, schema ids): four times max.message.bytes, at least 8 MiB.
        Producers' batches are a megabyte or so before compression; a compressed bomb is refused here instead
        of held in memory. Odradek's bound: Kafka streams records one by one and has none."""
        return max(MIN_DECOMPRESSED_BYTES, 4 * self.max_message_bytes)

    @property
    def max_segment_ms(self) -> int:
        """segment.ms, capped by max.compaction.lag.ms for compacted topics (KIP-354): the active segment,
        which is never cleaned, must roll in time for its records to be compacted within the lag."""
        return min(self.segment_ms, self.max_compaction_lag_ms) if self.compact else self.segment_ms

    def compression_level(self, codec: int) -> int | None:
        """compression.<codec>.level for a batch codec; None for codecs without levels."""
        levels = {
            COMPRESSION_GZIP: self.compression_gzip_level,
            COMPRESSION_LZ4: self.compression_lz4_level,
            COMPRESSION_ZSTD: self.compression_zstd_level,
        }
        return levels.get(codec)


# field name -> topic config name
_CONFIG_NAMES: dict[str, str] = {f.name: f.name.replace("_", ".") for f in fields(LogConfig)}
