"""Fixtures for the Spark connector and pipeline tests: one local SparkSession for the whole session (one per
xdist worker; all Spark tests run on one worker), stopped at its end.

Modules that need Spark start with `pytest.importorskip("pyspark", ...)`, so without pyspark they skip with
that reason while the pure planning tests still run. A test that changes the session's conf sets it back; a
streaming query still running when its module ends is stopped then.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

# Every Spark driver the tests start (this session's, and the pipelines they run as commands, which inherit it)
# runs C1-compiled code only: their jobs last seconds, and C2's compiler threads cost 40% of their CPU (measured
# on tests/spark/test_pipeline_cli.py and test_batch_read.py: 61-64 s of CPU with C2, 38 s without) on a machine
# whose two cores the other test workers share. Spark honours SPARK_SUBMIT_OPTS for the driver's JVM, and reads
# the `spark.*` system properties given there into the application's conf: the executors the Spark cluster's
# workers launch for it run C1 only too, as do the master's and workers' own JVMs (SPARK_DAEMON_JAVA_OPTS, which
# `odradek spark up` passes on).
C1_ONLY = "-XX:TieredStopAtLevel=1"
os.environ.setdefault("SPARK_SUBMIT_OPTS", f"{C1_ONLY} -Dspark.executor.extraJavaOptions={C1_ONLY}")
os.environ.setdefault("SPARK_DAEMON_JAVA_OPTS", C1_ONLY)

SKIP_REASON = "pyspark is not installed (pip install -e '.[spark]')"
_SESSIONS: list[Any] = []  # the session's SparkSession, once a test asked for it


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local[2] SparkSession with format("odradek") registered; the JVM is gone after the session."""
    pytest.importorskip("pyspark", reason=SKIP_REASON)
    from odradek.spark.session import local_session, stop_session

    session = local_session("odradek-tests", conf={"spark.driver.memory": "768m"})
    _SESSIONS.append(session)
    try:
        yield session
    finally:
        _SESSIONS.remove(session)
        stop_session(session)


@pytest.fixture(scope="module", autouse=True)
def _streams_end_with_their_module() -> Iterator[None]:
    """No streaming query of a module runs on into the next one (they share the SparkSession)."""
    yield
    for session in _SESSIONS:
        for query in session.streams.active:
            query.stop()
