"""KIP-848 consumer groups (`group.protocol=consumer`) against a real broker with confluent-kafka
(librdkafka 2.x): members sharing partitions with no partition ever owned twice, a member killed with
SIGKILL, a classic group beside, offsets and the group itself surviving a broker restart, the migration
of an empty group between the protocols, and the consumer-groups tool. kafka-python 3.0.12 has no
consumer-protocol client (it only speaks the classic protocol), so it is not exercised here.

Members run as subprocesses (one can be killed) and print JSON lines: every assignment change with the
wall-clock time of the rebalance callback, so ownership intervals can be checked for overlaps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import ResourceType
from kafka.protocol.admin import ListGroupsRequest, ListGroupsResponse
from kafka.protocol.metadata import FindCoordinatorRequest

from odradek.protocol.kip848 import ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest
from tests.clients import alter_configs, create_topic, produce, unique_name
from tests.group_members import ScriptedMember, one_owner_each, spawner
from tests.harness import NO_REBALANCE_DELAY, BrokerPool, BrokerProcess, group_timers, run_cli
from tests.rawclient import RawClient
from tests.waiting import wait_until

SESSION_MS = 3000
CONFIG = {**NO_REBALANCE_DELAY, **group_timers("consumer", heartbeat_ms=300, session_ms=SESSION_MS)}


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return CONFIG


MEMBER_SCRIPT = r"""
import json, signal, sys, time
from confluent_kafka import Consumer
cfg = json.loads(sys.argv[1])
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
def emit(kind, parts):
    print(json.dumps({"t": time.time(), "kind": kind, "parts": sorted(p.partition for p in parts)}), flush=True)
conf = {"bootstrap.servers": cfg["bootstrap"], "group.id": cfg["group"], "auto.offset.reset": "earliest",
        "group.protocol": cfg.get("protocol", "consumer")}
if cfg.get("protocol") == "classic":
    conf.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
                 "partition.assignment.strategy": "cooperative-sticky"})
if cfg.get("instance"):
    conf["group.instance.id"] = cfg["instance"]
c = Consumer(conf)
c.subscribe([cfg["topic"]], on_assign=lambda c, p: emit("assign", p), on_revoke=lambda c, p: emit("revoke", p),
            on_lost=lambda c, p: emit("lost", p))
last = None
while not stop:
    c.poll(0.05)
    now = sorted(p.partition for p in c.assignment())
    if now != last:
        last = now
        print(json.dumps({"assignment": now, "member": c.memberid()}), flush=True)
c.close()
print(json.dumps({"closed": True}), flush=True)
"""


class Member(ScriptedMember):
    def __init__(self, bootstrap: str, group: str, topic: str, log_dir: Path, **extra: Any) -> None:
        self.events: list[tuple[float, str, list[int]]] = []
        self.ended: float | None = None
        super().__init__(MEMBER_SCRIPT, {"bootstrap": bootstrap, "group": group, "topic": topic, **extra}, log_dir,
                         "member")

    def on_message(self, msg: dict[str, Any]) -> None:
        if "kind" in msg:
            self.events.append((msg["t"], msg["kind"], msg["parts"]))

    def kill(self) -> None:
        self.ended = time.time()  # what it owned, it owned until now
        super().kill()

    def intervals(self, until: float) -> dict[int, list[tuple[float, float]]]:
        """partition -> [(from, to)] of ownership, from the rebalance callbacks."""
        held: dict[int, float] = {}
        out: dict[int, list[tuple[float, float]]] = {}
        for t, kind, parts in sorted(self.events):
            for p in parts:
                if kind == "assign":
                    held.setdefault(p, t)
                elif p in held:
                    out.setdefault(p, []).append((held.pop(p), t))
        for p, t in held.items():
            out.setdefault(p, []).append((t, until))
        return out


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Callable[..., Member]]:
    with spawner(partial(Member, log_dir=tmp_path)) as make:
        yield make


def wait_balanced(members: list[Member], partitions: int, timeout: float = 45) -> None:
    wait_until(lambda: one_owner_each(members, partitions), timeout,
               lambda: f"{len(members)} members owning {partitions} partitions once each, not "
                       f"{[m.assignment for m in members]}", interval=0.05)


def assert_never_owned_twice(members: list[Member]) -> None:
    """No two members' ownership intervals of a partition overlap (by their rebalance callbacks)."""
    now = time.time()
    by_partition: dict[int, list[tuple[float, float, int]]] = {}
    for i, m in enumerate(members):
        for p, spans in m.intervals(m.ended or now).items():
            by_partition.setdefault(p, []).extend((a, b, i) for a, b in spans)
    for p, spans in by_partition.items():
        spans.sort()
        for k, (start, _end, who) in enumerate(spans):
            for a, b, other in spans[:k]:
                assert other == who or start >= b, (
                    f"partition {p} owned by members {other} and {who} at once ({a}-{b} and from {start})")


def describe(port: int, group: str) -> Any:
    with RawClient(port) as raw:
        return raw.request(ConsumerGroupDescribeRequest(group_ids=[group], include_authorized_operations=False),
                           1).groups[0]


# ---- membership ----------------------------------------------------------------------------------


def test_members_share_partitions_and_a_killed_member_is_replaced(broker: BrokerProcess,
                                                                  spawn: Callable[..., Member]) -> None:
    topic, group = unique_name("t"), unique_name("g")
    create_topic(broker.bootstrap, topic, 6)
    a = spawn(broker.bootstrap, group, topic)
    wait_balanced([a], 6)
    b = spawn(broker.bootstrap, group, topic)
    wait_balanced([a, b], 6)
    assert sorted(len(m.assignment or []) for m in (a, b)) == [3, 3]
    c = spawn(broker.bootstrap, group, topic)
    wait_balanced([a, b, c], 6)
    assert sorted(len(m.assignment or []) for m in (a, b, c)) == [2, 2, 2]
    # the broker's view catches up with the members' at their next heartbeats
    described = wait_until(lambda: _stable(broker.port, group), 20, "the group Stable")
    assert (described.error_code, described.assignor_name) == (0, "uniform")
    assert described.group_epoch == described.assignment_epoch
    assert {m.member_epoch for m in described.members} == {described.assignment_epoch}
    assert {m.member_id for m in described.members} == {a.member, b.member, c.member}
    assert_never_owned_twice([a, b, c])
    lost = set(c.assignment or [])
    c.kill()  # no leave: only the session timeout frees its partitions
    started = time.monotonic()
    wait_balanced([a, b], 6, timeout=SESSION_MS / 1000 + 30)
    assert time.monotonic() - started >= SESSION_MS / 1000 * 0.5
    assert lost <= set(a.assignment or []) | set(b.assignment or [])
    b.terminate()  # a leave (epoch -1): a takes everything without waiting for a timeout
    wait_balanced([a], 6, timeout=20)
    assert_never_owned_twice([a, b, c])


def test_a_classic_group_works_beside(broker: BrokerProcess, spawn: Callable[..., Member]) -> None:
    modern_topic, classic_topic = unique_name("m"), unique_name("c")
    create_topic(broker.bootstrap, modern_topic, 4)
    create_topic(broker.bootstrap, classic_topic, 4)
    modern = [spawn(broker.bootstrap, "kip848-" + modern_topic, modern_topic)
              for _ in range(2)]
    classic = [spawn(broker.bootstrap, "classic-" + classic_topic, classic_topic, protocol="classic")
               for _ in range(2)]
    wait_balanced(modern, 4)
    wait_balanced(classic, 4)
    with RawClient(broker.port) as raw:
        listed = raw.request(ListGroupsRequest(states_filter=[], types_filter=[]), 5)
    assert isinstance(listed, ListGroupsResponse)
    types = {g.group_id: (g.group_type, g.protocol_type, g.group_state) for g in listed.groups}
    assert types["kip848-" + modern_topic] == ("consumer", "consumer", "Stable")
    assert types["classic-" + classic_topic] == ("classic", "consumer", "Stable")
    with RawClient(broker.port) as raw:
        only = raw.request(ListGroupsRequest(states_filter=[], types_filter=["Consumer"]), 5)
    assert "classic-" + classic_topic not in {g.group_id for g in only.groups}
    assert describe(broker.port, "classic-" + classic_topic).error_code == 69  # GROUP_ID_NOT_FOUND


def test_consumer_groups_tool_shows_both_kinds(broker: BrokerProcess, spawn: Callable[..., Member]) -> None:
    topic = unique_name("tool")
    create_topic(broker.bootstrap, topic, 3)
    modern, classic = "new-" + topic, "old-" + topic
    members = [spawn(broker.bootstrap, modern, topic) for _ in range(2)]
    old = [spawn(broker.bootstrap, classic, topic, protocol="classic")]
    wait_balanced(members, 3)
    wait_balanced(old, 3)
    listed = run_cli("consumer-groups", "--bootstrap-server", broker.bootstrap, "--list", "--type")
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line.split()[1:] for line in listed.stdout.splitlines()[1:]}
    assert listed.stdout.split()[:2] == ["GROUP", "TYPE"]
    assert rows[modern] == ["Consumer"] and rows[classic] == ["Classic"]
    filtered = run_cli("consumer-groups", "--bootstrap-server", broker.bootstrap, "--list", "--type", "consumer",
                       "--state")
    assert filtered.stdout.split()[:3] == ["GROUP", "TYPE", "STATE"]
    assert modern in filtered.stdout and classic not in filtered.stdout
    state = run_cli("consumer-groups", "--bootstrap-server", broker.bootstrap, "--describe", "--state", "--verbose",
                    "--group", modern, "--group", classic)
    assert state.returncode == 0, state.stderr
    lines = [line.split() for line in state.stdout.splitlines() if line.strip()]
    heads = [i for i, line in enumerate(lines) if line[0] == "GROUP"]
    # "COORDINATOR (ID)" and its value "host:port  (id)" are two words each, so words pair up
    tables = {lines[i + 1][0]: dict(zip(lines[i], lines[i + 1], strict=True)) for i in heads}
    assert tables[modern]["ASSIGNMENT-STRATEGY"] == "uniform" and tables[modern]["STATE"] == "Stable"
    assert tables[modern]["#MEMBERS"] == "2" and int(tables[modern]["GROUP-EPOCH"]) >= 2
    assert tables[classic]["ASSIGNMENT-STRATEGY"] == "cooperative-sticky"
    described = run_cli("consumer-groups", "--bootstrap-server", broker.bootstrap, "--describe", "--members",
                        "--verbose", "--group", modern)
    assert described.returncode == 0, described.stderr
    head, *rows_ = [line for line in described.stdout.splitlines() if line.strip()]
    assert head.split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
                            "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
    assert sorted(r.split()[1] for r in rows_) == sorted(m.member for m in members)
    assert sorted(int(r.split()[4]) for r in rows_) == [1, 2]
    assert all(topic in r for r in rows_)


# ---- offsets, restart, migration -----------------------------------------------------------------


def _consumer(bootstrap: str, group: str, protocol: str = "consumer") -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})


def _drain(c: Consumer, n: int, timeout: float = 45) -> list[Any]:
    got: list[Any] = []

    def more() -> bool:
        for m in c.consume(100, 0.2):
            assert m.error() is None, m.error()
            got.append(m)
        return len(got) >= n

    wait_until(more, timeout, lambda: f"{n} records, have {len(got)}")
    return got


def test_offsets_and_group_survive_a_broker_restart(brokers: BrokerPool, spawn: Callable[..., Member]) -> None:
    broker = brokers.start(CONFIG)
    topic, group = unique_name("r"), unique_name("g")
    create_topic(broker.bootstrap, topic, 2)
    for partition in (0, 1):  # both partitions read, so both positions are committed
        produce(broker.bootstrap, topic, [b"a%d-%d" % (partition, i) for i in range(10)], partition=partition)
    c = _consumer(broker.bootstrap, group)
    c.subscribe([topic])
    assert len(_drain(c, 20)) == 20
    c.commit(asynchronous=False)
    c.close()
    live = spawn(broker.bootstrap, group + "-live", topic)
    wait_balanced([live], 2)
    before = describe(broker.port, group + "-live")
    broker.restart()
    # the group was reloaded from __consumer_offsets: same member, same epochs, and it carries on
    after = wait_until(lambda: _described_ok(broker.port, group + "-live"), 30, "the reloaded group",
                       ignoring=(OSError,))
    assert (after.group_epoch, [m.member_id for m in after.members]) == (
        before.group_epoch, [m.member_id for m in before.members])
    assert live.proc.poll() is None and live.assignment == [0, 1]
    produce(broker.bootstrap, topic, [b"b%d" % i for i in range(6)])
    c = _consumer(broker.bootstrap, group)
    committed = wait_until(lambda: c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10), 30,
                           "committed offsets", ignoring=(Exception,))
    assert [tp.offset for tp in committed] == [10, 10]
    c.subscribe([topic])
    assert sorted(m.value() for m in _drain(c, 6)) == sorted(b"b%d" % i for i in range(6))
    c.close()


def _stable(port: int, group: str) -> Any:
    d = describe(port, group)
    return d if d.group_state == "Stable" else None


def _described_ok(port: int, group: str) -> Any:
    d = describe(port, group)
    return d if d.error_code == 0 and d.members else None


def test_an_empty_group_moves_between_protocols(broker: BrokerProcess) -> None:
    topic, group = unique_name("mig"), unique_name("g")
    create_topic(broker.bootstrap, topic, 2)
    produce(broker.bootstrap, topic, [b"x%d" % i for i in range(10)])
    old = _consumer(broker.bootstrap, group, "classic")
    old.subscribe([topic])
    _drain(old, 10)
    old.commit(asynchronous=False)
    old.close()  # the classic group is empty now: a consumer-protocol member upgrades it
    produce(broker.bootstrap, topic, [b"y%d" % i for i in range(4)])
    new = _consumer(broker.bootstrap, group)
    new.subscribe([topic])
    assert sorted(m.value() for m in _drain(new, 4)) == sorted(b"y%d" % i for i in range(4))
    assert describe(broker.port, group).group_state in ("Stable", "Reconciling", "Assigning")
    new.commit(asynchronous=False)
    new.close()
    produce(broker.bootstrap, topic, [b"z%d" % i for i in range(3)])
    back = _consumer(broker.bootstrap, group, "classic")  # and an empty consumer group downgrades
    back.subscribe([topic])
    assert sorted(m.value() for m in _drain(back, 3)) == sorted(b"z%d" % i for i in range(3))
    back.close()
    assert describe(broker.port, group).error_code == 69


def test_regex_subscription_takes_matching_topics_new_ones_too(broker: BrokerProcess) -> None:
    prefix = unique_name("rx")
    create_topic(broker.bootstrap, prefix + "-a", 2)
    create_topic(broker.bootstrap, unique_name("other"), 2)
    c = _consumer(broker.bootstrap, unique_name("g"))
    c.subscribe([f"^{prefix}-.*"])  # librdkafka's mark of a regex; the broker resolves it (KIP-848)

    def topics() -> set[str]:
        c.poll(0.1)
        return {tp.topic for tp in c.assignment()}

    wait_until(lambda: topics() == {prefix + "-a"}, 30, lambda: f"the regex's topic, not {topics()}")
    create_topic(broker.bootstrap, prefix + "-b", 1)
    wait_until(lambda: topics() == {prefix + "-a", prefix + "-b"}, 30, lambda: f"both topics, not {topics()}")
    assert len(c.assignment()) == 3
    c.close()


def test_static_member_restart_keeps_its_partitions(broker: BrokerProcess, spawn: Callable[..., Member]) -> None:
    topic, group = unique_name("st"), unique_name("g")
    create_topic(broker.bootstrap, topic, 4)
    a = spawn(broker.bootstrap, group, topic, instance="inst-a")
    b = spawn(broker.bootstrap, group, topic, instance="inst-b")
    wait_balanced([a, b], 4)
    mine, theirs = a.assignment, b.assignment
    epoch = describe(broker.port, group).group_epoch
    a.terminate()  # a static member's close is a temporary leave (epoch -2): it keeps its partitions
    left = describe(broker.port, group)
    assert {m.instance_id: m.member_epoch for m in left.members}["inst-a"] == -2
    a2 = spawn(broker.bootstrap, group, topic, instance="inst-a")
    wait_until(lambda: a2.assignment == mine, 30, lambda: f"the restarted instance's partitions {mine}, "
                                                         f"not {a2.assignment}")
    after = describe(broker.port, group)
    assert after.group_epoch == epoch and b.assignment == theirs
    assert {m.instance_id: m.member_id for m in after.members}["inst-a"] == a2.member


def test_group_configs_set_a_groups_timers(broker: BrokerProcess) -> None:
    """A consumer group's own `consumer.heartbeat.interval.ms` (GROUP config resource) is what its members
    are told; another group keeps the broker's (300 ms here)."""
    topic, group = unique_name("gcfg"), unique_name("g")
    create_topic(broker.bootstrap, topic)
    alter_configs(broker.bootstrap, ResourceType.GROUP, group, consumer__heartbeat__interval__ms="700")
    with RawClient(broker.port) as raw:
        raw.request(FindCoordinatorRequest(key=group), 1)  # creates __consumer_offsets

        def interval(of_group: str) -> int | None:
            hb = raw.request(ConsumerGroupHeartbeatRequest(
                group_id=of_group, member_id=unique_name("m"), member_epoch=0, rebalance_timeout_ms=10_000,
                subscribed_topic_names=[topic], topic_partitions=[]), version=0)
            assert hb.error_code in (0, 14, 15, 16), hb  # the coordinator (and __consumer_offsets) not ready yet
            return hb.heartbeat_interval_ms if hb.error_code == 0 else None

        assert wait_until(lambda: interval(group), message="a heartbeat answer") == 700
        assert wait_until(lambda: interval(unique_name("g")), message="a heartbeat answer") == 300
