"""The sans-io client codec against the broker's own framing: requests it encodes parse as the broker
parses them, responses framed as the broker frames them decode, in pieces or several at a time; broken
streams raise clear errors. Plus the asyncio transport against a small scripted server."""

from __future__ import annotations

import asyncio
import random
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from kafka.protocol.admin import CreateTopicsRequest, CreateTopicsResponse
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer import FetchRequest, FetchResponse
from kafka.protocol.consumer.group import OffsetDeleteRequest, OffsetDeleteResponse
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse
from kafka.protocol.producer import ProduceRequest

from odradek.protocol.client import (
    ClientCodec,
    ConnectionLost,
    CorrelationMismatch,
    MalformedResponse,
    ProtocolError,
)
from odradek.protocol.framing import (
    FrameAssembler,
    FrameDecoder,
    frame_chunks,
    parse_request_header,
    response_header,
)
from odradek.protocol.transport import AsyncConnection
from odradek.server.dispatcher import APIS


def metadata_pair() -> tuple[ApiMessage, ApiMessage]:
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")], allow_auto_topic_creation=False)
    b = MetadataResponse.MetadataResponseBroker
    t = MetadataResponse.MetadataResponseTopic
    resp = MetadataResponse(throttle_time_ms=0, brokers=[b(node_id=1, host="h", port=9092, rack=None)],
                            cluster_id="c", controller_id=1,
                            topics=[t(error_code=0, name="t", is_internal=False, partitions=[])])
    return req, resp


def fetch_pair() -> tuple[ApiMessage, ApiMessage]:
    part = FetchRequest.FetchTopic.FetchPartition
    req = FetchRequest(replica_id=2, max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                       session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
                       topics=[FetchRequest.FetchTopic(topic="t", partitions=[part(
                           partition=0, current_leader_epoch=3, fetch_offset=7, last_fetched_epoch=3,
                           log_start_offset=0, partition_max_bytes=1 << 20)])])
    data = FetchResponse.FetchableTopicResponse.PartitionData
    resp = FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, responses=[
        FetchResponse.FetchableTopicResponse(topic="t", partitions=[data(
            partition_index=0, error_code=0, high_watermark=9, last_stable_offset=9, log_start_offset=0,
            aborted_transactions=[], preferred_read_replica=-1, records=b"\x01" * 300)])])
    return req, resp


def create_topics_pair() -> tuple[ApiMessage, ApiMessage]:
    topic = CreateTopicsRequest.CreatableTopic(name="new", num_partitions=3, replication_factor=1,
                                               assignments=[], configs=[])
    req = CreateTopicsRequest(topics=[topic], timeout_ms=5000, validate_only=False)
    result = CreateTopicsResponse.CreatableTopicResult
    resp = CreateTopicsResponse(throttle_time_ms=0, topics=[result(
        name="new", error_code=0, error_message=None, num_partitions=3, replication_factor=1, configs=[])])
    return req, resp


def offset_delete_pair() -> tuple[ApiMessage, ApiMessage]:
    topic = OffsetDeleteRequest.OffsetDeleteRequestTopic
    req = OffsetDeleteRequest(group_id="g", topics=[topic(
        name="t", partitions=[topic.OffsetDeleteRequestPartition(partition_index=0)])])
    rtopic = OffsetDeleteResponse.OffsetDeleteResponseTopic
    resp = OffsetDeleteResponse(error_code=0, throttle_time_ms=0, topics=[rtopic(
        name="t", partitions=[rtopic.OffsetDeleteResponsePartition(partition_index=0, error_code=0)])])
    return req, resp


def api_versions_pair() -> tuple[ApiMessage, ApiMessage]:
    req = ApiVersionsRequest(client_software_name="odradek-test", client_software_version="1")
    key = ApiVersionsResponse.ApiVersion
    resp = ApiVersionsResponse(error_code=0, throttle_time_ms=0, api_keys=[
        key(api_key=0, min_version=3, max_version=12), key(api_key=18, min_version=0, max_version=4)])
    return req, resp


PAIRS: dict[str, Callable[[], tuple[ApiMessage, ApiMessage]]] = {
    "metadata": metadata_pair, "fetch": fetch_pair, "create_topics": create_topics_pair,
    "offset_delete": offset_delete_pair, "api_versions": api_versions_pair,
}
CASES = [  # (pair, version, flexible request)
    ("metadata", 1, False), ("metadata", 9, True), ("metadata", 12, True),
    ("fetch", 11, False), ("fetch", 12, True),
    ("create_topics", 4, False), ("create_topics", 5, True),
    ("offset_delete", 0, False),
    ("api_versions", 0, False), ("api_versions", 2, False), ("api_versions", 3, True),
]


def broker_parse(frame: bytes) -> tuple[Any, Any]:
    """What the broker makes of one request frame: its header and its decoded body."""
    frames = FrameDecoder(1 << 20).feed(frame)
    assert len(frames) == 1
    api_key, version = struct.unpack_from(">hh", frames[0], 0)
    api = APIS[api_key]
    header = parse_request_header(frames[0], api.flexible(version))
    return header, api.decode(version, frames[0][header.body_offset:])


def broker_answer(correlation_id: int, response: ApiMessage, version: int) -> bytes:
    """A response frame as the broker's dispatcher writes it (header v0 for every ApiVersions)."""
    flexible = response.flexible_version_q(version) and response.API_KEY != ApiVersionsRequest.API_KEY
    chunks = frame_chunks([response_header(correlation_id, flexible), bytes(response.encode(version=version))])
    return b"".join(bytes(c) for c in chunks)


def same(a: ApiMessage, b: ApiMessage, version: int) -> bool:
    """Equal as far as `version` carries them (fields of other versions are not sent)."""
    return a.API_VERSION == b.API_VERSION == version and bytes(a.encode()) == bytes(b.encode())


@pytest.mark.parametrize(("name", "version", "flexible"), CASES)
def test_round_trip_through_the_broker_framing(name: str, version: int, flexible: bool) -> None:
    request, response = PAIRS[name]()
    assert request.flexible_version_q(version) is flexible
    codec = ClientCodec("tool-1")
    frame = codec.send(request, version)
    header, decoded = broker_parse(frame)
    assert (header.api_key, header.api_version, header.client_id) == (request.API_KEY, version, "tool-1")
    assert header.correlation_id == codec.correlation_id == 1
    assert same(decoded, request, version)
    assert codec.waiting == 1
    (got,) = codec.feed(broker_answer(header.correlation_id, response, version))
    assert (got.correlation_id, got.api_key, got.api_version) == (1, response.API_KEY, version)
    assert type(got.message) is type(response)
    assert same(got.message, response, version)
    assert codec.waiting == 0


def test_api_versions_response_header_is_v0_even_for_flexible_versions() -> None:
    request, response = api_versions_pair()
    codec = ClientCodec(None)
    codec.send(request, 3)
    body = bytes(response.encode(version=3))
    # correlation id, then the body at once: no tagged-fields byte, as Kafka writes it
    (got,) = codec.feed(struct.pack(">ii", 4 + len(body), 1) + body)
    assert got.message == response
    assert [k.api_key for k in got.message.api_keys] == [0, 18]


def test_flexible_response_header_tagged_fields_are_skipped() -> None:
    request, response = metadata_pair()
    codec = ClientCodec(None)
    codec.send(request, 12)
    body = bytes(response.encode(version=12))
    tagged = b"\x01" + b"\x05" + b"\x02" + b"hi"  # one unknown tagged field (tag 5, 2 bytes)
    (got,) = codec.feed(struct.pack(">ii", 4 + len(tagged) + len(body), 1) + tagged + body)
    assert got.message == response


def test_null_client_id_is_sent_as_null() -> None:
    request, _ = metadata_pair()
    header, _ = broker_parse(ClientCodec(None).send(request, 1))
    assert header.client_id is None


def test_byte_by_byte() -> None:
    request, response = fetch_pair()
    codec = ClientCodec("c")
    codec.send(request, 12)
    answer = broker_answer(1, response, 12)
    for i in range(len(answer) - 1):
        assert codec.feed(answer[i:i + 1]) == []
    (got,) = codec.feed(answer[-1:])
    assert got.message == response


def test_large_response_in_many_reads() -> None:
    request, response = fetch_pair()
    response.responses[0].partitions[0].records = bytes(range(256)) * 8192  # 2 MiB
    codec = ClientCodec("c")
    codec.send(request, 12)
    answer = broker_answer(1, response, 12)
    got = [r for i in range(0, len(answer), 65536) for r in codec.feed(answer[i:i + 65536])]
    assert len(got) == 1 and same(got[0].message, response, 12)


@pytest.mark.parametrize("seed", range(5))
def test_frame_assembler_at_any_split(seed: int) -> None:
    rng = random.Random(seed)
    payloads = [rng.randbytes(rng.choice([0, 1, 3, 4, 5, 100, 5000])) for _ in range(40)]
    stream = b"".join(struct.pack(">i", len(p)) + p for p in payloads)
    cuts = sorted(rng.sample(range(1, len(stream)), 30))
    assembler = FrameAssembler(10_000)
    got = [bytes(f) for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)
           for f in assembler.feed(stream[a:b])]
    assert got == payloads and assembler.buffered == 0


def test_two_responses_in_one_chunk_and_a_third_split() -> None:
    codec = ClientCodec("c")
    pairs = [metadata_pair(), create_topics_pair(), metadata_pair()]
    versions = [1, 5, 12]
    for (request, _), version in zip(pairs, versions, strict=True):
        codec.send(request, version)
    answers = [broker_answer(i + 1, resp, v) for i, ((_, resp), v) in enumerate(zip(pairs, versions, strict=True))]
    stream = b"".join(answers)
    cut = len(answers[0]) + len(answers[1]) + 3
    first = codec.feed(stream[:cut])
    assert [(r.correlation_id, r.api_key, r.api_version) for r in first] == [(1, 3, 1), (2, 19, 5)]
    assert codec.waiting == 1
    (third,) = codec.feed(stream[cut:])
    assert third.correlation_id == 3 and third.message == pairs[2][1]


def test_produce_without_acks_expects_no_response() -> None:
    request = ProduceRequest(transactional_id=None, acks=0, timeout_ms=1000, topic_data=[])
    codec = ClientCodec("c")
    codec.send(request, 9)
    assert codec.waiting == 0
    metadata, _ = metadata_pair()
    codec.send(metadata, 1)
    assert codec.correlation_id == 2 and codec.waiting == 1


def test_correlation_ids_wrap_within_int32() -> None:
    codec = ClientCodec("c")
    codec.correlation_id = (1 << 31) - 1
    header, _ = broker_parse(codec.send(metadata_pair()[0], 1))
    assert header.correlation_id == codec.correlation_id == 1


def test_correlation_mismatch() -> None:
    request, response = metadata_pair()
    codec = ClientCodec("c")
    codec.send(request, 1)
    with pytest.raises(CorrelationMismatch, match="correlation id 7 where 1 was expected"):
        codec.feed(broker_answer(7, response, 1))


def test_response_without_a_request() -> None:
    _, response = metadata_pair()
    with pytest.raises(CorrelationMismatch, match="no request outstanding"):
        ClientCodec("c").feed(broker_answer(1, response, 1))


@pytest.mark.parametrize(("frame", "why"), [
    (struct.pack(">i", -3), "negative frame size"),
    (struct.pack(">i", 2000), "larger than"),
    (struct.pack(">i", 2) + b"\x00\x00", "too short for a response header"),
    (struct.pack(">ii", 5, 1) + b"\x03", "truncated"),  # flexible header: 3 tagged fields, none there
    (struct.pack(">ii", 6, 1) + b"\x00\x00", "does not decode"),  # a body cut short
])
def test_bad_frames(frame: bytes, why: str) -> None:
    codec = ClientCodec("c", max_frame_size=1000)
    codec.send(metadata_pair()[0], 12)
    with pytest.raises(MalformedResponse, match=why):
        codec.feed(frame)


def test_end_of_stream() -> None:
    codec = ClientCodec("c")
    assert codec.feed(b"") == []
    codec.send(metadata_pair()[0], 1)
    codec.feed(b"\x00\x00")
    with pytest.raises(ConnectionLost, match="1 response"):
        codec.feed(b"")


def test_protocol_errors_are_connection_errors() -> None:
    """Callers that drop a connection on ConnectionError/OSError drop it on a garbled stream too."""
    assert issubclass(ProtocolError, ConnectionError)


# ---- the asyncio transport against a scripted server ----------------------------------------------

Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _with_server(script: Script, body: Callable[[int], Awaitable[None]]) -> None:
    server = await asyncio.start_server(script, "127.0.0.1", 0)
    try:
        await body(server.sockets[0].getsockname()[1])
    finally:
        server.close()
        await server.wait_closed()


async def _read_request(reader: asyncio.StreamReader) -> tuple[Any, Any]:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return broker_parse(struct.pack(">i", size) + await reader.readexactly(size))


def test_async_connection_reads_a_response_in_pieces() -> None:
    _, response = fetch_pair()

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(2):
            header, _req = await _read_request(reader)
            answer = broker_answer(header.correlation_id, response, header.api_version)
            for i in range(0, len(answer), 50):
                writer.write(answer[i:i + 50])
                await writer.drain()
                await asyncio.sleep(0)
        writer.close()

    async def body(port: int) -> None:
        conn = AsyncConnection("127.0.0.1", port, "fetcher", timeout_s=5)
        try:
            assert await conn.request(fetch_pair()[0], 12) == response
            assert await conn.request(fetch_pair()[0], 12) == response
        finally:
            await conn.close()

    asyncio.run(_with_server(script, body))


def test_async_connection_serves_concurrent_callers_one_exchange_at_a_time() -> None:
    """Coroutines that share a connection (the transaction coordinator's markers for two transactions to one
    leader) each get their own response; none fails with asyncio's "read() called while another coroutine is
    already waiting" (which once left a transaction in PREPARE_COMMIT for good)."""
    _, response = metadata_pair()

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                header, _req = await _read_request(reader)
            except asyncio.IncompleteReadError:
                break
            await asyncio.sleep(0.01)  # slow enough that the callers overlap
            writer.write(broker_answer(header.correlation_id, response, header.api_version))
            await writer.drain()
        writer.close()

    async def body(port: int) -> None:
        conn = AsyncConnection("127.0.0.1", port, "markers", timeout_s=5)
        try:
            answers = await asyncio.gather(*(conn.request(metadata_pair()[0], 12) for _ in range(8)))
            assert answers == [response] * 8
        finally:
            await conn.close()

    asyncio.run(_with_server(script, body))


async def _hangs_up_mid_response(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await _read_request(reader)
    writer.write(struct.pack(">ii", 100, 1))
    writer.close()


async def _never_answers(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.read()  # returns when the client gives up


@pytest.mark.parametrize(("script", "timeout_s", "error"), [
    pytest.param(_hangs_up_mid_response, 5, ConnectionLost, id="the-peer-hangs-up-mid-response"),
    pytest.param(_never_answers, 0.2, TimeoutError, id="a-silent-peer-times-out"),
])
def test_async_connection_closes_itself_when_a_request_fails(script: Script, timeout_s: float,
                                                            error: type[Exception]) -> None:
    async def body(port: int) -> None:
        conn = AsyncConnection("127.0.0.1", port, "fetcher", timeout_s=timeout_s)
        with pytest.raises(error):
            await conn.request(metadata_pair()[0], 1)
        assert not conn.connected

    asyncio.run(_with_server(script, body))
