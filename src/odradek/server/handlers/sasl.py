"""SaslHandshake (v0-1) and SaslAuthenticate (v0-2), and the bare tokens that follow a SaslHandshake v0:
the wire side of `security/sasl.py`'s state machine. A failed authentication is answered with
SASL_AUTHENTICATION_FAILED, logged once, and the connection closed after
`connection.failed.authentication.delay.ms`."""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from typing import TYPE_CHECKING, Any

from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from odradek.protocol.errors import ErrorCode
from odradek.security.sasl import AuthenticationFailed, IllegalState, NeedCredential, SaslServer
from odradek.security.scram_store import read_credential
from odradek.server.network import Connection, Response, limited
from odradek.server.registry import RequestContext, handles

if TYPE_CHECKING:
    from odradek.server.broker import Broker

log = logging.getLogger("odradek.network")


def _failed(conn: Connection, sasl: SaslServer, exc: AuthenticationFailed) -> None:
    mechanism = sasl.mechanism.name if sasl.mechanism is not None else "?"
    limited.info("Failed authentication with %s (principal %s, mechanism %s, listener %s): %s", conn.peer,
             sasl.attempted_principal(), mechanism, conn.security.name, exc)
    delay_s = sasl.settings.failed_delay_ms / 1000
    asyncio.get_running_loop().call_later(delay_s, conn.close, "failed authentication", True)


def _succeeded(conn: Connection, sasl: SaslServer) -> None:
    conn.authenticated(sasl.principal or conn.principal)
    log.debug("Authenticated %s as %s (mechanism %s)", conn.peer, conn.principal,
              sasl.mechanism.name if sasl.mechanism else "?")


@handles(SaslHandshakeRequest, SaslHandshakeResponse, versions=(0, 1))
async def sasl_handshake(ctx: RequestContext, request: Any) -> SaslHandshakeResponse:
    conn = ctx.connection
    sasl = conn.sasl
    if sasl is None:
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    mechanisms = list(sasl.settings.mechanisms)
    try:
        enabled = sasl.handshake(request.mechanism, ctx.version)
    except IllegalState:
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=mechanisms)
    if not enabled:
        limited.info("Closing connection from %s: SASL mechanism %s is not enabled on listener %s (enabled: %s)",
                 conn.peer, request.mechanism, conn.security.name, ",".join(mechanisms))
        asyncio.get_running_loop().call_soon(conn.close, "unsupported SASL mechanism", True)
        return SaslHandshakeResponse(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=mechanisms)
    return SaslHandshakeResponse(error_code=ErrorCode.NONE, mechanisms=mechanisms)


@handles(SaslAuthenticateRequest, SaslAuthenticateResponse, versions=(0, 2))
async def sasl_authenticate(ctx: RequestContext, request: Any) -> SaslAuthenticateResponse:
    conn = ctx.connection
    sasl = conn.sasl
    if sasl is None or sasl.complete:
        return SaslAuthenticateResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, auth_bytes=b"",
                                        error_message="SaslAuthenticate request received after successful "
                                                      "authentication" if sasl else "not a SASL listener",
                                        session_lifetime_ms=0)
    try:
        answer = await _exchange(ctx.broker, sasl, bytes(request.auth_bytes or b""))
    except IllegalState as exc:
        return SaslAuthenticateResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message=str(exc),
                                        auth_bytes=b"", session_lifetime_ms=0)
    except AuthenticationFailed as exc:
        _failed(conn, sasl, exc)
        return SaslAuthenticateResponse(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=str(exc),
                                        auth_bytes=b"", session_lifetime_ms=0)
    lifetime = 0
    if sasl.complete:
        _succeeded(conn, sasl)
        if ctx.version >= 1:
            lifetime = sasl.start_session(time.monotonic())
    return SaslAuthenticateResponse(error_code=ErrorCode.NONE, error_message=None, auth_bytes=answer,
                                    session_lifetime_ms=lifetime)


async def _exchange(broker: Broker, sasl: SaslServer, token: bytes) -> bytes:
    answer = sasl.authenticate(token)
    if isinstance(answer, NeedCredential):
        credential = await read_credential(broker.store, answer.user, answer.mechanism)
        return sasl.provide(credential)
    return answer


async def raw_token(broker: Broker, conn: Connection, sasl: SaslServer, frame: memoryview) -> Response:
    """A bare token after SaslHandshake v0: answered with a bare (size-prefixed) token; a failure just
    closes the connection, as the protocol has no error to send."""
    try:
        answer = await _exchange(broker, sasl, bytes(frame))
    except AuthenticationFailed as exc:
        _failed(conn, sasl, exc)
        return None
    if sasl.complete:
        _succeeded(conn, sasl)
    return [struct.pack(">i", len(answer)), answer]
