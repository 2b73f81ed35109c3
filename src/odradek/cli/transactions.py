"""`odradek transactions`: Kafka's kafka-transactions.sh. Lists and describes transactions through their
coordinators, shows a partition's active producers, finds hanging transactions (open on a partition
while their coordinator no longer has them, or open past the maximum timeout) and aborts one by writing
its abort marker to the partition, as Kafka's tool does.

    odradek transactions --bootstrap-server 127.0.0.1:9092 list
    odradek transactions --bootstrap-server 127.0.0.1:9092 describe --transactional-id orders-1
    odradek transactions --bootstrap-server 127.0.0.1:9092 describe-producers --topic t --partition 0
    odradek transactions --bootstrap-server 127.0.0.1:9092 find-hanging --broker-id 0
    odradek transactions --bootstrap-server 127.0.0.1:9092 abort --topic t --partition 0 --start-offset 42
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

from odradek.cli.common import ArgParser, CliError, UsageError, add_bootstrap_flags, bootstrap_of, run_tool

REQUEST_TIMEOUT_S = 30.0
KEY_TYPE_TRANSACTION = 1
DEFAULT_MAX_TXN_TIMEOUT_MIN = 15  # transaction.max.timeout.ms's default, in minutes


def build_parser() -> ArgParser:
    p = ArgParser("transactions", __doc__ or "")
    add_bootstrap_flags(p)
    p.add_argument("--command-config", help="a client properties file (accepted; the listeners are plaintext)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def command(name: str, text: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = sub.add_parser(name, prog=f"transactions {name}", help=text,
                                                         description=text)
        return parser

    command("list", "list the transactions of every broker's coordinator")
    d = command("describe", "describe one transaction (from its coordinator)")
    d.add_argument("--transactional-id", required=True)
    dp = command("describe-producers", "the active producers of a partition")
    dp.add_argument("--topic", required=True)
    dp.add_argument("--partition", required=True, type=int)
    dp.add_argument("--broker-id", type=int, help="ask this replica instead of the leader")
    fh = command("find-hanging", "transactions open on a broker's partitions that no coordinator will complete")
    fh.add_argument("--broker-id", required=True, type=int)
    fh.add_argument("--max-transaction-timeout", type=int, default=DEFAULT_MAX_TXN_TIMEOUT_MIN, metavar="MIN",
                    help=f"transactions open longer are hanging (default {DEFAULT_MAX_TXN_TIMEOUT_MIN})")
    ab = command("abort", "write an abort marker for a hanging transaction")
    ab.add_argument("--topic", required=True)
    ab.add_argument("--partition", required=True, type=int)
    ab.add_argument("--start-offset", type=int, help="the transaction's first offset (finds its producer)")
    ab.add_argument("--producer-id", type=int)
    ab.add_argument("--producer-epoch", type=int)
    ab.add_argument("--coordinator-epoch", type=int)
    return p


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns padded to their widest cell, as Kafka's tools print tables."""
    cells = [list(map(str, headers))] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "\n".join("\t".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells)


class Cluster:
    """Protocol connections to the brokers of one cluster, opened on demand."""

    def __init__(self, bootstrap: str) -> None:
        from odradek.cli.broker_connection import AdminConnection

        self.admin = AdminConnection(bootstrap, REQUEST_TIMEOUT_S, "transactions")
        self._brokers: dict[int, Any] = {}
        md = self.admin.metadata(None)
        self.nodes = {b.node_id: b for b in md.brokers}
        self.leaders = {(t.name, p.partition_index): p.leader_id for t in md.topics for p in t.partitions}

    def close(self) -> None:
        for c in self._brokers.values():
            c.close()
        self.admin.close()

    def broker(self, broker_id: int) -> Any:
        from odradek.cli.broker_connection import BrokerConnection

        if broker_id not in self._brokers:
            node = self.nodes.get(broker_id)
            if node is None:
                raise CliError(f"Error: broker {broker_id} is not in the cluster "
                               f"(brokers: {','.join(map(str, sorted(self.nodes)))})")
            try:
                self._brokers[broker_id] = BrokerConnection(node.host, node.port, "transactions", REQUEST_TIMEOUT_S)
            except OSError as exc:
                raise CliError(f"Error: cannot connect to broker {broker_id} at {node.host}:{node.port}: "
                               f"{exc.strerror or exc}") from None
        return self._brokers[broker_id]

    def coordinator(self, transactional_id: str) -> int:
        from kafka.protocol.metadata import FindCoordinatorRequest

        resp = self.admin.any_broker().request(
            FindCoordinatorRequest(key=transactional_id, key_type=KEY_TYPE_TRANSACTION), 1)
        if resp.error_code:
            raise CliError(f"Error: no coordinator for transactional id {transactional_id}: {_error(resp.error_code)}")
        return int(resp.node_id)

    def leader(self, topic: str, partition: int) -> int:
        leader = self.leaders.get((topic, partition))
        if leader is None:
            raise CliError(f"Error: topic partition {topic}-{partition} does not exist")
        if leader < 0:
            raise CliError(f"Error: topic partition {topic}-{partition} has no leader")
        return leader


def _error(code: int) -> str:
    from odradek.protocol.errors import ErrorCode

    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


# ---- list / describe --------------------------------------------------------------------------------


def list_transactions(cluster: Cluster) -> list[tuple[str, int, int, str]]:
    from kafka.protocol.admin.transactions import ListTransactionsRequest

    out: list[tuple[str, int, int, str]] = []
    for broker_id in sorted(cluster.nodes):
        resp = cluster.broker(broker_id).request(
            ListTransactionsRequest(state_filters=[], producer_id_filters=[], duration_filter=-1), 1)
        if resp.error_code:
            raise CliError(f"Error: broker {broker_id} could not list transactions: {_error(resp.error_code)}")
        out.extend((t.transactional_id, broker_id, t.producer_id, t.transaction_state)
                   for t in resp.transaction_states)
    return sorted(out)


def describe(cluster: Cluster, transactional_id: str, now_ms: int) -> list[object]:
    from kafka.protocol.admin.transactions import DescribeTransactionsRequest

    coordinator = cluster.coordinator(transactional_id)
    resp = cluster.broker(coordinator).request(DescribeTransactionsRequest(transactional_ids=[transactional_id]), 0)
    st = resp.transaction_states[0]
    if st.error_code:
        raise CliError(f"Error: could not describe transactional id {transactional_id}: {_error(st.error_code)}")
    partitions = ",".join(f"{t.topic}-{p}" for t in st.topics for p in t.partitions)
    started = st.transaction_start_time_ms
    return [coordinator, st.transactional_id, st.producer_id, st.producer_epoch, st.transaction_state,
            st.transaction_timeout_ms, started if started >= 0 else "None",
            now_ms - started if started >= 0 else "None", partitions]


DESCRIBE_HEADERS = ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                    "TopicPartitions")


# ---- producers -------------------------------------------------------------------------------------


def producers(cluster: Cluster, topic: str, partition: int, broker_id: int | None = None) -> list[Any]:
    from kafka.protocol.admin.transactions import DescribeProducersRequest

    target = broker_id if broker_id is not None else cluster.leader(topic, partition)
    resp = cluster.broker(target).request(DescribeProducersRequest(topics=[
        DescribeProducersRequest.TopicRequest(name=topic, partition_indexes=[partition])]), 0)
    part = resp.topics[0].partitions[0]
    if part.error_code:
        raise CliError(f"Error: could not describe the producers of {topic}-{partition}: {_error(part.error_code)}")
    return list(part.active_producers)


PRODUCER_HEADERS = ("ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                    "CurrentTransactionStartOffset")


def producer_row(p: Any) -> list[object]:
    start = p.current_txn_start_offset
    return [p.producer_id, p.producer_epoch, p.coordinator_epoch, p.last_sequence, p.last_timestamp,
            start if start >= 0 else "None"]


# ---- find-hanging / abort --------------------------------------------------------------------------


HANGING_HEADERS = ("Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                   "LastTimestamp", "Duration(min)")


def find_hanging(cluster: Cluster, broker_id: int, max_timeout_min: int, now_ms: int) -> list[list[object]]:
    """Open transactions on the partitions `broker_id` leads whose producer id no coordinator has in an
    ongoing transaction, or that are open longer than the maximum transaction timeout."""
    ongoing = {pid for _tid, _c, pid, state in list_transactions(cluster) if state == "Ongoing"}
    rows = []
    for (topic, partition), leader in sorted(cluster.leaders.items()):
        if leader != broker_id:
            continue
        for p in producers(cluster, topic, partition, broker_id):
            if p.current_txn_start_offset < 0:
                continue
            minutes = (now_ms - p.last_timestamp) // 60000 if p.last_timestamp >= 0 else 0
            if p.producer_id not in ongoing or minutes > max_timeout_min:
                rows.append([topic, partition, p.producer_id, p.producer_epoch, p.coordinator_epoch,
                             p.current_txn_start_offset, p.last_timestamp, minutes])
    return rows


def abort(cluster: Cluster, topic: str, partition: int, producer_id: int, producer_epoch: int,
          coordinator_epoch: int) -> None:
    from kafka.protocol.producer import WriteTxnMarkersRequest

    marker = WriteTxnMarkersRequest.WritableTxnMarker
    req = WriteTxnMarkersRequest(markers=[marker(
        producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=False,
        topics=[marker.WritableTxnMarkerTopic(name=topic, partition_indexes=[partition])],
        coordinator_epoch=coordinator_epoch)])
    resp = cluster.broker(cluster.leader(topic, partition)).request(req, 1)
    code = resp.markers[0].topics[0].partitions[0].error_code
    if code:
        raise CliError(f"Error: aborting the transaction of producer {producer_id} on {topic}-{partition} "
                       f"failed: {_error(code)}")


def _abort_target(cluster: Cluster, opts: argparse.Namespace) -> tuple[int, int, int]:
    if opts.start_offset is not None:
        found = [p for p in producers(cluster, opts.topic, opts.partition)
                 if p.current_txn_start_offset == opts.start_offset]
        if not found:
            raise CliError(f"Error: no open transaction starts at offset {opts.start_offset} of "
                           f"{opts.topic}-{opts.partition}")
        p = found[0]
        # as Kafka's tool: the producer's epoch, and a coordinator epoch that cannot be fenced by an older one
        return p.producer_id, p.producer_epoch, max(p.coordinator_epoch, 0)
    if None in (opts.producer_id, opts.producer_epoch, opts.coordinator_epoch):
        raise UsageError("Error: abort needs --start-offset, or --producer-id, --producer-epoch and "
                         "--coordinator-epoch")
    return opts.producer_id, opts.producer_epoch, opts.coordinator_epoch


def execute(argv: list[str]) -> int:
    parser = build_parser()
    opts = parser.parse_args(argv)
    bootstrap = bootstrap_of(opts)
    if opts.command is None:
        raise UsageError("Error: a command is required: list, describe, describe-producers, find-hanging or abort")
    cluster = Cluster(bootstrap)
    now = int(time.time() * 1000)
    try:
        if opts.command == "list":
            print(table(("TransactionalId", "Coordinator", "ProducerId", "TransactionState"),
                        list_transactions(cluster)))
        elif opts.command == "describe":
            print(table(DESCRIBE_HEADERS, [describe(cluster, opts.transactional_id, now)]))
        elif opts.command == "describe-producers":
            rows = [producer_row(p) for p in producers(cluster, opts.topic, opts.partition, opts.broker_id)]
            print(table(PRODUCER_HEADERS, rows))
        elif opts.command == "find-hanging":
            print(table(HANGING_HEADERS, find_hanging(cluster, opts.broker_id, opts.max_transaction_timeout, now)))
        else:
            pid, epoch, coordinator_epoch = _abort_target(cluster, opts)
            abort(cluster, opts.topic, opts.partition, pid, epoch, coordinator_epoch)
    finally:
        cluster.close()
    return 0


def main(argv: list[str]) -> int:
    return run_tool(lambda: execute(argv))
