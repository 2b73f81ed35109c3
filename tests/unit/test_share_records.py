"""Kafka's `__share_group_state` record formats (`odradek.groups.share_records`): keys and values round
trip, bytes laid out as Kafka's generated serde lays them out, hostile bytes raise SchemaError only,
and the merge of an update's batches over a snapshot's."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.groups import share_records as rec
from odradek.groups.schemas import SchemaError
from odradek.groups.share_partition import RecordState, StateBatch
from odradek.groups.share_state import ShareKey
from odradek.groups.share_state_coordinator import coordinator_key, parse_coordinator_key

TOPIC = bytes(range(16))
KEY = ShareKey("grp", TOPIC, 7)
A, K, X = RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED


def test_key_layout_and_round_trip() -> None:
    raw = rec.encode_key(rec.SHARE_UPDATE, KEY)
    assert raw == struct.pack(">hh", 1, 3) + b"grp" + TOPIC + struct.pack(">i", 7)
    assert rec.decode_key(raw) == (rec.SHARE_UPDATE, KEY)
    assert rec.decode_key(rec.encode_key(rec.SHARE_SNAPSHOT, KEY)) == (rec.SHARE_SNAPSHOT, KEY)
    assert rec.decode_key(struct.pack(">h", 9) + b"whatever") is None  # a type of a later Kafka: skipped


def test_snapshot_layout_and_round_trip() -> None:
    value = rec.ShareStateValue(3, 5, 100, (StateBatch(100, 104, A, 2), StateBatch(105, 105, X, 1)), 1, 11, 12)
    raw = rec.encode_snapshot(value)
    head = struct.pack(">hHiiqqq", 0, 3, 1, 5, 100, 11, 12)
    batch = struct.pack(">qqbh", 100, 104, 0, 2) + b"\x00"
    assert raw.startswith(head + b"\x03" + batch)  # compact array of 2, each batch closed by its tags
    assert raw.endswith(b"\x00")
    assert rec.decode_snapshot(raw) == value


def test_update_round_trip_and_unknown_tags_skipped() -> None:
    value = rec.ShareStateValue(2, 9, -1, (StateBatch(0, 0, K, 1),))
    raw = rec.encode_update(value)
    assert rec.decode_update(raw) == value
    tagged = raw[:-1] + b"\x01\x00\x04" + struct.pack(">i", 42)  # DeliveryCompleteCount-like tag 0
    assert rec.decode_update(tagged) == value


@pytest.mark.parametrize("raw", [
    b"", b"\x00", b"\x00\x01", b"\x00\x00\x00\x01",  # a version Odradek does not know, then too short
    rec.encode_update(rec.ShareStateValue(0, 0, 0, (StateBatch(0, 1, A, 1),)))[:-3],
    rec.encode_update(rec.ShareStateValue(0, 0, 0, ())) + b"junk",
])
def test_malformed_values_raise_schema_error(raw: bytes) -> None:
    for decode in (rec.decode_update, rec.decode_snapshot):
        with pytest.raises(SchemaError):
            decode(raw)


def test_bad_batches_are_refused() -> None:
    good = rec.encode_update(rec.ShareStateValue(0, 0, 0, (StateBatch(5, 6, A, 1),)))
    pos = good.index(struct.pack(">qq", 5, 6))
    backwards = good[:pos] + struct.pack(">qq", 6, 5) + good[pos + 16:]
    bad_state = good[:pos + 16] + b"\x07" + good[pos + 17:]
    for raw in (backwards, bad_state):
        with pytest.raises(SchemaError):
            rec.decode_update(raw)
    acquired = good[:pos + 16] + b"\x01" + good[pos + 17:]  # ACQUIRED is stored as available
    assert rec.decode_update(acquired).batches == (StateBatch(5, 6, A, 1),)


@given(st.binary(max_size=200))
def test_hostile_bytes_raise_only_schema_error(raw: bytes) -> None:
    for decode in (rec.decode_key, rec.decode_update, rec.decode_snapshot):
        try:
            decode(raw)
        except SchemaError:
            pass


@given(st.binary(max_size=60))
def test_hostile_bytes_after_a_valid_prefix(tail: bytes) -> None:
    for prefix, decode in ((struct.pack(">hH", 0, 1), rec.decode_update), (struct.pack(">hh", 0, 1), rec.decode_key)):
        try:
            decode(prefix + tail)
        except SchemaError:
            pass


def test_merge_lays_new_batches_over_old_and_prunes_below_the_start() -> None:
    old = (StateBatch(10, 19, A, 1), StateBatch(20, 29, K, 1))
    new = (StateBatch(12, 13, X, 2), StateBatch(25, 31, A, 3))
    assert rec.merge_batches(old, new, 11) == (
        StateBatch(11, 11, A, 1), StateBatch(12, 13, X, 2), StateBatch(14, 19, A, 1), StateBatch(20, 24, K, 1),
        StateBatch(25, 31, A, 3))
    assert rec.merge_batches(old, (), 30) == ()


def test_coordinator_key_is_kafkas() -> None:
    key = coordinator_key(KEY)
    assert key == "grp:AAECAwQFBgcICQoLDA0ODw:7"  # Uuid.toString(): URL-safe base64 without padding
    assert parse_coordinator_key(key) == KEY
    assert parse_coordinator_key("a:b:c:" + key.split(":", 1)[1]) == ShareKey("a:b:c", TOPIC, 7)
    for bad in ("", "grp", "grp:x:1", ":AAECAwQFBgcICQoLDA0ODw:1", "grp:AAECAwQFBgcICQoLDA0ODw:-1",
                "grp:AAECAwQFBgcICQoLDA0ODw:x", "grp:AAECAwQFBgcICQoLDA:1"):
        assert parse_coordinator_key(bad) is None, bad
