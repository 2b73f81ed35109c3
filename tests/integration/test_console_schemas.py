"""The console's Schemas pages against a real schema registry: the broker's own (`schema_registry_api`), which
the console finds by itself through DescribeConfigs, a separate one with TLS and basic auth given with
--schema-registry-url and --schema-registry-config, and one that is not there. Subjects with their latest
version, type, id and level; a subject's versions, schema, references and a diff between two versions; the
level changed through the gate (CSRF); hostile subject names and schema text shown as text, never markup; a
registry that does not answer is one line on the page. One browser test walks the pages in chromium."""

from __future__ import annotations

import json
import re
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import Page, expect

from tests import console_helpers
from tests.console_helpers import Console, http_login, row, running_console, send
from tests.harness import BrokerProcess, free_port, run_cli
from tests.schema_registry.helpers import (
    Registry,
    RestClient,
    in_broker_config,
    in_broker_registry,
)

browser, page = console_helpers.browser, console_helpers.page  # the chromium fixtures
PORT = free_port()
SUBJECT = "orders-value"
HOSTILE = "<img src=x onerror=alert('subject')>\"&"
V1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
V2 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"},
                                                    {"name": "note", "type": "string", "default": ""}]}
CUSTOMER = {"type": "record", "name": "Customer", "fields": [{"name": "last", "type": "Order"}]}
EVIL = {"type": "record", "name": "Evil", "doc": "</pre><script>alert('schema')</script>",
        "fields": [{"name": "a", "type": "int"}]}


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return in_broker_config(PORT)


@pytest.fixture(scope="module")
def registry(broker: BrokerProcess) -> RestClient:
    node = in_broker_registry(PORT)
    for subject, schema, refs in ((SUBJECT, V1, None), (SUBJECT, V2, None), (HOSTILE, EVIL, None),
                                  ("customer-value", CUSTOMER, [{"name": "Order", "subject": SUBJECT, "version": 2}])):
        status, body = node.call("POST", f"/subjects/{quote(subject, safe='')}/versions",
                                 {"schema": json.dumps(schema), **({"references": refs} if refs else {})})
        assert status == 200, body
    return node


@pytest.fixture(scope="module")
def console(broker: BrokerProcess, registry: RestClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    """A console given no registry: it finds the broker's (a wildcard host would be replaced by the broker's:
    tests/unit/test_console_registry_url.py)."""
    with running_console(broker.bootstrap, tmp_path_factory.mktemp("console") / "console.out") as c:
        yield c


def get(console: Console, path: str) -> tuple[int, str]:
    s = http_login(console)
    answer = send(console, "GET", path, {"Cookie": s.cookie})
    return answer.status, answer.body


def test_subjects_of_the_discovered_registry(console: Console, registry: RestClient) -> None:
    status, body = get(console, "/schemas")
    assert status == 200, body
    assert f"http://127.0.0.1:{PORT}" in body and "Using the schema registry the cluster runs at" in console.output()
    ids = {s: registry.call("GET", f"/subjects/{quote(s, safe='')}/versions/latest")[1]["id"] for s in (SUBJECT, HOSTILE)}
    orders = re.search(r'<tr data-subject="orders-value">(.*?)</tr>', body, re.S)
    assert orders, body
    cells = re.findall(r"<td[^>]*>(.*?)</td>", orders.group(1), re.S)
    assert cells[1:4] == ["2", "AVRO", str(ids[SUBJECT])] and cells[4].startswith("BACKWARD"), cells
    assert 'id="global-level">BACKWARD<' in body


def test_hostile_names_and_schemas_are_text(console: Console) -> None:
    status, body = get(console, "/schemas")
    assert status == 200 and "<img src=x" not in body and "&lt;img src=x onerror=alert(&#39;subject&#39;)&gt;" in body
    assert f'href="/schemas/subject?name={quote(HOSTILE, safe="/")}"' in body  # the link carries the name quoted
    status, body = get(console, f"/schemas/subject?name={quote(HOSTILE)}")
    assert status == 200, body
    assert "<script>alert" not in body and "<img src=x" not in body
    assert "&lt;/pre&gt;&lt;script&gt;alert(&#39;schema&#39;)&lt;/script&gt;" in body


def test_subject_versions_and_diff(console: Console, registry: RestClient) -> None:
    status, body = get(console, f"/schemas/subject?name={SUBJECT}&version=1&from=1&to=2")
    assert status == 200, body
    v1 = registry.call("GET", f"/subjects/{SUBJECT}/versions/1")[1]
    assert f'<dd class="id">{v1["id"]}</dd>' in body and '<dd class="type">AVRO</dd>' in body
    assert "BACKWARD <span class=\"muted\">(global)</span>" in body
    shown = re.search(r'<pre class="payload schema" id="schema">(.*?)</pre>', body, re.S)
    assert shown and json.loads(shown.group(1).replace("&#34;", '"')) == V1
    diff = re.search(r'<pre class="diff" id="diff">(.*?)</pre>', body, re.S)
    assert diff, body
    added = re.findall(r'<span class="add">\+(.*?)</span>', diff.group(1))
    assert any("&#34;note&#34;" in line for line in added) and not re.findall(r'<span class="del">', diff.group(1))
    status, body = get(console, f"/schemas/subject?name={SUBJECT}&from=2&to=2")
    assert "The two versions' schemas are the same." in body
    status, body = get(console, "/schemas/subject?name=no-such-subject")
    assert status == 404 and "Subject &#39;no-such-subject&#39; not found." in body
    status, body = get(console, f"/schemas/subject?name={SUBJECT}&version=9")
    assert status == 404 and "not found" in body.lower()
    status, body = get(console, f"/schemas/subject?name={SUBJECT}&version=..%2F..%2Fconfig")
    assert status == 400 and "42202" not in body and "version" in body.lower(), body  # the registry's 42202 message
    status, body = get(console, "/schemas/subject?name=customer-value")
    assert '<div class="reference">Order → <a href="/schemas/subject?name=orders-value&amp;version=2">orders-value ' \
           'version 2</a></div>' in body, body


def test_level_changes_pass_the_gate(console: Console, registry: RestClient) -> None:
    s = http_login(console)
    form = f"csrf_token={s.csrf}&subject={SUBJECT}&level=FULL"
    assert send(console, "POST", "/schemas/config", s.headers(console), "csrf_token=" + "0" * 64 + "&level=NONE").status == 403
    assert send(console, "POST", "/schemas/config", {"Cookie": s.cookie, "Origin": "http://evil.example"}, form).status == 403
    assert registry.call("GET", f"/config/{SUBJECT}")[0] == 404
    answer = send(console, "POST", "/schemas/config", s.headers(console), form)
    assert answer.status == 303 and "Set+the+level+of+orders-value+to+FULL" in answer.headers["Location"], answer.headers
    assert registry.call("GET", f"/config/{SUBJECT}") == (200, {"compatibilityLevel": "FULL"})
    status, body = get(console, f"/schemas/subject?name={SUBJECT}")
    assert "FULL <span class=\"muted\">(the subject's own)</span>" in body
    answer = send(console, "POST", "/schemas/config", s.headers(console), f"csrf_token={s.csrf}&subject={SUBJECT}&reset=1")
    assert answer.status == 303 and registry.call("GET", f"/config/{SUBJECT}")[0] == 404
    answer = send(console, "POST", "/schemas/config", s.headers(console), f"csrf_token={s.csrf}&level=SOMETIMES")
    assert answer.status == 303 and "is+not+a+compatibility+level" in answer.headers["Location"]


def test_unreachable_registry_is_one_line(broker: BrokerProcess, tmp_path: Path) -> None:
    config = tmp_path / "registry.properties"
    config.write_text("basic.auth.user.info=admin:secret\n")
    refused = run_cli("console", "--bootstrap-server", broker.bootstrap, "--schema-registry-config", str(config))
    assert (refused.returncode, refused.stderr) == (1, "Error: --schema-registry-config needs --schema-registry-url "
                                                       "URL (or schema.registry.url in the file)\n")
    refused = run_cli("console", "--bootstrap-server", broker.bootstrap, "--schema-registry-url", "localhost:8081")
    assert refused.returncode == 1 and "invalid schema registry URL 'localhost:8081'" in refused.stderr
    gone = free_port()
    with running_console(broker.bootstrap, tmp_path / "console.out", "--schema-registry-url",
                         f"http://127.0.0.1:{gone}") as c:
        status, body = get(c, "/schemas")
        assert status == 200 and f"Schema registry unreachable at http://127.0.0.1:{gone}: " in body
        status, body = get(c, f"/schemas/subject?name={SUBJECT}")
        assert status == 502 and "Schema registry unreachable" in body and "Traceback" not in body
    silent = socket.create_server(("127.0.0.1", 0), backlog=8)  # connections complete, nothing answers
    try:
        with running_console(broker.bootstrap, tmp_path / "console2.out", "--timeout", "2000",
                             "--schema-registry-url", f"http://127.0.0.1:{silent.getsockname()[1]}") as c:
            status, body = get(c, "/schemas")
            assert status == 200 and "no answer within 1600 ms" in body and "Cluster unreachable" not in body, body
    finally:
        silent.close()


def test_registry_with_tls_and_basic_auth(broker: BrokerProcess, registry: RestClient, tmp_path: Path,
                                          pem_pki: tuple[Path, Path]) -> None:
    ca, keystore = pem_pki
    (tmp_path / "users.properties").write_text("admin: secret,admin\n")
    (tmp_path / "jaas.conf").write_text('SchemaRegistry-Props {\n  org.eclipse.jetty.jaas.spi.PropertyFileLoginModule '
                                        f'required\n  file="{tmp_path / "users.properties"}";\n}};\n')
    secured = Registry(tmp_path / "node", broker, {
        "authentication.method": "BASIC", "authentication.realm": "SchemaRegistry-Props",
        "authentication.roles": "admin", "authentication.jaas.file": str(tmp_path / "jaas.conf"),
        "ssl.keystore.location": str(keystore), "ssl.keystore.type": "PEM",
        "schema.registry.group.id": "sr-console-secured", "kafkastore.topic": "_schemas_console_secured"},
                       scheme="https").start()
    props = tmp_path / "registry.properties"
    props.write_text(f"basic.auth.credentials.source=USER_INFO\nbasic.auth.user.info=admin:secret\n"
                     f"schema.registry.ssl.truststore.location={ca}\n")
    try:
        with running_console(broker.bootstrap, tmp_path / "console.out", "--schema-registry-url", secured.url,
                             "--schema-registry-config", str(props), "--read-only") as c:
            status, body = get(c, "/schemas")
            assert status == 200 and "No subjects" in body and 'id="global-level">BACKWARD<' in body, body
            assert "global-level-form" not in body  # --read-only: no form, and the POST refused
            s = http_login(c)
            assert send(c, "POST", "/schemas/config", s.headers(c), f"csrf_token={s.csrf}&level=NONE").status == 403
            secured.ssl_context, secured.auth = ssl.create_default_context(cafile=str(ca)), ("admin", "secret")
            assert secured.call("GET", "/config") == (200, {"compatibilityLevel": "BACKWARD"})
        props.write_text(props.read_text().replace("admin:secret", "admin:wrong"))
        with running_console(broker.bootstrap, tmp_path / "console2.out", "--schema-registry-url", secured.url,
                             "--schema-registry-config", str(props)) as c:
            status, body = get(c, "/schemas")
            assert status == 200 and 'role="alert">Unauthorized</p>' in body, body
    finally:
        secured.stop()


def test_schemas_in_the_browser(console: Console, page: Page) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.locator("nav a", has_text="Schemas").click()
    expect(row(page, "subjects", "subject", SUBJECT).locator(".version")).to_have_text("2")
    expect(page.locator("#subjects")).to_contain_text(HOSTILE)  # the hostile name as text
    row(page, "subjects", "subject", SUBJECT).locator("a").click()
    expect(page.locator("#subject-name")).to_have_text(SUBJECT)
    expect(page.locator("#versions")).to_have_text("1, 2")
    page.locator("#diff-form button").click()  # the last two versions by default
    expect(page.locator("#diff .add", has_text='"note"')).to_have_count(1)
    page.goto(f"{console.url}/schemas/subject?name={quote(HOSTILE)}")
    expect(page.locator("#schema")).to_contain_text("<script>alert('schema')</script>")
    assert dialogs == []
