"""What one listener requires of its connections, built once at start-up from the broker's config: the
TLS context of SSL and SASL_SSL listeners (`tls.py`) and the SASL settings of SASL_PLAINTEXT and
SASL_SSL listeners (`sasl.py`)."""

from __future__ import annotations

import ssl
from dataclasses import dataclass

from odradek.config import BrokerConfig, Listener
from odradek.server import tls


@dataclass(frozen=True, slots=True)
class ListenerSecurity:
    name: str
    protocol: str
    ssl_context: ssl.SSLContext | None = None

    @classmethod
    def plaintext(cls, name: str = "PLAINTEXT") -> ListenerSecurity:
        return cls(name, "PLAINTEXT")

    @classmethod
    def for_listener(cls, config: BrokerConfig, listener: Listener) -> ListenerSecurity:
        """Raises ConfigError (one line) on a setting this listener cannot use."""
        protocol = listener.security_protocol
        lookup = tls.listener_lookup(config.get, config.is_set, listener.name)
        context = tls.server_context(lookup) if protocol in ("SSL", "SASL_SSL") else None
        return cls(listener.name, protocol, context)
