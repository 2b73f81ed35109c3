"""Guide replay (b, c, d): kafka-0.9-zookeeper-cluster-guide.txt on one host.

"## 2. Zookeeper集群搭建": three servers from the guide's zoo.cfg (server.0-2, myid 0-2), `zkServer.sh
start` and `status` (one leader, two followers), the leader stopped (another is elected), restarted (a
follower). "## 3. Kafka集群搭建": two brokers from its server.properties started with -daemon, topic
`test` (2 partitions, 2 replicas) created and described with --zookeeper naming the three servers.
"## 4/5": records sent and fetched with the properties of its Java KafkaUtil (as --producer.config /
--consumer.config; keys as in its producer loop). "## 6. Kafka集群高可用性测试": broker 0 killed (both
partitions led by broker 1, Isr 1), records still sent, broker 0 restarted with -daemon (back in the
Isr, still no leader), nothing lost, the group's offsets intact, then the preferred replica election
(balanced leaders again) when a tool for it exists.
"""

from __future__ import annotations

import re

import pytest

from tests.guides.replay import (
    FAST_FAILOVER,
    LOCAL,
    Described,
    GuideHost,
    free_ports,
    parse_describe,
)
from tests.harness import run_cli
from tests.waiting import wait_until

GUIDE_DESCRIBE = """\
Topic:test PartitionCount:2 ReplicationFactor:2 Configs:
Topic: test Partition: 0 Leader: 1 Replicas: 1,0 Isr: 0,1
Topic: test Partition: 1 Leader: 0 Replicas: 0,1 Isr: 0,1
"""
GUIDE_AFTER_KILL = """\
Topic:test PartitionCount:2 ReplicationFactor:2 Configs:
  Topic: test Partition: 0 Leader: 1 Replicas: 1,0 Isr: 1
  Topic: test Partition: 1 Leader: 1 Replicas: 0,1 Isr: 1
"""
GUIDE_AFTER_RESTART = """\
      a. Topic:test PartitionCount:2 ReplicationFactor:2 Configs:
      b.    Topic: test Partition: 0 Leader: 1 Replicas: 1,0 Isr: 1,0
      c.    Topic: test Partition: 1 Leader: 1 Replicas: 0,1 Isr: 1,0
"""
GUIDE_AFTER_ELECTION = """\
 Topic:test PartitionCount:2 ReplicationFactor:2 Configs:
    Topic: test Partition: 0 Leader: 1 Replicas: 1,0 Isr: 1,0
    Topic: test Partition: 1 Leader: 0 Replicas: 0,1 Isr: 1,0
"""
ELECTION_TOOLS = ("preferred-replica-election", "leader-election")


def check_balanced(text: str) -> Described:
    """Both partitions on both brokers, each led by its first (preferred) replica, one per broker, all in sync."""
    topic = parse_describe(text)["test"]
    assert (topic.partition_count, topic.replication_factor, topic.configs) == (2, 2, "")
    for part in topic.partitions.values():
        assert sorted(part.replicas) == [0, 1] and sorted(part.isr) == [0, 1]
        assert part.leader == part.replicas[0]
    assert sorted(topic.leaders().values()) == [0, 1]
    return topic


def check_all_on_1(text: str, isr: list[int]) -> None:
    """Broker 0 down or just back: broker 1 leads both partitions, replicas unchanged, Isr as given."""
    topic = parse_describe(text)["test"]
    assert (topic.partition_count, topic.replication_factor) == (2, 2)
    for part in topic.partitions.values():
        assert sorted(part.replicas) == [0, 1] and part.leader == 1 and sorted(part.isr) == isr


def election_tool() -> str | None:
    """The preferred-election tool, if `odradek` has one by now."""
    listing = run_cli("--help").stdout
    for name in ELECTION_TOOLS:
        if re.search(rf"^\s+{re.escape(name)}\s", listing, re.MULTILINE):
            return name
    return None


def ensemble_modes(host: GuideHost, configs: list, expected: list[str]) -> list[str | None]:
    def modes() -> list[str | None] | None:
        found = [host.zk_mode(c) for c in configs]
        return found if sorted(m or "" for m in found) == sorted(expected) else None

    return wait_until(modes, 60, f"zookeeper modes {expected}", interval=0.5)


def test_zookeeper_ensemble_and_two_brokers(host: GuideHost) -> None:
    ports = free_ports(11)
    client, quorum, election, kafka = ports[0:3], ports[3:6], ports[6:9], ports[9:11]
    servers = {f"server.{i}": f"{LOCAL}:{quorum[i]}:{election[i]}" for i in range(3)}

    # zoo.cfg on each "host" (10.0.0.100-102), dataDir and dataLogDir created first, myid 0/1/2.
    zoo, data = [], []
    for i in range(3):
        home = host.root / f"host{i}"
        data.append(home / "data" / "zk" / "zk0" / "data")
        logs = home / "data" / "zk" / "zk0" / "logs"
        zoo.append(host.install("k09_01_zoo.cfg", f"host{i}/zookeeper-3.4.6/conf/zoo.cfg",
                                {"dataDir": str(data[i]), "dataLogDir": str(logs), "clientPort": str(client[i]),
                                 **servers}, {"clientPortAddress": LOCAL}))
        data[i].mkdir(parents=True)
        logs.mkdir(parents=True)
        (data[i] / "myid").write_text(f"{i}\n")
    for i in range(3):
        host.zk_start_daemon(zoo[i], data[i])  # bin/zkServer.sh start
    modes = ensemble_modes(host, zoo, ["leader", "follower", "follower"])  # bin/zkServer.sh status

    # 验证zookeeper集群高可用性: stop the leader, another one leads; restarted, the old leader follows.
    leader = modes.index("leader")
    assert "STOPPED" in host.ok("zookeeper-server-stop", str(zoo[leader])).stdout  # bin/zkServer.sh stop
    others = [zoo[i] for i in range(3) if i != leader]
    ensemble_modes(host, others, ["leader", "follower"])
    r = host.run("zookeeper-server-status", str(zoo[leader]))
    assert r.returncode == 1 and "Error contacting service. It is probably not running." in r.stderr
    host.zk_start_daemon(zoo[leader], data[leader])
    wait_until(lambda: host.zk_mode(zoo[leader]) == "follower", 60, "the restarted server to follow")

    # ## 3. Kafka集群搭建: server.properties on two hosts, bin/kafka-server-start.sh -daemon.
    zk = ",".join(f"{LOCAL}:{p}" for p in client)
    server, logs_of = [], []
    for b in range(2):
        install = f"host{b}/kafka_2.11-0.9.0.1"
        server.append(host.install("k09_02_server.properties", f"{install}/config/server.properties", {
            "broker.id": str(b), "listeners": f"PLAINTEXT://{LOCAL}:{kafka[b]}", "port": str(kafka[b]), "host.name": LOCAL,
            "advertised.host.name": LOCAL, "advertised.port": str(kafka[b]),
            "log.dirs": str(host.root / f"host{b}" / "data" / "kafka-logs"), "zookeeper.connect": zk}))
        logs_of.append(host.root / install / "logs")
        host.broker_start_daemon(server[b], logs_of[b], *FAST_FAILOVER)
    host.wait_registered(zk, {0, 1})

    r = host.ok("topics", "--create", "--zookeeper", zk, "--replication-factor", "2", "--partitions", "2",
                "--topic", "test")
    assert r.stdout.splitlines() == ["Created topic test."]

    def describe() -> str:
        return host.ok("topics", "--describe", "--zookeeper", zk, "--topic", "test").stdout

    check_balanced(GUIDE_DESCRIBE)
    before = check_balanced(describe())

    # ## 4/5: KafkaUtil's producer and consumer properties; keys "0", "1", ... as in its send loop.
    brokers = ",".join(f"{LOCAL}:{p}" for p in kafka)
    producer = host.install("k09_03_producer.properties", "producer.properties", {"bootstrap.servers": brokers})
    consumer = host.install("k09_04_consumer.properties", "consumer.properties", {"bootstrap.servers": brokers})

    def send(first: int, last: int) -> None:
        lines = "".join(f"{i}\tthis is message{i}\n" for i in range(first, last))
        host.ok("console-producer", "--broker-list", brokers, "--topic", "test", "--producer.config", str(producer),
                "--property", "parse.key=true", input=lines)

    def fetch(count: int, *flags: str) -> list[tuple[int, int, str]]:
        """(partition, offset, message) as its consumer prints them: `fetched from partition 0, offset: 28`."""
        r = host.ok("console-consumer", "--bootstrap-server", brokers, "--topic", "test", "--consumer.config",
                    str(consumer), "--property", "print.partition=true", "--property", "print.offset=true",
                    "--max-messages", str(count), "--timeout-ms", "30000", *flags, timeout=90)
        rows = [line.split("\t") for line in r.stdout.splitlines()]
        return [(int(p.removeprefix("Partition:")), int(o.removeprefix("Offset:")), m) for p, o, m in rows]

    send(0, 14)
    fetched = fetch(14, "--from-beginning")
    assert sorted(m for _, _, m in fetched) == sorted(f"this is message{i}" for i in range(14))
    for p in (0, 1):  # "每个分区上的offset其实是正确递增的"
        offsets = [o for part, o, _ in fetched if part == p]
        assert offsets and offsets == sorted(offsets), fetched

    # 6.3) kill broker 0: broker 1 leads both partitions, Isr 1.
    assert 0 in before.leaders().values()
    host.kill9(server[0])
    check_all_on_1(GUIDE_AFTER_KILL, [1])

    def all_on_1(isr: list[int]) -> str | None:
        text = describe()
        parts = parse_describe(text)["test"].partitions.values()
        return text if all(p.leader == 1 and sorted(p.isr) == isr for p in parts) else None

    check_all_on_1(wait_until(lambda: all_on_1([1]), 60, "broker 1 leading both partitions, Isr 1"), [1])
    send(14, 21)  # the producer goes on

    # 6.4) bin/kafka-server-start.sh -daemon config/server.properties: in the Isr again, leading nothing yet.
    host.broker_start_daemon(server[0], logs_of[0], *FAST_FAILOVER)
    host.wait_registered(zk, {0, 1})
    check_all_on_1(GUIDE_AFTER_RESTART, [0, 1])
    check_all_on_1(wait_until(lambda: all_on_1([0, 1]), 60, "broker 0 back in the Isr"), [0, 1])

    # Nothing lost, and group "1" resumes where it committed before the fail-over.
    resumed = fetch(7)
    assert sorted(m for _, _, m in resumed) == sorted(f"this is message{i}" for i in range(14, 21))

    # 6.4) bin/kafka-preferred-replica-election.sh --zookeeper ...: the leaders are balanced again.
    check_balanced(GUIDE_AFTER_ELECTION)
    tool = election_tool()
    if tool is None:
        pytest.skip("preferred replica election step: `odradek preferred-replica-election` / `leader-election` "
                    "does not exist yet (being added in another change); every step before it passed")
    if tool == "preferred-replica-election":
        r = host.run(tool, "--zookeeper", zk)
        if r.returncode != 0:
            host.ok(tool, "--bootstrap-server", brokers)
    else:
        host.ok(tool, "--bootstrap-server", brokers, "--election-type", "preferred", "--all-topic-partitions")

    def balanced() -> str | None:
        text = describe()
        parts = parse_describe(text)["test"].partitions.values()
        return text if all(p.leader == p.replicas[0] for p in parts) else None

    after = check_balanced(wait_until(balanced, 60, "the preferred replicas to lead again"))
    assert after.leaders() == before.leaders()
    send(21, 25)
    assert sorted(m for _, _, m in fetch(4)) == sorted(f"this is message{i}" for i in range(21, 25))
