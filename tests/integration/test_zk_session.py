"""cli/zk_session against a real ZooKeeper: one-line refusals where there is no cluster (and no chroot
created while looking), and the znode readers on a cluster laid out as the brokers write it."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from odradek.admin_client.errors import CliError
from odradek.cli import zk_session
from odradek.cli.cluster import Registry, read_registry
from odradek.cli.zk_session import NoClusterError, NoZooKeeperError, ZkSession
from odradek.cluster import znodes as zn
from tests.zkharness import ZooKeeperChroot


@pytest.fixture
def root(zk_standalone: ZooKeeperChroot) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zk_standalone.connect_string, timeout=10)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


def write(client: KazooClient, path: str, data: object) -> None:
    client.create(path, json.dumps(data).encode(), makepath=True)


def test_nothing_listening(tmp_path: object) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        connect = f"127.0.0.1:{sock.getsockname()[1]}"  # bound, not listening: connections are refused
        with pytest.raises(NoZooKeeperError, match=f"no ZooKeeper answers at {connect}"), ZkSession(connect, 5000):
            pass
        assert read_registry(connect) is None


def test_no_cluster_in_the_chroot(zk_standalone: ZooKeeperChroot, root: KazooClient) -> None:
    connect = zk_standalone.connect_string + "/no-cluster"
    with pytest.raises(NoClusterError, match=f"ZooKeeper at {connect} holds no Odradek cluster"), \
            ZkSession(connect, 10_000):
        pass
    assert read_registry(connect) == Registry([], None)  # cluster up asks before brokers register
    assert root.exists("/no-cluster") is None  # looking never creates the chroot


def test_reading_a_cluster(zk_standalone: ZooKeeperChroot, root: KazooClient) -> None:
    connect = zk_standalone.connect_string + "/one-broker"
    write(root, "/one-broker" + zn.broker_path(3), zn.BrokerInfo(3, "127.0.0.1", 9092).to_json())
    write(root, "/one-broker" + zn.broker_path(7), {"no": "endpoint"})
    write(root, "/one-broker" + zn.CONTROLLER, {"version": 1, "brokerid": 3, "timestamp": "0"})
    write(root, "/one-broker" + zn.topic_path("t"), zn.TopicAssignment({0: [3], 1: [3]}).to_json())
    write(root, "/one-broker" + zn.topic_config_path("t"), zn.config_json({"retention.ms": "1000"}))
    write(root, "/one-broker" + zn.topic_path("broken"), {"partitions": "not a map"})

    with ZkSession(connect, 10_000) as zk:
        assert zk.run(zk_session.broker_ids) == [3, 7]
        assert {i: (b.host, b.port) for i, b in zk.run(zk_session.live_brokers).items()} == {3: ("127.0.0.1", 9092)}
        assert zk.run(zk_session.controller_id) == 3
        assert zk.run(zk_session.topic_names) == ["broken", "t"]
        topic = zk.run(zk_session.read_topic, "t")
        assert topic is not None and topic.partitions == {0: [3], 1: [3]}
        assert zk.run(zk_session.read_topic, "nosuch") is None
        assert zk.run(zk_session.read_topic_config, "t") == {"retention.ms": "1000"}
        assert zk.run(zk_session.read_partition_state, "t", 0) is None  # no controller acted on it
        with pytest.raises(CliError, match=r"^Error: ZooKeeper at .*: malformed topic znode /brokers/topics/broken$"):
            zk.run(zk_session.read_topic, "broken")
        assert zk.run(zk_session.create_json, zn.REASSIGN_PARTITIONS, {"version": 1, "partitions": []})
        assert not zk.run(zk_session.create_json, zn.REASSIGN_PARTITIONS, {"version": 1, "partitions": []})
    assert json.loads(root.get("/one-broker" + zn.REASSIGN_PARTITIONS)[0]) == {"version": 1, "partitions": []}
    assert read_registry(connect) == Registry([3, 7], 3)
