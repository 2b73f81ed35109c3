"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), sans-io: credentials in Kafka's stored form
(`salt=...,stored_key=...,server_key=...,iterations=N`, base64), their derivation from a password or a
salted password (AlterUserScramCredentials sends the latter), and the server side of the exchange."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass

MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
# KIP-554's mechanism numbers in Describe/AlterUserScramCredentials.
MECHANISM_IDS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384  # Kafka's bounds
# Kafka's message for any SCRAM failure (the server does not say whether the user exists).
INVALID_CREDENTIALS = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_config(self) -> str:
        b64 = base64.b64encode
        return (f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
                f"server_key={b64(self.server_key).decode()},iterations={self.iterations}")

    @classmethod
    def from_config(cls, text: str) -> ScramCredential:
        fields = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
        # base64 values may end in '=': split at the first '=' only, so they survive
        return cls(base64.b64decode(fields["salt"]), base64.b64decode(fields["stored_key"]),
                   base64.b64decode(fields["server_key"]), int(fields["iterations"]))


def _hmac(digest: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, digest).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism], password.encode(), salt, iterations)


def credential_from_salted(mechanism: str, salted: bytes, salt: bytes, iterations: int) -> ScramCredential:
    digest = MECHANISMS[mechanism]
    client_key = _hmac(digest, salted, b"Client Key")
    stored_key = hashlib.new(digest, client_key).digest()
    server_key = _hmac(digest, salted, b"Server Key")
    return ScramCredential(salt, stored_key, server_key, iterations)


def credential(mechanism: str, password: str, iterations: int = MIN_ITERATIONS,
               salt: bytes | None = None) -> ScramCredential:
    salt = salt if salt is not None else os.urandom(32)
    return credential_from_salted(mechanism, salted_password(mechanism, password, salt, iterations), salt, iterations)


class ScramError(Exception):
    """The exchange failed; the message is Kafka's."""


def _attributes(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        key, eq, value = part.partition("=")
        if not eq or not key:
            raise ScramError(f"Invalid SCRAM message attribute '{part}'")
        out[key] = value
    return out


def _saslname(name: str) -> str:
    if "=" in name.replace("=2C", "").replace("=3D", ""):
        raise ScramError("Invalid username")
    return name.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """One server-side exchange: `client_first` gives the user name (the caller looks the credential up),
    `server_first` the challenge, `client_final` checks the proof and gives the server's final message."""

    def __init__(self, mechanism: str, server_nonce: str | None = None) -> None:
        self.mechanism = mechanism
        self._digest = MECHANISMS[mechanism]
        self._server_nonce = server_nonce or base64.b64encode(os.urandom(24)).decode().rstrip("=")
        self.user = ""
        self._gs2 = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._credential: ScramCredential | None = None

    def client_first(self, message: bytes) -> str:
        text = message.decode(errors="strict")
        parts = text.split(",", 2)
        if len(parts) != 3 or parts[0] not in ("n", "y") or (parts[1] and not parts[1].startswith("a=")):
            raise ScramError("Invalid SCRAM client first message (channel binding is not supported)")
        self._gs2 = f"{parts[0]},{parts[1]},"
        self._client_first_bare = parts[2]
        attrs = _attributes(parts[2])  # n=<user>,r=<nonce>[,extensions]
        if "n" not in attrs or "r" not in attrs:
            raise ScramError("Invalid SCRAM client first message")
        self.user = _saslname(attrs["n"])
        self._nonce = attrs["r"] + self._server_nonce
        return self.user

    def server_first(self, credential: ScramCredential) -> bytes:
        self._credential = credential
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        return self._server_first.encode()

    def client_final(self, message: bytes) -> bytes:
        if self._credential is None:
            raise ScramError("SCRAM client final message before the first")
        text = message.decode()
        without_proof, sep, proof_attr = text.rpartition(",p=")
        if not sep:
            raise ScramError("Invalid SCRAM client final message")
        attrs = _attributes(without_proof)
        if attrs.get("r") != self._nonce:
            raise ScramError("Invalid SCRAM nonce")
        if base64.b64decode(attrs.get("c", "")) != self._gs2.encode():
            raise ScramError("Invalid SCRAM channel binding")
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        cred = self._credential
        signature = _hmac(self._digest, cred.stored_key, auth_message)
        proof = base64.b64decode(proof_attr)
        if len(proof) != len(signature):
            raise ScramError("Invalid SCRAM proof")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self._digest, client_key).digest(), cred.stored_key):
            raise ScramError("Invalid SCRAM proof")
        server_signature = _hmac(self._digest, cred.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)
