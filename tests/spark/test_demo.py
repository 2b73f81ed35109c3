"""`odradek demo --duration 5`: the main job runs short, prints a metrics table, exits 0, leaves nothing.
It runs in a pseudo-terminal of 80x24, as a person would see it: the live screen and every line it
prints fit 80 columns (issue #30).
The demo's clock starts with its first metrics, so the test waits on that event however long Spark
takes to start (bounded by the demo's own limit and the test's timeout), not on a wall-clock budget."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import socket
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from tests.spark.helpers import wait_session_gone  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# CSI sequences (cursor moves, colours, erasing) and OSC ones (titles, links) a terminal does not print
ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]")


def run_in_terminal(args: list[str], columns: int, rows: int, timeout: float) -> tuple[int, int, str, str]:
    """Run a command with its stdout on a pseudo-terminal of `columns` x `rows` (stderr on a pipe) and
    return its pid, its exit status, everything it wrote to the terminal, and its stderr."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    proc = subprocess.Popen(args, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE,
                            env={**os.environ, "TERM": "xterm-256color", "COLUMNS": str(columns),
                                 "LINES": str(rows)}, start_new_session=True)
    os.close(slave)
    chunks: list[bytes] = []

    def pump() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every holder of the terminal's other end has closed it
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        assert proc.stderr is not None
        err = proc.stderr.read()
        code = proc.wait(timeout)
        reader.join(60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
        os.close(master)
    return proc.pid, code, b"".join(chunks).decode(errors="replace"), err.decode(errors="replace")


def printed_rows(terminal_output: str) -> list[str]:
    """The runs of text the terminal printed: split wherever a line ends, the cursor returns or moves,
    or the screen is erased."""
    return [row for row in re.split(r"\r\n|\n|\r", ESCAPES.sub("\n", terminal_output)) if row]


@pytest.mark.timeout(900)
def test_demo_runs_shows_metrics_and_cleans_up(tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    pid, code, terminal, stderr = run_in_terminal(
        [sys.executable, "-m", "odradek.cli.main", "demo", "--duration", "5", "--rate", "200", "--trigger", "2s",
         "--output", str(out_dir)], columns=80, rows=24, timeout=840)
    stdout = ESCAPES.sub("", terminal).replace("\r\n", "\n")
    assert code == 0, stdout[-3000:] + stderr[-3000:]
    assert "Traceback" not in stderr
    from rich.cells import cell_len

    # the live screen (drawn between hiding and showing the cursor) and the final table fit 80 columns;
    # plain message lines (paths, URLs) are left to the terminal to wrap
    live = re.findall(r"\x1b\[\?25l(.*?)(?:\x1b\[\?25h|$)", terminal, re.S)
    assert live, "no live screen was drawn"
    too_wide = [row for frame in live for row in printed_rows(frame) if cell_len(row) > 80]
    assert not too_wide, too_wide[:5]
    lines = stdout.splitlines()
    header = [i for i, line in enumerate(lines) if line.startswith("window (UTC)")]
    assert header, stdout
    rows = [line for line in lines[header[-1] + 2:] if line[:2] == "20"]  # "2026-11-21 12:48  ..."
    assert all(cell_len(line) <= 80 for line in [lines[header[-1]], *rows]), lines[header[-1]:]
    assert rows and int(rows[0].split()[2].replace(",", "")) > 0, stdout
    assert f"Parquet metrics (one file per window, partitioned by date and hour): {out_dir / 'metrics'}" in stdout
    assert list((out_dir / "metrics").glob("date=*/hour=*/window-*.parquet"))
    wait_session_gone(pid, "the demo's processes (JVM, Python workers)")
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
