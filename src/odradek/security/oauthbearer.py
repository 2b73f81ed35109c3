"""SASL/OAUTHBEARER's server side (KIP-255, RFC 7628) with Kafka's unsecured-token validator, pure: the
client's initial response (`n,[a=authzid],` `\\x01auth=Bearer <token>\\x01` [key=value\\x01...] `\\x01`), the
unsigned JWS rules of Kafka's OAuthBearerUnsecuredValidatorCallbackHandler (alg "none", an empty signature,
`exp` in the future within the allowed clock skew, `iat` not after now, the principal claim a string, the
required scope), its JAAS options, and the JSON error the server sends as its challenge. Signed tokens
(JWKS, KIP-768) are not supported: a token whose alg is not "none" is refused."""

from __future__ import annotations

import base64
import binascii
import json
import math
from dataclasses import dataclass
from typing import Any

from odradek.config_keys import ConfigError

MECHANISM = "OAUTHBEARER"
LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
# The largest initial response a client may send (Kafka bounds it only by sasl.server.max.receive.size):
# the token is decoded and parsed before the client is authenticated.
MAX_RESPONSE_BYTES = 65536
_SEP = "\x01"
_TOKEN_CHARS = frozenset("-_~+/.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_VALUE_CHARS = frozenset(chr(c) for c in range(0x21, 0x7F)) | frozenset(" \t\r\n")


class MalformedResponse(Exception):
    """The client's initial response is not RFC 7628's; str() says why in one line."""


class InvalidToken(Exception):
    """The validator refused the token: `status` (invalid_token or insufficient_scope) and `scope` go in the
    JSON error the server sends; str() is the reason, for the log and the final message."""

    def __init__(self, reason: str, status: str = "invalid_token", scope: str | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.scope = scope

    def json_error(self) -> str:
        """Kafka's error challenge (OAuthBearerSaslServer.jsonErrorResponse)."""
        text = f'{{"status":"{self.status}"'
        if self.scope is not None:
            text += f', "scope":"{self.scope}"'
        return text + "}"


@dataclass(frozen=True, slots=True)
class InitialResponse:
    token: str
    authzid: str
    extensions: dict[str, str]


def parse_initial_response(data: bytes) -> InitialResponse:
    """RFC 7628's client initial response, as Kafka's OAuthBearerClientInitialResponse reads it."""
    if len(data) > MAX_RESPONSE_BYTES:
        raise MalformedResponse(f"OAUTHBEARER client first message is larger than {MAX_RESPONSE_BYTES} bytes")
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise MalformedResponse("Invalid OAUTHBEARER client first message: not ASCII") from None
    if not text.startswith("n,"):
        raise MalformedResponse("Invalid OAUTHBEARER client first message: GS2 header must start with 'n,'")
    comma = text.find(",", 2)
    if comma < 0:
        raise MalformedResponse("Invalid OAUTHBEARER client first message: no end to the GS2 header")
    authz = text[2:comma]
    if authz and (not authz.startswith("a=") or len(authz) == 2 or "=" in authz[2:].replace("=2C", "")
                  .replace("=3D", "")):
        raise MalformedResponse("Invalid OAUTHBEARER client first message: bad authorization id")
    body = text[comma + 1:]
    if len(body) < 3 or body[0] != _SEP or not body.endswith(_SEP + _SEP):
        raise MalformedResponse("Invalid OAUTHBEARER client first message: expected \\x01key=value\\x01...\\x01")
    pairs: dict[str, str] = {}
    for pair in body[1:-2].split(_SEP):
        key, eq, value = pair.partition("=")
        if not eq or not key.isascii() or not key.isalpha() or not value or not set(value) <= _VALUE_CHARS:
            raise MalformedResponse("Invalid OAUTHBEARER client first message: bad key=value pair")
        pairs[key] = value
    auth = pairs.pop("auth", None)
    if auth is None:
        raise MalformedResponse("Invalid OAUTHBEARER client first message: 'auth' not specified")
    scheme, _, token = auth.partition(" ")
    token = token.lstrip(" ")
    if not scheme or not scheme.replace("_", "a").isalnum() or not token or not set(token.rstrip("=")) <= _TOKEN_CHARS:
        raise MalformedResponse("Invalid OAUTHBEARER client first message: invalid 'auth' format")
    if scheme.lower() != "bearer":
        raise MalformedResponse(f"Invalid scheme in OAUTHBEARER client first message: {scheme[:40]}")
    return InitialResponse(token, authz[2:], pairs)


# ---- the unsecured validator -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Token:
    principal: str
    expires_ms: int  # the exp claim, ms since the epoch
    scope: frozenset[str]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _section(part: str, what: str) -> dict[str, Any]:
    """A Base64URL (or, as Kafka's decoder takes, plain Base64) JSON object of the compact serialization."""
    try:
        raw = base64.b64decode(part.replace("+", "-").replace("/", "_") + "=" * (-len(part) % 4), altchars=b"-_",
                               validate=True)
    except (binascii.Error, ValueError):
        raise InvalidToken(f"malformed Base64 URL encoded value in the JWS {what}") from None
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than the parser's stack
        raise InvalidToken(f"malformed JSON in the JWS {what}") from None
    if not isinstance(value, dict):
        raise InvalidToken(f"the JWS {what} is not a JSON object")
    return value


def _number(claims: dict[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or abs(value) > 1e13:  # seconds: beyond year 300,000 is no time
        raise InvalidToken(f"The '{name}' claim was not of type Number")
    return float(value)


@dataclass(frozen=True, slots=True)
class UnsecuredValidator:
    """Kafka's OAuthBearerUnsecuredValidatorCallbackHandler, from the OAuthBearerLoginModule's options."""

    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    clock_skew_ms: int = 0

    @classmethod
    def from_options(cls, options: dict[str, str], key: str) -> UnsecuredValidator:
        skew_text = options.get("unsecuredValidatorAllowableClockSkewMs", "").strip() or "0"
        try:
            skew = int(skew_text)
        except ValueError:
            raise ConfigError(f"{key}: unsecuredValidatorAllowableClockSkewMs={skew_text} is not a number") from None
        if skew < 0:
            raise ConfigError(f"{key}: Allowable clock skew millis must not be negative: {skew_text}")
        return cls(options.get("unsecuredValidatorPrincipalClaimName", "").strip() or "sub",
                   options.get("unsecuredValidatorScopeClaimName", "").strip() or "scope",
                   tuple(options.get("unsecuredValidatorRequiredScope", "").split()), skew)

    def validate(self, token: str, now_ms: float) -> Token:
        """The token's principal and expiry, or InvalidToken, in Kafka's order of checks."""
        if ".." in token:
            raise InvalidToken("Malformed compact serialization contains '..'")
        parts = token.split(".")
        if len(parts) != 3:
            raise InvalidToken("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
        header = _section(parts[0], "header")
        claims = _section(parts[1], "claims")
        alg = header.get("alg")
        if alg is None:
            raise InvalidToken("JWS header must have an Algorithm value")
        if alg != "none":
            raise InvalidToken(f"Unsecured JWS must have 'none' for an algorithm (got {str(alg)[:20]!r}): "
                               "signed tokens need a JWKS validator, which this broker does not have")
        if parts[2]:
            raise InvalidToken("Unsecured JWS must not contain a digital signature")
        scope = self._scope(claims)
        exp = _number(claims, "exp")
        if exp is None:
            raise InvalidToken("No expiration time in JWT")
        principal = claims.get(self.principal_claim)
        if principal is not None and not isinstance(principal, str):
            raise InvalidToken(f"The {self.principal_claim} claim had the incorrect type: {type(principal).__name__}")
        if not principal or not principal.strip():
            raise InvalidToken(f"No principal name in JWT claim: {self.principal_claim}")
        iat = _number(claims, "iat")
        if iat is not None and iat * 1000 > now_ms + self.clock_skew_ms:
            raise InvalidToken("The Issued At value was after the indicated time plus allowable clock skew")
        if now_ms - self.clock_skew_ms >= exp * 1000:
            raise InvalidToken("The indicated time minus allowable clock skew was on or after the Expiration Time")
        if iat is not None and exp <= iat:
            raise InvalidToken("The Expiration Time was not after the Issued At time")
        for needed in self.required_scope:
            if needed not in scope:
                raise InvalidToken(f"The provided scope ({sorted(scope)}) was missing a required scope ({needed})",
                                   "insufficient_scope", "[" + ", ".join(self.required_scope) + "]")
        return Token(principal, round(exp * 1000), scope)

    def _scope(self, claims: dict[str, Any]) -> frozenset[str]:
        value = claims.get(self.scope_claim)
        if value is None:
            return frozenset()
        if isinstance(value, str):
            return frozenset((value.strip(),)) if value.strip() else frozenset()
        if not isinstance(value, list):
            raise InvalidToken(f"The '{self.scope_claim}' claim was not of type List")
        return frozenset(str(s).strip() for s in value if str(s).strip())
