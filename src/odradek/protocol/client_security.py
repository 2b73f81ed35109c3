"""How a connection of ours meets a secured listener: its security protocol (Kafka's PLAINTEXT, SSL,
SASL_PLAINTEXT, SASL_SSL), the TLS context for the SSL ones, and the SASL mechanism and credentials for
the SASL ones. Built by `security/client_config.py` from Kafka client properties and by
`server/security.py` for the inter-broker listener; used by `protocol/transport.py`, which wraps the socket
in TLS and runs `sasl_exchange` before any other request."""

from __future__ import annotations

import ssl
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from odradek.protocol.sasl_client import SaslClientError, sasl_client

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
HANDSHAKE_VERSION = 1
AUTHENTICATE_VERSION = 1


class AuthenticationError(ConnectionError):
    """The broker refused our credentials, or the exchange failed; the message says which."""


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str = ""
    password: str = ""
    login_options: tuple[tuple[str, str], ...] = ()  # OAUTHBEARER: the OAuthBearerLoginModule's JAAS options

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


PLAINTEXT = ClientSecurity()


SaslSteps = Generator[tuple[Any, int], Any, None]


def sasl_exchange(security: ClientSecurity) -> SaslSteps:
    """Authentication over a fresh connection, sans-io: yields (request, version) and is sent each decoded
    response; SaslHandshake v1 naming the mechanism, then SaslAuthenticate rounds until the mechanism is
    satisfied. Raises AuthenticationError with the broker's message on refusal. Drive it with `drive`."""
    assert security.mechanism is not None
    handshake = yield SaslHandshakeRequest(mechanism=security.mechanism), HANDSHAKE_VERSION
    if handshake.error_code:
        raise AuthenticationError(f"SASL mechanism {security.mechanism} is not enabled on the listener "
                                  f"(it offers {', '.join(handshake.mechanisms) or 'none'})")
    try:
        client = sasl_client(security.mechanism, security.username, security.password, dict(security.login_options))
    except SaslClientError as exc:
        raise AuthenticationError(str(exc)) from None
    token: bytes | None = client.first()
    while token is not None:
        answer = yield SaslAuthenticateRequest(auth_bytes=token), AUTHENTICATE_VERSION
        if answer.error_code:
            raise AuthenticationError(answer.error_message or f"SASL authentication failed (error {answer.error_code})")
        try:
            token = client.respond(answer.auth_bytes or b"")
        except SaslClientError as exc:
            raise AuthenticationError(str(exc)) from None
