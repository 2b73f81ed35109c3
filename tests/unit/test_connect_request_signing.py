"""KIP-507's pieces as pure logic: the session key's record in the config topic, when the leader rotates it,
the signature headers and each reason a worker refuses an internal request, and the `inter.worker.*` checks."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from odradek.connect.api import ConfigException
from odradek.connect.request_signing import (
    ALGORITHM_HEADER,
    SIGNATURE_HEADER,
    SessionKey,
    needs_rotation,
    new_session_key,
    refusal,
    signature_headers,
)
from odradek.connect.worker_config import WorkerConfig

KEY = SessionKey(bytes(range(32)), "HmacSHA256", 1_700_000_000_000)
BODY = b'[{"task.class":"T","file":"in.txt"}]'


def test_the_session_key_record_is_kafkas() -> None:
    record = KEY.record()
    assert record == {"key": base64.b64encode(KEY.key).decode(), "algorithm": "HmacSHA256",
                      "creation-timestamp": 1_700_000_000_000}
    assert SessionKey.from_record(record) == KEY


@pytest.mark.parametrize("doc", [None, [], "key", {"key": "!!", "algorithm": "HmacSHA256", "creation-timestamp": 1},
                                 {"key": "AA==", "algorithm": "HmacSHA256"},
                                 {"key": "AA==", "algorithm": 5, "creation-timestamp": 1}])
def test_a_malformed_session_key_record_is_no_key(doc: object) -> None:
    assert SessionKey.from_record(doc) is None


def test_the_signature_is_the_bodys_hmac_in_base64() -> None:
    headers = signature_headers(KEY, "HmacSHA256", BODY)
    assert headers == {SIGNATURE_HEADER: base64.b64encode(hmac.new(KEY.key, BODY, hashlib.sha256).digest()).decode(),
                       ALGORITHM_HEADER: "HmacSHA256"}
    assert refusal(headers, BODY, KEY, ["HmacSHA256"]) is None


def test_each_refusal_in_kafkas_words() -> None:
    good = signature_headers(KEY, "HmacSHA256", BODY)
    assert refusal({}, BODY, KEY, ["HmacSHA256"]) == (400, "Internal request missing required signature")
    assert refusal(good, BODY + b" ", KEY, ["HmacSHA256"]) == (403, "Internal request contained invalid signature.")
    assert refusal(good, BODY, None, ["HmacSHA256"])[0] == 503  # type: ignore[index]
    other = signature_headers(KEY, "HmacSHA512", BODY)
    status, message = refusal(other, BODY, KEY, ["HmacSHA256"])  # type: ignore[misc]
    assert status == 400 and "does not support the 'HmacSHA512' key signing algorithm" in message
    assert refusal({**good, SIGNATURE_HEADER: "not base64!"}, BODY, KEY, ["HmacSHA256"])[0] == 400  # type: ignore[index]
    assert refusal({**good, ALGORITHM_HEADER: "ROT13"}, BODY, KEY, ["HmacSHA256"]) == (400, "Algorithm ROT13 not available")


def test_the_leader_rotates_a_missing_expired_or_misfit_key() -> None:
    now = KEY.created_ms + 1000
    assert needs_rotation(None, "HmacSHA256", None, 3_600_000, now)
    assert not needs_rotation(KEY, "HmacSHA256", None, 3_600_000, now)
    assert needs_rotation(KEY, "HmacSHA256", None, 3_600_000, KEY.created_ms + 3_600_000)
    assert needs_rotation(KEY, "HmacSHA512", None, 3_600_000, now)
    assert needs_rotation(KEY, "HmacSHA256", 128, 3_600_000, now)
    fresh = new_session_key("HmacSHA512", None, now)
    assert len(fresh.key) == 64 and fresh.algorithm == "HmacSHA512" and fresh.created_ms == now


BASE = {"bootstrap.servers": "b:9092", "key.converter": "k", "value.converter": "v", "group.id": "g",
        "config.storage.topic": "c", "offset.storage.topic": "o", "status.storage.topic": "s"}


@pytest.mark.parametrize(("props", "message"), [
    ({"inter.worker.signature.algorithm": "HmacMD5"}, "inter.worker.signature.algorithm: the algorithm is not "
                                                      "supported"),
    ({"inter.worker.signature.algorithm": "HmacSHA512"}, "Signature algorithm must be present in "
                                                         "inter.worker.verification.algorithms list"),
    ({"inter.worker.verification.algorithms": " "}, "At least one signature verification algorithm must be provided"),
    ({"inter.worker.key.generation.algorithm": "DES"}, "inter.worker.key.generation.algorithm: the algorithm is not "
                                                       "supported"),
    ({"inter.worker.key.size": "big"}, "inter.worker.key.size"),
    ({"inter.worker.key.ttl.ms": "-1"}, "inter.worker.key.ttl.ms"),
])
def test_bad_inter_worker_keys_are_refused(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigException, match=message):
        WorkerConfig.of({**BASE, **props}, distributed=True)
    WorkerConfig.of({**BASE, **props, "offset.storage.file.filename": "o.txt"})  # standalone: no internal requests


def test_the_defaults_are_kafkas() -> None:
    props = WorkerConfig.of(BASE, distributed=True).props
    assert (props["connect.protocol"], props["inter.worker.signature.algorithm"],
            props["inter.worker.key.ttl.ms"]) == ("sessioned", "HmacSHA256", "3600000")
