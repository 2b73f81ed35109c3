"""The `__consumer_offsets` record formats, byte for byte, and group placement by Java's String.hashCode."""

from __future__ import annotations

import struct

import pytest

from odradek.groups.offsets import java_string_hash, kafka_abs, partition_for, replay
from odradek.groups.schemas import (
    GroupKey,
    GroupValue,
    MemberValue,
    OffsetKey,
    OffsetValue,
    SchemaError,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_key,
    encode_group_value,
    encode_offset_key,
    encode_offset_value,
    group_records,
    offset_records,
)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def s(v: str) -> bytes:
    return i16(len(v.encode())) + v.encode()


# ---- keys ---------------------------------------------------------------------------------------

OFFSET_KEY_BYTES = b"\x00\x01" + b"\x00\x02g1" + b"\x00\x01t" + b"\x00\x00\x00\x03"
GROUP_KEY_BYTES = b"\x00\x02" + b"\x00\x02g1"


def test_offset_key_fixture() -> None:
    assert encode_offset_key(OffsetKey("g1", "t", 3)) == OFFSET_KEY_BYTES
    assert decode_key(OFFSET_KEY_BYTES) == OffsetKey("g1", "t", 3)


def test_offset_key_version_0_reads_the_same() -> None:
    v0 = b"\x00\x00" + OFFSET_KEY_BYTES[2:]
    assert encode_offset_key(OffsetKey("g1", "t", 3), version=0) == v0
    assert decode_key(v0) == OffsetKey("g1", "t", 3)


def test_group_key_fixture() -> None:
    assert encode_group_key(GroupKey("g1")) == GROUP_KEY_BYTES
    assert decode_key(GROUP_KEY_BYTES) == GroupKey("g1")


def test_unknown_key_version_is_skipped_not_an_error() -> None:
    assert decode_key(b"\x00\x07" + s("whatever")) is None


def test_utf8_names() -> None:
    key = OffsetKey("grüppe", "tópico", 0)
    raw = encode_offset_key(key)
    assert raw[2:4] == i16(len("grüppe".encode()))
    assert decode_key(raw) == key


def test_truncated_and_trailing_bytes_rejected() -> None:
    with pytest.raises(SchemaError):
        decode_key(OFFSET_KEY_BYTES[:-1])
    with pytest.raises(SchemaError):
        decode_key(OFFSET_KEY_BYTES + b"\x00")


# ---- offset values ------------------------------------------------------------------------------


def test_offset_value_v3_fixture() -> None:
    value = OffsetValue(offset=42, metadata="m", commit_timestamp=1000, leader_epoch=5)
    expected = b"\x00\x03" + b"\x00" * 7 + b"\x2a" + b"\x00\x00\x00\x05" + b"\x00\x01m" + b"\x00" * 6 + b"\x03\xe8"
    assert encode_offset_value(value) == expected
    assert decode_offset_value(expected) == value


def test_offset_value_v1_when_expire_timestamp_set() -> None:
    value = OffsetValue(offset=7, metadata="", commit_timestamp=1000, expire_timestamp=2000)
    expected = i16(1) + i64(7) + i16(0) + i64(1000) + i64(2000)
    assert encode_offset_value(value) == expected
    assert decode_offset_value(expected) == value


@pytest.mark.parametrize("version", [0, 2])
def test_offset_value_v0_v2(version: int) -> None:
    raw = i16(version) + i64(9) + s("meta") + i64(123)
    assert decode_offset_value(raw) == OffsetValue(9, "meta", 123, -1, -1)
    assert encode_offset_value(OffsetValue(9, "meta", 123), version=version) == raw


def test_offset_tombstone() -> None:
    assert decode_offset_value(None) is None


def test_unknown_offset_value_version() -> None:
    with pytest.raises(SchemaError):
        decode_offset_value(i16(9) + i64(1))


# ---- group values -------------------------------------------------------------------------------

MEMBER = MemberValue(member_id="m1", client_id="c", client_host="/h", session_timeout=10000,
                     rebalance_timeout=300000, subscription=b"\x01", assignment=b"\x02\x03")


def _group(members: list[MemberValue]) -> GroupValue:
    return GroupValue(protocol_type="consumer", generation=2, protocol="range", leader="m1",
                      current_state_timestamp=1000, members=members)


def test_group_value_v3_fixture() -> None:
    member = MemberValue(**{**_asdict(MEMBER), "group_instance_id": "i-1"})
    expected = (
        i16(3) + s("consumer") + i32(2) + s("range") + s("m1") + i64(1000) + i32(1)
        + s("m1") + s("i-1") + s("c") + s("/h") + i32(300000) + i32(10000)
        + i32(1) + b"\x01" + i32(2) + b"\x02\x03"
    )
    # spelled out once more in raw hex, so the helpers above cannot hide a mistake
    assert expected.hex() == (
        "0003" "0008636f6e73756d6572" "00000002" "000572616e6765" "00026d31" "00000000000003e8" "00000001"
        "00026d31" "0003692d31" "000163" "00022f68" "000493e0" "00002710" "0000000101" "000000020203"
    )
    assert encode_group_value(_group([member])) == expected
    assert decode_group_value(expected) == _group([member])


def test_group_value_v0_has_no_timestamp_instance_or_rebalance_timeout() -> None:
    expected = (
        i16(0) + s("consumer") + i32(2) + s("range") + s("m1") + i32(1)
        + s("m1") + s("c") + s("/h") + i32(10000) + i32(1) + b"\x01" + i32(2) + b"\x02\x03"
    )
    assert encode_group_value(_group([MEMBER]), version=0) == expected
    decoded = decode_group_value(expected)
    assert decoded is not None
    assert decoded.current_state_timestamp == -1
    assert decoded.members[0].rebalance_timeout == 10000  # v0: the session timeout stands in


@pytest.mark.parametrize("version", [1, 2, 3])
def test_group_value_round_trip(version: int) -> None:
    value = _group([MEMBER, MemberValue("m2", "c2", "/h2", 6000, 6000, b"", b"")])
    decoded = decode_group_value(encode_group_value(value, version=version))
    assert decoded is not None
    assert [m.member_id for m in decoded.members] == ["m1", "m2"]
    assert decoded.members[0].subscription == b"\x01"
    assert decoded.members[0].assignment == b"\x02\x03"
    assert decoded.members[0].rebalance_timeout == 300000
    assert decoded.current_state_timestamp == (1000 if version >= 2 else -1)


def test_empty_group_value_has_null_protocol_and_leader() -> None:
    value = GroupValue("consumer", 5, None, None, 77, [])
    raw = encode_group_value(value)
    assert raw == i16(3) + s("consumer") + i32(5) + i16(-1) + i16(-1) + i64(77) + i32(0)
    assert decode_group_value(raw) == value


def test_group_tombstone() -> None:
    assert decode_group_value(None) is None


def _asdict(m: MemberValue) -> dict:
    return {f: getattr(m, f) for f in MemberValue.__slots__}


# ---- replay -------------------------------------------------------------------------------------


def _commit(group: str, topic: str, partition: int, offset: int | None) -> tuple[bytes, bytes | None]:
    value = None if offset is None else encode_offset_value(OffsetValue(offset, "", 1))
    return encode_offset_key(OffsetKey(group, topic, partition)), value


def test_replay_later_records_win_and_tombstones_delete() -> None:
    records = [
        _commit("g", "t", 0, 5),
        _commit("g", "t", 1, 7),
        _commit("g", "t", 0, 9),
        _commit("g", "t", 1, None),
        (encode_group_key(GroupKey("g")), encode_group_value(_group([MEMBER]))),
        _commit("gone", "t", 0, 1),
        _commit("gone", "t", 0, None),
        (encode_group_key(GroupKey("dead")), encode_group_value(_group([]))),
        (encode_group_key(GroupKey("dead")), None),
        (b"\x00\x09junk", b"ignored"),
        (encode_offset_key(OffsetKey("bad", "t", 0)), b"\x00"),  # malformed value: skipped
    ]
    loaded = replay(records)
    assert set(loaded) == {"g"}
    assert {tp: v.offset for tp, v in loaded["g"].offsets.items()} == {("t", 0): 9}
    assert loaded["g"].metadata is not None and loaded["g"].metadata.generation == 2


def test_record_builders_write_what_replay_reads() -> None:
    records = offset_records("g", {("t", 0): OffsetValue(4, "m", 1), ("t", 1): None})
    records += group_records("g", _group([MEMBER])) + group_records("h", None)
    assert records[1] == (encode_offset_key(OffsetKey("g", "t", 1)), None)
    assert records[-1] == (encode_group_key(GroupKey("h")), None)
    loaded = replay(records)
    assert loaded["g"].offsets == {("t", 0): OffsetValue(4, "m", 1)} and loaded["g"].metadata == _group([MEMBER])


# ---- placement ----------------------------------------------------------------------------------


def _reference_hash(text: str) -> int:
    """String.hashCode by its definition: sum of s[i] * 31^(n-1-i) over UTF-16 units, as int32."""
    data = text.encode("utf-16-be")
    units = [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]
    total = sum(u * 31 ** (len(units) - 1 - i) for i, u in enumerate(units)) % (1 << 32)
    return total - (1 << 32) if total >= 1 << 31 else total


@pytest.mark.parametrize("text", ["", "a", "hello", "my-group", "console-consumer-12345", "grüppe", "😀x"])
def test_java_hash_matches_definition(text: str) -> None:
    assert java_string_hash(text) == _reference_hash(text)


def test_java_hash_known_values() -> None:
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == -(1 << 31)


def test_partition_uses_kafka_utils_abs() -> None:
    assert partition_for("hello", 50) == 99162322 % 50
    # Integer.MIN_VALUE: Utils.abs gives 0
    assert kafka_abs(-(1 << 31)) == 0
    assert partition_for("polygenelubricants", 50) == 0
    # Other negative hashes: plain absolute value (not n & 0x7fffffff)
    negative = next(f"group-{i}" for i in range(1000) if java_string_hash(f"group-{i}") < 0)
    h = java_string_hash(negative)
    assert partition_for(negative, 50) == (-h) % 50
    assert all(0 <= partition_for(f"g{i}", 7) < 7 for i in range(200))
