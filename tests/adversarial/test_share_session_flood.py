"""Issue #36, observation 7: one client filled the broker-wide share-session cache. ShareFetch requests
with made-up member ids (2,000 in 1.4 s on a classic group) each opened a share session, until every
other group's ShareFetch got SHARE_SESSION_LIMIT_REACHED. A share session is now opened only for a member
the group coordinator knows (GROUP_ID_NOT_FOUND for a group that is no share group, UNKNOWN_MEMBER_ID for
a member the share group does not have), and one group holds at most its member limit of sessions
(`tests/unit/test_share_group.py` for that bound), so a legitimate share consumer still gets its records.
The cache is made small here so the flood stays cheap."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import ResourceType

from odradek.protocol.errors import ErrorCode
from odradek.protocol.kip932 import ShareFetchRequest
from tests.clients import alter_configs, create_topic, produce, unique_name
from tests.harness import BrokerProcess
from tests.rawclient import RawClient
from tests.share_consumers import CONFIG, Share, drain, until_marker
from tests.share_consumers import topic_id as _topic_id
from tests.waiting import wait_until

MAX_SESSIONS = 20


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return {**CONFIG, "group.share.max.share.sessions": str(MAX_SESSIONS)}


def _open_sessions(raw: RawClient, group: str, topic_id: uuid.UUID, count: int) -> list[int]:
    """`count` ShareFetches opening a session each, with a made-up member id: their error codes."""
    part = ShareFetchRequest.FetchTopic.FetchPartition(partition_index=0, acknowledgement_batches=[])
    codes = []
    for _ in range(count):
        resp: Any = raw.request(ShareFetchRequest(
            group_id=group, member_id=uuid.uuid4().hex, share_session_epoch=0, max_wait_ms=0, min_bytes=1,
            max_bytes=1 << 20, max_records=10, batch_size=10, forgotten_topics_data=[],
            topics=[ShareFetchRequest.FetchTopic(topic_id=topic_id, partitions=[part])]), version=1)
        codes.append(resp.error_code)
    return codes


def test_made_up_members_cannot_fill_the_share_session_cache(broker: BrokerProcess) -> None:
    topic, group, classic = unique_name("share"), unique_name("sg"), unique_name("classic")
    create_topic(broker.bootstrap, topic)
    alter_configs(broker.bootstrap, ResourceType.GROUP, group, share__auto__offset__reset="earliest")
    produce(broker.bootstrap, topic, [b"r%d" % i for i in range(5)])
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": classic, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)  # a classic group exists
    finally:
        c.close()
    with RawClient(broker.port) as raw:
        topic_id = wait_until(lambda: _topic_id(raw, topic), message="the topic id")
        # the attacker's connection stays open all along: its sessions (if any) stay in the cache
        codes = _open_sessions(raw, classic, topic_id, 2 * MAX_SESSIONS)
        codes += _open_sessions(raw, unique_name("nothing"), topic_id, MAX_SESSIONS)
        assert set(codes) == {ErrorCode.GROUP_ID_NOT_FOUND}, codes
        share = Share(broker, group, topic)
        try:
            accepted = drain([share], 5, timeout=30)
            assert sorted(v for _o, v in accepted[0]) == [b"r%d" % i for i in range(5)]
            # made-up members of the very share group the consumer is in
            assert set(_open_sessions(raw, group, topic_id, 2 * MAX_SESSIONS)) == {ErrorCode.UNKNOWN_MEMBER_ID}
            assert until_marker(broker, topic, share, b"still served")[-1] == b"still served"
        finally:
            share.close()
