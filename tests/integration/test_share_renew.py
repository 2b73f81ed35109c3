"""ShareFetch and ShareAcknowledge v2 (Kafka 4.2) spoken over a real socket to a real broker, as no client
Odradek is tested with sends them yet (librdkafka 2.16 stays at v1): acquisition-lock renewal (KIP-1222),
where a member that keeps renewing keeps its record past the lock duration and another member waiting
for it gets nothing until the renewals stop, then gets it with the delivery count one higher (a renewal
is not a delivery); the renewal rules (INVALID_REQUEST for a renewing fetch that asks for records, for
RENEW without IsRenewAck, INVALID_RECORD_STATE for a record the member no longer holds); and the acquire
modes (KIP-1206): record-limit acquires no more than MaxRecords of a batch, batch-optimized finishes the
batch the limit falls in. Also, over v1 and v2: the answers read byte by byte against Kafka's schema,
a leave that overtakes the final acknowledgements, MaxBytes 0 and the partitions' rotation.

Each member joins the group with one heartbeat (a share session is opened only for a member the group
coordinator knows; the 45 s session timeout outlasts a test); the groups read from the earliest offset
(a group config).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from confluent_kafka.admin import ResourceType

from odradek.protocol.errors import ErrorCode
from odradek.protocol.kip932 import ShareAcknowledgeRequest, ShareFetchRequest, ShareGroupHeartbeatRequest
from odradek.protocol.records import iter_batches
from odradek.server.share_sessions import next_epoch
from tests.clients import alter_configs, create_topic, produce, unique_name
from tests.harness import BrokerProcess
from tests.rawclient import RawClient
from tests.share_consumers import CONFIG, LOCK_MS, join_share_group
from tests.share_consumers import topic_id as _topic_id
from tests.waiting import wait_until

ACCEPT, RENEW = 1, 4
BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1
_FetchPartition = ShareFetchRequest.FetchTopic.FetchPartition
_AckPartition = ShareAcknowledgeRequest.AcknowledgeTopic.AcknowledgePartition


FETCH_MAX_BYTES = 250_000
_TOPICS: dict[str, str] = {}  # each test group's topic (its members subscribe to it)


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    # group.share.record.lock.duration.ms = LOCK_MS (1 s)
    return {**CONFIG, "fetch.max.bytes": str(FETCH_MAX_BYTES)}


class _Member:
    """One share-group member on its own connection, keeping its share session's epoch."""

    def __init__(self, broker: BrokerProcess, group: str, topic_id: uuid.UUID) -> None:
        self.raw = RawClient(broker.port)
        self.group, self.topic_id = group, topic_id
        self.member_id = uuid.uuid4().hex
        self.epoch = 0
        join_share_group(self.raw, group, self.member_id, [_TOPICS[group]])

    def close(self) -> None:
        self.raw.close()

    def _sent(self, resp: Any) -> Any:
        if resp.error_code == 0:
            self.epoch = next_epoch(self.epoch)
        return resp

    def fetch(self, acks: Sequence[tuple[int, int, int]] = (), *, renew: bool = False, mode: int = BATCH_OPTIMIZED,
              max_records: int = 100, max_wait_ms: int = 0, max_bytes: int = 1 << 20, version: int = 2) -> Any:
        """A ShareFetch of partition 0 with `acks` ((first, last, type) each); a renewing one (IsRenewAck)
        asks for nothing, as Kafka requires."""
        batch = _FetchPartition.AcknowledgementBatch
        limits = dict(max_wait_ms=0, min_bytes=0, max_bytes=0, max_records=0) if renew else dict(
            max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=max_bytes, max_records=max_records)
        part = _FetchPartition(partition_index=0, acknowledgement_batches=[
            batch(first_offset=f, last_offset=last, acknowledge_types=[t]) for f, last, t in acks])
        return self._sent(self.raw.request(ShareFetchRequest(
            group_id=self.group, member_id=self.member_id, share_session_epoch=self.epoch, **limits,
            batch_size=max_records, share_acquire_mode=mode, is_renew_ack=renew,
            topics=[ShareFetchRequest.FetchTopic(topic_id=self.topic_id, partitions=[part])],
            forgotten_topics_data=[]), version=version))

    def acknowledge(self, acks: Sequence[tuple[int, int, int]], *, renew: bool = True, version: int = 2) -> Any:
        part = _AckPartition(partition_index=0, acknowledgement_batches=[
            _AckPartition.AcknowledgementBatch(first_offset=f, last_offset=last, acknowledge_types=[t])
            for f, last, t in acks])
        return self._sent(self.raw.request(ShareAcknowledgeRequest(
            group_id=self.group, member_id=self.member_id, share_session_epoch=self.epoch, is_renew_ack=renew,
            topics=[ShareAcknowledgeRequest.AcknowledgeTopic(topic_id=self.topic_id, partitions=[part])]),
            version=version))


def _partition(resp: Any) -> Any:
    assert resp.error_code == 0, resp
    (topic,) = resp.responses
    (part,) = topic.partitions
    return part


def _acquired(resp: Any) -> list[tuple[int, int, int]]:
    if resp.error_code or not resp.responses:
        return []
    return [(a.first_offset, a.last_offset, a.delivery_count) for a in _partition(resp).acquired_records]


def _setup(broker: BrokerProcess, values: list[bytes], **produce_conf: Any) -> tuple[str, uuid.UUID]:
    """A new one-partition topic holding `values` and a new group reading it from the earliest offset."""
    topic, group = unique_name("share"), unique_name("sg")
    create_topic(broker.bootstrap, topic)
    alter_configs(broker.bootstrap, ResourceType.GROUP, group, share__auto__offset__reset="earliest")
    produce(broker.bootstrap, topic, values, **produce_conf)
    with RawClient(broker.port) as raw:
        topic_id = wait_until(lambda: _topic_id(raw, topic), message="the topic id")
    _TOPICS[group] = topic
    return group, topic_id


def test_renewed_record_is_not_redelivered(broker: BrokerProcess) -> None:
    group, topic_id = _setup(broker, [b"long job"])
    a, b = _Member(broker, group, topic_id), _Member(broker, group, topic_id)
    try:
        assert _acquired(a.fetch(max_wait_ms=5000)) == [(0, 0, 1)]
        # b long-polls for the record while a renews its lock, alternately by ShareAcknowledge and by a
        # renewing ShareFetch, every quarter of the lock duration
        waited: dict[str, Any] = {}
        done = threading.Event()

        def wait_for_record() -> None:
            start = time.monotonic()
            waited["resp"] = b.fetch(max_wait_ms=3 * LOCK_MS)
            waited["seconds"] = time.monotonic() - start
            done.set()

        waiter = threading.Thread(target=wait_for_record, daemon=True)
        waiter.start()
        renewals = 0
        while not done.wait(LOCK_MS / 4000):
            if renewals % 2 == 0:
                resp = a.acknowledge([(0, 0, RENEW)])
                assert resp.acquisition_lock_timeout_ms == LOCK_MS  # ShareAcknowledge v2's new field
                assert resp.responses[0].partitions[0].error_code == 0
            else:
                part = _partition(a.fetch([(0, 0, RENEW)], renew=True))
                assert (part.acknowledge_error_code, part.acquired_records, part.records) == (0, [], b"")
            renewals += 1
        waiter.join()
        assert _acquired(waited["resp"]) == [], "the renewed record went to another member"
        assert waited["seconds"] >= 2 * LOCK_MS / 1000 and renewals >= 4
        # the renewals stop: the lock runs out and b gets the record, delivered a second time (not more)
        assert _acquired(b.fetch(max_wait_ms=5 * LOCK_MS)) == [(0, 0, 2)]
        # a holds nothing now: renewing is INVALID_RECORD_STATE, as any acknowledgement of it
        assert a.acknowledge([(0, 0, RENEW)]).responses[0].partitions[0].error_code == \
            ErrorCode.INVALID_RECORD_STATE
        assert _partition(b.fetch([(0, 0, ACCEPT)])).acknowledge_error_code == 0
    finally:
        a.close()
        b.close()


def test_renewal_rules(broker: BrokerProcess) -> None:
    group, topic_id = _setup(broker, [b"x"])
    m = _Member(broker, group, topic_id)
    try:
        assert _acquired(m.fetch(max_wait_ms=5000)) == [(0, 0, 1)]
        # a renewing fetch must ask for nothing (the epoch does not move: the request was refused whole)
        refused = m.raw.request(ShareFetchRequest(
            group_id=group, member_id=m.member_id, share_session_epoch=m.epoch, max_wait_ms=0, min_bytes=0,
            max_bytes=0, max_records=5, batch_size=5, share_acquire_mode=0, is_renew_ack=True,
            topics=[], forgotten_topics_data=[]), version=2)
        assert refused.error_code == ErrorCode.INVALID_REQUEST
        # an acquire mode Kafka does not know
        assert m.fetch(mode=7).error_code == ErrorCode.INVALID_REQUEST
        # RENEW without IsRenewAck, and in v1 (which has no IsRenewAck), is INVALID_REQUEST for the partition
        assert _partition(m.fetch([(0, 0, RENEW)])).acknowledge_error_code == ErrorCode.INVALID_REQUEST
        assert _partition(m.fetch([(0, 0, RENEW)], version=1)).acknowledge_error_code == ErrorCode.INVALID_REQUEST
        assert m.acknowledge([(0, 0, RENEW)], renew=False).responses[0].partitions[0].error_code == \
            ErrorCode.INVALID_REQUEST
        v1 = m.acknowledge([(0, 0, RENEW)], version=1)
        assert v1.responses[0].partitions[0].error_code == ErrorCode.INVALID_REQUEST
        # nothing of that touched the record: still m's, accepted now
        assert m.acknowledge([(0, 0, ACCEPT)], renew=False).responses[0].partitions[0].error_code == 0
    finally:
        m.close()


def test_acquire_modes(broker: BrokerProcess) -> None:
    """Ten records in one batch, MaxRecords 3: record-limit acquires 0-2 (the whole batch is sent, the
    client keeps the acquired ones), the next member 3-5; batch-optimized (v1's) takes the rest of the
    batch, 6-9, as Kafka's MaxRecords "can be exceeded for alignment of batch boundaries"."""
    group, topic_id = _setup(broker, [f"r{i}".encode() for i in range(10)], **{"linger.ms": 1000})
    members = [_Member(broker, group, topic_id) for _ in range(3)]
    try:
        resp = members[0].fetch(mode=RECORD_LIMIT, max_records=3, max_wait_ms=5000)
        assert _acquired(resp) == [(0, 2, 1)]
        batches = [(h.base_offset, h.last_offset) for _pos, h in iter_batches(bytes(_partition(resp).records))]
        assert batches == [(0, 9)], "the records were produced as one batch"
        assert _acquired(members[1].fetch(mode=RECORD_LIMIT, max_records=3, max_wait_ms=5000)) == [(3, 5, 1)]
        assert _acquired(members[2].fetch(mode=BATCH_OPTIMIZED, max_records=3, max_wait_ms=5000)) == [(6, 9, 1)]
    finally:
        for m in members:
            m.close()


def test_a_share_fetch_asking_for_a_gigabyte_acquires_fetch_max_bytes(broker: BrokerProcess) -> None:
    """fetch.max.bytes caps a ShareFetch as it caps a Fetch: of five batches of 100 kB, a member asking for
    1 GiB acquires the two that fit in 250,000 bytes, the next member the next two."""
    group, topic_id = _setup(broker, [b"s" * 100_000 + b"%d" % i for i in range(5)], **{"batch.size": 1000})
    members = [_Member(broker, group, topic_id) for _ in range(2)]
    try:
        assert _acquired(members[0].fetch(max_bytes=1 << 30, max_wait_ms=5000)) == [(0, 1, 1)]
        assert _acquired(members[1].fetch(max_bytes=1 << 30, max_wait_ms=5000)) == [(2, 3, 1)]
    finally:
        for m in members:
            m.close()


def test_a_share_fetch_reads_in_steps_and_answers_in_offset_order(broker: BrokerProcess) -> None:
    """A partition is read in growing steps until MaxRecords are acquired (not MaxBytes of log at once):
    1,500 one-record batches of 156 bytes, a fetch of MaxRecords 1,200 (more than the first step's 64 KiB
    hold) acquires exactly 0-1199, answered as one range with its batches in offset order; the next
    fetch the rest."""
    values = [b"v%05d" % i + b"." * 80 for i in range(1500)]
    group, topic_id = _setup(broker, values, **{"batch.size": 100, "linger.ms": 0})
    member = _Member(broker, group, topic_id)
    try:
        resp = member.fetch(max_records=1200, max_wait_ms=5000)
        assert _acquired(resp) == [(0, 1199, 1)]
        bases = [h.base_offset for _pos, h in iter_batches(bytes(_partition(resp).records))]
        assert bases == list(range(1200))  # one record a batch, as produced
        assert _acquired(member.fetch(max_records=1200, max_wait_ms=5000)) == [(1200, 1499, 1)]
    finally:
        member.close()


class _Wire:
    """A reader of response bytes by the published schema, independent of Odradek's codec: what a client
    such as librdkafka parses (flexible versions: compact lengths as unsigned varints, tagged fields)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        out = self.data[self.pos:self.pos + n]
        assert len(out) == n, "the response ends early"
        self.pos += n
        return out

    def int(self, size: int) -> int:
        return int.from_bytes(self.take(size), "big", signed=True)

    def uvarint(self) -> int:
        shift = out = 0
        while True:
            b = self.take(1)[0]
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7

    def compact_length(self) -> int:
        """-1 for null, else the length (a compact field writes length + 1)."""
        return self.uvarint() - 1

    def string(self) -> str | None:
        n = self.compact_length()
        return None if n < 0 else self.take(n).decode()

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())

    def array(self, item: Any) -> list[Any]:
        n = self.compact_length()
        assert n >= 0, "a null array where the schema has none"
        return [item() for _ in range(n)]


def _wire_request(raw: RawClient, request: Any, version: int) -> _Wire:
    """Send `request` and read its response's body as bytes (after the correlation id and the flexible
    response header's tagged fields)."""
    raw.send_raw(raw.codec.send(request, version))
    wire = _Wire(raw.recv_frame())
    wire.int(4)
    wire.tags()
    return wire


def _wire_leader(w: _Wire) -> tuple[int, int]:
    out = (w.int(4), w.int(4))
    w.tags()
    return out


def _wire_share_fetch(w: _Wire) -> dict[str, Any]:
    """ShareFetchResponse v1-2, field by field; each partition's records as their compact length (-1 null)."""
    def partition() -> dict[str, Any]:
        p = {"partition": w.int(4), "error": w.int(2), "error_message": w.string(), "ack_error": w.int(2),
             "ack_error_message": w.string(), "leader": _wire_leader(w)}
        n = w.compact_length()
        p["records_length"] = n
        w.take(max(n, 0))

        def acquired() -> tuple[int, int, int]:
            a = (w.int(8), w.int(8), w.int(2))
            w.tags()
            return a

        p["acquired"] = w.array(acquired)
        w.tags()
        return p

    def topic() -> tuple[bytes, list[dict[str, Any]]]:
        t = (w.take(16), w.array(partition))
        w.tags()
        return t

    def endpoint() -> tuple[int, str | None, int, str | None]:
        e = (w.int(4), w.string(), w.int(4), w.string())
        w.tags()
        return e

    out = {"throttle": w.int(4), "error": w.int(2), "error_message": w.string(), "lock_ms": w.int(4),
           "topics": w.array(topic), "node_endpoints": w.array(endpoint)}
    w.tags()
    assert w.pos == len(w.data), "bytes past the end of the response"
    return out


def _wire_share_acknowledge(w: _Wire, version: int) -> dict[str, Any]:
    def partition() -> dict[str, Any]:
        p = {"partition": w.int(4), "error": w.int(2), "error_message": w.string(), "leader": _wire_leader(w)}
        w.tags()
        return p

    def topic() -> tuple[bytes, list[dict[str, Any]]]:
        t = (w.take(16), w.array(partition))
        w.tags()
        return t

    out: dict[str, Any] = {"throttle": w.int(4), "error": w.int(2), "error_message": w.string()}
    if version >= 2:
        out["lock_ms"] = w.int(4)
    out["topics"] = w.array(topic)
    out["node_endpoints"] = w.array(lambda: (w.int(4), w.string(), w.int(4), w.string(), w.tags()))
    w.tags()
    assert w.pos == len(w.data), "bytes past the end of the response"
    return out


@pytest.mark.parametrize("version", [1, 2])
def test_share_responses_on_the_wire(broker: BrokerProcess, version: int) -> None:
    """ShareFetch and ShareAcknowledge answers read byte by byte against Kafka's schema: a partition with
    nothing acquired carries empty records, never null (librdkafka 2.15 dropped such a whole response:
    "invalid MessageSetSize -1"), as Kafka 4.1+ writes them (KAFKA-18889); an opening fetch answers
    every partition it names; CurrentLeader keeps its default (0, 0) and NodeEndpoints is empty unless a
    partition is NOT_LEADER_OR_FOLLOWER; AcquisitionLockTimeoutMs is the lock duration, 0 in a request
    refused whole."""
    group, topic_id = _setup(broker, [b"only"])
    a, b = _Member(broker, group, topic_id), _Member(broker, group, topic_id)
    batch = _FetchPartition.AcknowledgementBatch

    def fetch(m: _Member, acks: list[Any] | None = None, wait_ms: int = 0) -> dict[str, Any]:
        request = ShareFetchRequest(
            group_id=group, member_id=m.member_id, share_session_epoch=m.epoch, max_wait_ms=wait_ms,
            min_bytes=1, max_bytes=1 << 20, max_records=10, batch_size=10, share_acquire_mode=0, is_renew_ack=False,
            topics=[ShareFetchRequest.FetchTopic(topic_id=topic_id, partitions=[
                _FetchPartition(partition_index=0, acknowledgement_batches=acks or [])])],
            forgotten_topics_data=[])
        out = _wire_share_fetch(_wire_request(m.raw, request, version))
        if out["error"] == 0:
            m.epoch = next_epoch(m.epoch)
        return out

    try:
        got = fetch(a, wait_ms=5000)
        assert got["error"] == 0 and got["lock_ms"] == LOCK_MS and got["node_endpoints"] == []
        ((tid, (p,)),) = got["topics"]
        assert tid == topic_id.bytes and p["acquired"] == [(0, 0, 1)] and p["records_length"] > 0
        assert p["leader"] == (0, 0) and p["error_message"] is None and p["ack_error_message"] is None
        # a acknowledges in a fetch that acquires nothing more: the partition is answered for its
        # acknowledgement, records empty (they were null)
        got = fetch(a, [batch(first_offset=0, last_offset=0, acknowledge_types=[ACCEPT])])
        ((_tid, (p,)),) = got["topics"]
        assert (p["ack_error"], p["records_length"], p["acquired"]) == (0, 0, [])
        # b opens its session when there is nothing to acquire: the partition is answered, records empty
        got = fetch(b)
        ((_tid, (p,)),) = got["topics"]
        assert (p["error"], p["records_length"], p["acquired"], p["leader"]) == (0, 0, [], (0, 0))
        # a request refused whole: no partitions, lock 0
        b.epoch = 99
        got = fetch(b)
        assert (got["error"], got["lock_ms"], got["topics"]) == (ErrorCode.INVALID_SHARE_SESSION_EPOCH, 0, [])
        # ShareAcknowledge: leader (0, 0); v2 answers the lock duration
        ack = ShareAcknowledgeRequest(
            group_id=group, member_id=a.member_id, share_session_epoch=a.epoch, is_renew_ack=False,
            topics=[ShareAcknowledgeRequest.AcknowledgeTopic(topic_id=topic_id, partitions=[_AckPartition(
                partition_index=0, acknowledgement_batches=[_AckPartition.AcknowledgementBatch(
                    first_offset=0, last_offset=0, acknowledge_types=[ACCEPT])])])])
        got = _wire_share_acknowledge(_wire_request(a.raw, ack, version), version)
        ((_tid, (p,)),) = got["topics"]
        assert (p["error"], p["leader"]) == (ErrorCode.INVALID_RECORD_STATE, (0, 0))
        assert got.get("lock_ms", LOCK_MS) == LOCK_MS and got["node_endpoints"] == []
    finally:
        a.close()
        b.close()


def test_a_leave_does_not_overtake_final_acknowledgements(broker: BrokerProcess) -> None:
    """confluent-kafka sends its last acknowledgements on the data connection and its leave on the
    coordinator connection about a millisecond later, so the leave may arrive first. As in Kafka, a leave
    gives nothing back: the member's records stay acquired until its share session closes, so the final
    ShareAcknowledge (epoch -1) arriving after the leave still accepts them and none is redelivered."""
    group, topic_id = _setup(broker, [b"a", b"b", b"c"])
    m, other = _Member(broker, group, topic_id), _Member(broker, group, topic_id)
    try:
        assert _acquired(m.fetch(max_wait_ms=5000)) == [(0, 2, 1)]
        with RawClient(broker.port) as coordinator:
            left = coordinator.request(ShareGroupHeartbeatRequest(
                group_id=group, member_id=m.member_id, member_epoch=-1), version=1)
            assert left.error_code == 0, left
        m.epoch = -1
        final = m.acknowledge([(0, 2, ACCEPT)], renew=False)
        assert final.error_code == 0 and final.responses[0].partitions[0].error_code == 0, final
        produce(broker.bootstrap, _TOPICS[group], [b"after"])
        # the first available record is the one produced after: nothing acknowledged came back
        assert _acquired(other.fetch(max_wait_ms=5000)) == [(3, 3, 1)]
    finally:
        m.close()
        other.close()


def test_max_bytes_zero_and_partition_rotation(broker: BrokerProcess) -> None:
    """MaxBytes 0 acquires nothing, as Kafka (librdkafka's 0180 pins it: fetch.max.bytes=0 returns no
    records); MaxRecords 3 over two partitions of 6 records each fills a fetch from one partition, the
    partitions taken first in turn by session epoch (Kafka's round-robin rotation), so the second fetch
    serves the other partition though the first still has records."""
    topic, group = unique_name("share"), unique_name("sg")
    create_topic(broker.bootstrap, topic, partitions=2)
    alter_configs(broker.bootstrap, ResourceType.GROUP, group, share__auto__offset__reset="earliest")
    for p in (0, 1):
        produce(broker.bootstrap, topic, [b"p%d-%d" % (p, i) for i in range(6)], partition=p)
    with RawClient(broker.port) as raw:
        topic_id = wait_until(lambda: _topic_id(raw, topic), message="the topic id")
    _TOPICS[group] = topic
    m = _Member(broker, group, topic_id)

    def fetch(max_bytes: int, wait_ms: int = 0) -> dict[int, list[tuple[int, int, int]]]:
        resp = m._sent(m.raw.request(ShareFetchRequest(
            group_id=group, member_id=m.member_id, share_session_epoch=m.epoch, max_wait_ms=wait_ms, min_bytes=1,
            max_bytes=max_bytes, max_records=3, batch_size=3, share_acquire_mode=RECORD_LIMIT, is_renew_ack=False,
            topics=[ShareFetchRequest.FetchTopic(topic_id=topic_id, partitions=[
                _FetchPartition(partition_index=p, acknowledgement_batches=[]) for p in (0, 1)])],
            forgotten_topics_data=[]), version=2))
        assert resp.error_code == 0, resp
        return {p.partition_index: [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records]
                for t in resp.responses for p in t.partitions if p.acquired_records}

    try:
        assert fetch(0, wait_ms=200) == {}  # opens the session (epoch 0), nothing acquired
        served = [fetch(1 << 20, wait_ms=5000), fetch(1 << 20, wait_ms=5000)]
        assert sorted(p for got in served for p in got) == [0, 1], served
        assert all(list(got.values()) == [[(0, 2, 1)]] for got in served), served
    finally:
        m.close()


def test_max_bytes_is_shared_out_between_partitions(broker: BrokerProcess) -> None:
    """MaxBytes (here fetch.max.bytes, 250,000) is shared out evenly between a fetch's partitions, Kafka's
    uniform PartitionMaxBytesStrategy: of two partitions holding three 60 kB batches each, a fetch asking
    for 1 GiB acquires two batches of each (125,000 bytes a partition), not three of one and one of the
    other. The partitions' state is read first, by a fetch before the records are there (a fetch that has
    acquired records reads new partitions in the background and leaves them out)."""
    topic, group = unique_name("share"), unique_name("sg")
    create_topic(broker.bootstrap, topic, partitions=2)
    alter_configs(broker.bootstrap, ResourceType.GROUP, group, share__auto__offset__reset="earliest")
    with RawClient(broker.port) as raw:
        topic_id = wait_until(lambda: _topic_id(raw, topic), message="the topic id")
    _TOPICS[group] = topic
    m = _Member(broker, group, topic_id)

    def fetch(wait_ms: int) -> dict[int, list[tuple[int, int]]]:
        resp = m._sent(m.raw.request(ShareFetchRequest(
            group_id=group, member_id=m.member_id, share_session_epoch=m.epoch, max_wait_ms=wait_ms, min_bytes=1,
            max_bytes=1 << 30, max_records=100, batch_size=100, share_acquire_mode=BATCH_OPTIMIZED,
            is_renew_ack=False, topics=[ShareFetchRequest.FetchTopic(topic_id=topic_id, partitions=[
                _FetchPartition(partition_index=p, acknowledgement_batches=[]) for p in (0, 1)])],
            forgotten_topics_data=[]), version=2))
        assert resp.error_code == 0, resp
        return {p.partition_index: [(a.first_offset, a.last_offset) for a in p.acquired_records]
                for t in resp.responses for p in t.partitions}

    try:
        assert fetch(0) == {0: [], 1: []}
        for p in (0, 1):
            produce(broker.bootstrap, topic, [b"u" * 60_000 + b"%d" % i for i in range(3)], partition=p,
                    **{"batch.size": 1000})
        got = fetch(5000)
        assert got == {0: [(0, 1)], 1: [(0, 1)]}, got
    finally:
        m.close()


def test_a_new_group_is_assigned_initialized_partitions_and_fetches_them_as_they_load(broker: BrokerProcess) -> None:
    """As Kafka (KIP-932): a new group's first heartbeat is answered with no partitions while the group
    coordinator initializes their share-partition state; the next heartbeats get them. The first ShareFetch
    of both partitions of a 2-partition topic returns the records of one (the one whose state was read
    first; the other's is read in the background, as Kafka's share partitions initialise asynchronously),
    the next fetch the other's (librdkafka's 0179 expects exactly that)."""
    topic, group = unique_name("share"), unique_name("sg")
    create_topic(broker.bootstrap, topic, partitions=2)
    alter_configs(broker.bootstrap, ResourceType.GROUP, group, share__auto__offset__reset="earliest")
    for p in (0, 1):
        produce(broker.bootstrap, topic, [f"p{p}-{i}".encode() for i in range(3)], partition=p)
    member_id = uuid.uuid4().hex
    with RawClient(broker.port) as raw:
        topic_id = wait_until(lambda: _topic_id(raw, topic), message="the topic id")
        first = join_share_group(raw, group, member_id, [topic])
        assert first.assignment is not None and first.assignment.topic_partitions == []
        epoch = first.member_epoch

        def assigned() -> list[int] | None:
            nonlocal epoch
            hb = raw.request(ShareGroupHeartbeatRequest(group_id=group, member_id=member_id, member_epoch=epoch,
                                                        subscribed_topic_names=None), version=1)
            assert hb.error_code == 0, hb
            epoch = hb.member_epoch
            got = hb.assignment.topic_partitions if hb.assignment is not None else []
            return sorted(p for t in got for p in t.partitions) or None

        assert wait_until(assigned, message="the initialized partitions assigned") == [0, 1]
        assert epoch > first.member_epoch

        def fetch(session_epoch: int) -> dict[int, int]:
            resp = raw.request(ShareFetchRequest(
                group_id=group, member_id=member_id, share_session_epoch=session_epoch, max_wait_ms=5000,
                min_bytes=1, max_bytes=1 << 20, max_records=500, batch_size=500, share_acquire_mode=0,
                is_renew_ack=False, topics=[ShareFetchRequest.FetchTopic(topic_id=topic_id, partitions=[
                    _FetchPartition(partition_index=p, acknowledgement_batches=[]) for p in (0, 1)])],
                forgotten_topics_data=[]), version=2)
            assert resp.error_code == 0, resp
            return {p.partition_index: sum(a.last_offset - a.first_offset + 1 for a in p.acquired_records)
                    for t in resp.responses for p in t.partitions if p.acquired_records}

        got = fetch(0)
        assert list(got.values()) == [3], got  # one partition's records
        assert fetch(1) == {1 - next(iter(got)): 3}  # then the other's
