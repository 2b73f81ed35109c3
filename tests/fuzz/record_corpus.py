"""Record the client frame corpus: real clients talk to a real broker through the recording proxy.

    PYTHONPATH=src python -m tests.fuzz.record_corpus [output path]

confluent-kafka (librdkafka) and kafka-python each produce, consume in a group, commit, and run the admin
calls the broker serves. A step that fails is reported and skipped: its requests are recorded all the same.
"""

from __future__ import annotations

import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path

from tests.fuzz import corpus
from tests.fuzz.proxy import RecordingProxy
from tests.harness import BrokerProcess, free_port

TIMEOUT = 15.0


def _step(name: str, fn: Callable[[], object]) -> None:
    try:
        fn()
        print(f"ok    {name}")
    except Exception:
        print(f"FAIL  {name}\n{traceback.format_exc(limit=2)}", file=sys.stderr)


def drive_confluent(bootstrap: str, topic: str, group: str) -> None:
    from confluent_kafka import Consumer, ElectionType, Producer, TopicCollection, TopicPartition
    from confluent_kafka.admin import (
        AdminClient,
        ConfigResource,
        NewPartitions,
        NewTopic,
        OffsetSpec,
        ResourceType,
    )

    from odradek.admin_client.topic_configs import topic_resource

    admin = AdminClient({"bootstrap.servers": bootstrap})
    extra = topic + "-extra"

    def wait(futures: dict) -> None:
        for f in futures.values():
            f.result(timeout=TIMEOUT)

    _step(
        "create topics",
        lambda: wait(
            admin.create_topics(
                [NewTopic(topic, 2, 1), NewTopic(extra, 1, 1, config={"retention.ms": "3600000"})],
                operation_timeout=10,
            )
        ),
    )
    _step(
        "describe topics",
        # by name: confluent-kafka resolves the futures through the dict it returns, so popping from it
        # leaves the popped future unresolved
        lambda: admin.describe_topics(TopicCollection([topic]))[topic].result(TIMEOUT),
    )
    _step("describe cluster", lambda: admin.describe_cluster().result(TIMEOUT))
    _step("create partitions", lambda: wait(admin.create_partitions([NewPartitions(extra, 3)])))
    _step(
        "describe configs",
        lambda: wait(
            admin.describe_configs(
                [topic_resource(topic), ConfigResource(ResourceType.BROKER, "0")]
            )
        ),
    )
    _step(
        "incremental alter configs",
        lambda: wait(
            admin.incremental_alter_configs(
                [topic_resource(extra, [("retention.ms", "7200000")])]
            )
        ),
    )

    def produce() -> None:
        p = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "linger.ms": 5,
                "compression.type": "lz4",
            }
        )
        for i in range(20):
            p.produce(topic, key=b"k%d" % (i % 3), value=b"value-%d" % i, headers=[("h", b"v")])
        assert p.flush(TIMEOUT) == 0
        p2 = Producer({"bootstrap.servers": bootstrap, "acks": 1, "compression.type": "gzip"})
        p2.produce(topic, value=b"x" * 100, partition=1)
        assert p2.flush(TIMEOUT) == 0

    _step("produce", produce)

    def consume() -> None:
        c = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 6000,
            }
        )
        c.subscribe([topic])
        got = 0
        deadline = time.monotonic() + TIMEOUT
        while got < 21 and time.monotonic() < deadline:
            msgs = c.consume(50, 0.5)
            got += sum(1 for m in msgs if not m.error())
            if msgs:
                c.commit(asynchronous=False)
        c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=TIMEOUT)
        c.close()

    _step("consume in a group and commit", consume)
    _step(
        "list offsets",
        lambda: wait(
            admin.list_offsets(
                {
                    TopicPartition(topic, 0): OffsetSpec.latest(),
                    TopicPartition(topic, 1): OffsetSpec.earliest(),
                },
                request_timeout=TIMEOUT,
            )
        ),
    )
    _step("list groups", lambda: admin.list_consumer_groups().result(TIMEOUT))
    _step("describe groups", lambda: wait(admin.describe_consumer_groups([group])))
    _step("delete records", lambda: wait(admin.delete_records([TopicPartition(topic, 1, 1)])))
    _step(
        "elect leaders",
        lambda: admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, 0)]).result(TIMEOUT),
    )
    _step(
        "alter configs",
        lambda: wait(
            admin.alter_configs(
                [ConfigResource(ResourceType.TOPIC, extra, set_config={"retention.ms": "3600000"})]
            )
        ),
    )
    _step("delete groups", lambda: wait(admin.delete_consumer_groups([group])))
    _step("delete topics", lambda: wait(admin.delete_topics([extra], operation_timeout=10)))


def drive_kafka_python(bootstrap: str, topic: str, group: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewPartitions, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=int(TIMEOUT * 1000))
    extra = topic + "-kp"
    try:
        _step(
            "kp create topics",
            lambda: admin.create_topics(
                [NewTopic(topic, 1, 1), NewTopic(extra, 1, 1, topic_configs={"cleanup.policy": "compact"})]
            ),
        )
        _step(
            "kp describe configs",
            lambda: admin.describe_configs(
                [
                    ConfigResource(ConfigResourceType.TOPIC, extra),
                    ConfigResource(ConfigResourceType.BROKER, "0"),
                ]
            ),
        )
        _step(
            "kp alter configs",
            lambda: admin.alter_configs(
                [ConfigResource(ConfigResourceType.TOPIC, extra, configs={"retention.ms": "60000"})]
            ),
        )
        _step("kp create partitions", lambda: admin.create_partitions({extra: NewPartitions(2)}))
        _step("kp describe cluster", admin.describe_cluster)

        def produce_consume() -> None:
            producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
            for i in range(5):
                producer.send(topic, key=b"kp", value=b"kp-%d" % i)
            producer.flush(TIMEOUT)
            producer.close()
            consumer = KafkaConsumer(
                topic,
                bootstrap_servers=bootstrap,
                group_id=group,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                consumer_timeout_ms=3000,
            )
            for _ in consumer:
                pass
            consumer.commit()
            consumer.close()

        _step("kp produce, consume in a group, commit", produce_consume)
        _step("kp list groups", admin.list_groups)
        _step("kp describe groups", lambda: admin.describe_groups([group]))
        _step("kp list group offsets", lambda: admin.list_group_offsets({group: None}))
        _step(
            "kp delete group offsets", lambda: admin.delete_group_offsets(group, [TopicPartition(topic, 0)])
        )
        _step("kp list reassignments", admin.list_partition_reassignments)
        _step("kp delete topics", lambda: admin.delete_topics([extra]))
    finally:
        admin.close()


def record(output: Path) -> int:
    proxy_port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(
            Path(tmp),
            overrides={
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy_port}",
                "group.initial.rebalance.delay.ms": "0",
            },
        )
        broker.start()
        try:
            with RecordingProxy(proxy_port, broker.port) as proxy:
                bootstrap = f"127.0.0.1:{proxy_port}"
                suffix = uuid.uuid4().hex[:6]
                drive_confluent(bootstrap, f"corpus-{suffix}", f"group-{suffix}")
                drive_kafka_python(bootstrap, f"corpus-kp-{suffix}", f"group-kp-{suffix}")
                time.sleep(0.5)  # let the last responses and closes pass through
                frames = proxy.recorded()
        finally:
            broker.stop()
            broker.kill()
    kept = corpus.save(frames, output)
    print(f"{len(frames)} frames recorded, {kept} kept in {output} ({output.stat().st_size} bytes)")
    return kept


if __name__ == "__main__":
    record(Path(sys.argv[1]) if len(sys.argv) > 1 else corpus.CORPUS_PATH)
