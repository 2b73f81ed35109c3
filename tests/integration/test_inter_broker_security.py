"""Brokers that reach each other over a SASL_SSL inter-broker listener: the SCRAM credential of the
broker user written with `configs --zookeeper` before any broker starts (as with kafka-configs.sh),
replication and a kill -9 fail-over drill with nothing acknowledged lost, the followers' connections
going to the leader's secured port; and a broker with the wrong inter-broker password refused there; brokers
that log in to each other with Kafka's unsecured OAUTHBEARER login, replicating under acks=all."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
from confluent_kafka.admin import AdminClient, NewTopic

from tests.clients import consume_all, create_topic, produce
from tests.harness import BrokerCluster, BrokerPool, BrokerProcess, free_port, run_cli
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot

SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="{}";'


def _secured_cluster(brokers: BrokerPool, zk: ZooKeeperChroot, pem_pki: tuple[Path, Path], size: int, name: str,
                     passwords: list[str] | None = None) -> tuple[BrokerCluster, dict[int, int]]:
    ca, key = pem_pki
    overrides = {
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.internal.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.internal.ssl.keystore.type": "PEM",
        "listener.name.internal.ssl.keystore.location": str(key),
        "listener.name.internal.ssl.truststore.type": "PEM",
        "listener.name.internal.ssl.truststore.location": str(ca),
        "connection.failed.authentication.delay.ms": "100",
        "min.insync.replicas": "2",
    }
    cluster = BrokerCluster(brokers.directory(name), zk.connect_string, size=size, overrides=overrides)
    internal: dict[int, int] = {}
    for i, b in enumerate(cluster.brokers):
        internal[b.broker_id] = free_port()
        b.overrides["listeners"] = f"PLAINTEXT://127.0.0.1:{b.port},INTERNAL://127.0.0.1:{internal[b.broker_id]}"
        password = (passwords or [])[i] if i < len(passwords or []) else "broker-secret"
        b.overrides["listener.name.internal.scram-sha-512.sasl.jaas.config"] = SCRAM_JAAS.format(password)
    # the brokers' own SCRAM credential, in ZooKeeper before any broker starts
    r = run_cli("configs", "--zookeeper", cluster.brokers[0].overrides["zookeeper.connect"], "--alter",
                "--entity-type", "users", "--entity-name", "broker",
                "--add-config", "SCRAM-SHA-512=[iterations=4096,password=broker-secret]")
    assert r.returncode == 0, r.stdout + r.stderr
    return cluster, internal


def _partition(bootstrap: str, topic: str) -> tuple[int, list[int]]:
    meta = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10).topics[topic].partitions[0]
    return meta.leader, sorted(meta.isrs)


def _connected_to(follower: BrokerProcess, port: int) -> bool:
    assert follower.pid is not None
    return any(c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
               for c in psutil.Process(follower.pid).net_connections(kind="tcp"))


def test_sasl_ssl_inter_broker_replication_and_kill_9_fail_over(zk_standalone: ZooKeeperChroot,
                                                                 brokers: BrokerPool, pem_pki: tuple[Path, Path]) -> None:
    cluster, internal = _secured_cluster(brokers, zk_standalone, pem_pki, 3, "ib-sasl-ssl")
    try:
        cluster.start()
        with cluster.zookeeper() as z:
            reg = json.loads(z.get("/brokers/ids/1")[0])
        assert reg["endpoints"][0] == f"INTERNAL://127.0.0.1:{internal[1]}"  # the inter-broker listener first
        assert reg["listener_security_protocol_map"]["INTERNAL"] == "SASL_SSL"
        bootstrap = cluster.bootstrap
        create_topic(bootstrap, "secured", partitions=1, rf=3)
        seen: list[tuple[int, list[int]]] = []

        def all_in_sync() -> bool:  # and the leader known, from the same answer (another may say -1 a moment)
            seen.append(_partition(bootstrap, "secured"))
            return seen[-1][0] >= 0 and seen[-1][1] == [0, 1, 2]

        wait_until(all_in_sync, 60, "all three replicas in the ISR")
        leader = seen[-1][0]
        followers = [b for b in cluster.brokers if b.broker_id != leader]
        for f in followers:  # replica fetchers reach the leader on its SASL_SSL port, not the PLAINTEXT one
            wait_until(lambda f=f: _connected_to(f, internal[leader]), 30,
                       f"broker {f.broker_id} to fetch from the leader's INTERNAL port")
            assert not _connected_to(f, cluster.by_id(leader).port)
        first = [f"a{i}" for i in range(300)]
        produce(bootstrap, "secured", first, acks="all")

        cluster.by_id(leader).kill()  # kill -9 the leader
        survivors = ",".join(b.bootstrap for b in followers)
        wait_until(lambda: _partition(survivors, "secured")[0] in {f.broker_id for f in followers}, 60,
                   "a new leader among the followers")
        second = [f"b{i}" for i in range(300)]
        produce(survivors, "secured", second, acks="all")  # min.insync.replicas=2: both survivors have it

        cluster.by_id(leader).start()  # catches up over SASL_SSL and rejoins the ISR
        wait_until(lambda: _partition(bootstrap, "secured")[1] == [0, 1, 2], 60, "the restarted broker back in the ISR")
        values = [m.value().decode() for m in consume_all(bootstrap, "secured", 600)]
        assert values == first + second
        for b in cluster.brokers:
            assert "Failed authentication" not in b.output()
    finally:
        cluster.stop()


OAUTH_JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
              'unsecuredLoginStringClaim_sub="broker" unsecuredLoginListClaim_scope=",interBroker" '
              'unsecuredValidatorRequiredScope="interBroker";')


def test_oauthbearer_inter_broker_login_replicates(zk_standalone: ZooKeeperChroot, brokers: BrokerPool) -> None:
    cluster = BrokerCluster(brokers.directory("ib-oauth"), zk_standalone.connect_string, size=2, overrides={
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL", "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
        "listener.name.internal.sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.internal.oauthbearer.sasl.jaas.config": OAUTH_JAAS, "min.insync.replicas": "2"})
    internal: dict[int, int] = {}
    for b in cluster.brokers:
        internal[b.broker_id] = free_port()
        b.overrides["listeners"] = f"PLAINTEXT://127.0.0.1:{b.port},INTERNAL://127.0.0.1:{internal[b.broker_id]}"
    try:
        cluster.start()
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("oauth-ib", 1, replica_assignment=[[0, 1]])])["oauth-ib"].result(30)
        wait_until(lambda: _partition(cluster.bootstrap, "oauth-ib") == (0, [0, 1]), 60, "both replicas in the ISR")
        wait_until(lambda: _connected_to(cluster.brokers[1], internal[0]), 30,
                   "broker 1 to fetch from broker 0's OAUTHBEARER port")
        values = [f"o{i}" for i in range(100)]
        produce(cluster.bootstrap, "oauth-ib", values, acks="all")  # min.insync.replicas=2: the follower has them
        assert [m.value().decode() for m in consume_all(cluster.bootstrap, "oauth-ib", 100)] == values
        for b in cluster.brokers:
            assert "Failed authentication" not in b.output()
    finally:
        cluster.stop()


def test_a_broker_with_the_wrong_inter_broker_password_is_refused(zk_standalone: ZooKeeperChroot,
                                                                  brokers: BrokerPool, pem_pki: tuple[Path, Path]) -> None:
    cluster, _ = _secured_cluster(brokers, zk_standalone, pem_pki, 2, "ib-wrong", passwords=["broker-secret", "wrong"])
    try:
        cluster.start()
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        # leader on broker 0, so broker 1 must fetch from it
        admin.create_topics([NewTopic("guarded", 1, replica_assignment=[[0, 1]])])["guarded"].result(30)
        wait_until(lambda: "principal User:broker, mechanism SCRAM-SHA-512, listener INTERNAL"
                           in cluster.brokers[0].output(), 60, "broker 0 to refuse broker 1's credentials")
        wait_until(lambda: _partition(cluster.brokers[0].bootstrap, "guarded") == (0, [0]), 60,
                   "broker 1 to leave the ISR: it never caught up")
    finally:
        cluster.stop()


def test_tools_reach_a_sasl_ssl_listener_with_command_config(brokers: BrokerPool, pem_pki: tuple[Path, Path],
                                                             tmp_path: Path) -> None:
    """One client properties file in the Java client's names serves the librdkafka-based tools (topics,
    consumer-groups) and those that speak the protocol themselves (configs, log-dirs, transactions)."""
    ca, key = pem_pki
    plain, secured = free_port(), free_port()
    broker = brokers.start({
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_SSL://127.0.0.1:{secured}",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256", "ssl.keystore.type": "PEM", "ssl.keystore.location": str(key),
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:alice;User:ANONYMOUS",  # ANONYMOUS: the SCRAM set-up below over PLAINTEXT
    }, name="tools-sasl-ssl", port=plain)
    r = run_cli("configs", "--bootstrap-server", broker.bootstrap, "--alter", "--entity-type", "users",
                "--entity-name", "alice", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=alice-secret]")
    assert r.returncode == 0, r.stderr
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"
                     "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                     'username="alice" password="alice-secret";\n'
                     f"ssl.truststore.type=PEM\nssl.truststore.location={ca}\n")
    server = ["--bootstrap-server", f"127.0.0.1:{secured}", "--command-config", str(props)]

    def ok(*args: str) -> str:
        res = run_cli(*args)
        assert res.returncode == 0, f"{args}: {res.stdout}{res.stderr}"
        assert "WARNING: ignoring unknown client property" not in res.stderr
        return res.stdout

    ok("topics", *server, "--create", "--topic", "audited", "--partitions", "2")
    assert ok("topics", *server, "--list").split() == ["audited"]
    assert "log.retention.ms=" in ok("configs", *server, "--describe", "--entity-type", "brokers",
                                     "--entity-name", "0", "--all")
    dirs = json.loads(ok("log-dirs", *server, "--describe", "--topic-list", "audited").splitlines()[-1])
    assert sorted(p["partition"] for p in dirs["brokers"][0]["logDirs"][0]["partitions"]) == ["audited-0", "audited-1"]
    assert ok("transactions", *server, "list").split() == ["TransactionalId", "Coordinator", "ProducerId",
                                                           "TransactionState"]
    ok("consumer-groups", *server, "--list")
    # the wrong password: one line naming the refusal, from both kinds of tool
    props.write_text(props.read_text().replace('password="alice-secret"', 'password="nope"'))
    raw = run_cli("log-dirs", *server, "--describe")
    assert raw.returncode != 0
    assert raw.stderr.strip().startswith(f"Error: authentication to 127.0.0.1:{secured} failed: Authentication "
                                         "failed during authentication due to invalid credentials with SASL "
                                         "mechanism SCRAM-SHA-256"), raw.stderr
    assert run_cli("topics", *server, "--list").returncode != 0
