"""SASL authentication of one connection, sans-io: the handshake and token exchanges of Kafka's
SaslHandshake/SaslAuthenticate (or raw tokens after SaslHandshake v0), the mechanisms (PLAIN, with users
from Kafka's JAAS syntax; SCRAM; OAUTHBEARER with Kafka's unsecured validator), and which requests a
connection may send before it is authenticated. The network layer and the handlers feed it requests; it
never touches sockets, and reads the wall clock only through its settings' `wall_clock` (token expiry)."""

from __future__ import annotations

import enum
import hmac
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka.protocol.metadata import ApiVersionsRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from odradek.config_keys import ConfigError
from odradek.security import oauthbearer, scram

SUPPORTED_MECHANISMS = ("PLAIN", *scram.MECHANISMS, oauthbearer.MECHANISM)
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
INVALID_CREDENTIALS = "Authentication failed: Invalid username or password"
# What a client may send before authentication completes.
PRE_AUTH_APIS = frozenset((ApiVersionsRequest.API_KEY, SaslHandshakeRequest.API_KEY, SaslAuthenticateRequest.API_KEY))


class AuthenticationFailed(Exception):
    """The client's credentials were refused; str() is the message the client receives."""

    def __init__(self, message: str, user: str | None = None) -> None:
        super().__init__(message)
        self.user = user


# ---- JAAS ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LoginModule:
    name: str
    flag: str
    options: dict[str, str]


_JAAS_SECTION = re.compile(r"^\w+\s*\{(.*)\}\s*;?$", re.S)  # a JAAS file section: KafkaServer { ... };
_JAAS_TOKEN = re.compile(r'\s*(?:(?P<q>"(?:[^"\\]|\\.)*")|(?P<sym>[;=])|(?P<word>[^\s;="]+))', re.S)


def parse_jaas(text: str, key: str = "sasl.jaas.config") -> list[LoginModule]:
    """Kafka's JAAS configuration syntax: `<LoginModule class> <flag> key=value ... ;`, one or more,
    values quoted or bare (a whole JAAS file's `Name { ... };` wrapper is accepted too)."""
    text = text.strip()
    section = _JAAS_SECTION.match(text)
    if section is not None:
        text = section.group(1).strip()
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _JAAS_TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise ConfigError(f"Invalid value [hidden] for configuration {key}: unexpected text at character {pos}")
        pos = m.end()
        if m.group("q") is not None:
            tokens.append(("value", re.sub(r"\\(.)", r"\1", m.group("q")[1:-1])))
        elif m.group("sym") is not None:
            tokens.append((m.group("sym"), m.group("sym")))
        else:
            tokens.append(("word", m.group("word")))
    modules: list[LoginModule] = []
    i = 0
    flags = ("required", "requisite", "sufficient", "optional")
    while i < len(tokens):
        if tokens[i][0] == ";":
            i += 1
            continue
        if i + 1 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1][1].lower() not in flags:
            raise ConfigError(f"Invalid value [hidden] for configuration {key}: expected "
                              "'<LoginModule class> <required|requisite|sufficient|optional> key=value ... ;'")
        name, flag = tokens[i][1], tokens[i + 1][1].lower()
        i += 2
        options: dict[str, str] = {}
        while i < len(tokens) and tokens[i][0] != ";":
            if i + 2 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1][0] != "=" \
                    or tokens[i + 2][0] not in ("word", "value"):
                raise ConfigError(f"Invalid value [hidden] for configuration {key}: "
                                  f"options of {name} must be key=value")
            options[tokens[i][1]] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise ConfigError(f"Invalid value [hidden] for configuration {key}: "
                              "a login module entry must end with ';'")
        modules.append(LoginModule(name, flag, options))
    if not modules:
        raise ConfigError(f"Invalid value [hidden] for configuration {key}: no login module")
    return modules


def plain_users(jaas: str, key: str) -> dict[str, str]:
    """user -> password from PlainLoginModule's `user_<name>="<password>"` options."""
    modules = [m for m in parse_jaas(jaas, key) if m.name == PLAIN_LOGIN_MODULE]
    if not modules:
        raise ConfigError(f"Invalid value [hidden] for configuration {key}: PLAIN needs {PLAIN_LOGIN_MODULE}")
    return {k[len("user_"):]: v for m in modules for k, v in m.options.items() if k.startswith("user_")}


# ---- mechanisms -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NeedCredential:
    """What a SCRAM step returns when the server must look the user's credential up before answering."""

    user: str
    mechanism: str


class Mechanism:
    """One authentication exchange: `step` takes the client's token and returns the server's (or asks for
    a credential, then `provide` answers), raising AuthenticationFailed; `user` is set once it completes."""

    name = ""
    user: str | None = None
    attempted_user: str | None = None
    complete = False
    credential_expires_ms: int | None = None  # when the credential expires (ms since the epoch), if it does

    def step(self, token: bytes) -> bytes | NeedCredential:
        raise NotImplementedError

    def provide(self, credential: scram.ScramCredential | None) -> bytes:
        raise AuthenticationFailed("no credential was asked for")


class Plain(Mechanism):
    """RFC 4616: one message `authzid NUL authcid NUL password`."""

    name = "PLAIN"

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users

    def step(self, token: bytes) -> bytes:
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens, got " + str(len(parts)))
        try:
            authzid, user, password = (p.decode() for p in parts)
        except UnicodeDecodeError:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: not UTF-8") from None
        self.attempted_user = user or None
        if not user:
            raise AuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified", user)
        expected = self._users.get(user)
        # compare even for an unknown user, so that timing does not tell which users exist
        matches = hmac.compare_digest(password.encode(), (expected or "\0" + password).encode())
        if expected is None or not matches:
            raise AuthenticationFailed(INVALID_CREDENTIALS, user)
        if authzid and authzid != user:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username", user)
        self.user = user
        self.complete = True
        return b""


class Scram(Mechanism):
    """SCRAM-SHA-256/512: client-first (-> the user's credential is looked up) then server-first, then
    client-final (-> proof checked) and server-final."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._server = scram.ScramServer(name)
        self._failure = scram.INVALID_CREDENTIALS.format(name)
        self._stage = 0

    def step(self, token: bytes) -> bytes | NeedCredential:
        try:
            if self._stage == 0:
                self.attempted_user = self._server.client_first(token)
                self._stage = 1
                return NeedCredential(self.attempted_user, self.name)
            if self._stage == 2:
                final = self._server.client_final(token)
                self.user, self.complete = self.attempted_user, True
                return final
        except (scram.ScramError, UnicodeDecodeError, ValueError) as exc:
            raise AuthenticationFailed(self._failure, self.attempted_user) from exc
        raise AuthenticationFailed(self._failure, self.attempted_user)

    def provide(self, credential: scram.ScramCredential | None) -> bytes:
        if self._stage != 1 or credential is None:
            raise AuthenticationFailed(self._failure, self.attempted_user)
        self._stage = 2
        return self._server.server_first(credential)


class OAuthBearer(Mechanism):
    """RFC 7628 with Kafka's unsecured validator: the initial response carries the token; a refused token is
    answered with a JSON error challenge, which the client acknowledges with a lone \\x01 before the server
    fails the exchange (Kafka's OAuthBearerSaslServer)."""

    name = oauthbearer.MECHANISM
    _GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"

    def __init__(self, validator: oauthbearer.UnsecuredValidator, wall_clock: Callable[[], float]) -> None:
        self._validator = validator
        self._clock = wall_clock
        self._error: str | None = None  # the failure to report once the client acknowledges the challenge

    def step(self, token: bytes) -> bytes:
        if token == b"\x01" and self._error is not None:
            raise AuthenticationFailed(self._error, self.attempted_user)
        self._error = None
        try:
            response = oauthbearer.parse_initial_response(token)
        except oauthbearer.MalformedResponse as exc:
            raise AuthenticationFailed(f"{self._GENERIC}: {exc}") from None
        self.attempted_user = _printable(response.authzid) or None
        try:
            valid = self._validator.validate(response.token, self._clock() * 1000)
        except oauthbearer.InvalidToken as exc:
            challenge = exc.json_error()
            self._error = f"{challenge}: {exc}"
            return challenge.encode()
        self.attempted_user = _printable(valid.principal)
        if response.authzid and response.authzid != valid.principal:
            raise AuthenticationFailed(
                f"Authentication failed: Client requested an authorization id ({_printable(response.authzid)}) that "
                f"is different from the token's principal name ({self.attempted_user})", self.attempted_user)
        self.user, self.complete, self.credential_expires_ms = valid.principal, True, valid.expires_ms
        return b""


def _printable(text: str, limit: int = 200) -> str:
    """A client-chosen name as it may appear in a message or a log line: one line, bounded."""
    return text[:limit].encode("unicode_escape").decode("ascii") if not text.isprintable() else text[:limit]


# ---- one connection ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SaslSettings:
    """A listener's SASL configuration."""

    mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str] = field(default_factory=dict)
    failed_delay_ms: int = 100
    max_reauth_ms: int = 0  # connections.max.reauth.ms (KIP-368): 0 = no cap (a token's exp still ends a session)
    # sasl.server.max.receive.size: the largest frame a connection may send before it has authenticated
    max_receive_size: int = 524288
    # OAUTHBEARER's validator, from the listener's OAuthBearerLoginModule options
    oauthbearer: oauthbearer.UnsecuredValidator | None = None
    wall_clock: Callable[[], float] = time.time

    def mechanism(self, name: str) -> Mechanism:
        if name == "PLAIN":
            return Plain(self.plain_users)
        if name in scram.MECHANISMS:
            return Scram(name)
        if name == oauthbearer.MECHANISM and self.oauthbearer is not None:
            return OAuthBearer(self.oauthbearer, self.wall_clock)
        raise ValueError(name)


class State(enum.Enum):
    HANDSHAKE = "handshake"  # waiting for SaslHandshake
    AUTHENTICATE = "authenticate"  # waiting for SaslAuthenticate
    RAW_TOKEN = "raw token"  # after SaslHandshake v0: the next frame is a bare token
    COMPLETE = "complete"
    FAILED = "failed"


class SaslServer:
    """The SASL state of one connection."""

    __slots__ = ("settings", "state", "mechanism", "principal", "expires_at", "reauthenticating")

    def __init__(self, settings: SaslSettings) -> None:
        self.settings = settings
        self.state = State.HANDSHAKE
        self.mechanism: Mechanism | None = None
        self.principal: str | None = None
        self.expires_at: float | None = None  # monotonic time the session ends (KIP-368), None: never
        self.reauthenticating = False

    def start_session(self, now: float) -> int:
        """Authentication completed through SaslAuthenticate v1+: the session lifetime to tell the client
        (ms; 0 when sessions do not expire): connections.max.reauth.ms, or the credential's remaining
        lifetime (an OAUTHBEARER token's exp) when that is sooner, as Kafka's SaslServerAuthenticator."""
        max_reauth = self.settings.max_reauth_ms
        expiry = self.mechanism.credential_expires_ms if self.mechanism is not None else None
        if expiry is None and max_reauth <= 0:
            return 0
        lifetime = max_reauth
        if expiry is not None:
            remaining = expiry - round(self.settings.wall_clock() * 1000)
            lifetime = remaining if max_reauth <= 0 else min(remaining, max_reauth)
        lifetime = max(0, int(lifetime))
        self.expires_at = now + lifetime / 1000
        return lifetime

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    @property
    def complete(self) -> bool:
        return self.state is State.COMPLETE

    def handshake(self, mechanism: str, version: int) -> bool:
        """SaslHandshake: whether the mechanism is enabled (if not, the connection is to be closed)."""
        if self.state is State.COMPLETE and self.expires_at is not None and version >= 1:
            self.reauthenticating = True  # KIP-368: the same principal authenticates again
            self.state = State.HANDSHAKE
        if self.state is not State.HANDSHAKE:
            raise IllegalState(f"Unexpected SaslHandshake in state {self.state.value}")
        if mechanism not in self.settings.mechanisms:
            self.state = State.FAILED
            return False
        self.mechanism = self.settings.mechanism(mechanism)
        self.state = State.AUTHENTICATE if version >= 1 else State.RAW_TOKEN
        return True

    def authenticate(self, token: bytes) -> bytes | NeedCredential:
        """A SaslAuthenticate token (or a raw one after handshake v0): the server's answer, or a request for
        a credential (answer it with `provide`); raises AuthenticationFailed (the connection is then to be
        closed after the configured delay)."""
        if self.state not in (State.AUTHENTICATE, State.RAW_TOKEN) or self.mechanism is None:
            raise IllegalState(f"Unexpected SaslAuthenticate in state {self.state.value}")
        return self._run(self.mechanism.step, token)

    def provide(self, credential: scram.ScramCredential | None) -> bytes:
        """The credential asked for (None: no such user): the server's answer."""
        assert self.mechanism is not None
        answer = self._run(self.mechanism.provide, credential)
        assert isinstance(answer, bytes)
        return answer

    def _run(self, fn: Callable[[Any], bytes | NeedCredential], arg: Any) -> bytes | NeedCredential:
        assert self.mechanism is not None
        try:
            answer = fn(arg)
        except AuthenticationFailed:
            self.state = State.FAILED
            raise
        if self.mechanism.complete:
            principal = f"User:{self.mechanism.user}"
            if self.reauthenticating and principal != self.principal:
                self.state = State.FAILED
                raise AuthenticationFailed(f"re-authentication as {principal} on a connection of {self.principal}",
                                           self.mechanism.user)
            self.state = State.COMPLETE
            self.principal = principal
            self.reauthenticating = False
        return answer

    def attempted_principal(self) -> str:
        """For the failure log line: User:<name the client gave>, or User:? before one was given."""
        user = self.mechanism.attempted_user or self.mechanism.user if self.mechanism else None
        return f"User:{user or '?'}"


class IllegalState(Exception):
    """A SASL request out of order (Kafka's ILLEGAL_SASL_STATE)."""
