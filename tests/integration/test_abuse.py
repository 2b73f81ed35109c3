"""A hostile or greedy client against a real broker: malformed requests are logged as malformed (one
warning naming the API, version, client and problem; the connection closed), absurd partition counts
are refused in milliseconds, connection limits close only the newcomers, and the request memory bound
slows readers down without dropping anything. Every case checks that other clients are still served
and that no request ended in an unexpected error. The last section holds what the live fuzz run found:
well-formed requests with hostile values."""

from __future__ import annotations

import socket
import struct
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from kafka.protocol.admin import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
)
from kafka.protocol.consumer import (
    FetchRequest,
    JoinGroupRequest,
    ListOffsetsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest

from odradek.protocol.records import build_batch, iter_batches
from tests.clients import consume_all, create_topic
from tests.harness import BrokerProcess
from tests.rawclient import RawClient
from tests.sockets import answers as _answers
from tests.sockets import closed_by_peer as _closed_by_peer
from tests.sockets import connect_from as _connect
from tests.sockets import framed as _framed
from tests.sockets import kept as _kept
from tests.waiting import wait_until

INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, POLICY_VIOLATION = 37, 38, 44


@contextmanager
def _serving(workdir: Path, overrides: dict[str, str]) -> Iterator[BrokerProcess]:
    """A module's broker: started with these overrides, stopped afterwards, and then its log must hold no
    "Unexpected error" (nothing the abuse reached was an unhandled exception)."""
    b = BrokerProcess(workdir, overrides=overrides)
    b.start()
    try:
        yield b
    finally:
        out = b.output()
        b.stop()
        b.kill()
        assert "Unexpected error" not in out


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with _serving(tmp_path_factory.mktemp("abuse"), {
        "max.connections.per.ip": "50",
        "max.connections.per.ip.overrides": "127.0.0.2:2,127.0.0.3:0,localhost:200",
    }) as b:
        yield b


@pytest.fixture(scope="module")
def known_topic(broker: BrokerProcess) -> str:
    name = "known-" + uuid.uuid4().hex[:6]
    create_topic(broker.bootstrap, name)
    return name


MEMORY_TOPIC = "mem-" + uuid.uuid4().hex[:6]
FETCH_MAX_BYTES = 250_000


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """Small limits: 6 connections, 10 partitions in the cluster, 8 per broker, 1 MiB of requests, fetches
    of 250,000 bytes.
    Its tests use raw sockets only (closed as soon as a test is done), so they can count connections;
    MEMORY_TOPIC (1 partition) exists from the start."""
    with _serving(tmp_path_factory.mktemp("small"), {
        "max.connections": "6", "max.partitions": "10", "max.broker.partitions": "8",
        "queued.max.request.bytes": str(1 << 20), "message.max.bytes": str(1 << 20),
        "fetch.max.bytes": str(FETCH_MAX_BYTES),
    }) as b:
        assert _create_topics(b.port, MEMORY_TOPIC, 1).error_code == 0
        yield b


def _list_topics(bootstrap: str) -> set[str]:
    client = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    return set(client.list_topics(timeout=10).topics)


def _wait_for_line(broker: BrokerProcess, text: str, timeout: float = 10.0) -> str:
    return wait_until(lambda: next((line for line in broker.output().splitlines() if text in line), None), timeout,
                      lambda: f"a line with {text!r} in the broker output:\n{broker.output()[-3000:]}", interval=0.05)


# ---- malformed requests ------------------------------------------------------------------------------

def _fetch(topics: Any) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                        session_id=0, session_epoch=-1, topics=topics, forgotten_topics_data=[], rack_id="")


NULL_ARRAYS = {
    "Fetch": (11, "topics", _fetch),
    "ListOffsets": (5, "topics", lambda a: ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=a)),
    "OffsetCommit": (8, "topics", lambda a: OffsetCommitRequest(
        group_id="g", generation_id_or_member_epoch=-1, member_id="", group_instance_id=None, topics=a)),
    "OffsetFetch": (8, "groups", lambda a: OffsetFetchRequest(groups=a, require_stable=False)),
    "DescribeConfigs": (4, "resources", lambda a: DescribeConfigsRequest(
        resources=a, include_synonyms=False, include_documentation=False)),
}


@pytest.mark.parametrize("api", sorted(NULL_ARRAYS))
def test_null_array_is_a_malformed_request(broker: BrokerProcess, known_topic: str, api: str) -> None:
    version, field, build = NULL_ARRAYS[api]
    valid = _framed(build([]), version)
    # The valid request with its array count patched to null: -1 (int32), or 0 in a compact array.
    nulled = _framed(build(None), version)
    diff = [i for i in range(len(valid)) if valid[i] != nulled[i]]
    assert len(valid) == len(nulled) and diff and diff[-1] - diff[0] < 4, "only the count differs"
    with RawClient(broker.port) as c:
        c.send_raw(valid)
        assert struct.unpack_from(">i", c.recv_frame())[0] == 7  # answered
        c.send_raw(nulled)
        assert c.is_closed_by_peer()
    line = _wait_for_line(broker, f"malformed {api} v{version} request")
    assert "WARNING" in line and "abuse-test" in line and f"{field} is null but not nullable" in line
    assert "Unexpected error" not in broker.output()
    assert known_topic in _list_topics(broker.bootstrap)  # another client is served


def test_string_longer_than_the_frame(broker: BrokerProcess) -> None:
    frame = bytearray(_framed(FindCoordinatorRequest(key="abc"), 0, correlation_id=8))
    struct.pack_into(">h", frame, len(frame) - 5, 1000)  # the key's length; 3 bytes follow
    with RawClient(broker.port) as c:
        c.send_raw(bytes(frame))
        assert c.is_closed_by_peer()
    line = _wait_for_line(broker, "malformed FindCoordinator v0 request")
    assert "key has length 1000 but only 3 bytes are left" in line


def test_huge_array_count_with_a_tiny_body(broker: BrokerProcess) -> None:
    frame = bytearray(_framed(MetadataRequest(topics=[]), 1, correlation_id=9))
    struct.pack_into(">i", frame, len(frame) - 4, 2**31 - 1)
    started = time.monotonic()
    with RawClient(broker.port) as c:
        c.send_raw(bytes(frame))
        assert c.is_closed_by_peer()
    assert time.monotonic() - started < 5
    assert "2147483647 elements but only 0 bytes" in _wait_for_line(broker, "malformed Metadata v1 request")


def test_tagged_field_flood_is_refused_quickly(broker: BrokerProcess) -> None:
    n = 200_000  # 4 MB of topics, each with a tagged field: quadratic copying in kafka-python's decoder
    count = n + 1
    varint = bytearray()
    while count >= 0x80:
        varint.append((count & 0x7F) | 0x80)
        count >>= 7
    varint.append(count)
    header = struct.pack(">hhih", 3, 12, 10, 4) + b"test" + b"\x00"
    body = bytes(varint) + (b"\x00" * 16 + b"\x01" + b"\x01\x05\x01\x00") * n + b"\x00\x00\x00"
    started = time.monotonic()
    with RawClient(broker.port, timeout=30) as c:
        c.send_raw(struct.pack(">i", len(header) + len(body)) + header + body)
        assert c.is_closed_by_peer(timeout=30)
        other = time.monotonic()
        assert _list_topics(broker.bootstrap) is not None
    assert time.monotonic() - started < 10 and time.monotonic() - other < 10
    assert "too many tagged-field sections" in _wait_for_line(broker, "malformed Metadata v12 request")


# ---- partition limits ----------------------------------------------------------------------------------

def _create_topics(port: int, name: str, partitions: int, rf: int = 1) -> Any:
    req = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf, assignments=[], configs=[])],
        timeout_ms=30000, validate_only=False)
    with RawClient(port, timeout=30) as c:
        return c.request(req, 5).topics[0]


def _create_partitions(port: int, name: str, count: int) -> Any:
    req = CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
        name=name, count=count, assignments=None)], timeout_ms=30000, validate_only=False)
    with RawClient(port, timeout=30) as c:
        return c.request(req, 1).results[0]


class _MetadataLoop:
    """Another client asking for metadata in a loop; records each round trip."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.round_trips: list[float] = []
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        client = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                client.list_topics(timeout=10)
            except Exception as exc:  # recorded and asserted on below
                self.errors.append(exc)
            self.round_trips.append(time.monotonic() - started)

    def __enter__(self) -> _MetadataLoop:
        self._thread.start()
        wait_until(lambda: self.round_trips or self.errors, 30, "a first metadata round trip", interval=0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(15)


def test_a_million_and_two_million_partitions_are_refused_at_once(broker: BrokerProcess) -> None:
    topic = "grow-" + uuid.uuid4().hex[:6]
    create_topic(broker.bootstrap, topic, partitions=2)
    with _MetadataLoop(broker.bootstrap) as others:
        started = time.monotonic()
        created = _create_topics(broker.port, "huge-" + uuid.uuid4().hex[:6], 1_000_000)
        first = time.monotonic() - started
        started = time.monotonic()
        grown = _create_partitions(broker.port, topic, 2_000_000)
        second = time.monotonic() - started
        answered = len(others.round_trips)
        wait_until(lambda: len(others.round_trips) > answered or others.errors, 10,
                   "a metadata round trip after the refusals", interval=0.01)
    assert created.error_code == INVALID_PARTITIONS and "max.partitions" in created.error_message
    assert grown.error_code == INVALID_PARTITIONS and "max.partitions" in grown.error_message
    assert first < 5 and second < 5  # milliseconds in fact; generous for a loaded machine
    assert not others.errors and max(others.round_trips) < 5
    assert len(others.round_trips) >= 2


@pytest.mark.parametrize(("partitions", "rf", "code"), [
    (0, 1, INVALID_PARTITIONS), (-3, 1, INVALID_PARTITIONS), (2**31 - 1, 1, INVALID_PARTITIONS),
    (1, 3, INVALID_REPLICATION_FACTOR), (1, 0, INVALID_REPLICATION_FACTOR),
])
def test_impossible_topics(broker: BrokerProcess, partitions: int, rf: int, code: int) -> None:
    result = _create_topics(broker.port, "bad-" + uuid.uuid4().hex[:6], partitions, rf)
    assert result.error_code == code, result.error_message


def test_partition_limits_against_existing_partitions(small: BrokerProcess) -> None:
    first = "lim-" + uuid.uuid4().hex[:6]  # beside MEMORY_TOPIC's one partition
    assert _create_topics(small.port, first, 6).error_code == 0
    over_broker = _create_topics(small.port, "lim2-" + uuid.uuid4().hex[:6], 3)
    assert over_broker.error_code == POLICY_VIOLATION and "max.broker.partitions" in over_broker.error_message
    grown = _create_partitions(small.port, first, 8)  # possible alone, not beside MEMORY_TOPIC
    assert grown.error_code == POLICY_VIOLATION and "max.broker.partitions (8)" in grown.error_message
    assert _create_partitions(small.port, first, 7).error_code == 0
    alone_too_big = _create_partitions(small.port, first, 9)
    assert alone_too_big.error_code == INVALID_PARTITIONS and "max.broker.partitions=8" in alone_too_big.error_message
    too_many = _create_topics(small.port, "lim3-" + uuid.uuid4().hex[:6], 11)
    assert too_many.error_code == INVALID_PARTITIONS and "max.partitions (10)" in too_many.error_message


# ---- connection limits ----------------------------------------------------------------------------------

def _raw_answers(client: RawClient) -> bool:
    """A Metadata request answered on `client` (the whole response read, so the next frame is the next answer)."""
    client.send_raw(_framed(MetadataRequest(topics=[]), 1, correlation_id=-1))
    return len(client.recv_frame()) >= 4


def _kept_sockets(port: int, source: str, count: int) -> list[socket.socket]:
    return _kept(lambda: _connect(port, source), _answers, count, f"connections from {source}")


def test_per_ip_limit_and_overrides(broker: BrokerProcess) -> None:
    kept = [_connect(broker.port, "127.0.0.2") for _ in range(2)]
    refused = _connect(broker.port, "127.0.0.2")
    assert _closed_by_peer(refused)
    assert all(_answers(s) for s in kept)
    assert "address 127.0.0.2 already has the configured maximum of 2 connections" in broker.output()
    zero = _connect(broker.port, "127.0.0.3")
    assert _closed_by_peer(zero)
    default = [_connect(broker.port, "127.0.0.4") for _ in range(50)]
    extra = _connect(broker.port, "127.0.0.4")
    assert _closed_by_peer(extra)
    assert _answers(default[-1])
    kept[0].close()
    again = _kept_sockets(broker.port, "127.0.0.2", 1)[0]  # once the broker has seen kept[0] close
    for s in [*kept, *default, refused, zero, extra, again]:
        s.close()
    assert _list_topics(broker.bootstrap) is not None


def test_max_connections(small: BrokerProcess) -> None:
    kept = _kept_sockets(small.port, "127.0.0.5", 6)  # once the connections of earlier tests are gone
    refusal = "configured maximum of 6 connections (max.connections)"
    refused_before = small.output().count(refusal)
    extra = _connect(small.port, "127.0.0.6")
    assert _closed_by_peer(extra)
    assert all(_answers(s) for s in kept)
    wait_until(lambda: small.output().count(refusal) > refused_before, 10, f"the broker to log {refusal!r}")
    kept.pop().close()
    replacement = _kept_sockets(small.port, "127.0.0.6", 1)[0]  # once the broker has seen it close
    for s in [*kept, extra, replacement]:
        s.close()


# ---- request memory --------------------------------------------------------------------------------------

def test_request_memory_bound_slows_readers_but_drops_nothing(small: BrokerProcess) -> None:
    """queued.max.request.bytes is 1 MiB: four clients pipelining 8 MB of produce requests each are
    read as memory frees, and every request is answered and stored."""
    topic = MEMORY_TOPIC
    per_client, value = 40, b"v" * 200_000
    results: list[list[int]] = []
    # four connections, opened once the broker has let go of those of earlier tests (max.connections is 6)
    clients = _kept(lambda: RawClient(small.port, timeout=60),
                    _raw_answers, 4, "raw clients")

    def client(n: int) -> None:
        with clients[n] as c:
            frames = []
            for i in range(per_client):
                req = ProduceRequest(transactional_id=None, acks=1, timeout_ms=30000, topic_data=[
                    ProduceRequest.TopicProduceData(name=topic, partition_data=[
                        ProduceRequest.TopicProduceData.PartitionProduceData(
                            index=0, records=build_batch([(None, value + b"%d-%d" % (n, i))]))])])
                frames.append(_framed(req, 7, correlation_id=i))
            c.send_raw(b"".join(frames))
            codes = []
            for _ in range(per_client):
                frame = c.recv_frame()
                codes.append(struct.unpack_from(">i", frame)[0])
            results.append(codes)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sorted(results) == [list(range(per_client))] * 4  # all answered, in order
    got = consume_all(small.bootstrap, topic, 4 * per_client, timeout=60)
    assert sorted(m.value()[len(value):] for m in got) == sorted(
        b"%d-%d" % (n, i) for n in range(4) for i in range(per_client))


# ---- hostile values in well-formed requests (found by the live fuzz run, tests/fuzz/test_live_broker.py) ----

UNKNOWN_TOPIC_ID, INVALID_REQUEST, INVALID_TOPIC_EXCEPTION = 100, 42, 17


def _no_unexpected_error(broker: BrokerProcess) -> None:
    out = broker.output()
    assert "Unexpected error" not in out and "Traceback" not in out, out[-3000:]


def test_fetch_with_the_zero_topic_id_is_unknown_topic_id(broker: BrokerProcess) -> None:
    # From v13 Fetch names topics by id; the zero id (kafka-python decodes it as None) names none.
    part = FetchRequest.FetchTopic.FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=0,
                                                  last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=1024)
    request = _fetch([FetchRequest.FetchTopic(topic="", topic_id=None, partitions=[part])])
    with RawClient(broker.port) as c:
        response = c.request(request, 13)
    assert [p.error_code for t in response.responses for p in t.partitions] == [UNKNOWN_TOPIC_ID]
    _no_unexpected_error(broker)


def test_delete_topics_naming_nothing_is_an_invalid_request(broker: BrokerProcess, known_topic: str) -> None:
    topic = DeleteTopicsRequest.DeleteTopicState
    request = DeleteTopicsRequest(topics=[topic(name=None, topic_id=None)], timeout_ms=5000)
    with RawClient(broker.port) as c:
        response = c.request(request, 6)
    assert [(r.name, r.error_code) for r in response.responses] == [(None, INVALID_REQUEST)]
    assert known_topic in _list_topics(broker.bootstrap)
    _no_unexpected_error(broker)


@pytest.mark.parametrize(("api", "version"), [("CreateTopics", 4), ("DescribeConfigs", 1)])
def test_a_name_of_32767_bytes_gets_an_error_message_that_fits_a_response(
    broker: BrokerProcess, api: str, version: int
) -> None:
    # The error message quotes the name: past 32,767 bytes it could not be encoded (int16 length).
    name = "x" * 32767
    if api == "CreateTopics":
        request: Any = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=1, replication_factor=1, assignments=[], configs=[])],
            timeout_ms=5000, validate_only=False)
    else:
        request = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=2, resource_name=name, configuration_keys=None)], include_synonyms=False)
    with RawClient(broker.port) as c:
        response = c.request(request, version)
    result = response.topics[0] if api == "CreateTopics" else response.results[0]
    assert result.error_code != 0 and 0 < len(result.error_message) <= 1000
    _no_unexpected_error(broker)


def test_a_topic_with_the_longest_name_can_be_deleted(broker: BrokerProcess) -> None:
    # 249 characters is a legal topic name; `<topic>-<partition>.<uuid>-delete` would pass 255 bytes
    name = "d" * 249
    assert _create_topics(broker.port, name, 2).error_code == 0
    data = broker.log_dir
    assert (data / f"{name}-1").is_dir()
    with RawClient(broker.port) as c:
        response = c.request(DeleteTopicsRequest(topic_names=[name], timeout_ms=30000), 4)
    assert [r.error_code for r in response.responses] == [0]
    wait_until(lambda: not any(p.name.startswith("ddd") for p in data.iterdir()), 30, "the log directories to go")
    assert name not in _list_topics(broker.bootstrap)
    _no_unexpected_error(broker)


def _duplicates(api: str, name: str, n: int) -> tuple[Any, int]:
    if api == "Metadata":
        t = MetadataRequest.MetadataRequestTopic
        return MetadataRequest(topics=[t(name=name)] * n, allow_auto_topic_creation=False), 9
    if api == "DescribeGroups":
        return DescribeGroupsRequest(groups=[name] * n, include_authorized_operations=False), 5
    if api == "DescribeConfigs":
        r = DescribeConfigsRequest.DescribeConfigsResource(resource_type=2, resource_name=name, configuration_keys=None)
        return DescribeConfigsRequest(resources=[r] * n, include_synonyms=True, include_documentation=True), 4
    g = OffsetFetchRequest.OffsetFetchRequestGroup(group_id=name, member_id=None, member_epoch=-1, topics=None)
    return OffsetFetchRequest(groups=[g] * n, require_stable=False), 8


def _entries(api: str, response: Any) -> list[Any]:
    return {"Metadata": lambda: response.topics, "DescribeGroups": lambda: response.groups,
            "DescribeConfigs": lambda: response.results, "OffsetFetch": lambda: response.groups}[api]()


@pytest.mark.parametrize("api", ["Metadata", "DescribeGroups", "DescribeConfigs", "OffsetFetch"])
def test_a_resource_named_many_times_is_described_once(broker: BrokerProcess, known_topic: str, api: str) -> None:
    # 100,000 names in a request of about 1 MB, each description up to kilobytes (a topic's partitions or
    # configs, a group's members or offsets): answered once each, the response stays small
    request, version = _duplicates(api, known_topic, 100_000)
    with RawClient(broker.port, timeout=30) as c:
        response = c.request(request, version)
    assert len(_entries(api, response)) == 1
    _no_unexpected_error(broker)


def test_a_group_id_longer_than_a_string_may_be_is_refused(broker: BrokerProcess) -> None:
    # A compact string can say 40,000 bytes; Kafka refuses strings over 32,767, and a group so named
    # could not be listed by ListGroups v0-2 (int16 lengths).
    join = JoinGroupRequest(group_id="g" * 40_000, session_timeout_ms=10000, rebalance_timeout_ms=10000,
                            member_id="", group_instance_id=None, protocol_type="consumer", protocols=[
                                JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")], reason=None)
    with RawClient(broker.port) as c:
        c.send_raw(_framed(join, 7))
        assert c.is_closed_by_peer()
    assert "longer than a string may be" in _wait_for_line(broker, "malformed JoinGroup v7 request")
    with RawClient(broker.port) as c:
        assert c.request(ListGroupsRequest(), 2).error_code == 0
    _no_unexpected_error(broker)


def test_a_fetch_asking_for_a_gigabyte_gets_fetch_max_bytes(small: BrokerProcess) -> None:
    """fetch.max.bytes caps what one Fetch reads and answers, whatever its MaxBytes and partition MaxBytes
    (Kafka's cap): five batches of 100 kB, a fetch of 1 GiB from the first gets the two that fit in
    250,000 bytes; a fetch whose first batch alone is over the cap still gets that batch (KIP-74)."""
    value = b"f" * 100_000
    with RawClient(small.port, timeout=30) as c:
        offsets = []
        for i in range(5):
            resp = c.request(ProduceRequest(transactional_id=None, acks=1, timeout_ms=30000, topic_data=[
                ProduceRequest.TopicProduceData(name=MEMORY_TOPIC, partition_data=[
                    ProduceRequest.TopicProduceData.PartitionProduceData(
                        index=0, records=build_batch([(None, value + b"%d" % i)]))])]), 7)
            (part,) = resp.responses[0].partition_responses
            assert part.error_code == 0
            offsets.append(part.base_offset)

        def fetch(offset: int, max_bytes: int) -> list[int]:
            request = FetchRequest(
                replica_id=-1, max_wait_ms=0, min_bytes=1 << 30, max_bytes=max_bytes, isolation_level=0,
                session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="", topics=[
                    FetchRequest.FetchTopic(topic=MEMORY_TOPIC, partitions=[FetchRequest.FetchTopic.FetchPartition(
                        partition=0, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
                        log_start_offset=-1, partition_max_bytes=max_bytes)])])
            (part,) = c.request(request, 11).responses[0].partitions
            assert part.error_code == 0
            return [h.base_offset for _pos, h in iter_batches(bytes(part.records or b""))]

        assert fetch(offsets[0], 1 << 30) == offsets[:2]
        assert fetch(offsets[2], 1 << 30) == offsets[2:4]
        assert fetch(offsets[4], 10) == offsets[4:]  # the first batch whole, whatever the limit


def test_idle_connections_are_closed_and_busy_ones_kept(tmp_path: Path) -> None:
    """connections.max.idle.ms (1 s here): a connection silent for longer is closed by the broker (it
    cannot be held forever, authenticated or not); one that keeps sending, and one whose request takes
    longer than that to answer (a Fetch long poll of 3 s), are kept."""
    with _serving(tmp_path, {"connections.max.idle.ms": "1000"}) as b:
        topic = "idle-" + uuid.uuid4().hex[:6]
        create_topic(b.bootstrap, topic)
        metadata = MetadataRequest(topics=[])
        with RawClient(b.port) as idle, RawClient(b.port) as busy:
            idle.request(metadata, 1)
            busy.request(metadata, 1)

            def idle_closed() -> bool:
                busy.request(metadata, 1)  # every 0.2 s: never silent for long
                return idle.is_closed_by_peer(0.01)

            wait_until(idle_closed, 60, "the idle connection to be closed by the broker")
            assert busy.request(metadata, 1).brokers  # kept, for longer than the idle limit
            part = FetchRequest.FetchTopic.FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=0,
                                                          last_fetched_epoch=-1, log_start_offset=-1,
                                                          partition_max_bytes=1024)
            long_poll = FetchRequest(replica_id=-1, max_wait_ms=3000, min_bytes=1, max_bytes=1 << 20,
                                     isolation_level=0, session_id=0, session_epoch=-1, rack_id="",
                                     topics=[FetchRequest.FetchTopic(topic=topic, partitions=[part])],
                                     forgotten_topics_data=[])
            with RawClient(b.port, timeout=30) as polling:
                answer = polling.request(long_poll, 11)  # nothing to read: answered after MaxWaitMs
                assert [p.error_code for t in answer.responses for p in t.partitions] == [0]
                assert polling.request(metadata, 1).brokers  # still open
