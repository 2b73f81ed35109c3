"""A minimal asyncio Kafka client for broker-to-broker requests (replica fetches): one connection,
one request in flight, kafka-python's message classes as codecs."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

from kafka.protocol.api_message import ApiMessage

_I32 = struct.Struct(">i")


class BrokerClient:
    def __init__(self, host: str, port: int, client_id: str, timeout_s: float = 30.0) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._correlation_id = 0

    async def connect(self) -> None:
        self._reader, self._writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port, limit=1 << 20), self.timeout_s
        )

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    async def request(self, req: ApiMessage, version: int) -> Any:
        if not self.connected:
            await self.connect()
        assert self._reader is not None and self._writer is not None
        self._correlation_id += 1
        req.API_VERSION = version
        req.with_header(correlation_id=self._correlation_id, client_id=self.client_id)
        self._writer.write(bytes(req.encode(header=True, framed=True)))
        await self._writer.drain()
        size = _I32.unpack(await asyncio.wait_for(self._reader.readexactly(4), self.timeout_s))[0]
        frame = await asyncio.wait_for(self._reader.readexactly(size), self.timeout_s)
        (corr,) = _I32.unpack_from(frame, 0)
        if corr != self._correlation_id:
            await self.close()
            raise ConnectionError(f"correlation id {corr} does not match request {self._correlation_id}")
        resp_cls = req.header.get_response_class()
        flexible = resp_cls.flexible_version_q(version)
        return resp_cls.decode(memoryview(frame)[5 if flexible else 4 :], version=version)

    async def close(self) -> None:
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, OSError):
                pass
