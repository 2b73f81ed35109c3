"""TLS context building from Kafka's ssl.* keys (security/tls.py): PEM files and inline PEM values (as a
properties file joins them), per-listener overrides, client auth, protocols, cipher names, refused stores."""

from __future__ import annotations

import ssl

import pytest
import trustme

from odradek.config import BrokerConfig
from odradek.config_keys import ConfigError
from odradek.security import tls
from odradek.server.security import listener_lookup


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def _context(props: dict[str, str], listener: str = "SSL") -> ssl.SSLContext:
    cfg = BrokerConfig.from_props({"listeners": f"{listener}://127.0.0.1:9093", "log.dirs": "/tmp/x", **props})
    return tls.server_context(listener_lookup(cfg.get, cfg.is_set, listener))


def test_inline_pem_joined_on_one_line(ca: trustme.CA) -> None:
    cert = ca.issue_cert("127.0.0.1")
    one_line = lambda pem: " ".join(pem.decode().split("\n"))  # noqa: E731  (what a continued value becomes)
    ctx = _context({
        "ssl.keystore.type": "PEM",
        "ssl.keystore.key": one_line(cert.private_key_pem.bytes()),
        "ssl.keystore.certificate.chain": one_line(b"".join(c.bytes() for c in cert.cert_chain_pems)),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": one_line(ca.cert_pem.bytes()),
        "ssl.client.auth": "requested",
        "ssl.enabled.protocols": "TLSv1.3",
    })
    assert ctx.verify_mode == ssl.CERT_OPTIONAL
    assert ctx.minimum_version == ctx.maximum_version == ssl.TLSVersion.TLSv1_3
    assert len(ctx.get_ca_certs()) == 1


def test_listener_prefix_wins_and_cipher_names_translate(ca: trustme.CA, tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "server.pem"
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(path))
    ctx = _context({
        "ssl.keystore.location": "/does/not/exist.pem",
        "listener.name.ssl.ssl.keystore.location": str(path),
        "ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256",
        "ssl.enabled.protocols": "TLSv1.2",
    })
    names = {c["name"] for c in ctx.get_ciphers() if c["protocol"] == "TLSv1.2"}
    assert names == {"ECDHE-RSA-AES128-GCM-SHA256"}


@pytest.mark.parametrize(("props", "needle"), [
    ({"ssl.keystore.location": "/ks.jks"}, "ssl.keystore.type JKS is not supported"),
    ({"ssl.keystore.type": "JKS", "ssl.keystore.location": "/ks.pem"}, "convert the keystore to PEM"),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/ks.pem", "ssl.truststore.location": "/t.p12"},
     "ssl.truststore.type PKCS12 is not supported"),
    ({}, "needs ssl.keystore.location"),
    ({"ssl.keystore.location": "/k.pem", "ssl.enabled.protocols": "SSLv3"}, "ssl.enabled.protocols"),
    ({"ssl.keystore.location": "/k.pem", "ssl.cipher.suites": "TLS_BOGUS_WITH_NOTHING"}, "unknown cipher suite"),
])
def test_refused_settings(props: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        _context(props)


def test_applied_listener_keys_are_not_warned_about() -> None:
    cfg = BrokerConfig.from_props({"listeners": "SSL://127.0.0.1:9093", "log.dirs": "/tmp/x",
                                   "listener.name.ssl.ssl.keystore.location": "/k.pem",
                                   "listener.name.ssl.ssl.keystore.password": "pw"})
    assert not any("ssl.keystore.location" in w for w in cfg.warnings)
    assert any("listener.name.ssl.ssl.keystore.password = [hidden]" in w for w in cfg.warnings)
