"""Kafka Streams 4.4 with `group.protocol=streams` (KIP-1071) against Odradek, unmodified: the WordCount demo
joins a streams group (StreamsGroupHeartbeat), the broker validates its topology, creates its repartition and
changelog topics and assigns its tasks, and the counts are Kafka's quickstart's; StreamsGroupDescribe and
ListGroups show the group. Two instances of a stateful exactly-once application (tests/jvm/StreamsCounter.java)
share the tasks, each holding standbys of the other's (the group's `streams.num.standby.replicas`, 1 here);
one leaves and the other takes over its tasks; every key's counts are 1..n once each."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from kafka.protocol.admin import ListGroupsRequest

from odradek.protocol.kip1071 import StreamsGroupDescribeRequest
from tests.clients import create_topic
from tests.harness import BrokerProcess, stop_process
from tests.jvm.apache_kafka import KafkaTools
from tests.jvm.test_kafka_streams import (  # noqa: F401
    COUNTS,
    KEYS,
    LINES,
    PER_ROUND,
    app_output,
    latest_counts,
    produce_round,
    start_app,
    streams_app,
)
from tests.rawclient import RawClient, incremental_alter_configs
from tests.waiting import wait_until

APP = "wordcount-kip1071"


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    # the first assignment at once (the two-instance test sets its group's own delay)
    return {"group.streams.num.standby.replicas": "1", "group.streams.initial.rebalance.delay.ms": "0",
            "group.initial.rebalance.delay.ms": "0",
            "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1"}


def test_wordcount_demo_with_the_streams_protocol(broker: BrokerProcess, streams_app: list[subprocess.Popen],  # noqa: F811
                                                  tools: KafkaTools, tmp_path: Path) -> None:
    for topic in ("streams-plaintext-input", "streams-wordcount-output"):
        create_topic(broker.bootstrap, topic, partitions=2)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for line in LINES:
        p.produce("streams-plaintext-input", value=line.encode())
    assert p.flush(30) == 0
    start_app(streams_app, tmp_path, "org.apache.kafka.streams.examples.wordcount.WordCountDemo",
              {"bootstrap.servers": broker.bootstrap, "state.dir": str(tmp_path / "state"), "application.id": APP,
               "group.protocol": "streams"})
    assert latest_counts(broker.bootstrap, "streams-wordcount-output", COUNTS, tmp_path / "streams.out") == COUNTS
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topics = admin.list_topics(timeout=10).topics
    internal = sorted(t for t in topics if t.startswith(APP))
    # the broker made the demo's repartition and changelog topics, with a partition per task
    stores = f"{APP}-KSTREAM-AGGREGATE-STATE-STORE-0000000003"
    assert internal == [f"{stores}-changelog", f"{stores}-repartition"]
    assert all(len(topics[t].partitions) == 2 for t in internal)

    with RawClient(broker.port) as raw:
        listed = raw.request(ListGroupsRequest(states_filter=[], types_filter=["streams"]), version=5).groups
        assert [(g.group_id, g.group_type) for g in listed] == [(APP, "streams")]
        group = raw.request(StreamsGroupDescribeRequest(group_ids=[APP], include_authorized_operations=False),
                            version=1).groups[0]
        assert (group.error_code, group.group_state, len(group.members)) == (0, "Stable", 1)
        # one stream thread: both subtopologies' two tasks are its
        assert {t.subtopology_id: sorted(t.partitions) for t in group.members[0].assignment.active_tasks} == {
            "0": [0, 1], "1": [0, 1]}
    # Kafka's kafka-streams-groups tool reads the group through StreamsGroupDescribe
    command = "org.apache.kafka.tools.streams.StreamsGroupCommand"
    listed = tools.run_main(command, "--bootstrap-server", broker.bootstrap, "--list")
    assert listed.exit == 0 and APP in listed.stdout.split()
    state = tools.run_main(command, "--bootstrap-server", broker.bootstrap, "--describe", "--group", APP, "--state")
    assert state.exit == 0 and "sticky" in state.stdout and "Stable" in state.stdout, state
    members = tools.run_main(command, "--bootstrap-server", broker.bootstrap, "--describe", "--group", APP,
                             "--members", "--verbose")
    assert members.exit == 0 and "ACTIVE: 0:[0,1]; 1:[0,1];" in members.stdout, members


def _describe(port: int, group: str) -> Any:
    with RawClient(port) as raw:
        return raw.request(StreamsGroupDescribeRequest(group_ids=[group], include_authorized_operations=False),
                           version=1).groups[0]


def _tasks(ids: Any) -> set[tuple[str, int]]:
    return {(t.subtopology_id, p) for t in ids for p in t.partitions}


def test_two_instances_share_tasks_with_standbys_and_one_leaves(
        broker: BrokerProcess, streams_app: list[subprocess.Popen], tmp_path: Path) -> None:  # noqa: F811
    bootstrap, group = broker.bootstrap, "counter-kip1071"
    create_topic(bootstrap, "kip1071-in", partitions=2)
    create_topic(bootstrap, "kip1071-out", partitions=2)
    produce_round(bootstrap, "kip1071-in", 0)
    props = {"bootstrap.servers": bootstrap, "application.id": group, "group.protocol": "streams",
             "input.topic": "kip1071-in", "output.topic": "kip1071-out", "processing.guarantee": "exactly_once_v2",
             "replication.factor": "1", "commit.interval.ms": "200", "statestore.cache.max.bytes": "0"}
    with RawClient(broker.port) as raw:  # both instances join within the first assignment's delay
        assert incremental_alter_configs(raw, 32, group, [("streams.initial.rebalance.delay.ms", 0, "3000")]
                                         ).error_code == 0
    instances = []
    for name in ("a", "b"):
        workdir = tmp_path / name
        workdir.mkdir()
        instances.append(start_app(streams_app, workdir, "StreamsCounter",
                                   {**props, "state.dir": str(workdir / "state")}, runner=True))
    every = {(s, p) for s in ("0", "1") for p in range(2)}

    def shared() -> bool:
        d = _describe(broker.port, group)
        if d.error_code or d.group_state != "Stable" or len(d.members) != 2:
            return False
        active = [_tasks(m.assignment.active_tasks) for m in d.members]
        standby = [_tasks(m.assignment.standby_tasks) for m in d.members]
        # each task active on one instance and standing by on the other
        return (active[0] | active[1] == every and not active[0] & active[1] and standby[0] == active[1]
                and standby[1] == active[0])

    wait_until(shared, 120, lambda: f"two members sharing the tasks: {_describe(broker.port, group)}; "
               + app_output(tmp_path))
    seen: dict[str, list[int]] = {}
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "kip1071-reader",
                       "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    reader.subscribe(["kip1071-out"])

    def read(total: int) -> bool:
        for m in reader.consume(500, 1):
            if not m.error():
                seen.setdefault(m.key().decode(), []).append(int(m.value().decode().split(":")[0]))
        return sum(len(v) for v in seen.values()) >= total

    try:
        wait_until(lambda: read(PER_ROUND), 120, lambda: "the first round's counts: " + app_output(tmp_path))
        stop_process(instances[0])  # closes cleanly: leaves the group
        wait_until(lambda: len(_describe(broker.port, group).members) == 1, 60, "the instance's leave")
        produce_round(bootstrap, "kip1071-in", PER_ROUND)
        wait_until(lambda: read(2 * PER_ROUND), 120, lambda: f"every count ({sum(len(v) for v in seen.values())} "
                   f"of {2 * PER_ROUND}): " + app_output(tmp_path))
        read(2 * PER_ROUND + 1)  # anything more would be a duplicate
    finally:
        reader.close()
    left = _describe(broker.port, group).members[0]
    assert _tasks(left.assignment.active_tasks) == every and not _tasks(left.assignment.standby_tasks)
    per_key = 2 * PER_ROUND // KEYS
    assert {k: v for k, v in seen.items() if v != list(range(1, per_key + 1))} == {}
    assert sorted(seen) == sorted(f"k{k}" for k in range(KEYS))
