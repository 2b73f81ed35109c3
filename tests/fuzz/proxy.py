"""A recording TCP proxy on 127.0.0.1: forwards bytes both ways and keeps every client request frame.

It runs its own asyncio loop in a thread so that blocking clients (confluent-kafka, kafka-python) can talk
through it from the calling thread. The broker must advertise the proxy's port, or clients would reconnect
to the broker directly after their first Metadata request.
"""

from __future__ import annotations

import asyncio
import threading

from odradek.protocol.framing import FrameDecoder

MAX_FRAME = 100 * 1024 * 1024


class RecordingProxy:
    def __init__(self, listen_port: int, upstream_port: int) -> None:
        self.listen_port = listen_port
        self.upstream_port = upstream_port
        self.frames: list[bytes] = []  # request payloads (header and body), in arrival order
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="recording-proxy", daemon=True)
        self._server: asyncio.Server | None = None

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("recording proxy did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def recorded(self) -> list[bytes]:
        with self._lock:
            return list(self.frames)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", self.listen_port)
        )
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._server.close()
            for task in asyncio.all_tasks(self._loop):
                task.cancel()
            self._loop.run_until_complete(asyncio.sleep(0))
            self._loop.close()

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            broker_r, broker_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(
            self._pump(client_r, broker_w, FrameDecoder(MAX_FRAME)),
            self._pump(broker_r, client_w, None),
            return_exceptions=True,
        )

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, recorder: FrameDecoder | None
    ) -> None:
        try:
            while data := await reader.read(65536):
                if recorder is not None:
                    frames = [bytes(f) for f in recorder.feed(data)]
                    with self._lock:
                        self.frames += frames
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()
