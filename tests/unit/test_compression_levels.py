"""Kafka's compression.<codec>.level reaching the codecs: higher levels compress better, every level
decodes, the defaults are the Java client's, and LZ4 frames at other levels stay readable by Kafka."""

from __future__ import annotations

import random

import lz4.frame
import pytest

from odradek.protocol.records import (
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    build_batch,
    compress,
    decode_records,
    decompress,
    read_header,
)


def text(size: int = 200_000, seed: int = 7) -> bytes:
    """Compressible but not trivial: words drawn from a small vocabulary."""
    rng = random.Random(seed)
    words = [
        bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10)))
        for _ in range(500)
    ]
    return b" ".join(rng.choice(words) for _ in range(size // 6))[:size]


@pytest.mark.parametrize(
    ("codec", "low", "high"),
    [(COMPRESSION_GZIP, 1, 9), (COMPRESSION_LZ4, 1, 12), (COMPRESSION_ZSTD, -50, 19)],
)
def test_higher_level_compresses_better_and_both_decode(codec: int, low: int, high: int) -> None:
    data = text()
    small, large = compress(codec, data, high), compress(codec, data, low)
    assert len(small) < len(large)
    assert decompress(codec, small) == decompress(codec, large) == data


@pytest.mark.parametrize(
    ("codec", "default"), [(COMPRESSION_GZIP, -1), (COMPRESSION_LZ4, 9), (COMPRESSION_ZSTD, 3)]
)
def test_kafka_default_level_is_the_client_default(codec: int, default: int) -> None:
    data = text(50_000)
    assert compress(codec, data, default) == compress(codec, data)


def test_gzip_default_is_deflate_level_6() -> None:
    data = text(50_000)
    assert compress(COMPRESSION_GZIP, data, -1) == compress(COMPRESSION_GZIP, data, 6)


def test_snappy_has_no_level() -> None:
    data = text(50_000)
    assert compress(COMPRESSION_SNAPPY, data, 5) == compress(COMPRESSION_SNAPPY, data)


@pytest.mark.parametrize("level", [1, 3, 12, 17])
def test_lz4_frame_at_a_level_is_one_kafka_reads(level: int) -> None:
    """Kafka's LZ4 reader wants independent blocks and no content checksum (block checksums it checks)."""
    data = text()
    frame = compress(COMPRESSION_LZ4, data, level)
    info = lz4.frame.get_frame_info(frame)
    assert not info["block_linked"] and not info["content_checksum"]
    assert info["block_size"] == 64 * 1024
    assert lz4.frame.decompress(frame) == data


def test_build_batch_at_a_level() -> None:
    data = text()
    records = [(b"k%d" % i, data[i * 5000 : (i + 1) * 5000]) for i in range(40)]
    low = build_batch(records, compression=COMPRESSION_ZSTD, compression_level=1, timestamp=0)
    high = build_batch(records, compression=COMPRESSION_ZSTD, compression_level=19, timestamp=0)
    assert len(high) < len(low)
    assert read_header(high).compression == COMPRESSION_ZSTD
    assert [(r.key, r.value) for r in decode_records(high)] == [(r.key, r.value) for r in decode_records(low)]
