"""Options of the `odradek` source and sink, with the names and defaults of Spark's Kafka connector.

`parse_source_options` and `parse_sink_options` turn the (case-insensitive) option map of a DataFrame
reader or writer into frozen dataclasses, or raise `ValueError` with a message naming the option. Options
starting with `kafka.` go, without that prefix, to the Kafka client (librdkafka names, which are the Java
client's for everything common such as bootstrap.servers, security.protocol, sasl.*, client.id).
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from odradek.spark.offsets import TP, OffsetJsonError, parse_assign_json, parse_offsets_json

_SOURCE_FORBIDDEN = {
    "auto.offset.reset": "set the source option 'startingOffsets' to 'earliest' or 'latest' instead",
    "enable.auto.commit": "offsets are tracked in the query's checkpoint, not committed to Kafka",
    "key.deserializer": "keys are always returned as binary; cast or decode them in the query",
    "value.deserializer": "values are always returned as binary; cast or decode them in the query",
    "interceptor.classes": "Java consumer interceptors cannot run in a Python client",
}
_SINK_FORBIDDEN = {
    "key.serializer": "the key column must be string or binary",
    "value.serializer": "the value column must be string or binary",
    "interceptor.classes": "Java producer interceptors cannot run in a Python client",
    "transactional.id": "each task needs its own; set the sink option 'transactionalIdPrefix' instead",
}
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
_UNITS_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_ms(text: str, what: str) -> int:
    """'15m', '30s', '500ms', '2h', '1d' or a bare number of milliseconds -> milliseconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*", text.lower())
    if not m or (m.group(2) and m.group(2) not in _UNITS_MS):
        raise ValueError(f"option '{what}': {text!r} is not a duration such as 500ms, 30s, 15m, 1h")
    return int(float(m.group(1)) * _UNITS_MS[m.group(2) or "ms"])


def _bool(opts: Mapping[str, str], key: str, default: bool) -> bool:
    raw = opts.get(key.lower())
    if raw is None:
        return default
    low = str(raw).strip().lower()
    if low in ("true", "false"):
        return low == "true"
    raise ValueError(f"option '{key}': {raw!r} is not 'true' or 'false'")


def _int(opts: Mapping[str, str], key: str, minimum: int = 1) -> int | None:
    raw = opts.get(key.lower())
    if raw is None:
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise ValueError(f"option '{key}': {raw!r} is not an integer") from None
    if value < minimum:
        raise ValueError(f"option '{key}' must be >= {minimum}, got {value}")
    return value


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items() if v is not None}


def client_params(opts: Mapping[str, str], forbidden: Mapping[str, str]) -> dict[str, str]:
    """The `kafka.`-prefixed options, prefix removed, the Java client's security keys (sasl.jaas.config,
    PEM ssl.truststore.location, ...) turned into librdkafka's; refuses the ones the connector owns."""
    from odradek.config_keys import ConfigError
    from odradek.security.client_config import librdkafka_config

    params = {k[len("kafka."):]: v for k, v in opts.items() if k.startswith("kafka.")}
    for key, why in forbidden.items():
        if key in params:
            raise ValueError(f"Kafka option 'kafka.{key}' is not supported: {why}")
    if not params.get("bootstrap.servers"):
        raise ValueError("Option 'kafka.bootstrap.servers' must be specified for configuring the Kafka client")
    try:
        return librdkafka_config(params)
    except ConfigError as exc:
        raise ValueError(f"Kafka option 'kafka.sasl.jaas.config': {exc}") from None


@dataclass(frozen=True)
class Subscription:
    """Which partitions to read: one of subscribe (topic names), subscribePattern (regex) or assign."""

    kind: str
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    partitions: tuple[TP, ...] = ()

    def describe(self) -> str:
        if self.kind == "subscribe":
            return f"subscribe={','.join(self.topics)}"
        if self.kind == "subscribePattern":
            return f"subscribePattern={self.pattern}"
        return "assign=" + ",".join(str(tp) for tp in self.partitions)


def parse_subscription(opts: Mapping[str, str]) -> Subscription:
    given = [k for k in ("subscribe", "subscribepattern", "assign") if opts.get(k, "").strip()]
    if not given:
        raise ValueError("One of the following options must be specified for Kafka source: "
                         "subscribe, subscribePattern, assign. See the docs for more details.")
    if len(given) > 1:
        raise ValueError("Only one of the following options can be specified for Kafka source: "
                         "subscribe, subscribePattern, assign. See the docs for more details.")
    kind = given[0]
    if kind == "subscribe":
        topics = tuple(dict.fromkeys(t.strip() for t in opts["subscribe"].split(",") if t.strip()))
        if not topics:
            raise ValueError(f"No topics to subscribe to as specified value for option 'subscribe' is {opts['subscribe']!r}")
        return Subscription("subscribe", topics=topics)
    if kind == "subscribepattern":
        pattern = opts["subscribepattern"].strip()
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"option 'subscribePattern': {pattern!r} is not a valid pattern ({exc})") from None
        return Subscription("subscribePattern", pattern=pattern)
    try:
        return Subscription("assign", partitions=tuple(parse_assign_json(opts["assign"])))
    except OffsetJsonError as exc:
        raise ValueError(f"option 'assign': {exc}") from None


@dataclass(frozen=True)
class OffsetSpec:
    """Where to start or stop: earliest, latest, per-partition offsets, one timestamp, or per-partition times.

    `kind` is one of 'earliest', 'latest', 'offsets', 'timestamp', 'timestamps'. For timestamps the offset
    used is the earliest whose record time is >= the given time; `strategy` says what to do when there is
    none ('error', or 'latest' to use the end of the partition)."""

    kind: str
    offsets: dict[TP, int] = field(default_factory=dict)
    timestamp: int | None = None
    strategy: str = "error"


def _offset_spec(opts: Mapping[str, str], prefix: str, default: str, *, streaming: bool) -> OffsetSpec:
    """startingX / endingX options, with Spark's precedence: Timestamp > OffsetsByTimestamp > Offsets."""
    # Ending times with no record at or after them mean "latest" (Spark); starting ones follow the strategy.
    strategy = opts.get(f"{prefix}offsetsbytimestampstrategy", "error" if prefix == "starting" else "latest").strip().lower()
    if strategy not in ("error", "latest"):
        raise ValueError(f"option '{prefix}OffsetsByTimestampStrategy' must be 'error' or 'latest', got {strategy!r}")
    name = "startingOffsets" if prefix == "starting" else "endingOffsets"
    ts = opts.get(f"{prefix}timestamp")
    if ts is not None:
        try:
            value = int(ts.strip())
        except ValueError:
            raise ValueError(f"option '{prefix}Timestamp': {ts!r} is not a time in milliseconds") from None
        return OffsetSpec("timestamp", timestamp=value, strategy=strategy)
    by_ts = opts.get(f"{prefix}offsetsbytimestamp")
    if by_ts is not None:
        try:
            return OffsetSpec("timestamps", offsets=parse_offsets_json(by_ts, f"{prefix}OffsetsByTimestamp"),
                              strategy=strategy)
        except OffsetJsonError as exc:
            raise ValueError(str(exc)) from None
    raw = opts.get(f"{prefix}offsets", default).strip()
    low = raw.lower()
    if low in ("earliest", "latest"):
        if not streaming and prefix == "starting" and low == "latest":
            raise ValueError("starting offset can't be latest for batch queries on Kafka")
        if prefix == "ending" and low == "earliest":
            raise ValueError("ending offset can't be earliest for batch queries on Kafka")
        return OffsetSpec(low)
    try:
        offsets = parse_offsets_json(raw, name)
    except OffsetJsonError as exc:
        raise ValueError(f"option '{name}' must be 'earliest', 'latest' or JSON: {exc}") from None
    for tp, off in offsets.items():
        if not streaming and prefix == "starting" and off == -1:
            raise ValueError(f"startingOffsets for {tp} can't be latest (-1) for batch queries on Kafka")
        if prefix == "ending" and off == -2:
            raise ValueError(f"endingOffsets for {tp} can't be earliest (-2) for batch queries on Kafka")
        if off < -2:
            raise ValueError(f"option '{name}': offset {off} of {tp} is not -2, -1 or >= 0")
    return OffsetSpec("offsets", offsets=offsets)


def default_commit_group(sub: Subscription) -> str:
    """The group a streaming query commits its progress to when neither groupId nor kafka.group.id is set:
    stable per subscription (the reader knows neither the query's name nor its checkpoint location)."""
    return "odradek-spark-" + hashlib.sha256(sub.describe().encode()).hexdigest()[:12]


def _commit_group(opts: Mapping[str, str], client: Mapping[str, str], sub: Subscription) -> str:
    raw = opts.get("groupid")
    if raw is not None and not raw.strip():
        raise ValueError("option 'groupId' must not be empty")
    return (raw or client.get("group.id") or default_commit_group(sub)).strip()


@dataclass(frozen=True)
class SourceOptions:
    """Everything the reader needs, parsed and checked."""

    client: dict[str, str]
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec
    fail_on_data_loss: bool = True
    include_headers: bool = False
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    poll_timeout_ms: int = 120_000
    fetch_retries: int = 3
    fetch_retry_interval_ms: int = 10
    group_id_prefix: str = "spark-kafka-source"
    isolation_level: str = "read_uncommitted"
    commit_offsets: bool = True
    commit_group_id: str = ""

    @property
    def read_committed(self) -> bool:
        return self.isolation_level == "read_committed"

    def consumer_conf(self) -> dict[str, str]:
        """librdkafka config for a consumer that only assigns partitions and never commits."""
        conf = dict(self.client)
        conf.setdefault("group.id", f"{self.group_id_prefix}-{uuid.uuid4()}")
        conf["isolation.level"] = self.isolation_level
        return conf


def parse_source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Parse reader options (batch when `streaming` is False); raises ValueError naming the bad option."""
    opts = _lower(options)
    client = client_params(opts, _SOURCE_FORBIDDEN)
    if streaming and any(k in opts for k in ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp")):
        raise ValueError("ending offset not valid in streaming queries "
                         "(endingOffsets, endingTimestamp and endingOffsetsByTimestamp are for batch queries)")
    max_trigger_delay = parse_duration_ms(opts.get("maxtriggerdelay", "15m"), "maxTriggerDelay")
    poll = opts.get("kafkaconsumer.polltimeoutms")
    isolation = client.get("isolation.level", "read_uncommitted").strip().lower()
    if isolation not in ISOLATION_LEVELS:
        raise ValueError(f"option 'kafka.isolation.level' must be read_uncommitted or read_committed, got {isolation!r}")
    if "isolation.level" in client:
        client["isolation.level"] = isolation
    subscription = parse_subscription(opts)
    return SourceOptions(
        client=client,
        subscription=subscription,
        starting=_offset_spec(opts, "starting", "latest" if streaming else "earliest", streaming=streaming),
        ending=_offset_spec(opts, "ending", "latest", streaming=streaming) if not streaming else OffsetSpec("latest"),
        fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
        include_headers=_bool(opts, "includeHeaders", False),
        max_offsets_per_trigger=_int(opts, "maxOffsetsPerTrigger"),
        min_offsets_per_trigger=_int(opts, "minOffsetsPerTrigger"),
        max_trigger_delay_ms=max_trigger_delay,
        min_partitions=_int(opts, "minPartitions"),
        max_records_per_partition=_int(opts, "maxRecordsPerPartition"),
        poll_timeout_ms=int(poll) if poll else 120_000,
        fetch_retries=_int(opts, "fetchOffset.numRetries", 0) or 3,
        fetch_retry_interval_ms=_int(opts, "fetchOffset.retryIntervalMs", 0) or 10,
        group_id_prefix=opts.get("groupidprefix", "spark-kafka-source"),
        isolation_level=isolation,
        commit_offsets=_bool(opts, "commitOffsets", True),
        commit_group_id=_commit_group(opts, client, subscription),
    )


@dataclass(frozen=True)
class SinkOptions:
    """Writer options: client config, the default topic, and the transactional id prefix (None: no
    transactions)."""

    client: dict[str, str]
    topic: str | None = None
    transactional_id_prefix: str | None = None


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    opts = _lower(options)
    client = client_params(opts, _SINK_FORBIDDEN)
    topic = opts.get("topic")
    prefix = opts.get("transactionalidprefix")
    if prefix is not None and not prefix.strip():
        raise ValueError("option 'transactionalIdPrefix' must not be empty")
    return SinkOptions(client=client, topic=topic.strip() if topic and topic.strip() else None,
                       transactional_id_prefix=prefix.strip() if prefix is not None else None)
