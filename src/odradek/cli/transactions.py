"""`odradek transactions`: Kafka's kafka-transactions.sh. Analyses the transactional state of producers in
the cluster and recovers from hanging transactions, with Kafka's sub-commands, flags, tables and messages:

    odradek transactions --bootstrap-server 127.0.0.1:9092 list [--duration-filter MS]
    odradek transactions --bootstrap-server 127.0.0.1:9092 describe --transactional-id orders-1
    odradek transactions --bootstrap-server 127.0.0.1:9092 describe-producers --topic t --partition 0 [--broker-id 1]
    odradek transactions --bootstrap-server 127.0.0.1:9092 find-hanging --broker-id 0 [--max-transaction-timeout 15]
    odradek transactions --bootstrap-server 127.0.0.1:9092 abort --topic t --partition 0 --start-offset 42
    odradek transactions --bootstrap-server 127.0.0.1:9092 abort --topic t --partition 0 \\
        --producer-id 7 --producer-epoch 0 --coordinator-epoch 0

As Kafka's admin client does, `list` asks every broker (ListTransactions), `describe` asks the coordinator
that FindCoordinator names, `describe-producers` the partition leader (or --broker-id) and `abort` writes
the abort marker (WriteTxnMarkers) at the partition leader. A failed request prints Kafka's one line
("Failed to ...: cause. Enable debug logging for additional detail.") and exits with 1.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, TypeVar, cast

from odradek.admin_client import errors
from odradek.admin_client.command import ArgParser, run_tool, subcommands
from odradek.admin_client.connect import bootstrap_of, read_properties_file
from odradek.admin_client.errors import CliError, UsageError
from odradek.java_text import java_to_string

if TYPE_CHECKING:
    from odradek.protocol.client_security import ClientSecurity

REQUEST_TIMEOUT_S = 30.0
RETRY_DEADLINE_S = 15.0  # how long retriable errors (no leader yet, coordinator loading) are retried
RETRY_BACKOFF_S = 0.3
KEY_TYPE_TRANSACTION = 1
METADATA_VERSION = 4
MAX_BATCH_SIZE = 500  # partitions per DescribeProducers request in find-hanging, as Kafka
DEFAULT_MAX_TXN_TIMEOUT_MIN = 15
CLIENT_ID = "transactions-tool"

LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS = ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                    "TopicPartitions")
PRODUCER_HEADERS = ("ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                    "CurrentTransactionStartOffset")
HANGING_HEADERS = ("Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                   "LastTimestamp", "Duration(min)")

# Kafka's TransactionState names; anything else a broker sends is shown as Unknown, as Kafka's parse does
TXN_STATES = frozenset({"Ongoing", "PrepareAbort", "PrepareCommit", "CompleteAbort", "CompleteCommit", "Empty",
                        "PrepareEpochFence"})

# error codes the tool reacts to, and Kafka's default message of each (Errors.message())
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
NOT_LEADER_OR_FOLLOWER = 6
REPLICA_NOT_AVAILABLE = 9
BROKER_NOT_AVAILABLE = 8
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
INVALID_TOPIC_EXCEPTION = 17
TOPIC_AUTHORIZATION_FAILED = 29
CLUSTER_AUTHORIZATION_FAILED = 31
INVALID_PRODUCER_EPOCH = 47
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
TRANSACTION_COORDINATOR_FENCED = 52
TRANSACTIONAL_ID_NOT_FOUND = 105
ERROR_MESSAGES = {
    -1: "The server experienced an unexpected error when processing the request.",
    UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    LEADER_NOT_AVAILABLE: "There is no leader for this topic-partition as we are in the middle of a leadership "
                          "election.",
    NOT_LEADER_OR_FOLLOWER: "For requests intended only for the leader, this error indicates that the broker is "
                            "not the current leader. For requests intended for any replica, this error indicates "
                            "that the broker is not a replica of the topic partition.",
    COORDINATOR_LOAD_IN_PROGRESS: "The coordinator is loading and hence can't process requests.",
    COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    NOT_COORDINATOR: "This is not the correct coordinator.",
    INVALID_TOPIC_EXCEPTION: "The request attempted to perform an operation on an invalid topic.",
    CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    35: "The version of API is not supported.",
    42: "This most likely occurs because of a request being malformed by the client library or the message "
        "was sent to an incompatible broker. See the broker logs for more details.",
    INVALID_PRODUCER_EPOCH: "Producer attempted to produce with an old epoch.",
    48: "The producer attempted a transactional operation in an invalid state.",
    TRANSACTIONAL_ID_NOT_FOUND: "The transactionalId could not be found.",
}

T = TypeVar("T")


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:  # Java's TopicPartition.toString
        return f"{self.topic}-{self.partition}"


class ProducerState(NamedTuple):
    """One active producer of a partition (DescribeProducers), -1 standing for Kafka's empty optionals."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


class Listing(NamedTuple):
    """One transaction of a coordinator's ListTransactions answer."""

    transactional_id: str
    producer_id: int
    state: str


class Description(NamedTuple):
    """A coordinator's DescribeTransactions answer for one transactional id."""

    coordinator_id: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    timeout_ms: int
    start_time_ms: int  # -1: no transaction in progress
    partitions: frozenset[TopicPartition]


class AbortSpec(NamedTuple):
    """Kafka's AbortTransactionSpec: the marker to write."""

    tp: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int

    def __str__(self) -> str:
        return java_to_string("AbortTransactionSpec", topicPartition=self.tp, producerId=self.producer_id,
                              producerEpoch=self.producer_epoch, coordinatorEpoch=self.coordinator_epoch)


class RequestFailed(Exception):
    """A request answered with an error: the cause line of Kafka's `printErrorAndExit(message, cause)`."""


# ---- output (pure) -------------------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """Kafka's ToolsUtils.prettyPrintTable: every cell, the last one too, left-aligned in the width of its
    column's widest cell and followed by a tab; the header line first."""
    lines = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(headers))]
    return "\n".join("".join(cell.ljust(width) + "\t" for cell, width in zip(line, widths, strict=True))
                     for line in lines)


def failure(message: str, cause: str) -> str:
    """Kafka's one-line report of a failed admin call (without a doubled full stop)."""
    return f"{message}: {cause.rstrip('.')}. Enable debug logging for additional detail."


def error_message(code: int) -> str:
    """Kafka's default message for an error code."""
    return errors.error_message(code, ERROR_MESSAGES)


def state_name(state: str) -> str:
    return state if state in TXN_STATES else "Unknown"


def optional(value: int) -> str:
    """A value Kafka holds as an Optional: 'None' when absent (negative)."""
    return str(value) if value >= 0 else "None"


def list_rows(by_broker: Mapping[int, Sequence[Listing]]) -> list[list[object]]:
    """`list`: the transactions of each coordinator, brokers in id order."""
    return [[t.transactional_id, broker_id, t.producer_id, state_name(t.state)]
            for broker_id in sorted(by_broker) for t in by_broker[broker_id]]


def describe_row(d: Description, now_ms: int) -> list[object]:
    started = d.start_time_ms >= 0
    return [d.coordinator_id, d.transactional_id, d.producer_id, d.producer_epoch, state_name(d.state),
            d.timeout_ms, d.start_time_ms if started else "None", now_ms - d.start_time_ms if started else "None",
            ",".join(str(tp) for tp in sorted(d.partitions))]


def producer_row(p: ProducerState) -> list[object]:
    return [p.producer_id, p.producer_epoch, p.coordinator_epoch if p.coordinator_epoch >= 0 else -1,
            p.last_sequence, p.last_timestamp, optional(p.current_txn_start_offset)]


def open_transactions(producers: Mapping[TopicPartition, Sequence[ProducerState]], now_ms: int,
                      max_timeout_ms: int) -> list[tuple[TopicPartition, ProducerState]]:
    """find-hanging's candidates: producers with an open transaction (a current start offset) that have
    not written for longer than the maximum transaction timeout."""
    return [(tp, p) for tp, states in producers.items() for p in states
            if p.current_txn_start_offset >= 0 and now_ms - p.last_timestamp > max_timeout_ms]


def hanging_transactions(candidates: Sequence[tuple[TopicPartition, ProducerState]],
                         transactional_ids: Mapping[int, str],
                         descriptions: Mapping[str, Description | None]) -> list[tuple[TopicPartition, ProducerState]]:
    """The candidates no coordinator will complete: their producer id belongs to no transactional id, the
    transactional id is unknown to its coordinator, or the coordinator's transaction does not include the
    partition (it names every partition of an ongoing transaction and those still waiting for markers)."""
    out = []
    for tp, p in candidates:
        tid = transactional_ids.get(p.producer_id)
        description = descriptions.get(tid) if tid is not None else None
        if description is None or tp not in description.partitions:
            out.append((tp, p))
    return out


def hanging_row(tp: TopicPartition, p: ProducerState, now_ms: int) -> list[object]:
    return [tp.topic, tp.partition, p.producer_id, p.producer_epoch,
            p.coordinator_epoch if p.coordinator_epoch >= 0 else -1,
            p.current_txn_start_offset if p.current_txn_start_offset >= 0 else -1, p.last_timestamp,
            (now_ms - p.last_timestamp) // 60_000]


def abort_spec_for(tp: TopicPartition, producers: Sequence[ProducerState], start_offset: int) -> AbortSpec | None:
    """The marker that aborts the transaction starting at `start_offset`, as Kafka's tool builds it: the
    producer's id and epoch, and its coordinator epoch or 0 when it has none."""
    for p in producers:
        if p.current_txn_start_offset >= 0 and p.current_txn_start_offset == start_offset:
            return AbortSpec(tp, p.producer_id, p.producer_epoch, max(p.coordinator_epoch, 0))
    return None


# ---- the cluster -------------------------------------------------------------------------------------


def _retrying(call: Callable[[], T | None], deadline_s: float = RETRY_DEADLINE_S) -> T | None:
    """`call()` until it returns something other than None, for at most `deadline_s` (then None)."""
    deadline = time.monotonic() + deadline_s
    while True:
        result = call()
        if result is not None or time.monotonic() >= deadline:
            return result
        time.sleep(RETRY_BACKOFF_S)


class BrokerConnections:
    """Blocking protocol connections to one cluster's brokers, opened on demand."""

    def __init__(self, bootstrap: str, client_id: str, security: ClientSecurity) -> None:
        from odradek.cli.broker_connection import AdminConnection

        self.client_id = client_id
        self.admin = AdminConnection(bootstrap, REQUEST_TIMEOUT_S, client_id, security=security)
        self._conns: dict[tuple[str, int], Any] = {}
        self.nodes: dict[int, Any] = {}

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self.admin.close()

    def metadata(self, topics: list[str] | None) -> Any:
        """Metadata v4, the first version that can ask not to create missing topics."""
        from kafka.protocol.metadata import MetadataRequest

        md = self.admin.any_broker().request(MetadataRequest(
            topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=False), METADATA_VERSION)
        self.nodes = {b.node_id: b for b in md.brokers}
        return md

    def connection(self, host: str, port: int, what: str) -> Any:
        if (host, port) not in self._conns:
            try:
                self._conns[host, port] = self.admin.open(host, port)
            except OSError as exc:
                raise CliError(f"Error: cannot connect to {what} at {host}:{port}: {exc.strerror or exc}") from None
        return self._conns[host, port]

    def broker(self, broker_id: int) -> Any:
        if broker_id not in self.nodes:
            self.metadata([])
        node = self.nodes.get(broker_id)
        if node is None:
            raise RequestFailed(f"Broker {broker_id} is not in the cluster (brokers: "
                                f"{','.join(map(str, sorted(self.nodes)))})")
        return self.connection(node.host, node.port, f"broker {broker_id}")

    def broker_ids(self) -> list[int]:
        self.metadata([])
        return sorted(self.nodes)

    # -- partitions

    def partitions(self, topics: list[str] | None) -> dict[TopicPartition, Any]:
        """The partitions of `topics` (all topics when None) with their metadata; an unknown topic fails."""
        md = self.metadata(topics)
        out: dict[TopicPartition, Any] = {}
        for t in md.topics:
            if t.error_code:
                cause = error_message(t.error_code)
                if t.error_code == UNKNOWN_TOPIC_OR_PARTITION:
                    cause = f"The topic '{t.name}' does not exist"  # UnknownTopicOrPartitionException's wording
                raise RequestFailed(cause)
            for p in t.partitions:
                out[TopicPartition(t.name, p.partition_index)] = p
        return out

    def leader(self, tp: TopicPartition) -> int:
        """The partition's leader, waiting (bounded) while it has none."""
        def attempt() -> int | None:
            part = self.partitions([tp.topic]).get(tp)
            if part is None:
                raise RequestFailed(error_message(UNKNOWN_TOPIC_OR_PARTITION))
            return int(part.leader_id) if part.leader_id >= 0 else None

        leader = _retrying(attempt)
        if leader is None:
            raise RequestFailed(error_message(LEADER_NOT_AVAILABLE))
        return leader

    # -- requests

    def list_transactions(self, broker_id: int, producer_ids: Iterable[int] = (),
                          duration_ms: int | None = None) -> list[Listing]:
        from kafka.protocol.admin.transactions import ListTransactionsRequest

        request = ListTransactionsRequest(state_filters=[], producer_id_filters=sorted(producer_ids),
                                          duration_filter=-1 if duration_ms is None else duration_ms)

        def attempt() -> Any:
            resp = self.broker(broker_id).request(request, 1)
            return None if resp.error_code == COORDINATOR_LOAD_IN_PROGRESS else resp

        resp = _retrying(attempt)
        if resp is None:
            raise RequestFailed(f"ListTransactions request sent to broker {broker_id} failed because the "
                                "coordinator is still loading")
        if resp.error_code == COORDINATOR_NOT_AVAILABLE:
            raise RequestFailed(f"ListTransactions request sent to broker {broker_id} failed because the "
                                "coordinator is shutting down")
        if resp.error_code:
            raise RequestFailed(f"ListTransactions request sent to broker {broker_id} failed with an unexpected "
                                f"exception ({error_message(resp.error_code)})")
        return [Listing(t.transactional_id, t.producer_id, t.transaction_state) for t in resp.transaction_states]

    def coordinator(self, transactional_id: str) -> tuple[int, Any]:
        """FindCoordinator (key type 1): the coordinator's id and a connection to it."""
        from kafka.protocol.metadata import FindCoordinatorRequest

        request = FindCoordinatorRequest(key=transactional_id, key_type=KEY_TYPE_TRANSACTION)

        def attempt() -> Any:
            resp = self.admin.any_broker().request(request, 1)
            return None if resp.error_code in (COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS) else resp

        resp = _retrying(attempt)
        if resp is None:
            raise RequestFailed(error_message(COORDINATOR_NOT_AVAILABLE))
        if resp.error_code:
            raise RequestFailed(resp.error_message or error_message(resp.error_code))
        return int(resp.node_id), self.connection(resp.host, resp.port, f"coordinator {resp.node_id}")

    def describe_transaction(self, transactional_id: str) -> Description:
        """DescribeTransactions at the transactional id's coordinator (found again when it moved)."""
        from kafka.protocol.admin.transactions import DescribeTransactionsRequest

        def attempt() -> Any:
            coordinator_id, conn = self.coordinator(transactional_id)
            resp = conn.request(DescribeTransactionsRequest(transactional_ids=[transactional_id]), 0)
            state = next((s for s in resp.transaction_states if s.transactional_id == transactional_id), None)
            if state is None:
                raise RequestFailed(f"DescribeTransactions response has no transactionalId `{transactional_id}`")
            if state.error_code in (COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE):
                return None
            return coordinator_id, state

        found = _retrying(attempt)
        if found is None:
            raise RequestFailed(error_message(COORDINATOR_NOT_AVAILABLE))
        coordinator_id, st = found
        prefix = f"DescribeTransactions request for transactionalId `{transactional_id}`"
        if st.error_code == TRANSACTIONAL_ID_NOT_FOUND:
            raise TransactionalIdNotFound(f"{prefix} failed because the ID could not be found")
        if st.error_code == TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            raise RequestFailed(f"{prefix} failed due to authorization failure")
        if st.error_code:
            raise RequestFailed(f"{prefix} failed due to unexpected error ({error_message(st.error_code)})")
        return Description(coordinator_id, transactional_id, st.producer_id, st.producer_epoch,
                           st.transaction_state, st.transaction_timeout_ms, st.transaction_start_time_ms,
                           frozenset(TopicPartition(t.topic, p) for t in st.topics for p in t.partitions))

    def describe_producers(self, broker_id: int,
                           tps: Sequence[TopicPartition]) -> dict[TopicPartition, list[ProducerState] | int]:
        """DescribeProducers at one broker: each partition's producers, or its error code."""
        from kafka.protocol.admin.transactions import DescribeProducersRequest

        by_topic: dict[str, list[int]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        resp = self.broker(broker_id).request(DescribeProducersRequest(topics=[
            DescribeProducersRequest.TopicRequest(name=t, partition_indexes=ps) for t, ps in by_topic.items()]), 0)
        out: dict[TopicPartition, list[ProducerState] | int] = {}
        for t in resp.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                out[tp] = p.error_code or [
                    ProducerState(s.producer_id, s.producer_epoch, s.last_sequence, s.last_timestamp,
                                  s.coordinator_epoch, s.current_txn_start_offset)
                    for s in p.active_producers]
        return out

    def partition_producers(self, tp: TopicPartition, broker_id: int | None = None) -> list[ProducerState]:
        """One partition's producers from `broker_id`, or from its leader (found again when it moved)."""
        def attempt() -> list[ProducerState] | int | None:
            target = broker_id if broker_id is not None else self.leader(tp)
            result = self.describe_producers(target, [tp]).get(tp, UNKNOWN_TOPIC_OR_PARTITION)
            if broker_id is None and result in (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE):
                return None  # retried at the new leader
            return result

        result = cast("list[ProducerState] | int | None", _retrying(attempt))
        if result is None:
            raise RequestFailed(error_message(NOT_LEADER_OR_FOLLOWER))
        if isinstance(result, int):
            raise RequestFailed(producers_error(tp, result, broker_id))
        return result

    def write_abort_marker(self, spec: AbortSpec) -> None:
        """WriteTxnMarkers v1 with one abort marker, at the partition's leader (found again when it moved)."""
        from kafka.protocol.producer import WriteTxnMarkersRequest

        marker = WriteTxnMarkersRequest.WritableTxnMarker
        request = WriteTxnMarkersRequest(markers=[marker(
            producer_id=spec.producer_id, producer_epoch=spec.producer_epoch, transaction_result=False,
            topics=[marker.WritableTxnMarkerTopic(name=spec.tp.topic, partition_indexes=[spec.tp.partition])],
            coordinator_epoch=spec.coordinator_epoch)])

        def attempt() -> int | None:
            resp = self.broker(self.leader(spec.tp)).request(request, 1)
            try:
                (m,) = resp.markers
                (t,) = m.topics
                (p,) = t.partitions
            except ValueError:
                raise RequestFailed("WriteTxnMarkers response included unexpected entries") from None
            if m.producer_id != spec.producer_id or t.name != spec.tp.topic or p.partition_index != spec.tp.partition:
                raise RequestFailed("WriteTxnMarkers response included unexpected entries")
            if p.error_code in (NOT_LEADER_OR_FOLLOWER, REPLICA_NOT_AVAILABLE, BROKER_NOT_AVAILABLE,
                                UNKNOWN_TOPIC_OR_PARTITION):
                return None
            return int(p.error_code)

        code = _retrying(attempt)
        if code is None:
            code = NOT_LEADER_OR_FOLLOWER
        if code:
            raise RequestFailed(abort_error(spec, code))


class TransactionalIdNotFound(RequestFailed):
    """The coordinator does not know the transactional id."""


def producers_error(tp: TopicPartition, code: int, broker_id: int | None) -> str:
    """DescribeProducers' per-partition error in the words of Kafka's DescribeProducersHandler."""
    if code == NOT_LEADER_OR_FOLLOWER and broker_id is not None:
        return f"Failed to describe active producers for partition {tp} on brokerId {broker_id}"
    if code == INVALID_TOPIC_EXCEPTION:
        return f"Failed to fetch metadata for partition {tp} due to invalid topic error: {error_message(code)}"
    if code == TOPIC_AUTHORIZATION_FAILED:
        return (f"Failed to describe active producers for partition {tp} due to authorization failure on topic "
                f"`{tp.topic}`")
    if code == UNKNOWN_TOPIC_OR_PARTITION:
        return error_message(code)
    return f"Failed to describe active producers for partition {tp} due to unexpected error"


def abort_error(spec: AbortSpec, code: int) -> str:
    """WriteTxnMarkers' error in the words of Kafka's AbortTransactionHandler."""
    if code == CLUSTER_AUTHORIZATION_FAILED:
        why = "due to cluster authorization error"
    elif code == INVALID_PRODUCER_EPOCH:
        why = "due an invalid producer epoch"
    elif code == TRANSACTION_COORDINATOR_FENCED:
        why = f"since the provided coordinator epoch {spec.coordinator_epoch} has been fenced by the active coordinator"
    else:
        why = f"due to unexpected error: {error_message(code)}"
    return f"WriteTxnMarkers request with {spec} failed {why}"


# ---- the commands ------------------------------------------------------------------------------------


def fail(message: str, cause: str | None = None) -> NoReturn:
    raise CliError(message if cause is None else failure(message, cause))


def now_ms() -> int:
    return int(time.time() * 1000)


def cmd_list(cluster: BrokerConnections, opts: argparse.Namespace) -> None:
    try:
        by_broker = {b: cluster.list_transactions(b, duration_ms=opts.duration_filter) for b in cluster.broker_ids()}
    except RequestFailed as exc:
        fail("Failed to list transactions", str(exc))
    print(table(LIST_HEADERS, list_rows(by_broker)))


def cmd_describe(cluster: BrokerConnections, opts: argparse.Namespace) -> None:
    tid = opts.transactional_id
    try:
        description = cluster.describe_transaction(tid)
    except RequestFailed as exc:
        fail(f"Failed to describe transaction state of transactional-id `{tid}`", str(exc))
    print(table(DESCRIBE_HEADERS, [describe_row(description, now_ms())]))


def cmd_describe_producers(cluster: BrokerConnections, opts: argparse.Namespace) -> None:
    tp = TopicPartition(opts.topic, opts.partition)
    try:
        producers = cluster.partition_producers(tp, opts.broker_id)
    except RequestFailed as exc:
        where = "leader" if opts.broker_id is None else f"broker {opts.broker_id}"
        fail(f"Failed to describe producers for partition {tp} on {where}", str(exc))
    print(table(PRODUCER_HEADERS, [producer_row(p) for p in producers]))


def _search_partitions(cluster: BrokerConnections, opts: argparse.Namespace) -> dict[TopicPartition, Any]:
    """find-hanging's partitions, with their metadata: --topic's (or every topic's, internal ones too),
    only those with a replica on --broker-id when given."""
    try:
        parts = cluster.partitions([opts.topic] if opts.topic is not None else None)
    except RequestFailed as exc:
        fail(f"Failed to describe {1 if opts.topic is not None else 'all'} topics", str(exc))
    if opts.partition is not None:
        tp = TopicPartition(opts.topic, opts.partition)
        return {tp: parts.get(tp)}
    return {tp: p for tp, p in sorted(parts.items())
            if opts.broker_id is None or opts.broker_id in p.replica_nodes}


def cmd_find_hanging(cluster: BrokerConnections, opts: argparse.Namespace) -> None:
    if opts.topic is None and opts.broker_id is None:
        fail("The `find-hanging` command requires either --topic or --broker-id to limit the scope of the search")
    if opts.partition is not None and opts.topic is None:
        fail("The --partition argument requires --topic to be provided")
    parts = _search_partitions(cluster, opts)
    # Odradek's brokers describe producers on partition leaders only, so each partition is asked of its
    # leader (--broker-id selects the partitions, as Kafka's tool does)
    by_leader: dict[int, list[TopicPartition]] = {}
    for tp, meta in parts.items():
        try:
            leader = int(meta.leader_id) if meta is not None and meta.leader_id >= 0 else cluster.leader(tp)
        except RequestFailed as exc:
            fail(f"Failed to describe producers for partition {tp}", str(exc))
        by_leader.setdefault(leader, []).append(tp)
    producers: dict[TopicPartition, list[ProducerState]] = {}
    where = f"broker {opts.broker_id}" if opts.broker_id is not None else "their leaders"
    for leader, tps in sorted(by_leader.items()):
        for i in range(0, len(tps), MAX_BATCH_SIZE):
            batch = tps[i:i + MAX_BATCH_SIZE]
            try:
                for tp, result in cluster.describe_producers(leader, batch).items():
                    if isinstance(result, int):
                        raise RequestFailed(producers_error(tp, result, None))
                    producers[tp] = result
            except RequestFailed as exc:
                fail(f"Failed to describe producers for {len(batch)} partitions on {where}", str(exc))
    now = now_ms()
    candidates = open_transactions(producers, now, opts.max_transaction_timeout * 60_000)
    hanging: list[tuple[TopicPartition, ProducerState]] = []
    if candidates:
        pids = {p.producer_id for _, p in candidates}
        try:
            tids = {t.producer_id: t.transactional_id for b in cluster.broker_ids()
                    for t in cluster.list_transactions(b, producer_ids=pids) if t.producer_id in pids}
        except RequestFailed as exc:
            fail(f"Failed to list transactions for {len(pids)} producers", str(exc))
        descriptions: dict[str, Description | None] = {}
        for tid in sorted(set(tids.values())):
            try:
                descriptions[tid] = cluster.describe_transaction(tid)
            except TransactionalIdNotFound:
                descriptions[tid] = None
            except RequestFailed as exc:
                fail(f"Failed to describe {len(set(tids.values()))} transactions", str(exc))
        hanging = hanging_transactions(candidates, tids, descriptions)
    print(table(HANGING_HEADERS, [hanging_row(tp, p, now) for tp, p in hanging]))


def cmd_abort(cluster: BrokerConnections, opts: argparse.Namespace) -> None:
    tp = TopicPartition(opts.topic, opts.partition)
    if opts.start_offset is None and opts.producer_id is None:
        fail("The transaction to abort must be identified either with --start-offset (for brokers on 3.0 or "
             "above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)")
    if opts.start_offset is None:
        if opts.producer_epoch is None:
            fail("Missing required argument --producer-epoch")
        if opts.coordinator_epoch is None:
            fail("Missing required argument --coordinator-epoch")
        # a transaction begun by a new producer id that hung before its first marker has no coordinator
        # epoch (-1 in DescribeProducers): 0 is at most any real one, as in Kafka's tool
        spec = AbortSpec(tp, opts.producer_id, opts.producer_epoch, max(opts.coordinator_epoch, 0))
    else:
        try:
            producers = cluster.partition_producers(tp)
        except RequestFailed as exc:
            fail(f"Failed to validate producer state for partition {tp}", str(exc))
        found = abort_spec_for(tp, producers, opts.start_offset)
        if found is None:
            fail(f"Could not find any open transactions starting at offset {opts.start_offset} on partition {tp}")
        spec = found
    try:
        cluster.write_abort_marker(spec)
    except RequestFailed as exc:
        fail(f"Failed to abort transaction {spec}", str(exc))


COMMANDS: dict[str, Callable[[BrokerConnections, argparse.Namespace], None]] = {
    "list": cmd_list,
    "describe": cmd_describe,
    "describe-producers": cmd_describe_producers,
    "abort": cmd_abort,
    "find-hanging": cmd_find_hanging,
}


# ---- flags -------------------------------------------------------------------------------------------



def _connection_flags(parser: argparse.ArgumentParser, default: Any = None) -> None:
    parser.add_argument("--bootstrap-server", metavar="host:port", default=default,
                        help="REQUIRED: hostname and port for the broker to connect to, in the form `host:port` "
                             "(multiple comma-separated entries can be given)")
    parser.add_argument("--command-config", metavar="FILE", default=default,
                        help="property file containing configs to be passed to admin client")


def build_parser() -> ArgParser:
    p = ArgParser("transactions", __doc__ or "")
    _connection_flags(p)
    command = subcommands(p, _connection_flags)

    ls = command("list", "list transactions")
    ls.add_argument("--duration-filter", type=int, metavar="MS",
                    help="Duration (in millis) to filter by: if < 0, all transactions will be returned; otherwise, "
                         "only transactions running longer than this duration will be returned")
    d = command("describe", "describe the state of an active transactional-id")
    d.add_argument("--transactional-id", required=True, help="transactional id")
    dp = command("describe-producers", "describe the states of active producers for a topic partition")
    dp.add_argument("--broker-id", type=int,
                    help="optional broker id to describe the producer state on a specific replica")
    dp.add_argument("--topic", required=True, help="topic name")
    dp.add_argument("--partition", type=int, required=True, help="partition number")
    ab = command("abort", "abort a hanging transaction (requires administrative privileges)")
    ab.add_argument("--topic", required=True, help="topic name")
    ab.add_argument("--partition", type=int, required=True, help="partition number")
    new = ab.add_argument_group("Brokers on versions 3.0 and above",
                                "For newer brokers, only the start offset of the transaction to be aborted is required")
    new.add_argument("--start-offset", type=int, help="start offset of the transaction to abort")
    old = ab.add_argument_group("Brokers on versions older than 3.0",
                                "For older brokers, you must provide all of these arguments")
    old.add_argument("--producer-id", type=int, help="producer id")
    old.add_argument("--producer-epoch", type=int, help="producer epoch")
    old.add_argument("--coordinator-epoch", type=int, help="coordinator epoch")
    fh = command("find-hanging", "find hanging transactions")
    fh.add_argument("--broker-id", type=int, help="broker id to search for hanging transactions")
    fh.add_argument("--max-transaction-timeout", type=int, default=DEFAULT_MAX_TXN_TIMEOUT_MIN, metavar="MIN",
                    help="maximum transaction timeout in minutes to limit the scope of the search "
                         f"({DEFAULT_MAX_TXN_TIMEOUT_MIN} minutes by default)")
    fh.add_argument("--topic", help="topic name to limit search to (required if --partition is specified)")
    fh.add_argument("--partition", type=int, help="partition number")
    return p


def _check_ranges(opts: argparse.Namespace) -> None:
    """Kafka parses these as Java shorts and ints."""
    epoch = getattr(opts, "producer_epoch", None)
    if epoch is not None and not -32768 <= epoch <= 32767:
        raise UsageError(f"Error: argument --producer-epoch: invalid Short value: '{epoch}'")
    for name in ("partition", "broker_id", "coordinator_epoch", "max_transaction_timeout"):
        value = getattr(opts, name, None)
        if value is not None and not -2**31 <= value < 2**31:
            raise UsageError(f"Error: argument --{name.replace('_', '-')}: invalid Integer value: '{value}'")


def admin_properties(command_config: str | None) -> dict[str, str]:
    """--command-config's properties (client.id, security.protocol, sasl.*, ssl.*)."""
    if not command_config:
        return {}
    try:
        return read_properties_file(command_config)
    except CliError as exc:
        raise CliError(failure("Failed to load admin client properties", str(exc).removeprefix("Error: "))) from None


def execute(argv: list[str]) -> int:
    opts = build_parser().parse_args(argv)
    bootstrap = bootstrap_of(opts)
    _check_ranges(opts)
    props = admin_properties(opts.command_config)
    client_id = props.get("client.id", CLIENT_ID)
    from odradek.cli.broker_connection import security_of

    security = security_of(props)
    from odradek.cli.broker_connection import split_servers

    split_servers(bootstrap)  # a malformed address fails before any connection
    cluster = BrokerConnections(bootstrap, client_id, security)
    try:
        COMMANDS[opts.command](cluster, opts)
    except RequestFailed as exc:
        raise CliError(f"Error: {exc}") from None
    finally:
        cluster.close()
    return 0


def main(argv: list[str]) -> int:
    return run_tool(lambda: execute(argv))
