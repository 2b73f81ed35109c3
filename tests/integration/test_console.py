"""`odradek console`: the web console as a person uses it, against a real broker, in a real browser.

A broker (tests/conftest.py) gets a topic with text, JSON and binary records, consumer groups with committed
offsets and the weblogs pipeline's metrics topic (records written by the pipeline's own sink code); the
console runs as a subprocess on a free port (stopped by pid) and Debian's chromium, driven headless by
Playwright, opens each page, checks the values shown against what the clients wrote and the Kafka protocol
reports, and uses the forms. Every test saves a screenshot of its page under its tmp dir. Waits are on
events (Playwright's expect, wait_until on the console's log line), never on sleeps.

Every test logs in as the operator does: through the URL the console prints (`Console at ...?token=`);
`send` and `http_login` (tests/console_helpers.py) do the same for the tests that speak HTTP themselves.

Chromium is Debian's package (scripts/test.sh installs it); without it these tests fail rather than skip.
ODRADEK_CONSOLE_DOCS_SCREENSHOT=1 also copies the topic page's screenshot to docs/console-topic.png.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType
from playwright.sync_api import Browser, Page, expect

from tests import console_helpers
from tests.console_helpers import TIMEOUT_MS, Console, http_login, login, row, running_console, send
from tests.harness import (
    NO_REBALANCE_DELAY,
    REPO_ROOT,
    BrokerPool,
    BrokerProcess,
    free_port,
    run_cli,
)
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot

browser, page = console_helpers.browser, console_helpers.page  # the chromium fixtures
TOPIC = "orders"
PARTITIONS = 3
PER_PARTITION = 10
GROUP = "billing"
COMMITTED = {0: 3, 1: 5, 2: 10}  # lag 7 + 5 + 0
RESET_GROUP = "reporting"


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return {**NO_REBALANCE_DELAY, "broker.rack": "rack-a"}


def value_of(i: int) -> bytes:
    """Partition i % 3 gets: JSON (0), plain text (1), bytes that are not UTF-8 (2)."""
    kind = i % PARTITIONS
    if kind == 0:
        return json.dumps({"order": i, "item": "widget", "qty": 2}).encode()
    if kind == 1:
        return f"plain text order {i}".encode()
    return b"\xff\xfe\x00" + bytes([i])


def admin(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def commit(broker: BrokerProcess, group: str, offsets: dict[int, int]) -> None:
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in offsets.items()], asynchronous=False)
    finally:
        c.close()


def weblogs_windows() -> list[dict[str, object]]:
    base = 1_767_225_600_000  # 2026-01-01T00:00:00Z
    return [{"window_start": base + i * 60_000, "window_end": base + (i + 1) * 60_000, "requests": 100 + 10 * i,
             "bytes": 50_000 + i, "status_2xx": 90, "status_3xx": 5, "status_4xx": 4, "status_5xx": 1 + i,
             "error_rate_4xx": 0.04, "error_rate_5xx": (1 + i) / (100 + 10 * i), "latency_p50_ms": 20.0 + i,
             "latency_p95_ms": 80.4499999999989 + i, "latency_p99_ms": 150.0 + i, "distinct_clients": 30 + i,
             "top_paths": [{"path": "/", "requests": 40}]} for i in range(3)]


def current_window() -> dict[str, object]:
    """A minute that has not ended (its end an hour from now, so it stays unfinished however long the module
    runs): the console shows it as partial and keeps it out of the charts."""
    start = (int(time.time()) // 60 + 59) * 60_000
    return {**weblogs_windows()[0], "window_start": start, "window_end": start + 60_000, "requests": 7,
            "latency_p95_ms": 243.9499999999989}


@pytest.fixture(scope="module")
def data(broker: BrokerProcess) -> BrokerProcess:
    """The topic, its records, two groups with committed offsets and the weblogs metrics topic."""
    from odradek.pipelines.weblogs import METRICS_TOPIC
    from odradek.pipelines.weblogs.sinks import iso_ms, to_json

    a = admin(broker)
    futures = a.create_topics([NewTopic(TOPIC, PARTITIONS, 1), NewTopic(METRICS_TOPIC, 1, 1)])
    for f in futures.values():
        f.result(30)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(PARTITIONS * PER_PARTITION):
        p.produce(TOPIC, key=f"key-{i}".encode(), value=value_of(i), partition=i % PARTITIONS,
                  headers=[("source", b"test"), ("seq", str(i).encode())])
    for w in [*weblogs_windows(), current_window()]:
        p.produce(METRICS_TOPIC, key=iso_ms(w["window_start"]).encode(), value=to_json(w))
    assert p.flush(30) == 0
    commit(broker, GROUP, COMMITTED)
    commit(broker, RESET_GROUP, {0: 1, 1: 1, 2: 1})
    return broker


@pytest.fixture(scope="module")
def console(data: BrokerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    log = tmp_path_factory.mktemp("console") / "console.out"
    with running_console(data.bootstrap, log, "--refresh-ms", "1000", "--lag-sample-ms", "500",
                         "--metrics-url-template", "http://{host}:9404/metrics?broker={id}") as c:
        yield c


# --- pages ------------------------------------------------------------------------------------


def test_console_logs_where_it_listens(console: Console, data: BrokerProcess) -> None:
    cluster_id = admin(data).list_topics(timeout=10).cluster_id
    line = next(x for x in console.output().splitlines() if "listening on" in x)
    assert f"Odradek console listening on {console.url} (cluster {cluster_id} at {data.bootstrap})" in line
    assert line.startswith("[") and " INFO " in line and line.endswith("(odradek.console)")
    # The URL to log in with: a random token of 32 bytes (URL-safe base64), printed once, never logged.
    assert re.fullmatch(r"[A-Za-z0-9_-]{43,}", console.token), console.login_url
    assert console.login_url == f"{console.url}/?token={console.token}"
    assert [x for x in console.output().splitlines() if console.token in x] == [f"Console at {console.login_url}"]


def test_brokers_page(console: Console, data: BrokerProcess, page: Page, tmp_path: Path) -> None:
    page.goto(console.url + "/brokers")
    r = row(page, "brokers", "broker", 0)
    expect(r).to_contain_text(data.bootstrap)
    expect(r.locator(".controller")).to_have_text("controller")
    expect(r.locator(".rack")).to_have_text("rack-a")
    expect(r).to_contain_text(str(data.log_dir))  # DescribeLogDirs
    expect(r.locator("a", has_text="metrics")).to_have_attribute(
        "href", "http://127.0.0.1:9404/metrics?broker=0")


def test_topics_page(console: Console, page: Page) -> None:
    page.goto(console.url + "/topics")
    r = row(page, "topics", "topic", TOPIC)
    expect(r.locator(".partitions")).to_have_text(str(PARTITIONS))
    expect(r.locator(".size")).to_contain_text("B")
    expect(r.locator(".size")).not_to_have_text("-")
    expect(row(page, "topics", "topic", "__consumer_offsets")).to_have_count(0)  # internal: hidden


def test_topic_page(console: Console, data: BrokerProcess, page: Page, tmp_path: Path) -> None:
    a = admin(data)
    page.goto(f"{console.url}/topics/{TOPIC}")
    expect(page.locator("#partition-count")).to_have_text(str(PARTITIONS))
    md = a.list_topics(TOPIC, timeout=10).topics[TOPIC]
    for p in range(PARTITIONS):
        r = row(page, "partitions", "partition", p)
        expect(r.locator(".leader")).to_have_text(str(md.partitions[p].leader))
        expect(r.locator(".start")).to_have_text("0")
        expect(r.locator(".end")).to_have_text(str(PER_PARTITION))
    expect(row(page, "configs", "config", "cleanup.policy").locator(".value")).to_have_text("delete")
    # The page refreshes itself: a record produced now shows up as a new end offset without a reload.
    p = Producer({"bootstrap.servers": data.bootstrap})
    p.produce(TOPIC, key=b"late", value=b"\xff\xfe\x00\x99", partition=2)
    assert p.flush(30) == 0
    expect(row(page, "partitions", "partition", 2).locator(".end")).to_have_text(str(PER_PARTITION + 1))
    expect(page.locator("#updated")).to_contain_text("updated")
    shot = tmp_path / "topic-page.png"
    page.screenshot(path=str(shot), full_page=True)
    if os.environ.get("ODRADEK_CONSOLE_DOCS_SCREENSHOT") == "1":
        shutil.copyfile(shot, REPO_ROOT / "docs" / "console-topic.png")


def test_message_browser_shows_text_json_hex_and_headers(console: Console, page: Page) -> None:
    page.goto(f"{console.url}/topics/{TOPIC}/messages?partition=0&limit=5")
    first = page.locator('#messages tr[data-offset="0"]')
    expect(first.locator(".key")).to_have_text("key-0")
    expect(first.locator(".value pre.json")).to_have_text(
        json.dumps({"order": 0, "item": "widget", "qty": 2}, indent=2))
    expect(first.locator(".headers")).to_contain_text("source: test")
    expect(page.locator("#messages tr.message")).to_have_count(5)

    page.goto(f"{console.url}/topics/{TOPIC}/messages?partition=1&mode=offset&offset=4&limit=2")
    r = page.locator('#messages tr[data-offset="4"]')
    expect(r.locator(".key")).to_have_text(f"key-{4 * PARTITIONS + 1}")
    expect(r.locator(".value pre.text")).to_have_text(f"plain text order {4 * PARTITIONS + 1}")
    expect(page.locator("#messages tr.message")).to_have_count(2)

    page.goto(f"{console.url}/topics/{TOPIC}/messages?partition=2&limit=1")
    expect(page.locator('#messages tr[data-offset="0"] .value pre.hex')).to_have_text("ff fe 00 02")


def test_message_browser_from_a_timestamp(console: Console, data: BrokerProcess, page: Page) -> None:
    c = Consumer({"bootstrap.servers": data.bootstrap, "group.id": "ts-probe", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(TOPIC, 1, 6)])
        m = c.consume(1, timeout=10)[0]
    finally:
        c.close()
    ts = m.timestamp()[1]
    page.goto(f"{console.url}/topics/{TOPIC}/messages?partition=1&mode=timestamp&timestamp={ts}&limit=50")
    first = page.locator("#messages tr.message").first
    # The first record at or after the timestamp: offset 6 unless earlier records share its millisecond.
    expect(first).to_be_visible()
    assert int(first.get_attribute("data-offset") or "-1") in range(7)
    expect(page.locator('#messages tr[data-offset="9"]')).to_have_count(1)


def test_message_browser_live_tail(console: Console, data: BrokerProcess, page: Page) -> None:
    page.goto(f"{console.url}/topics/{TOPIC}/messages?partition=1&limit=3")
    expect(page.locator("#messages tr.message")).to_have_count(3)
    page.locator("#tail").check()
    p = Producer({"bootstrap.servers": data.bootstrap})
    p.produce(TOPIC, key=b"tail-key", value=b'{"tailed": true}', partition=1)
    assert p.flush(30) == 0
    new = page.locator("#messages tr.message", has_text="tail-key")
    expect(new).to_have_count(1)
    expect(new.locator(".value pre.json")).to_have_text('{\n  "tailed": true\n}')
    expect(new).to_have_attribute("data-offset", str(PER_PARTITION))


def test_groups_and_lag(console: Console, data: BrokerProcess, page: Page) -> None:
    ends = {p: _end(data, p) for p in range(PARTITIONS)}  # the tail test adds a record to partition 1
    lags = {p: ends[p] - COMMITTED[p] for p in range(PARTITIONS)}
    page.goto(console.url + "/groups")
    g = row(page, "groups", "group", GROUP)
    expect(g.locator(".state")).to_have_text("Empty")
    expect(g.locator(".lag")).to_have_text(str(sum(lags.values())))

    page.goto(f"{console.url}/groups/{GROUP}")
    for p in range(PARTITIONS):
        r = row(page, "offsets", "tp", f"{TOPIC}-{p}")
        expect(r.locator(".committed")).to_have_text(str(COMMITTED[p]))
        expect(r.locator(".end")).to_have_text(str(ends[p]))
        expect(r.locator(".lag")).to_have_text(str(lags[p]))
    expect(page.locator("#total-lag")).to_have_text(str(sum(lags.values())))
    # The lag chart: samples taken by the console while it runs, drawn by uPlot.
    expect(page.locator("#lag-chart canvas")).to_have_count(1)
    expect(page.locator("#lag-chart")).to_have_attribute("data-points", re.compile(r"^[1-9]\d*$"))


def _end(broker: BrokerProcess, partition: int) -> int:
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "end-probe"})
    try:
        return int(c.get_watermark_offsets(TopicPartition(TOPIC, partition), timeout=10)[1])
    finally:
        c.close()


def committed_offsets(broker: BrokerProcess, group: str) -> dict[int, int]:
    from confluent_kafka import ConsumerGroupTopicPartitions

    a = admin(broker)  # kept referenced until the answer arrives
    fut = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
    return {tp.partition: tp.offset for tp in fut.result(30).topic_partitions if tp.topic == TOPIC}


def test_reset_offsets(console: Console, data: BrokerProcess, page: Page) -> None:
    page.goto(f"{console.url}/groups/{RESET_GROUP}")
    form = page.locator("#reset-offsets")
    form.locator('input[name="to"][value="latest"]').check()
    form.locator("button").click()
    expect(page.locator(".flash.ok")).to_contain_text("Reset 3 partition offset(s)")
    expect(page.locator("#total-lag")).to_have_text("0")
    assert committed_offsets(data, RESET_GROUP) == {p: _end(data, p) for p in range(PARTITIONS)}

    form.locator('select[name="topic"]').select_option(TOPIC)
    form.locator('input[name="to"][value="offset"]').check()
    form.locator('input[name="offset"]').fill("2")
    form.locator("button").click()
    expect(page.locator(".flash.ok")).to_contain_text("to 2")
    expect(row(page, "offsets", "tp", f"{TOPIC}-0").locator(".committed")).to_have_text("2")
    assert committed_offsets(data, RESET_GROUP) == {p: 2 for p in range(PARTITIONS)}


def test_reset_refused_while_the_group_has_members(console: Console, data: BrokerProcess, page: Page) -> None:
    group = "busy"
    c = Consumer({"bootstrap.servers": data.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    try:
        c.subscribe([TOPIC])
        wait_until(lambda: c.poll(0.5) is not None or c.assignment(), 30, "the busy consumer's assignment")
        c.commit(offsets=[TopicPartition(TOPIC, p, 1) for p in range(PARTITIONS)], asynchronous=False)
        page.goto(f"{console.url}/groups/{group}")
        expect(page.locator("#group-state")).to_have_text("Stable")
        expect(page.locator("#members")).to_contain_text("rdkafka")
        expect(page.locator("#reset-offsets button")).to_be_disabled()
        # Posting anyway (same origin) is refused with a message, not a stack trace.
        page.evaluate("document.querySelector('#reset-offsets button').disabled = false")
        page.locator("#reset-offsets button").click()
        expect(page.locator(".flash.error")).to_contain_text("has active members")
    finally:
        c.close()


def test_weblogs_metrics_charts(console: Console, page: Page) -> None:
    page.goto(console.url + "/weblogs")
    expect(page.locator("#weblogs")).to_have_attribute("data-windows", "3")
    expect(page.locator("#weblogs canvas")).to_have_count(4)
    expect(page.locator("#weblogs-latest")).to_contain_text(
        "Latest complete minute 2026-01-01T00:02:00Z: 120 requests, p95 82 ms, 5xx 2.50%.")
    expect(page.locator("#weblogs-latest")).to_contain_text(re.compile(r"This minute so far \(\S+, partial\): 7 requests\."))


def test_a_chart_of_one_sample_spans_minutes_not_years(console: Console, page: Page) -> None:
    page.goto(console.url + "/weblogs")
    expect(page.locator("#weblogs")).to_have_attribute("data-windows", "3")
    page.evaluate("""() => { const el = document.getElementById("chart-clients");
        el._plot.destroy(); el._plot = null; Console.chart(el, "", ["one"], [[1767225600], [5]]); }""")
    span = page.evaluate("""() => { const x = document.getElementById("chart-clients")._plot.scales.x;
        return x.max - x.min; }""")
    assert 0 < span <= 600, span


def test_headers_sit_over_their_columns(console: Console, data: BrokerProcess, page: Page) -> None:
    for path in ("/topics", f"/topics/{TOPIC}", "/groups", f"/groups/{GROUP}", "/"):
        page.goto(console.url + path)
        mismatched = page.evaluate("""() => {
            const out = [];
            for (const table of document.querySelectorAll("table")) {
              const row = table.tBodies[0] && table.tBodies[0].rows[0];
              const head = table.tHead && table.tHead.rows[0];
              if (!row || !head) continue;
              Array.from(row.cells).forEach((td, i) => {
                const th = head.cells[i];
                if (!th || td.colSpan > 1) return;
                const a = getComputedStyle(td).textAlign, b = getComputedStyle(th).textAlign;
                const norm = (v) => (v === "start" ? "left" : v === "end" ? "right" : v);
                if (norm(a) !== norm(b)) out.push(`${table.id || "table"} column ${i}: ${th.textContent.trim()}`);
              });
            }
            return out; }""")
        assert mismatched == [], (path, mismatched)


# --- actions ----------------------------------------------------------------------------------


def test_create_topic_then_delete_it(console: Console, data: BrokerProcess, page: Page) -> None:
    a = admin(data)
    page.goto(console.url + "/topics")
    form = page.locator("#create-topic")
    form.locator('input[name="name"]').fill("made-in-browser")
    form.locator('input[name="partitions"]').fill("4")
    form.locator('textarea[name="configs"]').fill("retention.ms=7200000")
    form.locator("button").click()
    expect(page.locator(".flash.ok")).to_have_text("Created topic made-in-browser")
    expect(page.locator("#partition-count")).to_have_text("4")
    md = a.list_topics("made-in-browser", timeout=10).topics["made-in-browser"]
    assert md.error is None and len(md.partitions) == 4
    res = ConfigResource(ResourceType.TOPIC, "made-in-browser")
    assert a.describe_configs([res])[res].result(30)["retention.ms"].value == "7200000"

    # Add partitions through its form.
    page.locator('#add-partitions input[name="total"]').fill("6")
    page.locator("#add-partitions button").click()
    expect(page.locator(".flash.ok")).to_contain_text("now has 6 partitions")
    assert len(a.list_topics("made-in-browser", timeout=10).topics["made-in-browser"].partitions) == 6

    # A bad request is an error line on the page, not a stack trace.
    page.goto(console.url + "/topics")
    form.locator('input[name="name"]').fill("made-in-browser")
    form.locator("button").click()
    expect(page.locator(".flash.error")).to_contain_text("Could not create topic 'made-in-browser'")
    expect(page.locator("body")).not_to_contain_text("Traceback")

    page.goto(console.url + "/topics/made-in-browser")
    page.locator('#delete-topic input[name="confirm"]').fill("made-in-browser")
    page.locator("#delete-topic button").click()
    expect(page.locator(".flash.ok")).to_have_text("Deleted topic made-in-browser")
    wait_until(lambda: "made-in-browser" not in a.list_topics(timeout=10).topics, 30, "the topic to be gone")


def test_edit_a_config(console: Console, data: BrokerProcess, page: Page) -> None:
    a = admin(data)
    res = ConfigResource(ResourceType.TOPIC, TOPIC)
    page.goto(f"{console.url}/topics/{TOPIC}")
    form = page.locator("#edit-config")
    form.locator('input[name="key"]').fill("retention.ms")
    form.locator('input[name="value"]').fill("3600000")
    form.locator("button").click()
    expect(page.locator(".flash.ok")).to_contain_text("retention.ms=3600000")
    expect(row(page, "configs", "config", "retention.ms").locator(".value")).to_have_text("3600000")
    assert a.describe_configs([res])[res].result(30)["retention.ms"].value == "3600000"

    form.locator('input[name="key"]').fill("retention.ms")
    form.locator('input[name="reset"]').check()
    form.locator("button").click()
    expect(page.locator(".flash.ok")).to_contain_text("reset to its default")
    assert a.describe_configs([res])[res].result(30)["retention.ms"].value == "604800000"

    form.locator('input[name="key"]').fill("no.such.config")
    form.locator('input[name="value"]').fill("1")
    form.locator("button").click()
    expect(page.locator(".flash.error")).to_contain_text("Could not change config no.such.config")


def test_cross_origin_posts_are_refused(console: Console, data: BrokerProcess) -> None:
    """Logged in and with the CSRF token, a POST still needs this console's Origin (or Referer)."""
    s = http_login(console)
    body = f"name=csrf-topic&partitions=1&csrf_token={s.csrf}"
    for headers in ({"Origin": "http://evil.example"}, {"Referer": "http://evil.example/page"}, {},
                    {"Origin": "null"}, {"Origin": console.url, "Sec-Fetch-Site": "cross-site"},
                    {"Origin": console.url.rsplit(":", 1)[0] + ":1"}):
        assert send(console, "POST", "/topics", {"Cookie": s.cookie, **headers}, body).status == 403, headers
    assert "csrf-topic" not in admin(data).list_topics(timeout=10).topics
    assert console.output().count("Refused POST /topics from another origin") == 6, console.output()
    # The same request from the console's own origin goes through (a redirect to the new topic's page).
    same = f"name=same-origin-topic&partitions=1&csrf_token={s.csrf}"
    assert send(console, "POST", "/topics", s.headers(console), same).status == 303
    referer = {"Cookie": s.cookie, "Referer": console.url + "/topics"}
    assert send(console, "POST", "/topics", referer, f"name=referer-topic&csrf_token={s.csrf}").status == 303
    topics = admin(data).list_topics(timeout=10).topics
    assert "same-origin-topic" in topics and "referer-topic" in topics


def test_share_group_page(console: Console, data: BrokerProcess, page: Page, tmp_path: Path) -> None:
    """A share group (KIP-932) in the groups list with its type, and its page: members, and each
    partition's start offset and lag."""
    from confluent_kafka import ShareConsumer

    from odradek.admin_client.share_groups import ShareGroupsClient

    group = "dispatch"
    with ShareGroupsClient(data.bootstrap, 30) as client:  # the group, empty, reading partition 0 from offset 2
        assert client.alter_offsets(group, {(TOPIC, 0): 2}) == {(TOPIC, 0): 0}
    lag = _end(data, 0) - 2
    page.goto(console.url + "/groups")
    g = row(page, "groups", "group", group)
    expect(g.locator(".type")).to_have_text("Share")
    expect(g.locator(".state")).to_have_text("Empty")
    expect(g.locator(".lag")).to_have_text(str(lag))
    expect(row(page, "groups", "group", GROUP).locator(".type")).to_have_text("Classic")
    page.goto(f"{console.url}/groups/{group}")
    expect(page.locator("h1")).to_have_text(f"Share group {group}")
    r = row(page, "offsets", "tp", f"{TOPIC}-0")
    expect(r.locator(".start")).to_have_text("2")
    expect(r.locator(".lag")).to_have_text(str(lag))
    expect(page.locator("#members")).to_contain_text("No members")
    c = ShareConsumer({"bootstrap.servers": data.bootstrap, "group.id": group, "client.id": "dispatcher",
                       "share.acknowledgement.mode": "explicit"})
    try:
        c.subscribe([TOPIC])
        c.poll(0.5)  # joins; what it acquires it holds unacknowledged, so the lag does not move
        expect(page.locator("#group-state")).to_have_text("Stable", timeout=TIMEOUT_MS)
        member = page.locator("#members tr[data-member]")
        expect(member).to_have_count(1)
        expect(member).to_contain_text("dispatcher")
        # partition 0 has share state (its offset was set), so the first heartbeat is given it alone; the
        # coordinator then initializes 1 and 2, and they come with the next heartbeat, 5 s on (Kafka 4.1+)
        expect(member.locator(".assignment")).to_have_text(f"{TOPIC}-0, {TOPIC}-1, {TOPIC}-2",
                                                          timeout=TIMEOUT_MS)
        expect(page.locator("#total-lag")).to_have_text(str(lag))
        page.screenshot(path=str(tmp_path / "share-group.png"))
    finally:
        c.close()


def test_missing_topic_or_group_is_a_page_not_a_trace(console: Console, page: Page) -> None:
    resp = page.goto(console.url + "/topics/no-such-topic")
    assert resp is not None and resp.status == 404
    expect(page.locator(".flash.error")).to_have_text("Topic 'no-such-topic' does not exist")
    resp = page.goto(console.url + "/groups/no-such-group")
    assert resp is not None and resp.status == 404
    expect(page.locator(".flash.error")).to_have_text("Consumer group 'no-such-group' does not exist")


def test_command_config_over_sasl(brokers: BrokerPool, browser: Browser, tmp_path: Path) -> None:
    """--command-config reaches every client of the console: a SASL_PLAINTEXT listener with a password."""
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
            'password="admin-secret" user_alice="alice-secret";')
    plain, sasl = free_port(), free_port()
    brokers.start({"listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
                   "sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": jaas}, name="sasl", port=plain)
    client = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "alice",
              "sasl.password": "alice-secret"}
    p = Producer({"bootstrap.servers": f"127.0.0.1:{sasl}", **client})
    p.produce("secured", key=b"who", value=b"alice")
    assert p.flush(30) == 0
    config = tmp_path / "client.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in client.items()))

    wrong = tmp_path / "wrong.properties"
    wrong.write_text(config.read_text().replace("alice-secret", "wrong"))
    r = run_cli("console", "--bootstrap-server", f"127.0.0.1:{sasl}", "--command-config", str(wrong),
                "--timeout", "5000", "--port", "0")
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "Authentication failed" in r.stderr or "could not reach" in r.stderr, r.stderr

    with running_console(f"127.0.0.1:{sasl}", tmp_path / "console.out", "--command-config", str(config)) as c:
        context = browser.new_context()
        context.set_default_timeout(TIMEOUT_MS)
        page = context.new_page()
        try:
            login(page, c)
            expect(row(page, "brokers", "broker", 0)).to_contain_text(f"127.0.0.1:{sasl}")
            page.goto(c.url + "/topics/secured/messages")
            r0 = page.locator('#messages tr[data-offset="0"]')
            expect(r0.locator(".key")).to_have_text("who")
            expect(r0.locator(".value")).to_have_text("alice")
        finally:
            page.screenshot(path=str(tmp_path / "sasl-messages.png"), full_page=True)
            context.close()


def test_under_replicated_partitions_are_marked(zk_standalone: ZooKeeperChroot, brokers: BrokerPool,
                                               browser: Browser, tmp_path: Path) -> None:
    cluster = brokers.start_cluster(zk_standalone.connect_string, 2, {"replica.lag.time.max.ms": "3000"})
    boot = cluster.brokers[0].bootstrap
    a = admin(cluster.brokers[0])
    a.create_topics([NewTopic("replicated", 2, 2)])["replicated"].result(30)

    def layout() -> list[tuple[int, list[int]]]:
        md = a.list_topics("replicated", timeout=10).topics["replicated"]
        return [(m.leader, sorted(m.isrs)) for m in md.partitions.values()]

    wait_until(lambda: all(isr == [0, 1] for _, isr in layout()), 60, "both replicas in sync")
    cluster.brokers[1].stop()
    wait_until(lambda: layout() == [(0, [0]), (0, [0])], 60, lambda: f"broker 0 alone in the ISR: {layout()}")

    with running_console(boot, tmp_path / "console.out") as c:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(TIMEOUT_MS)
        page = context.new_page()
        try:
            login(page, c)
            page.goto(c.url + "/topics")
            expect(row(page, "topics", "topic", "replicated")).to_contain_text("2 under-replicated")
            page.goto(c.url + "/topics/replicated")
            for p in (0, 1):
                r = row(page, "partitions", "partition", p)
                expect(r).to_have_class("warn")
                expect(r).to_contain_text("under-replicated")
                expect(r.locator(".leader")).to_have_text("0")
            page.goto(c.url + "/brokers")
            expect(page.locator("#brokers tbody tr")).to_have_count(1)
        finally:
            page.screenshot(path=str(tmp_path / "under-replicated.png"), full_page=True)
            context.close()


# --- the command ------------------------------------------------------------------------------


def test_unreachable_bootstrap_is_one_line() -> None:
    port = free_port()
    r = run_cli("console", "--bootstrap-server", f"127.0.0.1:{port}", "--timeout", "1500", "--port", "0")
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: could not reach any broker at 127.0.0.1:{port}"), r.stderr


def test_help() -> None:
    r = run_cli("console", "--help")
    assert r.returncode == 0
    for flag in ("--bootstrap-server", "--command-config", "--port", "--host", "--metrics-url-template",
                 "--token-file", "--allowed-host", "--read-only"):
        assert flag in r.stdout
