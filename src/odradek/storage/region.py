"""FileRegion: a byte range of a segment file, handed to the network layer instead of the bytes, so a
Fetch response can go from the page cache to the socket with `sendfile` (Kafka's FileRecords.writeTo).

A region holds its own duplicate of the file descriptor: retention, compaction or a topic deletion may
close and unlink the segment while the response waits to be sent, and the duplicate keeps the inode (and
so the bytes) readable until the region is closed. A truncation in place (a follower cutting its log)
shortens the file under the region; the sender then finds fewer bytes than promised (`ShortRegion`).
"""

from __future__ import annotations

import os


class ShortRegion(OSError):
    """The file ended before the region did: it was truncated after the region was taken."""


class FileRegion:
    """`count` bytes of a file from `position`. Owns `fd` (a duplicate): close it once sent or dropped;
    a region dropped unsent closes its descriptor when collected."""

    __slots__ = ("fd", "position", "count")

    def __init__(self, fd: int, position: int, count: int) -> None:
        self.fd = fd
        self.position = position
        self.count = count

    @classmethod
    def of(cls, fd: int, position: int, count: int) -> FileRegion:
        """A region of the file open as `fd`, on a duplicate of it (the caller keeps `fd`)."""
        return cls(os.dup(fd), position, count)

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        return f"FileRegion(fd={self.fd}, position={self.position}, count={self.count})"

    def read(self) -> bytes:
        """The region's bytes (the copying path: TLS, or where sendfile is unavailable)."""
        data = os.pread(self.fd, self.count, self.position) if self.count else b""
        if len(data) != self.count:
            raise ShortRegion(f"{self!r}: the file holds only {len(data)} of its bytes")
        return data

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        self.close()
