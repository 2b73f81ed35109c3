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

TMP_SUFFIX = ".tmp"


@contextmanager
def replacing(path: Path, durable: bool = True) -> Iterator[Path]:
    """Yield a temporary path to write the new content of `path` to. When the block ends without an
    error, that file is fsynced and renamed over `path` and the directory is fsynced; otherwise it is
    removed and `path` is left as it was (a full disk leaves the old content, never a torn file).
    Not `durable`: the same without the fsyncs, for files that a crash may lose or leave empty (their
    readers rebuild them), never torn by a failed write."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}{TMP_SUFFIX}")
    try:
        yield tmp
        if durable:
            _fsync(tmp, os.O_RDWR)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)


def atomic_write(path: Path, data: bytes | str, durable: bool = True, mode: int | None = None) -> None:
    """Replace the content of `path` with `data` (str is written as UTF-8), atomically and (unless not
    `durable`, see `replacing`) durably; with `mode` (e.g. 0o600 for a file holding secrets) the new file
    has that mode from its creation on."""
    with replacing(path, durable) as tmp:
        if mode is not None:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode))
            os.chmod(tmp, mode)
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)


def is_temporary(name: str) -> bool:
    """Whether a file name is one of `replacing`'s temporary files (left by a crash, safe to delete)."""
    return name.startswith(".") and name.endswith(TMP_SUFFIX)


def fsync_dir(path: Path) -> None:
    """Make the entries of directory `path` (a rename, a new file) durable."""
    _fsync(path, os.O_RDONLY)


def _fsync(path: Path, flags: int) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
