"""Every supported client produces to and consumes from a real broker, for every codec."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import Producer

from tests.clients import consume_all, create_topic, kcat, produce, unique_name
from tests.harness import BrokerProcess

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_round_trip_every_codec(broker: BrokerProcess, codec: str) -> None:
    topic = unique_name("cf")
    create_topic(broker.bootstrap, topic, partitions=2)
    values = [f"{codec}-{i}".encode() * 3 for i in range(500)]
    acks = produce(broker.bootstrap, topic, values, **{"compression.type": codec, "acks": "all"})
    assert len(acks) == 500
    got = consume_all(broker.bootstrap, topic, 500, partitions=2)
    assert sorted(m.value() for m in got) == sorted(values)
    # offsets are dense per partition and start at 0
    for p in (0, 1):
        offs = sorted(m.offset() for m in got if m.partition() == p)
        assert offs == list(range(len(offs)))


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_kafka_python_round_trip(broker: BrokerProcess, codec: str | None) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    topic = unique_name("kp")
    create_topic(broker.bootstrap, topic)
    prod = KafkaProducer(bootstrap_servers=broker.bootstrap, compression_type=codec, acks="all")
    futures = [prod.send(topic, key=b"k%d" % i, value=b"v%d" % i) for i in range(200)]
    prod.flush(30)
    offsets = [f.get(10).offset for f in futures]
    prod.close()
    assert offsets == list(range(200))
    cons = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest",
                         consumer_timeout_ms=5000, enable_auto_commit=False, group_id=None)
    got = [(m.key, m.value) for m in cons]
    cons.close()
    assert got == [(b"k%d" % i, b"v%d" % i) for i in range(200)]


def test_kafka_python_reads_confluent_compressed(broker: BrokerProcess) -> None:
    from kafka import KafkaConsumer, TopicPartition

    topic = unique_name("mix")
    create_topic(broker.bootstrap, topic)
    values = [b"x" * 50 + str(i).encode() for i in range(300)]
    for codec in CODECS:
        produce(broker.bootstrap, topic, values, **{"compression.type": codec})
    cons = KafkaConsumer(bootstrap_servers=broker.bootstrap, consumer_timeout_ms=5000, group_id=None,
                         enable_auto_commit=False)
    cons.assign([TopicPartition(topic, 0)])
    cons.seek_to_beginning()
    got = [m.value for m in cons]
    cons.close()
    assert got == values * len(CODECS)


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_aiokafka_round_trip(broker: BrokerProcess, codec: str | None) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    topic = unique_name("aio")
    create_topic(broker.bootstrap, topic)

    async def run() -> list[bytes]:
        prod = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, compression_type=codec, acks="all")
        await prod.start()
        try:
            for i in range(100):
                await prod.send(topic, b"a%d" % i)
            await prod.flush()
        finally:
            await prod.stop()
        cons = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
        await cons.start()
        try:
            tp = TopicPartition(topic, 0)
            cons.assign([tp])
            await cons.seek_to_beginning(tp)
            out: list[bytes] = []
            while len(out) < 100:
                batch = await asyncio.wait_for(cons.getmany(tp, timeout_ms=1000), 10)
                out += [m.value for m in batch.get(tp, [])]
            return out
        finally:
            await cons.stop()

    assert asyncio.run(run()) == [b"a%d" % i for i in range(100)]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_kcat_produce_and_consume(broker: BrokerProcess, codec: str) -> None:
    topic = unique_name("kcat")
    create_topic(broker.bootstrap, topic)
    lines = b"".join(b"line-%d\n" % i for i in range(50))
    r = kcat("-b", broker.bootstrap, "-P", "-t", topic, "-z", codec, input=lines)
    assert r.returncode == 0, r.stderr
    r = kcat("-b", broker.bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-q")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [b"line-%d" % i for i in range(50)]


def test_kcat_metadata_lists_broker_and_topic(broker: BrokerProcess) -> None:
    topic = unique_name("meta")
    create_topic(broker.bootstrap, topic, partitions=3)
    r = kcat("-b", broker.bootstrap, "-L", "-t", topic)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert f"broker 0 at 127.0.0.1:{broker.port}" in out
    assert f'topic "{topic}" with 3 partitions' in out


def test_acks_zero_and_one(broker: BrokerProcess) -> None:
    topic = unique_name("acks")
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, [b"zero-%d" % i for i in range(100)], acks="0")
    produce(broker.bootstrap, topic, [b"one-%d" % i for i in range(100)], acks="1")
    got = [m.value() for m in consume_all(broker.bootstrap, topic, 200)]
    assert got == [b"zero-%d" % i for i in range(100)] + [b"one-%d" % i for i in range(100)]


def test_long_poll_returns_when_data_arrives(broker: BrokerProcess) -> None:
    """A consumer waiting in a long poll (fetch.wait.max.ms) gets a record produced meanwhile promptly."""
    import threading
    import time

    from confluent_kafka import Consumer, TopicPartition

    topic = unique_name("poll")
    create_topic(broker.bootstrap, topic)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "lp", "fetch.wait.max.ms": 5000,
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    c.poll(1.0)  # connect and start fetching

    def later() -> None:
        time.sleep(0.5)
        p = Producer({"bootstrap.servers": broker.bootstrap})
        p.produce(topic, b"late")
        p.flush(10)

    threading.Thread(target=later).start()
    start = time.monotonic()
    msg = None
    while msg is None and time.monotonic() - start < 10:
        msg = c.poll(0.2)
    c.close()
    assert msg is not None and msg.value() == b"late"
    # well under the 5 s max wait: the long poll was woken by the append
    assert time.monotonic() - start < 4
