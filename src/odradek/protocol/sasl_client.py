"""The client side of SASL PLAIN (RFC 4616), SCRAM-SHA-256/512 (RFC 5802, RFC 7677) and OAUTHBEARER (RFC 7628,
with Kafka's unsecured tokens: protocol/oauthbearer_login.py), sans-io: each
mechanism turns the server's challenges into the tokens a client sends in SaslAuthenticate. Used by
brokers on an SASL inter-broker listener and by the tools that speak the protocol themselves.

`SaslClient.first()` is the first token; `respond(challenge)` answers each server message and returns
None once the exchange is complete (for SCRAM, after the server's signature checked out). A failure, such
as a server signature that does not match (the server does not know the password either), raises
`SaslClientError`."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Mapping

from odradek.protocol.oauthbearer_login import LoginOptionError, extensions_of, unsecured_token

SCRAM_DIGESTS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISMS = ("PLAIN", *SCRAM_DIGESTS, "OAUTHBEARER")
MIN_SCRAM_ITERATIONS = 4096  # RFC 7677's minimum, also Kafka's


class SaslClientError(Exception):
    """The exchange cannot go on: a malformed or unexpected server message, or a failed server proof."""


class SaslClient:
    mechanism: str

    def first(self) -> bytes:
        raise NotImplementedError

    def respond(self, challenge: bytes) -> bytes | None:
        raise NotImplementedError


class PlainClient(SaslClient):
    mechanism = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        self.username = username
        self.password = password

    def first(self) -> bytes:
        return b"\0" + self.username.encode() + b"\0" + self.password.encode()

    def respond(self, challenge: bytes) -> bytes | None:
        if challenge:
            raise SaslClientError("PLAIN: the server sent a challenge after the credentials")
        return None


def _saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _fields(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise SaslClientError(f"SCRAM: malformed server message {message[:80]!r}")
        out.setdefault(key, value)
    return out


class ScramClient(SaslClient):
    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None = None) -> None:
        if mechanism not in SCRAM_DIGESTS:
            raise ValueError(f"unknown SCRAM mechanism {mechanism}")
        self.mechanism = mechanism
        self.digest = SCRAM_DIGESTS[mechanism]
        self.password = password
        self.nonce = nonce or secrets.token_urlsafe(24)
        self.client_first_bare = f"n={_saslname(username)},r={self.nonce}"
        self._server_signature: bytes | None = None
        self._done = False

    def _hmac(self, key: bytes, msg: bytes) -> bytes:
        return hmac.new(key, msg, self.digest).digest()

    def first(self) -> bytes:
        return ("n,," + self.client_first_bare).encode()

    def respond(self, challenge: bytes) -> bytes | None:
        if self._done:
            raise SaslClientError("SCRAM: the server went on after its final message")
        if self._server_signature is None:
            return self._client_final(challenge.decode("utf-8", "replace"))
        self._verify(challenge.decode("utf-8", "replace"))
        return None

    def _client_final(self, server_first: str) -> bytes:
        f = _fields(server_first)
        if "e" in f:
            raise SaslClientError(f"SCRAM: the server refused: {f['e']}")
        nonce, salt_b64, iterations_text = f.get("r", ""), f.get("s"), f.get("i", "")
        if not nonce.startswith(self.nonce) or len(nonce) == len(self.nonce):
            raise SaslClientError("SCRAM: the server's nonce does not extend the client's")
        if salt_b64 is None or not iterations_text.isdigit():
            raise SaslClientError("SCRAM: the server's first message lacks a salt or iteration count")
        iterations = int(iterations_text)
        if iterations < MIN_SCRAM_ITERATIONS:
            raise SaslClientError(f"SCRAM: {iterations} iterations is below the minimum {MIN_SCRAM_ITERATIONS}")
        try:
            salt = base64.b64decode(salt_b64, validate=True)
        except ValueError:
            raise SaslClientError("SCRAM: the server's salt is not base64") from None
        salted = hashlib.pbkdf2_hmac(self.digest, self.password.encode(), salt, iterations)
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self.digest, client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self.client_first_bare},{server_first},{without_proof}".encode()
        signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _verify(self, server_final: str) -> None:
        f = _fields(server_final)
        if "e" in f:
            raise SaslClientError(f"SCRAM: the server refused: {f['e']}")
        try:
            verifier = base64.b64decode(f.get("v", ""), validate=True)
        except ValueError:
            verifier = b""
        assert self._server_signature is not None
        if not hmac.compare_digest(verifier, self._server_signature):
            raise SaslClientError("SCRAM: the server's signature does not match (it does not know the password)")
        self._done = True


class OAuthBearerClient(SaslClient):
    """RFC 7628's client: GS2 header, `auth=Bearer <token>`, the extensions, each after the separator."""

    mechanism = "OAUTHBEARER"

    def __init__(self, token: str, extensions: Mapping[str, str] | None = None) -> None:
        self.token = token
        self.extensions = dict(extensions or {})
        self._challenged = False

    def first(self) -> bytes:
        parts = [f"auth=Bearer {self.token}", *(f"{k}={v}" for k, v in self.extensions.items())]
        return ("n,,\x01" + "\x01".join(parts) + "\x01\x01").encode()

    def respond(self, challenge: bytes) -> bytes | None:
        if not challenge:
            return None  # the server took the token
        if self._challenged:
            return None
        self._challenged = True  # the server's JSON error: RFC 7628 has the client answer with a lone separator
        return b"\x01"


def sasl_client(mechanism: str, username: str, password: str, login_options: Mapping[str, str] | None = None
                ) -> SaslClient:
    """The mechanism's client: PLAIN and SCRAM with the username and password, OAUTHBEARER with a fresh unsecured
    token from the OAuthBearerLoginModule's `login_options` (SaslClientError when they cannot make one)."""
    mechanism = mechanism.upper()
    if mechanism == "PLAIN":
        return PlainClient(username, password)
    if mechanism in SCRAM_DIGESTS:
        return ScramClient(mechanism, username, password)
    if mechanism == "OAUTHBEARER":
        options = login_options or {}
        try:
            return OAuthBearerClient(unsecured_token(options), extensions_of(options))
        except LoginOptionError as exc:
            raise SaslClientError(f"OAUTHBEARER: {exc}") from None
    raise ValueError(f"SASL mechanism {mechanism} is not supported (use one of {', '.join(MECHANISMS)})")
