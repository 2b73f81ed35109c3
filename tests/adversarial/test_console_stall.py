"""Issue #36, observation 12: the console's serving process crashed when its cluster stalled.

What was observed: with every broker of a SASL_SSL cluster frozen (SIGSTOP) for 20 s while the console
served pages, the serving process died of SIGSEGV (twice); the supervisor started another, but a crash is a
defect. Reproduced here as SIGABRT, `rd_kafka_enq_once_del_source_return: Assertion 'eonce->refcnt > 0'
failed`, in `rd_kafka_admin_coord_response_parse` (core dump): librdkafka's coordinator-targeted admin
calls (DescribeConsumerGroups, ListConsumerGroupOffsets, AlterConsumerGroupOffsets) free their
enqueue-once object when the send to a coordinator whose connection just dropped fails, then use it again
(abort, or SIGSEGV once the memory is reused). Those calls could also stay stuck after the cluster came
back: the group page timed out for a minute and more with the broker running. The console now asks a
group's coordinator over the project's protocol client (admin_client/consumer_groups.py).

Before that change this test failed every time it was run (5 runs): three times the serving process died
of SIGABRT within the first freezes, twice the group page never answered again within 60 s.

The test freezes one broker a few times for longer than the console's (short) request timeout while the
group pages and the lag sampler keep asking the coordinator, and checks that the serving process never
died, that no request was an internal error (the weblogs reader let librdkafka's "Unknown partition"
through as a 500 while the cluster stalled), and that it serves the group again once the broker runs.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from odradek.pipelines.weblogs import METRICS_TOPIC
from tests.clients import create_topic, produce
from tests.console_helpers import Console, http_login, running_console, send
from tests.harness import BrokerPool
from tests.waiting import wait_until

TOPIC, GROUP = "stalled", "stalled-group"
TIMEOUT_MS = 1000  # the console's request timeout
FREEZES = 3
# The stimulus (what the test asserts is waited for on events): each freeze outlasts the request timeout,
# so coordinator requests in flight when the broker stops time out and their answers come after SIGCONT.
FROZEN_S, RUNNING_S = 2.5, 1.0
PATHS = ["/groups", f"/groups/{GROUP}", f"/api/groups/{GROUP}/lag", "/topics", "/api/weblogs"]


def commit_offsets(bootstrap: str) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(TOPIC, 0, 3)], asynchronous=False)
    finally:
        c.close()


def serving_pids(console: Console) -> list[int]:
    return [int(p) for p in re.findall(r"Started the console's serving process \(pid (\d+)\)", console.output())]


def test_freezing_the_cluster_while_group_pages_are_served_never_crashes_the_console(brokers: BrokerPool,
                                                                                    tmp_path: Path) -> None:
    broker = brokers.start(name="frozen")
    create_topic(broker.bootstrap, TOPIC)
    create_topic(broker.bootstrap, METRICS_TOPIC)
    produce(broker.bootstrap, TOPIC, [f"m{i}" for i in range(5)], partition=0)
    commit_offsets(broker.bootstrap)
    with running_console(broker.bootstrap, tmp_path / "console.out", "--timeout", str(TIMEOUT_MS),
                         "--lag-sample-ms", "100") as c:
        s = http_login(c)
        (first,) = serving_pids(c)
        stop = threading.Event()

        def browse(offset: int) -> None:
            n = offset
            while not stop.is_set():
                try:
                    send(c, "GET", PATHS[n % len(PATHS)], {"Cookie": s.cookie})
                except OSError:
                    pass  # the serving process died: the assertions below say so
                n += 1

        readers = [threading.Thread(target=browse, args=(i,), daemon=True) for i in range(8)]
        for t in readers:
            t.start()
        assert broker.pid is not None
        try:
            for _ in range(FREEZES):
                os.kill(broker.pid, signal.SIGSTOP)
                time.sleep(FROZEN_S)
                os.kill(broker.pid, signal.SIGCONT)
                time.sleep(RUNNING_S)
                if "died" in c.output():
                    break
        finally:
            os.kill(broker.pid, signal.SIGCONT)
            stop.set()
            for t in readers:
                t.join(30)
        wait_until(lambda: send(c, "GET", f"/groups/{GROUP}", {"Cookie": s.cookie}).status == 200, 60,
                   lambda: f"the group page once the broker runs again: {c.output()[-3000:]}", ignoring=(OSError,))
        page = send(c, "GET", f"/groups/{GROUP}", {"Cookie": s.cookie})
        assert re.search(r'<td class="num committed">3</td>', page.body), page.body
        assert "died" not in c.output() and serving_pids(c) == [first], c.output()[-5000:]
        assert "Error serving" not in c.output(), c.output()[-5000:]  # a stall is "unreachable", never a 500
