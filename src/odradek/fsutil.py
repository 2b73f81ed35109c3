"""Atomic replacement of a file: the one way checkpoints and store files are written.

The new content goes to a temporary file in the same directory, which is flushed and fsynced, then
renamed over the target with ``os.replace``; the directory is fsynced last, so after a crash the path
holds either the old content or the whole new one, and the rename itself survives a power loss.
Temporary names are hidden (``.<name>.<random>.tmp``): readers that scan a directory, like Parquet
datasets, skip them, and two writers never share one.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """Yield a temporary path to write the new content of `path` to. When the block ends without an
    error, that file is fsynced and renamed over `path` and the directory is fsynced; otherwise it is
    removed and `path` is left as it was."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        yield tmp
        _fsync(tmp, os.O_RDWR)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write(path: Path, data: bytes | str) -> None:
    """Replace the content of `path` with `data` (str is written as UTF-8), atomically and durably."""
    with replacing(path) as tmp:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)


def fsync_dir(path: Path) -> None:
    """Make the entries of directory `path` (a rename, a new file) durable."""
    _fsync(path, os.O_RDONLY)


def _fsync(path: Path, flags: int) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
