"""Confluent's wire format and Avro over a schema registry (odradek.serde), without a broker: framing, the
serializer and deserializer round trip (with a reader schema), hostile bytes (no magic byte, too short, an
unknown id, a truncated payload, a schema of another type) as DecodeError naming the cause, a registry
that cannot be reached as RegistryError, the caches, and the pipeline's and console consumer's seams on top.

The registry here answers from memory through RegistryClient's one request method, in Confluent's JSON;
tests/schema_registry/test_in_broker.py runs the same client against the real registry."""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime
from typing import Any

import pytest

from odradek.cli.avro_formatter import AvroCodec, RecordError
from odradek.pipelines.weblogs.schemas import LINE_SCHEMA, METRICS_SCHEMA, LineSerializer
from odradek.serde.avro import (
    AvroDeserializer,
    AvroSerializer,
    DecodeError,
    avro_json,
    has_zero_byte_arrays,
    is_recursive,
    parse_schema,
    schema_text,
)
from odradek.serde.registry_client import RegisteredSchema, RegistryClient, RegistryError
from odradek.serde.wire import WireFormatError, frame, unframe


class MemoryRegistry(RegistryClient):
    """The registry's answers from a dict; counts the requests that reach it."""

    def __init__(self) -> None:
        super().__init__("http://registry.invalid:8081")
        self.schemas: dict[int, dict[str, Any]] = {}
        self.subjects: dict[str, list[int]] = {}
        self.requests: list[str] = []

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        self.requests.append(f"{method} {path}")
        parts = path.strip("/").split("/")
        if method == "GET" and parts[:2] == ["schemas", "ids"]:
            found = self.schemas.get(int(parts[2]))
            if found is None:
                raise RegistryError("Schema not found", 40403)
            return found
        if method == "POST" and parts[0] == "subjects":
            same = [i for i, s in self.schemas.items() if s["schema"] == body["schema"]]
            sid = same[0] if same else len(self.schemas) + 1
            if not same:
                self.schemas[sid] = {"schema": body["schema"], **({"schemaType": body["schemaType"]}
                                                                   if "schemaType" in body else {})}
            self.subjects.setdefault(parts[1], []).append(sid)
            return {"id": sid}
        raise AssertionError(path)


def test_frame_and_unframe() -> None:
    data = frame(7, b"payload")
    assert data[:5] == b"\x00\x00\x00\x00\x07"
    schema_id, payload = unframe(data)
    assert (schema_id, bytes(payload)) == (7, b"payload")
    with pytest.raises(WireFormatError, match="fewer than the 5 of Confluent"):
        unframe(b"\x00\x00\x01")
    with pytest.raises(WireFormatError, match="unknown magic byte 0x7b"):
        unframe(b'{"line": "not framed"}')


def test_round_trip_with_and_without_a_reader_schema() -> None:
    registry = MemoryRegistry()
    ser = AvroSerializer(registry, "access-metrics-value", METRICS_SCHEMA)
    metrics = {"window_start": 1_763_726_400_000, "window_end": 1_763_726_460_000, "requests": 3, "bytes": 10,
               "status_2xx": 2, "status_3xx": 0, "status_4xx": 1, "status_5xx": 0, "error_rate_4xx": 1 / 3,
               "error_rate_5xx": 0.0, "latency_p50_ms": 12.0, "latency_p95_ms": 80.5, "latency_p99_ms": 99.0,
               "distinct_clients": 2, "top_paths": [{"path": "/", "requests": 2}, {"path": "/cart", "requests": 1}]}
    data = ser.encode(metrics)
    assert data is not None and unframe(data)[0] == ser.register() == 1
    assert registry.subjects == {"access-metrics-value": [1]}
    decoded = AvroDeserializer(registry).decode(data)
    assert decoded["window_start"] == datetime(2025, 11, 21, 12, 0, tzinfo=UTC)
    assert decoded["top_paths"] == metrics["top_paths"] and decoded["requests"] == 3
    assert ser.encode(None) is None and AvroDeserializer(registry).decode(None) is None

    # a reader schema with a field the writer did not have (with a default) reads the old records
    reader = json.loads(json.dumps(LINE_SCHEMA))
    reader["fields"].append({"name": "host", "type": "string", "default": "www"})
    line = AvroSerializer(registry, "access-logs-value", LINE_SCHEMA).encode({"line": "GET /"})
    assert line is not None
    assert AvroDeserializer(registry, reader).decode(line) == {"line": "GET /", "host": "www"}
    # the writer's schema was fetched by id once per client, then cached
    fresh = MemoryRegistry()
    fresh.schemas = registry.schemas
    d = AvroDeserializer(fresh)
    for _ in range(3):
        d.decode(line)
    assert fresh.requests == ["GET /schemas/ids/2"]


def test_hostile_bytes_are_decode_errors_naming_the_cause() -> None:
    registry = MemoryRegistry()
    good = AvroSerializer(registry, "t-value", LINE_SCHEMA).encode({"line": "a fairly long access log line"})
    assert good is not None
    d = AvroDeserializer(registry)
    with pytest.raises(DecodeError, match="unknown magic byte 0x31"):
        d.decode(b"1.2.3.4 - - [21/Nov/2025] ...")
    with pytest.raises(DecodeError, match="fewer than the 5 of Confluent"):
        d.decode(b"\x00\x00")
    with pytest.raises(DecodeError, match="schema id 99 is unknown to the registry"):
        d.decode(frame(99, b"\x02a"))
    with pytest.raises(DecodeError, match=r"payload of 9 bytes does not decode with schema id 1: EOFError"):
        d.decode(good[:14])
    registry.schemas[5] = {"schema": '{"type": "object"}', "schemaType": "JSON"}
    with pytest.raises(DecodeError, match="schema id 5 is a JSON schema, not Avro"):
        d.decode(frame(5, b"{}"))
    # arrays of zero-byte items: 2**62 nulls claimed in 10 bytes would loop and fill memory; refused
    registry.schemas[6] = {"schema": json.dumps({"type": "array", "items": "null"})}
    with pytest.raises(DecodeError, match="schema id 6 has arrays of items that take no bytes"):
        d.decode(frame(6, b"\xfe\xff\xff\xff\xff\xff\xff\xff\x7f"))
    for schema, refused in [
        ({"type": "record", "name": "E", "fields": []}, False),
        ({"type": "array", "items": {"type": "record", "name": "E", "fields": [{"name": "n", "type": "null"}]}}, True),
        ({"type": "record", "name": "R", "fields": [{"name": "f", "type": {"type": "fixed", "name": "F", "size": 0}},
                                                    {"name": "a", "type": {"type": "array", "items": "F"}}]}, True),
        ({"type": "map", "values": {"type": "array", "items": ["null", "int"]}}, False),
        ({"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]},
                                                       {"name": "kids", "type": {"type": "array", "items": "Node"}}]}, False),
        (METRICS_SCHEMA, False), (LINE_SCHEMA, False),
    ]:
        assert has_zero_byte_arrays(schema_text(schema)) is refused, schema
    # an unknown id is asked once, then remembered for a while: bogus ids cannot become a request each
    before = len(registry.requests)
    for _ in range(5):
        with pytest.raises(DecodeError):
            d.decode(frame(99, b"\x02a"))
    assert len(registry.requests) == before


NODE = {"type": "record", "name": "Node", "fields": [{"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"]}]}


def test_recursive_schemas_nest_within_pythons_recursion_limit() -> None:
    """fastavro's compiled reader recurses on the C stack once a level: a Node list nested a million deep
    (two bytes a level) killed the process with SIGSEGV (tests/adversarial/test_framed_records.py shows it
    through the console and console-consumer). Recursive schemas are read by the pure-Python reader: deep
    records are a DecodeError, shallow ones decode; schemas that do not recurse keep the compiled reader."""
    for schema, recursive in [
        (NODE, True), (METRICS_SCHEMA, False), (LINE_SCHEMA, False), ({"type": "array", "items": "int"}, False),
        ({"type": "record", "name": "A", "fields": [{"name": "b", "type": {
            "type": "record", "name": "B", "fields": [{"name": "a", "type": {"type": "array", "items": "A"}}]}}]}, True),
        ({"type": "map", "values": {"type": "record", "name": "M", "fields": [
            {"name": "m", "type": {"type": "map", "values": "M"}}]}}, True),
        ({"type": "record", "name": "A", "fields": [{"name": "b", "type": {"type": "record", "name": "B", "fields": []}},
                                                   {"name": "c", "type": "B"}]}, False),
    ]:
        assert is_recursive(schema_text(schema)) is recursive, schema
    registry = MemoryRegistry()
    ser = AvroSerializer(registry, "n-value", NODE)
    d = AvroDeserializer(registry)
    shallow: dict[str, Any] = {"v": 0, "next": None}
    for i in range(1, 50):
        shallow = {"v": i, "next": shallow}
    assert d.decode(ser.encode(shallow)) == shallow
    assert d.to_json(ser.encode({"v": 1, "next": {"v": 0, "next": None}}))[0] == '{"v":1,"next":{"Node":{"v":0,"next":null}}}'
    assert d.to_json(ser.encode(shallow))[0].count('{"Node":{"v":') == 49  # fastavro's JSON writer: IndexError
    deep = frame(ser.register(), b"\x02\x02" * 1_000_000 + b"\x02\x00")
    with pytest.raises(DecodeError, match="RecursionError"):
        d.decode(deep)
    with pytest.raises(DecodeError, match="RecursionError"):
        d.to_json(deep)
    # a named type referred to by name under a top-level array was not seen by the zero-byte guard
    registry.schemas[7] = {"schema": json.dumps({"type": "array", "items": {"type": "record", "name": "X", "fields": [
        {"name": "a", "type": {"type": "record", "name": "E", "fields": []}},
        {"name": "b", "type": {"type": "array", "items": "E"}}]}})}
    with pytest.raises(DecodeError, match="schema id 7 has arrays of items that take no bytes"):
        d.decode(frame(7, b"\x02\x00\xfe\xff\xff\xff\xff\xff\xff\xff\x7f"))


def test_to_json_reads_avros_json_encoding_from_the_binary() -> None:
    """The same text as fastavro's JSON writer for every type, but each union's branch as written: fastavro's
    writer guesses it from the decoded value (a record in a union with a map came out as the map)."""
    schema = {"type": "record", "name": "All", "namespace": "t.x", "fields": [
        {"name": "n", "type": "null"}, {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"},
        {"name": "l", "type": "long"}, {"name": "f", "type": "float"}, {"name": "d", "type": "double"},
        {"name": "by", "type": "bytes"}, {"name": "s", "type": "string"},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
        {"name": "fx", "type": {"type": "fixed", "name": "F", "size": 2}},
        {"name": "a", "type": {"type": "array", "items": ["null", "E", "F", "string"]}},
        {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "long"}}},
        {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "u", "type": ["null", "string", {"type": "array", "items": "int"}, "double"]},
        {"name": "r", "type": {"type": "record", "name": "In", "fields": [{"name": "z", "type": "E"}]}}]}
    datum = {"n": None, "b": True, "i": -3, "l": 2**40, "f": 1.5, "d": -0.25, "by": b"\x00\xffa", "s": "é\"<",
             "e": "B", "fx": b"\x01\x02", "a": [None, "A", b"\x00\x00", "x"], "m": {"k": [1, -1], "": []},
             "t": datetime(2025, 11, 21, tzinfo=UTC), "u": [1, 2], "r": {"z": "A"}}
    registry = MemoryRegistry()
    ser = AvroSerializer(registry, "all-value", schema)
    text, _ = AvroDeserializer(registry).to_json(ser.encode(datum))
    assert text == avro_json(ser.parsed, datum)
    assert json.loads(text)["a"] == [None, {"t.x.E": "A"}, {"t.x.F": "\u0000\u0000"}, {"string": "x"}]
    ambiguous = {"type": "record", "name": "R", "fields": [{"name": "u", "type": [
        {"type": "map", "values": "int"}, {"type": "record", "name": "Q", "fields": [{"name": "x", "type": "int"}]}]}]}
    ser = AvroSerializer(registry, "ambiguous-value", ambiguous)
    framed = frame(ser.register(), b"\x02\x04")  # branch 1, the record Q {x: 2}
    assert AvroDeserializer(registry).to_json(framed)[0] == '{"u":{"Q":{"x":2}}}'
    assert avro_json(ser.parsed, AvroDeserializer(registry).decode(framed)) == '{"u":{"map":{"x":2}}}'
    value, _, left = AvroDeserializer(registry).json_value(framed + b"\x00")
    assert value == {"u": {"Q": {"x": 2}}} and left == 1
    for damaged, why in [(b"\x06", "union branch 3 of a union of 2"), (b"\x02", "EOFError"),
                         (b"\x02\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "longer than 10 bytes")]:
        with pytest.raises(DecodeError, match=why):
            AvroDeserializer(registry).to_json(frame(ser.register(), damaged))


def test_a_registry_that_cannot_be_reached_is_no_decode_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    d = AvroDeserializer(RegistryClient(f"http://127.0.0.1:{port}", timeout_s=2))
    with pytest.raises(RegistryError, match="schema registry unreachable") as caught:
        d.decode(frame(1, b"\x02a"))
    assert not isinstance(caught.value, DecodeError)
    with pytest.raises(ValueError, match="is not http"):
        RegistryClient("127.0.0.1:8081")


def test_client_keeps_basic_auth_out_of_its_urls_and_pickles_without_caches() -> None:
    """Credentials leave the URLs; a pickled client travels without its caches (a Spark task's function)."""
    import pickle

    client = RegistryClient("http://alice:s%40cret@127.0.0.1:8081/,http://127.0.0.1:8082")
    assert client.urls == ["http://127.0.0.1:8081", "http://127.0.0.1:8082"]
    assert client.user_info == "alice:s@cret"
    client._by_id[1] = RegisteredSchema(1, "AVRO", '"string"')
    copy = pickle.loads(pickle.dumps(client))
    assert copy.urls == client.urls and copy.user_info == "alice:s@cret" and copy._by_id == {}
    # copies unpickled in one process (a Python worker's tasks) share their caches; other registries do not
    again = pickle.loads(pickle.dumps(client))
    assert again._caches is copy._caches
    assert pickle.loads(pickle.dumps(RegistryClient("http://127.0.0.1:8082")))._caches is not copy._caches


def test_avro_json_is_avros_json_encoding() -> None:
    schema = parse_schema(schema_text({"type": "record", "name": "R", "fields": [
        {"name": "a", "type": ["null", "string"]}, {"name": "b", "type": "bytes"},
        {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}))
    text = avro_json(schema, {"a": "x", "b": b"\x00\xff", "t": datetime(2025, 11, 21, tzinfo=UTC)})
    assert text == '{"a":{"string":"x"},"b":"\\u0000ÿ","t":1763683200000}'


class FakeMessage:
    def __init__(self, value: bytes | None, key: bytes | None = None) -> None:
        self._value, self._key = value, key

    def value(self) -> bytes | None:
        return self._value

    def key(self) -> bytes | None:
        return self._key

    def topic(self) -> str:
        return "access-logs"

    def partition(self) -> int:
        return 2

    def offset(self) -> int:
        return 41


def test_console_formatter_prints_json_and_ids_or_names_the_record() -> None:
    from odradek.cli.console_consumer import Formatter

    registry = MemoryRegistry()
    value = AvroSerializer(registry, "access-logs-value", LINE_SCHEMA).encode({"line": "GET /"})
    codec = AvroCodec(AvroDeserializer(registry), decode_key=False, print_ids=True, id_separator=b"|")
    fmt = Formatter(print_key=True, avro=codec)
    assert fmt.format(FakeMessage(value, b"10.0.0.1")) == b'10.0.0.1\t{"line":"GET /"}|1\n'
    assert fmt.format(FakeMessage(None, b"k")) == b"k\tnull\n"
    with pytest.raises(RecordError, match=r"cannot decode the value of access-logs-2@41: unknown magic byte"):
        fmt.format(FakeMessage(b"plain text"))
    with pytest.raises(ValueError, match="schema.registry.url"):
        AvroCodec.from_properties({}, decode_key=True)


def test_the_pipelines_line_serializer_leaves_non_utf8_bytes_unframed() -> None:
    ser = LineSerializer("http://registry.invalid:8081")
    ser.avro.client = registry = MemoryRegistry()
    framed, ok = ser.encode(b"1.2.3.4 - - line")
    assert ok and framed is not None and AvroDeserializer(registry).decode(framed) == {"line": "1.2.3.4 - - line"}
    assert ser.encode(b"\xff\xfe junk") == (b"\xff\xfe junk", False)
    assert ser.encode(None) == (None, True)


def test_client_sends_basic_auth_fails_over_and_reports_http_errors() -> None:
    """Against a small HTTP server on 127.0.0.1: the first URL refuses connections, the second answers; the
    credentials go in a Basic Authorization header; an error answer keeps Confluent's error_code."""
    import base64
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    seen: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            seen.append(self.headers.get("Authorization"))
            if self.path == "/schemas/ids/1":
                body, status = {"schema": '"string"'}, 200
            elif self.path.startswith("/schemas/ids/"):
                body, status = {"error_code": 40403, "message": "Schema not found"}, 404
            else:
                body, status = {"error_code": 40401, "message": "Subject 'x' not found."}, 404
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    try:
        client = RegistryClient(f"http://127.0.0.1:{closed},http://127.0.0.1:{server.server_port}",
                                user_info="alice:secret", timeout_s=5)
        assert client.schema_by_id(1).text == '"string"'
        with pytest.raises(RegistryError, match="schema id 2 not found in the registry") as caught:
            client.schema_by_id(2)
        assert caught.value.error_code == 40403
        with pytest.raises(RegistryError, match=r"answered 404 to http://127\.0\.0\.1:\d+/subjects/x/versions/latest: "
                                                r"Subject 'x' not found") as caught:
            client.latest("x")
        assert caught.value.error_code == 40401
        assert seen == ["Basic " + base64.b64encode(b"alice:secret").decode()] * 3
    finally:
        server.shutdown()
        server.server_close()
