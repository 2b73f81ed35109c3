"""Group members as processes of their own, for the consumer group tests: a script run by `python -c` that
prints JSON lines, read by a thread into the member's state; a spawner that kills whatever a test left
running; and the balance check (every partition owned once, every member owning some). For the group
coordinator's unit tests, the in-memory group store its members' groups are written to."""

from __future__ import annotations

import asyncio
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

from odradek.groups.schemas import decode_key
from odradek.groups.store import GroupShard
from odradek.protocol.errors import ErrorCode, KafkaError
from tests.harness import REPO_ROOT

Records = list[tuple[bytes, bytes | None]]


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


class InMemoryGroupStore:
    """A GroupStore (`odradek.groups.store`) in memory: every group in partition 0 and owned here until
    `owned` is set False (then NOT_COORDINATOR); every write kept in order in `writes` as (group key,
    records, (producer id, epoch) of a transactional write or None). `fail` makes writes raise that error;
    `during_write` runs inside each write, after it yielded to the event loop."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, Records, tuple[int, int] | None]] = []
        self.fail: ErrorCode | None = None
        self.owned = True
        self.during_write: Callable[[], None] | None = None
        self.shard: GroupShard | None = None

    async def start(self, shard: GroupShard) -> None:
        self.shard = shard

    async def shutdown(self) -> None:
        self.shard = None

    async def coordinator_node(self, key: str) -> Any:
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)

    def check(self, key: str) -> None:
        if not self.owned:
            raise KafkaError(ErrorCode.NOT_COORDINATOR)

    async def wait_ready(self, key: str, create: bool = False) -> None:
        self.check(key)

    def partition_for(self, key: str) -> int:
        return 0

    def loading(self) -> bool:
        return False

    async def write(self, key: str, records: Records) -> None:
        await self._write(key, records, None)

    async def write_transactional(self, key: str, records: Records, producer_id: int, producer_epoch: int) -> None:
        await self._write(key, records, (producer_id, producer_epoch))

    async def _write(self, key: str, records: Records, producer: tuple[int, int] | None) -> None:
        await asyncio.sleep(0)
        if self.during_write is not None:
            self.during_write()
        if self.fail is not None:
            raise KafkaError(self.fail)
        self.writes.append((key, records, producer))

    @property
    def records(self) -> Records:
        """Every record written, in order."""
        return [r for _, recs, _ in self.writes for r in recs]

    @property
    def transactional(self) -> list[tuple[int, int]]:
        """The (producer id, epoch) of each transactional write, in order."""
        return [producer for _, _, producer in self.writes if producer is not None]

    def decoded(self) -> list[tuple[Any, bytes | None]]:
        """Every record written, its key decoded."""
        return [(decode_key(k), v) for k, v in self.records]

    def tombstones(self) -> list[Any]:
        """The decoded keys of the tombstones written."""
        return [k for k, v in self.decoded() if v is None]
