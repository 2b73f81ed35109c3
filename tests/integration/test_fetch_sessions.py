"""Incremental fetch sessions (KIP-227) against a real broker: a full fetch opens a session, incremental
fetches name only what changed and are answered with only what is new, wrong ids and epochs get Kafka's
errors, epoch -1 closes; kafka-python (which uses sessions) consumes many partitions through one."""

from __future__ import annotations

import uuid
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.protocol.consumer import FetchRequest

from tests.clients import create_topic, produce
from tests.harness import BrokerProcess
from tests.rawclient import RawClient
from tests.waiting import wait_until

FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH = 70, 71


def fetch(c: RawClient, topic: str, session_id: int, epoch: int, offsets: dict[int, int],
          forgotten: list[int] | None = None, wait_ms: int = 0) -> Any:
    req = FetchRequest(
        replica_id=-1, max_wait_ms=wait_ms, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
        session_id=session_id, session_epoch=epoch, rack_id="",
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
            FetchRequest.FetchTopic.FetchPartition(partition=p, current_leader_epoch=-1, fetch_offset=o,
                                                   last_fetched_epoch=-1, log_start_offset=-1,
                                                   partition_max_bytes=1 << 20)
            for p, o in offsets.items()])] if offsets else [],
        forgotten_topics_data=[FetchRequest.ForgottenTopic(topic=topic, partitions=forgotten)] if forgotten else [])
    return c.request(req, version=12)


def answered(resp: Any) -> dict[int, tuple[int, int]]:
    """partition -> (high watermark, bytes of records) of a response."""
    return {p.partition_index: (p.high_watermark, len(p.records or b"")) for t in resp.responses for p in t.partitions}


def test_a_session_answers_with_news_only(broker: BrokerProcess) -> None:
    topic = "sess-" + uuid.uuid4().hex[:6]
    create_topic(broker.bootstrap, topic, 3)
    produce(broker.bootstrap, topic, [b"a0"], partition=0)
    with RawClient(broker.port) as c:
        full = fetch(c, topic, 0, 0, {0: 0, 1: 0, 2: 0})
        assert full.error_code == 0 and full.session_id != 0
        sid = full.session_id
        assert answered(full) == {0: (1, answered(full)[0][1]), 1: (0, 0), 2: (0, 0)}
        assert answered(full)[0][1] > 0

        # nothing new: no partitions (partition 0's offset moved on, as a consumer's would)
        quiet = fetch(c, topic, sid, 1, {0: 1})
        assert (quiet.error_code, quiet.session_id, answered(quiet)) == (0, sid, {})

        produce(broker.bootstrap, topic, [b"b0", b"b1"], partition=2)
        news = fetch(c, topic, sid, 2, {})
        assert list(answered(news)) == [2] and answered(news)[2][0] == 2

        # forget partition 2: new records there are no longer news; a produce to 1 is
        produce(broker.bootstrap, topic, [b"c"], partition=2)
        produce(broker.bootstrap, topic, [b"d"], partition=1)
        after = fetch(c, topic, sid, 3, {2: 2}, forgotten=[2])
        assert list(answered(after)) == [1]

        assert fetch(c, topic, sid, 3, {}).error_code == INVALID_FETCH_SESSION_EPOCH  # epoch 3 was used
        assert fetch(c, topic, sid + 1, 1, {}).error_code == FETCH_SESSION_ID_NOT_FOUND
        closed = fetch(c, topic, sid, -1, {0: 0})  # a full fetch that closes the session
        assert closed.session_id == 0 and list(answered(closed)) == [0]
        assert fetch(c, topic, sid, 4, {}).error_code == FETCH_SESSION_ID_NOT_FOUND


def test_kafka_python_consumes_many_partitions_through_a_session(broker: BrokerProcess) -> None:
    topic = "sess-kp-" + uuid.uuid4().hex[:6]
    create_topic(broker.bootstrap, topic, 12)
    for p in range(12):
        produce(broker.bootstrap, topic, [b"%d-%d" % (p, i) for i in range(5)], partition=p)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100,
                             consumer_timeout_ms=1000)
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(12)])
        consumer.seek_to_beginning()
        seen: set[bytes] = set()

        def all_read() -> bool:
            for records in consumer.poll(timeout_ms=500).values():
                seen.update(r.value for r in records)
            return len(seen) == 60

        wait_until(all_read, 60, "kafka-python to read 60 records over 12 partitions")
        produce(broker.bootstrap, topic, [b"late"], partition=7)  # arrives through the same session
        wait_until(lambda: (all_read(), b"late" in seen)[1], 60, "the record produced later")
        # the client is deep in an incremental session (it falls back to full fetches on any session error)
        sessions = [h.next_metadata for h in consumer._fetcher._session_handlers.values()]
        assert any(m.session_id != 0 and m.epoch >= 2 for m in sessions), [(m.session_id, m.epoch) for m in sessions]
    finally:
        consumer.close()
