"""Kafka client properties (a `--command-config` file, Spark's `kafka.*` options) for our two kinds of
client: `client_security` builds the `ClientSecurity` of our own protocol connections, and
`librdkafka_config` translates the Java client's security keys into librdkafka's, so one properties file
serves every tool. Both accept the Java names (`sasl.jaas.config`, `ssl.truststore.location`, ...) and
librdkafka's (`sasl.username`, `ssl.ca.location`, ...); stores must be PEM, as for the broker."""

from __future__ import annotations

from collections.abc import Mapping

from odradek.config_keys import ConfigError
from odradek.protocol.client_security import PLAINTEXT, PROTOCOLS, ClientSecurity
from odradek.protocol.oauthbearer_login import (
    EXTENSION,
    LIFETIME,
    LIST_CLAIM,
    PRINCIPAL_CLAIM_NAME,
    SCOPE_CLAIM_NAME,
    STRING_CLAIM,
    LoginOptionError,
    extensions_of,
    login_claims,
)
from odradek.protocol.sasl_client import MECHANISMS
from odradek.security import tls
from odradek.security.sasl import parse_jaas

# Java client key -> librdkafka key, for PEM files (librdkafka reads the same files).
_RENAMED = {
    "ssl.truststore.location": "ssl.ca.location",
    "ssl.truststore.certificates": "ssl.ca.pem",
    "ssl.keystore.certificate.chain": "ssl.certificate.pem",
    "ssl.keystore.key": "ssl.key.pem",
}
_JAVA_ONLY = ("ssl.truststore.type", "ssl.keystore.type", "ssl.truststore.password", "ssl.keystore.password",
              "ssl.protocol", "ssl.enabled.protocols", "sasl.jaas.config")


def jaas_credentials(jaas: str, key: str = "sasl.jaas.config") -> tuple[str, str]:
    """(username, password) of the first login module of a client `sasl.jaas.config` that names both."""
    for module in parse_jaas(jaas, key):
        if "username" in module.options and "password" in module.options:
            return module.options["username"], module.options["password"]
    raise ConfigError(f"{key} names no username and password (e.g. "
                      'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" '
                      'password="alice-secret";)')


OAUTH_LOGIN_MODULE = "OAuthBearerLoginModule"


def oauth_login_options(jaas: str, key: str = "sasl.jaas.config") -> dict[str, str]:
    """The options of a client `sasl.jaas.config`'s OAuthBearerLoginModule (Kafka's unsecured login:
    unsecuredLoginStringClaim_sub="alice", ...)."""
    for module in parse_jaas(jaas, key):
        if module.name.rsplit(".", 1)[-1] == OAUTH_LOGIN_MODULE:
            return dict(module.options)
    raise ConfigError(f"{key} names no OAuthBearerLoginModule for SASL OAUTHBEARER (e.g. "
                      "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                      'unsecuredLoginStringClaim_sub="alice";)')


def _mechanism(props: Mapping[str, str], default: str = "GSSAPI") -> str:
    return props.get("sasl.mechanism", props.get("sasl.mechanisms", default)).strip().upper()


def _credentials(props: Mapping[str, str]) -> tuple[str, str]:
    jaas = props.get("sasl.jaas.config")
    if jaas:
        return jaas_credentials(jaas)
    if "sasl.username" in props:
        return props["sasl.username"], props.get("sasl.password", "")
    raise ConfigError("a SASL security.protocol needs sasl.jaas.config (or sasl.username and sasl.password)")


def client_security(props: Mapping[str, str]) -> ClientSecurity:
    """The ClientSecurity of client properties; raises ConfigError (one line) on what cannot work."""
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise ConfigError(f"Invalid value {protocol} for configuration security.protocol: "
                          f"String must be one of: {', '.join(PROTOCOLS)}")
    if protocol == "PLAINTEXT":
        return PLAINTEXT
    context = None
    if protocol in ("SSL", "SASL_SSL"):
        java = dict(props)
        if "ssl.ca.location" in props and "ssl.truststore.location" not in props:
            java["ssl.truststore.location"] = props["ssl.ca.location"]
        if props.get("ssl.endpoint.identification.algorithm", "").lower() == "none":
            java["ssl.endpoint.identification.algorithm"] = ""
        if "ssl.certificate.location" in props and "ssl.keystore.location" not in props:
            # librdkafka's separate key and certificate files: one PEM holds both for Python's ssl
            java["ssl.keystore.key"] = _read(props.get("ssl.key.location", props["ssl.certificate.location"]))
            java["ssl.keystore.certificate.chain"] = _read(props["ssl.certificate.location"])
        context = tls.client_context(java.get)
    mechanism = username = password = None
    login: tuple[tuple[str, str], ...] = ()
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        mechanism = _mechanism(props)
        if mechanism not in MECHANISMS:
            raise ConfigError(f"sasl.mechanism {mechanism} is not supported: use one of {', '.join(MECHANISMS)}")
        if mechanism == "OAUTHBEARER":
            login = tuple(_oauth_options(props).items())
        else:
            username, password = _credentials(props)
    return ClientSecurity(protocol, context, mechanism, username or "", password or "", login)


def _oauth_options(props: Mapping[str, str]) -> dict[str, str]:
    """The unsecured login's options: from sasl.jaas.config, else librdkafka's sasl.oauthbearer.config."""
    jaas = props.get("sasl.jaas.config")
    if jaas:
        return oauth_login_options(jaas)
    if "sasl.oauthbearer.config" in props:
        return _options_of_rdkafka(props["sasl.oauthbearer.config"])
    raise ConfigError("SASL OAUTHBEARER needs sasl.jaas.config with an OAuthBearerLoginModule (or "
                      "sasl.oauthbearer.config)")


# librdkafka's unsecured JWT settings (sasl.oauthbearer.config) <-> the JAAS options of Kafka's unsecured login
_RDKAFKA_OAUTH = {"principalClaimName": PRINCIPAL_CLAIM_NAME, "scopeClaimName": SCOPE_CLAIM_NAME,
                  "lifeSeconds": LIFETIME}


def _options_of_rdkafka(config: str) -> dict[str, str]:
    fields = dict(part.split("=", 1) for part in config.split() if "=" in part)
    options = {f"{STRING_CLAIM}{fields.get('principalClaimName', 'sub')}": fields.get("principal", "")}
    for name, option in _RDKAFKA_OAUTH.items():
        if name in fields:
            options[option] = fields[name]
    if "scope" in fields:
        options[f"{LIST_CLAIM}{fields.get('scopeClaimName', 'scope')}"] = "," + fields["scope"]
    for name, value in fields.items():
        if name.startswith("extension_"):
            options[f"{EXTENSION}{name[len('extension_'):]}"] = value
    return options


def _rdkafka_of_options(options: Mapping[str, str]) -> str:
    """librdkafka's sasl.oauthbearer.config for the same unsecured token (it cannot take number claims)."""
    try:
        claims = login_claims(options)
    except LoginOptionError as exc:
        raise ConfigError(str(exc)) from None
    fields = {"principal": claims[options.get(PRINCIPAL_CLAIM_NAME, "sub")]}
    for name, option in _RDKAFKA_OAUTH.items():
        if option in options:
            fields[name] = options[option]
    scope = claims.get(options.get(SCOPE_CLAIM_NAME, "scope"))
    if isinstance(scope, list) and scope:
        fields["scope"] = ",".join(item for item in scope if item)
    for name, value in extensions_of(options).items():
        fields[f"extension_{name}"] = value
    for name, value in fields.items():
        if not value or any(c.isspace() for c in value):
            raise ConfigError(f"OAUTHBEARER login option {name}={value!r}: librdkafka's clients need a value "
                              "without blanks")
    return " ".join(f"{k}={v}" for k, v in fields.items())


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None


def librdkafka_config(props: Mapping[str, str]) -> dict[str, str]:
    """`props` with the Java client's security keys turned into librdkafka's: the JAAS entry's username and
    password become sasl.username/sasl.password, PEM trust and key stores ssl.ca.location /
    ssl.certificate.location + ssl.key.location, an empty endpoint identification algorithm 'none'."""
    out = {k: v for k, v in props.items() if k not in _JAVA_ONLY and k not in _RENAMED}
    for java, rdkafka in _RENAMED.items():
        if java in props:
            out.setdefault(rdkafka, props[java])
    jaas = props.get("sasl.jaas.config")
    if jaas and _mechanism(props, "") == "OAUTHBEARER":
        # Kafka's unsecured login becomes librdkafka's own unsecured JWT with the same claims
        out.setdefault("enable.sasl.oauthbearer.unsecure.jwt", "true")
        out.setdefault("sasl.oauthbearer.config", _rdkafka_of_options(oauth_login_options(jaas)))
    elif jaas:
        username, password = jaas_credentials(jaas)
        out.setdefault("sasl.username", username)
        out.setdefault("sasl.password", password)
    keystore = props.get("ssl.keystore.location")
    if keystore:
        out.pop("ssl.keystore.location", None)
        out.setdefault("ssl.certificate.location", keystore)
        out.setdefault("ssl.key.location", keystore)
    if props.get("ssl.key.password") is not None and "ssl.key.password" not in out:
        out["ssl.key.password"] = props["ssl.key.password"]
    if "ssl.endpoint.identification.algorithm" in props:
        algorithm = props["ssl.endpoint.identification.algorithm"].strip().lower()
        out["ssl.endpoint.identification.algorithm"] = algorithm if algorithm in ("https", "none") else "none"
    return out
