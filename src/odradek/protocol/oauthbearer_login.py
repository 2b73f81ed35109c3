"""Kafka's unsecured OAUTHBEARER login (KIP-255) for our clients: the token is an unsigned JWT (`alg: none`)
built from the JAAS options of Kafka's OAuthBearerLoginModule as its OAuthBearerUnsecuredLoginCallbackHandler
builds it (`unsecuredLoginStringClaim_sub="alice"`, number and list claims, `unsecuredLoginLifetimeSeconds`,
`unsecuredLoginExtension_<name>` SASL extensions); for development and tests only, like the broker's
unsecured validator it meets. The mechanism's exchange is `OAuthBearerClient` in sasl_client.py."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Mapping
from typing import Any

STRING_CLAIM, NUMBER_CLAIM, LIST_CLAIM = "unsecuredLoginStringClaim_", "unsecuredLoginNumberClaim_", \
    "unsecuredLoginListClaim_"
EXTENSION = "unsecuredLoginExtension_"
PRINCIPAL_CLAIM_NAME, LIFETIME, SCOPE_CLAIM_NAME = ("unsecuredLoginPrincipalClaimName",
                                                    "unsecuredLoginLifetimeSeconds", "unsecuredLoginScopeClaimName")
DEFAULT_LIFETIME_S = 3600


class LoginOptionError(ValueError):
    """The JAAS options cannot make a token (no principal, a number that is not one, ...)."""


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def login_claims(options: Mapping[str, str], now: float | None = None) -> dict[str, Any]:
    """The token's claims from the login module's options: iat and exp (lifetime, default an hour) and each
    string, number and list claim; the principal claim (default `sub`) must be one of them."""
    issued = time.time() if now is None else now
    try:
        lifetime = float(options.get(LIFETIME, DEFAULT_LIFETIME_S))
    except ValueError:
        raise LoginOptionError(f"{LIFETIME} is not a number: {options[LIFETIME]!r}") from None
    claims: dict[str, Any] = {"iat": int(issued), "exp": int(issued + lifetime)}
    for key, value in options.items():
        if key.startswith(STRING_CLAIM) and len(key) > len(STRING_CLAIM):
            claims[key[len(STRING_CLAIM):]] = value
        elif key.startswith(NUMBER_CLAIM) and len(key) > len(NUMBER_CLAIM):
            try:
                number = float(value)
            except ValueError:
                raise LoginOptionError(f"{key} is not a number: {value!r}") from None
            claims[key[len(NUMBER_CLAIM):]] = int(number) if number.is_integer() else number
        elif key.startswith(LIST_CLAIM) and len(key) > len(LIST_CLAIM):
            # Kafka's form: the value's first character separates the items (",a,b" is ["a", "b"])
            claims[key[len(LIST_CLAIM):]] = value[1:].split(value[0]) if value else []
    principal_claim = options.get(PRINCIPAL_CLAIM_NAME, "sub")
    if not isinstance(claims.get(principal_claim), str) or not claims[principal_claim]:
        raise LoginOptionError(f"the OAuthBearerLoginModule options name no principal: set "
                               f'{STRING_CLAIM}{principal_claim}="<name>"')
    return claims


def unsecured_token(options: Mapping[str, str], now: float | None = None) -> str:
    """An unsigned JWT (header, claims and an empty signature) from the login module's options."""
    header = {"alg": "none"}
    return (f"{_b64url(json.dumps(header, separators=(',', ':')).encode())}."
            f"{_b64url(json.dumps(login_claims(options, now), separators=(',', ':')).encode())}.")


def extensions_of(options: Mapping[str, str]) -> dict[str, str]:
    """The SASL extensions the options name (`unsecuredLoginExtension_<name>`)."""
    return {k[len(EXTENSION):]: v for k, v in options.items() if k.startswith(EXTENSION) and len(k) > len(EXTENSION)}
