"""Unsecured JWTs (KIP-255's `alg: none` tokens) and SASL/OAUTHBEARER initial responses, built by hand
for the tests that send exactly the token they choose."""

from __future__ import annotations

import base64
import json
import time
from typing import Any


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsecured_jwt(sub: str = "alice", lifetime_s: float = 300.0, scope: Any = "requiredScope",
                  alg: str = "none", signature: str = "", now: float | None = None, **claims: Any) -> str:
    now = time.time() if now is None else now
    payload = {"sub": sub, "iat": int(now), "exp": int(now + lifetime_s), **claims}
    if scope is not None:
        payload["scope"] = scope
    header = {"alg": alg, "typ": "JWT"}
    return (f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(payload).encode())}."
            f"{signature}")


def initial_response(token: str, authzid: str = "") -> bytes:
    """RFC 7628's client initial response: GS2 header, auth=Bearer <token>, no extensions."""
    return f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {token}\x01\x01".encode()
