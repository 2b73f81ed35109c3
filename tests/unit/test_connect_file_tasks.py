"""The FileStream tasks without a worker: the source splits lines at \\n, \\r\\n and \\r (a \\r at the end of what
was read waits for the next byte), its positions count every byte, batch.size caps a poll and what it holds stays
bounded; the sink's lines are in the file once `put` returns, not when the next offset flush comes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from odradek.connect.api import OffsetStorageReader, SinkRecord, SourceTaskContext
from odradek.connect.data import STRING_SCHEMA
from odradek.connect.file_connectors import READ_SIZE, FileStreamSinkTask, FileStreamSourceTask, _line_end


class Offsets(OffsetStorageReader):
    def __init__(self, stored: dict[str, Any] | None = None) -> None:
        self.stored = stored

    def offset(self, partition: Any) -> dict[str, Any] | None:
        return self.stored


def source(path: Path, batch_size: int = 2000, stored: dict[str, Any] | None = None) -> FileStreamSourceTask:
    task = FileStreamSourceTask()
    task.initialize(SourceTaskContext({}, Offsets(stored)))
    task.start({"file": str(path), "topic": "t", "batch.size": str(batch_size)})
    return task


def test_line_ends() -> None:
    assert _line_end(b"ab\ncd") == (2, 1)
    assert _line_end(b"ab\r\ncd") == (2, 2)
    assert _line_end(b"ab\rcd") == (2, 1)
    assert _line_end(b"ab\r") is None  # perhaps \r\n
    assert _line_end(b"abc") is None
    assert _line_end(b"x\nab\r\n", 2) == (4, 2)
    assert _line_end(b"x\n", 2) is None


def test_source_lines_positions_and_resume(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\nbb\r\nccc\rd\r")
    task = source(path)
    records = task.poll() or []
    assert [r.value for r in records] == ["a", "bb", "ccc"]
    assert [r.source_offset for r in records] == [{"position": 2}, {"position": 6}, {"position": 10}]
    assert all(r.source_partition == {"filename": str(path)} and r.value_schema == STRING_SCHEMA for r in records)
    with open(path, "ab") as f:
        f.write(b"\ne\n")
    assert [(r.value, r.source_offset) for r in task.poll() or []] == [("d", {"position": 13}), ("e", {"position": 15})]
    task.stop()
    resumed = source(path, stored={"position": 6})
    assert [r.value for r in resumed.poll() or []] == ["ccc", "d", "e"]
    resumed.stop()


def test_batch_size_caps_a_poll_and_what_is_held(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    lines = [f"line-{i}" for i in range(30_000)]
    path.write_text("".join(f"{line}\n" for line in lines))
    task = source(path, batch_size=7)
    seen: list[str] = []
    while len(seen) < len(lines):
        batch = task.poll() or []
        assert 0 < len(batch) <= 7
        seen += [r.value for r in batch]
        assert len(task.pending) < 2 * READ_SIZE
    assert seen == lines
    task.stop()


def test_sink_lines_are_in_the_file_after_put(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    task = FileStreamSinkTask()
    task.start({"file": str(path)})
    task.put([SinkRecord("t", 0, None, None, None, v, None) for v in ("a", None, True, 3)])
    assert path.read_text() == "a\nnull\ntrue\n3\n"
    task.stop()
