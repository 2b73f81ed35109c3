"""SCRAM (security/scram.py and the Scram mechanism of security/sasl.py): RFC 7677's SCRAM-SHA-256 example
exchange, Kafka's stored credential format, and refusals."""

from __future__ import annotations

import base64

import pytest

from odradek.security import scram
from odradek.security.sasl import AuthenticationFailed, NeedCredential, SaslServer, SaslSettings

SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_rfc7677_example() -> None:
    cred = scram.credential("SCRAM-SHA-256", "pencil", 4096, SALT)
    server = scram.ScramServer("SCRAM-SHA-256", SERVER_NONCE)
    assert server.client_first(CLIENT_FIRST) == "user"
    assert server.server_first(cred) == SERVER_FIRST
    assert server.client_final(CLIENT_FINAL) == SERVER_FINAL


def test_wrong_proof_and_nonce_are_refused() -> None:
    cred = scram.credential("SCRAM-SHA-256", "not-pencil", 4096, SALT)
    server = scram.ScramServer("SCRAM-SHA-256", SERVER_NONCE)
    server.client_first(CLIENT_FIRST)
    server.server_first(cred)
    with pytest.raises(scram.ScramError, match="proof"):
        server.client_final(CLIENT_FINAL)
    other = scram.ScramServer("SCRAM-SHA-256", "another-nonce")
    other.client_first(CLIENT_FIRST)
    other.server_first(scram.credential("SCRAM-SHA-256", "pencil", 4096, SALT))
    with pytest.raises(scram.ScramError, match="nonce"):
        other.client_final(CLIENT_FINAL)


def test_kafka_stored_format_round_trips() -> None:
    cred = scram.credential("SCRAM-SHA-512", "secret", 8192)
    text = cred.to_config()
    assert text.startswith("salt=") and ",stored_key=" in text and text.endswith(",iterations=8192")
    assert scram.ScramCredential.from_config(text) == cred


def test_state_machine_asks_for_the_credential_and_refuses_unknown_users() -> None:
    settings = SaslSettings(("SCRAM-SHA-256",))
    sasl = SaslServer(settings)
    sasl.handshake("SCRAM-SHA-256", 1)
    need = sasl.authenticate(CLIENT_FIRST)
    assert need == NeedCredential("user", "SCRAM-SHA-256")
    with pytest.raises(AuthenticationFailed, match="invalid credentials with SASL mechanism SCRAM-SHA-256"):
        sasl.provide(None)
    assert sasl.attempted_principal() == "User:user"
