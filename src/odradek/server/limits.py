"""Admission limits of the socket server, as bookkeeping the network layer consults: how many
connections the broker, each listener and each client address may hold (``max.connections``,
``listener.name.<listener>.max.connections``, ``max.connections.per.ip`` and its overrides), how fast they
may arrive (``max.connection.creation.rate``), and how
many bytes of requests may be read but not yet answered across all connections
(``queued.max.request.bytes``). Nothing here touches a socket.

``max.connection.creation.rate`` bounds how many connections per second are admitted (a bucket of one
second's worth); Kafka's acceptor waits for the rate to allow the next accept, here a connection over it
is closed at once like one over any other limit.

As Kafka's ConnectionQuotas: the broker-wide max.connections and max.connection.creation.rate do not
apply to the inter-broker listener
(when the broker has more than one listener), so that a flood of clients cannot keep the other brokers
out; a connection it admits over the broker-wide limit makes the broker close one connection of another
listener (`make_way`: the socket server picks which)."""

from __future__ import annotations

import ipaddress
import logging
import socket
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping

log = logging.getLogger("odradek.network")


def normal_address(address: str) -> str:
    """One spelling per address: IPv4-mapped IPv6 (dual-stack sockets) becomes IPv4."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def resolve_host(host: str) -> list[str]:
    """The addresses of `host` (itself when it is an address literal)."""
    try:
        return [normal_address(str(ipaddress.ip_address(host)))]
    except ValueError:
        pass
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    return sorted({normal_address(str(info[4][0])) for info in infos})


class Refusal(str):
    """Why a connection is refused (the text), and the limit that refused it (`kind`)."""

    kind: str

    def __new__(cls, text: str, kind: str) -> Refusal:
        refusal = super().__new__(cls, text)
        refusal.kind = kind
        return refusal


class ConnectionLimits:
    """Counts connections in total and per client address; `admit` says why a new one is refused."""

    def __init__(self, max_total: int, max_per_ip: int, overrides: Mapping[str, int] | None = None,
                 resolve: Callable[[str], Iterable[str]] = resolve_host, per_listener: Mapping[str, int] | None = None,
                 protected: str | None = None, creation_rate: int = 2**31 - 1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_total = max_total
        # max.connection.creation.rate: new connections per second (a bucket of one second's worth)
        self.creation_rate = creation_rate
        self._clock = clock
        self._tokens = float(creation_rate)
        self._refilled = clock()
        self.max_per_ip = max_per_ip
        self.per_ip = self.resolve_overrides(overrides or {}, resolve)
        self.per_listener = dict(per_listener or {})  # listener name -> its max.connections
        # the inter-broker listener, exempt from max_total; None when the broker has only one listener
        self.protected = protected
        self.total = 0
        self.by_ip: dict[str, int] = {}
        self.by_listener: dict[str, int] = {}
        # called with the protected listener's name when it takes the broker past max_total
        self.make_way: Callable[[str], None] | None = None

    @staticmethod
    def resolve_overrides(overrides: Mapping[str, int],
                          resolve: Callable[[str], Iterable[str]] = resolve_host) -> dict[str, int]:
        """{host or address: limit} as {address: limit}; a host that does not resolve is left out."""
        per_ip: dict[str, int] = {}
        for host, limit in overrides.items():
            try:
                addresses = list(resolve(host))
            except OSError as exc:
                log.warning("max.connections.per.ip.overrides: cannot resolve %s (%s); its override is ignored",
                            host, exc)
                continue
            for address in addresses:
                per_ip[address] = limit
        return per_ip

    def reconfigure(self, max_total: int, max_per_ip: int, per_ip: Mapping[str, int],
                    creation_rate: int | None = None) -> None:
        """New limits (a dynamic broker config changed; `per_ip` from resolve_overrides). They apply to
        connections accepted from now on; open connections are kept, as Kafka keeps them."""
        self.max_total, self.max_per_ip, self.per_ip = max_total, max_per_ip, dict(per_ip)
        if creation_rate is not None and creation_rate != self.creation_rate:
            self.creation_rate = creation_rate
            self._tokens = min(self._tokens, float(creation_rate))

    def _rate_allows(self) -> bool:
        """Take one connection from the creation-rate bucket, if there is one."""
        now = self._clock()
        self._tokens = min(float(self.creation_rate), self._tokens + (now - self._refilled) * self.creation_rate)
        self._refilled = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True

    def admit(self, address: str, listener: str = "") -> Refusal | None:
        """Count a new connection from `address` on `listener`, or return why it is refused (nothing
        counted)."""
        address = normal_address(address)
        limit = self.per_ip.get(address, self.max_per_ip)
        count = self.by_ip.get(address, 0)
        if count >= limit:
            return Refusal(f"address {address} already has the configured maximum of {limit} connections",
                           "max.connections.per.ip")
        on_listener = self.by_listener.get(listener, 0)
        listener_limit = self.per_listener.get(listener)
        if listener_limit is not None and on_listener >= listener_limit:
            return Refusal(f"listener {listener} already has the configured maximum of {listener_limit} connections"
                           f" (listener.name.{listener.lower()}.max.connections)", f"{listener} max.connections")
        if self.total >= self.max_total and listener != self.protected:
            return Refusal(f"the broker already has the configured maximum of {self.max_total} connections"
                           " (max.connections)", "max.connections")
        if listener != self.protected and not self._rate_allows():
            return Refusal(f"new connections arrive faster than {self.creation_rate} per second"
                           " (max.connection.creation.rate)", "max.connection.creation.rate")
        self.by_ip[address] = count + 1
        self.by_listener[listener] = on_listener + 1
        self.total += 1
        if self.total > self.max_total and self.make_way is not None:
            self.make_way(listener)
        return None

    def release(self, address: str, listener: str = "") -> None:
        address = normal_address(address)
        count = self.by_ip.get(address, 0) - 1
        if count > 0:
            self.by_ip[address] = count
        else:
            self.by_ip.pop(address, None)
        on_listener = self.by_listener.get(listener, 0) - 1
        if on_listener > 0:
            self.by_listener[listener] = on_listener
        else:
            self.by_listener.pop(listener, None)
        self.total -= 1


class RequestMemory:
    """Bytes of requests read but not yet answered, over all connections. A connection that needs
    memory while there is no room stops reading and waits; waiters are called back in order as
    memory frees. One request may take the pool past its capacity (it is already being read), so a
    request larger than the whole pool still gets through when the pool is otherwise empty. When the pool
    empties after holding at least DRAINED_BYTES, `on_drained` is called (the heap trimmer)."""

    DRAINED_BYTES = 64 << 20

    def __init__(self, capacity: int, on_drained: Callable[[], None] | None = None) -> None:
        self.capacity = capacity  # -1: unlimited
        self.used = 0
        self.on_drained = on_drained
        self._high = 0  # the most held since the pool was last empty
        self._waiters: deque[Callable[[], None]] = deque()

    def has_room(self) -> bool:
        return self.capacity < 0 or self.used < self.capacity

    def adjust(self, delta: int) -> None:
        """Charge (positive) or release (negative) bytes; a release wakes waiters while there is room."""
        self.used += delta
        if self.used > self._high:
            self._high = self.used
        while delta < 0 and self._waiters and self.has_room():
            self._waiters.popleft()()
        if self.used <= 0 and self._high >= self.DRAINED_BYTES:
            self._high = 0
            if self.on_drained is not None:
                self.on_drained()

    def wait(self, callback: Callable[[], None]) -> None:
        """Call `callback` once there is room (the callback charges what it needs)."""
        self._waiters.append(callback)

    def cancel(self, callback: Callable[[], None]) -> None:
        try:
            self._waiters.remove(callback)
        except ValueError:
            pass
