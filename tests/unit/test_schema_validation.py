"""Schema ID Validation's parts without a broker: the wire-format scan of produced batches (every codec, bounded
decompression, malformed records), the record names of schemas as Confluent's serializers give them, and the
validator's caches and lookup bounds over a counting lookup (the broker-level behaviour is in
tests/schema_registry/test_produce_validation.py)."""

from __future__ import annotations

import asyncio
import struct

import pytest
from crc32c import crc32c

from odradek.protocol.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidRecordError,
    KafkaError,
    RecordValidationError,
)
from odradek.protocol.records import (
    BATCH_OVERHEAD,
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    build_batch,
    decompress_bounded,
    validate_batches,
)
from odradek.protocol.schema_ids import NOT_WIRE, NULL, scan_schema_ids
from odradek.server import schema_validation as sv
from odradek.server.schema_names import record_name
from odradek.server.schema_validation import (
    RECORD_NAME,
    TOPIC_RECORD_NAME,
    RegistryUnavailable,
    SchemaFacts,
    SchemaValidation,
)
from odradek.storage.log_config import LogConfig


def wire(schema_id: int, payload: bytes = b"data") -> bytes:
    return b"\x00" + struct.pack(">i", schema_id) + payload


def scan(batch: bytes, limit: int = 1 << 20) -> list[tuple[int, int]]:
    view = memoryview(batch)
    keys, values = scan_schema_ids(view, validate_batches(view, None), limit)
    return list(zip(keys, values, strict=True))


# ---- the scan --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("codec", [0, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD])
def test_scan_reads_each_records_key_and_value_under_every_codec(codec: int) -> None:
    records = [(wire(7), wire(9)), (None, wire(10)), (b"plain", None), (b"\x00\x00", b"\x01" + wire(3)[1:])]
    assert scan(build_batch(records, compression=codec)) == [(7, 9), (NULL, 10), (NOT_WIRE, NULL),
                                                              (NOT_WIRE, NOT_WIRE)]


def test_scan_spans_batches_and_reads_negative_and_huge_ids() -> None:
    data = build_batch([(None, wire(-1)), (wire(-2), wire(-5))]) + build_batch([(None, wire(0x7FFFFFFF))],
                                                                                 base_offset=2)
    assert scan(data) == [(NULL, -1), (-2, -5), (NULL, 0x7FFFFFFF)]


def test_a_compressed_bomb_is_refused_at_the_limit_without_being_held() -> None:
    big = b"\x00" * (4 << 20)
    for codec in (COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD):
        batch = build_batch([(None, wire(1, big))], compression=codec)
        assert len(batch) < 300_000
        with pytest.raises(InvalidRecordError, match="decompress to more than 1048576 bytes"):
            scan(batch, limit=1 << 20)
        assert scan(batch, limit=8 << 20) == [(NULL, 1)]


def test_garbage_compressed_payload_is_corrupt() -> None:
    payload = memoryview(b"not gzip at all" * 10)
    for codec in (COMPRESSION_GZIP, COMPRESSION_LZ4, COMPRESSION_ZSTD, COMPRESSION_SNAPPY):
        with pytest.raises(CorruptRecordError):
            decompress_bounded(codec, payload, 1 << 20)


def test_records_that_lie_about_their_lengths_are_corrupt() -> None:
    batch = bytearray(build_batch([(b"k", wire(1))]))
    # the record's length varint (first payload byte) claims more than the batch holds; CRC recomputed
    batch[BATCH_OVERHEAD] = 0x7E
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    with pytest.raises(CorruptRecordError):
        scan(bytes(batch))


# ---- record names ----------------------------------------------------------------------------------------

def test_record_names_as_confluents_serializers_give_them() -> None:
    avro = '{"type":"record","name":"User","namespace":"com.acme","fields":[]}'
    assert record_name("AVRO", avro) == "com.acme.User"
    assert record_name("AVRO", '{"type":"record","name":"a.b.User","namespace":"x","fields":[]}') == "a.b.User"
    assert record_name("AVRO", '"string"') == record_name("AVRO", '{"type": "string"}') == "string"
    assert record_name("AVRO", '["null", "int"]') is None
    assert record_name("JSON", '{"title": "Order", "type": "object"}') == "Order"
    assert record_name("JSON", '{"type": "object"}') is None
    proto = ('syntax = "proto3";\n// message Commented {}\npackage shop.v1;\n/* message Hidden { */\n'
             'import "other.proto";\nmessage Order { message Line {} string id = 1; }\nmessage Second {}\n')
    assert record_name("PROTOBUF", proto) == "shop.v1.Order"
    assert record_name("PROTOBUF", 'syntax = "proto3"; enum E { A = 0; }') is None
    assert record_name("AVRO", "{not json") is None


def test_record_names_of_the_texts_the_registry_stores() -> None:
    """The registry stores canonical text (a .proto rendered from the compiled descriptor, compact Avro JSON):
    the names read from it are those its parsers give."""
    from odradek.schema_registry import schemas

    proto = schemas.parse("PROTOBUF", 'syntax = "proto3";\npackage shop.v1;\noption java_package = "x.y";\n'
                                      'import "google/protobuf/timestamp.proto";\nmessage Order { string id = 1; '
                                      'google.protobuf.Timestamp at = 2; oneof k { string a = 3; } '
                                      'map<string, int32> m = 4; }\nmessage Other {}\n')
    assert record_name("PROTOBUF", proto.canonical()) == proto.message_names()[0] == "shop.v1.Order"  # type: ignore[attr-defined]
    avro = schemas.parse("AVRO", '{"namespace": "n", "type": "record", "name": "U", "fields": []}')
    assert record_name("AVRO", avro.canonical()) == "n.U"


def test_record_name_of_a_hostile_proto_text_is_linear() -> None:
    import time
    start = time.monotonic()
    assert record_name("PROTOBUF", "/*" * 300_000) is None
    assert record_name("PROTOBUF", '"' * 600_000) is None
    assert time.monotonic() - start < 2


# ---- the validator over a counting lookup ----------------------------------------------------------------

class Lookup:
    def __init__(self, known: dict[int, SchemaFacts]) -> None:
        self.known = known
        self.asked: list[int] = []
        self.down = False
        self.generation = 0
        self.gate: asyncio.Event | None = None  # set: answers wait for it

    def token(self) -> object:
        return self.generation

    async def close(self) -> None:
        return None

    async def facts(self, schema_id: int) -> SchemaFacts | None:
        self.asked.append(schema_id)
        await asyncio.sleep(0)
        if self.gate is not None:
            await self.gate.wait()
        if self.down:
            raise RegistryUnavailable("connection refused")
        return self.known.get(schema_id)


def config(**props: str) -> LogConfig:
    return LogConfig.from_props({"confluent.value.schema.validation": "true", **props})


async def check(validation: SchemaValidation, records: list[tuple[bytes | None, bytes | None]],
                cfg: LogConfig | None = None, topic: str = "t") -> None:
    await validation.check(topic, 0, cfg or config(), memoryview(build_batch(records)))


def test_good_records_pass_and_their_ids_are_cached() -> None:
    lookup = Lookup({1: SchemaFacts("R", frozenset({"t-value"}))})
    validation = SchemaValidation(lookup)

    async def run() -> None:
        await check(validation, [(None, wire(1))] * 50 + [(b"k", None)])
        await check(validation, [(None, wire(1))])
    asyncio.run(run())
    assert lookup.asked == [1]


def test_batches_asking_for_one_id_share_one_lookup_and_outlive_a_cancelled_asker() -> None:
    lookup = Lookup({1: SchemaFacts(None, frozenset({"t-value"}))})
    validation = SchemaValidation(lookup)

    async def run() -> None:
        lookup.gate = asyncio.Event()
        first = asyncio.create_task(check(validation, [(None, wire(1))]))
        others = [asyncio.create_task(check(validation, [(None, wire(1))])) for _ in range(5)]
        await asyncio.sleep(0.01)
        first.cancel()
        lookup.gate.set()
        await asyncio.gather(*others)
    asyncio.run(run())
    assert lookup.asked == [1]


def test_bad_records_are_named_and_the_batch_refused() -> None:
    lookup = Lookup({1: SchemaFacts("R", frozenset({"t-value"})), 2: SchemaFacts("R", frozenset({"other-value"}))})
    validation = SchemaValidation(lookup)
    with pytest.raises(RecordValidationError) as caught:
        asyncio.run(check(validation, [(None, wire(1)), (None, b"raw json"), (None, wire(2)), (None, wire(99)),
                                       (None, wire(-1))]))
    err = caught.value
    assert err.code == ErrorCode.INVALID_RECORD
    assert [i for i, _ in err.record_errors] == [1, 2, 3, 4]
    messages = [m or "" for _, m in err.record_errors]
    assert "Record 1 of the batch to t-0" in messages[0] and "wire format" in messages[0]
    assert "schema id 2 is not registered under subject t-value (TopicNameStrategy)" in messages[1]
    assert "schema id 99 is not registered in the schema registry" in messages[2]
    assert "schema id -1 is not a registered schema id" in messages[3]
    assert err.message.startswith(messages[0]) and "(4 of 5 records failed)" in err.message


def test_record_name_strategies_and_key_validation() -> None:
    lookup = Lookup({5: SchemaFacts("com.acme.User", frozenset({"com.acme.User", "t-com.acme.User"})),
                     6: SchemaFacts(None, frozenset({"t-key"}))})
    validation = SchemaValidation(lookup)
    by_record = config(**{"confluent.value.subject.name.strategy": RECORD_NAME})
    by_topic_record = config(**{"confluent.value.subject.name.strategy": TOPIC_RECORD_NAME})
    keys = LogConfig.from_props({"confluent.key.schema.validation": "true"})

    async def run() -> None:
        await check(validation, [(b"raw key", wire(5))], by_record)
        await check(validation, [(None, wire(5))], by_topic_record)
        await check(validation, [(wire(6), b"raw value")], keys)
        with pytest.raises(RecordValidationError, match="subject u-com.acme.User"):
            await check(validation, [(None, wire(5))], by_topic_record, topic="u")
        with pytest.raises(RecordValidationError, match="has no record name, which RecordNameStrategy needs"):
            await check(validation, [(None, wire(6))], by_record)
        with pytest.raises(RecordValidationError, match="its key is not in Confluent's wire format"):
            await check(validation, [(b"raw key", wire(5))], keys)
    asyncio.run(run())


def test_a_batch_of_thousands_of_bogus_ids_costs_one_round_of_lookups() -> None:
    lookup = Lookup({})
    validation = SchemaValidation(lookup)
    with pytest.raises(RecordValidationError) as caught:
        asyncio.run(check(validation, [(None, wire(1000 + i)) for i in range(3000)]))
    assert len(lookup.asked) == sv.IDS_PER_ROUND
    assert len(caught.value.record_errors) == sv.IDS_PER_ROUND  # the records whose ids were looked up
    assert len(validation._unknown.items) == sv.IDS_PER_ROUND


def test_caches_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sv, "CACHE_ENTRIES", 32)
    lookup = Lookup({i: SchemaFacts(None, frozenset({"t-value"})) for i in range(1, 200)})
    validation = SchemaValidation(lookup)

    async def run() -> None:
        for i in range(1, 200):
            await check(validation, [(None, wire(i)), (None, wire(1000 + i))])
    with pytest.raises(RecordValidationError):
        asyncio.run(run())
    assert len(validation._known.items) <= 32 and len(validation._unknown.items) <= 32


def test_a_new_generation_of_the_registry_drops_cached_answers() -> None:
    lookup = Lookup({})
    validation = SchemaValidation(lookup)

    async def run() -> None:
        with pytest.raises(RecordValidationError):
            await check(validation, [(None, wire(3))])
        lookup.known[3] = SchemaFacts(None, frozenset({"t-value"}))
        lookup.generation += 1
        await check(validation, [(None, wire(3))])
    asyncio.run(run())
    assert lookup.asked == [3, 3]


def test_a_registry_down_is_retriable_and_not_asked_again_at_once() -> None:
    lookup = Lookup({1: SchemaFacts(None, frozenset({"t-value"}))})
    validation = SchemaValidation(lookup)

    async def run() -> None:
        await check(validation, [(None, wire(1))])
        lookup.down = True
        for _ in range(3):
            with pytest.raises(KafkaError) as caught:
                await check(validation, [(None, wire(2))])
            assert caught.value.code == ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert "connection refused" in caught.value.message or "a moment ago" in caught.value.message
        await check(validation, [(None, wire(1))])  # a cached id still validates
    asyncio.run(run())
    assert lookup.asked == [1, 2]


def test_no_registry_is_retriable_too() -> None:
    with pytest.raises(KafkaError) as caught:
        asyncio.run(check(SchemaValidation(None), [(None, wire(1))]))
    assert caught.value.code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert "confluent.schema.registry.url" in caught.value.message


def test_config_values_are_checked() -> None:
    with pytest.raises(KafkaError) as caught:
        LogConfig.from_props({"confluent.value.subject.name.strategy": "TopicNameStrategy"})
    assert caught.value.code == ErrorCode.INVALID_CONFIG
    with pytest.raises(KafkaError):
        LogConfig.from_props({"confluent.key.schema.validation": "yes"})
    from odradek.config import BrokerConfig, ConfigError

    BrokerConfig.from_props({"confluent.schema.registry.url": "http://a:8081, https://user:pw@b"})
    for bad in ("registry:8081", "ftp://a", "http://:8081", "http://a:99999"):
        with pytest.raises(ConfigError, match="confluent.schema.registry.url: Not an http:// or https:// URL"):
            BrokerConfig.from_props({"confluent.schema.registry.url": bad})
    with pytest.raises(ConfigError):
        BrokerConfig.from_props({"confluent.basic.auth.credentials.source": "SASL_INHERIT"})


def test_large_batches_are_scanned_on_a_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past INLINE_RECORDS records, or inflating past INLINE_DECOMPRESSED, a batch is walked on a worker
    thread, with the same verdicts."""
    lookup = Lookup({1: SchemaFacts(None, frozenset({"t-value"}))})
    validation = SchemaValidation(lookup)
    threads: list[object] = []
    real = asyncio.to_thread

    async def counted(func: object, *args: object) -> object:
        threads.append(func)
        return await real(func, *args)  # type: ignore[arg-type]
    monkeypatch.setattr(sv.asyncio, "to_thread", counted)
    many = [(None, wire(1))] * (sv.INLINE_RECORDS + 1)
    inflating = build_batch([(None, wire(1, bytes(2 * sv.INLINE_DECOMPRESSED)))], compression=COMPRESSION_ZSTD)

    async def run() -> None:
        await check(validation, [(None, wire(1))] * 10)
        assert threads == []
        await check(validation, many)
        await validation.check("t", 0, config(), memoryview(inflating))
        assert len(threads) == 2
        with pytest.raises(RecordValidationError) as caught:
            await check(validation, [*many, (None, b"raw")])
        assert caught.value.record_errors == [(len(many), caught.value.record_errors[0][1])]
    asyncio.run(run())
