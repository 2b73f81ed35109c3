"""Kafka messages -> one Arrow RecordBatch of the source schema, built column by column.

The hot path of the source: one list comprehension per column over the messages of one consume() call,
then a bulk conversion to Arrow; topic and partition are repeated scalars, never per-row objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from odradek.spark.schema import arrow_schema

_SCHEMAS = {False: arrow_schema(False), True: arrow_schema(True)}
_TS_TYPE = pa.timestamp("us", tz="UTC")


def _headers_column(msgs: Sequence[Any], arrow_type: pa.DataType) -> pa.Array:
    rows: list[list[dict[str, Any]] | None] = []
    for m in msgs:
        hs = m.headers()
        rows.append([{"key": k, "value": v} for k, v in hs] if hs else None)
    return pa.array(rows, type=arrow_type)


def messages_to_batch(msgs: Sequence[Any], topic: str, partition: int, include_headers: bool) -> pa.RecordBatch:
    """A RecordBatch of `msgs` (confluent_kafka Messages of one topic-partition, none an error event)."""
    schema = _SCHEMAS[include_headers]
    n = len(msgs)
    ts = np.array([m.timestamp() for m in msgs], dtype=np.int64).reshape(n, 2)
    columns = [
        pa.array([m.key() for m in msgs], pa.binary()),
        pa.array([m.value() for m in msgs], pa.binary()),
        pa.repeat(pa.scalar(topic, pa.string()), n),
        pa.repeat(pa.scalar(partition, pa.int32()), n),
        pa.array([m.offset() for m in msgs], pa.int64()),
        pa.array(ts[:, 1] * 1000, _TS_TYPE),
        # confluent_kafka numbers timestamp types 0 n/a, 1 create, 2 log-append; Kafka (and Spark) -1, 0, 1
        pa.array((ts[:, 0] - 1).astype(np.int32), pa.int32()),
    ]
    if include_headers:
        columns.append(_headers_column(msgs, schema.field("headers").type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)
