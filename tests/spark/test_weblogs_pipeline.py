"""The weblogs pipeline end to end on a real broker and real Spark: metrics equal a plain-Python computation
of the same seeded input, malformed lines land in the dead-letter topic, and the archive job's report matches.
The pipeline run as a command (kill -9, Ctrl-C) is
tests/spark/test_weblogs_commands.py."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

import pyarrow.dataset as ds  # noqa: E402

from odradek.pipelines.weblogs import DLQ_TOPIC, LOGS_TOPIC, METRICS_TOPIC  # noqa: E402
from odradek.pipelines.weblogs.generator import produce_records  # noqa: E402
from odradek.pipelines.weblogs.topics import ensure_topics  # noqa: E402
from tests.clients import consume_all  # noqa: E402
from tests.spark.helpers import lag_rows  # noqa: E402
from tests.spark.weblogs_reference import (  # noqa: E402
    START_MS,
    N,
    assert_metrics_equal,
    generated,
    parquet_metrics,
    reference_metrics,
)
from tests.waiting import wait_until  # noqa: E402

pytestmark = pytest.mark.timeout(400)
ROOT = Path(__file__).resolve().parents[2]


def dlq_messages(bootstrap: str, expected: int) -> list:
    return consume_all(bootstrap, DLQ_TOPIC, expected, timeout=60)


@pytest.fixture(scope="module")
def loaded(broker: Any) -> list:
    ensure_topics(broker.bootstrap)
    records = generated()
    produce_records(broker.bootstrap, LOGS_TOPIC, records)
    return records


def test_streaming_metrics_equal_plain_python(spark: Any, broker: Any, loaded: list, tmp_path: Path) -> None:
    from odradek.pipelines.weblogs.stream_job import JobConfig, group_id, start

    cfg = JobConfig(bootstrap=broker.bootstrap, checkpoint=tmp_path / "ck", output=tmp_path / "out",
                    trigger="available-now", max_offsets_per_trigger=4000)
    queries = start(spark, cfg)
    for q in queries:
        q.awaitTermination(300)
        assert q.exception() is None, q.exception()
    # each query's progress is in its consumer group: every record read, no lag
    for q in queries:
        assert wait_until(lambda q=q: lag_rows(broker.bootstrap, group_id(q.name)), 60, f"{q.name}'s group") == N
    want = reference_metrics(loaded)
    assert len(want) == 3
    assert_metrics_equal(parquet_metrics(cfg.metrics_dir), want)
    assert sorted(p.name for p in cfg.metrics_dir.iterdir()) == ["date=2025-11-21"]
    assert sorted(p.name for p in (cfg.metrics_dir / "date=2025-11-21").iterdir()) == ["hour=12"]

    # the metrics topic: the last record of each window key holds the final figures, as JSON
    def latest_per_window() -> dict[str, dict]:
        msgs = consume_all(broker.bootstrap, METRICS_TOPIC, 10_000, timeout=3)
        latest = {m.key().decode(): json.loads(m.value()) for m in msgs}
        return latest if len(latest) == 3 else {}

    latest = wait_until(latest_per_window, 30, "the metrics of three windows")
    for key, m in latest.items():
        assert key == m["window_start"] and key.endswith("Z")
        start = int(time.mktime(time.strptime(key, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone) * 1000
        assert m["requests"] == want[start]["requests"] and m["top_paths"] == want[start]["top_paths"]

    # dead letters: every malformed line, once, with its reason and origin in headers
    bad = [r for r in loaded if r.malformed]
    dlq = dlq_messages(broker.bootstrap, len(bad))
    assert len(dlq) == len(bad)
    reasons = Counter(dict(m.headers())["odradek.dlq.reason"].decode() for m in dlq)
    assert reasons == Counter(r.malformed for r in bad)
    assert sorted((m.value() or b"") for m in dlq) == sorted((r.value or b"") for r in bad)
    assert {dict(m.headers())["odradek.dlq.topic"] for m in dlq} == {LOGS_TOPIC.encode()}


def test_archive_by_offsets_and_by_time(spark: Any, broker: Any, loaded: list, tmp_path: Path) -> None:
    from odradek.pipelines.weblogs.archive_job import ArchiveConfig, archive, format_report

    summary = archive(spark, ArchiveConfig(broker.bootstrap, tmp_path / "all"))
    events = [r.event for r in loaded if r.event]
    assert summary["records"] == N and summary["events"] == len(events)
    assert summary["malformed_by_reason"] == dict(sorted(Counter(r.malformed for r in loaded if r.malformed).items()))
    assert summary["status"]["s5xx"] == sum(e.status >= 500 for e in events)
    assert summary["bytes"] == sum(e.bytes for e in events)
    top = Counter(e.path for e in events)
    assert summary["top_paths"] == [{"path": p, "requests": c} for p, c in sorted(top.items(), key=lambda kv: (-kv[1], kv[0]))[:10]]
    assert json.loads((tmp_path / "all" / "summary.json").read_text()) == summary
    assert ds.dataset(str(tmp_path / "all" / "events"), format="parquet", partitioning="hive").count_rows() == len(events)
    assert "records read" in format_report(summary)

    # one minute of event time, by record timestamps
    lo, hi = START_MS + 60_000, START_MS + 120_000
    minute = archive(spark, ArchiveConfig(broker.bootstrap, tmp_path / "minute", range_options={
        "startingTimestamp": str(lo), "endingTimestamp": str(hi)}))
    assert minute["records"] == sum(lo <= r.ts_ms < hi for r in loaded)
    assert minute["first_event"] == "2025-11-21T12:01:00Z" and minute["last_event"] == "2025-11-21T12:01:59Z"
