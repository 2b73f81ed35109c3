"""Kafka Streams 4.4 with `group.protocol=streams` (KIP-1071) against Odradek, unmodified: the WordCount demo
joins a streams group (StreamsGroupHeartbeat), the broker validates its topology, creates its repartition and
changelog topics and assigns its tasks, and the counts are Kafka's quickstart's; StreamsGroupDescribe and
ListGroups show the group."""

from __future__ import annotations

import subprocess
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from kafka.protocol.admin import ListGroupsRequest

from odradek.protocol.kip1071 import StreamsGroupDescribeRequest
from tests.clients import create_topic
from tests.harness import BrokerProcess
from tests.jvm.test_kafka_streams import COUNTS, LINES, latest_counts, start_app, streams_app  # noqa: F401
from tests.rawclient import RawClient

APP = "wordcount-kip1071"


def test_wordcount_demo_with_the_streams_protocol(broker: BrokerProcess, streams_app: list[subprocess.Popen],  # noqa: F811
                                                  tmp_path: Path) -> None:
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
