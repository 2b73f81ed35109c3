"""`odradek demo --duration 5`: the main job runs short, prints a metrics table, exits 0, leaves nothing.
The demo's clock starts with its first metrics, so the test waits on that event however long Spark
takes to start (bounded by the demo's own limit and the test's timeout), not on a wall-clock budget."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from tests.spark.helpers import wait_session_gone  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(900)
def test_demo_runs_shows_metrics_and_cleans_up(tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "odradek.cli.main", "demo", "--duration", "5", "--rate", "200",
                             "--trigger", "2s", "--output", str(out_dir)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=840)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stdout[-3000:] + stderr[-3000:]
    assert "Traceback" not in stderr
    lines = stdout.splitlines()
    header = [i for i, line in enumerate(lines) if line.startswith("window (UTC)")]
    assert header, stdout
    rows = [line for line in lines[header[-1] + 2:] if line[:2] == "20"]  # "2026-11-21 12:48  ..."
    assert rows and int(rows[0].split()[2].replace(",", "")) > 0, stdout
    assert f"Parquet metrics (one file per window, partitioned by date and hour): {out_dir / 'metrics'}" in stdout
    assert list((out_dir / "metrics").glob("date=*/hour=*/window-*.parquet"))
    wait_session_gone(proc.pid, "the demo's processes (JVM, Python workers)")
    started = re.search(r"Broker running at 127\.0\.0\.1:(\d+) \(data in (\S+)/data\); "
                        r"metrics at http://127\.0\.0\.1:\d+/metrics", stdout)
    assert started, stdout
    port, workdir = int(started.group(1)), started.group(2)
    ps = subprocess.run(["ps", "-e", "-o", "args="], capture_output=True, text=True).stdout
    assert workdir not in ps, "the demo's broker is still running"
    with socket.socket() as s, pytest.raises(OSError):
        s.settimeout(1)
        s.connect(("127.0.0.1", port))
    assert not Path(workdir).exists()
    # the web console ran beside it (the demo prints its URL once the console answered) and is gone too
    console = re.search(r"Web console running at http://127\.0\.0\.1:(\d+)/", stdout)
    assert console, stdout
    with socket.socket() as s, pytest.raises(OSError):
        s.settimeout(1)
        s.connect(("127.0.0.1", int(console.group(1))))
