"""Helpers of the Spark tests that run jobs as processes of their own (spark-submit, the pipeline CLI): find
the processes of a job's session, wait for them to be gone, kill a streaming job in the middle of a batch, read
what a job wrote and the lag its consumer groups show."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

from tests.clients import consume_all
from tests.waiting import wait_until


def session_pids(sid: int) -> list[int]:
    """Pids of live (non-zombie) processes in session `sid` (a child started with start_new_session=True)."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,sid=,stat="], capture_output=True, text=True).stdout
    pids = []
    for line in out.splitlines():
        parts = line.split()
        if (len(parts) == 3 and int(parts[1]) == sid and not parts[2].startswith("Z")
                and int(parts[0]) != os.getpid()):
            pids.append(int(parts[0]))
    return pids


def wait_session_gone(sid: int, what: str) -> None:
    """Until no process of session `sid` is left (a killed or finished job's JVM and Python workers)."""
    wait_until(lambda: not session_pids(sid), 10, lambda: f"{what} to exit: pids {session_pids(sid)}")


def batch_ids(directory: Path) -> set[int]:
    return {int(f.name) for f in directory.iterdir() if f.name.isdigit()} if directory.is_dir() else set()


def kill_mid_batch(job: subprocess.Popen[bytes], checkpoint: Path, log: Path, timeout: float) -> None:
    """SIGKILL the whole session of a streaming job (driver, JVM, Python workers) once it has committed two
    batches and planned one more, so it dies in the middle of a batch; fails if the job ends first."""

    def mid_batch() -> bool:
        if job.poll() is not None:
            raise AssertionError(f"the job ended with {job.returncode} before it could be killed mid-batch:\n"
                                 + log.read_text(errors="replace")[-3000:])
        done, planned = batch_ids(checkpoint / "commits"), batch_ids(checkpoint / "offsets")
        return len(done) >= 2 and bool(planned - done)

    try:
        wait_until(mid_batch, timeout, lambda: "the job to be in the middle of its third batch:\n"
                   + log.read_text(errors="replace")[-3000:], interval=0.02)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)
        job.wait(30)


def read_whole_topic(bootstrap: str, topic: str) -> list:
    """Every record of a one-partition topic, up to its current end."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "t-end"})
    try:
        _low, end = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=20)
    finally:
        c.close()
    return consume_all(bootstrap, topic, end, timeout=60)


def lag_rows(bootstrap: str, group: str) -> int | None:
    """Records the group has committed as read (`consumer-groups --describe`), once no partition lags."""
    from tests.harness import run_cli

    r = run_cli("consumer-groups", "--bootstrap-server", bootstrap, "--describe", "--group", group)
    rows = [line.split() for line in r.stdout.splitlines()[1:] if line.startswith(group + " ")]
    if not rows or any(row[5] != "0" or row[3] != row[4] for row in rows):
        return None
    return sum(int(row[3]) for row in rows)
