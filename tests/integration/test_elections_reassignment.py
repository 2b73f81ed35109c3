"""Leader elections and partition reassignment with real ZooKeeper, brokers and clients: the guide's
drill (kill a leader, restart it, preferred election gives leadership back), the Kafka 2.x ZooKeeper
path, unclean election only when asked, auto leader rebalance, and moving a topic with data from
brokers [0,1] to [1,2] under a running producer, with --verify and --cancel."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic
from kafka.protocol.admin import (
    AlterPartitionReassignmentsRequest,
    ElectLeadersRequest,
    ListPartitionReassignmentsRequest,
)
from kazoo.exceptions import NoNodeError

from odradek.protocol.errors import ErrorCode
from tests.clients import NumberedProducer, admin, consume_all, consume_to_end
from tests.harness import BrokerCluster, BrokerPool, run_cli
from tests.rawclient import RawClient
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot

FAST = {
    "replica.lag.time.max.ms": "3000",
    "auto.leader.rebalance.enable": "false",
    "controlled.shutdown.max.retries": "3",
    "controlled.shutdown.retry.backoff.ms": "1000",
}


@pytest.fixture
def two_brokers(zk_standalone: ZooKeeperChroot, brokers: BrokerPool) -> BrokerCluster:
    return brokers.start_cluster(zk_standalone.connect_string, 2, FAST)


@pytest.fixture
def three_brokers(zk_standalone: ZooKeeperChroot, brokers: BrokerPool) -> BrokerCluster:
    return brokers.start_cluster(zk_standalone.connect_string, 3, FAST)


def _layout(bootstrap: str, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    """partition -> (leader, replicas, sorted isr), from a fresh Metadata request."""
    md = admin(bootstrap).list_topics(topic, timeout=10).topics[topic]
    return {p: (m.leader, list(m.replicas), sorted(m.isrs)) for p, m in md.partitions.items()}


def _leaders_preferred(bootstrap: str, topic: str) -> bool:
    return all(leader == replicas[0] for leader, replicas, _ in _layout(bootstrap, topic).values())


def _all_in_sync(bootstrap: str, topic: str, n: int) -> bool:
    return all(len(isr) == n for _, _, isr in _layout(bootstrap, topic).values())


def _create(bootstrap: str, topic: str, assignment: list[list[int]], **config: str) -> None:
    new = NewTopic(topic, len(assignment), replica_assignment=assignment, config=config)
    admin(bootstrap).create_topics([new])[topic].result(20)


def _elect(*args: str) -> tuple[int, str, str]:
    r = run_cli("leader-election", *args, timeout=60)
    return r.returncode, r.stdout, r.stderr


def _leave_broker(cluster: BrokerCluster, victim: int, topic: str, kill: bool) -> str:
    """Take a broker down until its partitions are led elsewhere; returns the survivors' bootstrap."""
    (cluster.by_id(victim).kill if kill else cluster.by_id(victim).stop)()
    boot = ",".join(b.bootstrap for b in cluster.brokers if b.broker_id != victim)
    wait_until(lambda: all(ld not in (victim, -1) for ld, _, _ in _layout(boot, topic).values()), 30,
               f"leaders other than broker {victim}")
    return boot


def test_preferred_election_returns_leadership_after_restart(two_brokers: BrokerCluster) -> None:
    """The guide's drill: kill -9 a leader, restart it, run a preferred election for all partitions."""
    c = two_brokers
    _create(c.bootstrap, "drill", [[0, 1], [1, 0], [0, 1], [1, 0]])
    wait_until(lambda: _all_in_sync(c.bootstrap, "drill", 2), 30, "every replica of drill in sync")
    assert _leaders_preferred(c.bootstrap, "drill")
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all"})
    for i in range(400):
        p.produce("drill", b"m%d" % i, partition=i % 4)
    assert p.flush(30) == 0
    boot0 = _leave_broker(c, 1, "drill", kill=True)
    # the preferred replica of drill-1 and drill-3 is down: Kafka's per-partition error, exit code 1
    code, out, err = _elect("--bootstrap-server", boot0, "--election-type", "PREFERRED", "--topic", "drill",
                            "--partition", "1")
    assert code == 1
    assert "Error completing leader election (PREFERRED) for partition: drill-1: " \
           "org.apache.kafka.common.errors.PreferredLeaderNotAvailableException" in out
    assert err.strip() == "Error: 1 replica(s) could not be elected"
    c.by_id(1).start()
    wait_until(lambda: _all_in_sync(c.bootstrap, "drill", 2), 40, "every replica of drill in sync")
    assert {ld for ld, _, _ in _layout(c.bootstrap, "drill").values()} == {0}  # nothing moves by itself
    code, out, err = _elect("--bootstrap-server", c.bootstrap, "--election-type", "PREFERRED",
                            "--all-topic-partitions")
    assert code == 0, out + err
    assert "Successfully completed leader election (PREFERRED) for partitions drill-1, drill-3" in out
    assert "Valid replica already elected for partitions drill-0, drill-2" in out
    assert _leaders_preferred(c.bootstrap, "drill")
    # nothing left to do: ELECTION_NOT_NEEDED for every partition, still exit code 0
    code, out, err = _elect("--bootstrap-server", c.bootstrap, "--election-type", "preferred",
                            "--all-topic-partitions")
    assert code == 0 and out.strip() == "Valid replica already elected for partitions drill-0, drill-1, drill-2, drill-3"
    ctrl = c.by_id(c.controller_id()).output()
    assert "Partition drill-1: leader changed to 1 (epoch" in ctrl
    assert len(consume_all(c.bootstrap, "drill", 400, partitions=4)) == 400


def test_preferred_election_through_zookeeper(two_brokers: BrokerCluster, tmp_path: Path) -> None:
    """Kafka 2.x: kafka-preferred-replica-election.sh --zookeeper writes /admin/preferred_replica_election."""
    c = two_brokers
    _create(c.bootstrap, "zkdrill", [[0, 1], [1, 0]])
    wait_until(lambda: _all_in_sync(c.bootstrap, "zkdrill", 2), 30, "every replica of zkdrill in sync")
    _leave_broker(c, 1, "zkdrill", kill=False)
    c.by_id(1).start()
    wait_until(lambda: _all_in_sync(c.bootstrap, "zkdrill", 2), 40, "every replica of zkdrill in sync")
    assert _layout(c.bootstrap, "zkdrill")[1][0] == 0
    spec = tmp_path / "election.json"
    spec.write_text(json.dumps({"partitions": [{"topic": "zkdrill", "partition": 1},
                                               {"topic": "zkdrill", "partition": 7}]}))
    connect = c.brokers[0].overrides["zookeeper.connect"]
    r = run_cli("preferred-replica-election", "--zookeeper", connect, "--path-to-json-file", str(spec))
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert 'Created preferred replica election path with {"version":1,"partitions":[{"topic":"zkdrill",' \
           '"partition":1}]}' in lines
    assert "Successfully started preferred replica election for partitions Set(zkdrill-1)" in lines
    assert "Skipping preferred replica leader election for partition zkdrill-7 since it doesn't exist." in lines
    wait_until(lambda: _leaders_preferred(c.bootstrap, "zkdrill"), 20, "the preferred replicas of zkdrill to lead")
    with c.zookeeper() as z:
        wait_until(lambda: z.exists("/admin/preferred_replica_election") is None, 10,
                   "the controller to delete the election znode")
    # the same tool through the ElectLeaders API: nothing to do now
    r = run_cli("preferred-replica-election", "--bootstrap-server", c.bootstrap)
    assert r.returncode == 0 and "Preferred replica already elected for partitions zkdrill-0, zkdrill-1" in r.stdout


def test_requests_to_a_broker_that_is_not_the_controller_are_forwarded(two_brokers: BrokerCluster) -> None:
    c = two_brokers
    _create(c.bootstrap, "fwd", [[0, 1], [1, 0]])
    wait_until(lambda: _all_in_sync(c.bootstrap, "fwd", 2), 30, "every replica of fwd in sync")
    other = c.brokers[1 - c.controller_id()]
    elect = ElectLeadersRequest(election_type=0, timeout_ms=10000, topic_partitions=[
        ElectLeadersRequest.TopicPartitions(topic="fwd", partitions=[0, 1]),
        ElectLeadersRequest.TopicPartitions(topic="nope", partitions=[0])])
    alter = AlterPartitionReassignmentsRequest(timeout_ms=10000, topics=[AlterPartitionReassignmentsRequest.ReassignableTopic(
        name="fwd", partitions=[AlterPartitionReassignmentsRequest.ReassignableTopic.ReassignablePartition(
            partition_index=0, replicas=None)])])
    with RawClient(other.port) as raw:
        resp = raw.request(elect, 2)
        codes = {(r.topic, p.partition_id): p.error_code for r in resp.replica_election_results
                 for p in r.partition_result}
        assert resp.error_code == 0
        assert codes == {("fwd", 0): ErrorCode.ELECTION_NOT_NEEDED, ("fwd", 1): ErrorCode.ELECTION_NOT_NEEDED,
                         ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        resp = raw.request(alter, 0)
        assert resp.error_code == 0
        assert resp.responses[0].partitions[0].error_code == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
        resp = raw.request(ListPartitionReassignmentsRequest(timeout_ms=1000, topics=None), 0)
        assert resp.error_code == 0 and resp.topics == []


def test_unclean_election_only_when_asked(two_brokers: BrokerCluster) -> None:
    c = two_brokers
    _create(c.bootstrap, "risky", [[0, 1]])
    wait_until(lambda: _all_in_sync(c.bootstrap, "risky", 2), 30, "every replica of risky in sync")
    c.by_id(1).stop()  # the follower leaves the ISR
    wait_until(lambda: _layout(c.brokers[0].bootstrap, "risky")[0][2] == [0], 30, "an ISR of broker 0 alone")
    p = Producer({"bootstrap.servers": c.brokers[0].bootstrap, "acks": "1"})
    for i in range(50):
        p.produce("risky", b"only-on-0-%d" % i)
    assert p.flush(20) == 0
    c.by_id(0).kill()  # the only in-sync replica dies
    c.by_id(1).start()
    b1 = c.brokers[1].bootstrap
    wait_until(lambda: c.controller_id() == 1, 30, "broker 1 to become controller",
               ignoring=(NoNodeError,))  # no /controller between broker 0's session ending and broker 1's election
    # unclean.leader.election.enable=false: the controller takes the partition offline rather than
    # let the out-of-sync replica lead
    with c.zookeeper() as z:
        wait_until(lambda: json.loads(z.get("/brokers/topics/risky/partitions/0/state")[0])["leader"] == -1, 30,
                   "the controller to take risky-0 offline")
    wait_until(lambda: _layout(b1, "risky")[0][0] == -1, 10, "broker 1's metadata to show risky-0 offline")
    code, out, err = _elect("--bootstrap-server", b1, "--election-type", "PREFERRED", "--topic", "risky",
                            "--partition", "0")
    assert code == 1 and "PreferredLeaderNotAvailableException" in out
    code, out, err = _elect("--bootstrap-server", b1, "--election-type", "UNCLEAN", "--topic", "risky",
                            "--partition", "0")
    assert code == 0, out + err
    assert out.strip() == "Successfully completed leader election (UNCLEAN) for partitions risky-0"
    assert _layout(b1, "risky")[0][:3:2] == (1, [1])
    assert "There's potential data loss" in c.by_id(1).output()
    p1 = Producer({"bootstrap.servers": b1, "acks": "all"})
    p1.produce("risky", b"after")
    assert p1.flush(20) == 0
    # a partition with a live leader needs no unclean election
    code, out, err = _elect("--bootstrap-server", b1, "--election-type", "UNCLEAN", "--topic", "risky",
                            "--partition", "0")
    assert code == 0 and out.strip() == "Valid replica already elected for partitions risky-0"


def test_auto_leader_rebalance(zk_standalone: ZooKeeperChroot, brokers: BrokerPool) -> None:
    c = brokers.start_cluster(zk_standalone.connect_string, 2, {
        **FAST, "auto.leader.rebalance.enable": "true", "leader.imbalance.check.interval.seconds": "1"})
    _create(c.bootstrap, "auto", [[0, 1], [1, 0], [0, 1], [1, 0]])
    wait_until(lambda: _all_in_sync(c.bootstrap, "auto", 2), 30, "every replica of auto in sync")
    _leave_broker(c, 1, "auto", kill=False)
    c.by_id(1).start()
    wait_until(lambda: _leaders_preferred(c.bootstrap, "auto"), 40, "the preferred replicas of auto to lead")
    assert "Processing automatic preferred replica leader election" in c.by_id(c.controller_id()).output()


def _reassignment_file(path: Path, topic: str, replicas: list[int], partition: int = 0) -> Path:
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": partition, "replicas": replicas}]}))
    return path


def _reassign(*args: str) -> tuple[int, str, str]:
    r = run_cli("reassign-partitions", *args, timeout=60)
    return r.returncode, r.stdout, r.stderr


def test_reassign_under_load(three_brokers: BrokerCluster, tmp_path: Path) -> None:
    c = three_brokers
    _create(c.bootstrap, "move", [[0, 1]])
    wait_until(lambda: _all_in_sync(c.bootstrap, "move", 2), 30, "every replica of move in sync")
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(20000):
        p.produce("move", b"before-%d" % i)
    assert p.flush(30) == 0
    prod = NumberedProducer(c.bootstrap, "move", partitions=1).start()
    prod.wait_acked(100)
    spec = _reassignment_file(tmp_path / "move.json", "move", [1, 2])
    code, out, err = _reassign("--bootstrap-server", c.bootstrap, "--execute", "--reassignment-json-file", str(spec))
    assert code == 0, out + err
    assert out.startswith("Current partition replica assignment\n\n"
                          '{"version":1,"partitions":[{"topic":"move","partition":0,"replicas":[0,1],'
                          '"log_dirs":["any","any"]}]}\n\n'
                          "Save this to use as the --reassignment-json-file option during rollback\n")
    assert out.endswith("Successfully started partition reassignment for move-0\n")

    def verified() -> bool:
        _, vout, _ = _reassign("--bootstrap-server", c.bootstrap, "--verify", "--reassignment-json-file", str(spec))
        return "Reassignment of partition move-0 is completed." in vout

    wait_until(verified, 60, "the reassignment to complete", interval=1.0)
    prod.wait_acked(100)  # acknowledged by the new replicas
    prod.stop()
    assert not prod.failed, prod.failed[:3]
    assert len(prod.acked) > 100
    leader, replicas, isr = _layout(c.bootstrap, "move")[0]
    assert replicas == [1, 2] and isr == [1, 2] and leader in (1, 2)
    wait_until(lambda: not (c.brokers[0].log_dir / "move-0").exists(), 20, "the removed replica's log to go")
    wait_until(lambda: c.brokers[1].partition_log_bytes("move", 0) == c.brokers[2].partition_log_bytes("move", 0), 30, "identical new replicas")
    boot = ",".join(b.bootstrap for b in c.brokers[1:])
    got = consume_to_end(boot, "move", 1)
    stored = {m.offset(): m.value() for m in got}
    for _part, off, num in prod.acked:
        assert stored.get(off) == str(num).encode(), f"acknowledged {num} at offset {off} is missing"
    assert "Partition move-0: reassignment completed, replicas [1, 2]" in c.by_id(c.controller_id()).output()
    code, out, _ = _reassign("--bootstrap-server", c.bootstrap, "--list")
    assert code == 0 and out.strip() == "No partition reassignments found."


def test_reassignment_in_progress_then_cancelled(zk_standalone: ZooKeeperChroot, brokers: BrokerPool,
                                                 tmp_path: Path) -> None:
    # a long ZooKeeper session, so a paused (SIGSTOP) broker still counts as alive
    c = brokers.start_cluster(zk_standalone.connect_string, 3, {**FAST, "zookeeper.session.timeout.ms": "30000"})
    ctrl = c.controller_id()
    paused, other = [b for b in range(3) if b != ctrl]
    _create(c.bootstrap, "undo", [[ctrl, other]])
    wait_until(lambda: _all_in_sync(c.bootstrap, "undo", 2), 30, "every replica of undo in sync")
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all"})
    for i in range(1000):
        p.produce("undo", b"u%d" % i)
    assert p.flush(30) == 0
    spec = _reassignment_file(tmp_path / "undo.json", "undo", [ctrl, paused])
    boot = ",".join(c.brokers[b].bootstrap for b in (ctrl, other))
    pid = c.by_id(paused).pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        code, out, err = _reassign("--bootstrap-server", boot, "--execute", "--reassignment-json-file", str(spec))
        assert code == 0, out + err
        _, replicas, _ = _layout(boot, "undo")[0]
        assert replicas == [ctrl, paused, other]  # target first, then the leaving replica
        code, out, _ = _reassign("--bootstrap-server", boot, "--list")
        assert out.splitlines() == ["Current partition reassignments:",
                                    f"undo-0: replicas: {ctrl},{paused},{other}. adding: {paused}. "
                                    f"removing: {other}."]
        code, out, _ = _reassign("--bootstrap-server", boot, "--verify", "--reassignment-json-file", str(spec))
        assert "Reassignment of partition undo-0 is still in progress." in out
        code, out, err = _reassign("--bootstrap-server", boot, "--execute", "--reassignment-json-file", str(spec))
        assert code == 1 and err.startswith("Cannot execute because there is an existing partition assignment.")
        code, out, err = _reassign("--bootstrap-server", boot, "--cancel", "--reassignment-json-file", str(spec))
        assert code == 0, out + err
        assert "Successfully cancelled partition reassignment for: undo-0" in out
        # the brokers' metadata follows the controller's change a moment later (as in Kafka)
        wait_until(lambda: _layout(boot, "undo")[0][1] == [ctrl, other], 30, "the replicas as before the reassignment")
        code, out, _ = _reassign("--bootstrap-server", boot, "--cancel", "--reassignment-json-file", str(spec))
        assert "None of the specified partition reassignments are active." in out
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_until(lambda: not (c.brokers[paused].log_dir / "undo-0").exists(), 20, "the removed replica's log to go")
    wait_until(lambda: _all_in_sync(c.bootstrap, "undo", 2), 30, "every replica of undo in sync")
    assert len(consume_all(c.bootstrap, "undo", 1000)) == 1000


def test_reassign_through_zookeeper_and_generate(two_brokers: BrokerCluster, tmp_path: Path) -> None:
    c = two_brokers
    _create(c.bootstrap, "legacy", [[0], [0]])
    p = Producer({"bootstrap.servers": c.bootstrap})
    for i in range(200):
        p.produce("legacy", b"l%d" % i, partition=i % 2)
    assert p.flush(20) == 0
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": "legacy"}]}))
    code, out, err = _reassign("--bootstrap-server", c.bootstrap, "--generate", "--topics-to-move-json-file",
                               str(topics), "--broker-list", "1")
    assert code == 0, out + err
    lines = out.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert json.loads(lines[1])["partitions"][0] == {"topic": "legacy", "partition": 0, "replicas": [0],
                                                      "log_dirs": ["any"]}
    assert lines[3] == "Proposed partition reassignment configuration"
    proposed = tmp_path / "proposed.json"
    proposed.write_text(lines[4])
    assert [q["replicas"] for q in json.loads(lines[4])["partitions"]] == [[1], [1]]
    connect = c.brokers[0].overrides["zookeeper.connect"]
    code, out, err = _reassign("--zookeeper", connect, "--execute", "--reassignment-json-file", str(proposed))
    assert code == 0, out + err
    assert "Successfully started partition reassignments for legacy-0,legacy-1" in out

    def done() -> bool:
        _, vout, _ = _reassign("--zookeeper", connect, "--verify", "--reassignment-json-file", str(proposed))
        return vout.count("is completed.") == 2

    wait_until(done, 40, "both reassignments to complete", interval=1.0)
    assert all(replicas == [1] for _, replicas, _ in _layout(c.bootstrap, "legacy").values())
    with c.zookeeper() as z:
        wait_until(lambda: z.exists("/admin/reassign_partitions") is None, 10,
                   "the controller to delete the reassignment znode")
    assert len(consume_all(c.brokers[1].bootstrap, "legacy", 200, partitions=2)) == 200
    wait_until(lambda: not (c.brokers[0].log_dir / "legacy-0").exists(), 20, "the removed replica's log to go")
