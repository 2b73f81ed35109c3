"""The console's Connectors page (`odradek console --connect-url URL`) against a real standalone Connect worker
and broker, in a real browser: each connector's state, class, worker and tasks as the worker reports them, and
the pause, resume and restart buttons, which go through the console's gate (a POST without this console's
Origin or CSRF token is refused and changes nothing) and then the worker's REST API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests import console_helpers
from tests.clients import create_topic
from tests.connect_helpers import Worker
from tests.console_helpers import Console, http_login, row, running_console, send
from tests.harness import BrokerProcess
from tests.waiting import wait_until

browser, page = console_helpers.browser, console_helpers.page  # the chromium fixtures
NAME = "lines-in"


@pytest.fixture(scope="module")
def worker(broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    cwd = tmp_path_factory.mktemp("console-connect")
    create_topic(broker.bootstrap, "console-lines")
    (cwd / "in.txt").write_text("one\ntwo\n")
    w = Worker(cwd, broker)
    w.start()
    w.call("PUT", f"/connectors/{NAME}/config", {"connector.class": "FileStreamSource", "file": str(cwd / "in.txt"),
                                                 "topic": "console-lines"})
    wait_until(lambda: state(w) == ("RUNNING", ["RUNNING"]), 60, "the connector running")
    yield w
    w.stop()


@pytest.fixture(scope="module")
def console(broker: BrokerProcess, worker: Worker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    log = tmp_path_factory.mktemp("console") / "console.out"
    with running_console(broker.bootstrap, log, "--refresh-ms", "500", "--connect-url",
                         f"http://127.0.0.1:{worker.port}") as c:
        yield c


def state(worker: Worker) -> tuple[str, list[str]]:
    status = worker.get(f"/connectors/{NAME}/status")
    return status["connector"]["state"], [t["state"] for t in status["tasks"]]


def test_connectors_page_and_its_buttons(console: Console, worker: Worker, page: Page) -> None:
    page.locator("nav a", has_text="Connectors").click()
    connector = row(page, "connectors", "connector", NAME)
    expect(connector.locator(".state")).to_have_text("RUNNING")
    expect(connector.locator(".type")).to_have_text("source")
    expect(connector.locator(".class")).to_have_text("FileStreamSource")
    expect(connector.locator(".worker")).to_have_text(worker.get(f"/connectors/{NAME}/status")["connector"]["worker_id"])
    expect(connector.locator('.task[data-task="0"] .task-state')).to_have_text("RUNNING")

    connector.locator('button[value="pause"]').click()
    expect(page.locator(".flash.ok")).to_contain_text(f"Asked the worker to pause {NAME}")
    wait_until(lambda: state(worker) == ("PAUSED", ["PAUSED"]), 30, "the connector paused")
    expect(row(page, "connectors", "connector", NAME).locator(".state")).to_have_text("PAUSED")
    row(page, "connectors", "connector", NAME).locator('button[value="resume"]').click()
    expect(page.locator(".flash.ok")).to_contain_text(f"Asked the worker to resume {NAME}")
    wait_until(lambda: state(worker) == ("RUNNING", ["RUNNING"]), 30, "the connector resumed")
    row(page, "connectors", "connector", NAME).locator('button[value="restart"]').click()
    expect(page.locator(".flash.ok")).to_contain_text(f"Asked the worker to restart {NAME}")
    wait_until(lambda: state(worker) == ("RUNNING", ["RUNNING"]), 30, "the connector restarted")


def test_connector_posts_pass_the_gate(console: Console, worker: Worker) -> None:
    s = http_login(console)
    for headers, body in (({"Cookie": s.cookie, "Origin": "http://evil.example"}, f"csrf_token={s.csrf}"),
                          (s.headers(console), "csrf_token=" + "0" * 64), (s.headers(console), "")):
        assert send(console, "POST", f"/connectors/{NAME}/pause", headers, body).status == 403, headers
    assert send(console, "POST", f"/connectors/{NAME}/pause", {"Origin": console.url},
                f"csrf_token={s.csrf}").status in (303, 401, 403)  # not logged in: to the login page or refused
    assert state(worker) == ("RUNNING", ["RUNNING"])
    # an unknown connector is the worker's one-line error on the page, not a trace
    answer = send(console, "POST", "/connectors/nope/pause", s.headers(console), f"csrf_token={s.csrf}")
    assert answer.status == 303 and "Unknown+connector+nope" in answer.headers["Location"], answer.headers


def test_unreachable_worker_is_one_line(broker: BrokerProcess, tmp_path: Path) -> None:
    from tests.harness import free_port

    with running_console(broker.bootstrap, tmp_path / "console.out", "--connect-url",
                         f"http://127.0.0.1:{free_port()}") as c:
        s = http_login(c)
        answer = send(c, "GET", "/connectors", {"Cookie": s.cookie})
        assert answer.status == 200 and "Connect worker unreachable at http://127.0.0.1:" in answer.body
