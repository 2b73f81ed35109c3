"""Log compaction against a real broker with real clients: latest value per key with offsets preserved,
tombstones removed after delete.retention.ms, null keys rejected, `__consumer_offsets` compacted
without losing any group's latest commit across clean and kill -9 restarts, and a new follower copying
a compacted log (gaps and all) that then leads."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from odradek.protocol.records import iter_batches
from tests.clients import admin, create_topic, unique_name
from tests.harness import NO_REBALANCE_DELAY, BrokerPool, BrokerProcess
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot

OVERRIDES = {
    "log.cleaner.backoff.ms": "200",
    "offsets.topic.num.partitions": "3",
    "offsets.topic.segment.bytes": "3000",
    **NO_REBALANCE_DELAY,
}
COMPACTED = {
    "cleanup.policy": "compact",
    "segment.bytes": "1500",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "500",
}


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return OVERRIDES


def produce_keyed(bootstrap: str, topic: str, items: list[tuple[bytes, bytes | None]]) -> dict[int, tuple]:
    """Produce (key, value) pairs in order, in small batches; returns offset -> (key, value)."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "batch.num.messages": 7})
    acked: dict[int, tuple] = {}
    errors: list[str] = []

    def cb(err: KafkaError | None, msg: object) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            acked[msg.offset()] = (msg.key(), msg.value())  # type: ignore[attr-defined]

    for key, value in items:
        p.produce(topic, key=key, value=value, partition=0, on_delivery=cb)
        p.poll(0)
    assert p.flush(30) == 0
    assert not errors, errors
    return acked


def read_from_start(bootstrap: str, topic: str, last_offset: int) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record from the beginning through `last_offset` (which must exist)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_name("read"), "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, -2)])
    out: list[tuple[int, bytes | None, bytes | None]] = []
    deadline = time.monotonic() + 30
    try:
        while (not out or out[-1][0] < last_offset) and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                assert not m.error(), m.error()
                out.append((m.offset(), m.key(), m.value()))
    finally:
        c.close()
    assert out and out[-1][0] == last_offset, "did not reach the last record"
    return out


def read_kafka_python(bootstrap: str, topic: str, last_offset: int) -> list[tuple[int, bytes | None, bytes | None]]:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    kc = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    kc.assign([KTP(topic, 0)])
    kc.seek_to_beginning()
    out: list[tuple[int, bytes | None, bytes | None]] = []
    deadline = time.monotonic() + 30
    try:
        while (not out or out[-1][0] < last_offset) and time.monotonic() < deadline:
            for records in kc.poll(timeout_ms=300).values():
                out += [(r.offset, r.key, r.value) for r in records]
    finally:
        kc.close()
    return out


def segment_bases(partition_dir: Path) -> list[int]:
    return sorted(int(p.name[:20]) for p in partition_dir.glob("*.log"))


def records_on_disk(partition_dir: Path) -> int:
    count = 0
    for path in partition_dir.glob("*.log"):
        data = path.read_bytes()
        count += sum(h.records_count for _, h in iter_batches(data))
    return count


def compacted_shape(got: list[tuple], written: dict[int, tuple], active_base: int) -> bool:
    """Every record unchanged at its original offset; below the active segment one record per key, its
    latest there (a tombstone may be gone already); from the active segment on, everything."""
    if any(written.get(offset) != (key, value) for offset, key, value in got):
        return False
    below = [(offset, key) for offset, key, _ in got if offset < active_base]
    latest = {key: offset for offset, (key, _) in sorted(written.items()) if offset < active_base}
    allowed = {(offset, key) for key, offset in latest.items()}
    required = {(offset, key) for key, offset in latest.items() if written[offset][1] is not None}
    if len(below) != len(set(below)) or not required <= set(below) <= allowed:
        return False
    return [o for o, _, _ in got if o >= active_base] == [o for o in sorted(written) if o >= active_base]


def test_compacted_topic_keeps_the_latest_value_per_key(broker: BrokerProcess) -> None:
    topic = unique_name("compacted")
    create_topic(broker.bootstrap, topic, config=COMPACTED)
    items: list[tuple[bytes, bytes | None]] = [
        (b"key-%d" % (i % 8), b"value-%d-" % i + b"x" * 20) for i in range(400)
    ]
    items.insert(100, (b"doomed", b"soon deleted"))
    items.insert(200, (b"doomed", None))  # a tombstone, early enough to leave the active segment
    written = produce_keyed(broker.bootstrap, topic, items)
    last = max(written)
    partition_dir = broker.log_dir / f"{topic}-0"
    before = len(written)

    def compacted() -> bool:
        got = read_from_start(broker.bootstrap, topic, last)
        return len(got) < before and compacted_shape(got, written, segment_bases(partition_dir)[-1])

    wait_until(compacted, 40, "compaction of the topic")
    assert f"Cleaned log {topic}-0" in broker.output()
    # the tombstone is removed once delete.retention.ms has passed after the cleaning that kept it
    wait_until(lambda: all(k != b"doomed" for _, k, _ in read_from_start(broker.bootstrap, topic, last)), 40,
               "removal of the tombstone")
    got = read_from_start(broker.bootstrap, topic, last)
    assert compacted_shape(got, written, segment_bases(partition_dir)[-1])
    assert {k for _, k, _ in got} == {b"key-%d" % i for i in range(8)}
    assert [o for o, _, _ in got] == sorted({o for o, _, _ in got})
    assert read_kafka_python(broker.bootstrap, topic, last) == got
    # a fetch at an offset compacted away starts at the next record
    gap = next(o for o in range(last) if o not in {g[0] for g in got})
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique_name("gap"), "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, gap)])
    first = None
    deadline = time.monotonic() + 15
    while first is None and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            first = m.offset()
    c.close()
    assert first == min(o for o, _, _ in got if o > gap)


def test_null_key_is_rejected_by_a_compacted_topic_only(broker: BrokerProcess) -> None:
    compacted, plain = unique_name("keyed"), unique_name("plain")
    create_topic(broker.bootstrap, compacted, config=COMPACTED)
    create_topic(broker.bootstrap, plain)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "retries": 0})
    results: dict[str, KafkaError | None] = {}

    def cb(err: KafkaError | None, msg: object) -> None:
        results[msg.topic()] = err  # type: ignore[attr-defined]

    p.produce(compacted, value=b"no key", on_delivery=cb)
    p.produce(plain, value=b"no key", on_delivery=cb)
    assert p.flush(20) == 0
    err = results[compacted]
    assert err is not None and err.code() == KafkaError.INVALID_RECORD
    assert results[plain] is None
    assert produce_keyed(broker.bootstrap, compacted, [(b"k", b"v")]) == {0: (b"k", b"v")}


def offsets_dirs(b: BrokerProcess) -> list[Path]:
    return sorted(b.log_dir.glob("__consumer_offsets-*"))


@pytest.mark.parametrize("how", ["clean", "kill"])
def test_consumer_offsets_compaction_keeps_every_latest_commit(fresh_broker: BrokerProcess, how: str) -> None:
    b = fresh_broker
    topic = unique_name("committed")
    create_topic(b.bootstrap, topic, partitions=2)
    groups = [unique_name(f"g{i}") for i in range(6)]
    consumers = {g: Consumer({"bootstrap.servers": b.bootstrap, "group.id": g, "enable.auto.commit": False})
                 for g in groups}
    commits = 0  # two records each
    for r in range(40):
        for i, (_group, c) in enumerate(consumers.items()):
            c.commit(offsets=[TopicPartition(topic, p, 1000 * i + r + p) for p in range(2)], asynchronous=False)
            commits += 1
    for c in consumers.values():
        c.close()
    latest = {g: [1000 * i + 39 + p for p in range(2)] for i, g in enumerate(groups)}
    # the cleaner may swap a segment while it is being read: such a read is retried
    wait_until(lambda: sum(records_on_disk(d) for d in offsets_dirs(b)) < commits, 40,
               "compaction of __consumer_offsets", ignoring=(FileNotFoundError,))
    assert "Cleaned log __consumer_offsets-" in b.output()
    assert (b.log_dir / "cleaner-offset-checkpoint").exists()
    if how == "clean":
        b.stop()
    else:
        b.kill()
    shrunk = sum(records_on_disk(d) for d in offsets_dirs(b))
    mark = len(b.output())
    b.start()
    for g in groups:
        wait_until(lambda g=g: committed(b.bootstrap, g, topic) == latest[g], 30, f"offsets of {g}")
    restarted = b.output()[mark:]
    assert "Truncating segment" not in restarted
    now_on_disk = wait_until(lambda: (sum(records_on_disk(d) for d in offsets_dirs(b)),), 10,
                             "a count of the records on disk", ignoring=(FileNotFoundError,))[0]
    assert now_on_disk <= shrunk


def committed(bootstrap: str, group: str, topic: str) -> list[int] | None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return [tp.offset for tp in c.committed([TopicPartition(topic, p) for p in range(2)], timeout=10)]
    except Exception:
        return None
    finally:
        c.close()


def test_new_follower_copies_a_compacted_log_and_can_lead(zk_standalone: ZooKeeperChroot,
                                                          brokers: BrokerPool) -> None:
    cluster = brokers.start_cluster(zk_standalone.connect_string, 2, OVERRIDES)
    topic = unique_name("replicated")
    future = admin(cluster.bootstrap).create_topics([NewTopic(topic, 1, replica_assignment=[[0, 1]], config=COMPACTED)])
    future[topic].result(20)
    leader, follower = cluster.by_id(0), cluster.by_id(1)
    items = [(b"key-%d" % (i % 5), b"value-%d-" % i + b"y" * 30) for i in range(300)]
    written = produce_keyed(leader.bootstrap, topic, items)
    last = max(written)
    wait_until(lambda: len(read_from_start(leader.bootstrap, topic, last)) < len(written), 40, "compaction")
    follower.stop()
    for path in (follower.log_dir / f"{topic}-0").iterdir():  # the follower starts over from nothing
        path.unlink()
    (follower.log_dir / f"{topic}-0").rmdir()
    follower.start()
    copied = follower.log_dir / f"{topic}-0"
    wait_until(lambda: copied.exists() and records_on_disk(copied) > 0
               and max(segment_bases(copied) or [0]) > 0 and _ends_at(copied, last), 40, "the follower's copy")
    expected = read_from_start(leader.bootstrap, topic, last)
    leader.kill()
    got = wait_until(lambda: read_from_start(follower.bootstrap, topic, last), 60, "the follower to lead",
                     ignoring=(AssertionError,))
    # the new leader's own cleaner may have compacted further than the old leader had: any valid
    # compaction of what was written, holding the latest record of every key, will do
    assert all(written[o] == (k, v) for o, k, v in got)
    assert [o for o, _, _ in got] == sorted({o for o, _, _ in got})
    latest = {k: o for o, (k, _) in sorted(written.items())}
    assert set(latest.values()) <= {o for o, _, _ in got}
    assert len(got) <= len(expected) < len(written)


def _ends_at(partition_dir: Path, last: int) -> bool:
    ends = [h.last_offset for path in partition_dir.glob("*.log") for _, h in iter_batches(path.read_bytes())]
    return bool(ends) and max(ends) == last
