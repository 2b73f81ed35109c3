"""A broker's static config must not become a cluster-wide dynamic default behind the operator's back (issue
#36, observation 13): the first broker of a ZooKeeper cluster wrote its `min.insync.replicas=1` as the cluster
default, silently overriding `min.insync.replicas=2` in the other brokers' files. ZooKeeper-mode Kafka never
does that: each broker's file applies until an operator sets a cluster default, and a broker whose file then
disagrees with the value in force says so at start."""

from __future__ import annotations

import json

from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

from tests.clients import admin, forget_admin
from tests.harness import BrokerPool, run_cli
from tests.zkharness import ZooKeeperChroot


def _min_isr(bootstrap: str, broker_id: int) -> tuple[str, int]:
    res = ConfigResource(ResourceType.BROKER, str(broker_id))
    entry = admin(bootstrap).describe_configs([res])[res].result(20)["min.insync.replicas"]
    return entry.value, entry.source


def test_a_broker_file_is_not_turned_into_a_cluster_default(zk_standalone: ZooKeeperChroot,
                                                            brokers: BrokerPool) -> None:
    cluster = brokers.start_cluster(zk_standalone.connect_string, 2,
                                    per_broker=[{"min.insync.replicas": "1"}, {"min.insync.replicas": "2"}])
    first, second = cluster.brokers
    # each broker keeps its own file's value: nothing was written as a cluster default
    assert _min_isr(first.bootstrap, 0) == ("1", ConfigSource.STATIC_BROKER_CONFIG.value)
    assert _min_isr(second.bootstrap, 1) == ("2", ConfigSource.STATIC_BROKER_CONFIG.value)
    with cluster.zookeeper() as z:
        stored = z.exists("/config/brokers/<default>")
        assert stored is None or "min.insync.replicas" not in json.loads(z.get("/config/brokers/<default>")[0])["config"]
    assert "overrides min.insync.replicas" not in second.output()

    # an operator's cluster default wins over the files, and a broker whose file disagrees says so at start
    r = run_cli("configs", "--bootstrap-server", first.bootstrap, "--entity-type", "brokers", "--entity-default",
                "--alter", "--add-config", "min.insync.replicas=1")
    assert r.returncode == 0, r.stderr
    second.restart()
    cluster.wait_registered()
    forget_admin(second.bootstrap)
    assert _min_isr(second.bootstrap, 1) == ("1", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    assert ("min.insync.replicas=1 from the cluster-level dynamic default overrides min.insync.replicas=2 of the "
            "broker's configuration file") in second.output()
    first.restart()
    assert "overrides min.insync.replicas" not in first.output()  # its file agrees with the cluster default
