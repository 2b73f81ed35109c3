"""Producer ids and transactions: InitProducerId (idempotent and transactional), AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn, WriteTxnMarkers (broker to broker), DescribeTransactions, ListTransactions.
TxnOffsetCommit is with the other offset APIs in `groups`."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any

from kafka.protocol.admin.transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from kafka.protocol.producer import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)

from odradek.groups import OFFSETS_TOPIC
from odradek.linear_regex import LinearPattern, compile_pattern, matching, too_costly
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.ratelog import LimitedLog
from odradek.server import authz
from odradek.server.registry import RequestContext, handles
from odradek.txn.state import TV2, TxnState, now_ms

log = logging.getLogger("odradek.txn")
limited = LimitedLog(log)  # lines any client can repeat per request


async def _error_of(outcome: Awaitable[object]) -> int:
    """NONE once `outcome` completes, else the code of the KafkaError it raised."""
    try:
        await outcome
    except KafkaError as exc:
        return exc.code
    return ErrorCode.NONE


# ---- InitProducerId -----------------------------------------------------------------------------

# Versions and transaction version 2 (KIP-890 part 2). ApiVersions finalizes `transaction.version` at the
# broker's `transaction.version` (2 by default, as Kafka 4's new clusters); Java clients from 4.0 then run
# "TV2": no AddPartitionsToTxn (a Produce v12+ of a transactional batch has the leader add the partition),
# no AddOffsetsToTxn (TxnOffsetCommit v5 adds the offsets partition), and EndTxn v5, which bumps the epoch
# at every transaction's end. Other clients keep sending the older versions, served as before.
# InitProducerId v6 is KIP-939's two-phase commit (unstable in Kafka 4.4): not served. AddPartitionsToTxn
# v4+ are the brokers' batched requests (KIP-890's verification, and TV2's implicit add).


@handles(InitProducerIdRequest, InitProducerIdResponse, versions=(0, 5))
async def init_producer_id(ctx: RequestContext, request: Any) -> InitProducerIdResponse:
    """A transactional id's producer id and next epoch (from its coordinator; KIP-360's bump when the
    request names the current ones); for an idempotent producer always a fresh id."""
    pid = request.producer_id if ctx.version >= 3 else -1
    epoch = request.producer_epoch if ctx.version >= 3 else -1
    if request.transactional_id is None:
        authz.require_idempotent(ctx)
    else:
        try:
            authz.require(ctx, authz.Op.WRITE, authz.TRANSACTIONAL_ID, request.transactional_id)
        except KafkaError as exc:
            return InitProducerIdResponse(throttle_time_ms=0, error_code=exc.code, producer_id=-1, producer_epoch=-1)
    if (pid == -1) != (epoch == -1):  # as Kafka: an id and an epoch, or neither
        return InitProducerIdResponse(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST, producer_id=-1,
                                      producer_epoch=-1)
    if request.transactional_id is not None:
        try:
            pid, epoch = await ctx.broker.transactions.init_producer_id(
                request.transactional_id, request.transaction_timeout_ms, pid, epoch)
        except KafkaError as exc:
            code = exc.code
            if code == ErrorCode.PRODUCER_FENCED and ctx.version < 4:
                code = ErrorCode.INVALID_PRODUCER_EPOCH  # what clients before v4 understand
            return InitProducerIdResponse(throttle_time_ms=0, error_code=code, producer_id=-1, producer_epoch=-1)
        return InitProducerIdResponse(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=epoch)
    # as Kafka: without a transactional id always a fresh id. The id and epoch such a request names are
    # not proof of anything (any client could name another's), so bumping them would fence their owner.
    new_id = await ctx.broker.producer_ids.next_id()
    return InitProducerIdResponse(throttle_time_ms=0, error_code=0, producer_id=new_id, producer_epoch=0)


# ---- AddPartitionsToTxn / AddOffsetsToTxn -------------------------------------------------------

_TopicResult = AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult
_PartResult = _TopicResult.AddPartitionsToTxnPartitionResult


def _topic_results(errors: dict[tuple[str, int], int]) -> list[Any]:
    by_topic: dict[str, list[Any]] = {}
    for (topic, p), err in errors.items():
        by_topic.setdefault(topic, []).append(_PartResult(partition_index=p, partition_error_code=err))
    return [_TopicResult(name=t, results_by_partition=ps) for t, ps in by_topic.items()]


async def _add_partitions(ctx: RequestContext, tid: str, pid: int, epoch: int, topics: Any) -> dict[tuple[str, int], int]:
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    if not authz.allowed(ctx, authz.Op.WRITE, authz.TRANSACTIONAL_ID, tid):
        return dict.fromkeys(wanted, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    refused = authz.denied(ctx, authz.Op.WRITE, authz.TOPIC, (t for t, _ in wanted))
    if refused:  # as Kafka: the refused topics fail, the rest are not attempted
        return {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED if tp[0] in refused else ErrorCode.OPERATION_NOT_ATTEMPTED
                for tp in wanted}
    meta = ctx.broker.metadata.topics
    unknown = {tp for tp in wanted if tp[0] not in meta or tp[1] not in meta[tp[0]].assignment}
    if unknown:
        # as Kafka: the unknown partitions fail, the rest are not attempted
        return {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else ErrorCode.OPERATION_NOT_ATTEMPTED
                for tp in wanted}
    code = await _error_of(ctx.broker.transactions.add_partitions(tid, pid, epoch, set(wanted)))
    return dict.fromkeys(wanted, code)


@handles(AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, versions=(0, 5))
async def add_partitions_to_txn(ctx: RequestContext, request: Any) -> AddPartitionsToTxnResponse:
    """v0-3 from producers; v4+ from partition leaders (CLUSTER_ACTION), several transactions at once, each
    added or, with VerifyOnly, only checked (the leader's verification before a transaction's first
    append to a partition)."""
    if ctx.version < 4:
        errors = await _add_partitions(ctx, request.v3_and_below_transactional_id,
                                       request.v3_and_below_producer_id, request.v3_and_below_producer_epoch,
                                       request.v3_and_below_topics)
        return AddPartitionsToTxnResponse(throttle_time_ms=0, results_by_topic_v3_and_below=_topic_results(errors))
    if not authz.allowed(ctx, authz.Op.CLUSTER_ACTION, authz.CLUSTER):
        return AddPartitionsToTxnResponse(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                          results_by_transaction=[])
    results = []
    for txn in request.transactions:
        if txn.transactional_id is None:
            return AddPartitionsToTxnResponse(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST,
                                              results_by_transaction=[])
        errors = await _broker_add_partitions(ctx, txn)
        if ctx.version < 5:  # v4 predates TRANSACTION_ABORTABLE
            errors = {tp: ErrorCode.INVALID_TXN_STATE if e == ErrorCode.TRANSACTION_ABORTABLE else e
                      for tp, e in errors.items()}
        results.append(AddPartitionsToTxnResponse.AddPartitionsToTxnResult(
            transactional_id=txn.transactional_id, topic_results=_topic_results(errors)))
    return AddPartitionsToTxnResponse(throttle_time_ms=0, error_code=0, results_by_transaction=results)


async def _broker_add_partitions(ctx: RequestContext, txn: Any) -> dict[tuple[str, int], int]:
    """One transaction of a v4+ request: its topics need no WRITE check (the sender is a broker), only
    to exist, as in Kafka."""
    wanted = [(t.name, p) for t in txn.topics for p in t.partitions]
    meta = ctx.broker.metadata.topics
    unknown = {tp for tp in wanted if tp[0] not in meta or tp[1] not in meta[tp[0]].assignment}
    if unknown:
        return {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else ErrorCode.OPERATION_NOT_ATTEMPTED
                for tp in wanted}
    coordinator = ctx.broker.transactions
    if txn.verify_only:
        return dict(coordinator.verify_partitions(txn.transactional_id, txn.producer_id, txn.producer_epoch, wanted))
    # a leader adding the partitions of a TV2 producer's first batches there (Kafka's coordinator takes a
    # broker's add as transaction version 2)
    code = await _error_of(coordinator.add_partitions(txn.transactional_id, txn.producer_id, txn.producer_epoch,
                                                      set(wanted), TV2))
    return dict.fromkeys(wanted, code)


@handles(AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, versions=(0, 4))
async def add_offsets_to_txn(ctx: RequestContext, request: Any) -> AddOffsetsToTxnResponse:
    async def add() -> None:
        authz.require(ctx, authz.Op.WRITE, authz.TRANSACTIONAL_ID, request.transactional_id)
        authz.require(ctx, authz.Op.READ, authz.GROUP, request.group_id)
        gc = ctx.broker.groups
        await gc.coordinator_node(request.group_id)  # creates __consumer_offsets on first use
        tp = (OFFSETS_TOPIC, gc.partition_for(request.group_id))
        await ctx.broker.transactions.add_partitions(request.transactional_id, request.producer_id,
                                                     request.producer_epoch, {tp})

    return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=await _error_of(add()))


# ---- EndTxn ---------------------------------------------------------------------------------------


@handles(EndTxnRequest, EndTxnResponse, versions=(0, 5))
async def end_txn(ctx: RequestContext, request: Any) -> EndTxnResponse:
    """v5 is transaction version 2's: the coordinator bumps the epoch and answers the producer id and
    epoch the producer goes on with (-1 with an error)."""
    try:
        authz.require(ctx, authz.Op.WRITE, authz.TRANSACTIONAL_ID, request.transactional_id)
        pid, epoch = await ctx.broker.transactions.end_txn(
            request.transactional_id, request.producer_id, request.producer_epoch, request.committed,
            TV2 if ctx.version >= 5 else 0)
    except KafkaError as exc:
        code = exc.code
        if code == ErrorCode.PRODUCER_FENCED and ctx.version < 2:
            code = ErrorCode.INVALID_PRODUCER_EPOCH  # what clients before v2 understand (as Kafka answers)
        return EndTxnResponse(throttle_time_ms=0, error_code=code, producer_id=-1, producer_epoch=-1)
    return EndTxnResponse(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=epoch)


# ---- WriteTxnMarkers (from a transaction coordinator) ---------------------------------------------


# v2 adds each marker's transaction version (KIP-1228): from version 2 the marker's producer epoch must be
# above the partition's (the coordinator bumped it), before that it may equal it. Our coordinators send v1
# (no transaction version 2 here); a Kafka 4.2 coordinator's markers are checked as Kafka checks them.
@handles(WriteTxnMarkersRequest, WriteTxnMarkersResponse, versions=(1, 2))
async def write_txn_markers(ctx: RequestContext, request: Any) -> WriteTxnMarkersResponse:
    timeout_s = int(ctx.broker.config.get("request.timeout.ms")) / 1000
    result_cls = WriteTxnMarkersResponse.WritableTxnMarkerResult
    topic_cls = result_cls.WritableTxnMarkerTopicResult
    part_cls = topic_cls.WritableTxnMarkerPartitionResult
    markers = []
    refused = not authz.allowed(ctx, authz.Op.CLUSTER_ACTION, authz.CLUSTER)
    for m in request.markers:
        topics = []
        for t in m.topics:
            parts = []
            for p in t.partition_indexes:
                if refused:
                    parts.append(part_cls(partition_index=p, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
                    continue
                err = await ctx.broker.txn_markers.append(
                    t.name, p, m.producer_id, m.producer_epoch, m.transaction_result, m.coordinator_epoch, timeout_s,
                    m.transaction_version if ctx.version >= 2 else 0)
                parts.append(part_cls(partition_index=p, error_code=err))
            topics.append(topic_cls(name=t.name, partitions=parts))
        markers.append(result_cls(producer_id=m.producer_id, topics=topics))
    return WriteTxnMarkersResponse(markers=markers)


# ---- DescribeTransactions / ListTransactions ------------------------------------------------------


@handles(DescribeTransactionsRequest, DescribeTransactionsResponse, versions=(0, 0))
async def describe_transactions(ctx: RequestContext, request: Any) -> DescribeTransactionsResponse:
    state_cls = DescribeTransactionsResponse.TransactionState
    topic_cls = state_cls.TopicData
    out = []
    for tid in dict.fromkeys(request.transactional_ids):
        try:
            authz.require(ctx, authz.Op.DESCRIBE, authz.TRANSACTIONAL_ID, tid)
            md = await ctx.broker.transactions.describe(tid)
        except KafkaError as exc:
            out.append(state_cls(error_code=exc.code, transactional_id=tid, transaction_state="",
                                 transaction_timeout_ms=0, transaction_start_time_ms=-1, producer_id=-1,
                                 producer_epoch=-1, topics=[]))
            continue
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(md.partitions):
            by_topic.setdefault(t, []).append(p)
        out.append(state_cls(error_code=0, transactional_id=tid, transaction_state=md.state.label,
                             transaction_timeout_ms=md.timeout_ms, transaction_start_time_ms=md.start_ms,
                             producer_id=md.producer_id, producer_epoch=md.producer_epoch,
                             topics=[topic_cls(topic=t, partitions=ps) for t, ps in by_topic.items()]))
    return DescribeTransactionsResponse(throttle_time_ms=0, transaction_states=out)


_STATES = {s.label: s for s in TxnState}


@handles(ListTransactionsRequest, ListTransactionsResponse, versions=(0, 2))
async def list_transactions(ctx: RequestContext, request: Any) -> ListTransactionsResponse:
    """Filters: states, producer ids, v1's minimum duration of an ongoing transaction, v2's pattern that
    the whole transactional id must match (KIP-1152; null or empty: every id)."""
    state_cls = ListTransactionsResponse.TransactionState
    pattern: LinearPattern | None = None
    if ctx.version >= 2 and request.transactional_id_pattern:
        try:
            pattern = compile_pattern(request.transactional_id_pattern, "TransactionalIdPattern")
        except KafkaError as exc:
            limited.info("ListTransactions: invalid transactional id pattern: %s", exc.message)
            return ListTransactionsResponse(throttle_time_ms=0, error_code=ErrorCode.INVALID_REGULAR_EXPRESSION,
                                            unknown_state_filters=[], transaction_states=[])
    unknown = [s for s in request.state_filters or () if s not in _STATES]
    states = {_STATES[s] for s in request.state_filters or () if s in _STATES}
    pids = set(request.producer_id_filters or ())
    min_duration = request.duration_filter if ctx.version >= 1 else -1
    try:
        txns = ctx.broker.transactions.listing()
    except KafkaError as exc:
        return ListTransactionsResponse(throttle_time_ms=0, error_code=exc.code, unknown_state_filters=unknown,
                                        transaction_states=[])
    now = now_ms()
    chosen = [md for md in sorted(txns, key=lambda m: m.transactional_id)
              if (not states or md.state in states) and (not pids or md.producer_id in pids)
              and (min_duration < 0 or (md.state is TxnState.ONGOING and now - md.start_ms >= min_duration))]
    if pattern is not None:
        matched = (await matching([pattern], [md.transactional_id for md in chosen]))[pattern.pattern]
        if too_costly(pattern.pattern) is not None:
            return ListTransactionsResponse(throttle_time_ms=0, error_code=ErrorCode.INVALID_REGULAR_EXPRESSION,
                                            unknown_state_filters=[], transaction_states=[])
        chosen = [md for md in chosen if md.transactional_id in matched]
    out = [state_cls(transactional_id=md.transactional_id, producer_id=md.producer_id,
                     transaction_state=md.state.label)
           for md in chosen
           if authz.allowed(ctx, authz.Op.DESCRIBE, authz.TRANSACTIONAL_ID, md.transactional_id, False)]
    return ListTransactionsResponse(throttle_time_ms=0, error_code=0, unknown_state_filters=unknown,
                                    transaction_states=out)
