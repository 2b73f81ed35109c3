"""ACL authorization end to end: a broker with SASL/PLAIN and StandardAuthorizer, User:admin a super user.
alice without ACLs is refused produce, consume and describe with Kafka's error codes; `odradek acls`
grants her the producer and consumer sets; PREFIXED patterns, DENY over ALLOW and removals apply at once.
Then a 3-broker ZooKeeper cluster: an ACL created through one broker is enforced by all of them, and
replication (a SASL_PLAINTEXT inter-broker listener, the brokers authenticating as the super user admin)
keeps working with the authorizer on."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.harness import BrokerCluster, BrokerPool, BrokerProcess, free_port, run_cli
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";')
AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin",
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    "inter.broker.listener.name": "PLAINTEXT",
}
PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}


def conf(bootstrap: str, user: str) -> dict[str, object]:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": user, "sasl.password": PASSWORDS[user]}


class Secured:
    def __init__(self, broker: BrokerProcess, sasl_port: int, admin_config: Path) -> None:
        self.broker = broker
        self.sasl = f"127.0.0.1:{sasl_port}"
        self.admin_config = admin_config

    def acls(self, *args: str, bootstrap: str | None = None) -> str:
        res = run_cli("acls", "--bootstrap-server", bootstrap or self.sasl, "--command-config", str(self.admin_config),
                      *args)
        assert res.returncode == 0, res.stderr
        return res.stdout


def _admin_config(directory: Path) -> Path:
    path = directory / "admin.properties"
    # as a Kafka admin client's file: the JAAS line
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                    "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" "
                    "password=\"admin-secret\";\n")
    return path


@pytest.fixture(scope="module")
def secured(module_brokers: BrokerPool) -> Secured:
    plain, sasl = free_port(), free_port()
    broker = module_brokers.start({
        **AUTHORIZER,
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "auto.create.topics.enable": "false",
    }, name="acls", port=plain)
    return Secured(broker, sasl, _admin_config(broker.workdir))


def create_topic(bootstrap: str, name: str, partitions: int = 1, rf: int = 1) -> None:
    admin = AdminClient(conf(bootstrap, "admin"))
    admin.create_topics([NewTopic(name, partitions, rf)], operation_timeout=10)[name].result(timeout=30)


def try_produce(bootstrap: str, user: str, topic: str, count: int = 3, partitions: int = 1,
                **extra: object) -> str | None:
    """None when every record was acknowledged, else the name of the first error; record i goes to
    partition i % partitions."""
    producer = Producer({**conf(bootstrap, user), "message.timeout.ms": 10000, **extra})
    errors: list[str] = []
    for i in range(count):
        try:
            producer.produce(topic, value=f"v{i}".encode(), partition=i % partitions,
                             on_delivery=lambda err, _m: errors.append(err.name()) if err else None)
        except KafkaException as exc:  # librdkafka refuses at once when its metadata already says so
            errors.append(exc.args[0].name())
            break
    producer.flush(20)
    return errors[0] if errors else None


def try_consume(bootstrap: str, user: str, topic: str, group: str, count: int = 3, timeout: float = 20,
                group_protocol: str = "classic") -> str | None:
    """None when `count` records came back through `group`, else the name of the first error seen."""
    errors: list[str] = []
    consumer = Consumer({**conf(bootstrap, user), "group.id": group, "auto.offset.reset": "earliest",
                         "group.protocol": group_protocol, "error_cb": lambda e: errors.append(e.name())})
    consumer.subscribe([topic])
    got = 0
    try:
        def done() -> bool:
            nonlocal got
            msg = consumer.poll(0.5)
            if msg is not None:
                if msg.error() is None:
                    got += 1
                elif msg.error().code() != KafkaError._PARTITION_EOF:
                    errors.append(msg.error().name())
            return got >= count or bool(errors)
        wait_until(done, timeout, "records or an error")
    finally:
        consumer.close()
    return None if got >= count and not errors else errors[0]


def test_alice_without_acls_is_denied(secured: Secured) -> None:
    create_topic(secured.sasl, "denied")
    assert try_produce(secured.sasl, "admin", "denied") is None  # the super user
    assert try_produce(secured.sasl, "alice", "denied") == "TOPIC_AUTHORIZATION_FAILED"
    assert try_consume(secured.sasl, "alice", "denied", "g-denied") in ("GROUP_AUTHORIZATION_FAILED",
                                                                       "TOPIC_AUTHORIZATION_FAILED")
    admin = AdminClient(conf(secured.sasl, "alice"))
    assert "denied" not in admin.list_topics(timeout=10).topics  # left out of the listing
    described = admin.list_topics(topic="denied", timeout=10).topics["denied"]
    assert described.error is not None and described.error.name() == "TOPIC_AUTHORIZATION_FAILED"
    wait_until(lambda: "Principal = User:alice is Denied operation = DESCRIBE from host = 127.0.0.1 on resource = "
                       "Topic:LITERAL:denied for request = Metadata" in secured.broker.output(), 10, "the denial log line")


def test_producer_and_consumer_acls_from_the_tool(secured: Secured) -> None:
    create_topic(secured.sasl, "t")
    out = secured.acls("--add", "--allow-principal", "User:alice", "--producer", "--topic", "t")
    assert "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`: \n" in out
    assert "\t(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)" in out
    assert "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`:" in out
    assert try_produce(secured.sasl, "alice", "t") is None
    assert try_consume(secured.sasl, "alice", "t", "g") is not None  # no READ yet
    secured.acls("--add", "--allow-principal", "User:alice", "--consumer", "--topic", "t", "--group", "g")
    assert try_consume(secured.sasl, "alice", "t", "g") is None
    listed = secured.acls("--list", "--topic", "t")
    for op in ("WRITE", "DESCRIBE", "CREATE", "READ"):
        assert f"(principal=User:alice, host=*, operation={op}, permissionType=ALLOW)" in listed
    mine = secured.acls("--list", "--principal", "User:alice")
    assert mine.startswith("ACLs for principal `User:alice`\n") and "User:bob" not in mine
    groups = secured.acls("--list", "--group", "g")
    assert "ResourcePattern(resourceType=GROUP, name=g, patternType=LITERAL)" in groups
    # bob has none of these
    assert try_produce(secured.sasl, "bob", "t") == "TOPIC_AUTHORIZATION_FAILED"
    # the authorized operations come from the ACLs
    alice = AdminClient(conf(secured.sasl, "alice"))
    topic = alice.describe_topics(TopicCollection(["t"]), include_authorized_operations=True)["t"].result(timeout=20)
    assert {op.name for op in topic.authorized_operations} == {"READ", "WRITE", "CREATE", "DESCRIBE"}
    cluster = alice.describe_cluster(include_authorized_operations=True).result(timeout=20)
    assert not cluster.authorized_operations
    admin = AdminClient(conf(secured.sasl, "admin"))
    cluster = admin.describe_cluster(include_authorized_operations=True).result(timeout=20)
    assert {"ALTER", "CLUSTER_ACTION", "DESCRIBE"} <= {op.name for op in cluster.authorized_operations}


def test_prefixed_acl(secured: Secured) -> None:
    for name in ("pre-a", "other-a"):
        create_topic(secured.sasl, name)
    secured.acls("--add", "--allow-principal", "User:bob", "--operation", "Write", "--operation", "Describe",
                 "--topic", "pre-", "--resource-pattern-type", "prefixed")
    assert try_produce(secured.sasl, "bob", "pre-a") is None
    assert try_produce(secured.sasl, "bob", "other-a") == "TOPIC_AUTHORIZATION_FAILED"
    match = secured.acls("--list", "--topic", "pre-a", "--resource-pattern-type", "match")
    assert "ResourcePattern(resourceType=TOPIC, name=pre-, patternType=PREFIXED)" in match


def test_deny_overrides_allow_and_removal_applies(secured: Secured) -> None:
    create_topic(secured.sasl, "dn")
    # the wildcard group: any group of hers
    secured.acls("--add", "--allow-principal", "User:alice", "--consumer", "--topic", "dn", "--group", "*")
    assert try_produce(secured.sasl, "admin", "dn") is None
    assert try_consume(secured.sasl, "alice", "dn", f"g-dn-{uuid.uuid4().hex[:4]}") is None
    secured.acls("--add", "--deny-principal", "User:alice", "--operation", "Read", "--topic", "dn")
    assert try_consume(secured.sasl, "alice", "dn", f"g-dn-{uuid.uuid4().hex[:4]}") == "TOPIC_AUTHORIZATION_FAILED"
    out = secured.acls("--remove", "--deny-principal", "User:alice", "--operation", "Read", "--topic", "dn", "--force")
    assert "permissionType=DENY" not in out
    assert try_consume(secured.sasl, "alice", "dn", f"g-dn-{uuid.uuid4().hex[:4]}") is None
    # removing every ACL of the topic takes her READ away again
    secured.acls("--remove", "--topic", "dn", "--force")
    assert try_consume(secured.sasl, "alice", "dn", f"g-dn-{uuid.uuid4().hex[:4]}") == "TOPIC_AUTHORIZATION_FAILED"
    secured.acls("--remove", "--group", "*", "--force")


def test_acl_apis_need_cluster_permissions_and_check_input(secured: Secured, tmp_path: Path) -> None:
    alice = tmp_path / "alice.properties"
    alice.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=alice\n"
                     "sasl.password=alice-secret\n")
    res = run_cli("acls", "--bootstrap-server", secured.sasl, "--command-config", str(alice), "--add",
                  "--allow-principal", "User:alice", "--operation", "All", "--cluster")
    assert res.returncode == 1
    assert res.stderr.strip().startswith("Error while executing ACL command:"), res.stderr
    assert "uthorization" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    res = run_cli("acls", "--bootstrap-server", secured.sasl, "--add", "--list", "--topic", "t")
    assert res.returncode == 1 and "exactly one action" in res.stderr
    res = run_cli("acls", "--bootstrap-server", secured.sasl, "--add", "--allow-principal", "alice", "--topic", "t")
    assert res.returncode == 1 and "Could not parse principal" in res.stderr
    res = run_cli("acls", "--bootstrap-server", secured.sasl, "--add", "--allow-principal", "User:a", "--topic", "t",
                  "--resource-pattern-type", "match")
    assert res.returncode == 1 and "not valid when adding acls" in res.stderr
    res = run_cli("acls", "--bootstrap-server", secured.sasl, "--add", "--allow-principal", "User:a", "--group", "g",
                  "--operation", "Write")
    assert res.returncode == 1 and "ResourceType GROUP only supports operations" in res.stderr
    assert run_cli("acls", "--help").returncode == 0


def test_acls_survive_a_restart(secured: Secured) -> None:
    create_topic(secured.sasl, "kept")
    secured.acls("--add", "--allow-principal", "User:bob", "--producer", "--topic", "kept")
    secured.broker.restart()
    wait_until(lambda: try_produce(secured.sasl, "bob", "kept") is None, 30, "bob's ACL after the restart")
    assert "Loaded" in secured.broker.output()


def test_unknown_authorizer_class_is_one_line(brokers: BrokerPool) -> None:
    broker = BrokerProcess(brokers.directory("bad-authorizer"),
                           overrides={"authorizer.class.name": "com.example.MyAuthorizer"})
    broker.write_config()
    res = run_cli("server-start", str(broker.config_path), timeout=60)
    assert res.returncode != 0
    assert "authorizer.class.name=com.example.MyAuthorizer" in res.stdout + res.stderr


# ---- a ZooKeeper cluster ----------------------------------------------------------------------------


def test_cluster_acls_apply_on_every_broker(zk_standalone: ZooKeeperChroot, brokers: BrokerPool) -> None:
    # the brokers reach each other as User:admin over SASL (no listener is privileged): super.users names them
    cluster = BrokerCluster(brokers.directory("acl-cluster"), zk_standalone.connect_string, size=3,
                            overrides={**AUTHORIZER, "auto.create.topics.enable": "false",
                                       "inter.broker.listener.name": "SASL_PLAINTEXT",
                                       "sasl.mechanism.inter.broker.protocol": "PLAIN"})
    sasl_ports = []
    for b in cluster.brokers:
        port = free_port()
        sasl_ports.append(port)
        b.overrides["listeners"] = f"PLAINTEXT://127.0.0.1:{b.port},SASL_PLAINTEXT://127.0.0.1:{port}"
    try:
        cluster.start()
        sasl = [f"127.0.0.1:{p}" for p in sasl_ports]
        admin_config = _admin_config(cluster.workdir)
        via = [Secured(b, p, admin_config) for b, p in zip(cluster.brokers, sasl_ports, strict=True)]
        create_topic(sasl[0], "rep", partitions=3, rf=3)  # leaders on every broker
        assert try_produce(sasl[1], "admin", "rep", count=30, partitions=3, acks="all") is None
        assert try_produce(sasl[2], "alice", "rep", count=30, partitions=3) == "TOPIC_AUTHORIZATION_FAILED"
        via[0].acls("--add", "--allow-principal", "User:alice", "--producer", "--topic", "rep")
        # every broker read the change notification
        for b in cluster.brokers:
            wait_until(lambda b=b: "Processing ACL change for ResourcePattern(resourceType=TOPIC, name=rep, "
                                   "patternType=LITERAL)" in b.output(), 20, f"broker {b.broker_id} to see the ACL")
        # records to all three partitions, each led by another broker, acknowledged by all replicas
        assert try_produce(sasl[2], "alice", "rep", count=30, partitions=3, acks="all") is None
        with cluster.zookeeper() as zk:
            assert b'"principal":"User:alice"' in zk.get("/kafka-acl/Topic/rep")[0]
            assert zk.get_children("/kafka-acl-changes")
        # acks=all: the followers fetched every record through the SASL inter-broker listener, so the
        # high watermark of each partition is past all 20 of its records
        consumer = Consumer({**conf(sasl[1], "admin"), "group.id": "check", "enable.auto.commit": False})
        try:
            for p in range(3):
                assert consumer.get_watermark_offsets(TopicPartition("rep", p), timeout=10)[1] == 20
        finally:
            consumer.close()
        listed = via[1].acls("--list")
        assert "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)" in listed
        # removed through a third broker: alice is refused everywhere again
        via[2].acls("--remove", "--allow-principal", "User:alice", "--producer", "--topic", "rep", "--force")
        wait_until(lambda: try_produce(sasl[0], "alice", "rep", count=3, partitions=3) == "TOPIC_AUTHORIZATION_FAILED", 30,
                   "alice to be refused again")
    finally:
        cluster.stop()


def test_consumer_protocol_groups_are_authorized(secured: Secured) -> None:
    """KIP-848 groups (group.protocol=consumer) are checked as Kafka does: READ on the group to heartbeat,
    DESCRIBE on it to describe."""
    create_topic(secured.sasl, "t848")
    assert try_produce(secured.sasl, "admin", "t848") is None
    assert try_consume(secured.sasl, "bob", "t848", "g848", group_protocol="consumer") == "GROUP_AUTHORIZATION_FAILED"
    secured.acls("--add", "--allow-principal", "User:bob", "--consumer", "--topic", "t848", "--group", "g848")
    assert try_consume(secured.sasl, "bob", "t848", "g848", group_protocol="consumer") is None


def test_client_quota_apis_need_cluster_config_rights(secured: Secured) -> None:
    from kafka.protocol.admin import AlterClientQuotasRequest as Alter
    from kafka.protocol.admin import DescribeClientQuotasRequest as Describe
    from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

    from odradek.protocol.transport import BlockingConnection

    entry = Alter.EntryData(entity=[Alter.EntryData.EntityData(entity_type="client-id", entity_name="acl-c")],
                            ops=[Alter.EntryData.OpData(key="producer_byte_rate", value=1024.0, remove=False)])
    expected = {"alice": 31, "admin": 0}  # CLUSTER_AUTHORIZATION_FAILED without ACLs; the super user passes
    for user, code in expected.items():
        with BlockingConnection("127.0.0.1", int(secured.sasl.rsplit(":", 1)[1]), "quota-acl", 30) as c:
            assert c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0
            token = f"\0{user}\0{PASSWORDS[user]}".encode()
            assert c.request(SaslAuthenticateRequest(auth_bytes=token), 2).error_code == 0
            assert c.request(Describe(components=[], strict=False), 1).error_code == code
            assert c.request(Alter(entries=[entry], validate_only=True), 1).entries[0].error_code == code
