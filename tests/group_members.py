"""Group members as processes of their own, for the consumer group tests: a script run by `python -c` that
prints JSON lines, read by a thread into the member's state; a spawner that kills whatever a test left
running; and the balance check (every partition owned once, every member owning some)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

from tests.harness import REPO_ROOT


class ScriptedMember:
    """A member process running `script` with `cfg` (as JSON in argv[1]); its stderr goes to a file in
    `log_dir`. Lines {"assignment": [...], "member": id} and {"closed": true} update `assignment`,
    `member`, `changes` and `closed`; other JSON lines go to `on_message`."""

    def __init__(self, script: str, cfg: dict[str, Any], log_dir: Path, name: str) -> None:
        self.stderr = open(log_dir / f"{name}-{uuid.uuid4().hex[:6]}.err", "w")  # noqa: SIM115
        # run from the checkout, so that a script can import tests.clients
        self.proc = subprocess.Popen([sys.executable, "-c", script, json.dumps(cfg)], cwd=REPO_ROOT,
                                     stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        self.assignment: list[int] | None = None
        self.member = ""
        self.changes = 0
        self.closed = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # not one of our reports
            if "assignment" in msg:
                self.assignment, self.member = msg["assignment"], msg["member"]
                self.changes += 1
            else:
                self.on_message(msg)
            self.closed = self.closed or bool(msg.get("closed"))

    def on_message(self, msg: dict[str, Any]) -> None:
        """A JSON line other than an assignment report (a subclass records what it needs)."""

    def terminate(self) -> None:
        """Graceful: the member closes (and leaves the group)."""
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)
        self.stderr.close()

    def kill(self) -> None:
        """kill -9, as a crash."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self.stderr.close()

    def reap(self) -> None:
        """Test clean-up: kill the process if it still runs."""
        if self.proc.poll() is None:
            self.kill()


class _Reapable(Protocol):
    def reap(self) -> None: ...


M = TypeVar("M", bound=_Reapable)


@contextmanager
def spawner(make: Callable[..., M]) -> Iterator[Callable[..., M]]:
    """`make` that remembers what it made, and reaps all of it on exit (for a test's `spawn` fixture)."""
    made: list[M] = []

    def spawn(*args: Any, **kw: Any) -> M:
        member = make(*args, **kw)
        made.append(member)
        return member

    try:
        yield spawn
    finally:
        for member in made:
            member.reap()


def one_owner_each(members: Sequence[ScriptedMember], partitions: int) -> bool:
    """Every partition has exactly one owner and every member owns something."""
    owned = [m.assignment for m in members]
    if any(not a for a in owned):
        return False
    return sorted(x for a in owned for x in a or []) == list(range(partitions))
