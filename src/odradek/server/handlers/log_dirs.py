"""DescribeLogDirs: each of the broker's `log.dirs` with the size of every partition log in it and the
disk's total and usable bytes, as `kafka-log-dirs.sh --describe` shows them. A replica never lags
itself here: Odradek has no "future" replicas (AlterReplicaLogDirs is not served yet)."""

from __future__ import annotations

import shutil
from collections import defaultdict
from typing import Any

from kafka.protocol.admin import DescribeLogDirsRequest, DescribeLogDirsResponse

from odradek.server import authz
from odradek.server.registry import RequestContext, handles

_Result = DescribeLogDirsResponse.DescribeLogDirsResult
_Topic = _Result.DescribeLogDirsTopic
_Partition = _Topic.DescribeLogDirsPartition


@handles(DescribeLogDirsRequest, DescribeLogDirsResponse, versions=(1, 4))
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
    results = []
    for d, topics in by_dir.items():
        try:
            usage = shutil.disk_usage(d)
            total, usable, error = usage.total, usage.free, 0
        except OSError:
            total, usable, error = -1, -1, 57  # KAFKA_STORAGE_ERROR
        results.append(_Result(
            error_code=error, log_dir=str(d), total_bytes=total, usable_bytes=usable, is_cordoned=False,
            topics=[_Topic(name=name, partitions=sorted(parts, key=lambda p: p.partition_index))
                    for name, parts in sorted(topics.items())]))
    return DescribeLogDirsResponse(throttle_time_ms=0, error_code=0, results=results)
