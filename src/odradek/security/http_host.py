"""The Host check of Odradek's HTTP servers (the web console, the broker's /metrics endpoint) and a
constant-time secret comparison.

The Host allowlist defends against DNS rebinding: a page of evil.example whose name now resolves to
127.0.0.1 reaches a local server from the page's own origin, so cookies, CORS and Origin checks do not
stop it, but its requests still say `Host: evil.example`."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def same_secret(candidate: str | None, secret: str) -> bool:
    """Whether `candidate` equals `secret`, in time that does not depend on where they differ."""
    if candidate is None:
        return False
    return hmac.compare_digest(candidate.encode("utf-8", "surrogateescape"), secret.encode("utf-8"))


def host_name(header: str | None) -> str | None:
    """The name in a Host header, lower case, without port or trailing dot (IPv6 without brackets); None
    when there is no header or it is malformed."""
    if not header:
        return None
    value = header.strip().lower()
    if value.startswith("["):
        name, sep, rest = value[1:].partition("]")
        if not sep or (rest and not (rest.startswith(":") and rest[1:].isdigit())):
            return None
        try:
            ipaddress.IPv6Address(name)
        except ValueError:
            return None
        return name
    name, _, port = value.partition(":")
    if port and not port.isdigit():
        return None  # a bare IPv6 address or junk: not a valid Host
    name = name.rstrip(".")
    return name or None


class HostAllowlist:
    """The host names a server answers to: loopback names, the address it listens on, and any given (the
    console's --allowed-host). `any_address`: also every IP address literal (a rebinding page's Host is
    always a name; a scraper addressing the server by IP is not rebinding anything)."""

    def __init__(self, listen_host: str, extra: Iterable[str] = (), any_address: bool = False) -> None:
        bare = (x.strip().strip("[]") for x in (*LOOPBACK_NAMES, listen_host, *extra))
        self.names = frozenset(n for n in (host_name(f"[{x}]" if ":" in x else x) for x in bare) if n)
        self.any_address = any_address

    def allows(self, header: str | None) -> bool:
        name = host_name(header)
        if name in self.names:
            return True
        if self.any_address and name is not None:
            try:
                ipaddress.ip_address(name)
            except ValueError:
                return False
            return True
        return False
