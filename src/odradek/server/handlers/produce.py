"""Produce: append each partition's record batches to its log as leader; answer at once for acks=0/1,
and for acks=all once the high watermark has passed the batches (or the request times out). Where the
topic's flush.messages / flush.ms made the append ask for a flush, the answer also waits for it (it runs
on the storage's disk worker, not here).

Transactional batches (Kafka's rules): the request must name a transactional id its principal may WRITE,
else the whole request is TRANSACTIONAL_ID_AUTHORIZATION_FAILED; they must all be of one producer; and,
with `transaction.partition.verification.enable`, the first batch of a transaction on a partition is
appended only once the transaction coordinator confirmed the partition is in it (`txn.verification`).
From Produce v12 (a transaction version 2 producer, which sends no AddPartitionsToTxn) the coordinator is
asked to add the partition instead, whatever that setting says: without it the transaction would never
reach the partition's markers.

A topic with Schema ID Validation on (`confluent.{key,value}.schema.validation`) has its batches checked
by `schema_validation` before the append: the one produce path that decodes records, and the one that
awaits between the leadership check and the append (the append checks leadership again)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from kafka.protocol.producer import ProduceRequest, ProduceResponse

from odradek.protocol.errors import ErrorCode, KafkaError, RecordValidationError
from odradek.protocol.produce import (
    ProducePartitionResult,
    ProduceRequestView,
    encode_produce_response,
    parse_produce_request,
)
from odradek.protocol.records import transactional_batches
from odradek.replication.partition import Partition
from odradek.server import authz
from odradek.server.network import CloseConnection
from odradek.server.registry import RequestContext, handles
from odradek.storage.producer_state import NO_GUARD
from odradek.txn.verification import LAST_VERIFY_ONLY_PRODUCE_VERSION, produce_error

_TopicResp = ProduceResponse.TopicProduceResponse
_PartResp = _TopicResp.PartitionProduceResponse
_RecordError = _PartResp.BatchIndexAndErrorMessage


def _result(index: int, code: int, base_offset: int = -1, append_time: int = -1, log_start: int = -1,
            message: str | None = None, record_errors: list[tuple[int, str | None]] | None = None
            ) -> ProducePartitionResult:
    return ProducePartitionResult(index, code, base_offset, append_time, log_start, message, record_errors)


def _message(results: dict[str | bytes, list[ProducePartitionResult]], throttle: int) -> ProduceResponse:
    """The response as a message object, for the dispatcher to add a request-time throttle to."""
    def part(p: ProducePartitionResult) -> Any:
        return _PartResp(index=p.index, error_code=p.error_code, base_offset=p.base_offset,
                         log_append_time_ms=p.log_append_time, log_start_offset=p.log_start_offset,
                         error_message=p.error_message,
                         record_errors=[_RecordError(batch_index=i, batch_index_error_message=m)
                                        for i, m in p.record_errors or ()])
    return ProduceResponse(
        responses=[_TopicResp(name=key, partition_responses=[part(p) for p in parts]) if isinstance(key, str)
                   else _TopicResp(name="", topic_id=uuid.UUID(bytes=key), partition_responses=[part(p) for p in parts])
                   for key, parts in results.items()],
        throttle_time_ms=throttle,
    )


def _topic_name(ctx: RequestContext, topic: Any) -> str:
    return topic.name if topic.topic_id is None else ctx.broker.metadata.by_id.get(topic.topic_id, "")


def _refuse_all(ctx: RequestContext, req: ProduceRequestView, code: ErrorCode, message: str
                ) -> ProduceResponse | list[bytes]:
    """The whole request refused with one error (Kafka's error response to a Produce request)."""
    if req.acks == 0:
        raise CloseConnection(f"acks=0 produce request refused: {message}")
    results: dict[str | bytes, list[ProducePartitionResult]] = {}
    for topic in req.topics:
        results.setdefault(topic.name if topic.topic_id is None else topic.topic_id, []).extend(
            _result(part.index, code, message=message) for part in topic.partitions)
    if ctx.broker.quotas.enabled:
        return _message(results, 0)  # the dispatcher adds the request-time throttle
    ctx.broker.metrics.error_codes("Produce", [code] * sum(len(parts) for parts in results.values()))
    return encode_produce_response(ctx.version, ctx.header.correlation_id, list(results.items()), 0)


_Verified = tuple[dict[tuple[str, int], int], dict[tuple[str, int], tuple[ErrorCode, str | None]]]


async def _verify(ctx: RequestContext, tid: str, producer: tuple[int, int],
                  first_sequences: dict[tuple[str, int], int]) -> _Verified:
    """Start the transaction verification of each partition the producer has no transaction on yet and
    ask the coordinator about them: the guards the appends present, and the partitions refused."""
    guards: dict[tuple[str, int], int] = {}
    unverified: list[tuple[str, int]] = []
    for tp, seq in first_sequences.items():
        if not authz.allowed(ctx, authz.Op.WRITE, authz.TOPIC, tp[0], log_denial=False):
            continue  # answered TOPIC_AUTHORIZATION_FAILED by the append loop
        try:
            guard = ctx.broker.replicas.leader_partition(*tp).start_transaction_verification(
                producer[0], seq, producer[1])
        except KafkaError:
            continue  # the append meets the same error
        guards[tp] = guard
        if guard != NO_GUARD:
            unverified.append(tp)
    refused: dict[tuple[str, int], tuple[ErrorCode, str | None]] = {}
    if unverified:
        verdicts = await ctx.broker.txn_verifier.verify(tid, producer[0], producer[1], unverified,
                                                        add=ctx.version > LAST_VERIFY_ONLY_PRODUCE_VERSION)
        refused = {tp: produce_error(code, ctx.version) for tp, code in verdicts.items()}
    return guards, refused


# v0-2 are advertised but not served, as Kafka 4 does for old librdkafka (KAFKA-18659): a v0-2 request
# closes the connection (the dispatcher: ProduceResponse has no top-level error code to refuse it with)
@handles(ProduceRequest, ProduceResponse, versions=(3, 13), raw=True, advertised_min=0)
async def produce(ctx: RequestContext, frame: memoryview) -> ProduceResponse | list[bytes] | None:
    try:
        req = parse_produce_request(frame, ctx.header.body_offset, ctx.version)
    except KafkaError as exc:
        raise CloseConnection(str(exc)) from None
    replicas = ctx.broker.replicas
    metrics = ctx.broker.metrics
    acks = req.acks
    # transactional batches: which producer, and each partition's first sequence of them
    producers: set[tuple[int, int]] = set()
    first_sequences: dict[tuple[str, int], int] = {}
    for topic in req.topics:
        for part in topic.partitions:
            for pid, epoch, seq in transactional_batches(part.records or b""):
                producers.add((pid, epoch))
                first_sequences.setdefault((_topic_name(ctx, topic), part.index), seq)
    guards: dict[tuple[str, int], int] | None = None  # None: the appends are not verified
    refused: dict[tuple[str, int], tuple[ErrorCode, str | None]] = {}
    if producers:
        tid = req.transactional_id
        if tid is None or not authz.allowed(ctx, authz.Op.WRITE, authz.TRANSACTIONAL_ID, tid):
            return _refuse_all(ctx, req, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                               "Transactional records need the request's transactional id, and WRITE on it")
        if len(producers) > 1:
            return _refuse_all(ctx, req, ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                               "Transactional records contained more than one producer ID")
        if (ctx.version > LAST_VERIFY_ONLY_PRODUCE_VERSION
                or ctx.broker.config.get("transaction.partition.verification.enable")):
            guards, refused = await _verify(ctx, tid, next(iter(producers)), first_sequences)
    # answered per topic as the request named it: by name, or from v13 by topic id (KIP-516)
    results: dict[str | bytes, list[ProducePartitionResult]] = {}
    waits: list[tuple[Partition, asyncio.Future[None], ProducePartitionResult]] = []
    flushes: list[tuple[asyncio.Future[None], ProducePartitionResult]] = []
    any_error = False
    authorized = False  # some partition passed authorization: only then is the request charged to quotas
    for topic in req.topics:
        name = _topic_name(ctx, topic)
        out = results.setdefault(topic.name if topic.topic_id is None else topic.topic_id, [])
        for part in topic.partitions:
            if acks not in (0, 1, -1):
                out.append(_result(part.index, ErrorCode.INVALID_REQUIRED_ACKS))
                any_error = True
                continue
            try:
                if not name:  # an id no topic has (or the zero id)
                    raise KafkaError(ErrorCode.UNKNOWN_TOPIC_ID, "unknown topic id")
                authz.require_produce(ctx, req.transactional_id, name)  # the name an id stands for, too
                authorized = True
                if part.records is None or len(part.records) == 0:
                    raise KafkaError(ErrorCode.INVALID_RECORD, "Produce request has no records")
                rejected = refused.get((name, part.index))
                if rejected is not None:
                    raise KafkaError(rejected[0], rejected[1] or "")
                p = replicas.leader_partition(name, part.index)
                cfg = p.log.config
                if cfg.confluent_value_schema_validation or cfg.confluent_key_schema_validation:
                    await ctx.broker.schema_validation.check(name, part.index, cfg, part.records)
                info = p.append_as_leader(part.records, acks, verification_guard=None if guards is None
                                          else guards.get((name, part.index), NO_GUARD))
            except RecordValidationError as exc:
                out.append(_result(part.index, exc.code, message=exc.message, record_errors=exc.record_errors))
                any_error = True
                continue
            except KafkaError as exc:
                out.append(_result(part.index, exc.code, message=exc.message))
                any_error = True
                continue
            metrics.produced(name, info.num_records, info.valid_bytes)
            res = _result(part.index, 0, info.first_offset, info.log_append_time, p.log.log_start_offset)
            out.append(res)
            if info.durable is not None and acks != 0:
                flushes.append((asyncio.wrap_future(info.durable), res))
            if acks == -1:
                waits.append((p, p.hw_waiter(info.last_offset + 1), res))
    throttle = 0
    quotas = ctx.broker.quotas
    if quotas.enabled and authorized:
        # Kafka records the request's size against producer_byte_rate, acks=0 included (then muted only)
        throttle = quotas.produce(ctx.connection.principal, ctx.header.client_id or "", len(frame))
        if throttle:
            ctx.connection.mute_s = max(ctx.connection.mute_s, throttle / 1000)
    if acks == 0:
        if any_error:
            # acks=0 has no response to carry the error: close so the client notices (as Kafka does).
            raise CloseConnection("error while handling an acks=0 produce request")
        return None
    # A single-replica ISR has moved the high watermark during the append: when nothing is left to wait
    # for, the answer goes without asyncio.wait's suspension, timer and callbacks (~10% of the broker's CPU
    # per small acks=all request, bench/results/small_requests.md).
    flush_futures = [f for f, _ in flushes]
    hw_futures = [w[1] for w in waits]
    flushes_pending = any(not f.done() for f in flush_futures)
    hw_pending = any(not f.done() for f in hw_futures)
    if (flushes_pending or hw_pending) and not quotas.enabled:
        # only waiting is left: a pipelined next Produce on this connection may append meanwhile
        # (no quotas: a throttled client must not have its next request handled before the mute)
        ctx.connection.release()
    if flushes:
        if flushes_pending:
            await asyncio.wait(flush_futures)
        for fut, res in flushes:
            if fut.exception() is not None:
                res.error_code, res.base_offset = ErrorCode.KAFKA_STORAGE_ERROR, -1
    if waits:
        pending: set[asyncio.Future[None]] = set()
        if hw_pending:
            _done, pending = await asyncio.wait(hw_futures, timeout=max(req.timeout_ms, 0) / 1000)
        for leader, fut, res in waits:
            if fut in pending:
                fut.cancel()
                res.error_code, res.base_offset = ErrorCode.REQUEST_TIMED_OUT, -1
            elif (failure := fut.exception()) is not None:
                res.error_code = failure.code if isinstance(failure, KafkaError) else ErrorCode.UNKNOWN_SERVER_ERROR
                res.base_offset = -1
            elif len(leader.isr) < leader.min_insync_replicas:
                # written, but the ISR shrank below min.insync.replicas while we waited
                res.error_code, res.base_offset = ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, -1
    if quotas.enabled:
        return _message(results, throttle)
    metrics.error_codes("Produce", [p.error_code for parts in results.values() for p in parts])
    return encode_produce_response(ctx.version, ctx.header.correlation_id, list(results.items()), throttle)
