"""Cluster mode with a real 3-node ZooKeeper ensemble and 3 brokers: shared metadata, controller
fail-over, ZooKeeper leader loss, broker restarts, and bad input (unreachable ZooKeeper, duplicate
broker.id, malformed znodes)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import NewTopic
from kazoo.exceptions import KazooException

from tests.clients import admin, consume_all
from tests.harness import BrokerCluster, BrokerPool, BrokerProcess, free_port, odradek_cmd, run_cli
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperEnsemble


def _describe(bootstrap: str, topic: str) -> str:
    r = run_cli("topics", "--bootstrap-server", bootstrap, "--describe", "--topic", topic)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _create_or_exists(bootstrap: str, topic: str) -> bool:
    try:
        admin(bootstrap).create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    except KafkaException as exc:
        if "TOPIC_ALREADY_EXISTS" not in str(exc):
            raise
    return True


@pytest.fixture(scope="module")
def cluster(zk_ensemble: ZooKeeperEnsemble, module_brokers: BrokerPool) -> BrokerCluster:
    return module_brokers.start_cluster(zk_ensemble.connect_string, 3)


def test_topic_is_described_identically_through_every_broker(cluster: BrokerCluster) -> None:
    a = admin(cluster.brokers[0].bootstrap)
    a.create_topics([NewTopic("spread", 6, 2)])["spread"].result(30)
    views = [_describe(b.bootstrap, "spread") for b in cluster.brokers]
    assert views[0] == views[1] == views[2]
    leaders = {line.split("Leader: ")[1].split("\t")[0] for line in views[0].splitlines() if "Partition:" in line}
    assert leaders == {"0", "1", "2"}  # leaders spread over the brokers
    for b in cluster.brokers:  # produce to and consume from every partition, bootstrapped on one broker
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
        for part in range(6):
            p.produce("spread", b"from-%d-%d" % (b.broker_id, part), partition=part)
        assert p.flush(30) == 0
    got = consume_all(cluster.brokers[2].bootstrap, "spread", 18, partitions=6)
    assert sorted(m.value() for m in got) == sorted(b"from-%d-%d" % (b, p) for b in range(3) for p in range(6))


def test_znode_layout_is_kafkas(cluster: BrokerCluster) -> None:
    admin(cluster.bootstrap).create_topics([NewTopic("layout", 1, 3)])["layout"].result(30)
    with cluster.zookeeper() as z:
        reg = json.loads(z.get("/brokers/ids/0")[0])
        assert {"version", "host", "port", "endpoints", "listener_security_protocol_map", "jmx_port",
                "timestamp"} <= set(reg)
        assert z.exists("/brokers/ids/0").ephemeralOwner != 0
        ctl = json.loads(z.get("/controller")[0])
        assert {"version", "brokerid", "timestamp"} <= set(ctl) and z.exists("/controller").ephemeralOwner != 0
        assert int(z.get("/controller_epoch")[0]) >= 1
        topic = json.loads(z.get("/brokers/topics/layout")[0])
        assert sorted(topic["partitions"]["0"]) == [0, 1, 2]
        state = json.loads(z.get("/brokers/topics/layout/partitions/0/state")[0])
        assert {"controller_epoch", "leader", "version", "leader_epoch", "isr"} <= set(state)
        assert json.loads(z.get("/config/topics/layout")[0]) == {"version": 1, "config": {}}
        assert json.loads(z.get("/cluster/id")[0])["id"]


def test_malformed_znodes_do_not_hurt(cluster: BrokerCluster) -> None:
    with cluster.zookeeper() as z:
        z.create("/brokers/topics/garbage", b"{not json")
        z.create("/brokers/topics/halfjson", json.dumps({"version": 3}).encode())
        z.ensure_path("/config/topics")
        z.create("/config/topics/garbage", b"\xff\xfe")
    a = admin(cluster.bootstrap)
    a.create_topics([NewTopic("after-garbage", 2, 2)])["after-garbage"].result(30)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    p.produce("after-garbage", b"ok")
    assert p.flush(20) == 0
    assert all(b.alive() for b in cluster.brokers)
    assert any("malformed" in b.output().lower() for b in cluster.brokers)


def test_kill_controller_another_takes_over(cluster: BrokerCluster) -> None:
    old = cluster.controller_id()
    cluster.by_id(old).kill()
    try:
        wait_until(lambda: cluster.controller_id() != old, 30, "another controller", ignoring=(KazooException,))
        survivor = next(b for b in cluster.brokers if b.broker_id != old)
        # an admin client sends CreateTopics to the controller its first Metadata answer names: it must be asked
        # once the survivor's own metadata has the new controller (its ZooKeeper watch follows the election by
        # a moment; a client that learnt the dead one retried it alone for 30 s)
        wait_until(lambda: admin(survivor.bootstrap).list_topics(timeout=10).controller_id not in (old, -1), 30,
                   "the survivor to name the new controller", ignoring=(KafkaException,))
        a = admin(survivor.bootstrap)
        a.create_topics([NewTopic("after-failover", 2, 2)])["after-failover"].result(30)
        assert "PartitionCount: 2" in _describe(survivor.bootstrap, "after-failover")
    finally:
        cluster.by_id(old).start(60)
    # the restarted broker re-registers and rejoins
    wait_until(lambda: "Isr: " in _describe(cluster.by_id(old).bootstrap, "after-failover"), 30,
               "the restarted broker to describe the topic", ignoring=(AssertionError,))


def test_zookeeper_leader_loss_and_no_quorum(cluster: BrokerCluster, zk_ensemble: ZooKeeperEnsemble) -> None:
    admin(cluster.bootstrap).create_topics([NewTopic("zkdrill", 3, 3)])["zkdrill"].result(30)
    boot = cluster.brokers[0].bootstrap
    wait_until(lambda: all(len(p.isrs) == 3 for p in admin(boot).list_topics("zkdrill", timeout=10)
                           .topics["zkdrill"].partitions.values()), 30, "every replica of zkdrill in sync")
    leader = zk_ensemble.leader_index()
    assert leader is not None
    zk_ensemble.stop_node(leader)
    try:
        new_leader = zk_ensemble.wait_for_leader(30, exclude=leader)
        assert new_leader != leader
        p = Producer({"bootstrap.servers": boot, "acks": "all"})
        for i in range(30):
            p.produce("zkdrill", b"q%d" % i, partition=i % 3)
        assert p.flush(30) == 0
        wait_until(lambda: _create_or_exists(boot, "zk-ok"), 60, "a topic created after the ZooKeeper fail-over",
                   ignoring=(KafkaException, TimeoutError))  # the admin future may time out meanwhile
        # two of three ZooKeeper nodes down: no quorum; existing partitions still serve, admin fails clearly
        other = next(i for i in range(3) if i not in (leader,) and i != new_leader)
        zk_ensemble.stop_node(other)
        try:
            p2 = Producer({"bootstrap.servers": boot, "acks": "1"})
            for i in range(30):
                p2.produce("zkdrill", b"noq%d" % i, partition=i % 3)
            assert p2.flush(30) == 0
            assert len(consume_all(boot, "zkdrill", 60, partitions=3)) >= 60
            r = run_cli("topics", "--bootstrap-server", boot, "--create", "--topic", "no-quorum",
                        "--partitions", "1", "--replication-factor", "1", timeout=120)
            assert r.returncode != 0 and "Traceback" not in r.stderr
        finally:
            zk_ensemble.start_node(other)
    finally:
        zk_ensemble.start_node(leader)
        zk_ensemble.wait_for_leader(60)
    assert all(b.alive() for b in cluster.brokers)


def test_unreachable_zookeeper_exits_with_one_line(tmp_path: Path) -> None:
    dead = free_port()
    cfg = tmp_path / "server.properties"
    cfg.write_text(f"broker.id=5\nlisteners=PLAINTEXT://127.0.0.1:{free_port()}\nlog.dirs={tmp_path / 'd'}\n"
                   f"zookeeper.connect=127.0.0.1:{dead}\nzookeeper.connection.timeout.ms=3000\n")
    start = time.monotonic()
    r = subprocess.run(odradek_cmd("server-start", str(cfg)), capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert f"127.0.0.1:{dead}" in r.stderr and "Traceback" not in r.stderr + r.stdout
    assert time.monotonic() - start < 30


def test_duplicate_broker_id_fails_clearly(cluster: BrokerCluster, tmp_path: Path) -> None:
    dup = BrokerProcess(tmp_path / "dup", broker_id=1, overrides=dict(cluster.brokers[1].overrides))
    dup.write_config()
    r = subprocess.run(odradek_cmd("server-start", str(dup.config_path)), capture_output=True, text=True, timeout=90)
    assert r.returncode != 0
    assert "broker.id 1 is already registered at /brokers/ids/1" in r.stderr
    assert "Traceback" not in r.stderr
    assert cluster.brokers[1].alive()
