"""DescribeProducers (KIP-664): the producers a partition's leader knows, with their epoch, last
sequence, last timestamp, the coordinator epoch of their last marker and the first offset of their open
transaction (-1: none), as `kafka-transactions.sh describe-producers` shows them."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin import DescribeProducersRequest, DescribeProducersResponse

from odradek.protocol.errors import KafkaError
from odradek.server import authz
from odradek.server.registry import RequestContext, handles

_Topic = DescribeProducersResponse.TopicResponse
_Partition = _Topic.PartitionResponse
_Producer = _Partition.ProducerState


def _partition(ctx: RequestContext, topic: str, index: int) -> Any:
    try:
        authz.require(ctx, authz.Op.READ, authz.TOPIC, topic)
        part = ctx.broker.replicas.leader_partition(topic, index)
    except KafkaError as exc:
        return _Partition(partition_index=index, error_code=exc.code, error_message=exc.message, active_producers=[])
    producers = [
        _Producer(producer_id=pid, producer_epoch=entry.epoch, last_sequence=entry.last_seq,
                  last_timestamp=entry.last_timestamp, coordinator_epoch=entry.coordinator_epoch,
                  current_txn_start_offset=entry.txn_first_offset)
        for pid, entry in sorted(part.log.producer_state.producers.items())
    ]
    return _Partition(partition_index=index, error_code=0, error_message=None, active_producers=producers)


@handles(DescribeProducersRequest, DescribeProducersResponse, versions=(0, 0))
async def describe_producers(ctx: RequestContext, request: Any) -> DescribeProducersResponse:
    return DescribeProducersResponse(throttle_time_ms=0, topics=[
        _Topic(name=t.name, partitions=[_partition(ctx, t.name, p) for p in t.partition_indexes])
        for t in request.topics])
