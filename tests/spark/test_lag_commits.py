"""The source commits each committed micro-batch's end offsets to a consumer group, so `odradek
consumer-groups --describe` shows a streaming query's progress and lag: a real local Spark, real brokers,
the odradek CLI. With commitOffsets=false nothing is committed; a group the query's user may not commit to
(an ACL-secured broker) leaves the query running; the source's SASL settings reach the committing client."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from odradek.spark.group_commit import GroupCommitter  # noqa: E402
from odradek.spark.offsets import TP  # noqa: E402
from odradek.spark.options import Subscription, default_commit_group, parse_source_options  # noqa: E402
from tests.clients import create_topic  # noqa: E402
from tests.harness import BrokerPool, BrokerProcess, free_port, run_cli  # noqa: E402
from tests.waiting import wait_until  # noqa: E402

pytestmark = pytest.mark.timeout(300)

OFFSETS_HEAD = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                "CLIENT-ID"]


# --- helpers ----------------------------------------------------------------------------------


def produce(conf: dict[str, Any], topic: str, count: int, partitions: int, start: int = 0) -> None:
    p = Producer({**conf, "linger.ms": 5})
    for i in range(start, start + count):
        p.produce(topic, f"v{i}".encode(), partition=i % partitions)
    assert p.flush(30) == 0


def describe(bootstrap: str, group: str, *extra: str) -> tuple[dict[int, tuple[str, str, str]], str]:
    """`consumer-groups --describe --group G` -> ({partition: (CURRENT-OFFSET, LOG-END-OFFSET, LAG)}, all output)."""
    r = run_cli("consumer-groups", "--bootstrap-server", bootstrap, "--describe", "--group", group, *extra)
    text = r.stdout + r.stderr
    lines = [line.split() for line in r.stdout.splitlines() if line.strip()]
    if r.returncode != 0 or not lines or lines[0] != OFFSETS_HEAD:
        return {}, text
    return {int(row[2]): (row[3], row[4], row[5]) for row in lines[1:] if row[0] == group}, text


def caught_up(bootstrap: str, group: str, ends: dict[int, int]) -> bool:
    rows, _ = describe(bootstrap, group)
    return rows == {p: (str(end), str(end), "0") for p, end in ends.items()}


def stream(spark: Any, options: dict[str, str], name: str, checkpoint: Path, available_now: bool = False) -> Any:
    reader = spark.readStream.format("odradek").option("startingOffsets", "earliest")
    for k, v in options.items():
        reader = reader.option(k, v)
    writer = (reader.load().selectExpr("CAST(value AS STRING) v", "partition", "offset").writeStream
              .format("memory").queryName(name).option("checkpointLocation", str(checkpoint)))
    if available_now:
        return writer.trigger(availableNow=True).start()
    return writer.trigger(processingTime="200 milliseconds").start()


def processed(spark: Any, name: str) -> dict[int, int]:
    """Per partition, one past the highest offset the query has written to its memory table."""
    rows = spark.sql(f"SELECT partition, max(offset) + 1 AS n FROM {name} GROUP BY partition").collect()
    return {r.partition: r.n for r in rows}


def stop(q: Any) -> None:
    q.stop()
    assert q.exception() is None


# --- options ----------------------------------------------------------------------------------


def test_commit_options() -> None:
    base = {"kafka.bootstrap.servers": "h:1", "subscribe": "a,b"}
    opts = parse_source_options(base, streaming=True)
    assert opts.commit_offsets is True
    assert opts.commit_group_id == default_commit_group(Subscription("subscribe", topics=("a", "b")))
    assert opts.commit_group_id.startswith("odradek-spark-")
    assert opts.commit_group_id == parse_source_options(base, streaming=True).commit_group_id  # stable
    assert opts.commit_group_id != parse_source_options({**base, "subscribe": "a"}, streaming=True).commit_group_id
    assert parse_source_options({**base, "kafka.group.id": "g1"}, streaming=True).commit_group_id == "g1"
    given = parse_source_options({**base, "kafka.group.id": "g1", "GROUPID": "mine", "commitOffsets": "FALSE"},
                                 streaming=True)
    assert (given.commit_group_id, given.commit_offsets) == ("mine", False)
    with pytest.raises(ValueError, match="option 'commitOffsets'"):
        parse_source_options({**base, "commitOffsets": "yes"}, streaming=True)
    with pytest.raises(ValueError, match="option 'groupId' must not be empty"):
        parse_source_options({**base, "groupId": " "}, streaming=True)


# --- a plain broker ---------------------------------------------------------------------------


def test_committer_commits_every_partition_and_shows_an_empty_group(broker: BrokerProcess) -> None:
    create_topic(broker.bootstrap, "lag-direct", partitions=3)
    produce({"bootstrap.servers": broker.bootstrap}, "lag-direct", 30, 3)
    committer = GroupCommitter({"bootstrap.servers": broker.bootstrap}, "lag-direct-g")
    try:
        committer.commit({TP("lag-direct", 0): 4, TP("lag-direct", 1): 10, TP("lag-direct", 2): 0})
        assert committer.flush(30) and committer.failing is None
    finally:
        committer.close()
    rows, out = describe(broker.bootstrap, "lag-direct-g")
    assert rows == {0: ("4", "10", "6"), 1: ("10", "10", "0"), 2: ("0", "10", "10")}, out
    assert "Consumer group 'lag-direct-g' has no active members." in out
    state = run_cli("consumer-groups", "--bootstrap-server", broker.bootstrap, "--describe", "--group",
                    "lag-direct-g", "--state")
    lines = [line.split() for line in state.stdout.splitlines() if line.strip()]
    assert lines[1][0] == "lag-direct-g" and lines[1][-2:] == ["Empty", "0"], state.stdout
    listed = run_cli("consumer-groups", "--bootstrap-server", broker.bootstrap, "--list")
    assert "lag-direct-g" in listed.stdout.split()
    # the web console's model of the same group: listed, Empty, no members, lag per partition
    from odradek.console.cluster import ClusterAdmin

    console = ClusterAdmin(broker.bootstrap, {})
    summary = {g.id: g for g in console.groups()}["lag-direct-g"]
    assert (summary.state, summary.members, summary.lag) == ("Empty", 0, 16)
    group = console.group("lag-direct-g")
    assert group is not None and not group.members
    assert [(p.partition, p.committed, p.end, p.lag) for p in group.partitions] == [(0, 4, 10, 6), (1, 10, 10, 0),
                                                                                   (2, 0, 10, 10)]


def test_query_commits_each_batch_and_lag_falls_to_zero(spark: Any, broker: BrokerProcess, tmp_path: Path) -> None:
    create_topic(broker.bootstrap, "lag-q", partitions=3)
    produce({"bootstrap.servers": broker.bootstrap}, "lag-q", 600, 3)
    group = default_commit_group(Subscription("subscribe", topics=("lag-q",)))
    q = stream(spark, {"kafka.bootstrap.servers": broker.bootstrap, "subscribe": "lag-q",
                       "maxOffsetsPerTrigger": "150"}, "lag_q", tmp_path / "ck")
    try:
        # batches of 150 records: the group's offsets follow them and never pass what the query processed
        seen: set[tuple[str, ...]] = set()

        def done() -> bool:
            rows, _ = describe(broker.bootstrap, group)
            if rows:
                done_by_query = processed(spark, "lag_q")
                for p, (current, _end, _lag) in rows.items():
                    assert int(current) <= done_by_query.get(p, 0), (rows, done_by_query)
                seen.add(tuple(r[2] for _, r in sorted(rows.items())))
            return rows == {p: ("200", "200", "0") for p in range(3)}

        wait_until(done, 120, lambda: f"group {group} caught up: {describe(broker.bootstrap, group)[1]}", interval=0.2)
        assert len(seen) >= 2, seen  # the lag was seen above 0 before it fell to 0
        assert processed(spark, "lag_q") == {0: 200, 1: 200, 2: 200}
        # more records: the lag shows them, then falls to 0 again
        produce({"bootstrap.servers": broker.bootstrap}, "lag-q", 90, 3, start=600)
        wait_until(lambda: caught_up(broker.bootstrap, group, {0: 230, 1: 230, 2: 230}), 60,
                   lambda: f"the group at 230: {describe(broker.bootstrap, group)[1]}", interval=0.2)
        assert processed(spark, "lag_q") == {0: 230, 1: 230, 2: 230}
    finally:
        stop(q)


def test_commit_offsets_false_commits_nothing(spark: Any, broker: BrokerProcess, tmp_path: Path) -> None:
    create_topic(broker.bootstrap, "lag-off", partitions=2)
    produce({"bootstrap.servers": broker.bootstrap}, "lag-off", 100, 2)
    q = stream(spark, {"kafka.bootstrap.servers": broker.bootstrap, "subscribe": "lag-off", "groupId": "lag-off-g",
                       "commitOffsets": "false", "maxOffsetsPerTrigger": "40"}, "lag_off", tmp_path / "ck")
    try:
        wait_until(lambda: processed(spark, "lag_off") == {0: 50, 1: 50}, 120, "the query to read all 100 records")
        produced = len(q.recentProgress)
        wait_until(lambda: len(q.recentProgress) >= produced + 2, 30, "two more triggers")
    finally:
        stop(q)
    default = default_commit_group(Subscription("subscribe", topics=("lag-off",)))
    listed = run_cli("consumer-groups", "--bootstrap-server", broker.bootstrap, "--list").stdout.split()
    assert "lag-off-g" not in listed and default not in listed
    _, out = describe(broker.bootstrap, "lag-off-g")
    assert "does not exist" in out, out


# --- a broker with SASL and ACLs: a commit that fails must not fail the query ------------------

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')


@pytest.fixture(scope="module")
def secured(module_brokers: BrokerPool) -> tuple[BrokerProcess, str, Path]:
    plain, sasl = free_port(), free_port()
    broker = module_brokers.start({
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin", "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS, "inter.broker.listener.name": "PLAINTEXT",
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
    }, name="lag-acls", port=plain)
    admin_config = broker.workdir / "admin.properties"
    admin_config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=admin\n"
                            "sasl.password=admin-secret\n")
    return broker, f"127.0.0.1:{sasl}", admin_config


def alice(bootstrap: str) -> dict[str, str]:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": "alice", "sasl.password": "alice-secret"}


def test_refused_commits_leave_the_query_running(spark: Any, secured: tuple[BrokerProcess, str, Path],
                                                 tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _, sasl, admin_config = secured
    admin_conf = {"bootstrap.servers": sasl, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                  "sasl.username": "admin", "sasl.password": "admin-secret"}
    admin = AdminClient(admin_conf)  # kept alive until its future completes
    admin.create_topics([NewTopic("lag-acl", 2, 1)])["lag-acl"].result(30)

    def acls(*args: str) -> None:
        r = run_cli("acls", "--bootstrap-server", sasl, "--command-config", str(admin_config), "--add", *args)
        assert r.returncode == 0, r.stderr

    acls("--allow-principal", "User:alice", "--consumer", "--topic", "lag-acl", "--group", "lag-allowed")
    # the executors' consumers look up their own groups' coordinator (groupIdPrefix), as with Spark's source
    acls("--allow-principal", "User:alice", "--operation", "Read", "--group", "spark-kafka-source",
         "--resource-pattern-type", "prefixed")
    produce(admin_conf, "lag-acl", 100, 2)

    # the committing client alone: a refused commit is a warning, never an exception
    with caplog.at_level(logging.WARNING, logger="odradek.spark.group_commit"):
        refused = GroupCommitter(alice(sasl), "lag-denied", timeout_s=20)
        try:
            refused.commit({TP("lag-acl", 0): 5})
            assert refused.flush(30)
            refused.commit({TP("lag-acl", 0): 5})  # not tried again at once
        finally:
            refused.close()
    assert refused.failing is not None and "GROUP_AUTHORIZATION_FAILED" in refused.failing, refused.failing
    assert [r.levelname for r in caplog.records] == ["WARNING"], caplog.records

    # a query as alice whose group she may not commit to goes on through failing commits
    options = {"kafka.bootstrap.servers": sasl, "kafka.security.protocol": "SASL_PLAINTEXT",
               "kafka.sasl.mechanism": "PLAIN",
               "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                                         'username="alice" password="alice-secret";',
               "subscribe": "lag-acl", "maxOffsetsPerTrigger": "40"}
    denied = stream(spark, {**options, "groupId": "lag-denied"}, "lag_denied", tmp_path / "ck-denied")
    try:
        def read(n: int) -> bool:
            assert denied.exception() is None and denied.isActive
            return processed(spark, "lag_denied") == {0: n, 1: n}

        wait_until(lambda: read(50), 120, "the query to read the first 100 records")
        produce(admin_conf, "lag-acl", 60, 2, start=100)
        wait_until(lambda: read(80), 60, "the query to read 60 more records")
    finally:
        stop(denied)
    _, out = describe(sasl, "lag-denied", "--command-config", str(admin_config))
    assert "does not exist" in out, out

    # one that may: its commits carry the source's SASL settings
    allowed = stream(spark, {**options, "groupId": "lag-allowed"}, "lag_allowed", tmp_path / "ck-allowed",
                     available_now=True)
    assert allowed.awaitTermination(120)
    assert allowed.exception() is None and processed(spark, "lag_allowed") == {0: 80, 1: 80}
    rows, out = describe(sasl, "lag-allowed", "--command-config", str(admin_config))
    assert rows == {0: ("80", "80", "0"), 1: ("80", "80", "0")}, out
