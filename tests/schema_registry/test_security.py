"""The registry's TLS listener (a PEM key store, `ssl.keystore.location`) and HTTP basic authentication as
Confluent's registry configures them (`authentication.method=BASIC`, `authentication.realm`, a JAAS file whose
realm section names a Jetty property file of users, `authentication.roles`): no or wrong credentials get 401,
a user without an allowed role 403, a good one the API; bad subject names get 42208. Each user has its own share
of the registry's heavy work (parsing, compatibility checks)."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import BrokerProcess
from tests.schema_registry.helpers import Registry, RestClient, big_schema
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def secured(broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory,
            pem_pki: tuple[Path, Path]) -> Iterator[Registry]:
    ca, keystore = pem_pki
    root = tmp_path_factory.mktemp("secured")
    (root / "users.properties").write_text("admin: secret,admin\nreader: md5pass,reader\n"
                                           "alice: MD5:" + "6384e2b2184bcbf58eccf10ca7a6563c" + ",admin\n")
    (root / "jaas.conf").write_text('SchemaRegistry-Props {\n  org.eclipse.jetty.jaas.spi.PropertyFileLoginModule '
                                    f'required\n  file="{root / "users.properties"}"\n  debug="false";\n}};\n')
    node = Registry(root / "node", broker, {
        "authentication.method": "BASIC", "authentication.realm": "SchemaRegistry-Props",
        "authentication.roles": "admin", "authentication.jaas.file": str(root / "jaas.conf"),
        "ssl.keystore.location": str(keystore), "ssl.keystore.type": "PEM",
        "schema.registry.group.id": "sr-secured", "kafkastore.topic": "_schemas_secured"}, scheme="https").start()
    node.ssl_context = ssl.create_default_context(cafile=str(ca))
    yield node
    node.stop()


def test_credentials_roles_and_tls(secured: Registry) -> None:
    assert secured.call("GET", "/subjects")[0] == 401
    secured.auth = ("admin", "wrong")
    assert secured.call("GET", "/subjects") == (401, {"error_code": 401, "message": "Unauthorized"})
    secured.auth = ("reader", "md5pass")  # a known user without the admin role
    assert secured.call("GET", "/subjects")[0] == 403
    secured.auth = ("alice", "alice")  # an MD5: password
    assert secured.call("GET", "/subjects") == (200, [])
    secured.auth = ("admin", "secret")
    schema = json.dumps({"type": "record", "name": "S", "fields": [{"name": "a", "type": "int"}]})
    wait_until(lambda: secured.call("POST", "/subjects/secure/versions", {"schema": schema})[0] == 200, 30,
               "a registration over TLS with credentials")
    assert secured.call("GET", "/subjects") == (200, ["secure"])
    plain = ssl.create_default_context()  # does not trust the registry's CA
    secured.ssl_context, kept = plain, secured.ssl_context
    with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED"):
        secured.call("GET", "/subjects")
    secured.ssl_context = kept


def test_invalid_subject_names(secured: Registry) -> None:
    secured.auth = ("admin", "secret")
    schema = json.dumps({"type": "string"})
    status, body = secured.call("POST", "/subjects/bad%01name/versions", {"schema": schema})
    assert (status, body["error_code"]) == (422, 42208)


def test_each_user_has_its_own_share_of_heavy_work(secured: Registry) -> None:
    def client(user: str, password: str) -> RestClient:
        out = RestClient(secured.url)
        out.auth, out.ssl_context = (user, password), secured.ssl_context
        return out

    alice, admin = client("alice", "alice"), client("admin", "secret")
    first = {"schema": json.dumps({"type": "record", "name": "Flood", "fields": [{"name": "a", "type": "int"}]})}
    wait_until(lambda: admin.call("POST", "/subjects/shares/versions", first)[0] == 200, 30, "the first version")
    refused, stop = threading.Event(), threading.Event()

    def flood(n: int) -> None:
        i = 0
        while not stop.is_set():
            if alice.call("POST", "/subjects/shares", {"schema": big_schema(f"{n}_{i}")})[0] == 429:
                refused.set()
            i += 1

    threads = [threading.Thread(target=flood, args=(n,), daemon=True) for n in range(12)]
    for t in threads:
        t.start()
    try:
        wait_until(refused.is_set, 60, "alice's flood refused beyond her share")
        # alice is still flooding: admin's heavy lookups take admin's share, not hers
        answers = [admin.call("POST", "/subjects/shares", {"schema": big_schema(f"admin_{i}", 50)}) for i in range(5)]
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert [(status, body["error_code"]) for status, body in answers] == [(404, 40403)] * 5
