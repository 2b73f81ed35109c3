"""Writing a response that holds file regions (Fetch records, see storage/region.py) onto a connection.

Bytes go through the asyncio transport as usual. A region goes from the file to the socket with
`os.sendfile` once the transport's buffer is empty, so the two never interleave: the kernel copies the
page cache to the socket and Python touches none of the record bytes (Kafka's FileRecords.writeTo). Where
sendfile cannot serve (TLS listeners encrypt in user space, or the socket refuses it) the region is read
with pread and written through the transport, the copying path.

Works on both the asyncio selector loop and uvloop: it uses only the transports' public API (write buffer
size and limits) and waits for the socket to be writable on a duplicate of its descriptor, since a loop
refuses writer callbacks on the descriptor its transport owns.
"""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Callable, Sequence

from odradek.protocol.framing import Piece
from odradek.storage.region import FileRegion, ShortRegion

# errors from a first sendfile call that mean "not on this socket" rather than "the connection failed"
_UNSUPPORTED = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSOCK})


class SpliceCounts:
    """File regions sent by sendfile and by copying, over all connections (the broker's metrics)."""

    __slots__ = ("copied", "sent")

    def __init__(self) -> None:
        self.sent = 0
        self.copied = 0


def has_regions(response: Sequence[Piece]) -> bool:
    return any(type(piece) is FileRegion for piece in response)


class Splicer:
    """Sends the responses of one connection that contain file regions. `sock_fd` is the socket's
    descriptor, or -1 where sendfile must not be used (TLS). `writable` is the connection's flag that the
    transport is below its write-buffer high water mark (set and cleared by pause/resume_writing)."""

    def __init__(self, transport: asyncio.WriteTransport, sock_fd: int, writable: asyncio.Event,
                 is_closed: Callable[[], bool], counts: SpliceCounts | None = None) -> None:
        self._transport = transport
        self._sock_fd = sock_fd
        self._writable = writable
        self._is_closed = is_closed
        self.counts = counts or SpliceCounts()

    @property
    def zero_copy(self) -> bool:
        return self._sock_fd >= 0

    async def send(self, response: Sequence[Piece]) -> None:
        """Write the pieces in order. Raises OSError when the connection failed or a region could not be
        sent whole (the response is then cut short: the caller must close the connection). Every region
        of the response is closed, sent or not."""
        try:
            pending: list[bytes | memoryview] = []
            for piece in response:
                if type(piece) is not FileRegion:
                    pending.append(piece)  # type: ignore[arg-type]  # only regions are not bytes-like
                    continue
                if self._sock_fd >= 0 and await self._sendfile(piece, pending):
                    pending = []
                    self.counts.sent += 1
                else:
                    pending.append(piece.read())
                    self.counts.copied += 1
            if pending and not self._is_closed():
                self._transport.writelines(pending)
        finally:
            for piece in response:
                if type(piece) is FileRegion:
                    piece.close()

    async def _sendfile(self, region: FileRegion, pending: list[bytes | memoryview]) -> bool:
        """Send `pending` then the region; False (nothing sent) when the copying path must do it."""
        transport = self._transport
        if pending:
            transport.writelines(pending)
        if transport.get_write_buffer_size() and not await self._drained():
            if pending:
                pending.clear()  # already in the transport; the region follows them there
            return False
        offset, left = region.position, region.count
        while left:
            if self._is_closed():
                raise ConnectionError("connection closed while sending a file region")
            try:
                n = os.sendfile(self._sock_fd, region.fd, offset, left)
            except BlockingIOError:
                await self._socket_writable()
                continue
            except OSError as exc:
                if offset == region.position and exc.errno in _UNSUPPORTED:
                    self._sock_fd = -1  # this socket takes no sendfile: copy from now on
                    pending.clear()
                    return False
                raise
            if n == 0:
                raise ShortRegion(f"{region!r}: the file ended {left} bytes early (truncated under the send)")
            offset += n
            left -= n
        return True

    async def _drained(self) -> bool:
        """Wait until the transport has written all it holds. Dropping the high water mark to zero makes
        it pause the protocol now and resume it exactly when its buffer empties."""
        transport = self._transport
        low, high = transport.get_write_buffer_limits()
        transport.set_write_buffer_limits(high=0, low=0)
        try:
            if not self._writable.is_set():
                await self._writable.wait()
        finally:
            if not self._is_closed():
                transport.set_write_buffer_limits(high=high, low=low)
        return not self._is_closed() and transport.get_write_buffer_size() == 0

    async def _socket_writable(self) -> None:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()

        def ready() -> None:
            if not fut.done():
                fut.set_result(None)

        fd = os.dup(self._sock_fd)
        try:
            loop.add_writer(fd, ready)
            try:
                await fut
            finally:
                loop.remove_writer(fd)
        finally:
            os.close(fd)
