"""The structural check of request bodies (protocol/validate.py) against kafka-python's own encoder:
random well-formed requests of every API and version the broker serves pass and decode; every strict
prefix of one fails; a null in a field whose schema forbids it fails naming the field; hostile counts,
lengths and tagged-field floods fail fast."""

from __future__ import annotations

import random
import string
import struct
import time
import tracemalloc
import uuid
from typing import Any

import pytest
from kafka.protocol.admin import AlterPartitionReassignmentsRequest
from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest, OffsetCommitRequest, OffsetFetchRequest
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest

from odradek.protocol.framing import write_uvarint
from odradek.protocol.validate import MAX_DECODED_OBJECTS, MalformedRequest, check_request, decoded_objects
from odradek.server.dispatcher import APIS

CASES = [(api.request, v) for api in APIS.values() if not api.raw for v in range(api.min_version, api.max_version + 1)]
SIMPLE = {
    "int8": lambda r: r.randint(-128, 127), "int16": lambda r: r.randint(-(1 << 15), (1 << 15) - 1),
    "uint16": lambda r: r.randint(0, 65535), "int32": lambda r: r.randint(-(1 << 31), (1 << 31) - 1),
    "int64": lambda r: r.randint(-(1 << 63), (1 << 63) - 1), "bool": lambda r: r.random() < 0.5,
    "float64": lambda r: r.random(), "uuid": lambda r: uuid.UUID(int=r.getrandbits(128)),
    "string": lambda r: "".join(r.choices(string.ascii_letters, k=r.randint(0, 12))),
    "bytes": lambda r: r.randbytes(r.randint(0, 20)), "records": lambda r: r.randbytes(r.randint(0, 20)),
}


def _value(field: Any, version: int, rng: random.Random, nulls: list[str], path: str) -> Any:
    nullable = field.nullable_for_version_q(version)
    if nullable and rng.random() < 0.2:
        return None
    if not nullable and (field.is_array() or field.type_str in ("string", "bytes", "records")):
        nulls.append(path)
    if field.is_struct_array():
        return [_struct(field.array_of, version, rng, nulls, f"{path}[{i}]") for i in range(rng.randint(0, 3))]
    if field.is_array():
        return [SIMPLE[field.array_of.type_str](rng) for _ in range(rng.randint(0, 3))]
    if field.is_struct():
        return _struct(field, version, rng, nulls, path)
    return SIMPLE[field.type_str](rng)


def _struct(st: Any, version: int, rng: random.Random, nulls: list[str], path: str) -> Any:
    kwargs = {f.name: _value(f, version, rng, nulls, f"{path}.{f.name}".lstrip("."))
              for f in st.untagged_fields(version)}
    return st.data_class(version=version, **kwargs)


def random_request(cls: Any, version: int, rng: random.Random) -> tuple[Any, list[str]]:
    """A random request and the paths of its reference fields that the schema says are not nullable."""
    nulls: list[str] = []
    kwargs = {f.name: _value(f, version, rng, nulls, f.name) for f in cls._struct.untagged_fields(version)}
    return cls(version=version, **kwargs), nulls


def _parent(obj: Any, path: str) -> tuple[Any, str]:
    *parents, last = path.replace("[", ".[").split(".")
    for p in parents:
        obj = obj[int(p[1:-1])] if p.startswith("[") else getattr(obj, p)
    return obj, last


def _normal(path: str) -> str:
    """kafka-python's snake_case path and the schema's camelCase path compare equal."""
    return path.replace("_", "").lower()


@pytest.mark.parametrize(("cls", "version"), CASES, ids=[f"{c.name}-v{v}" for c, v in CASES])
def test_well_formed_requests_pass_and_prefixes_fail(cls: Any, version: int) -> None:
    rng = random.Random(f"{cls.name}{version}")
    for _ in range(5):
        request, _nulls = random_request(cls, version, rng)
        body = memoryview(bytes(request.encode(version=version)))
        check_request(cls, version, body)
        cls.decode(body, version=version)
        for cut in sorted({0, len(body) // 2, len(body) - 1} & set(range(len(body)))):
            with pytest.raises(MalformedRequest):
                check_request(cls, version, body[:cut])


@pytest.mark.parametrize(("cls", "version"), CASES, ids=[f"{c.name}-v{v}" for c, v in CASES])
def test_null_where_not_nullable_names_the_field(cls: Any, version: int) -> None:
    rng = random.Random(f"null{cls.name}{version}")
    request, nulls = random_request(cls, version, rng)
    for path in nulls:
        request, _ = random_request(cls, version, random.Random(f"null{cls.name}{version}"))
        setattr(*_parent(request, path), None)
        body = memoryview(bytes(request.encode(version=version)))
        if getattr(*_parent(cls.decode(body, version=version), path)) is not None:
            continue  # kafka-python's encoder replaced the null (Metadata v0 topics)
        with pytest.raises(MalformedRequest, match="is null but not nullable") as err:
            check_request(cls, version, body)
        assert _normal(str(err.value).split(" ")[0]) == _normal(path)


_uvarint = write_uvarint


def test_huge_array_count_fails_at_once() -> None:
    body = memoryview(struct.pack(">i", 2**31 - 1) + b"\x00" * 10)
    with pytest.raises(MalformedRequest, match="topics has 2147483647 elements but only 10 bytes"):
        check_request(MetadataRequest, 1, body)


def test_negative_count_other_than_minus_one_is_null() -> None:
    body = memoryview(struct.pack(">ii", -1, -7))  # ListOffsets v1: replica_id, then topics (never null)
    with pytest.raises(MalformedRequest, match="^topics is null but not nullable"):
        check_request(ListOffsetsRequest, 1, body)


def test_string_past_the_end_of_the_frame() -> None:
    # kafka-python alone would decode this as key='abc' (the length is cut short silently).
    body = memoryview(struct.pack(">h", 1000) + b"abc")
    with pytest.raises(MalformedRequest, match="^key has length 1000 but only 3 bytes are left"):
        check_request(FindCoordinatorRequest, 0, body)


def test_tagged_field_flood_is_refused_in_linear_time() -> None:
    # Metadata v12: each topic carries a tagged field; kafka-python would copy the rest of the frame for
    # each one (quadratic: minutes for a few MB).
    n = 300_000  # 900,000 objects decoded: within MAX_DECODED_OBJECTS, so the copy budget is what refuses it
    item = b"\x00" * 16 + b"\x01" + b"\x01\x05\x01\x00"
    body = memoryview(_uvarint(n + 1) + item * n + b"\x00\x00\x00")
    started = time.monotonic()
    with pytest.raises(MalformedRequest, match="too many tagged-field sections"):
        check_request(MetadataRequest, 12, body)
    assert time.monotonic() - started < 5


def test_a_few_tagged_fields_pass() -> None:
    item = b"\x00" * 16 + b"\x01" + b"\x01\x05\x01\x00"
    body = memoryview(_uvarint(4) + item * 3 + b"\x00\x00\x00")
    check_request(MetadataRequest, 12, body)
    assert len(MetadataRequest.decode(body, version=12).topics) == 3


def test_overlong_varint() -> None:
    with pytest.raises(MalformedRequest, match="varint longer than 5 bytes"):
        check_request(MetadataRequest, 12, memoryview(b"\xff" * 50))


# -- the decoded-object budget ------------------------------------------------------------------------


def test_a_body_decoding_into_too_many_objects_is_refused_before_anything_is_built() -> None:
    # Metadata v12: 400,000 topics of 18 bytes (null id, empty name, no tags), 3 objects each: 7 MB that
    # kafka-python would turn into 1.2 million objects
    n = 400_000
    body = memoryview(_uvarint(n + 1) + (b"\x00" * 16 + b"\x01\x00") * n + b"\x00\x00\x00")
    tracemalloc.start()
    try:
        with pytest.raises(MalformedRequest, match=f"^topics has {n} elements: .* more than {MAX_DECODED_OBJECTS}"):
            check_request(MetadataRequest, 12, body)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 10
    small = memoryview(_uvarint(11) + (b"\x00" * 16 + b"\x01\x00") * 10 + b"\x00\x00\x00")
    assert decoded_objects(MetadataRequest, 12, small) == 4 + 3 * 10  # the request and its 3 fields, 3 a topic


def _metadata(version: int, topics: int) -> Any:
    t = MetadataRequest.MetadataRequestTopic
    return MetadataRequest(version=version, allow_auto_topic_creation=False,
                           include_topic_authorized_operations=False,
                           topics=[t(version=version, topic_id=None, name=f"t{i}") for i in range(topics)])


def _offset_fetch(version: int, topics: int, partitions: int) -> Any:
    names = [f"topic-{i}" for i in range(topics)]
    if version >= 8:
        group = OffsetFetchRequest.OffsetFetchRequestGroup
        ts = [group.OffsetFetchRequestTopics(version=version, name=n, partition_indexes=list(range(partitions)))
              for n in names]
        return OffsetFetchRequest(version=version, require_stable=False, groups=[
            group(version=version, group_id="g", member_id=None, member_epoch=-1, topics=ts)])
    topic = OffsetFetchRequest.OffsetFetchRequestTopic
    return OffsetFetchRequest(version=version, group_id="g", require_stable=False, topics=[
        topic(version=version, name=n, partition_indexes=list(range(partitions))) for n in names])


def _offset_commit(version: int, topics: int, partitions: int) -> Any:
    topic = OffsetCommitRequest.OffsetCommitRequestTopic
    part = topic.OffsetCommitRequestPartition
    return OffsetCommitRequest(
        version=version, group_id="g", generation_id_or_member_epoch=3, member_id="m", group_instance_id=None,
        retention_time_ms=-1, topics=[
            topic(version=version, name=f"topic-{t}", partitions=[
                part(version=version, partition_index=p, committed_offset=1_000_000 + p, committed_leader_epoch=7,
                     commit_timestamp=-1, committed_metadata="") for p in range(partitions)])
            for t in range(topics)])


def _follower_fetch(version: int, topics: int, partitions: int) -> Any:
    topic = FetchRequest.FetchTopic
    part = topic.FetchPartition
    return FetchRequest(
        version=version, replica_id=1, max_wait_ms=500, min_bytes=1, max_bytes=50 << 20, isolation_level=0,
        session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[], topics=[
            topic(version=version, topic=f"topic-{t}", topic_id=None, partitions=[
                part(version=version, partition=p, current_leader_epoch=5, fetch_offset=123_456_789,
                     last_fetched_epoch=5, log_start_offset=0, partition_max_bytes=1 << 20)
                for p in range(partitions)])
            for t in range(topics)])


def _reassignment(topics: int, partitions: int, rf: int) -> Any:
    topic = AlterPartitionReassignmentsRequest.ReassignableTopic
    part = topic.ReassignablePartition
    return AlterPartitionReassignmentsRequest(version=0, timeout_ms=30000, topics=[
        topic(version=0, name=f"topic-{t}", partitions=[
            part(version=0, partition_index=p, replicas=[(p + r) % 12 for r in range(rf)]) for p in range(partitions)])
        for t in range(topics)])


REALISTIC = {
    "Metadata-v1-20000-topics": (lambda: _metadata(1, 20_000), 1),
    "Metadata-v12-20000-topics": (lambda: _metadata(12, 20_000), 12),
    "OffsetFetch-v7-10000-partitions": (lambda: _offset_fetch(7, 100, 100), 7),
    "OffsetFetch-v9-10000-topics": (lambda: _offset_fetch(9, 10_000, 1), 9),
    "OffsetCommit-v2-10000-partitions": (lambda: _offset_commit(2, 100, 100), 2),
    "OffsetCommit-v9-10000-topics": (lambda: _offset_commit(9, 10_000, 1), 9),
    # the largest under the default limits: every partition one broker may host (max.broker.partitions)
    "Fetch-v12-follower-100000-partitions": (lambda: _follower_fetch(12, 1_000, 100), 12),
    "AlterPartitionReassignments-50000-partitions-rf3": (lambda: _reassignment(500, 100, 3), 0),
}


@pytest.mark.parametrize("name", REALISTIC)
def test_realistic_large_requests_are_accepted(name: str) -> None:
    make, version = REALISTIC[name]
    request = make()
    body = memoryview(bytes(request.encode(version=version)))
    check_request(type(request), version, body)
    assert decoded_objects(type(request), version, body) < MAX_DECODED_OBJECTS


def test_a_compact_string_longer_than_32767_bytes_is_refused() -> None:
    # FindCoordinator v4 (flexible): key_type int8, coordinator_keys compact array of compact strings
    def body(size: int) -> memoryview:
        return memoryview(b"\x00" + _uvarint(2) + _uvarint(size + 1) + b"g" * size + b"\x00")

    check_request(FindCoordinatorRequest, 4, body(32767))
    with pytest.raises(MalformedRequest, match=r"^coordinator_keys\[0\] has length 32768, longer than a string"):
        check_request(FindCoordinatorRequest, 4, body(32768))
