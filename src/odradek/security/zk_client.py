"""How a broker or a tool authenticates to ZooKeeper, read as Kafka reads it:

* SASL DIGEST-MD5 with the `username`/`password` of a JAAS file's `Client` section (ZooKeeper's
  DigestLoginModule). The file is the one the JVM system property ``java.security.auth.login.config``
  names, given with ``-D`` in ``$KAFKA_OPTS`` as for Kafka, or Odradek's ``zookeeper.sasl.jaas.file`` key;
  ``zookeeper.sasl.client`` (default true) and ``zookeeper.sasl.clientconfig`` (the section, default
  ``Client``) likewise, as ``-D`` system properties or keys.
* TLS (KIP-515): ``zookeeper.ssl.client.enable`` (or ``-Dzookeeper.client.secure=true``) with the
  ``zookeeper.ssl.keystore.*`` / ``zookeeper.ssl.truststore.*`` keys (PEM stores, as for the listeners)
  and ``zookeeper.ssl.endpoint.identification.algorithm`` (HTTPS checks the host name; empty does not).

Kafka's brokers ACL their znodes when ``zookeeper.set.acl=true``; its tools do when their session
authenticates (SASL or a client certificate)."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from pathlib import Path

from odradek.cluster.zk_security import ZkClientSecurity, ZkSasl, ZkTls
from odradek.config_keys import ConfigError
from odradek.security.sasl import parse_jaas

JAAS_PROPERTY = "java.security.auth.login.config"
JAAS_KEY = "zookeeper.sasl.jaas.file"  # Odradek's: Kafka has only the system property
DEFAULT_SECTION = "Client"
_SECTION = re.compile(r"(?P<name>[\w.-]+)\s*\{(?P<body>.*?)\}\s*;", re.S)
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def system_properties(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The `-Dkey=value` system properties in $KAFKA_OPTS (what the Java tools' JVM would get)."""
    raw = (os.environ if env is None else env).get("KAFKA_OPTS", "")
    try:
        words = shlex.split(raw)
    except ValueError:
        words = raw.split()
    return dict(w[2:].partition("=")[::2] for w in words if w.startswith("-D") and len(w) > 2)


def jaas_sections(text: str) -> dict[str, str]:
    """`Name { ... };` sections of a JAAS file, by name."""
    return {m.group("name"): m.group("body") for m in _SECTION.finditer(_COMMENT.sub("", text))}


def read_client_section(path: str, section: str) -> ZkSasl | None:
    """The DIGEST-MD5 credentials of `section` in the JAAS file at `path`; None when it has no such
    section (ZooKeeper's client then connects without SASL, as Kafka's does)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the JAAS file {path} ({JAAS_PROPERTY}): {exc.strerror or exc}") from None
    body = jaas_sections(text).get(section)
    if body is None:
        return None
    for module in parse_jaas(body, f"{JAAS_PROPERTY} section {section}"):
        user, password = module.options.get("username"), module.options.get("password")
        if user is not None and password is not None:
            return ZkSasl(user, password)
    raise ConfigError(f"the JAAS section {section} of {path} has no username and password for DIGEST-MD5")


def _flag(value: str | None, default: bool) -> bool:
    return default if value is None or not value.strip() else value.strip().lower() == "true"


def _tls(props: Mapping[str, str | None], sysprops: Mapping[str, str]) -> ZkTls | None:
    enabled = props.get("zookeeper.ssl.client.enable")
    if not _flag(enabled if enabled is not None else sysprops.get("zookeeper.client.secure"), False):
        return None
    for kind in ("keystore", "truststore"):
        store_type = (props.get(f"zookeeper.ssl.{kind}.type") or "PEM").strip().upper()
        if store_type != "PEM":
            raise ConfigError(f"zookeeper.ssl.{kind}.type {store_type} is not supported by Odradek: convert the "
                              f"{kind} to PEM and set zookeeper.ssl.{kind}.type=PEM")
    keystore = props.get("zookeeper.ssl.keystore.location") or None
    algorithm = props.get("zookeeper.ssl.endpoint.identification.algorithm")
    return ZkTls(ca=props.get("zookeeper.ssl.truststore.location") or None, certfile=keystore, keyfile=keystore,
                 keyfile_password=props.get("zookeeper.ssl.keystore.password") or None,
                 check_hostname=(algorithm if algorithm is not None else "HTTPS").strip().upper() == "HTTPS")


def jaas_file(props: Mapping[str, str | None], env: Mapping[str, str] | None = None) -> str | None:
    """The JAAS file: zookeeper.sasl.jaas.file, else -Djava.security.auth.login.config in $KAFKA_OPTS."""
    sysprops = system_properties(env)
    return props.get(JAAS_KEY) or sysprops.get(JAAS_KEY) or sysprops.get(JAAS_PROPERTY) or None


def zk_client_security(props: Mapping[str, str | None], *, set_acl: bool | None = None,
                       env: Mapping[str, str] | None = None) -> ZkClientSecurity:
    """The ZooKeeper client settings from config `props` (the zookeeper.* keys; None or absent: unset) and
    $KAFKA_OPTS. `set_acl`: the broker's zookeeper.set.acl; None (a tool) ACLs when the session
    authenticates."""
    sysprops = system_properties(env)

    def setting(key: str) -> str | None:
        value = props.get(key)
        return value if value is not None else sysprops.get(key)

    sasl = None
    jaas = jaas_file(props, env)
    if jaas and _flag(setting("zookeeper.sasl.client"), True):
        sasl = read_client_section(jaas, (setting("zookeeper.sasl.clientconfig") or DEFAULT_SECTION).strip())
    tls = _tls(props, sysprops)
    security = ZkClientSecurity(False, sasl, tls)
    secure = security.authenticates if set_acl is None else set_acl
    return ZkClientSecurity(secure, sasl, tls)


def load_tls_config_file(path: str) -> dict[str, str]:
    """`--zk-tls-config-file`: a properties file whose zookeeper.* keys configure TLS (the others ignored,
    as Kafka's tools do)."""
    from odradek.config import read_properties_file

    props = read_properties_file(path)
    return {k: v for k, v in props.items() if k.startswith("zookeeper.")}
