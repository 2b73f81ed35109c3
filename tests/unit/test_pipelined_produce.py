"""The socket server's one exception to one-request-at-a-time: a Produce handler that has appended and
only waits (acks=all, for the ISR) releases the connection, and the next request starts at once if it
is a Produce too. Answers still go out in request order; anything else waits for every earlier answer;
a handler that does not release holds the connection as before; a request that closes the connection
does so only after the answers before it went out."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from odradek.server.network import CloseConnection, Connection, SocketServer

PRODUCE, METADATA = 0, 3
LIMIT = 5.0  # a bound on waiting for an event that should happen at once; never reached when it does


def frame(api_key: int, tag: bytes) -> bytes:
    body = struct.pack(">h", api_key) + tag
    return struct.pack(">i", len(body)) + body


Handler = Callable[[Connection, int, bytes], Awaitable[list[bytes] | None]]


@asynccontextmanager
async def serving(handler: Handler) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    async def dispatch(conn: Connection, f: memoryview) -> list[bytes] | None:
        return await handler(conn, struct.unpack_from(">h", f)[0], bytes(f[2:]))

    server = SocketServer(dispatch, 1 << 20)
    port = await server.listen("127.0.0.1", 0)
    await server.start_serving()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        yield reader, writer
    finally:
        writer.close()
        await server.close()


async def answer(reader: asyncio.StreamReader) -> bytes:
    size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), LIMIT))[0]
    return await asyncio.wait_for(reader.readexactly(size), LIMIT)


def reply(tag: bytes) -> list[bytes]:
    return [struct.pack(">i", len(tag)), tag]


class HoldingA:
    """A handler that notes the tag of every request it starts and holds request A until `go` is set,
    releasing the connection first when `release` (appended, only the ISR awaited); any other request
    sets `other_started` and is answered at once."""

    def __init__(self, release: bool) -> None:
        self.release = release
        self.started: list[bytes] = []
        self.a_started = asyncio.Event()
        self.other_started = asyncio.Event()
        self.go = asyncio.Event()

    async def __call__(self, conn: Connection, api: int, tag: bytes) -> list[bytes]:
        self.started.append(tag)
        if tag == b"A":
            if self.release:
                conn.release()
            self.a_started.set()
            await self.go.wait()
        else:
            self.other_started.set()
        return reply(tag)


def test_a_released_produce_lets_the_next_produce_append_and_answers_stay_in_order() -> None:
    async def main() -> None:
        handler = HoldingA(release=True)
        async with serving(handler) as (reader, writer):
            writer.write(frame(PRODUCE, b"A") + frame(PRODUCE, b"B"))
            await asyncio.wait_for(handler.other_started.wait(), LIMIT)  # B ran while A waited
            assert handler.started == [b"A", b"B"]
            handler.go.set()
            assert [await answer(reader), await answer(reader)] == [b"A", b"B"]

    asyncio.run(main())


@pytest.mark.parametrize(("release", "second_api", "second"), [
    pytest.param(True, METADATA, b"M", id="anything-but-a-produce-waits-for-every-earlier-answer"),
    pytest.param(False, PRODUCE, b"B", id="a-produce-that-does-not-release-holds-the-connection"),
])
def test_the_next_request_waits_for_the_first_answer(release: bool, second_api: int, second: bytes) -> None:
    """A Metadata request queued behind a released Produce, or a Produce behind one that does not release
    (e.g. acks=1 work, or a throttled client), does not start until the first is answered."""
    async def main() -> None:
        handler = HoldingA(release)
        async with serving(handler) as (reader, writer):
            writer.write(frame(PRODUCE, b"A") + frame(second_api, second))
            await asyncio.wait_for(handler.a_started.wait(), LIMIT)
            # the second must not start (an echo round trip on the event loop shows the worker had its
            # chance to start it)
            await asyncio.sleep(0)
            assert handler.started == [b"A"]
            handler.go.set()
            assert [await answer(reader), await answer(reader)] == [b"A", second]
            assert handler.started == [b"A", second]

    asyncio.run(main())


def test_a_pipelined_request_that_closes_the_connection_lets_earlier_answers_out_first() -> None:
    async def main() -> None:
        b_done = asyncio.Event()
        replicated = asyncio.Event()

        async def handler(conn: Connection, api: int, tag: bytes) -> list[bytes] | None:
            if tag == b"A":
                conn.release()
                await replicated.wait()
                return reply(tag)
            b_done.set()
            raise CloseConnection("an acks=0 produce failed")

        async with serving(handler) as (reader, writer):
            writer.write(frame(PRODUCE, b"A") + frame(PRODUCE, b"B"))
            await asyncio.wait_for(b_done.wait(), LIMIT)
            replicated.set()
            assert await answer(reader) == b"A"
            assert await asyncio.wait_for(reader.read(), LIMIT) == b""  # then closed

    asyncio.run(main())


class CountingWrites:
    """A transport that notes how many chunks each writelines call carries."""

    def __init__(self, transport: asyncio.Transport, writes: list[int]) -> None:
        self._transport, self._writes = transport, writes

    def writelines(self, chunks: list[bytes]) -> None:
        self._writes.append(len(chunks))
        self._transport.writelines(chunks)

    def __getattr__(self, name: str) -> object:
        return getattr(self._transport, name)


def test_produce_requests_that_do_not_suspend_are_answered_in_order_in_one_write() -> None:
    """A run of pipelined Produce requests whose handlers finish without suspending: no task each, and
    their answers leave together (one send for the run)."""
    async def main() -> None:
        writes: list[int] = []

        async def handler(conn: Connection, api: int, tag: bytes) -> list[bytes]:
            if conn.transport is not None and not isinstance(conn.transport, CountingWrites):
                conn.transport = CountingWrites(conn.transport, writes)  # type: ignore[assignment]
            return reply(tag)

        async with serving(handler) as (reader, writer):
            tags = [b"P%d" % i for i in range(5)]
            writer.write(b"".join(frame(PRODUCE, t) for t in tags))
            assert [await answer(reader) for _ in tags] == tags
            assert writes == [2 * len(tags)]  # size prefix and body of each, in one write

    asyncio.run(main())


def test_a_suspended_produce_is_cancelled_when_the_connection_closes() -> None:
    """A handler stepped eagerly until it suspends goes on in a task of its own; the connection's end
    cancels it there (it sees CancelledError where it waits, and cleans up)."""
    async def main() -> None:
        waiting = asyncio.Event()
        cleaned_up = asyncio.Event()

        async def handler(conn: Connection, api: int, tag: bytes) -> list[bytes]:
            try:
                waiting.set()
                await asyncio.Event().wait()  # never set
            except asyncio.CancelledError:
                cleaned_up.set()
                raise
            return reply(tag)

        async with serving(handler) as (_reader, writer):
            writer.write(frame(PRODUCE, b"A"))
            await asyncio.wait_for(waiting.wait(), LIMIT)
            writer.close()
            await asyncio.wait_for(cleaned_up.wait(), LIMIT)

    asyncio.run(main())


def test_a_long_run_of_produce_requests_lets_other_connections_in() -> None:
    """Produce handlers that never suspend do not keep the loop: past a couple of milliseconds the worker
    lets other connections' requests be handled, then goes on."""
    async def main() -> None:
        handled: list[bytes] = []
        other: list[socket.socket] = []

        async def handler(conn: Connection, api: int, tag: bytes) -> list[bytes]:
            if tag == b"A0":  # B's request arrives while A's run is being handled
                other[0].sendall(frame(PRODUCE, b"B"))
            handled.append(tag)
            end = time.perf_counter() + 0.001
            while time.perf_counter() < end:
                pass
            return reply(tag)

        async with serving(handler) as (reader, writer):
            port = writer.get_extra_info("peername")[1]
            other.append(socket.create_connection(("127.0.0.1", port)))
            try:
                tags = [b"A%d" % i for i in range(20)]
                writer.write(b"".join(frame(PRODUCE, t) for t in tags))
                assert [await answer(reader) for _ in tags] == tags
                assert b"B" in handled
                assert handled.index(b"B") < len(tags)  # not after all of A's
            finally:
                other[0].close()

    asyncio.run(main())


def test_a_throttled_produce_is_answered_before_the_mute_and_the_next_waits_for_it() -> None:
    """KIP-219 on the eager path: the throttled request's answer leaves at once (not held with the answers
    gathered for one write), and the Produce queued behind it does not start during the mute."""
    async def main() -> None:
        started: list[bytes] = []

        async def handler(conn: Connection, api: int, tag: bytes) -> list[bytes]:
            started.append(tag)
            if tag == b"A":
                conn.mute_s = 30.0  # far longer than the test: B may only start once it ends
            return reply(tag)

        async with serving(handler) as (reader, writer):
            writer.write(frame(PRODUCE, b"A") + frame(PRODUCE, b"B"))
            assert await answer(reader) == b"A"
            await asyncio.sleep(0)
            assert started == [b"A"]

    asyncio.run(main())
