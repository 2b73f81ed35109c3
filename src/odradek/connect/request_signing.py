"""Signed internal requests between the workers of a Connect cluster (KIP-507, the `sessioned` protocol): the
leader writes a session key to the config topic (`session-key`, rotated after `inter.worker.key.ttl.ms`), and a
worker that has the leader write its connector's task configs signs the request body with it
(`X-Connect-Authorization`: the body's HMAC in base64, `X-Connect-Request-Signature-Algorithm`: the MAC's Java
name). A worker refuses an unsigned internal request (400), one signed with an algorithm outside
`inter.worker.verification.algorithms` (400), one it cannot check yet (503: no key read) and one whose signature
does not match (403), in Kafka's words."""

from __future__ import annotations

import base64
import binascii
import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SIGNATURE_HEADER = "X-Connect-Authorization"
ALGORITHM_HEADER = "X-Connect-Request-Signature-Algorithm"
SESSION_KEY_KEY = "session-key"  # its record's key in the config topic

# Java's MAC names, the hash each stands for, and the key size (bits) Java's KeyGenerator gives by default
MACS: dict[str, tuple[str, int]] = {
    "HmacSHA1": ("sha1", 512), "HmacSHA224": ("sha224", 224), "HmacSHA256": ("sha256", 256),
    "HmacSHA384": ("sha384", 384), "HmacSHA512": ("sha512", 512),
}


@dataclass(frozen=True)
class SessionKey:
    key: bytes
    algorithm: str
    created_ms: int

    def record(self) -> dict[str, Any]:
        """Its value in the config topic, as Kafka writes it (schemaless JSON of SESSION_KEY_V0)."""
        return {"key": base64.b64encode(self.key).decode(), "algorithm": self.algorithm,
                "creation-timestamp": self.created_ms}

    @classmethod
    def from_record(cls, doc: Any) -> SessionKey | None:
        """The key a config-topic record holds, or None if it is not one."""
        if not isinstance(doc, Mapping):
            return None
        key, algorithm, created = doc.get("key"), doc.get("algorithm"), doc.get("creation-timestamp")
        if not isinstance(key, str) or not isinstance(algorithm, str) or not isinstance(created, int):
            return None
        try:
            return cls(base64.b64decode(key, validate=True), algorithm, created)
        except (binascii.Error, ValueError):
            return None


def new_session_key(algorithm: str, size_bits: int | None, now_ms: int) -> SessionKey:
    """A random key for `algorithm` of `size_bits` (the algorithm's default size if None)."""
    bits = size_bits if size_bits is not None else MACS[algorithm][1]
    return SessionKey(os.urandom((bits + 7) // 8), algorithm, now_ms)


def needs_rotation(current: SessionKey | None, algorithm: str, size_bits: int | None, ttl_ms: int,
                   now_ms: int) -> bool:
    """Whether the leader must write a new key: none yet, expired, or of another algorithm or size than its
    configuration's (Kafka's checkForKeyRotation)."""
    if current is None:
        return True
    if ttl_ms > 0 and current.created_ms + ttl_ms <= now_ms:
        return True
    bits = size_bits if size_bits is not None else MACS[algorithm][1]
    return current.algorithm != algorithm or len(current.key) != (bits + 7) // 8


def check_config(props: Mapping[str, str]) -> str | None:
    """What is wrong with a distributed worker's `inter.worker.*` keys, in Kafka's words (None: nothing)."""
    supported = ", ".join(MACS)

    def unsupported(name: str, value: str) -> str:
        return (f"Invalid value {value} for configuration {name}: the algorithm is not supported by this worker; "
                f"the supported algorithms are: {supported}")

    verification = [a.strip() for a in props.get("inter.worker.verification.algorithms", "").split(",") if a.strip()]
    if not verification:
        return ("Invalid value [] for configuration inter.worker.verification.algorithms: At least one signature "
                "verification algorithm must be provided")
    for algorithm in verification:
        if algorithm not in MACS:
            return unsupported("inter.worker.verification.algorithms", algorithm)
    for name in ("inter.worker.signature.algorithm", "inter.worker.key.generation.algorithm"):
        if props.get(name, "") not in MACS:
            return unsupported(name, props.get(name, ""))
    signature = props["inter.worker.signature.algorithm"]
    if signature not in verification:
        return (f"Invalid value {signature} for configuration inter.worker.signature.algorithm: Signature algorithm "
                "must be present in inter.worker.verification.algorithms list")
    size = props.get("inter.worker.key.size")
    if size is not None and (not size.isdigit() or int(size) < 8):
        return f"Invalid value {size} for configuration inter.worker.key.size: a key size in bits is needed"
    ttl = props.get("inter.worker.key.ttl.ms", "")
    if not ttl.isdigit():
        return f"Invalid value {ttl} for configuration inter.worker.key.ttl.ms: Not a number of type INT"
    return None


def _mac(key: bytes, algorithm: str, body: bytes) -> bytes:
    return hmac.new(key, body, MACS[algorithm][0]).digest()


def signature_headers(key: SessionKey, algorithm: str, body: bytes) -> dict[str, str]:
    """The headers that sign `body` with `key` under MAC `algorithm` (`inter.worker.signature.algorithm`)."""
    return {SIGNATURE_HEADER: base64.b64encode(_mac(key.key, algorithm, body)).decode(), ALGORITHM_HEADER: algorithm}


def refusal(headers: Mapping[str, str], body: bytes, key: SessionKey | None,
            verification_algorithms: list[str]) -> tuple[int, str] | None:
    """Why a worker refuses an internal request (HTTP status, Kafka's message), or None if it is signed well."""
    algorithm, signature = headers.get(ALGORITHM_HEADER), headers.get(SIGNATURE_HEADER)
    if algorithm is None or signature is None:
        return 400, "Internal request missing required signature"
    if algorithm not in MACS:
        return 400, f"Algorithm {algorithm} not available"
    try:
        given = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError) as exc:
        return 400, str(exc)
    if algorithm not in verification_algorithms:
        return 400, (f"This worker does not support the '{algorithm}' key signing algorithm used by other workers. "
                     f"This worker is currently configured to use: [{', '.join(verification_algorithms)}]. Check "
                     "that all workers' configuration files permit the same set of signature algorithms, and "
                     "correct any misconfigured worker and restart it.")
    if key is None:
        return 503, ("This worker is still starting up and has not been able to read a session key from the config "
                     "topic yet")
    if not hmac.compare_digest(_mac(key.key, algorithm, body), given):
        return 403, "Internal request contained invalid signature."
    return None
