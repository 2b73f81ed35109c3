"""The web console's pure parts: how payloads are shown, timestamps parsed, and lag history shaped
(the same-origin check of POSTs is tested through a running console: tests/integration/test_console.py)."""

from __future__ import annotations

import json

import pytest

from odradek.console.app import human_bytes
from odradek.console.browse import MAX_SHOWN_BYTES, parse_time, payload
from odradek.console.cluster import ClusterError
from odradek.console.sampler import LagHistory


def test_payload_kinds() -> None:
    assert payload(None).kind == "null"
    assert (payload(b"hello").kind, payload(b"hello").text) == ("text", "hello")
    j = payload(b'{"a":1,"b":[1,2]}')
    assert j.kind == "json" and j.text == json.dumps({"a": 1, "b": [1, 2]}, indent=2)
    assert payload(b"{not json}").kind == "text"
    h = payload(b"\xff\x00\x10")
    assert (h.kind, h.text, h.size) == ("hex", "ff 00 10", 3)
    assert payload("ünïcode".encode()).text == "ünïcode"


def test_long_payloads_are_cut() -> None:
    p = payload(b"x" * (MAX_SHOWN_BYTES + 10))
    assert p.kind == "text" and p.size == MAX_SHOWN_BYTES + 10 and p.text.endswith(f"({MAX_SHOWN_BYTES + 10} bytes)")
    # Cut inside a multi-byte character: still text, not hex.
    assert payload(b"a" + "é".encode() * MAX_SHOWN_BYTES).kind == "text"


def test_parse_time() -> None:
    assert parse_time("1767225600000") == 1_767_225_600_000
    assert parse_time("2026-01-01T00:00:00") == 1_767_225_600_000
    assert parse_time("2026-01-01T01:00:00+01:00") == 1_767_225_600_000
    assert parse_time("2026-01-01T00:00:00Z") == 1_767_225_600_000
    with pytest.raises(ClusterError):
        parse_time("yesterday")


def test_lag_history_series() -> None:
    h = LagHistory(keep=2)
    h.add(1.0, {"g": {"a": 5}})
    h.add(2.0, {"g": {"a": 3, "b": 4}})
    h.add(3.0, {"g": {"b": 1}})
    assert h.series("g") == {"topics": ["a", "b"], "t": [2.0, 3.0], "total": [7, 1], "by_topic": [[3, 0], [4, 1]]}
    assert h.series("unknown") == {"topics": [], "t": [], "total": [], "by_topic": []}


def test_human_bytes() -> None:
    assert [human_bytes(n) for n in (None, 0, 1023, 1024, 5 * 1024**3)] == ["-", "0 B", "1023 B", "1.0 KiB", "5.0 GiB"]
