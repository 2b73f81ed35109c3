"""compression.<codec>.level end to end: a real broker, a real client producing uncompressed batches to
topics whose compression.type makes the broker recompress them, the stored log read back with odradek's
own records module. The level set on the topic (or inherited from server.properties) is the one the
stored batches were compressed at; higher levels store less; consumers read back identical data; levels
outside Kafka's ranges are refused at CreateTopics, AlterConfigs and start-up."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from odradek.protocol.records import (
    BATCH_OVERHEAD,
    COMPRESSION_CODECS,
    compress,
    decode_records,
    decompress,
    iter_batches,
)
from tests.clients import admin, consume_all, create_topic, produce, unique_name
from tests.harness import BrokerProcess, run_cli

# a client that does not compress: every batch it sends is recompressed by the broker
PLAIN = {"compression.type": "none", "linger.ms": 200, "batch.size": 1_000_000}


def weblog_lines(n: int = 400, seed: int = 11) -> list[bytes]:
    """Compressible, deterministic records that look like access-log lines."""
    rng = random.Random(seed)
    paths = [f"/api/v1/{rng.choice(['users', 'orders', 'items', 'carts'])}/{i}" for i in range(60)]
    agents = ["Mozilla/5.0 (X11; Linux x86_64)", "curl/8.5.0", "python-requests/2.31", "Go-http-client/1.1"]
    return [
        (
            f"10.{rng.randint(0, 3)}.{rng.randint(0, 255)}.{rng.randint(1, 254)} - - [12/Mar/2024:10:{i % 60:02d}:"
            f'{rng.randint(0, 59):02d} +0000] "{rng.choice(["GET", "POST"])} {rng.choice(paths)} HTTP/1.1" '
            f'{rng.choice([200, 200, 200, 304, 404, 500])} {rng.randint(100, 9000)} "{rng.choice(agents)}" '
            f"session={rng.randint(1000, 1200)} region={rng.choice(['eu-west-1', 'us-east-1'])}"
        ).encode()
        for i in range(n)
    ]


def stored_batches(log_dir: Path, topic: str) -> list[tuple[int, bytes, bytes]]:
    """(codec, stored records payload, the whole batch) of every batch in partition 0's segments."""
    out = []
    for segment in sorted((log_dir / f"{topic}-0").glob("*.log")):
        data = segment.read_bytes()
        for pos, header in iter_batches(data):
            batch = data[pos : pos + header.size]
            out.append((header.compression, batch[BATCH_OVERHEAD:], batch))
    return out


def stored_size(log_dir: Path, topic: str) -> int:
    return sum(p.stat().st_size for p in (log_dir / f"{topic}-0").glob("*.log"))


def compressed_at(codec: int, payload: bytes, level: int) -> bool:
    """Whether the stored payload is exactly the batch's records compressed at `level`."""
    return compress(codec, decompress(codec, payload), level) == payload


def produce_and_check(broker: BrokerProcess, topic: str, codec_name: str, lines: list[bytes]) -> list[bytes]:
    """Produce `lines` uncompressed; check the stored codec and the records stored and consumed; the
    stored payloads."""
    produce(broker.bootstrap, topic, lines, partition=0, **PLAIN)
    batches = stored_batches(broker.log_dir, topic)
    assert batches and all(codec == COMPRESSION_CODECS[codec_name] for codec, _, _ in batches)
    assert [r.value for _, _, batch in batches for r in decode_records(batch)] == lines
    assert [m.value() for m in consume_all(broker.bootstrap, topic, len(lines))] == lines
    return [payload for _, payload, _ in batches]


# the levels compared, low then high
LEVELS = {"gzip": (1, 9), "lz4": (1, 12), "zstd": (-20, 19)}


@pytest.mark.parametrize("codec_name", ["gzip", "lz4", "zstd"])
def test_topic_level_is_applied_when_the_broker_recompresses(broker: BrokerProcess, codec_name: str) -> None:
    codec = COMPRESSION_CODECS[codec_name]
    low, high = LEVELS[codec_name]
    lines = weblog_lines()
    sizes = {}
    for level in (low, high):
        topic = unique_name(f"{codec_name}{level}")
        create_topic(
            broker.bootstrap,
            topic,
            config={"compression.type": codec_name, f"compression.{codec_name}.level": str(level)},
        )
        assert all(
            compressed_at(codec, p, level) for p in produce_and_check(broker, topic, codec_name, lines)
        )
        sizes[level] = stored_size(broker.log_dir, topic)
    assert sizes[high] < sizes[low], sizes


def test_level_altered_on_a_topic_applies_to_the_next_batches(broker: BrokerProcess) -> None:
    topic = unique_name("alter-level")
    create_topic(broker.bootstrap, topic, config={"compression.type": "gzip", "compression.gzip.level": "1"})
    gzip = COMPRESSION_CODECS["gzip"]
    lines = weblog_lines(100)
    assert all(compressed_at(gzip, p, 1) for p in produce_and_check(broker, topic, "gzip", lines))
    res = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("compression.gzip.level", "9", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin(broker.bootstrap).incremental_alter_configs([res])[res].result(10)
    produce(broker.bootstrap, topic, lines, partition=0, **PLAIN)
    first, *_, last = [payload for _, payload, _ in stored_batches(broker.log_dir, topic)]
    assert compressed_at(gzip, first, 1) and not compressed_at(gzip, first, 9)
    assert compressed_at(gzip, last, 9) and not compressed_at(gzip, last, 1)


@pytest.mark.parametrize(
    ("config_name", "value"),
    [
        ("compression.gzip.level", "0"),
        ("compression.gzip.level", "10"),
        ("compression.lz4.level", "18"),
        ("compression.zstd.level", "23"),
        ("compression.zstd.level", "-131073"),
    ],
)
def test_levels_outside_kafkas_ranges_are_invalid_config(
    broker: BrokerProcess, config_name: str, value: str
) -> None:
    a = admin(broker.bootstrap)
    topic = unique_name("badlevel")
    with pytest.raises(KafkaException) as info:
        a.create_topics([NewTopic(topic, 1, 1, config={config_name: value})])[topic].result(20)
    assert "INVALID_CONFIG" in str(info.value)
    a.create_topics([NewTopic(topic, 1, 1)])[topic].result(20)
    res = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[ConfigEntry(config_name, value, incremental_operation=AlterConfigOpType.SET)],
    )
    with pytest.raises(KafkaException) as info:
        a.incremental_alter_configs([res])[res].result(10)
    assert "INVALID_CONFIG" in str(info.value)


@pytest.fixture
def gzip9_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker whose server.properties make every topic gzip at level 9 by default."""
    b = BrokerProcess(
        tmp_path_factory.mktemp("gzip9"),
        overrides={"compression.type": "gzip", "compression.gzip.level": "9"},
    )
    b.start()
    try:
        yield b
    finally:
        b.stop()
        b.kill()


def test_server_level_is_the_topic_default(gzip9_broker: BrokerProcess) -> None:
    inherits, overrides = unique_name("inherits"), unique_name("overrides")
    create_topic(gzip9_broker.bootstrap, inherits)
    create_topic(gzip9_broker.bootstrap, overrides, config={"compression.gzip.level": "1"})
    gzip = COMPRESSION_CODECS["gzip"]
    lines = weblog_lines(200)
    assert all(compressed_at(gzip, p, 9) for p in produce_and_check(gzip9_broker, inherits, "gzip", lines))
    assert all(compressed_at(gzip, p, 1) for p in produce_and_check(gzip9_broker, overrides, "gzip", lines))
    assert stored_size(gzip9_broker.log_dir, inherits) < stored_size(gzip9_broker.log_dir, overrides)


def test_server_level_outside_kafkas_range_stops_start_up_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text(f"log.dirs={tmp_path / 'data'}\ncompression.zstd.level=23\n")
    result = run_cli("server-start", str(config), timeout=30)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "Error: Invalid value 23 for configuration compression.zstd.level: Value must be no more than 22"
    ]
