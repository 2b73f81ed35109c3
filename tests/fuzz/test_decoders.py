"""Fuzzing the request decoders without a broker: kafka-python's decoding behind `decode_request`, the
request header parsing of `framing`, and the Produce fast path.

Hostile input may only ever produce the decoder's own clean error (KafkaError, or FrameError for framing),
in bounded memory and time; valid input must round-trip.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.api_message import ApiMessage

from odradek.protocol import produce as produce_module
from odradek.protocol import validate
from odradek.protocol.errors import KafkaError
from odradek.protocol.framing import FrameDecoder, FrameError, parse_request_header, peek_api
from odradek.protocol.produce import parse_produce_request
from tests.fuzz import mutations, samples
from tests.fuzz.apis import KNOWN_APIS, REJECTIONS, ApiSpec, decode_request
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.nulls import find_illegal_nulls
from tests.fuzz.pipeline import PRODUCE, decode_frame
from tests.fuzz.strategies import api_versions, encoded_request, framed_request

MiB = 1 << 20
DECODE_PEAK_LIMIT = 16 * MiB

ALL = api_versions()
IDS = [f"{spec.name}-v{v}" for spec, v in ALL]



def _decode(spec: ApiSpec, version: int, data: bytes) -> ApiMessage | None:
    """decode_request, with KafkaError (the clean rejection) turned into None."""
    try:
        return decode_request(spec, version, memoryview(data))
    except REJECTIONS:
        return None


# -- decode_request --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "version"), ALL, ids=IDS)
def test_valid_request_round_trips(spec: ApiSpec, version: int) -> None:
    @fuzz_settings()
    @given(encoded_request(spec, version))
    def check(pair: tuple[ApiMessage, bytes]) -> None:
        message, body = pair
        assert decode_request(spec, version, memoryview(body)) == message

    check()


@pytest.mark.parametrize(("spec", "version"), ALL, ids=IDS)
def test_mutated_body_raises_only_kafka_error(spec: ApiSpec, version: int) -> None:
    @fuzz_settings()
    @given(encoded_request(spec, version), mutations.mutations())
    def check(pair: tuple[ApiMessage, bytes], muts: list[mutations.Mutation]) -> None:
        decoded = _decode(spec, version, mutations.apply_all(pair[1], muts))
        assert decoded is None or isinstance(decoded, spec.request)

    check()


@pytest.mark.parametrize(("spec", "version"), ALL, ids=IDS)
def test_huge_counts_decode_in_bounded_memory(spec: ApiSpec, version: int) -> None:
    @fuzz_settings(share=0.4)
    @given(encoded_request(spec, version), mutations.mutations(mutations.HUGE_COUNT_KINDS))
    def check(pair: tuple[ApiMessage, bytes], muts: list[mutations.Mutation]) -> None:
        data = mutations.apply_all(pair[1], muts)
        _decode(spec, version, pair[1])  # the first decode compiles kafka-python's decoder
        tracemalloc.start()
        try:
            _decode(spec, version, data)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < DECODE_PEAK_LIMIT, f"{peak} bytes to decode {data.hex()}"

    check()


def _truncation_cases() -> list[object]:
    """Every API version (the boundary checks string and bytes lengths against what is left)."""
    return [
        pytest.param(spec, v, id=f"{spec.name}-v{v}")
        for spec, v in ALL
    ]


@pytest.mark.parametrize(("spec", "version"), _truncation_cases())
def test_truncated_body_is_rejected(spec: ApiSpec, version: int) -> None:
    """Every strict prefix of a valid body lacks bytes the decoder needs: accepting one means it read past
    the end."""

    @fuzz_settings(share=0.4, shrink=False)
    @given(encoded_request(spec, version))
    def check(pair: tuple[ApiMessage, bytes]) -> None:
        body = pair[1]
        accepted = [cut for cut in range(len(body)) if _decode(spec, version, body[:cut]) is not None]
        assert not accepted, f"prefixes of {body.hex()} accepted at lengths {accepted}"

    check()


def _null_cases() -> list[tuple[ApiSpec, int, tuple[str, ...]]]:
    return [(spec, v, path) for spec, v in ALL for path in samples.null_targets(spec.request._struct, v)]


NULL_CASES = _null_cases()


@pytest.mark.parametrize(
    ("spec", "version", "path"),
    NULL_CASES,
    ids=[f"{s.name}-v{v}-{samples.path_text(p)}" for s, v, p in NULL_CASES],
)
def test_null_in_non_nullable_field_is_rejected(spec: ApiSpec, version: int, path: tuple[str, ...]) -> None:
    body = samples.encode_as_is(samples.request_with_null(spec, version, path), version)
    decoded = _decode(spec, version, body)
    assert decoded is None or find_illegal_nulls(decoded, version) == [], f"accepted {body.hex()}"


# -- cost of decoding: memory per byte and time on crafted inputs --------------------------------------


ARRAY_LENGTH = 5000
# Bytes of memory per object the decoding boundary counts (check_request): with MAX_DECODED_OBJECTS objects
# at most, one request decodes into at most this many times that, whatever its size. Measured: 45-70 bytes.
OBJECT_COST_LIMIT = 128
BASELINE = 16 * 1024  # allowance for what one decode allocates besides the message itself


def _array_cases() -> list[object]:
    """Each top-level array of each API at its max version."""
    return [
        pytest.param(spec, spec.max_version, f.name, id=f"{spec.name}-v{spec.max_version}-{f.name}")
        for spec in KNOWN_APIS.values()
        for f in samples.top_level_arrays(spec, spec.max_version)
    ]


def _peak(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(("spec", "version", "field"), _array_cases())
def test_decoding_memory_is_bounded_by_the_object_budget(
    spec: ApiSpec, version: int, field: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long array of the smallest elements (1-3 bytes each on the wire) costs kafka-python 20-50 bytes
    per byte: the boundary bounds the objects instead. Their count bounds the memory, and a body over the
    budget is refused before anything is built."""
    array = spec.request._struct.fields[field]
    body = memoryview(bytes(samples.request_with_long_array(spec, version, array, ARRAY_LENGTH).encode(version=version)))
    decode_request(spec, version, body)  # the first decode compiles kafka-python's decoder
    objects = validate.decoded_objects(spec.request, version, body)
    peak = _peak(lambda: decode_request(spec, version, body))
    assert peak <= OBJECT_COST_LIMIT * objects + BASELINE, f"{peak} bytes for {objects} objects"

    monkeypatch.setattr(validate, "MAX_DECODED_OBJECTS", objects - 1)

    def refused() -> None:
        with pytest.raises(validate.MalformedRequest, match="would decode into more than"):
            decode_request(spec, version, body)

    assert _peak(refused) <= BASELINE


def test_produce_fast_path_memory_is_bounded_by_the_object_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Produce fast path builds a partition, its index and a records view per partition (an empty
    records field is a few bytes on the wire): the same budget bounds it."""
    topic = mutations.uvarint(2) + b"t" + mutations.uvarint(ARRAY_LENGTH + 1)
    partition = b"\x00\x00\x00\x07" + b"\x01" + b"\x00"  # index 7, empty records, no tags
    frame = memoryview(b"\x00" + b"\xff\xff\x00\x00\x05\xdc" + mutations.uvarint(2) + topic
                       + partition * ARRAY_LENGTH + b"\x00\x00")  # null transactional id, acks=-1, 1500 ms
    parse_produce_request(frame, 0, 12)  # the body is valid
    objects = 3 + 3 * ARRAY_LENGTH
    peak = _peak(lambda: parse_produce_request(frame, 0, 12))
    assert peak <= OBJECT_COST_LIMIT * objects + BASELINE, f"{peak} bytes for {objects} objects"

    monkeypatch.setattr(produce_module, "MAX_DECODED_OBJECTS", objects - 1)

    def refused() -> None:
        with pytest.raises(KafkaError, match="would decode into more than"):
            parse_produce_request(frame, 0, 12)

    assert _peak(refused) <= BASELINE


# Linear decoding of these sizes takes a small fraction of the time limit; quadratic decoding takes seconds.
SLOW_INPUT_SECONDS = 1.0


def _timed_decode(spec: ApiSpec, version: int, body: bytes) -> float:
    start = time.perf_counter()
    _decode(spec, version, body)
    return time.perf_counter() - start


def test_long_varint_run_decodes_quickly() -> None:
    spec = KNOWN_APIS[3]  # Metadata: flexible from v9; its body starts with a compact array length
    assert _timed_decode(spec, 12, b"\xff" * 256 * 1024) < SLOW_INPUT_SECONDS


def test_many_tagged_fields_are_refused_quickly() -> None:
    """kafka-python copies the rest of the body (bytes(data[pos:])) for every struct that carries tagged
    fields: a valid body with a tagged field in each of its 47,000 topics would copy 25 GB. The boundary
    refuses it past a copy budget, in linear time."""
    spec = KNOWN_APIS[3]
    # Metadata v12 topic: uuid, compact name "a", one unknown tagged field (tag 99, empty)
    topic = b"\x01" * 16 + b"\x02a" + b"\x01" + mutations.uvarint(99) + b"\x00"
    count = 1024 * 1024 // len(topic)
    body = mutations.uvarint(count + 1) + topic * count + b"\x00\x00\x00"
    with pytest.raises(validate.MalformedRequest, match="too many tagged-field sections"):
        decode_request(spec, 12, memoryview(body))
    few = mutations.uvarint(4) + topic * 3 + b"\x00\x00\x00"
    assert _decode(spec, 12, few) is not None  # a few tagged fields are decoded
    assert _timed_decode(spec, 12, body) < SLOW_INPUT_SECONDS


# -- framing: header parsing and the frame decoder --------------------------------------------------------


def _parse_frame(frame: bytes) -> None:
    """Header parsing with every flexibility, then the broker's whole path up to the handler."""
    view = memoryview(frame)
    peek_api(view)
    for flexible in (True, False, None):
        header = parse_request_header(view, flexible)
        assert 0 < header.body_offset <= len(view)
    decode_frame(frame)


def _any_frame() -> st.SearchStrategy[bytes]:
    return st.sampled_from(ALL).flatmap(lambda sv: framed_request(*sv))


@fuzz_settings(share=20)
@given(_any_frame(), mutations.mutations(mutations.KINDS))
def test_mutated_frame_raises_only_protocol_errors(frame: bytes, muts: list[mutations.Mutation]) -> None:
    try:
        _parse_frame(mutations.apply_all(frame, muts))
    except REJECTIONS:
        pass


@fuzz_settings(share=8)
@given(st.binary(max_size=64))
def test_random_bytes_raise_only_protocol_errors(frame: bytes) -> None:
    try:
        _parse_frame(frame)
    except REJECTIONS:
        pass


@fuzz_settings(share=8)
@given(st.lists(st.binary(max_size=40), max_size=6), st.lists(st.integers(1, 64), min_size=1))
def test_frame_decoder_reassembles_any_chunking(payloads: list[bytes], chunk_sizes: list[int]) -> None:
    stream = b"".join(len(p).to_bytes(4, "big") + p for p in payloads)
    decoder = FrameDecoder(max_frame_size=64)
    got: list[bytes] = []
    pos = i = 0
    while pos < len(stream):
        n = chunk_sizes[i % len(chunk_sizes)]
        got += [bytes(f) for f in decoder.feed(stream[pos : pos + n])]
        pos, i = pos + n, i + 1
    assert got == payloads
    assert decoder.buffered == 0


@fuzz_settings(share=8)
@given(st.binary(max_size=64))
def test_frame_decoder_rejects_only_with_frame_error(stream: bytes) -> None:
    decoder = FrameDecoder(max_frame_size=32)
    try:
        frames = decoder.feed(stream)
    except FrameError:
        return
    assert all(len(f) <= 32 for f in frames)


# -- Produce fast path --------------------------------------------------------------------------------------

PRODUCE_VERSIONS = [(spec, v) for spec, v in ALL if spec is PRODUCE]


def _produce_frame_and_view(frame: bytes, version: int) -> tuple[memoryview, int]:
    view = memoryview(frame)
    return view, parse_request_header(view, PRODUCE.flexible(version)).body_offset


@pytest.mark.parametrize(("spec", "version"), PRODUCE_VERSIONS, ids=[f"v{v}" for _, v in PRODUCE_VERSIONS])
def test_produce_fast_path_matches_generic_decoder(spec: ApiSpec, version: int) -> None:
    @fuzz_settings()
    @given(framed_request(spec, version))
    def check(frame: bytes) -> None:
        view, offset = _produce_frame_and_view(frame, version)
        generic = decode_request(spec, version, view[offset:])
        fast = parse_produce_request(view, offset, version)
        assert (fast.transactional_id, fast.acks, fast.timeout_ms) == (
            generic.transactional_id,
            generic.acks,
            generic.timeout_ms,
        )
        assert [(t.name, [(p.index, _opt_bytes(p.records)) for p in t.partitions]) for t in fast.topics] == [
            (t.name, [(p.index, p.records) for p in t.partition_data]) for t in generic.topic_data
        ]

    check()


def _opt_bytes(view: memoryview | None) -> bytes | None:
    return None if view is None else bytes(view)


@pytest.mark.parametrize(("spec", "version"), PRODUCE_VERSIONS, ids=[f"v{v}" for _, v in PRODUCE_VERSIONS])
def test_mutated_produce_raises_only_kafka_error(spec: ApiSpec, version: int) -> None:
    @fuzz_settings(share=4)
    @given(framed_request(spec, version), mutations.mutations())
    def check(frame: bytes, muts: list[mutations.Mutation]) -> None:
        view, offset = _produce_frame_and_view(frame, version)
        body = mutations.apply_all(bytes(view[offset:]), muts)
        try:
            parse_produce_request(memoryview(bytes(view[:offset]) + body), offset, version)
        except REJECTIONS:
            pass

    check()
