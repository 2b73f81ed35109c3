"""Guide replay (a): one broker on one host.

kafka-in-practice-producers-consumers-brokers.txt, "## 2. 安装部署" 2.2-2.6 (start ZooKeeper and the
server, create `test` with --zookeeper, console producer, console consumer --from-beginning, 2.3 stop),
on the single-node setup printed by kafka-vs-mq-concepts-and-ha-cluster-guide.txt, "###Kafka单机安装"
(its zoo.cfg and server.properties, `zkServer.sh start`, `kafka-server-start.sh ... &`, and its
"3.单机连通性测试": create/list with --bootstrap-server, producer --broker-list, consumer, the old
consumer's --zookeeper). Then Odradek's own single-node mode, which has no ZooKeeper at all.
"""

from __future__ import annotations

from tests.guides.replay import LOCAL, GuideHost, free_ports, parse_describe
from tests.harness import BrokerProcess, free_port, run_cli
from tests.zkharness import ZooKeeperChroot

NO_CLUSTER = (
    "Error: ZooKeeper at {} holds no Odradek cluster (no brokers ever registered there; a single-node "
    "broker runs without ZooKeeper): use --bootstrap-server instead"
)
NO_ZOOKEEPER = (
    "Error: no ZooKeeper answers at {} (is it started? a single-node broker runs without ZooKeeper: "
    "use --bootstrap-server instead)"
)
# kafka-0.11-three-broker-cluster-guide.txt prints this for the `test` topic of its single-broker article.
GUIDE_TEST_TOPIC = """\
Topic:test      PartitionCount:1        ReplicationFactor:1     Configs:
        Topic: test     Partition: 0    Leader: 0       Replicas: 0     Isr: 0
"""


def consumed(host: GuideHost, *args: str, count: int) -> list[str]:
    """The lines printed by a console consumer that stops after `count` records (or 30 s idle)."""
    r = host.ok("console-consumer", *args, "--max-messages", str(count), "--timeout-ms", "30000", timeout=90)
    return r.stdout.splitlines()


def check_single_replica(text: str) -> None:
    """The guide's reading of `--describe test`: one partition, led by broker 0, its only replica, in sync."""
    topic = parse_describe(text)["test"]
    assert (topic.partition_count, topic.replication_factor, topic.configs) == (1, 1, "")
    part = topic.partitions[0]
    assert (part.leader, part.replicas, part.isr) == (0, [0], [0])


def test_single_broker_quickstart(host: GuideHost) -> None:
    zk_port, port = free_ports(2)
    zk = f"localhost:{zk_port}"

    # kafka-vs-mq "1.先安装zookeeper": zoo.cfg, `zkServer.sh start`.
    zk_data = host.root / "tmp" / "zookeeper"
    zoo = host.install("vsmq_single_01_zoo.cfg", "zookeeper/conf/zoo.cfg",
                       {"dataDir": str(zk_data), "clientPort": str(zk_port)}, {"clientPortAddress": LOCAL})
    host.zk_start_daemon(zoo, zk_data)
    assert host.zk_mode(zoo) == "standalone"

    # "2.安装kafka": server.properties. As printed, with the author's end-of-line notes, it is refused in
    # one line saying why (Kafka refuses it too); the real file has the notes on lines of their own.
    values = {"listeners": f"PLAINTEXT://{LOCAL}:{port}", "log.dirs": str(host.root / "tmp" / "kafka-logs"),
              "zookeeper.connect": zk}
    printed = host.install("vsmq_single_02_server_as_printed.properties", "kafka/config/server-as-printed.properties",
                           values)
    r = host.run("server-start", str(printed))
    errors = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.returncode == 1 and len(errors) == 1, r.stdout + r.stderr
    assert "broker.id" in errors[0] and "end-of-line comments" in errors[0], errors[0]

    server = host.install("vsmq_single_03_server.properties", "kafka/config/server.properties", values)
    host.broker_start_background(server, port, host.path("logs/server.out"))  # kafka-server-start.sh ... &
    host.wait_registered(zk, {0})

    # kafka-in-practice 2.4 创建主题 / 2.5 生产者生产消息 / 2.6 消费者消费消息
    r = host.ok("topics", "--create", "--zookeeper", zk, "--replication-factor", "1", "--partitions", "1",
                "--topic", "test")
    assert r.stdout.splitlines() == ["Created topic test."]
    bootstrap = f"localhost:{port}"
    host.ok("console-producer", "--broker-list", bootstrap, "--topic", "test",
            input="This is a message\nThis is another message\n")
    assert consumed(host, "--bootstrap-server", bootstrap, "--topic", "test", "--from-beginning", count=2) == [
        "This is a message", "This is another message"]

    # kafka-vs-mq "3.单机连通性测试": create and list with --bootstrap-server, produce to test1 (created on
    # first use), consume it from the beginning.
    local = f"127.0.0.1:{port}"
    r = host.ok("topics", "--create", "--bootstrap-server", local, "--topic", "test2", "--partitions", "1",
                "--replication-factor", "1")
    assert r.stdout.splitlines() == ["Created topic test2."]
    host.ok("console-producer", "--broker-list", local, "--topic", "test1", input="hello jack\n")
    assert consumed(host, "--bootstrap-server", local, "--topic", "test1", "--from-beginning", count=1) == [
        "hello jack"]
    listed = host.ok("topics", "--list", "--bootstrap-server", local).stdout.splitlines()
    assert listed == ["__consumer_offsets", "test", "test1", "test2"]
    assert host.ok("topics", "--list", "--zookeeper", zk).stdout.splitlines() == listed

    # --describe reads the same through ZooKeeper as through the broker, and holds the guide's reading.
    by_zookeeper = host.ok("topics", "--describe", "--zookeeper", zk, "--topic", "test").stdout
    assert host.ok("topics", "--describe", "--bootstrap-server", bootstrap, "--topic", "test").stdout == by_zookeeper
    check_single_replica(GUIDE_TEST_TOPIC)
    check_single_replica(by_zookeeper)

    # The old consumer: `kafka-console-consumer.sh --zookeeper 172.168.2.222:2181 --topic dblab01`
    # (--from-beginning added: without it the consumer waits for new records).
    r = host.ok("console-consumer", "--zookeeper", zk, "--topic", "test", "--from-beginning", "--max-messages", "2",
                "--timeout-ms", "30000", timeout=90)
    assert r.stdout.splitlines() == ["This is a message", "This is another message"]

    # kafka-in-practice 2.3 停止服务器: `kafka-server-stop.sh config/server.properties`; `zkServer.sh stop`.
    r = host.ok("server-stop", str(server))
    assert r.stdout.startswith("Stopped Odradek broker"), r.stdout
    assert not host.broker_pids(server)
    assert "STOPPED" in host.ok("zookeeper-server-stop", str(zoo)).stdout
    assert host.zk_mode(zoo) is None


def test_single_node_broker_runs_without_zookeeper(broker: BrokerProcess, zk_standalone: ZooKeeperChroot) -> None:
    """Odradek's default mode keeps the metadata in the broker: the guides' --zookeeper commands say so in
    one line and name --bootstrap-server, saying whether nothing answers at the address or a ZooKeeper
    without any cluster does."""
    nothing = f"127.0.0.1:{free_port()}"
    for zk, expected in ((nothing, NO_ZOOKEEPER), (zk_standalone.connect_string, NO_CLUSTER)):
        for args in (
            ("topics", "--create", "--zookeeper", zk, "--replication-factor", "1", "--partitions", "1",
             "--topic", "test"),
            ("topics", "--list", "--zookeeper", zk),
            ("topics", "--describe", "--zookeeper", zk, "--topic", "test"),
            ("console-consumer", "--zookeeper", zk, "--topic", "test", "--from-beginning"),
        ):
            r = run_cli(*args)
            assert (r.returncode, r.stdout, r.stderr) == (1, "", expected.format(zk) + "\n"), args
    r = run_cli("topics", "--create", "--bootstrap-server", broker.bootstrap, "--replication-factor", "1",
                "--partitions", "1", "--topic", "test")
    assert (r.returncode, r.stdout) == (0, "Created topic test.\n"), r.stderr
    r = run_cli("console-producer", "--broker-list", broker.bootstrap, "--topic", "test", input="one line\n")
    assert r.returncode == 0, r.stderr
    r = run_cli("console-consumer", "--bootstrap-server", broker.bootstrap, "--topic", "test", "--from-beginning",
                "--max-messages", "1", "--timeout-ms", "30000", timeout=90)
    assert r.stdout == "one line\n", r.stderr
