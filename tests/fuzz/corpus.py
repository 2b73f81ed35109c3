"""The recorded corpus of real client request frames: its file format, loading and saving.

The file is a plain Kafka request stream: each frame is a 4-byte big-endian size followed by the request
(header, then body), so it can be replayed to a broker as it is. Frames that differ only in their
correlation id are kept once.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path

CORPUS_PATH = Path(__file__).parent / "data" / "client_frames.bin"
MAX_CORPUS_BYTES = 1 << 20
_SIZE = struct.Struct(">i")
_CORRELATION_ID = slice(4, 8)  # request header: api_key int16, api_version int16, correlation_id int32


def dedupe_key(frame: bytes) -> bytes:
    return frame[: _CORRELATION_ID.start] + frame[_CORRELATION_ID.stop :]


def dedupe(frames: Iterable[bytes]) -> list[bytes]:
    """First of each set of frames equal but for the correlation id, in recorded order."""
    seen: set[bytes] = set()
    kept = []
    for frame in frames:
        key = dedupe_key(frame)
        if key not in seen:
            seen.add(key)
            kept.append(frame)
    return kept


def encode(frames: Iterable[bytes]) -> bytes:
    return b"".join(_SIZE.pack(len(f)) + f for f in frames)


def decode(data: bytes) -> list[bytes]:
    frames = []
    pos = 0
    while pos < len(data):
        (size,) = _SIZE.unpack_from(data, pos)
        if size < 0 or pos + 4 + size > len(data):
            raise ValueError(f"corrupt corpus: frame of {size} bytes at offset {pos}")
        frames.append(data[pos + 4 : pos + 4 + size])
        pos += 4 + size
    return frames


def load(path: Path = CORPUS_PATH) -> list[bytes]:
    """The request frames (header and body, without the size prefix) of a corpus file."""
    return decode(path.read_bytes())


def save(frames: Iterable[bytes], path: Path = CORPUS_PATH) -> int:
    """Write the de-duplicated frames; returns how many were kept."""
    kept = dedupe(frames)
    data = encode(kept)
    if len(data) > MAX_CORPUS_BYTES:
        raise ValueError(f"corpus of {len(data)} bytes is over the {MAX_CORPUS_BYTES} byte budget")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return len(kept)
