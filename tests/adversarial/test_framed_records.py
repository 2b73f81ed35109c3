"""A record that kills whoever decodes it: an Avro value of a recursive schema (a linked list, `Node {v, next:
["null", "Node"]}`, registered under its topic's subject like any other) nested 120,000 levels deep in 240 KB
(under the 256 KiB the console's browser decodes).

What was observed: fastavro's compiled reader recurses on the C stack once per level with no limit, so the
console's serving process died of SIGSEGV on the message browser's page of that topic (the supervisor starts
it again; the page never shows), and `odradek console-consumer` with Confluent's AvroMessageFormatter died
the same way, --skip-message-on-error or not. odradek.serde now reads recursive schemas with fastavro's pure
Python reader, which Python's recursion limit stops: the record is a DecodeError like any undecodable one.
The broker runs the registry (`schema_registry_api`); the console finds it itself."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from tests.clients import create_topic, produce, unique_name
from tests.console_helpers import Console, http_login, running_console, send
from tests.harness import BrokerProcess, free_port, run_cli, wait_port
from tests.schema_registry.helpers import RestClient, in_broker_config, wait_primary

PORT = free_port()
NODE = {"type": "record", "name": "Node", "fields": [{"name": "v", "type": "int"},
                                                     {"name": "next", "type": ["null", "Node"]}]}
LEVELS = 120_000  # two bytes a level: 240 KB


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return in_broker_config(PORT)


@pytest.fixture(scope="module")
def deep_topic(broker: BrokerProcess) -> tuple[str, int]:
    """A topic holding a shallow list (offset 0), the deep one (1) and another shallow one (2)."""
    wait_port(PORT, 60)
    registry = RestClient(f"http://127.0.0.1:{PORT}")
    wait_primary(registry)
    topic = unique_name("nested")
    status, body = registry.call("POST", f"/subjects/{topic}-value/versions", {"schema": json.dumps(NODE)})
    assert status == 200, body
    header = b"\x00" + int(body["id"]).to_bytes(4, "big")
    create_topic(broker.bootstrap, topic)
    shallow = header + b"\x02\x02\x04\x00"  # {v: 1, next: {v: 2, next: null}}
    produce(broker.bootstrap, topic, [shallow, header + b"\x02\x02" * LEVELS + b"\x02\x00", shallow], partition=0)
    return topic, int(body["id"])


@pytest.fixture(scope="module")
def console(broker: BrokerProcess, deep_topic: tuple[str, int],
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    with running_console(broker.bootstrap, tmp_path_factory.mktemp("console") / "console.out") as c:
        yield c


def test_the_console_shows_a_deeply_nested_record_as_hex(console: Console, deep_topic: tuple[str, int]) -> None:
    topic, schema_id = deep_topic
    s = http_login(console)
    answer = send(console, "GET", f"/topics/{topic}/messages?partition=0&limit=3", {"Cookie": s.cookie})
    assert answer.status == 200, answer.body
    deep = re.search(r'<tr class="message" data-offset="1">.*?<td class="value">(.*?)</td>', answer.body, re.S)
    assert deep, answer.body
    assert f"does not decode with schema id {schema_id}: RecursionError" in deep.group(1)
    assert '<pre class="payload hex"' in deep.group(1)
    assert answer.body.count('<pre class="payload avro"') == 2  # its neighbours decode
    assert "died" not in console.output()  # the supervisor never had to start the serving process again


def test_console_consumer_skips_a_deeply_nested_record(broker: BrokerProcess, deep_topic: tuple[str, int]) -> None:
    topic, schema_id = deep_topic
    done = run_cli("console-consumer", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--from-beginning",
                   "--max-messages", "3", "--timeout-ms", "10000", "--skip-message-on-error",
                   "--formatter", "io.confluent.kafka.formatter.AvroMessageFormatter",
                   "--property", f"schema.registry.url=http://127.0.0.1:{PORT}")
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.splitlines() == ['{"v":1,"next":{"Node":{"v":2,"next":null}}}'] * 2
    assert f"cannot decode the value of {topic}-0@1: payload of {2 * LEVELS + 2} bytes does not decode with " \
           f"schema id {schema_id}: RecursionError" in done.stderr
