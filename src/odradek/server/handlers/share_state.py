"""The share-state APIs (KIP-932) a share partition's leader sends to the share coordinator of its key:
InitializeShareGroupState (83) v0, ReadShareGroupState (84) v0, WriteShareGroupState (85) v0-1,
DeleteShareGroupState (86) v0 and ReadShareGroupStateSummary (87) v0-1, served by the `__share_group_state`
shard of this broker (`odradek.groups.share_state_coordinator`). Brokers call them on each other (a broker
that is the coordinator itself calls the shard directly: `odradek.groups.share_persister`).

Authorization as Kafka's: CLUSTER_ACTION on the cluster (inter-broker only); without it every partition
answers CLUSTER_AUTHORIZATION_FAILED. Each partition is answered on its own (NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH, INVALID_REQUEST...). v1 of Write
carries DeliveryCompleteCount (KIP-1226), which is not kept: v1 of ReadSummary answers it computed from the
state (the acknowledged and archived records at or above the start offset).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from odradek.groups.share_partition import RecordState, StateBatch
from odradek.groups.share_records import ShareStateValue
from odradek.groups.share_state import ShareKey, delivery_complete_count
from odradek.groups.share_state_coordinator import ShareCoordinator
from odradek.protocol.errors import ErrorCode
from odradek.protocol.kip932 import (
    DeleteShareGroupStateRequest,
    DeleteShareGroupStateResponse,
    InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse,
    ReadShareGroupStateRequest,
    ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryResponse,
    WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
)
from odradek.server import authz
from odradek.server.registry import RequestContext, handles

PartitionAnswer = Callable[[ShareKey, Any], Awaitable[dict[str, Any]]]


def _coordinator(ctx: RequestContext) -> ShareCoordinator:
    sc: ShareCoordinator = ctx.broker.share_coordinator
    return sc


async def _answer(ctx: RequestContext, request: Any, response: Any, topic_cls: Any, answer: PartitionAnswer,
                  refused: dict[str, Any]) -> Any:
    """The response (of class `response`, its topics of class `topic_cls`): `answer(key, partition)` gives
    each partition's fields; `refused` the other fields of a partition refused before it is looked at."""
    allowed = authz.allowed(ctx, authz.Op.CLUSTER_ACTION, authz.CLUSTER)
    part_cls = topic_cls.PartitionResult
    results = []
    for t in request.topics or []:
        parts = []
        for p in t.partitions or []:
            if not allowed:
                fields = {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None, **refused}
            elif not request.group_id:
                fields = {"error_code": ErrorCode.INVALID_REQUEST, "error_message": "Empty group id.", **refused}
            else:
                fields = await answer(ShareKey(request.group_id, t.topic_id.bytes, p.partition), p)
            parts.append(part_cls(partition=p.partition, **fields))
        results.append(topic_cls(topic_id=t.topic_id, partitions=parts))
    return response(results=results)


def _ok(error: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {"error_code": error, "error_message": message}


def _batches(cls: Any, value: ShareStateValue | None) -> list[Any]:
    if value is None:
        return []
    return [cls(first_offset=b.first_offset, last_offset=b.last_offset, delivery_state=int(b.state),
                delivery_count=b.delivery_count) for b in value.batches]


@handles(InitializeShareGroupStateRequest, InitializeShareGroupStateResponse, versions=(0, 0))
async def initialize_share_group_state(ctx: RequestContext, request: Any) -> Any:
    sc = _coordinator(ctx)

    async def answer(key: ShareKey, p: Any) -> dict[str, Any]:
        return _ok(await sc.initialize(key, p.state_epoch, p.start_offset))

    return await _answer(ctx, request, InitializeShareGroupStateResponse, InitializeShareGroupStateResponse.InitializeStateResult, answer, {})


@handles(ReadShareGroupStateRequest, ReadShareGroupStateResponse, versions=(0, 0))
async def read_share_group_state(ctx: RequestContext, request: Any) -> Any:
    sc = _coordinator(ctx)
    batch_cls = ReadShareGroupStateResponse.ReadStateResult.PartitionResult.StateBatch
    empty = {"state_epoch": 0, "start_offset": -1, "state_batches": []}

    async def answer(key: ShareKey, p: Any) -> dict[str, Any]:
        got = await sc.read(key, p.leader_epoch)
        if got.error or got.value is None:
            return {**_ok(got.error, got.message), **empty}
        return {**_ok(ErrorCode.NONE), "state_epoch": got.value.state_epoch, "start_offset": got.value.start_offset,
                "state_batches": _batches(batch_cls, got.value)}

    return await _answer(ctx, request, ReadShareGroupStateResponse, ReadShareGroupStateResponse.ReadStateResult, answer, empty)


@handles(WriteShareGroupStateRequest, WriteShareGroupStateResponse, versions=(0, 1))
async def write_share_group_state(ctx: RequestContext, request: Any) -> Any:
    sc = _coordinator(ctx)

    async def answer(key: ShareKey, p: Any) -> dict[str, Any]:
        batches = []
        for b in p.state_batches or []:
            try:
                state = RecordState(b.delivery_state)
            except ValueError:
                return _ok(ErrorCode.INVALID_REQUEST, f"Unknown delivery state {b.delivery_state}.")
            batches.append(StateBatch(b.first_offset, b.last_offset, state, b.delivery_count))
        err, message = await sc.write(key, p.state_epoch, p.leader_epoch, p.start_offset, tuple(batches))
        return _ok(err, message)

    return await _answer(ctx, request, WriteShareGroupStateResponse, WriteShareGroupStateResponse.WriteStateResult, answer, {})


@handles(DeleteShareGroupStateRequest, DeleteShareGroupStateResponse, versions=(0, 0))
async def delete_share_group_state(ctx: RequestContext, request: Any) -> Any:
    sc = _coordinator(ctx)

    async def answer(key: ShareKey, p: Any) -> dict[str, Any]:
        return _ok(await sc.delete(key))

    return await _answer(ctx, request, DeleteShareGroupStateResponse, DeleteShareGroupStateResponse.DeleteStateResult, answer, {})


@handles(ReadShareGroupStateSummaryRequest, ReadShareGroupStateSummaryResponse, versions=(0, 1))
async def read_share_group_state_summary(ctx: RequestContext, request: Any) -> Any:
    sc = _coordinator(ctx)
    empty = {"state_epoch": 0, "leader_epoch": -1, "start_offset": -1, "delivery_complete_count": -1}

    async def answer(key: ShareKey, p: Any) -> dict[str, Any]:
        got = await sc.read_summary(key)
        if got.error or got.value is None:
            return {**_ok(got.error, got.message), **empty}
        v = got.value
        return {**_ok(ErrorCode.NONE), "state_epoch": v.state_epoch, "leader_epoch": v.leader_epoch,
                "start_offset": v.start_offset,
                "delivery_complete_count": delivery_complete_count(v.start_offset, v.batches)}

    return await _answer(ctx, request, ReadShareGroupStateSummaryResponse, ReadShareGroupStateSummaryResponse.ReadStateSummaryResult, answer, empty)
