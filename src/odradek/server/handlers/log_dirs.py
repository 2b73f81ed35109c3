"""The log dir APIs. DescribeLogDirs: each of the broker's `log.dirs` with the size of every partition log in
it (and of every future log: a replica being moved there, `is_future_key`, lagging the current log by its
end offsets) and the disk's total and usable bytes, as `kafka-log-dirs.sh --describe` shows them; a dir
that failed (offline) answers KAFKA_STORAGE_ERROR without partitions, as Kafka's does. v5's IsCordoned is
always false: Odradek has no cordoning of log dirs (KIP-1066's `cordoned.log.dirs`), and Kafka's flag says
only that, not that a dir is offline.
AlterReplicaLogDirs (KIP-113): move replicas of this broker to another of its log dirs while they keep
serving (storage/log_mover.py does the moving)."""

from __future__ import annotations

import asyncio
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

from kafka.protocol.admin import (
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
)

from odradek.protocol.errors import ErrorCode
from odradek.server import authz
from odradek.server.registry import RequestContext, handles

_Result = DescribeLogDirsResponse.DescribeLogDirsResult
_Topic = _Result.DescribeLogDirsTopic
_Partition = _Topic.DescribeLogDirsPartition
_AlterTopic = AlterReplicaLogDirsResponse.AlterReplicaLogDirTopicResult
_AlterPartition = _AlterTopic.AlterReplicaLogDirPartitionResult


@handles(DescribeLogDirsRequest, DescribeLogDirsResponse, versions=(1, 5))
async def describe_log_dirs(ctx: RequestContext, request: Any) -> DescribeLogDirsResponse:
    authz.require(ctx, authz.Op.DESCRIBE, authz.CLUSTER)
    logs = ctx.broker.logs
    wanted: set[tuple[str, int]] | None = None
    if request.topics is not None:
        wanted = {(t.topic, p) for t in request.topics for p in t.partitions}
    by_dir: dict[Any, dict[str, list[Any]]] = {d: defaultdict(list) for d in logs.log_dirs}
    for log in logs.logs():
        key = (log.topic, log.partition)
        if wanted is not None and key not in wanted:
            continue
        d = logs.log_dir_of(log.topic, log.partition)
        if d in by_dir:
            by_dir[d][log.topic].append(_Partition(partition_index=log.partition, partition_size=log.size_in_bytes,
                                                   offset_lag=0, is_future_key=False))
    for future in logs.futures():
        key = (future.topic, future.partition)
        current = logs.get_log(*key)
        if (wanted is not None and key not in wanted) or current is None or future.dir.parent not in by_dir:
            continue
        lag = max(current.log_end_offset - future.log_end_offset, 0)
        by_dir[future.dir.parent][future.topic].append(_Partition(
            partition_index=future.partition, partition_size=future.size_in_bytes, offset_lag=lag,
            is_future_key=True))
    results = []
    for d, topics in by_dir.items():
        try:
            if logs.failures.is_offline(d):
                raise OSError(f"log dir {d} is offline")
            usage = shutil.disk_usage(d)
            total, usable, error = usage.total, usage.free, 0
        except OSError:
            total, usable, error = -1, -1, int(ErrorCode.KAFKA_STORAGE_ERROR)
            topics.clear()
        results.append(_Result(
            error_code=error, log_dir=str(d), total_bytes=total, usable_bytes=usable, is_cordoned=False,
            topics=[_Topic(name=name, partitions=sorted(parts, key=lambda p: p.partition_index))
                    for name, parts in sorted(topics.items())]))
    return DescribeLogDirsResponse(throttle_time_ms=0, error_code=0, results=results)


@handles(AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse, versions=(1, 2))
async def alter_replica_log_dirs(ctx: RequestContext, request: Any) -> AlterReplicaLogDirsResponse:
    # each partition once, the last directory named for it winning (Kafka reads the request into a map)
    targets: dict[tuple[str, int], str] = {}
    for d in request.dirs:
        for t in d.topics:
            for p in t.partitions:
                targets[(t.name, p)] = d.path
    if not authz.allowed(ctx, authz.Op.ALTER, authz.CLUSTER):
        errors = dict.fromkeys(targets, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    else:
        errors = await asyncio.get_running_loop().run_in_executor(None, _alter, ctx, targets)
    by_topic: dict[str, list[Any]] = defaultdict(list)
    for (topic, partition), code in errors.items():
        by_topic[topic].append(_AlterPartition(partition_index=partition, error_code=int(code)))
    return AlterReplicaLogDirsResponse(throttle_time_ms=0, results=[
        _AlterTopic(topic_name=topic, partitions=parts) for topic, parts in by_topic.items()])


def _alter(ctx: RequestContext, targets: dict[tuple[str, int], str]) -> dict[tuple[str, int], ErrorCode]:
    """On a worker thread: starting a move creates the future log's files."""
    logs = ctx.broker.logs
    topics = ctx.broker.metadata.topics
    errors: dict[tuple[str, int], ErrorCode] = {}
    for (topic, partition), path in targets.items():
        dest: Path | None = logs.log_dir_named(path)
        if dest is None:
            errors[(topic, partition)] = ErrorCode.LOG_DIR_NOT_FOUND
            continue
        code = logs.alter_log_dir(topic, partition, dest)
        if code == ErrorCode.REPLICA_NOT_AVAILABLE:
            meta = topics.get(topic)
            if meta is None or partition not in meta.assignment:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        errors[(topic, partition)] = code
    return errors
