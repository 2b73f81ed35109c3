"""The log-dir half of `odradek reassign-partitions` (kafka-reassign-partitions.sh with `log_dirs` in its JSON
file): start each replica's move to its log dir with AlterReplicaLogDirs at the broker holding it, retrying
while the replica does not exist there yet (the partition reassignment is still creating it), and report
the moves' states from DescribeLogDirs, in Kafka's words."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from kafka.protocol.admin import AlterReplicaLogDirsRequest, DescribeLogDirsRequest

from odradek.admin_client.errors import CliError
from odradek.cli.broker_connection import AdminConnection, BrokerConnection
from odradek.protocol.errors import ErrorCode

Replica = tuple[str, int, int]  # topic, partition, broker id
ALTER_VERSION = 1
DESCRIBE_VERSION = 1
RETRY_S = 0.1  # Kafka's tool retries every 100 ms


def replica_str(r: Replica) -> str:
    """Kafka's TopicPartitionReplica.toString."""
    return f"{r[0]}-{r[1]}-{r[2]}"


def _order(r: Replica) -> tuple[int, str, int]:
    return r[2], r[0], r[1]  # broker, then topic and partition, as Kafka sorts replicas


class Brokers:
    """One connection per broker, found through the cluster metadata."""

    def __init__(self, admin: AdminConnection) -> None:
        self._admin = admin
        self._conns: dict[int, BrokerConnection] = {}

    def __enter__(self) -> Brokers:
        return self

    def __exit__(self, *exc: object) -> None:
        for c in self._conns.values():
            c.close()
        self._conns.clear()

    def request(self, broker_id: int, request: Any, version: int) -> Any:
        conn = self._conns.get(broker_id)
        if conn is None:
            nodes = {b.node_id: b for b in self._admin.metadata([]).brokers}
            node = nodes.get(broker_id)
            if node is None:
                raise CliError(f"Error: broker {broker_id} is not in the cluster")
            try:
                conn = self._admin.open(node.host, node.port)
            except OSError as exc:
                raise CliError(f"Error: cannot connect to broker {broker_id} at {node.host}:{node.port}: "
                               f"{exc.strerror or exc}") from None
            self._conns[broker_id] = conn
        return conn.request(request, version)


def alter(brokers: Brokers, targets: dict[Replica, str]) -> dict[Replica, int]:
    """AlterReplicaLogDirs at each broker: the error code of each replica."""
    by_broker: dict[int, dict[str, dict[str, list[int]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for (topic, partition, broker), d in targets.items():
        by_broker[broker][d][topic].append(partition)
    r = AlterReplicaLogDirsRequest
    codes: dict[Replica, int] = {}
    for broker, dirs in sorted(by_broker.items()):
        req = r(dirs=[r.AlterReplicaLogDir(path=d, topics=[
            r.AlterReplicaLogDir.AlterReplicaLogDirTopic(name=t, partitions=ps) for t, ps in topics.items()])
            for d, topics in dirs.items()])
        resp = brokers.request(broker, req, ALTER_VERSION)
        for t in resp.results:
            for p in t.partitions:
                codes[(t.topic_name, p.partition_index, broker)] = p.error_code
    return codes


def execute_moves(admin: AdminConnection, targets: dict[Replica, str], timeout_ms: int,
                  sleep: Callable[[float], None] = time.sleep) -> None:
    """Kafka's executeMoves: ask until every move has started or `timeout_ms` passed."""
    pending = dict(targets)
    deadline = time.monotonic() + timeout_ms / 1000
    with Brokers(admin) as brokers:
        while True:
            codes = alter(brokers, pending)
            started = []
            for replica in sorted(pending, key=_order):
                code = codes.get(replica, ErrorCode.REPLICA_NOT_AVAILABLE)
                if code == ErrorCode.NONE:
                    started.append(replica)
                elif code != ErrorCode.REPLICA_NOT_AVAILABLE:  # not there yet is fine: asked again
                    raise CliError(f"Error: Failed to alter dir for {replica_str(replica)}: {_name(code)}")
            for replica in started:
                print(f"Successfully started moving log directory to {pending[replica]} for replica "
                      f"{replica[0]}-{replica[1]} with broker {replica[2]} ")
                del pending[replica]
            if not pending:
                return
            if time.monotonic() >= deadline:
                raise CliError(f"Timed out before log directory move{'' if len(pending) == 1 else 's'} could be "
                               f"started for: {','.join(replica_str(r) for r in sorted(pending, key=_order))}")
            sleep(RETRY_S)


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


def replica_dirs(admin: AdminConnection, replicas: list[Replica]) -> dict[Replica, tuple[str | None, str | None]]:
    """(current log dir, future log dir) of each replica, from DescribeLogDirs at its broker."""
    out: dict[Replica, tuple[str | None, str | None]] = {r: (None, None) for r in replicas}
    by_broker: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for topic, partition, broker in replicas:
        by_broker[broker][topic].append(partition)
    d = DescribeLogDirsRequest
    with Brokers(admin) as brokers:
        for broker, topics in sorted(by_broker.items()):
            req = d(topics=[d.DescribableLogDirTopic(topic=t, partitions=ps) for t, ps in topics.items()])
            resp = brokers.request(broker, req, DESCRIBE_VERSION)
            for result in resp.results:
                if result.error_code:
                    continue
                for t in result.topics:
                    for p in t.partitions:
                        key = (t.name, p.partition_index, broker)
                        if key not in out:
                            continue
                        current, future = out[key]
                        if p.is_future_key:
                            out[key] = (current, result.log_dir)
                        else:
                            out[key] = (result.log_dir, future)
    return out


def verify_lines(targets: dict[Replica, str], dirs: dict[Replica, tuple[str | None, str | None]]) -> list[str]:
    """Kafka's replicaMoveStatesToString."""
    lines = []
    for replica in sorted(targets, key=_order):
        topic, partition, broker = replica
        target = targets[replica]
        current, future = dirs.get(replica, (None, None))
        if current is None:
            lines.append(f"Partition {topic}-{partition} is not found in any live log dir on broker {broker}. "
                         "There is likely an offline log directory on the broker.")
        elif future is not None:
            if future == target:
                lines.append(f"Reassignment of replica {replica_str(replica)} is still in progress.")
            else:
                lines.append(f"Partition {topic}-{partition} on broker {broker} is being moved to log dir "
                             f"{future} instead of {target}.")
        elif current == target:
            lines.append(f"Reassignment of replica {replica_str(replica)} completed successfully.")
        else:
            lines.append(f"Partition {topic}-{partition} on broker {broker} is not being moved from log dir "
                         f"{current} to {target}.")
    return lines
