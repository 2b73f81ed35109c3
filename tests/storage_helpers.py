"""Helpers shared by the storage tests (tests/unit): a fixed start time, a clock a test moves by hand, a log
opened on a temp dir, and small record batches."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from odradek.protocol.records import build_batch
from odradek.storage.log import Log
from odradek.storage.log_config import LogConfig

T0 = 1_700_000_000_000  # the tests' "now" (ms), a fixed instant so timestamps and retention are exact


class Clock:
    """A log's `time_ms`: returns `now`, which the test sets."""

    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def fixed_clock() -> int:
    """A clock that never moves: always T0."""
    return T0


def crash_image(src: Path, dst: Path, ignore: Callable[[str, list[str]], set[str]] | None = None) -> None:
    """Copy `src` to `dst` as a kill -9 now would leave it, while the disk worker may still be at work:
    a file that vanishes between the listing and its copy (the temp file of an atomic replace, renamed
    meanwhile; the final name holds the old content or the new) is left out, as it was never part of
    the log's state."""
    def copy(source: str, target: str) -> None:
        try:
            shutil.copy2(source, target)
        except FileNotFoundError:
            pass

    shutil.copytree(src, dst, ignore=ignore, copy_function=copy)


def open_log(path: Path, props: dict[str, str] | None = None, clock: Clock | None = None, **kw: object) -> Log:
    """A Log in `path` with these topic-config overrides, on `clock` (a fresh Clock at T0 by default)."""
    return Log(path, LogConfig.from_props(props or {}), time_ms=clock or Clock(), **kw)  # type: ignore[arg-type]


def batch(i: int, n: int = 3, ts: int | None = T0, codec: int = 0) -> bytes:
    """Batch number `i`: `n` records keyed k<i>, at timestamp `ts`, compressed with `codec`."""
    return build_batch(
        [(f"k{i}".encode(), f"value-{i}-{j}".encode() * 4) for j in range(n)], timestamp=ts, compression=codec
    )
