"""Guide replay (b, c): kafka-0.11-three-broker-cluster-guide.txt, three brokers on one host.

ZooKeeper from config/zookeeper.properties (`zookeeper-server-start.sh ... &`), broker 0 alone with the
`test` topic of the guide's previous (single-broker) article, then server1/server2.properties; a topic
with replication factor 3 created, listed and described through --zookeeper; console producer
(--broker-list) and consumer (--bootstrap-server --from-beginning); kill -9 of the leader, describe
showing the new leader and the shrunken Isr, nothing lost, producing on; then the guide's shutdown
(kafka-server-stop.sh for each config, zookeeper-server-stop.sh).
"""

from __future__ import annotations

from tests.guides.replay import (
    FAST_FAILOVER,
    LOCAL,
    Described,
    GuideHost,
    Partition,
    free_ports,
    parse_describe,
)
from tests.waiting import wait_until

TOPIC = "my-replicated-topic"
GUIDE_DESCRIBE = """\
Topic:my-replicated-topic       PartitionCount:1        ReplicationFactor:3     Configs:
        Topic: my-replicated-topic      Partition: 0    Leader: 2       Replicas: 2,0,1 Isr: 2,0,1
"""
GUIDE_AFTER_KILL = """\
Topic:my-replicated-topic       PartitionCount:1        ReplicationFactor:3     Configs:
        Topic: my-replicated-topic      Partition: 0    Leader: 0       Replicas: 2,0,1 Isr: 0,1
"""
GUIDE_TEST_TOPIC = """\
Topic:test      PartitionCount:1        ReplicationFactor:1     Configs:
        Topic: test     Partition: 0    Leader: 0       Replicas: 0     Isr: 0
"""
CONFIGS = (("k011_02_server.properties", "server.properties", ""),
           ("k011_03_server1.properties", "server1.properties", "1"),
           ("k011_04_server2.properties", "server2.properties", "2"))


def check_replicated(text: str) -> Partition:
    """The guide's reading: one partition on all three brokers, its leader the first replica, all in sync."""
    topic = parse_describe(text)[TOPIC]
    assert (topic.partition_count, topic.replication_factor, topic.configs) == (1, 3, "")
    part = topic.partitions[0]
    assert sorted(part.replicas) == [0, 1, 2] and part.leader == part.replicas[0]
    assert sorted(part.isr) == [0, 1, 2]
    return part


def check_failed_over(text: str, before: Partition) -> Partition:
    """After kill -9 of the leader: another replica leads, the replicas are unchanged, the Isr lost it."""
    part = parse_describe(text)[TOPIC].partitions[0]
    assert part.replicas == before.replicas
    assert part.leader in before.replicas and part.leader != before.leader
    assert sorted(part.isr) == sorted(set(before.replicas) - {before.leader})
    return part


def check_test_topic(text: str) -> None:
    topic = parse_describe(text)["test"]
    assert (topic.partition_count, topic.replication_factor) == (1, 1)
    part = topic.partitions[0]
    assert (part.leader, part.replicas, part.isr) == (0, [0], [0])


def test_three_brokers_on_one_host(host: GuideHost) -> None:
    zk_port, *ports = free_ports(4)
    zk = f"localhost:{zk_port}"
    zk_data = host.root / "tmp" / "zookeeper"
    zk_config = host.install("k011_01_zookeeper.properties", "config/zookeeper.properties",
                             {"dataDir": str(zk_data), "clientPort": str(zk_port)}, {"clientPortAddress": LOCAL})
    configs = [
        host.install(data, f"config/{name}", {"listeners": f"PLAINTEXT://{LOCAL}:{ports[i]}",
                                              "log.dirs": str(host.root / "tmp" / f"kafka-logs{suffix}"),
                                              "zookeeper.connect": zk})
        for i, (data, name, suffix) in enumerate(CONFIGS)
    ]
    host.zk_start_background(zk_config, zk_data, zk_port)

    def start(broker: int) -> None:  # ./kafka-server-start.sh ../config/serverN.properties &
        host.broker_start_background(configs[broker], ports[broker], host.path(f"logs/server{broker}.out"),
                                     *FAST_FAILOVER)

    def describe(topic: str) -> str:
        return host.ok("topics", "--describe", "--zookeeper", zk, "--topic", topic).stdout

    def consume(port: int, count: int) -> list[str]:
        r = host.ok("console-consumer", "--bootstrap-server", f"localhost:{port}", "--from-beginning", "--topic",
                    TOPIC, "--max-messages", str(count), "--timeout-ms", "30000", timeout=90)
        lines = r.stdout.splitlines()
        assert len(lines) == count, f"{lines}\n{r.stderr}"
        return lines

    # The previous article: the broker alone, and its `test` topic.
    start(0)
    host.wait_registered(zk, {0})
    host.ok("topics", "--create", "--zookeeper", zk, "--replication-factor", "1", "--partitions", "1",
            "--topic", "test")

    start(1)
    start(2)
    host.wait_registered(zk, {0, 1, 2})
    r = host.ok("topics", "--create", "--zookeeper", zk, "--replication-factor", "3", "--partitions", "1",
                "--topic", TOPIC)
    assert r.stdout.splitlines() == [f"Created topic {TOPIC}."]  # 0.11 printed: Created topic "my-replicated-topic".
    # The guide's list also shows __consumer_offsets, made by the previous article's consumer.
    assert host.ok("topics", "--list", "--zookeeper", zk).stdout.splitlines() == [TOPIC, "test"]

    check_replicated(GUIDE_DESCRIBE)
    before = check_replicated(describe(TOPIC))
    check_test_topic(GUIDE_TEST_TOPIC)
    check_test_topic(describe("test"))

    host.ok("console-producer", "--broker-list", f"localhost:{ports[0]}", "--topic", TOPIC,
            input="hello everyone!\nhow about ?\n")
    assert consume(ports[0], 2) == ["hello everyone!", "how about ?"]

    # kill -9 the leader (`ps aux | grep server2.properties`, `kill -9 6611` in the guide).
    killed = before.leader
    assert killed is not None
    host.kill9(configs[killed])
    check_failed_over(GUIDE_AFTER_KILL, parse_describe(GUIDE_DESCRIBE)[TOPIC].partitions[0])

    def failed_over() -> Described | None:
        topic = parse_describe(describe(TOPIC))[TOPIC]
        part = topic.partitions[0]
        return topic if part.leader not in (None, killed) and killed not in part.isr else None

    wait_until(failed_over, 60, f"a new leader and an Isr without broker {killed}")
    after = check_failed_over(describe(TOPIC), before)

    # The guide keeps using localhost:9092, broker 0, which it did not kill; here broker 0 may have been
    # the leader, so the clients go to a broker that is still up.
    survivor = ports[0] if killed != 0 else ports[after.leader or 0]
    assert consume(survivor, 2) == ["hello everyone!", "how about ?"]
    host.ok("console-producer", "--broker-list", f"localhost:{survivor}", "--topic", TOPIC, input="who is living ?\n")
    assert consume(survivor, 3) == ["hello everyone!", "how about ?", "who is living ?"]

    # 关闭集群: kafka-server-stop.sh for each config (the killed one has nothing left to stop), then ZooKeeper.
    for broker, config in enumerate(configs):
        r = host.run("server-stop", str(config), timeout=90)
        if broker == killed:
            assert (r.returncode, r.stderr.strip()) == (1, "No Odradek broker to stop"), r.stdout + r.stderr
        else:
            assert r.returncode == 0 and r.stdout.startswith("Stopped Odradek broker"), r.stdout + r.stderr
    assert "STOPPED" in host.ok("zookeeper-server-stop", str(zk_config)).stdout
    assert all(not host.broker_pids(config) for config in configs)
