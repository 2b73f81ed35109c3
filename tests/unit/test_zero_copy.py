"""Zero-copy fetch pieces: Log.read(zero_copy=True) returns a FileRegion naming exactly the bytes the copying
read returns; a region outlives its segment's deletion; the Splicer writes bytes and regions in order onto
real sockets (asyncio's selector loop and uvloop), through a full transport buffer and a full socket, and
falls back to copying where sendfile cannot serve."""

from __future__ import annotations

import asyncio
import errno
import os
import socket
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvloop

from odradek.protocol.errors import CorruptRecordError
from odradek.protocol.records import iter_batches
from odradek.server.splice import Splicer, has_regions
from odradek.storage.log import Log
from odradek.storage.region import FileRegion, ShortRegion
from tests.storage_helpers import T0, batch, open_log

LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.SelectorEventLoop,
    "uvloop": uvloop.new_event_loop,
}


@pytest.fixture
def multi(tmp_path: Path) -> Log:
    """60 batches of 1..5 records over several small segments, sparse index entries."""
    log = open_log(tmp_path / "orders-0", {"segment.bytes": "3000", "index.interval.bytes": "500"})
    for i in range(60):
        log.append_as_leader(batch(i, n=1 + i % 5, ts=T0 + i), leader_epoch=1)
    return log


def region_bytes(records: bytes | FileRegion) -> bytes:
    if isinstance(records, FileRegion):
        try:
            return records.read()
        finally:
            records.close()
    assert records == b""
    return records


def test_regions_name_exactly_the_bytes_a_read_returns(multi: Log) -> None:
    sizes = (1, 100, 350, 1000, 2500, 1 << 20)
    uppers = (None, 7, 50, multi.log_end_offset)
    checked = 0
    for offset in range(multi.log_end_offset):
        for max_bytes in sizes:
            for upper in uppers:
                for min_one in (True, False):
                    plain = multi.read(offset, max_bytes, upper, min_one).records
                    region = multi.read(offset, max_bytes, upper, min_one, zero_copy=True).records
                    assert region_bytes(region) == plain, (offset, max_bytes, upper, min_one)
                    checked += bool(plain)
    assert checked > 1000


def test_sequential_zero_copy_reads_walk_every_segment(multi: Log) -> None:
    # each read starts where the last ended (the boundary cache), crossing segment rolls
    offset, seen = 0, []
    while offset < multi.log_end_offset:
        data = region_bytes(multi.read(offset, 700, zero_copy=True).records)
        headers = [h for _, h in iter_batches(data)]
        assert headers and headers[0].base_offset == offset
        seen += [h.base_offset for h in headers]
        offset = headers[-1].next_offset
    assert len(multi.segments) > 4 and len(seen) == 60


def test_empty_reads_are_not_regions(multi: Log) -> None:
    assert multi.read(multi.log_end_offset, 100, zero_copy=True).records == b""
    assert multi.read(9, 1 << 20, max_offset=9, zero_copy=True).records == b""
    assert multi.read(0, 1, min_one_message=False, zero_copy=True).records == b""


def test_out_of_descriptors_a_read_copies(multi: Log, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_more(fd: int) -> int:
        raise OSError(errno.EMFILE, "Too many open files")

    plain = multi.read(10, 1000).records
    monkeypatch.setattr(os, "dup", no_more)
    assert multi.read(10, 1000, zero_copy=True).records == plain


def test_a_region_outlives_its_segment(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", {"segment.bytes": "1000"})
    for i in range(20):
        log.append_as_leader(batch(i), leader_epoch=0)
    first = log.segments[0]
    expected = log.read(0, 1 << 20).records
    region = log.read(0, 1 << 20, zero_copy=True).records
    assert isinstance(region, FileRegion)
    log.high_watermark = log.log_end_offset
    assert log.delete_old_segments(lambda seg, nxt: True, "test") > 0
    log.wait_for_background()
    assert not first.log_path.exists() and not first.log_path.with_name(first.log_path.name + ".deleted").exists()
    assert region.read() == expected  # the region's own descriptor keeps the unlinked file readable
    region.close()
    assert region.fd == -1
    region.close()  # idempotent
    log.close()


def test_a_truncated_region_is_short(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    for i in range(5):
        log.append_as_leader(batch(i), leader_epoch=0)
    region = log.read(0, 1 << 20, zero_copy=True).records
    assert isinstance(region, FileRegion)
    log.truncate_to(3)
    with pytest.raises(ShortRegion):
        region.read()
    region.close()
    log.close()


def test_corrupt_header_in_a_zero_copy_read_is_reported(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(batch(0) + batch(1), 0)
    os.pwrite(log.active_segment.fd, b"\x00\x00\x00\x01", 8)  # batch_length of the first batch
    with pytest.raises(CorruptRecordError):
        log.read(3, 100, zero_copy=True)
    log.close()


# --- the Splicer on real sockets ---------------------------------------------------------------------


class _Sink(asyncio.Protocol):
    """The sending side's protocol: tracks the transport's pause/resume_writing like Connection does."""

    def __init__(self) -> None:
        self.writable = asyncio.Event()
        self.writable.set()
        self.closed = False

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.writable.set()


def run_on(loop_name: str, coro: Callable[[], Coroutine[Any, Any, None]]) -> None:
    loop = LOOPS[loop_name]()
    try:
        loop.run_until_complete(coro())
    finally:
        loop.close()


async def _pair() -> tuple[asyncio.WriteTransport, _Sink, socket.socket, int]:
    """A transport over one end of a TCP pair (sendfile needs a real socket) and the other end."""
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)  # small buffers: the socket fills up
    client.connect(server.getsockname())
    peer, _ = server.accept()
    server.close()
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
    peer.setblocking(False)
    loop = asyncio.get_running_loop()
    sink = _Sink()
    transport, _ = await loop.connect_accepted_socket(lambda: sink, peer)
    return transport, sink, client, peer.fileno()  # type: ignore[return-value]


async def _receive(sock: socket.socket, n: int) -> bytes:
    loop = asyncio.get_running_loop()
    sock.setblocking(False)
    out = bytearray()
    while len(out) < n:
        chunk = await loop.sock_recv(sock, min(1 << 20, n - len(out)))
        if not chunk:
            break
        out += chunk
    return bytes(out)


@contextmanager
def _file(tmp_path: Path, size: int) -> Iterator[tuple[int, bytes]]:
    """A file of `size` random bytes opened for reading: (its descriptor, its bytes); closed afterwards."""
    data = os.urandom(size)
    path = tmp_path / "data.log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        yield fd, data
    finally:
        os.close(fd)


@asynccontextmanager
async def _splicer(zero_copy: bool = True) -> AsyncIterator[tuple[Splicer, asyncio.WriteTransport, socket.socket]]:
    """A Splicer over one end of a `_pair` (sendfile off when not `zero_copy`), its transport and the
    receiving socket; both ends closed afterwards."""
    transport, sink, client, sock_fd = await _pair()
    try:
        yield Splicer(transport, sock_fd if zero_copy else -1, sink.writable, lambda: sink.closed), transport, client
    finally:
        transport.close()
        client.close()


@pytest.mark.parametrize("loop_name", list(LOOPS))
@pytest.mark.parametrize("zero_copy", [True, False])
def test_splicer_writes_pieces_in_order(tmp_path: Path, loop_name: str, zero_copy: bool) -> None:
    async def main(fd: int, data: bytes) -> None:
        async with _splicer(zero_copy) as (splicer, transport, client):
            regions = [FileRegion.of(fd, 0, 4 << 20), FileRegion.of(fd, 5000, 100),
                       FileRegion.of(fd, 4 << 20, 2 << 20)]
            pieces: list[Any] = [b"head", regions[0], memoryview(b"mid"), regions[1], regions[2], b"tail"]
            expected = b"head" + data[: 4 << 20] + b"mid" + data[5000:5100] + data[4 << 20 :] + b"tail"
            assert has_regions(pieces) and not has_regions([b"x"])
            # a full transport buffer first: the regions must wait for it (a receiver that is not yet reading)
            limits = transport.get_write_buffer_limits()
            backlog = os.urandom(3 << 20)
            transport.write(backlog)
            assert transport.get_write_buffer_size() > 0
            sender = asyncio.ensure_future(splicer.send(pieces))
            got = await _receive(client, len(backlog) + len(expected))
            await sender
            assert got == backlog + expected
            assert all(r.fd == -1 for r in regions)  # every region closed once sent
            assert (splicer.counts.sent, splicer.counts.copied) == ((3, 0) if zero_copy else (0, 3))
            assert transport.get_write_buffer_limits() == limits  # restored after waiting for the drain

    with _file(tmp_path, 6 << 20) as (fd, data):
        run_on(loop_name, lambda: main(fd, data))


@pytest.mark.parametrize("loop_name", list(LOOPS))
def test_splicer_reports_a_region_cut_short(tmp_path: Path, loop_name: str) -> None:
    async def main(fd: int, data: bytes) -> None:
        async with _splicer() as (splicer, _, client):
            region = FileRegion.of(fd, 50_000, 80_000)  # runs 30,000 bytes past the end of the file
            with pytest.raises(ShortRegion):
                await splicer.send([b"head", region])
            assert region.fd == -1
            got = await _receive(client, 4 + 50_000)
            assert got == b"head" + data[50_000:]

    with _file(tmp_path, 100_000) as (fd, data):
        run_on(loop_name, lambda: main(fd, data))


@pytest.mark.parametrize("loop_name", list(LOOPS))
def test_splicer_falls_back_where_sendfile_is_refused(tmp_path: Path, loop_name: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def refuse(*args: object) -> int:
        calls.append(args)
        raise OSError(errno.EINVAL, "Invalid argument")  # as for a socket that takes no sendfile

    monkeypatch.setattr(os, "sendfile", refuse)

    async def main(fd: int, data: bytes) -> None:
        async with _splicer() as (splicer, _, client):
            await splicer.send([b"a", FileRegion.of(fd, 0, 10_000), b"b", FileRegion.of(fd, 10, 20)])
            assert not splicer.zero_copy and splicer.counts.copied == 2 and len(calls) == 1  # not tried again
            assert await _receive(client, 10_022) == b"a" + data + b"b" + data[10:30]

    with _file(tmp_path, 10_000) as (fd, data):
        run_on(loop_name, lambda: main(fd, data))
