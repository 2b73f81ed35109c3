"""The `pipeline run` status line from Spark progress dictionaries."""

from __future__ import annotations

from odradek.spark.offsets import TP
from odradek.spark.progress import lag, processed_offsets, status_line

PROGRESS = {
    "batchId": 7, "numInputRows": 1200, "processedRowsPerSecond": 2400.4,
    "eventTime": {"watermark": "2026-11-24T04:00:00.000Z"},
    "sources": [{"description": "odradek", "endOffset": '{"access-logs":{"0":100,"1":250}}'},
                {"description": "other", "endOffset": "not json"}],
}


def test_processed_offsets_from_the_source_json() -> None:
    assert processed_offsets(PROGRESS) == {TP("access-logs", 0): 100, TP("access-logs", 1): 250}
    assert processed_offsets({"sources": [{"endOffset": {"t": {"0": 5}}}]}) == {TP("t", 0): 5}
    assert processed_offsets({}) == {}


def test_lag_counts_what_is_past_the_processed_offsets() -> None:
    ends = {TP("access-logs", 0): 130, TP("access-logs", 1): 250, TP("access-logs", 2): 9, TP("other", 0): 1000}
    assert lag(PROGRESS, ends) == 30 + 0 + 9  # an unread partition counts from 0; other topics do not count
    assert lag({}, ends) is None


def test_status_line() -> None:
    line = status_line(PROGRESS, {TP("access-logs", 0): 130})
    assert line == ("batch 7: 1,200 rows in, 2,400 rows/s, watermark 2026-11-24T04:00:00.000Z, lag 30 records")
    assert status_line(None, {}) == "waiting for the first micro-batch ..."
    first = {**PROGRESS, "eventTime": {"watermark": "1970-01-01T00:00:00.000Z"}}
    assert "watermark none yet," in status_line(first, {TP("access-logs", 0): 130})
