"""Issue #25, finding 5: the web console admits only its operator, and keeps serving.

What was observed: no login at all (pages, JSON and message browsing answered anyone, with the rights of
--command-config); a request saying `Host: evil.example:PORT` with a matching Origin created a topic and
deleted another (DNS rebinding from any web page); and the console died on a librdkafka abort (SIGABRT)
while a broker was flooded, and stayed down. Each test below attacks a real console process (on a free
loopback port, talking to a real broker) the way an outsider, a rebinding page or a forged form would,
and checks on the broker that nothing happened; the last ones kill the console's serving process with
SIGABRT and stop its broker, and wait (on events, never on sleeps) until it serves again.

The requests are raw HTTP (tests.integration.test_console.send, which sends a Host header as given);
one test drives Debian's chromium through Playwright, as the operator: log in through the printed URL, act
through a form, CSRF token included.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from confluent_kafka.admin import ConfigResource, ResourceType
from playwright.sync_api import Browser, expect

from tests import console_helpers as shared
from tests.clients import admin, create_topic, produce
from tests.console_helpers import TIMEOUT_MS, Console, http_login, running_console, send
from tests.harness import BrokerPool, BrokerProcess
from tests.waiting import wait_until

browser = shared.browser  # Debian's chromium through Playwright

VICTIM = "victim"
SECRET = "secret-payload-of-the-victim"
UNREACHABLE_TIMEOUT_MS = 3000


@pytest.fixture(scope="module")
def victim(broker: BrokerProcess) -> BrokerProcess:
    """The module's broker with a topic worth attacking: one record, a config and a committed group."""
    create_topic(broker.bootstrap, VICTIM, 1, 1, {"retention.ms": "86400000"})
    produce(broker.bootstrap, VICTIM, [SECRET], partition=0)
    return broker


@pytest.fixture(scope="module")
def console(victim: BrokerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    log = tmp_path_factory.mktemp("console") / "console.out"
    with running_console(victim.bootstrap, log, "--allowed-host", "console.example", "--lag-sample-ms", "500") as c:
        yield c


def topics(broker: BrokerProcess) -> dict[str, int]:
    """Each topic on the broker and its partition count: the ground truth after an attack."""
    md = admin(broker.bootstrap).list_topics(timeout=10)
    return {name: len(t.partitions) for name, t in md.topics.items()}


def retention(broker: BrokerProcess, topic: str) -> str:
    res = ConfigResource(ResourceType.TOPIC, topic)
    return str(admin(broker.bootstrap).describe_configs([res])[res].result(30)["retention.ms"].value)


def assert_victim_untouched(broker: BrokerProcess, *absent: str) -> None:
    now = topics(broker)
    assert now.get(VICTIM) == 1, now
    assert retention(broker, VICTIM) == "86400000"
    for name in absent:
        assert name not in now, (name, now)


# Every kind of route: pages, message browsing, JSON, static files, and each action with its form fields.
PAGES = ["/", "/brokers", "/topics", f"/topics/{VICTIM}", f"/topics/{VICTIM}/messages?partition=0&offset=0",
         "/groups", "/groups/some-group", "/weblogs", "/schemas", "/schemas/subject?name=x", "/static/console.js",
         "/static/uPlot.iife.min.js"]
JSON_ROUTES = [f"/api/topics/{VICTIM}/messages?partition=0&offset=0", "/api/groups/some-group/lag", "/api/weblogs"]
ACTIONS = [("/topics", "name=intruder&partitions=1"), (f"/topics/{VICTIM}/delete", f"confirm={VICTIM}"),
           (f"/topics/{VICTIM}/config", "key=retention.ms&value=1"), (f"/topics/{VICTIM}/partitions", "total=5"),
           ("/groups/some-group/reset", "to=latest"), ("/schemas/config", "level=NONE")]


def serving_pid(console: Console) -> int:
    """The pid of the console's current serving process (the supervisor logs each one it starts)."""
    pids = re.findall(r"Started the console's serving process \(pid (\d+)\)", console.output())
    assert pids, console.output()
    return int(pids[-1])


# --- no session --------------------------------------------------------------------------------


def test_without_a_session_everything_but_the_login_page_is_401(console: Console, victim: BrokerProcess) -> None:
    cluster_id = admin(victim.bootstrap).list_topics(timeout=10).cluster_id
    for path in PAGES:
        for accept in ("text/html", "*/*"):
            a = send(console, "GET", path, {"Accept": accept})
            assert a.status == 401, (path, a.status)
            assert SECRET not in a.body and cluster_id not in a.body, (path, a.body)
            assert "Set-Cookie" not in a.headers
    # A page asked for by a browser shows the login form; the message browser shows nothing else.
    page = send(console, "GET", f"/topics/{VICTIM}/messages?partition=0", {"Accept": "text/html"})
    assert 'id="login"' in page.body and "csrf-token" not in page.body
    for path in JSON_ROUTES:
        a = send(console, "GET", path)
        assert (a.status, json.loads(a.body)) == (401, {"error": "log in first"}), path
    for path, form in ACTIONS:
        a = send(console, "POST", path, {"Origin": console.url}, form)
        assert a.status == 401, (path, a.status, a.body)
    assert_victim_untouched(victim, "intruder")
    # Only the login page and its stylesheet are public.
    assert send(console, "GET", "/login").status == 200
    assert send(console, "GET", "/static/console.css").status == 200


def test_a_wrong_token_or_a_forged_cookie_is_401(console: Console, victim: BrokerProcess) -> None:
    wrong = ["wrong-token-0123456789", console.token[:-1], console.token + "x", ""]
    for token in wrong:
        a = send(console, "GET", f"/topics?token={token}")
        assert a.status == 401 and "Set-Cookie" not in a.headers, token
        assert "not this console" in a.body
        a = send(console, "POST", "/login", {"Origin": console.url}, f"token={token}&next=/topics")
        assert a.status == 401 and "Set-Cookie" not in a.headers, token
    name = f"odradek_console_{console.port}"
    real = http_login(console)
    sid, issued, mac = real.cookie.split("=", 1)[1].split(".")
    for forged in ("abc.123.deadbeef", f"{sid}x.{issued}.{mac}", f"{sid}.{int(issued) + 1}.{mac}",
                   f"{sid}.{issued}.{'0' * 64}", f"{sid}.{issued}"):
        cookie = f"{name}={forged}"
        assert send(console, "GET", "/topics", {"Cookie": cookie}).status == 401, forged
        a = send(console, "POST", "/topics", {"Cookie": cookie, "Origin": console.url},
                 f"name=intruder&csrf_token={real.csrf}")
        assert a.status == 401, forged
    assert_victim_untouched(victim, "intruder")
    # Each failure is logged with where it came from; no token, wrong or right, is ever logged.
    out = console.output()
    assert out.count("Failed login from 127.0.0.1") >= 2 * len(wrong), out
    assert "wrong-token-0123456789" not in out
    assert [x for x in out.splitlines() if console.token[:20] in x] == [f"Console at {console.login_url}"]


# --- DNS rebinding -----------------------------------------------------------------------------


def test_a_forged_host_header_is_refused_before_anything_else(console: Console, victim: BrokerProcess) -> None:
    s = http_login(console)
    for host in (f"evil.example:{console.port}", "evil.example", f"127.0.0.1.evil.example:{console.port}",
                 f"localhost.evil.example:{console.port}", f"evil.example:{console.port}@127.0.0.1"):
        origin = {"Host": host, "Origin": f"http://{host}"}
        # As the rebinding page sends them (the browser holds no cookie for evil.example) ...
        attempts = [send(console, "POST", "/topics", origin, f"name=rebound&csrf_token={s.csrf}"),
                    send(console, "GET", f"/?token={console.token}", origin),
                    send(console, "GET", f"/api/topics/{VICTIM}/messages?partition=0&offset=0", origin)]
        # ... and even with a stolen session and its CSRF token.
        stolen = {**origin, "Cookie": s.cookie}
        attempts += [send(console, "POST", "/topics", stolen, f"name=rebound&csrf_token={s.csrf}"),
                     send(console, "POST", f"/topics/{VICTIM}/delete", stolen, f"confirm={VICTIM}&csrf_token={s.csrf}"),
                     send(console, "GET", "/topics", stolen)]
        for a in attempts:
            assert a.status == 403, (host, a.status, a.body)
            assert a.body.startswith("Forbidden: Host ") and a.body.count("\n") == 1, a.body
            assert "Set-Cookie" not in a.headers and SECRET not in a.body
    assert_victim_untouched(victim, "rebound")
    assert "for Host 'evil.example" in console.output() and "DNS rebinding?" in console.output()
    # The names the console does answer to: loopback ones, and those given with --allowed-host.
    for host in (f"localhost:{console.port}", f"127.0.0.1:{console.port}", f"[::1]:{console.port}",
                 f"console.example:{console.port}", "CONSOLE.EXAMPLE"):
        assert send(console, "GET", "/topics", {"Host": host, "Cookie": s.cookie}).status == 200, host
    a = send(console, "POST", "/topics", {"Host": f"localhost:{console.port}", "Origin": f"http://localhost:{console.port}",
                                         "Cookie": s.cookie}, f"name=via-localhost&csrf_token={s.csrf}")
    assert a.status == 303, a.body
    assert "via-localhost" in topics(victim)


# --- cross-site request forgery --------------------------------------------------------------


def test_a_post_needs_its_sessions_csrf_token(console: Console, victim: BrokerProcess) -> None:
    s, other = http_login(console), http_login(console)
    assert s.csrf != other.csrf
    for path, form in ACTIONS:
        for extra, headers in (("", {}), ("&csrf_token=", {}), ("&csrf_token=0123abcd", {}),
                               (f"&csrf_token={other.csrf}", {}), ("", {"X-CSRF-Token": other.csrf}),
                               (f"&csrf_token={s.csrf.upper()}", {})):
            a = send(console, "POST", path, s.headers(console, **headers), form + extra)
            assert a.status == 403 and "CSRF token" in a.body, (path, extra, headers, a.status, a.body)
    assert_victim_untouched(victim, "intruder")
    assert "Refused POST /topics from 127.0.0.1: no CSRF token" in console.output()
    assert "Refused POST /topics from 127.0.0.1: a wrong CSRF token" in console.output()
    # The session's own token, as a header or as the form field, goes through.
    a = send(console, "POST", "/topics", s.headers(console, **{"X-CSRF-Token": s.csrf}), "name=with-csrf")
    assert a.status == 303, a.body
    assert "with-csrf" in topics(victim)
    a = send(console, "POST", "/topics/with-csrf/delete", s.headers(console), f"confirm=with-csrf&csrf_token={s.csrf}")
    assert a.status == 303, a.body
    wait_until(lambda: "with-csrf" not in topics(victim), 30, "the topic deleted with the CSRF token to go")


def test_read_only_refuses_every_change_and_hides_the_forms(victim: BrokerProcess, tmp_path: Path) -> None:
    with running_console(victim.bootstrap, tmp_path / "console.out", "--read-only") as ro:
        s = http_login(ro)
        for path, form in ACTIONS:
            a = send(ro, "POST", path, s.headers(ro), f"{form}&csrf_token={s.csrf}")
            assert (a.status, a.body) == (403, "Forbidden: the console is read-only\n"), path
        assert_victim_untouched(victim, "intruder")
        listing, topic = send(ro, "GET", "/topics", {"Cookie": s.cookie}), send(ro, "GET", f"/topics/{VICTIM}",
                                                                             {"Cookie": s.cookie})
        assert listing.status == topic.status == 200
        assert 'id="create-topic"' not in listing.body and 'id="read-only"' in listing.body
        for form in ("delete-topic", "edit-config", "add-partitions"):
            assert f'id="{form}"' not in topic.body
        assert "Refused POST /topics: the console is read-only" in ro.output()


# --- a client library that aborts, a cluster that goes away -----------------------------------------


def test_a_sigabrt_in_the_serving_process_does_not_take_the_console_down(victim: BrokerProcess,
                                                                          tmp_path: Path) -> None:
    with running_console(victim.bootstrap, tmp_path / "console.out") as c:
        s = http_login(c)
        first = serving_pid(c)
        os.kill(first, signal.SIGABRT)  # what librdkafka's failed assertion does
        wait_until(lambda: serving_pid(c) != first, 30, lambda: f"a new serving process: {c.output()}")
        assert re.search(rf"ERROR The console's serving process \(pid {first}\) died from SIGABRT; starting it again",
                         c.output()), c.output()
        # The same port, the same session, the same token; the supervisor is the same process.
        a = wait_until(lambda: send(c, "GET", f"/topics/{VICTIM}", {"Cookie": s.cookie}), 30, "the console again",
                       ignoring=(OSError,))
        assert a.status == 200 and f'content="{s.csrf}"' in a.body
        again = send(c, "GET", f"/?token={c.token}")
        assert again.status == 303 and "Set-Cookie" in again.headers
        assert c.proc.poll() is None
        with pytest.raises(ProcessLookupError):
            os.kill(first, 0)
        # A second abort is survived too.
        second = serving_pid(c)
        os.kill(second, signal.SIGABRT)
        wait_until(lambda: serving_pid(c) != second, 30, lambda: f"a third serving process: {c.output()}")
        wait_until(lambda: send(c, "GET", "/brokers", {"Cookie": s.cookie}).status == 200, 30,
                   "the console after a second abort", ignoring=(OSError,))


UNREACHABLE_PATHS = ["/topics", "/brokers", "/topics/comeback", "/groups", "/topics/comeback/messages?partition=0",
                     "/api/weblogs", "/api/topics/comeback/messages?partition=0&offset=0"]


def assert_every_page_says_unreachable(c: Console, cookie: str) -> None:
    """Pages and JSON, all asked for at once, each answer "Cluster unreachable" within the request timeout."""

    def timed(path: str) -> tuple[str, int, float, str]:
        t0 = time.monotonic()
        a = send(c, "GET", path, {"Cookie": cookie})
        return path, a.status, time.monotonic() - t0, a.body

    with ThreadPoolExecutor(len(UNREACHABLE_PATHS)) as pool:
        answers = list(pool.map(timed, UNREACHABLE_PATHS))
    for path, status, took, body in answers:
        assert status in (502, 504) and "Cluster unreachable" in body, (path, status, body)
        assert took < UNREACHABLE_TIMEOUT_MS / 1000 + 1.0, (path, took)


def test_a_stalled_or_stopped_broker_is_an_error_page_then_the_console_follows_it_back(brokers: BrokerPool,
                                                                                      tmp_path: Path) -> None:
    broker = brokers.start(name="comeback")
    create_topic(broker.bootstrap, "comeback")
    with running_console(broker.bootstrap, tmp_path / "console.out", "--timeout", str(UNREACHABLE_TIMEOUT_MS)) as c:
        s = http_login(c)

        def shown_again() -> bool:
            a = send(c, "GET", "/topics", {"Cookie": s.cookie})
            return a.status == 200 and 'data-topic="comeback"' in a.body

        assert shown_again()
        assert broker.pid is not None
        os.kill(broker.pid, signal.SIGSTOP)  # stalls: connections open, nothing answered
        try:
            assert_every_page_says_unreachable(c, s.cookie)
        finally:
            os.kill(broker.pid, signal.SIGCONT)
        wait_until(shown_again, 60, "the console to show the broker's topics after the stall")
        broker.stop()  # gone: connections refused
        assert_every_page_says_unreachable(c, s.cookie)
        broker.start()  # the same port and data
        wait_until(shown_again, 60, "the console to show the broker's topics after its restart")
        assert "died" not in c.output()  # no restart of the serving process was needed


# --- the operator, in a browser ------------------------------------------------------------------


def test_the_operator_logs_in_through_the_printed_url_and_acts_with_csrf(console: Console, victim: BrokerProcess,
                                                                         browser: Browser, tmp_path: Path) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    try:
        resp = page.goto(console.url + "/topics")
        assert resp is not None and resp.status == 401
        expect(page.locator("#login")).to_be_visible()
        page.goto(console.login_url)
        expect(page).to_have_url(console.url + "/brokers")  # the token is gone from the address bar
        [cookie] = context.cookies()
        assert (cookie["name"], cookie["httpOnly"], cookie["sameSite"]) == (f"odradek_console_{console.port}", True,
                                                                            "Strict")
        page.goto(console.url + "/topics")
        form = page.locator("#create-topic")
        csrf = page.locator('meta[name="csrf-token"]').get_attribute("content")
        expect(form.locator('input[name="csrf_token"]')).to_have_value(csrf or "no token")
        form.locator('input[name="name"]').fill("made-by-the-operator")
        form.locator("button").click()
        expect(page.locator(".flash.ok")).to_have_text("Created topic made-by-the-operator")
        assert "made-by-the-operator" in topics(victim)
        # The same form without its CSRF token is refused, with one line and no effect.
        page.goto(console.url + "/topics")
        page.evaluate("document.querySelector('#create-topic input[name=csrf_token]').remove()")
        form.locator('input[name="name"]').fill("without-csrf")
        with page.expect_response(lambda r: r.request.method == "POST") as posted:
            form.locator("button").click()
        assert posted.value.status == 403
        expect(page.locator("body")).to_have_text(re.compile(r"Forbidden: missing or wrong CSRF token"))
        assert "without-csrf" not in topics(victim)
    finally:
        page.screenshot(path=str(tmp_path / "operator.png"), full_page=True)
        context.close()
    # The login form, for a token pasted by hand: back to the page asked for.
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    try:
        page.goto(f"{console.url}/topics/{VICTIM}")
        page.locator('#login input[name="token"]').fill(console.token)
        page.locator("#login button").click()
        expect(page).to_have_url(f"{console.url}/topics/{VICTIM}")
        expect(page.locator("#topic-name")).to_have_text(VICTIM)
    finally:
        context.close()
