"""The HTTP transport under both of Odradek's schema registry clients (`serde/registry_client.py` for the
serializers, `admin_client/schema_registry.py` for the tools and the console): blocking calls over the standard
library's urllib with the registry's media type, basic auth from Confluent's `basic.auth.user.info`
(USER:PASSWORD), https verified against the system's CAs or a PEM CA file, each call bounded by a timeout and by
the size of the answer read, comma-separated URLs tried in turn while they do not answer. Failures come back
structured (`Refused`: the HTTP status and the registry's error_code and message; `Unreachable`; `BadAnswer`)
for each client to word in its own way."""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
MAX_ERROR_BODY = 64 << 10


class TransportError(Exception):
    """A call that gave no usable answer."""


class Refused(TransportError):
    """The registry answered an HTTP error: `status`, and its JSON's `error_code` and `message` when it sent one."""

    def __init__(self, url: str, status: int, reason: str, error_code: int | None, message: str | None) -> None:
        super().__init__(f"{url} answered {status} {reason}")
        self.url, self.status, self.reason = url, status, reason
        self.error_code, self.message = error_code, message


class Unreachable(TransportError):
    """No URL answered; the message names each with its reason."""


class BadAnswer(TransportError):
    """An answer larger than the bound, or not JSON."""


class RegistryTransport:
    def __init__(self, urls: Sequence[str], *, user_info: str | None = None, ca_file: str | None = None,
                 timeout_s: float = 10.0, max_answer: int = 16 << 20) -> None:
        self.urls = [u.rstrip("/") for u in urls]
        self.timeout_s = timeout_s
        self.max_answer = max_answer
        self._auth = "Basic " + base64.b64encode(user_info.encode()).decode() if user_info else None
        self._ssl: ssl.SSLContext | None = None
        if any(u.startswith("https:") for u in self.urls):
            try:
                self._ssl = ssl.create_default_context(cafile=ca_file or None)
            except (OSError, ssl.SSLError) as exc:
                raise TransportError(f"cannot read the CA file {ca_file}: {exc}") from None

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """The decoded JSON answer of `method path` (None for an empty one)."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": CONTENT_TYPE + ", application/json"}
        if data is not None:
            headers["Content-Type"] = CONTENT_TYPE
        if self._auth:
            headers["Authorization"] = self._auth
        unreachable: list[str] = []
        for base in self.urls:
            request = urllib.request.Request(base + path, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s,  # noqa: S310 (the operator's URL)
                                            context=self._ssl if base.startswith("https:") else None) as answer:
                    raw = answer.read(self.max_answer + 1)
            except urllib.error.HTTPError as exc:
                raise _refused(exc, base + path) from None
            except (urllib.error.URLError, OSError) as exc:  # refused, timed out, a TLS failure
                unreachable.append(f"{base}: {getattr(exc, 'reason', None) or exc}")
                continue
            if len(raw) > self.max_answer:
                raise BadAnswer(f"the schema registry at {base} answered more than {self.max_answer} bytes")
            try:
                return json.loads(raw) if raw else None
            except ValueError:
                raise BadAnswer(f"the schema registry at {base} answered something that is not JSON") from None
        raise Unreachable("; ".join(unreachable))


def _refused(exc: urllib.error.HTTPError, url: str) -> Refused:
    try:
        doc = json.loads(exc.read(MAX_ERROR_BODY) or b"{}")
    except (ValueError, OSError):
        doc = None
    code = doc.get("error_code") if isinstance(doc, dict) else None
    message = doc.get("message") if isinstance(doc, dict) else None
    return Refused(url, exc.code, str(exc.reason), code if isinstance(code, int) else None,
                   " ".join(str(message).split()) if message else None)
