"""Who may use the console: the access token, signed session cookies, CSRF tokens and the Host allowlist.

The console admits one party, its operator: whoever holds the access token. The token is random (32 bytes,
URL-safe) unless the operator fixes it (`--token-file FILE` or the `ODRADEK_CONSOLE_TOKEN` variable); it
is compared in constant time. A correct token buys a session: a cookie `<session id>.<issued>.<MAC>`,
signed with HMAC-SHA256 under a key of this console run, so sessions need no server-side table and survive
a restart of the serving process (the supervisor hands the same key down) but not of the console. Each
session's CSRF token is the MAC of its id under the same key: a state-changing request must carry it
besides the cookie. Nothing here touches HTTP; `gate` applies it to requests.

The Host allowlist (security/http_host.py, shared with the broker's HTTP endpoint) defends against DNS
rebinding.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from odradek.security.http_host import HostAllowlist, host_name, same_secret

__all__ = ["HostAllowlist", "Sessions", "TokenError", "host_name", "load_token", "new_token", "same_secret"]

TOKEN_ENV = "ODRADEK_CONSOLE_TOKEN"
MIN_TOKEN_LENGTH = 16
SESSION_MAX_AGE_S = 24 * 3600


class TokenError(Exception):
    """An access token that cannot be used (unreadable file, too short), worded for the operator."""


def new_token() -> str:
    """A fresh access token: 32 random bytes, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(32)


def load_token(token_file: str | None, environ: Mapping[str, str] = os.environ) -> tuple[str, str | None]:
    """The access token and where it came from: `--token-file`, else $ODRADEK_CONSOLE_TOKEN, else a new
    one (source None: the console prints it)."""
    if token_file:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise TokenError(f"cannot read the token file {token_file}: {getattr(exc, 'strerror', None) or exc}") from None
        source = f"--token-file {token_file}"
    elif environ.get(TOKEN_ENV, "").strip():
        token, source = environ[TOKEN_ENV].strip(), TOKEN_ENV
    else:
        return new_token(), None
    if len(token) < MIN_TOKEN_LENGTH or any(c.isspace() for c in token):
        raise TokenError(f"the token from {source} must be at least {MIN_TOKEN_LENGTH} characters, without spaces")
    return token, source


class Sessions:
    """Checks the access token; issues and verifies session cookies and each session's CSRF token."""

    def __init__(self, token: str, key: bytes, max_age_s: float = SESSION_MAX_AGE_S,
                 clock: Callable[[], float] = time.time) -> None:
        self._token = token
        self._key = key
        self.max_age_s = max_age_s
        self._clock = clock

    def _mac(self, message: str) -> str:
        return hmac.new(self._key, message.encode(), hashlib.sha256).hexdigest()

    def check_token(self, candidate: str | None) -> bool:
        return same_secret(candidate, self._token)

    def issue(self) -> str:
        """A new session's cookie value."""
        body = f"{secrets.token_urlsafe(18)}.{int(self._clock())}"
        return f"{body}.{self._mac('session.' + body)}"

    def session_id(self, cookie: str | None) -> str | None:
        """The session id in a cookie value, or None when it is missing, forged, tampered with or expired."""
        if not cookie or cookie.count(".") != 2:
            return None
        sid, issued, mac = cookie.split(".")
        if not same_secret(mac, self._mac(f"session.{sid}.{issued}")):
            return None
        try:
            age = self._clock() - int(issued)
        except ValueError:
            return None
        return sid if 0 <= age <= self.max_age_s else None

    def csrf_token(self, sid: str) -> str:
        return self._mac("csrf." + sid)

    def check_csrf(self, sid: str | None, candidate: str | None) -> bool:
        return sid is not None and same_secret(candidate, self.csrf_token(sid))
