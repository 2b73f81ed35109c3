"""Consumer groups against a real broker with real clients (confluent-kafka, kafka-python, aiokafka):
rebalances, failures, commits, seeks, static membership, restarts, and the error codes of bad commits.

Consumers whose membership is under test run as subprocesses (so one can be killed with SIGKILL) and
report their assignment as JSON lines on stdout.
"""

from __future__ import annotations

import asyncio
import os
import signal
import struct
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.admin import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.consumer import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka.protocol.consumer.group import OffsetDeleteRequest
from kafka.protocol.metadata import FindCoordinatorRequest

from tests.clients import kafka_python_group_consumer, unique_name
from tests.group_members import ScriptedMember, one_owner_each, spawner
from tests.harness import NO_REBALANCE_DELAY, BrokerProcess
from tests.rawclient import RawClient
from tests.waiting import wait_until

SESSION_MS = 6000
CLIENTS = ["confluent", "kafka-python", "aiokafka"]


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return NO_REBALANCE_DELAY


def create_topic(bootstrap: str, partitions: int = 1) -> str:
    topic = unique_name("t")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(20)
    return topic


def produce(bootstrap: str, topic: str, values: list[bytes], partition: int | None = None) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i, v in enumerate(values):
        kwargs: dict[str, Any] = {"partition": partition if partition is not None else i % _partitions(p, topic)}
        p.produce(topic, value=v, **kwargs)
    assert p.flush(20) == 0


def _partitions(p: Producer, topic: str) -> int:
    return len(p.list_topics(topic, timeout=10).topics[topic].partitions)


def cf_consumer(bootstrap: str, group: str, **extra: Any) -> Consumer:
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 500, "enable.auto.commit": False}
    conf.update(extra)
    return Consumer(conf)


def cf_drain(c: Consumer, n: int, timeout: float = 20) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append(m)
    return got


def cf_committed(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    c = cf_consumer(bootstrap, group)
    try:
        return [tp.offset for tp in c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)]
    finally:
        c.close()


# ---- a minimal raw protocol client (exact error codes) -------------------------------------------


class Raw(RawClient):
    """The shared raw client; `call` also checks that a response came, of the request's API (the codec
    decodes it as the response class the request names)."""

    def __init__(self, port: int) -> None:
        super().__init__(port, timeout=15)

    def call(self, request: Any, version: int) -> Any:
        response = self.request(request, version)
        assert response is not None and response.API_KEY == request.API_KEY, response
        return response


def subscription(*topics: str) -> bytes:
    body = struct.pack(">hi", 0, len(topics))
    for t in topics:
        body += struct.pack(">h", len(t)) + t.encode()
    return body + struct.pack(">i", -1)


def raw_join(raw: Raw, group: str, topic: str, member_id: str = "", instance: str | None = None) -> Any:
    """JoinGroup v5 (with the MEMBER_ID_REQUIRED round trip) and SyncGroup as a lone leader."""
    def join(mid: str) -> Any:
        return raw.call(JoinGroupRequest(group_id=group, session_timeout_ms=SESSION_MS, rebalance_timeout_ms=10000,
                                         member_id=mid, group_instance_id=instance, protocol_type="consumer",
                                         protocols=[JoinGroupRequest.JoinGroupRequestProtocol(
                                             name="range", metadata=subscription(topic))]), 5)
    resp = join(member_id)
    if resp.error_code == 79:
        resp = join(resp.member_id)
    assert resp.error_code == 0, resp
    sync = raw.call(SyncGroupRequest(group_id=group, generation_id=resp.generation_id, member_id=resp.member_id,
                                     group_instance_id=instance, assignments=[SyncGroupRequest.SyncGroupRequestAssignment(
                                         member_id=resp.member_id, assignment=b"")]), 3)
    assert sync.error_code == 0
    return resp


def raw_commit(raw: Raw, group: str, generation: int, member: str, offsets: list[tuple[str, int, int, str | None]],
               version: int = 7) -> dict[tuple[str, int], int]:
    topics: dict[str, list[Any]] = {}
    for t, p, off, meta in offsets:
        topics.setdefault(t, []).append(OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
            partition_index=p, committed_offset=off, committed_metadata=meta))
    req = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=generation, member_id=member,
                              topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=ps)
                                      for t, ps in topics.items()])
    resp = raw.call(req, version)
    return {(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}


def raw_fetch(raw: Raw, group: str, topic: str, partitions: list[int]) -> dict[int, tuple[int, str | None, int]]:
    req = OffsetFetchRequest(group_id=group, topics=[OffsetFetchRequest.OffsetFetchRequestTopic(
        name=topic, partition_indexes=partitions)])
    resp = raw.call(req, 5)
    assert resp.error_code == 0
    return {p.partition_index: (p.committed_offset, p.metadata, p.error_code) for t in resp.topics for p in t.partitions}


# ---- consumers in subprocesses --------------------------------------------------------------------

CONSUMER_SCRIPT = r"""
import asyncio, faulthandler, json, logging, signal, sys
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
faulthandler.register(signal.SIGUSR1, all_threads=True)  # a test that gives up asks where each thread is
cfg = json.loads(sys.argv[1])
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
last = [None]

def report(assignment, member):
    a = sorted(tp.partition if hasattr(tp, "partition") else tp for tp in assignment)
    if a != last[0]:
        last[0] = a
        print(json.dumps({"assignment": a, "member": member}), flush=True)

common = dict(session=cfg["session"], poll_interval=10000)
if cfg["client"] == "confluent":
    from confluent_kafka import Consumer
    conf = {"bootstrap.servers": cfg["bootstrap"], "group.id": cfg["group"], "auto.offset.reset": "earliest",
            "session.timeout.ms": cfg["session"], "heartbeat.interval.ms": 300, "max.poll.interval.ms": 10000,
            "partition.assignment.strategy": cfg.get("strategy", "range")}
    if cfg.get("instance"):
        conf["group.instance.id"] = cfg["instance"]
    c = Consumer(conf)
    c.subscribe([cfg["topic"]])
    while not stop:
        c.poll(0.1)
        report(c.assignment(), c.memberid())
    c.close()
elif cfg["client"] == "kafka-python":
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    from tests.clients import kafka_python_group_consumer
    c = kafka_python_group_consumer(cfg["topic"], bootstrap_servers=cfg["bootstrap"], group_id=cfg["group"],
                                    session_timeout_ms=cfg["session"], heartbeat_interval_ms=300,
                                    max_poll_interval_ms=10000, auto_offset_reset="earliest",
                                    partition_assignment_strategy=[RangePartitionAssignor])
    while not stop:
        c.poll(timeout_ms=100)
        report(c.assignment(), c._coordinator._generation.member_id if c._coordinator._generation else "")
    c.close()
else:
    from aiokafka import AIOKafkaConsumer
    async def main():
        c = AIOKafkaConsumer(cfg["topic"], bootstrap_servers=cfg["bootstrap"], group_id=cfg["group"],
                             session_timeout_ms=cfg["session"], heartbeat_interval_ms=300,
                             max_poll_interval_ms=10000, auto_offset_reset="earliest")
        await c.start()
        while not stop:
            await c.getmany(timeout_ms=100)
            report(c.assignment(), c._coordinator.member_id)
        await c.stop()
    asyncio.run(main())
print(json.dumps({"closed": True}), flush=True)
"""


class ConsumerProc(ScriptedMember):
    def __init__(self, client: str, bootstrap: str, group: str, topic: str, log_dir: Path, **extra: Any) -> None:
        cfg = {"client": client, "bootstrap": bootstrap, "group": group, "topic": topic, "session": SESSION_MS, **extra}
        super().__init__(CONSUMER_SCRIPT, cfg, log_dir, "consumer")

    def dump_stacks(self) -> None:
        """Every thread's stack into this consumer's .err file (kept in the test's temp dir)."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGUSR1)


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Callable[..., ConsumerProc]]:
    with spawner(partial(ConsumerProc, log_dir=tmp_path)) as make:
        yield make


def wait_balanced(procs: list[ConsumerProc], partitions: int = 6, timeout: float = 30) -> float:
    """Seconds until every partition has one owner among `procs` and each of them owns some."""
    start = time.monotonic()
    try:
        wait_until(lambda: one_owner_each(procs, partitions), timeout,
                   lambda: f"{len(procs)} consumers owning {partitions} partitions once each, not "
                           f"{[p.assignment for p in procs]}", interval=0.05)
    except AssertionError:
        for p in procs:  # a client stuck inside its own code shows where in its .err file
            p.dump_stacks()
        raise
    return time.monotonic() - start


# ---- membership and rebalancing ------------------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS)
def test_rebalances_give_one_owner_per_partition(broker: BrokerProcess, spawn: Callable[..., ConsumerProc],
                                                 client: str) -> None:
    topic = create_topic(broker.bootstrap, 6)
    group = unique_name("g")
    procs = [spawn(client, broker.bootstrap, group, topic) for _ in range(3)]
    wait_balanced(procs, timeout=90)
    assert all(len(p.assignment or []) == 2 for p in procs)
    procs.append(spawn(client, broker.bootstrap, group, topic))  # a fourth joins
    wait_balanced(procs, timeout=90)
    leaving = procs.pop(0)
    leaving.terminate()  # graceful: LeaveGroup, immediate rebalance
    wait_balanced(procs, timeout=90)
    victim = procs.pop(0)
    before = list(victim.assignment or [])
    victim.kill()  # no LeaveGroup: only the session timeout can notice (the bound is for a loaded machine)
    wait_balanced(procs, timeout=SESSION_MS / 1000 + 90)
    assert all(any(p in (s.assignment or []) for s in procs) for p in before)


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "cooperative-sticky"])
def test_confluent_assignors(broker: BrokerProcess, spawn: Callable[..., ConsumerProc], strategy: str) -> None:
    topic = create_topic(broker.bootstrap, 6)
    group = unique_name("g")
    procs = [spawn("confluent", broker.bootstrap, group, topic, strategy=strategy) for _ in range(3)]
    wait_balanced(procs)
    procs.append(spawn("confluent", broker.bootstrap, group, topic, strategy=strategy))
    wait_balanced(procs)
    procs.pop().terminate()
    wait_balanced(procs)
    with Raw(broker.port) as raw:
        described = raw.call(DescribeGroupsRequest(groups=[group]), 1).groups[0]
    assert (described.group_state, described.protocol_type, described.protocol_data) == ("Stable", "consumer", strategy)
    assert len(described.members) == 3


def test_static_membership_rejoin_keeps_assignment_and_fences_old_member(
        broker: BrokerProcess, spawn: Callable[..., ConsumerProc]) -> None:
    topic = create_topic(broker.bootstrap, 6)
    group = unique_name("static")
    a = spawn("confluent", broker.bootstrap, group, topic, instance="inst-a")
    b = spawn("confluent", broker.bootstrap, group, topic, instance="inst-b")
    wait_balanced([a, b])
    with Raw(broker.port) as raw:
        gen = _describe_generation(raw, group, a.member)
        old_member, old_assignment, b_changes = a.member, a.assignment, b.changes
        a.kill()  # a static member does not leave: its restart takes over the instance id
        a2 = spawn("confluent", broker.bootstrap, group, topic, instance="inst-a")
        wait_until(lambda: a2.assignment == old_assignment, 20, "the restarted static member's assignment")
        assert a2.member != old_member
        assert b.changes == b_changes  # no rebalance reached the other member
        hb = raw.call(HeartbeatRequest(group_id=group, generation_id=gen, member_id=old_member,
                                       group_instance_id="inst-a"), 3)
        assert hb.error_code == 82  # FENCED_INSTANCE_ID
        described = raw.call(DescribeGroupsRequest(groups=[group]), 4).groups[0]
        assert described.group_state == "Stable"
        assert {m.group_instance_id: m.member_id for m in described.members}["inst-a"] == a2.member


def _describe_generation(raw: Raw, group: str, member: str) -> int:
    """The group's generation, probed with Heartbeat (DescribeGroups does not carry it)."""
    for gen in range(1, 50):
        resp = raw.call(HeartbeatRequest(group_id=group, generation_id=gen, member_id=member), 2)
        if resp.error_code == 0:
            return gen
    raise AssertionError("generation not found")


# ---- consuming, committing, seeking ---------------------------------------------------------------


def test_two_groups_each_receive_every_record(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, 3)
    values = [b"r%d" % i for i in range(90)]
    produce(broker.bootstrap, topic, values)
    for group in (unique_name("ga"), unique_name("gb")):
        c = cf_consumer(broker.bootstrap, group)
        c.subscribe([topic])
        got = cf_drain(c, len(values))
        c.close()
        assert sorted(m.value() for m in got) == sorted(values)


@pytest.mark.parametrize("client", CLIENTS)
def test_manual_commits_sync_and_async_survive_the_consumer(broker: BrokerProcess, client: str) -> None:
    topic = create_topic(broker.bootstrap, 2)
    group = unique_name("manual")
    produce(broker.bootstrap, topic, [b"m%d" % i for i in range(40)])
    first = _consume_and_commit(client, broker.bootstrap, group, topic, 40)
    assert len(first) == 40
    assert cf_committed(broker.bootstrap, group, topic, 2) == [20, 20]
    produce(broker.bootstrap, topic, [b"n%d" % i for i in range(10)])
    second = _consume_and_commit(client, broker.bootstrap, group, topic, 10)
    assert sorted(second) == sorted(b"n%d" % i for i in range(10))  # resumed from the commits
    assert cf_committed(broker.bootstrap, group, topic, 2) == [25, 25]


def _consume_and_commit(client: str, bootstrap: str, group: str, topic: str, n: int) -> list[bytes]:
    """Consume n records; commit half way synchronously and at the end asynchronously (aiokafka: awaited)."""
    if client == "confluent":
        c = cf_consumer(bootstrap, group)
        c.subscribe([topic])
        got = cf_drain(c, n // 2)
        c.commit(asynchronous=False)
        got += cf_drain(c, n - len(got))
        c.commit(asynchronous=True)
        c.close()
        return [m.value() for m in got]
    if client == "kafka-python":
        return _kafka_python_consume_and_commit(bootstrap, group, topic, n)
    return asyncio.run(_aiokafka_consume_and_commit(bootstrap, group, topic, n))


def _kafka_python_consume_and_commit(bootstrap: str, group: str, topic: str, n: int) -> list[bytes]:
    c = kafka_python_group_consumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                                    auto_offset_reset="earliest", session_timeout_ms=SESSION_MS,
                                    heartbeat_interval_ms=500)
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    committed_sync = False
    while len(got) < n and time.monotonic() < deadline:
        for records in c.poll(timeout_ms=200, max_records=max(1, n // 2 - len(got)) if not committed_sync else 500).values():
            got.extend(r.value for r in records)
        if not committed_sync and len(got) >= n // 2:
            c.commit()
            committed_sync = True
    done: list[Any] = []
    c.commit_async(callback=lambda offsets, result: done.append(result))
    while not done and time.monotonic() < deadline:
        c.poll(timeout_ms=100)
    c.close(autocommit=False)
    assert done and not isinstance(done[0], Exception), done
    return got


async def _aiokafka_consume_and_commit(bootstrap: str, group: str, topic: str, n: int) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer

    c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                         auto_offset_reset="earliest", session_timeout_ms=SESSION_MS, heartbeat_interval_ms=500)
    await c.start()
    got: list[bytes] = []
    try:
        deadline = time.monotonic() + 20
        while len(got) < n and time.monotonic() < deadline:
            limit = n // 2 - len(got) if len(got) < n // 2 else None
            for records in (await c.getmany(timeout_ms=200, max_records=limit)).values():
                got.extend(r.value for r in records)
            if len(got) == n // 2:
                await c.commit()
        await c.commit()
    finally:
        await c.stop()
    return got


@pytest.mark.parametrize("client", CLIENTS)
def test_auto_commit(broker: BrokerProcess, client: str) -> None:
    """The consumer keeps polling, without committing itself, until its position shows up as committed."""
    topic = create_topic(broker.bootstrap, 2)
    group = unique_name("auto")
    produce(broker.bootstrap, topic, [b"a%d" % i for i in range(30)])

    def committed_while(poll: Callable[[], object]) -> bool:
        poll()
        return cf_committed(broker.bootstrap, group, topic, 2) == [15, 15]

    if client == "confluent":
        c = cf_consumer(broker.bootstrap, group, **{"enable.auto.commit": True, "auto.commit.interval.ms": 200})
        c.subscribe([topic])
        assert len(cf_drain(c, 30)) == 30
        wait_until(lambda: committed_while(lambda: c.poll(0.1)), 10, "auto-committed offsets")
        c.close()
    elif client == "kafka-python":
        kc = kafka_python_group_consumer(topic, bootstrap_servers=broker.bootstrap, group_id=group,
                                         enable_auto_commit=True, auto_commit_interval_ms=200,
                                         auto_offset_reset="earliest", session_timeout_ms=SESSION_MS)
        n = 0
        end = time.monotonic() + 20
        while n < 30 and time.monotonic() < end:
            n += sum(len(v) for v in kc.poll(timeout_ms=200).values())
        assert n == 30
        wait_until(lambda: committed_while(lambda: kc.poll(timeout_ms=100)), 10, "auto-committed offsets")
        kc.close(autocommit=False)
    else:
        asyncio.run(_aiokafka_auto_commit(broker.bootstrap, group, topic))


async def _aiokafka_auto_commit(bootstrap: str, group: str, topic: str) -> None:
    from aiokafka import AIOKafkaConsumer

    c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=True,
                         auto_commit_interval_ms=200, auto_offset_reset="earliest", session_timeout_ms=SESSION_MS)
    await c.start()
    try:
        n = 0
        end = time.monotonic() + 20
        while n < 30 and time.monotonic() < end:
            n += sum(len(v) for v in (await c.getmany(timeout_ms=200)).values())
        assert n == 30
        # aiokafka commits from a task of this event loop: wait in a thread while the loop runs
        await asyncio.to_thread(wait_until, lambda: cf_committed(bootstrap, group, topic, 2) == [15, 15], 10,
                                "auto-committed offsets")
    finally:
        await c.stop()


@pytest.mark.parametrize("client", CLIENTS)
def test_seek_beginning_end_and_offset(broker: BrokerProcess, client: str) -> None:
    topic = create_topic(broker.bootstrap, 1)
    produce(broker.bootstrap, topic, [b"s%d" % i for i in range(10)], partition=0)
    group = unique_name("seek")
    if client == "confluent":
        _seek_confluent(broker.bootstrap, group, topic)
    elif client == "kafka-python":
        _seek_kafka_python(broker.bootstrap, group, topic)
    else:
        asyncio.run(_seek_aiokafka(broker.bootstrap, group, topic))


def _seek_confluent(bootstrap: str, group: str, topic: str) -> None:
    c = cf_consumer(bootstrap, group)
    c.subscribe([topic])
    assert [m.offset() for m in cf_drain(c, 10)] == list(range(10))
    tp = TopicPartition(topic, 0, 4)
    c.seek(tp)
    assert [m.offset() for m in cf_drain(c, 2)] == [4, 5]
    c.seek(TopicPartition(topic, 0, -2))  # OFFSET_BEGINNING
    assert cf_drain(c, 1)[0].offset() == 0
    c.seek(TopicPartition(topic, 0, -1))  # OFFSET_END
    assert cf_drain(c, 1, timeout=1.0) == []
    produce(bootstrap, topic, [b"late"], partition=0)
    late = cf_drain(c, 1)
    assert [(m.offset(), m.value()) for m in late] == [(10, b"late")]
    c.close()


def _seek_kafka_python(bootstrap: str, group: str, topic: str) -> None:
    from kafka import TopicPartition as KTP

    c = kafka_python_group_consumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                                    auto_offset_reset="earliest", session_timeout_ms=SESSION_MS)

    def take(n: int, timeout: float = 10) -> list[int]:
        out: list[int] = []
        end = time.monotonic() + timeout
        while len(out) < n and time.monotonic() < end:
            for recs in c.poll(timeout_ms=200, max_records=n - len(out)).values():
                out.extend(r.offset for r in recs)
        return out

    assert take(10) == list(range(10))
    tp = KTP(topic, 0)
    c.seek(tp, 4)
    assert take(2) == [4, 5]
    c.seek_to_beginning(tp)
    assert take(1) == [0]
    c.seek_to_end(tp)
    assert take(1, timeout=1.0) == []
    produce(bootstrap, topic, [b"late"], partition=0)
    assert take(1) == [10]
    c.close(autocommit=False)


async def _seek_aiokafka(bootstrap: str, group: str, topic: str) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as ATP

    c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                         auto_offset_reset="earliest", session_timeout_ms=SESSION_MS)
    await c.start()

    async def take(n: int, timeout: float = 10) -> list[int]:
        out: list[int] = []
        end = time.monotonic() + timeout
        while len(out) < n and time.monotonic() < end:
            for recs in (await c.getmany(timeout_ms=200, max_records=n - len(out))).values():
                out.extend(r.offset for r in recs)
        return out

    try:
        assert await take(10) == list(range(10))
        tp = ATP(topic, 0)
        c.seek(tp, 4)
        assert await take(2) == [4, 5]
        await c.seek_to_beginning(tp)
        assert await take(1) == [0]
        await c.seek_to_end(tp)
        assert await take(1, timeout=1.0) == []
        await asyncio.to_thread(produce, bootstrap, topic, [b"late"], 0)
        assert await take(1) == [10]
    finally:
        await c.stop()


def test_assign_without_group_membership(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, 2)
    produce(broker.bootstrap, topic, [b"x%d" % i for i in range(10)])
    group = unique_name("simple")
    c = cf_consumer(broker.bootstrap, group)
    c.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
    assert len(cf_drain(c, 10)) == 10
    c.commit(asynchronous=False)  # generation -1, no member id: a "simple" commit
    c.close()
    assert cf_committed(broker.bootstrap, group, topic, 2) == [5, 5]
    with Raw(broker.port) as raw:
        described = raw.call(DescribeGroupsRequest(groups=[group]), 1).groups[0]
        assert (described.error_code, described.group_state, described.members) == (0, "Empty", [])
        listed = raw.call(ListGroupsRequest(states_filter=["Empty"]), 4)
        assert (group, "", "Empty") in [(g.group_id, g.protocol_type, g.group_state) for g in listed.groups]

    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    kc = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False)
    kc.assign([KTP(topic, 0)])
    kc.seek_to_beginning()
    got = []
    end = time.monotonic() + 10
    while len(got) < 5 and time.monotonic() < end:
        got += [r.value for recs in kc.poll(timeout_ms=200).values() for r in recs]
    kc.close()
    assert len(got) == 5

    asyncio.run(_aiokafka_assign_commit(broker.bootstrap, unique_name("simple-aio"), topic))


async def _aiokafka_assign_commit(bootstrap: str, group: str, topic: str) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as ATP

    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await c.start()
    try:
        tp = ATP(topic, 1)
        c.assign([tp])
        await c.seek_to_beginning(tp)
        await c.getmany(timeout_ms=1000)
        await c.commit({tp: 3})
        assert await c.committed(tp) == 3
    finally:
        await c.stop()


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_reprocess_a_failed_record_by_seeking_back(broker: BrokerProcess, client: str) -> None:
    """kafka-in-practice 1.3 (3): poll gives M1, M2; M1 succeeds and is committed, M2 fails. The next poll
    follows the local position (M3, M4), not the committed offset; seeking back to M2 re-reads M2, M3."""
    topic = create_topic(broker.bootstrap, 1)
    produce(broker.bootstrap, topic, [b"M1", b"M2", b"M3", b"M4"], partition=0)
    group = unique_name("retry")
    if client == "confluent":
        c = cf_consumer(broker.bootstrap, group)
        c.subscribe([topic])

        def poll2() -> list[tuple[int, bytes]]:
            out: list[Any] = []
            end = time.monotonic() + 10
            while len(out) < 2 and time.monotonic() < end:
                out += [m for m in c.consume(num_messages=2 - len(out), timeout=0.5) if not m.error()]
            return [(m.offset(), m.value()) for m in out]

        assert poll2() == [(0, b"M1"), (1, b"M2")]
        c.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)  # M1 done; M2 failed
        assert poll2() == [(2, b"M3"), (3, b"M4")]
        c.seek(TopicPartition(topic, 0, 1))
        assert poll2() == [(1, b"M2"), (2, b"M3")]
        c.close()
    else:
        from kafka import OffsetAndMetadata
        from kafka import TopicPartition as KTP

        kc = kafka_python_group_consumer(topic, bootstrap_servers=broker.bootstrap, group_id=group,
                                         enable_auto_commit=False, auto_offset_reset="earliest",
                                         max_poll_records=2, session_timeout_ms=SESSION_MS)

        def kpoll2() -> list[tuple[int, bytes]]:
            out: list[Any] = []
            end = time.monotonic() + 10
            while len(out) < 2 and time.monotonic() < end:
                out += [r for recs in kc.poll(timeout_ms=300, max_records=2 - len(out)).values() for r in recs]
            return [(r.offset, r.value) for r in out]

        tp = KTP(topic, 0)
        assert kpoll2() == [(0, b"M1"), (1, b"M2")]
        kc.commit({tp: OffsetAndMetadata(1, "M1 done", -1)})
        assert kpoll2() == [(2, b"M3"), (3, b"M4")]
        kc.seek(tp, 1)
        assert kpoll2() == [(1, b"M2"), (2, b"M3")]
        kc.close(autocommit=False)
    assert cf_committed(broker.bootstrap, group, topic, 1) == [1]


# ---- durability ----------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["clean", "kill"])
def test_committed_offsets_survive_broker_restart(fresh_broker: BrokerProcess, how: str) -> None:
    b = fresh_broker
    topic = create_topic(b.bootstrap, 3)
    produce(b.bootstrap, topic, [b"d%d" % i for i in range(30)])
    groups = [unique_name("dur") for _ in range(5)]
    for i, group in enumerate(groups):
        c = cf_consumer(b.bootstrap, group)
        c.subscribe([topic])
        assert len(cf_drain(c, 30)) == 30
        c.commit(offsets=[TopicPartition(topic, p, 3 + i, metadata=f"meta-{i}") for p in range(3)],
                 asynchronous=False)
        c.close()
    if how == "clean":
        b.stop()
    else:
        b.kill()
    b.start()
    for i, group in enumerate(groups):
        wait_until(lambda g=group, i=i: _committed_or_none(b.bootstrap, g, topic) == [3 + i] * 3, 30,
                   f"offsets of {group} after restart")
    with Raw(b.port) as raw:
        coordinator = raw.call(FindCoordinatorRequest(key=groups[0]), 1)
        assert coordinator.error_code == 0
        offset, metadata, err = raw_fetch(raw, groups[0], topic, [0])[0]
        # librdkafka sends the metadata string with its C terminator; the broker keeps what it got
        assert (offset, (metadata or "").rstrip("\x00"), err) == (3, "meta-0", 0)
    c = cf_consumer(b.bootstrap, groups[-1])
    c.subscribe([topic])
    got = cf_drain(c, 30 - 3 * 7, timeout=15)
    c.close()
    assert len(got) == 30 - 3 * 7  # resumed at the committed offsets


def _committed_or_none(bootstrap: str, group: str, topic: str) -> list[int] | None:
    try:
        return cf_committed(bootstrap, group, topic, 3)
    except KafkaException:
        return None


# ---- bad input and admin APIs --------------------------------------------------------------------


def test_bad_commits_get_kafka_error_codes(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, 2)
    group = unique_name("bad")
    with Raw(broker.port) as raw:
        found = raw.call(FindCoordinatorRequest(key=group), 1)
        assert (found.error_code, found.port) == (0, broker.port)
        joined = raw_join(raw, group, topic)
        gen, member = joined.generation_id, joined.member_id
        errors = raw_commit(raw, group, gen, member, [
            (topic, 0, 5, "ok"), (topic, 9, 5, None), ("no-such-topic", 0, 5, None), (topic, 1, 5, "x" * 4097)])
        assert errors == {(topic, 0): 0, (topic, 9): 3, ("no-such-topic", 0): 3, (topic, 1): 12}
        assert raw_commit(raw, group, gen - 1, member, [(topic, 0, 6, None)]) == {(topic, 0): 22}  # ILLEGAL_GENERATION
        assert raw_commit(raw, group, gen, "nobody", [(topic, 0, 6, None)]) == {(topic, 0): 25}  # UNKNOWN_MEMBER_ID
        assert raw_commit(raw, group, -1, "", [(topic, 0, 6, None)]) == {(topic, 0): 25}  # group has members
        fetched = raw_fetch(raw, group, topic, [0, 1])
        assert fetched == {0: (5, "ok", 0), 1: (-1, "", 0)}
        hb = raw.call(HeartbeatRequest(group_id=group, generation_id=gen + 5, member_id=member), 2)
        assert hb.error_code == 22
        assert raw_delete_groups(raw, [group, unique_name("missing")]) == [68, 69]  # NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND
        deleted = raw.call(OffsetDeleteRequest(group_id=group, topics=[OffsetDeleteRequest.OffsetDeleteRequestTopic(
            name=topic, partitions=[OffsetDeleteRequest.OffsetDeleteRequestTopic.OffsetDeleteRequestPartition(
                partition_index=0)])]), 0)
        assert deleted.error_code == 0 and deleted.topics[0].partitions[0].error_code == 86  # subscribed
        bad_join = raw.call(JoinGroupRequest(group_id=group, session_timeout_ms=10, rebalance_timeout_ms=10,
                                             member_id="", protocol_type="consumer", protocols=[]), 5)
        assert bad_join.error_code == 26  # INVALID_SESSION_TIMEOUT
        txn = raw.call(FindCoordinatorRequest(key="txn", key_type=1), 1)
        assert (txn.error_code, txn.node_id) == (0, 0)  # transactions have a coordinator too
        unknown = raw.call(FindCoordinatorRequest(key="x", key_type=7), 1)
        assert unknown.error_code == 42  # INVALID_REQUEST

    c = cf_consumer(broker.bootstrap, unique_name("bad-cf"))
    with pytest.raises(KafkaException) as info:
        c.commit(offsets=[TopicPartition(topic, 0, 1, metadata="m" * 5000)], asynchronous=False)
    c.close()
    assert "OFFSET_METADATA_TOO_LARGE" in str(info.value) or "metadata" in str(info.value).lower()


def raw_delete_groups(raw: Raw, groups: list[str]) -> list[int]:
    resp = raw.call(DeleteGroupsRequest(groups_names=groups), 1)
    return [r.error_code for r in sorted(resp.results, key=lambda r: groups.index(r.group_id))]


def test_admin_list_describe_delete(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, 2)
    produce(broker.bootstrap, topic, [b"z%d" % i for i in range(4)])
    group = unique_name("adm")
    c = cf_consumer(broker.bootstrap, group)
    c.subscribe([topic])
    assert len(cf_drain(c, 4)) == 4
    c.commit(asynchronous=False)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    listed = admin.list_consumer_groups().result(10)
    assert group in [g.group_id for g in listed.valid]
    desc = admin.describe_consumer_groups([group])[group].result(10)
    assert str(desc.state).endswith("STABLE") and len(desc.members) == 1
    c.close()
    with Raw(broker.port) as raw:
        deleted = raw.call(OffsetDeleteRequest(group_id=group, topics=[OffsetDeleteRequest.OffsetDeleteRequestTopic(
            name=topic, partitions=[OffsetDeleteRequest.OffsetDeleteRequestTopic.OffsetDeleteRequestPartition(
                partition_index=1)])]), 0)
        assert deleted.topics[0].partitions[0].error_code == 0
        assert raw_fetch(raw, group, topic, [0, 1])[1][0] == -1
    for f in admin.delete_consumer_groups([group]).values():
        f.result(10)
    assert cf_committed(broker.bootstrap, group, topic, 2) == [-1001, -1001]


def test_batched_find_coordinator_offset_fetch_and_leave(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, 1)
    g1, g2, g3 = unique_name("b1"), unique_name("b2"), unique_name("b3")
    with Raw(broker.port) as raw:
        found = raw.call(FindCoordinatorRequest(key_type=0, coordinator_keys=[g1, g2]), 4)
        assert [(c.key, c.error_code, c.node_id, c.port) for c in found.coordinators] == [
            (g1, 0, 0, broker.port), (g2, 0, 0, broker.port)]
        assert raw_commit(raw, g1, -1, "", [(topic, 0, 11, "a")], version=8) == {(topic, 0): 0}
        assert raw_commit(raw, g2, -1, "", [(topic, 0, 22, None)], version=9) == {(topic, 0): 0}
        group_cls = OffsetFetchRequest.OffsetFetchRequestGroup
        resp = raw.call(OffsetFetchRequest(require_stable=True, groups=[
            group_cls(group_id=g1, topics=None),
            group_cls(group_id=g2, topics=[group_cls.OffsetFetchRequestTopics(name=topic, partition_indexes=[0, 5])]),
            group_cls(group_id=unique_name("none"), topics=None),
        ]), 8)
        got = {g.group_id: (g.error_code, [(t.name, p.partition_index, p.committed_offset, p.metadata)
                                           for t in g.topics for p in t.partitions]) for g in resp.groups}
        assert got[g1] == (0, [(topic, 0, 11, "a")])
        assert got[g2] == (0, [(topic, 0, 22, ""), (topic, 5, -1, "")])
        assert list(got.values())[2] == (0, [])
        joined = raw_join(raw, g3, topic, instance="inst-1")
        member_cls = LeaveGroupRequest.MemberIdentity
        left = raw.call(LeaveGroupRequest(group_id=g3, members=[
            member_cls(member_id="ghost", group_instance_id=None),
            member_cls(member_id="", group_instance_id="inst-unknown"),
            member_cls(member_id="", group_instance_id="inst-1"),
        ]), 4)
        assert left.error_code == 0
        assert [m.error_code for m in left.members] == [25, 25, 0]
        described = raw.call(DescribeGroupsRequest(groups=[g3]), 5).groups[0]
        assert (described.group_state, described.members) == ("Empty", [])
        assert joined.member_id.startswith("raw-")
