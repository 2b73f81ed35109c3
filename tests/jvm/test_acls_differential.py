"""`kafka-acls` (Apache Kafka 4.4's) against an Odradek broker and an Apache Kafka broker that both run Kafka's
StandardAuthorizer (the tool's connection, on PLAINTEXT, is User:ANONYMOUS, a super user on both): adding,
listing (all, by resource, by principal, prefixed patterns, the --producer and --consumer conveniences) and
removing ACLs print the same, but for the order of lines within a resource (both come from hash sets)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.clients import unique_name
from tests.harness import BrokerPool, BrokerProcess
from tests.jvm.apache_kafka import ApacheKafkaBroker, KafkaTools

AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:ANONYMOUS", "allow.everyone.if.no.acl.found": "false"}


@pytest.fixture(scope="module")
def secured_apache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheKafkaBroker]:
    kafka = ApacheKafkaBroker(tmp_path_factory.mktemp("apache-acls"), overrides=dict(AUTHORIZER)).start()
    try:
        yield kafka
    finally:
        kafka.stop()


@pytest.fixture(scope="module")
def secured_odradek(module_brokers: BrokerPool) -> BrokerProcess:
    return module_brokers.start(dict(AUTHORIZER))


def normalized(out: str) -> list[list[str]]:
    """The output in blocks (one per resource, and the lines before the first), each block's ACL lines sorted,
    the blocks sorted: Kafka lists resources in its hash map's order. A resource's block starts at its "Current
    ACLs for resource" line, which `--list --principal` prints right under its own header line."""
    blocks: list[list[str]] = [[]]
    for line in out.splitlines():
        if not line.strip():
            blocks.append([])
        else:
            if line.startswith("Current ACLs for resource") and blocks[-1]:
                blocks.append([])
            blocks[-1].append(line.strip())
    return sorted(sorted(b) for b in blocks if b)


def test_kafka_acls(tools: KafkaTools, secured_odradek: BrokerProcess, secured_apache: ApacheKafkaBroker) -> None:
    t = unique_name("acl-topic")
    steps = [
        ["--add", "--allow-principal", "User:bob", "--operation", "Read", "--operation", "Write", "--topic", t],
        ["--add", "--allow-principal", "User:bob", "--operation", "Read", "--group", f"{t}-",
         "--resource-pattern-type", "prefixed"],
        ["--add", "--deny-principal", "User:mallory", "--deny-host", "10.0.0.1", "--operation", "All", "--topic", t],
        ["--add", "--producer", "--allow-principal", "User:alice", "--topic", f"{t}-p"],
        ["--add", "--consumer", "--allow-principal", "User:carol", "--topic", f"{t}-c", "--group", f"{t}-cg"],
        ["--list", "--topic", t],
        ["--list", "--group", f"{t}-", "--resource-pattern-type", "prefixed"],
        ["--list", "--principal", "User:bob"],
        ["--list", "--topic", f"{t}-p"],
        ["--list", "--resource-pattern-type", "match", "--topic", f"{t}-c"],
        ["--remove", "--force", "--allow-principal", "User:bob", "--operation", "Write", "--topic", t],
        ["--list", "--topic", t],
        ["--remove", "--force", "--topic", f"{t}-p"],
        ["--list", "--topic", f"{t}-p"],
        ["--add", "--allow-principal", "bob", "--operation", "Read", "--topic", t],  # no principal type
        ["--add", "--allow-principal", "User:bob", "--operation", "Fly", "--topic", t],
    ]
    for args in steps:
        ours = tools.run("kafka-acls", "--bootstrap-server", secured_odradek.bootstrap, *args)
        theirs = tools.run("kafka-acls", "--bootstrap-server", secured_apache.bootstrap, *args)
        assert (ours.exit, normalized(ours.stdout)) == (theirs.exit, normalized(theirs.stdout)), (
            f"kafka-acls {' '.join(args)}\n--- Odradek ({ours.exit}):\n{ours.stdout}{ours.stderr[-1500:]}\n"
            f"--- Apache Kafka ({theirs.exit}):\n{theirs.stdout}{theirs.stderr[-1500:]}")
