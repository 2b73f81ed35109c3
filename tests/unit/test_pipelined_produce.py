"""The socket server's one exception to one-request-at-a-time: a Produce handler that has appended and
only waits (acks=all, for the ISR) releases the connection, and the next request starts at once if it
is a Produce too. Answers still go out in request order; anything else waits for every earlier answer;
a handler that does not release holds the connection as before; a request that closes the connection
does so only after the answers before it went out."""

from __future__ import annotations

import asyncio
import struct
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
