"""TLS for SSL and SASL_SSL listeners: an `ssl.SSLContext` built from Kafka's `ssl.*` keys, read for
one listener (`listener.name.<name>.ssl.*` first, then `ssl.*`); and the client side of the same keys, for
a broker reaching its peers over the inter-broker listener and for the tools' `--command-config`. Only PEM
key and trust stores are supported; a JKS or PKCS12 store stops start-up with one line saying so."""

from __future__ import annotations

import os
import re
import ssl
import tempfile
from collections.abc import Callable

from odradek.config_keys import ConfigError
from odradek.security.principal_mapping import Rule, map_principal

# Reads one key for the listener: its raw value, or None when unset (security.listener_lookup).
Lookup = Callable[[str], str | None]

_PROTOCOLS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_TLS13_SUITES = ("TLS_AES_", "TLS_CHACHA20_")


def _store_type(lookup: Lookup, kind: str) -> str:
    """`ssl.<kind>.type`, where unset means PEM unless the location names a JKS/PKCS12 file (Kafka's
    default type is JKS; a PEM file under it would not load in Kafka either)."""
    explicit = lookup(f"ssl.{kind}.type")
    location = lookup(f"ssl.{kind}.location") or ""
    store_type = (explicit or "").strip().upper()
    if not store_type:
        suffix = location.lower().rsplit(".", 1)[-1] if "." in location else ""
        store_type = {"jks": "JKS", "p12": "PKCS12", "pfx": "PKCS12", "pkcs12": "PKCS12"}.get(suffix, "PEM")
    if store_type != "PEM":
        raise ConfigError(
            f"ssl.{kind}.type {store_type} is not supported by Odradek: convert the {kind} to PEM and set "
            f"ssl.{kind}.type=PEM" + (f" ({location})" if location else "")
        )
    return store_type


_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.S)


def normalize_pem(text: str) -> str:
    """PEM blocks with their lines restored: a properties file joins a value's continuation lines (Kafka's
    parser accepts that), OpenSSL needs the base64 in lines."""
    blocks = []
    for label, body in _PEM_BLOCK.findall(text):
        b64 = "".join(body.split())
        lines = [b64[i:i + 64] for i in range(0, len(b64), 64)]
        blocks.append("\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"]))
    return "\n".join(blocks) + "\n"


def _openssl_name(name: str) -> str | None:
    """The OpenSSL name of a TLS 1.2 suite given by its IANA name (Kafka's, from the JVM), e.g.
    TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 -> ECDHE-RSA-AES128-GCM-SHA256."""
    if not name.startswith("TLS_") or "_WITH_" not in name:
        return None
    kx, _, rest = name[4:].partition("_WITH_")
    parts = rest.split("_")
    if parts[:2] == ["CHACHA20", "POLY1305"]:
        enc, mac = "CHACHA20-POLY1305", ""
    elif len(parts) >= 3 and parts[0] in ("AES", "CAMELLIA", "ARIA"):
        mode = parts[2] if len(parts) > 3 else ""
        enc = parts[0] + parts[1] + (f"-{mode}" if mode in ("GCM", "CCM") else "")
        mac = parts[-1]
    else:
        return None
    prefix = "" if kx == "RSA" else kx.replace("_", "-") + "-"
    return prefix + enc + (f"-{mac}" if mac else "")


def _ciphers(ctx: ssl.SSLContext, raw: str) -> None:
    names = [n.strip() for n in raw.split(",") if n.strip()]
    if not names:
        return
    known = {c["name"] for c in ctx.get_ciphers()}
    chosen: list[str] = []
    for name in names:
        if name.startswith(_TLS13_SUITES):
            continue  # TLS 1.3 suites are not selectable through Python's ssl module; all stay enabled
        openssl = name if name in known else _openssl_name(name)
        if openssl is None or openssl not in known:
            raise ConfigError(f"Invalid value {raw} for configuration ssl.cipher.suites: unknown cipher suite {name}")
        chosen.append(openssl)
    if chosen:
        ctx.set_ciphers(":".join(chosen))


def _load_key_and_chain(ctx: ssl.SSLContext, lookup: Lookup) -> None:
    location = lookup("ssl.keystore.location")
    key = lookup("ssl.keystore.key")
    chain = lookup("ssl.keystore.certificate.chain")
    password = lookup("ssl.key.password") or None
    if location and (key or chain):
        raise ConfigError("ssl.keystore.location and ssl.keystore.key/ssl.keystore.certificate.chain must not both be set")
    try:
        if location:
            ctx.load_cert_chain(location, password=password)
        elif key and chain:
            # The ssl module loads keys from files only: write both to a private temporary directory.
            with tempfile.TemporaryDirectory(prefix="odradek-tls-") as tmp:
                path = os.path.join(tmp, "keystore.pem")
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as f:
                    f.write(normalize_pem(key) + normalize_pem(chain))
                ctx.load_cert_chain(path, password=password)
        else:
            raise ConfigError(
                "an SSL listener needs ssl.keystore.location, or ssl.keystore.key with ssl.keystore.certificate.chain"
            )
    except OSError as exc:  # ssl.SSLError is an OSError
        where = location or "ssl.keystore.key"
        raise ConfigError(f"cannot load the key store {where}: {exc.strerror or exc}") from None


def _load_trust(ctx: ssl.SSLContext, lookup: Lookup, required: bool) -> None:
    location = lookup("ssl.truststore.location")
    certificates = lookup("ssl.truststore.certificates")
    try:
        if location:
            ctx.load_verify_locations(cafile=location)
        elif certificates:
            ctx.load_verify_locations(cadata=normalize_pem(certificates))
        elif required:
            ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    except OSError as exc:
        where = location or "ssl.truststore.certificates"
        raise ConfigError(f"cannot load the trust store {where}: {exc.strerror or exc}") from None


def server_context(lookup: Lookup) -> ssl.SSLContext:
    """The server-side context of one listener; raises ConfigError with one line on a bad setting."""
    _store_type(lookup, "keystore")
    if lookup("ssl.truststore.location") or lookup("ssl.truststore.certificates"):
        _store_type(lookup, "truststore")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _protocol_range(ctx, lookup)
    _ciphers(ctx, lookup("ssl.cipher.suites") or "")
    _load_key_and_chain(ctx, lookup)
    auth = (lookup("ssl.client.auth") or "none").strip().lower()
    if auth not in _CLIENT_AUTH:
        raise ConfigError(f"Invalid value {auth} for configuration ssl.client.auth: String must be one of: "
                          "required, requested, none")
    ctx.verify_mode = _CLIENT_AUTH[auth]
    _load_trust(ctx, lookup, auth != "none")
    return ctx


def _protocol_range(ctx: ssl.SSLContext, lookup: Lookup) -> None:
    enabled_raw = lookup("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3"
    enabled = [p.strip() for p in enabled_raw.split(",") if p.strip()]
    unknown = [p for p in enabled if p not in _PROTOCOLS]
    if unknown or not enabled:
        raise ConfigError(f"Invalid value {enabled_raw} for configuration ssl.enabled.protocols: "
                          f"expected a list of {', '.join(_PROTOCOLS)}")
    versions = sorted(_PROTOCOLS[p] for p in enabled)
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]


def client_context(lookup: Lookup, present_key: bool = True) -> ssl.SSLContext:
    """The client-side context from Kafka client keys: the server is verified against the trust store
    (`ssl.truststore.location`/`ssl.truststore.certificates`, else the system's CAs), its host name too
    unless `ssl.endpoint.identification.algorithm` is empty (Kafka's default is https); a key store, when
    configured and `present_key`, is the client's certificate for mutual TLS."""
    if lookup("ssl.truststore.location") or lookup("ssl.truststore.certificates"):
        _store_type(lookup, "truststore")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _protocol_range(ctx, lookup)
    _ciphers(ctx, lookup("ssl.cipher.suites") or "")
    algorithm = lookup("ssl.endpoint.identification.algorithm")
    ctx.check_hostname = (algorithm if algorithm is not None else "https").strip() != ""
    ctx.verify_mode = ssl.CERT_REQUIRED
    _load_trust(ctx, lookup, False)
    if not (lookup("ssl.truststore.location") or lookup("ssl.truststore.certificates")):
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if present_key and (lookup("ssl.keystore.location") or lookup("ssl.keystore.key")):
        _store_type(lookup, "keystore")
        _load_key_and_chain(ctx, lookup)
    return ctx


def peer_principal(ssl_object: ssl.SSLObject | ssl.SSLSocket | None, rules: list[Rule] | None = None) -> str:
    """The principal of a TLS peer: User:<name> where the name is the certificate's subject distinguished
    name (RFC 2253 order, as Kafka's X500Principal gives it) mapped by `ssl.principal.mapping.rules`
    (`rules`; None is DEFAULT, the DN itself); User:ANONYMOUS when the client sent no certificate.
    Raises NoMatchingRule when no rule maps the DN."""
    cert = ssl_object.getpeercert() if ssl_object is not None else None
    if not cert:
        return "User:ANONYMOUS"
    rdns = [f"{_ATTR.get(k, k)}={v}" for rdn in reversed(cert.get("subject", ())) for k, v in rdn]
    if not rdns:
        return "User:ANONYMOUS"
    dn = ",".join(rdns)
    return "User:" + (map_principal(rules, dn) if rules else dn)


_ATTR = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU", "countryName": "C",
         "localityName": "L", "stateOrProvinceName": "ST", "emailAddress": "EMAILADDRESS"}
