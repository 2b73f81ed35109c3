"""The web console for tests: `odradek console` as a subprocess on a free port (stopped by pid), Debian's
chromium through Playwright (module-scoped `browser`, per-test logged-in `page` fixtures: import them into a
test module), and plain HTTP requests to the console (`send`, `http_login`) for tests that speak HTTP
themselves. Used by tests/integration/test_console*.py and tests/adversarial/test_console_attacks.py."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http.client import HTTPConnection, HTTPMessage
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright

from tests.harness import free_port, odradek_cmd, stop_process
from tests.waiting import wait_until

CHROMIUM = "/usr/bin/chromium"
TIMEOUT_MS = 20_000  # Playwright's default timeout in the console's pages
# and of `expect`'s assertions, whose own default is 5 s: what a page shows of a group moves with its members'
# heartbeats, 5 s apart for share groups, and a loaded machine's CI run overran 5 s once
expect.set_options(timeout=TIMEOUT_MS)


@dataclass
class Console:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path
    login_url: str = ""  # as printed: the console's URL with ?token=

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    @property
    def token(self) -> str:
        return self.login_url.split("?token=", 1)[1]


PRINTED_URL = re.compile(r"^Console at (http://\S+)$", re.MULTILINE)


@contextmanager
def running_console(bootstrap: str, log: Path, *flags: str, env: Mapping[str, str] | None = None) -> Iterator[Console]:
    """`odradek console` on a free port until the block ends (then SIGTERM by pid, SIGKILL if it lingers);
    ready once it printed its URL."""
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen(odradek_cmd("console", "--bootstrap-server", bootstrap, "--port", str(port), *flags),
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, **(env or {})})
    c = Console(f"http://127.0.0.1:{port}", proc, log)
    try:
        printed = wait_until(lambda: proc.poll() is None and PRINTED_URL.search(c.output()), 60,
                             lambda: f"the console to print its URL (exit {proc.poll()}): {c.output()}")
        c.login_url = printed.group(1)
        yield c
    finally:
        stop_process(proc)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (scripts/test.sh does)")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


def login(pg: Page, console: Console) -> None:
    """Log the page's browser context in through the URL the console printed (it redirects without the token)."""
    pg.goto(console.login_url)
    expect(pg).to_have_url(re.compile(re.escape(console.url) + r"/brokers$"))


@pytest.fixture
def page(browser: Browser, console: Console, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A fresh page, logged in to the module's console; its screenshot is saved as <tmp_path>/<test>.png
    when the test ends."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    pg = context.new_page()
    try:
        login(pg, console)
        yield pg
    finally:
        pg.screenshot(path=str(tmp_path / f"{request.node.name}.png"), full_page=True)
        context.close()


def row(pg: Page, table: str, attr: str, value: object) -> Locator:
    return pg.locator(f'#{table} tr[data-{attr}="{value}"]')


@dataclass
class Answer:
    status: int
    headers: HTTPMessage
    body: str


def send(console: Console, method: str, path: str, headers: Mapping[str, str] | None = None,
         body: str | None = None) -> Answer:
    """One request to the console, as sent (a Host header given here replaces the real one; no redirect
    is followed)."""
    conn = HTTPConnection("127.0.0.1", console.port, timeout=60)
    try:
        sent = dict(headers or {})
        if body is not None:
            sent.setdefault("Content-Type", "application/x-www-form-urlencoded")
        conn.request(method, path, body=body, headers=sent)
        resp = conn.getresponse()
        return Answer(resp.status, resp.headers, resp.read().decode(errors="replace"))
    finally:
        conn.close()


@dataclass
class HttpSession:
    """A logged-in client without a browser: the session cookie and the CSRF token of that session."""

    cookie: str
    csrf: str

    def headers(self, console: Console, **more: str) -> dict[str, str]:
        return {"Cookie": self.cookie, "Origin": console.url, **more}


def http_login(console: Console) -> HttpSession:
    """Log in with the printed URL, then read the CSRF token from a page (its <meta name="csrf-token">)."""
    answer = send(console, "GET", urlsplit(console.login_url).path + "?" + urlsplit(console.login_url).query)
    assert answer.status == 303 and answer.headers["Location"] == "/", (answer.status, answer.body)
    cookie = answer.headers["Set-Cookie"].split(";", 1)[0]
    page = send(console, "GET", "/topics", {"Cookie": cookie})
    csrf = re.search(r'<meta name="csrf-token" content="([0-9a-f]{64})">', page.body)
    assert page.status == 200 and csrf, page.body
    return HttpSession(cookie, csrf.group(1))
