"""What one client can make the registry spend on parsing and compatibility checks, the CPU-heavy part of its
work (a large schema costs a tenth of a second and more; a client sending them in a loop would otherwise keep
every thread of the default pool parsing, and in the broker's registry take the GIL from its event loop). That
work runs on an executor of its own, `HEAVY_THREADS` at a time (registrations, which the registry's write lock
runs one at a time, on threads of their own), so requests that parse nothing (a schema by id, a subject's
versions) and the broker keep being served; and each client (its authenticated user, else its
address) may have `PER_CLIENT` such requests under way or queued: one more is answered 429 in Confluent's
error shape at once rather than queued without bound (Confluent's clients retry a 429)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from aiohttp import web

from odradek.schema_registry.registry import RegistryError

HEAVY_THREADS = 2
PER_CLIENT = 8
USER_KEY = "schema_registry_user"  # where the basic-auth middleware leaves the request's user

T = TypeVar("T")


def client_of(request: web.Request) -> str:
    user = request.get(USER_KEY)
    return f"user {user}" if user is not None else f"address {request.remote}"


class HeavyWork:
    """`run` for lookups, compatibility checks and formats: `threads` at a time. `run_write` for registrations:
    they parse under the registry's write lock, one at a time already, and run on threads of their own so that a
    write waiting on the `_schemas` topic (a slow or absent cluster) never holds the parsing threads."""

    def __init__(self, threads: int = HEAVY_THREADS, per_client: int = PER_CLIENT) -> None:
        self.executor = ThreadPoolExecutor(threads, thread_name_prefix="schema-registry-parse")
        self.writes = ThreadPoolExecutor(threads, thread_name_prefix="schema-registry-register")
        self.per_client = per_client
        self._lock = threading.Lock()
        self._in_flight: dict[str, int] = {}

    async def run(self, client: str, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` on the parsing threads for `client` (`client_of` a request); RegistryError 429 when the
        client has `per_client` calls under way already (either kind)."""
        return await self._submit(self.executor, client, fn, args)

    async def run_write(self, client: str, fn: Callable[..., T], *args: Any) -> T:
        return await self._submit(self.writes, client, fn, args)

    async def _submit(self, executor: ThreadPoolExecutor, client: str, fn: Callable[..., T], args: tuple[Any, ...]) \
            -> T:
        with self._lock:
            held = self._in_flight.get(client, 0)
            if held >= self.per_client:
                raise RegistryError(429, 429, f"Request rate limit exceeded: at most {self.per_client} schema "
                                              "parses or compatibility checks of one client at a time")
            self._in_flight[client] = held + 1
        job = executor.submit(fn, *args)
        # the slot is given back when the work ends, not when the request does: a client that hangs up while
        # its schema is being parsed must not start another parse beside it
        job.add_done_callback(lambda _job: self._release(client))
        return await asyncio.wrap_future(job)

    def _release(self, client: str) -> None:
        with self._lock:
            left = self._in_flight.get(client, 1) - 1
            if left > 0:
                self._in_flight[client] = left
            else:
                self._in_flight.pop(client, None)

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.writes.shutdown(wait=False, cancel_futures=True)
