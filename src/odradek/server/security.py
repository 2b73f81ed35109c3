"""What one listener requires of its connections, built once at start-up from the broker's config: the
TLS context and handshake timeout of SSL and SASL_SSL listeners (`tls.py`) and the SASL settings of
SASL_PLAINTEXT and SASL_SSL listeners (`sasl.py`). Per-listener keys (`listener.name.<listener>.<key>`)
win over the broker-wide ones, as in Kafka. `inter_broker_security` is the client side of the inter-broker listener,
which this broker's replica fetchers, forwarding and transaction markers use to reach its peers."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass

from odradek.config import BrokerConfig, Listener
from odradek.config_keys import ConfigError, Password
from odradek.protocol.client_security import PLAINTEXT, ClientSecurity
from odradek.protocol.sasl_client import MECHANISMS as CLIENT_MECHANISMS
from odradek.security import oauthbearer, tls
from odradek.security.principal_mapping import Rule, parse_rules
from odradek.security.sasl import SUPPORTED_MECHANISMS, SaslSettings, parse_jaas, plain_users


def listener_lookup(get: Callable[[str], object], is_set: Callable[[str], bool], listener: str) -> tls.Lookup:
    """A lookup over a BrokerConfig's `get`/`is_set` for `listener`: `listener.name.<listener>.<key>`
    (listener name in lower case, as Kafka writes it, or as spelled) over `<key>`; only keys actually
    configured count (the caller applies the defaults). Passwords give their text."""
    prefixes = (f"listener.name.{listener.lower()}.", f"listener.name.{listener}.")

    def lookup(key: str) -> str | None:
        for name in (prefixes[0] + key, prefixes[1] + key, key):
            if is_set(name):
                value = get(name)
                if value is not None:
                    return _text(value)
        return None

    return lookup


def _text(value: object) -> str:
    if isinstance(value, Password):
        return value.value
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


@dataclass(frozen=True, slots=True)
class ListenerSecurity:
    name: str
    protocol: str
    ssl_context: ssl.SSLContext | None = None
    sasl: SaslSettings | None = None
    principal_rules: list[Rule] | None = None  # ssl.principal.mapping.rules; None: DEFAULT
    handshake_timeout_s: float = 10.0  # ssl.handshake.timeout.ms (TLS listeners)

    @property
    def authenticates(self) -> bool:
        """Whether every client of this listener proves who it is (SASL, or TLS with a required client
        certificate); elsewhere clients may be User:ANONYMOUS."""
        if self.sasl is not None:
            return True
        return self.ssl_context is not None and self.ssl_context.verify_mode == ssl.CERT_REQUIRED

    @classmethod
    def plaintext(cls, name: str = "PLAINTEXT") -> ListenerSecurity:
        return cls(name, "PLAINTEXT")

    @classmethod
    def for_listener(cls, config: BrokerConfig, listener: Listener) -> ListenerSecurity:
        """Raises ConfigError (one line) on a setting this listener cannot use."""
        protocol = listener.security_protocol
        lookup = listener_lookup(config.value, config.is_set, listener.name)
        context = tls.server_context(lookup) if protocol in ("SSL", "SASL_SSL") else None
        sasl = None
        if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
            sasl = _sasl_settings(lookup, listener.name, config.get("connection.failed.authentication.delay.ms"),
                                  config.get("sasl.server.max.receive.size"))
        rules_text = (lookup("ssl.principal.mapping.rules") or "DEFAULT").strip()
        rules = parse_rules(rules_text) if context is not None and rules_text != "DEFAULT" else None
        timeout_ms = lookup("ssl.handshake.timeout.ms") or config.get("ssl.handshake.timeout.ms")
        return cls(listener.name, protocol, context, sasl, rules, int(timeout_ms) / 1000)


def _sasl_settings(lookup: tls.Lookup, listener: str, delay_ms: int, max_receive_size: int = 524288) -> SaslSettings:
    raw = lookup("sasl.enabled.mechanisms") or "GSSAPI"  # Kafka's default
    mechanisms = tuple(m.strip().upper() for m in raw.split(",") if m.strip())
    # SCRAM credentials live in the metadata store (/config/users/<user>); Kafka also wants a
    # ScramLoginModule JAAS entry per listener, which Odradek does not require.
    unsupported = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
    if unsupported or not mechanisms:
        raise ConfigError(
            f"sasl.enabled.mechanisms={raw}: Odradek supports {', '.join(SUPPORTED_MECHANISMS)}"
            f" (set listener.name.{listener.lower()}.sasl.enabled.mechanisms)"
        )
    users: dict[str, str] = {}
    if "PLAIN" in mechanisms:
        key = f"listener.name.{listener.lower()}.plain.sasl.jaas.config"
        jaas = lookup("plain.sasl.jaas.config") or lookup("sasl.jaas.config")
        if jaas is None:
            raise ConfigError(f"PLAIN needs the users in {key} (or sasl.jaas.config), e.g. "
                              'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="..."; ')
        users = plain_users(jaas, key)
    validator = _oauthbearer_validator(lookup, listener) if oauthbearer.MECHANISM in mechanisms else None
    reauth_ms = int(lookup("connections.max.reauth.ms") or 0)
    max_receive = lookup("sasl.server.max.receive.size")  # a listener's own value wins
    return SaslSettings(mechanisms, users, delay_ms, reauth_ms, int(max_receive) if max_receive else max_receive_size,
                        validator)


def _oauthbearer_validator(lookup: tls.Lookup, listener: str) -> oauthbearer.UnsecuredValidator:
    """OAUTHBEARER needs the OAuthBearerLoginModule entry (its unsecuredValidator* options), found as PLAIN's
    users are: `listener.name.<l>.oauthbearer.sasl.jaas.config`, else `sasl.jaas.config`."""
    key = f"listener.name.{listener.lower()}.oauthbearer.sasl.jaas.config"
    jaas = lookup("oauthbearer.sasl.jaas.config") or lookup("sasl.jaas.config")
    modules = [m for m in parse_jaas(jaas, key) if m.name == oauthbearer.LOGIN_MODULE] if jaas else []
    if len(modules) != 1:
        raise ConfigError(f"OAUTHBEARER needs exactly one {oauthbearer.LOGIN_MODULE} entry in {key} (or "
                          f'sasl.jaas.config), e.g. {oauthbearer.LOGIN_MODULE} required unsecuredLoginStringClaim_sub="admin";')
    return oauthbearer.UnsecuredValidator.from_options(modules[0].options, key)


def unsecured_token_warnings(listeners: list[ListenerSecurity]) -> list[str]:
    """What start-up warns about once: OAUTHBEARER tokens on these listeners are not signed."""
    return [f"Listener {sec.name} enables SASL/OAUTHBEARER with Kafka's unsecured validator: tokens are not signed "
            "and any client can claim any principal; use it for development only"
            for sec in listeners if sec.sasl is not None and sec.sasl.oauthbearer is not None]


def inter_broker_security(config: BrokerConfig) -> ClientSecurity:
    """How this broker connects to its peers' inter-broker listener, from Kafka's keys: the listener's TLS
    keys (trust store, and its key store as the client certificate for mutual TLS), and for SASL
    `sasl.mechanism.inter.broker.protocol` with the username and password of the JAAS entry for that
    mechanism (`listener.name.<l>.<mechanism>.sasl.jaas.config`, else `sasl.jaas.config`).
    Raises ConfigError (one line) on what cannot work."""
    from odradek.security.client_config import jaas_credentials, oauth_login_options

    listener = config.inter_broker_listener
    protocol = listener.security_protocol
    if protocol == "PLAINTEXT":
        return PLAINTEXT
    lookup = listener_lookup(config.value, config.is_set, listener.name)
    context = tls.client_context(lookup) if protocol in ("SSL", "SASL_SSL") else None
    if protocol == "SSL":
        return ClientSecurity(protocol, context)
    mechanism = str(config.get("sasl.mechanism.inter.broker.protocol")).strip().upper()
    if mechanism not in CLIENT_MECHANISMS:
        raise ConfigError(f"sasl.mechanism.inter.broker.protocol={mechanism}: Odradek's brokers authenticate to each"
                          f" other with {', '.join(CLIENT_MECHANISMS)}")
    enabled = _sasl_settings(lookup, listener.name, 0).mechanisms
    if mechanism not in enabled:
        raise ConfigError(f"sasl.mechanism.inter.broker.protocol={mechanism} is not in the inter-broker listener"
                          f" {listener.name}'s sasl.enabled.mechanisms ({','.join(enabled)})")
    key = f"listener.name.{listener.name.lower()}.{mechanism.lower()}.sasl.jaas.config"
    jaas = lookup(f"{mechanism.lower()}.sasl.jaas.config") or lookup("sasl.jaas.config")
    if jaas is None:
        raise ConfigError(f"the inter-broker listener {listener.name} uses SASL {mechanism}: set the broker's own "
                          f'username="..." password="..." in {key} (or sasl.jaas.config)')
    if mechanism == "OAUTHBEARER":  # the broker's own unsecured login, from the same JAAS entry as its validator
        return ClientSecurity(protocol, context, mechanism, login_options=tuple(oauth_login_options(jaas, key).items()))
    username, password = jaas_credentials(jaas, key)
    return ClientSecurity(protocol, context, mechanism, username, password)


ANONYMOUS = "User:ANONYMOUS"


def trust_warnings(listeners: list[ListenerSecurity], super_users: frozenset[str], inter_broker: str,
                   clustered: bool) -> list[str]:
    """What start-up warns about when an authorizer runs (Kafka's trust model: no listener is privileged;
    who a client is comes from what its listener authenticated, else User:ANONYMOUS)."""
    out = []
    anonymous_super = ANONYMOUS in super_users
    for sec in listeners:
        if sec.authenticates:
            continue
        if anonymous_super:
            out.append(f"Listener {sec.name} ({sec.protocol}) does not authenticate its clients and super.users "
                       f"names {ANONYMOUS}: every client that reaches it is a super user and no ACL applies to it")
        else:
            out.append(f"Listener {sec.name} ({sec.protocol}) does not authenticate its clients: they are all "
                       f"{ANONYMOUS}, authorized by the ACLs for that principal")
            if clustered and sec.name == inter_broker:
                out.append(f"The inter-broker listener {sec.name} does not authenticate: brokers reach each other as "
                           f"{ANONYMOUS}, which super.users does not name, so replica fetches and transaction markers "
                           "will be refused (CLUSTER_AUTHORIZATION_FAILED); authenticate brokers (SASL or mutual TLS) "
                           "and name their principal in super.users")
    return out
