"""The console decodes records in Confluent's wire format through the schema registry the cluster's broker runs
(`schema_registry_api`, found by the console itself): Avro keys and values written by confluent-kafka's
AvroSerializer shown as Avro JSON with their schema id and a link to the subject's version, JSON Schema values
as their JSON, Protobuf ones as hex saying why; an unknown id, a truncated payload and trailing bytes as hex
with the reason; an XSS string inside an Avro field as text. A registry that stalls costs one short wait a
page, never a hung console. The Weblogs page charts Avro WindowMetrics records (the pipeline's schema, as
`odradek demo --schema-registry` writes them) as it charts JSON ones. HTTP level: no browser."""

from __future__ import annotations

import html
import json
import re
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.clients import create_topic, unique_name
from tests.console_helpers import Console, http_login, running_console, send
from tests.harness import BrokerProcess, free_port
from tests.schema_registry.helpers import RestClient, in_broker_config, in_broker_registry

PORT = free_port()
XSS = "</pre><script>alert('avro')</script>"
ORDER = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"}, {"name": "note", "type": "string"},
    {"name": "coupon", "type": ["null", "string"], "default": None}]}


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return in_broker_config(PORT)


@pytest.fixture(scope="module")
def registry(broker: BrokerProcess) -> RestClient:
    return in_broker_registry(PORT)


@pytest.fixture(scope="module")
def console(broker: BrokerProcess, registry: RestClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    with running_console(broker.bootstrap, tmp_path_factory.mktemp("console") / "console.out") as c:
        yield c


def get(console: Console, path: str) -> tuple[int, str]:
    answer = send(console, "GET", path, {"Cookie": http_login(console).cookie})
    return answer.status, answer.body


def produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None]]) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for key, value in records:
        p.produce(topic, value, key, partition=0)
    assert p.flush(30) == 0


def cell(body: str, offset: int, column: str) -> str:
    row = re.search(rf'<tr class="message" data-offset="{offset}">(.*?)</tr>', body, re.S)
    assert row, body
    found = re.search(rf'<td class="{column}">(.*?)</td>', row.group(1), re.S)
    assert found, row.group(1)
    return found.group(1)


def register(registry: RestClient, subject: str, schema: str, schema_type: str = "AVRO") -> int:
    status, body = registry.call("POST", f"/subjects/{subject}/versions",
                                 {"schema": schema, **({"schemaType": schema_type} if schema_type != "AVRO" else {})})
    assert status == 200, body
    return int(body["id"])


def test_the_browser_decodes_registry_framed_records(console: Console, broker: BrokerProcess,
                                                     registry: RestClient) -> None:
    topic = unique_name("orders")
    create_topic(broker.bootstrap, topic)
    sr = SchemaRegistryClient({"url": registry.url})
    values = AvroSerializer(sr, json.dumps(ORDER))
    keys = AvroSerializer(sr, json.dumps("string"))
    ctx_v, ctx_k = SerializationContext(topic, MessageField.VALUE), SerializationContext(topic, MessageField.KEY)
    order = values({"id": 7, "note": XSS, "coupon": "WINTER"}, ctx_v)
    value_id = registry.call("GET", f"/subjects/{topic}-value/versions/latest")[1]["id"]
    json_id = register(registry, f"{topic}-json-value", json.dumps({"type": "object"}), "JSON")
    proto_id = register(registry, f"{topic}-proto-value", 'syntax = "proto3";\nmessage P { int32 a = 1; }', "PROTOBUF")
    produce(broker.bootstrap, topic, [
        (keys("customer-1", ctx_k), order),  # 0: decoded key and value
        (b"k", order[:-4]),  # 1: truncated
        (b"k", b"\x00" + (99_999).to_bytes(4, "big") + b"\x02a"),  # 2: an id the registry does not know
        (b"k", order + b"\x00\x00"),  # 3: bytes left after the datum
        (b"k", b"\x00" + json_id.to_bytes(4, "big") + b'{"a": [1, "<b>"]}'),  # 4: JSON Schema
        (b"k", b"\x00" + proto_id.to_bytes(4, "big") + b"\x00\x08\x01"),  # 5: Protobuf
        (b"plain", b"just text"),  # 6: untouched
    ])
    status, body = get(console, f"/topics/{topic}/messages?partition=0&limit=10")
    assert status == 200, body

    value = cell(body, 0, "value")
    assert f'<span class="schema-id">schema id {value_id}</span>' in value, value
    assert f'href="/schemas/subject?name={topic}-value&amp;version=1">{topic}-value version 1</a>' in value, value
    decoded = re.search(r'<pre class="payload avro"[^>]*>(.*?)</pre>', value, re.S)
    assert decoded, value
    assert json.loads(html.unescape(decoded.group(1))) == {"id": 7, "note": XSS, "coupon": {"string": "WINTER"}}
    assert "<script>" not in body and "&lt;/pre&gt;&lt;script&gt;alert(" in value  # the field is text, not markup
    key = cell(body, 0, "key")
    assert f"{topic}-key version 1" in key and '<pre class="payload avro"' in key and "&#34;customer-1&#34;" in key

    for offset, why in [(1, f"does not decode with schema id {value_id}: EOFError"),
                        (2, "schema id 99999 is unknown to the registry"),
                        (3, f"schema id {value_id} reads only")]:
        shown = cell(body, offset, "value")
        assert '<pre class="payload hex"' in shown and why in shown, (offset, shown)
    assert cell(body, 1, "value").count(" ") > 10 and "00 00 00 00" in cell(body, 1, "value")  # the bytes, as hex

    as_json = cell(body, 4, "value")
    assert f"schema id {json_id} (JSON)" in as_json and '<pre class="payload json">' in as_json
    assert "&#34;&lt;b&gt;&#34;" in as_json
    proto = cell(body, 5, "value")
    assert f"schema id {proto_id} (PROTOBUF)" in proto and "message descriptors" in proto and "payload hex" in proto
    assert '<pre class="payload text">just text</pre>' in cell(body, 6, "value")

    # the live tail's API says the same
    s = http_login(console)
    answer = send(console, "GET", f"/api/topics/{topic}/messages?partition=0&offset=0&limit=3", {"Cookie": s.cookie})
    rows: list[dict[str, Any]] = json.loads(answer.body)["messages"]
    assert [r["value"]["kind"] for r in rows] == ["avro", "hex", "hex"]
    assert rows[0]["value"]["schema_id"] == value_id and rows[0]["value"]["subject"] == f"{topic}-value"
    assert "unknown to the registry" in rows[2]["value"]["note"]


def test_a_page_decodes_a_bounded_number_of_bytes(console: Console, broker: BrokerProcess,
                                                 registry: RestClient) -> None:
    """Avro JSON is read in pure Python: a page decodes its first MiB of records, the rest stay hex saying why;
    a record over 256 KiB is never decoded."""
    from odradek.serde.avro import AvroSerializer
    from odradek.serde.registry_client import RegistryClient

    topic = unique_name("big")
    create_topic(broker.bootstrap, topic)
    ser = AvroSerializer(RegistryClient(registry.url), f"{topic}-value", "string")
    produce(broker.bootstrap, topic, [(None, ser.encode("x" * 200_000))] * 6 + [(None, ser.encode("y" * 300_000))])
    status, body = get(console, f"/topics/{topic}/messages?partition=0&limit=7")
    assert status == 200, body
    assert [bool(re.search(r'<pre class="payload avro"', cell(body, i, "value"))) for i in range(7)] == [True] * 5 + [False] * 2
    assert "this page decoded 1024 KiB of records already" in cell(body, 5, "value")
    assert "300008 bytes: larger than the 256 KiB the browser decodes" in cell(body, 6, "value")
    assert f"{topic}-value version 1" in cell(body, 6, "value")  # "string" is the orders' keys' schema too
    status, body = get(console, f"/topics/{topic}/messages?partition=0&offset=5&limit=1")
    assert '<pre class="payload avro"' in cell(body, 5, "value")


def test_a_stalled_registry_costs_one_short_wait(broker: BrokerProcess, registry: RestClient,
                                                 tmp_path_factory: pytest.TempPathFactory) -> None:
    """A registry that takes connections and never answers: the first page waits the lookup's timeout once
    (2 s; five waits would pass the console's 10 s request timeout, a 504), shows the records as hex saying
    so, and the next pages do not ask it again for a while."""
    topic = unique_name("stalled")
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, [(None, b"\x00\x00\x00\x00\x01\x02a")] * 5)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with running_console(broker.bootstrap, tmp_path_factory.mktemp("stalled") / "console.out",
                             "--schema-registry-url", url) as c:
            status, body = get(c, f"/topics/{topic}/messages?partition=0&limit=5")
            assert status == 200, body
            notes = re.findall(r'<div class="note">(.*?)</div>', body)
            assert len(notes) == 5 and "Schema registry unreachable" in notes[0] and "timed out" in notes[0], notes
            assert all("asked again in" in n for n in notes[1:]), notes
            status, body = get(c, f"/topics/{topic}/messages?partition=0&limit=5")
            assert status == 200 and body.count("asked again in") == 5, body


def test_weblogs_page_charts_avro_metrics(console: Console, broker: BrokerProcess, registry: RestClient) -> None:
    """WindowMetrics records framed by the pipeline's own serializer (registered under access-metrics-value), a
    JSON one beside them, and one with an unknown id (skipped): the windows are charted."""
    from odradek.pipelines.weblogs import METRICS_TOPIC
    from odradek.pipelines.weblogs.schemas import metrics_serializer
    from odradek.pipelines.weblogs.sinks import iso_ms, to_json
    from tests.integration.test_console import weblogs_windows

    create_topic(broker.bootstrap, METRICS_TOPIC)
    windows = weblogs_windows()
    avro = metrics_serializer(registry.url)
    produce(broker.bootstrap, METRICS_TOPIC,
            [(iso_ms(w["window_start"]).encode(), avro.encode(w)) for w in windows[:2]]  # type: ignore[arg-type]
            + [(b"x", b"\x00\x00\x01\x86\x9f\x02"), (iso_ms(windows[2]["window_start"]).encode(),  # type: ignore[arg-type]
                                                     to_json(windows[2]))])
    s = http_login(console)
    answer = send(console, "GET", "/api/weblogs", {"Cookie": s.cookie})
    assert answer.status == 200, answer.body
    got = json.loads(answer.body)
    assert got["requests"] == [100, 110, 120] and got["distinct_clients"] == [30, 31, 32], got
    assert got["t"] == [w["window_start"] / 1000 for w in windows]  # type: ignore[operator]
    assert got["latest"]["window_start"] == "2026-01-01T00:02:00Z" and got["problem"] is None
    assert got["latency_p95_ms"][0] == pytest.approx(80.4499999999989)
    status, body = get(console, f"/topics/{METRICS_TOPIC}/messages?partition=0&limit=1")
    assert status == 200 and '<pre class="payload avro"' in body and "&#34;top_paths&#34;" in body
