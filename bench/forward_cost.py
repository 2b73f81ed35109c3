"""What forwarding a request to another process costs, for the multi-core design (docs/DESIGN.md,
Performance): bench/small_requests.py's load (small Produce requests, 64 partitions) sent to the broker
directly and through a relay process that reads whole request frames and writes them on to the broker over
one connection, as a per-core process would forward a request to the partition's owner (uvloop, as the
broker). Prints the broker's and the relay's CPU microseconds per request, alternating direct and relayed
windows.

    python bench/forward_cost.py --rounds 6 --seconds 2
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.harness import free_port, wait_port  # noqa: E402

from bench.small_requests import broker, broker_cpu, drive, produce_frames  # noqa: E402


class _Relay(asyncio.Protocol):
    """One client connection: whole frames on to the broker, the broker's bytes back as they come."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None
        self.upstream: asyncio.Transport | None = None
        self.pending: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's TCPTransport is not a subclass
        asyncio.get_running_loop().create_task(self._connect())

    async def _connect(self) -> None:
        loop = asyncio.get_running_loop()
        relay = self

        class Back(asyncio.Protocol):
            def data_received(self, data: bytes) -> None:
                if relay.transport is not None and not relay.transport.is_closing():
                    relay.transport.write(data)

        self.upstream, _ = await loop.create_connection(Back, "127.0.0.1", self.upstream_port)
        for frame in self.pending:
            self.upstream.write(frame)
        self.pending.clear()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.upstream is not None:
            self.upstream.close()

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        pos = 0
        frames = []
        while len(buf) - pos >= 4:
            n = int.from_bytes(buf[pos:pos + 4], "big")
            if len(buf) - pos < 4 + n:
                break
            frames.append(bytes(buf[pos:pos + 4 + n]))
            pos += 4 + n
        del buf[:pos]
        if self.upstream is None:
            self.pending.extend(frames)
        else:
            self.upstream.writelines(frames)


def serve_relay(port: int, upstream_port: int) -> None:
    import uvloop

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(lambda: _Relay(upstream_port), "127.0.0.1", port)
        async with server:
            await server.serve_forever()
    uvloop.run(main())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--relay-serve", nargs=2, type=int, metavar=("PORT", "UPSTREAM"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.relay_serve:
        serve_relay(*args.relay_serve)
        return 0
    with tempfile.TemporaryDirectory(prefix="forward-cost-") as tmp, broker(Path(tmp) / "b", ROOT / "src") as b:
        assert b.pid is not None
        port = free_port()
        relay = subprocess.Popen([sys.executable, __file__, "--relay-serve", str(port), str(b.port)])
        try:
            wait_port(port, 20, relay)
            relay_ps = psutil.Process(relay.pid)
            frames = produce_frames(64, 10, 1024, -1)
            drive(b.port, frames, 1.0, 4, 16)
            direct, via_broker, via_relay = [], [], []
            for _ in range(args.rounds):
                cpu0 = broker_cpu(b.pid)
                n = drive(b.port, frames, args.seconds, 4, 16)
                direct.append((broker_cpu(b.pid) - cpu0) / n * 1e6)
                cpu0, r0 = broker_cpu(b.pid), sum(relay_ps.cpu_times()[:2])
                n = drive(port, frames, args.seconds, 4, 16)
                via_broker.append((broker_cpu(b.pid) - cpu0) / n * 1e6)
                via_relay.append((sum(relay_ps.cpu_times()[:2]) - r0) / n * 1e6)
                print(f"direct: broker {direct[-1]:.0f} µs/req; relayed: broker {via_broker[-1]:.0f} µs/req, "
                      f"relay {via_relay[-1]:.0f} µs/req", flush=True)
                time.sleep(0.1)
        finally:
            relay.terminate()
            relay.wait(10)
    print(f"median: direct broker {statistics.median(direct):.0f} µs/req (min {min(direct):.0f}); relayed broker "
          f"{statistics.median(via_broker):.0f} (min {min(via_broker):.0f}), relay {statistics.median(via_relay):.0f} "
          f"(min {min(via_relay):.0f}): forwarding adds {statistics.median(via_relay) / statistics.median(direct):.2f}x "
          "of the request's own cost")
    return 0


if __name__ == "__main__":
    sys.exit(main())
