"""Frames and request headers: the 4-byte size prefix, its limits, header v1 and v2 (tagged fields), null
client ids, truncated input, and the unsigned varints of flexible versions; requests encoded by kafka-python."""

from __future__ import annotations

import struct
import tracemalloc

import pytest
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest

from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.framing import (
    FrameDecoder,
    FrameError,
    frame_chunks,
    parse_request_header,
    peek_api,
    read_uvarint,
    response_header,
    skip_tagged_fields,
    write_uvarint,
)


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def header(api_key: int, version: int, correlation: int, client_id: bytes | None) -> bytes:
    if client_id is None:
        return struct.pack(">hhih", api_key, version, correlation, -1)
    return struct.pack(">hhih", api_key, version, correlation, len(client_id)) + client_id


# --- the size prefix ------------------------------------------------------------------------------


def test_frames_split_at_their_size_prefix_whatever_the_chunking() -> None:
    payloads = [b"first", b"", b"x" * 300, b"last"]
    stream = b"".join(framed(p) for p in payloads)
    whole = FrameDecoder(max_frame_size=1000)
    assert [bytes(f) for f in whole.feed(stream)] == payloads
    assert whole.buffered == 0
    trickled = FrameDecoder(max_frame_size=1000)
    got = [bytes(f) for i in range(len(stream)) for f in trickled.feed(stream[i : i + 1])]
    assert got == payloads


def test_a_partial_frame_stays_buffered_until_complete() -> None:
    d = FrameDecoder(max_frame_size=100)
    data = framed(b"0123456789")
    assert d.feed(data[:2]) == []  # not even the whole size prefix
    assert d.feed(data[2:9]) == []
    assert d.buffered == 9
    assert [bytes(f) for f in d.feed(data[9:] + data[:6])] == [b"0123456789"]
    assert d.buffered == 6  # the start of the next frame


def test_frames_do_not_change_when_more_bytes_arrive() -> None:
    d = FrameDecoder(max_frame_size=100)
    (frame,) = d.feed(framed(b"abc") + b"\x00\x00")
    d.feed(b"\x00\x03xyz")
    assert bytes(frame) == b"abc"


def test_a_large_frame_is_copied_out_of_the_buffer_once() -> None:
    # the buffer plus one copy of the frame: the live fuzz run saw an 82 MB request cost three times its size
    d = FrameDecoder(max_frame_size=64 << 20)
    size = 16 << 20
    d.feed(struct.pack(">i", size) + b"x" * (size - 1))
    tracemalloc.start()
    try:
        (frame,) = d.feed(b"y")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(frame) == size and frame[-1] == ord("y")
    assert peak < 2.5 * size  # growing the buffer by the last read may move it: one more copy


def test_a_reserved_large_frame_is_read_into_a_buffer_of_its_size() -> None:
    # issue #36 observation 8: the read buffer and the copy out of it held every 100 MB request twice
    d = FrameDecoder(max_frame_size=64 << 20)
    size = 16 << 20
    first = framed(b"small")
    assert d.feed(first + struct.pack(">i", size) + b"a" * 1000) == [memoryview(b"small")]
    middle, end = b"b" * (size - 2000), b"c" * 1000 + framed(b"next")[:6]
    tracemalloc.start()
    try:
        d.reserve()
        assert d.partial_frame_size == 4 + size and d.buffered == 4 + 1000
        assert d.feed(middle) == []
        (frame,) = d.feed(end)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(frame) == size and frame.readonly
    assert bytes(frame[:1000]) == b"a" * 1000 and frame[-1] == ord("c") and frame[1000] == ord("b")
    assert peak < 1.2 * size  # one buffer of the frame's size, nothing more
    assert d.feed(framed(b"next")[6:]) == [memoryview(b"next")]


def test_a_small_frame_is_not_reserved() -> None:
    d = FrameDecoder(max_frame_size=100)
    d.feed(struct.pack(">i", 10) + b"abc")
    d.reserve()
    assert d.buffered == 7 and [bytes(f) for f in d.feed(b"defghij")] == [b"abcdefghij"]


@pytest.mark.parametrize("size", [-1, -5, -(2**31)])
def test_negative_size_is_a_frame_error(size: int) -> None:
    with pytest.raises(FrameError, match=f"negative frame size {size}"):
        FrameDecoder(max_frame_size=100).feed(struct.pack(">i", size))


def test_size_limit_is_inclusive_and_checked_before_the_body_arrives() -> None:
    assert [bytes(f) for f in FrameDecoder(max_frame_size=8).feed(framed(b"12345678"))] == [b"12345678"]
    with pytest.raises(FrameError, match=r"frame of 9 bytes is larger than socket.request.max.bytes \(8\)"):
        FrameDecoder(max_frame_size=8).feed(struct.pack(">i", 9))  # only the prefix: refused at once


def test_the_limit_may_change_between_feeds_and_names_its_key() -> None:
    decoder = FrameDecoder(max_frame_size=100)
    decoder.set_limit(8, "sasl.server.max.receive.size")  # before authentication
    assert [bytes(f) for f in decoder.feed(framed(b"12345678"))] == [b"12345678"]
    with pytest.raises(FrameError, match=r"frame of 9 bytes is larger than sasl.server.max.receive.size \(8\)"):
        FrameDecoder(8, "sasl.server.max.receive.size").feed(struct.pack(">i", 9))
    decoder.set_limit(100, "socket.request.max.bytes")  # authenticated
    assert [bytes(f) for f in decoder.feed(framed(b"x" * 50))] == [b"x" * 50]
    assert decoder.buffered == 0


def test_frame_chunks_prefix_the_total_size() -> None:
    chunks: list[bytes | memoryview] = [b"ab", memoryview(b"cde"), b""]
    out = frame_chunks(chunks)
    assert out[0] == struct.pack(">i", 5) and out[1:] == chunks


def test_response_headers_v0_and_v1() -> None:
    assert response_header(7, flexible=False) == struct.pack(">i", 7)
    assert response_header(7, flexible=True) == struct.pack(">i", 7) + b"\x00"  # no tagged fields


# --- request headers ------------------------------------------------------------------------------


def test_header_v1_of_a_request_encoded_by_kafka_python() -> None:
    request = MetadataRequest[4](topics=["a"], allow_auto_topic_creation=False)
    request.with_header(correlation_id=41, client_id="client-é")
    frame = memoryview(bytes(request.encode(header=True)))
    h = parse_request_header(frame, flexible=False)
    assert (h.api_key, h.api_version, h.correlation_id, h.client_id) == (3, 4, 41, "client-é")
    body = MetadataRequest[4].decode(bytes(frame[h.body_offset :]))
    assert [t.name for t in body.topics] == ["a"] and body.allow_auto_topic_creation is False


def test_header_v2_of_a_flexible_request_encoded_by_kafka_python() -> None:
    request = ApiVersionsRequest[3](client_software_name="odradek-test", client_software_version="1.0")
    request.with_header(correlation_id=5, client_id="c")
    frame = memoryview(bytes(request.encode(header=True)))
    h = parse_request_header(frame, flexible=True)
    assert (h.api_key, h.api_version, h.correlation_id, h.client_id) == (18, 3, 5, "c")
    body = ApiVersionsRequest[3].decode(bytes(frame[h.body_offset :]))
    assert body.client_software_name == "odradek-test"


def test_header_v2_skips_tagged_fields_of_any_size() -> None:
    tags = write_uvarint(2) + write_uvarint(0) + write_uvarint(3) + b"abc" + write_uvarint(9) + write_uvarint(200)
    tags += b"z" * 200
    frame = memoryview(header(18, 3, 1, b"c") + tags + b"BODY")
    h = parse_request_header(frame, flexible=True)
    assert bytes(frame[h.body_offset :]) == b"BODY"


def test_header_of_an_unknown_version_is_read_as_v1() -> None:
    frame = memoryview(header(3, 99, 8, b"c") + b"\x00rest")
    h = parse_request_header(frame, flexible=None)
    assert (h.api_version, h.body_offset) == (99, 11)  # the tag byte is left to the body


def test_null_and_empty_client_ids() -> None:
    assert parse_request_header(memoryview(header(3, 1, 2, None)), flexible=False).client_id is None
    assert parse_request_header(memoryview(header(3, 1, 2, b"")), flexible=False).client_id == ""


def test_peek_reads_the_fields_every_header_version_shares() -> None:
    assert peek_api(memoryview(struct.pack(">hhi", 7, 0, 99))) == (7, 0, 99)
    with pytest.raises(FrameError, match="too short"):
        peek_api(memoryview(struct.pack(">hh", 7, 0)))


@pytest.mark.parametrize("cut", range(10))
def test_header_shorter_than_its_fixed_fields(cut: int) -> None:
    with pytest.raises(FrameError, match="too short for a request header"):
        parse_request_header(memoryview(header(3, 1, 2, None)[:cut]), flexible=False)


def test_client_id_past_the_end_of_the_frame() -> None:
    with pytest.raises(FrameError, match="client_id runs past the end"):
        parse_request_header(memoryview(header(3, 1, 2, b"client")[:-1]), flexible=False)


@pytest.mark.parametrize("tags", [
    b"",  # no tag count at all
    b"\x01",  # one field, no tag
    b"\x01\x00",  # no size
    b"\x01\x00\x05abc",  # shorter than its size
    b"\x80",  # a varint that never ends
])
def test_truncated_tagged_fields_are_invalid_requests(tags: bytes) -> None:
    with pytest.raises(KafkaError) as info:
        parse_request_header(memoryview(header(18, 3, 1, b"c") + tags), flexible=True)
    assert info.value.code == ErrorCode.INVALID_REQUEST


# --- unsigned varints -----------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 16383, 16384, 2**31 - 1, 2**35 - 1])
def test_uvarint_round_trip(value: int) -> None:
    encoded = write_uvarint(value)
    assert read_uvarint(b"\xff" + encoded + b"\xff", 1) == (value, 1 + len(encoded))


def test_uvarint_longer_than_five_bytes_is_refused() -> None:
    with pytest.raises(KafkaError, match="varint too long"):
        read_uvarint(b"\xff" * 6 + b"\x01", 0)


def test_skip_tagged_fields_returns_the_position_after_them() -> None:
    data = b"\x01\x05\x02hi" + b"after"
    assert data[skip_tagged_fields(data, 0) :] == b"after"
