"""Ctrl-C in `odradek demo` at each phase (the web console up, Spark starting, the job running): the signal
goes to the demo's whole process group, as a terminal sends it. Each time: one "stopping" line, no
traceback, exit status 130, the summary so far, no process left and no temporary directory left behind
(issue #30). The test waits on the demo's own lines, not on time."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from tests.spark.helpers import wait_session_gone  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _demo_dirs() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("odradek-demo-*")}


def _interrupt_demo(args: list[str], marker: str, after: int = 1) -> tuple[int, str, str]:
    """Run the demo, send SIGINT to its process group once `marker` has appeared on `after` lines of its
    output, and return its exit status, stdout and stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "odradek.cli.main", "demo", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: queue.Queue[str | None] = queue.Queue()
    out: list[str] = []

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.append(line)
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        seen = 0
        while seen < after:
            line = lines.get(timeout=600)
            assert line is not None, f"the demo ended before {marker!r}:\n{''.join(out)}"
            seen += marker in line
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.stderr is not None
        err = proc.stderr.read()
        code = proc.wait(300)
        reader.join(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    wait_session_gone(proc.pid, "the demo's processes (JVM, Python workers)")
    return code, "".join(out), err


def _assert_stopped_cleanly(code: int, out: str, err: str, before: set[str]) -> None:
    assert code == 130, out + err
    assert "Traceback" not in out + err, out + err
    assert err.count("stopping the demo ...") == 1, err
    assert re.search(r"^Stopped: [\d,]+ events produced, [\d,]+ dead letters\.$", out, re.M), out
    assert _demo_dirs() <= before, f"left behind: {_demo_dirs() - before}"
    broker = re.search(r"Broker running at 127\.0\.0\.1:\d+ \(data in (\S+)/data\)", out)
    assert broker and not Path(broker.group(1)).exists()
    ps = subprocess.run(["ps", "-e", "-o", "args="], capture_output=True, text=True).stdout
    assert broker.group(1) not in ps, "the demo's broker is still running"


@pytest.mark.timeout(900)
def test_ctrl_c_once_the_console_is_up() -> None:
    before = _demo_dirs()
    code, out, err = _interrupt_demo(["--duration", "5"], "Web console running at")
    _assert_stopped_cleanly(code, out, err, before)
    port = re.search(r"Web console running at http://127\.0\.0\.1:(\d+)/", out)
    assert port
    ps = subprocess.run(["ps", "-e", "-o", "args="], capture_output=True, text=True).stdout
    assert f"--port {port.group(1)}" not in ps, "the web console is still running"


@pytest.mark.timeout(900)
def test_ctrl_c_while_spark_starts() -> None:
    before = _demo_dirs()
    code, out, err = _interrupt_demo(["--duration", "5", "--console-port", "-1"], "Generator: ~")
    _assert_stopped_cleanly(code, out, err, before)
    assert "Streaming job running" not in out


@pytest.mark.timeout(900)
def test_ctrl_c_mid_run_prints_the_table_so_far(tmp_path: Path) -> None:
    """With --schema-registry (test_demo runs the default): its topics hold Avro through the broker's registry,
    so the generator's encoding, the streaming job's decoding and its Avro metrics are on the path to the
    table."""
    before = _demo_dirs()
    output = tmp_path / "out"
    # not a terminal: each change of the figures is a status line; the second comes from a running job
    code, out, err = _interrupt_demo(["--duration", "600", "--console-port", "-1", "--trigger", "2s", "--output",
                                      str(output), "--schema-registry"], "produced", after=2)
    _assert_stopped_cleanly(code, out, err, before)
    assert re.search(r"Schema registry running at http://127\.0\.0\.1:\d+ ", out), out
    assert "window (UTC)" in out, out
    assert list((output / "metrics").glob("date=*/hour=*/window-*.parquet"))
