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


def test_a_released_produce_lets_the_next_produce_append_and_answers_stay_in_order() -> None:
    async def main() -> None:
        started: list[bytes] = []
        second_started = asyncio.Event()
        replicated = asyncio.Event()

        async def handler(conn: Connection, api: int, tag: bytes) -> list[bytes]:
            started.append(tag)
            if tag == b"A":
                conn.release()  # appended; only the ISR is awaited now
                await replicated.wait()
            else:
                second_started.set()
            return reply(tag)

        async with serving(handler) as (reader, writer):
            writer.write(frame(PRODUCE, b"A") + frame(PRODUCE, b"B"))
            await asyncio.wait_for(second_started.wait(), LIMIT)  # B ran while A waited
            assert started == [b"A", b"B"]
            replicated.set()
            assert [await answer(reader), await answer(reader)] == [b"A", b"B"]

    asyncio.run(main())


def test_anything_but_a_produce_waits_for_every_earlier_answer() -> None:
    async def main() -> None:
        started: list[bytes] = []
        a_started = asyncio.Event()
        replicated = asyncio.Event()

        async def handler(conn: Connection, api: int, tag: bytes) -> list[bytes]:
            started.append(tag)
            if tag == b"A":
                conn.release()
                a_started.set()
                await replicated.wait()
            return reply(tag)

        async with serving(handler) as (reader, writer):
            writer.write(frame(PRODUCE, b"A") + frame(METADATA, b"M"))
            await asyncio.wait_for(a_started.wait(), LIMIT)
            # M is queued behind a released Produce: it must not start (an echo round trip on the event
            # loop shows the worker had its chance to start it)
            await asyncio.sleep(0)
            assert started == [b"A"]
            replicated.set()
            assert [await answer(reader), await answer(reader)] == [b"A", b"M"]
            assert started == [b"A", b"M"]

    asyncio.run(main())


def test_a_produce_that_does_not_release_holds_the_connection() -> None:
    async def main() -> None:
        started: list[bytes] = []
        a_started = asyncio.Event()
        go = asyncio.Event()

        async def handler(conn: Connection, api: int, tag: bytes) -> list[bytes]:
            started.append(tag)
            if tag == b"A":
                a_started.set()
                await go.wait()  # e.g. acks=1 work, or a throttled client: no release
            return reply(tag)

        async with serving(handler) as (reader, writer):
            writer.write(frame(PRODUCE, b"A") + frame(PRODUCE, b"B"))
            await asyncio.wait_for(a_started.wait(), LIMIT)
            await asyncio.sleep(0)
            assert started == [b"A"]
            go.set()
            assert [await answer(reader), await answer(reader)] == [b"A", b"B"]

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
