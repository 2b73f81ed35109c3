"""Cluster operations: ElectLeaders, AlterPartitionReassignments, ListPartitionReassignments.

Elections and reassignments are decided by the controller. On the controller broker the handler calls
it directly; any other broker forwards the request, unchanged, to the controller over an inter-broker
connection and relays the answer (a forwarded request is never forwarded again: a broker that is not
the controller answers it with NOT_CONTROLLER). After the controller has written its decisions, the
handler waits, bounded by the request's timeout_ms, until its own metadata cache shows them.
ListPartitionReassignments is answered by any broker from the topic znodes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from kafka.protocol.admin import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)

from odradek.cluster import znodes as zn
from odradek.cluster.controller import Controller, NotControllerError, read_reassignments
from odradek.cluster.elections import PREFERRED, UNCLEAN, Election, TopicPartition, tp_str
from odradek.cluster.store import NoNodeError, StoreError
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.transport import AsyncConnection as BrokerClient
from odradek.server import authz
from odradek.server.registry import RequestContext, handles

log = logging.getLogger("odradek.request")
FORWARD_CLIENT_PREFIX = "odradek-controller-forward-"
T = TypeVar("T")
_ElectTopic = ElectLeadersResponse.ReplicaElectionResult
_ElectPart = ElectLeadersResponse.ReplicaElectionResult.PartitionResult
_AlterTopic = AlterPartitionReassignmentsResponse.ReassignableTopicResponse
_AlterPart = AlterPartitionReassignmentsResponse.ReassignableTopicResponse.ReassignablePartitionResponse
_ListTopic = ListPartitionReassignmentsResponse.OngoingTopicReassignment
_ListPart = ListPartitionReassignmentsResponse.OngoingTopicReassignment.OngoingPartitionReassignment


def _timeout_s(request: Any) -> float:
    return max(min(getattr(request, "timeout_ms", 60000), 300_000), 0) / 1000


async def _forward(ctx: RequestContext, request: Any) -> Any | None:
    """The controller's answer to this request, or None if there is no controller to ask."""
    broker = ctx.broker
    if (ctx.header.client_id or "").startswith(FORWARD_CLIENT_PREFIX):
        return None
    cid = broker.metadata.controller_id
    info = broker.metadata.brokers.get(cid)
    if cid < 0 or cid == broker.broker_id or info is None:
        return None
    client = BrokerClient(info.host, info.port, f"{FORWARD_CLIENT_PREFIX}{broker.broker_id}",
                          timeout_s=_timeout_s(request) + 10, security=broker.inter_broker_security)
    try:
        return _fresh(await client.request(_fresh(request), ctx.version))
    except (OSError, ConnectionError, TimeoutError, asyncio.IncompleteReadError) as exc:
        log.warning("Forwarding %s to the controller (broker %d) failed: %s", type(request).__name__, cid,
                    exc or type(exc).__name__)
        return None
    finally:
        await client.close()


@dataclass(frozen=True, slots=True)
class _Forwarded:
    response: Any  # the controller's answer, to relay as it is


async def _at_controller(ctx: RequestContext, request: Any, run: Callable[[Controller], Awaitable[T]]) -> T | _Forwarded:
    """run(controller) on the controller; elsewhere the controller's answer to `request`. KafkaError
    NOT_CONTROLLER when there is no controller to ask, REQUEST_TIMED_OUT without the metadata store."""
    controller = ctx.broker.controller
    try:
        if not controller.active:
            raise NotControllerError()
        return await run(controller)
    except NotControllerError:
        forwarded = await _forward(ctx, request)
        if forwarded is None:
            raise KafkaError(ErrorCode.NOT_CONTROLLER, "This is not the correct controller for this cluster.") from None
        return _Forwarded(forwarded)
    except StoreError as exc:
        raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"The metadata store is unavailable: {exc}") from None


def _fresh(message: Any) -> Any:
    """A copy of a decoded message that can be encoded again (kafka-python sets up an instance's
    header in __init__, which decoding skips)."""
    return type(message)(**{name: getattr(message, name) for name in type(message).fields})


def _by_topic(items: dict[TopicPartition, Any]) -> dict[str, list[tuple[int, Any]]]:
    out: dict[str, list[tuple[int, Any]]] = {}
    for (t, p), v in sorted(items.items()):
        out.setdefault(t, []).append((p, v))
    return out


# ---- ElectLeaders ---------------------------------------------------------------------------------


def _elect_response(results: dict[TopicPartition, Election], error: ErrorCode = ErrorCode.NONE) -> Any:
    return ElectLeadersResponse(throttle_time_ms=0, error_code=error, replica_election_results=[
        _ElectTopic(topic=t, partition_result=[
            _ElectPart(partition_id=p, error_code=r.error, error_message=r.message) for p, r in parts
        ])
        for t, parts in _by_topic(results).items()
    ])


async def _await_leaders(ctx: RequestContext, results: dict[TopicPartition, Election],
                         timeout: float) -> dict[TopicPartition, Election]:
    cache = ctx.broker.metadata
    elected = {tp: r for tp, r in results.items() if r.elected}

    def visible() -> bool:
        return all(cache.leader_of(t, p) == r.leader for (t, p), r in elected.items())

    if await cache.wait_for(visible, timeout):
        return results
    out = dict(results)
    for (t, p), r in elected.items():
        if cache.leader_of(t, p) != r.leader:
            out[(t, p)] = Election(error=ErrorCode.REQUEST_TIMED_OUT,
                                   message=f"Leader election for {t}-{p} did not propagate within {timeout:.0f} s")
    return out


@handles(ElectLeadersRequest, ElectLeadersResponse, versions=(0, 2))
async def elect_leaders(ctx: RequestContext, request: Any) -> Any:
    election_type = request.election_type if ctx.version >= 1 else PREFERRED
    partitions = None if request.topic_partitions is None else list(dict.fromkeys(
        (t.topic, p) for t in request.topic_partitions for p in t.partitions))
    if election_type not in (PREFERRED, UNCLEAN):
        bad = Election(error=ErrorCode.INVALID_REQUEST, message=f"Unknown election type {election_type}")
        return _elect_response({tp: bad for tp in partitions or []}, ErrorCode.INVALID_REQUEST)
    try:
        authz.require(ctx, authz.Op.ALTER, authz.CLUSTER)
        results = await _at_controller(ctx, request, lambda c: c.elect_leaders(election_type, partitions))
    except KafkaError as exc:
        failed = Election(error=exc.code, message=exc.message)
        return _elect_response({tp: failed for tp in partitions or []}, exc.code)
    if isinstance(results, _Forwarded):
        return results.response
    return _elect_response(await _await_leaders(ctx, results, _timeout_s(request)))


# ---- AlterPartitionReassignments --------------------------------------------------------------------


def _alter_response(results: dict[TopicPartition, tuple[ErrorCode, str | None]],
                    allow: bool, error: ErrorCode = ErrorCode.NONE, message: str | None = None) -> Any:
    return AlterPartitionReassignmentsResponse(
        throttle_time_ms=0, allow_replication_factor_change=allow, error_code=error, error_message=message,
        responses=[
            _AlterTopic(name=t, partitions=[
                _AlterPart(partition_index=p, error_code=code, error_message=msg) for p, (code, msg) in parts
            ])
            for t, parts in _by_topic(results).items()
        ],
    )


async def _await_assignments(ctx: RequestContext, partitions: list[TopicPartition], timeout: float) -> None:
    """Wait until this broker's cache shows the replica sets the controller wrote."""
    broker = ctx.broker
    expected: dict[TopicPartition, list[int]] = {}
    for t, p in partitions:
        try:
            data, _ = await broker.store.get_json(zn.topic_path(t))
            expected[(t, p)] = zn.TopicAssignment.from_json(data).partitions[p]
        except (NoNodeError, StoreError, KeyError, TypeError, ValueError):
            continue
    topics = broker.metadata.topics

    def visible() -> bool:
        return all(t in topics and topics[t].assignment.get(p) == r for (t, p), r in expected.items())

    await broker.metadata.wait_for(visible, timeout)


@handles(AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, versions=(0, 1))
async def alter_partition_reassignments(ctx: RequestContext, request: Any) -> Any:
    allow = bool(request.allow_replication_factor_change) if ctx.version >= 1 else True
    wanted: dict[TopicPartition, list[int] | None] = {}
    for t in request.topics:
        for p in t.partitions:
            wanted[(t.name, p.partition_index)] = list(p.replicas) if p.replicas is not None else None
    try:
        authz.require(ctx, authz.Op.ALTER, authz.CLUSTER)
        results = await _at_controller(ctx, request, lambda c: c.alter_reassignments(wanted, allow))
    except KafkaError as exc:
        return _alter_response({}, allow, exc.code, exc.message)
    if isinstance(results, _Forwarded):
        return results.response
    done = [tp for tp, (code, _) in results.items() if code == ErrorCode.NONE]
    await _await_assignments(ctx, done, _timeout_s(request))
    for tp, (code, msg) in sorted(results.items()):
        if code != ErrorCode.NONE:
            log.info("Reassignment of partition %s refused: %s: %s", tp_str(tp), ErrorCode(code).name, msg)
    return _alter_response(results, allow)


# ---- ListPartitionReassignments ---------------------------------------------------------------------


@handles(ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse, versions=(0, 0))
async def list_partition_reassignments(ctx: RequestContext, request: Any) -> Any:
    authz.require(ctx, authz.Op.DESCRIBE, authz.CLUSTER)
    cache = ctx.broker.metadata
    if request.topics is None:
        wanted: dict[str, set[int] | None] = {name: None for name in sorted(cache.topics)}
    else:
        wanted = {t.name: set(t.partition_indexes) for t in request.topics}
    try:
        found = await read_reassignments(ctx.broker.store, list(wanted))
    except StoreError as exc:
        return ListPartitionReassignmentsResponse(throttle_time_ms=0, error_code=ErrorCode.REQUEST_TIMED_OUT,
                                                  error_message=f"The metadata store is unavailable: {exc}", topics=[])
    found = {tp: a for tp, a in found.items() if wanted[tp[0]] is None or tp[1] in wanted[tp[0]]}  # type: ignore[operator]
    return ListPartitionReassignmentsResponse(throttle_time_ms=0, error_code=0, error_message=None, topics=[
        _ListTopic(name=t, partitions=[
            _ListPart(partition_index=p, replicas=a.replicas, adding_replicas=a.adding, removing_replicas=a.removing)
            for p, a in parts
        ])
        for t, parts in _by_topic(found).items()
    ])
