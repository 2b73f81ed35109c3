"""Fixtures for the Spark connector and pipeline tests: one local SparkSession per module, stopped after it.

Modules that need Spark start with `pytest.importorskip("pyspark", ...)`, so without pyspark they skip with
that reason while the pure planning tests still run.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

SKIP_REASON = "pyspark is not installed (pip install -e '.[spark]')"


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """A local[2] SparkSession with format("odradek") registered; the JVM is gone after the module."""
    pytest.importorskip("pyspark", reason=SKIP_REASON)
    from odradek.spark.session import local_session, stop_session

    session = local_session("odradek-tests", conf={"spark.driver.memory": "768m"})
    try:
        yield session
    finally:
        stop_session(session)


def session_pids(sid: int, settle: float = 10.0) -> list[int]:
    """Pids of live (non-zombie) processes in session `sid` (a child started with start_new_session=True),
    after giving processes that are exiting up to `settle` seconds to be gone."""
    deadline = time.monotonic() + settle
    while True:
        out = subprocess.run(["ps", "-e", "-o", "pid=,sid=,stat="], capture_output=True, text=True).stdout
        pids = []
        for line in out.splitlines():
            parts = line.split()
            if (len(parts) == 3 and int(parts[1]) == sid and not parts[2].startswith("Z")
                    and int(parts[0]) != os.getpid()):
                pids.append(int(parts[0]))
        if not pids or time.monotonic() > deadline:
            return pids
        time.sleep(0.2)
