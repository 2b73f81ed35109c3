"""The web console's pure parts: how payloads are shown, timestamps parsed, lag history shaped, and the
access token, session cookies, CSRF tokens and Host names checked, a classic member's assignment read (the checks as a running console applies
them are tested in tests/integration/test_console.py and tests/adversarial/test_console_attacks.py)."""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path

import pytest

from odradek.admin_client.consumer_groups import assignment_partitions
from odradek.console.app import human_bytes
from odradek.console.auth import (
    TOKEN_ENV,
    HostAllowlist,
    Sessions,
    TokenError,
    host_name,
    load_token,
    same_secret,
)
from odradek.console.browse import MAX_SHOWN_BYTES, metrics_record, parse_time, payload
from odradek.console.cluster import ClusterError
from odradek.console.framed import FramedDecoder
from odradek.console.gate import safe_next
from odradek.console.sampler import LagHistory
from odradek.console.schemas import RegistryLink
from odradek.console.supervisor import how_it_ended, restart_delay
from odradek.serde.registry_client import RegistryError


def test_payload_kinds() -> None:
    assert payload(None).kind == "null"
    assert (payload(b"hello").kind, payload(b"hello").text) == ("text", "hello")
    j = payload(b'{"a":1,"b":[1,2]}')
    assert j.kind == "json" and j.text == json.dumps({"a": 1, "b": [1, 2]}, indent=2)
    assert payload(b"{not json}").kind == "text"
    h = payload(b"\xff\x00\x10")
    assert (h.kind, h.text, h.size) == ("hex", "ff 00 10", 3)
    assert payload("ünïcode".encode()).text == "ünïcode"


def test_framed_payloads_without_a_registry() -> None:
    """Wire-format bytes when the console knows no registry: hex saying so (the cluster asked once, then not
    for a while); bytes too short for the header, and every payload without a decoder, as before; the weblogs
    reader says a framed metrics record needs the registry (tests/integration/test_console_framed.py has the
    registry)."""
    asked: list[int] = []
    decoder = FramedDecoder(RegistryLink(None, 10.0, lambda: asked.append(1) or None), 10.0)
    framed = b"\x00\x00\x00\x00\x07\x02a"
    for _ in range(3):
        p = payload(framed, decoder, "t")
        assert (p.kind, p.text, p.schema_id, p.schema_label) == ("hex", "00 00 00 00 07 02 61", 7, "schema id 7")
        assert p.note.startswith("no schema registry known to the console")
    assert asked == [1]
    assert payload(framed).schema_id is None and payload(b"\x00\x01", decoder).kind == "text"
    assert payload(b"\x00\x01", decoder).schema_id is None
    assert metrics_record(b'{"window_start": "2026-01-01T00:00:00Z"}', decoder) == {"window_start": "2026-01-01T00:00:00Z"}
    with pytest.raises(RegistryError, match="no schema registry"):
        metrics_record(framed, decoder)


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


# --- who may use the console ---------------------------------------------------------------------


def test_tokens_are_random_unless_fixed(tmp_path: Path) -> None:
    a, source = load_token(None, {})
    assert source is None and len(a) >= 43 and a != load_token(None, {})[0]
    assert load_token(None, {TOKEN_ENV: " fixed-token-0123456789 \n"}) == ("fixed-token-0123456789", TOKEN_ENV)
    f = tmp_path / "token"
    f.write_text("from-a-file-0123456789\n")
    assert load_token(str(f), {TOKEN_ENV: "the-file-wins-over-this"}) == ("from-a-file-0123456789", f"--token-file {f}")
    f.write_text("short")
    with pytest.raises(TokenError, match="at least 16"):
        load_token(str(f), {})
    with pytest.raises(TokenError, match="cannot read"):
        load_token(str(tmp_path / "missing"), {})


def test_sessions_are_signed_and_expire() -> None:
    now = [1_000_000.0]
    sessions = Sessions("the-token-0123456789", b"k" * 32, max_age_s=60, clock=lambda: now[0])
    assert sessions.check_token("the-token-0123456789")
    assert not sessions.check_token("the-token-012345678") and not sessions.check_token(None)
    cookie = sessions.issue()
    sid = sessions.session_id(cookie)
    assert sid is not None and sid == cookie.split(".")[0]
    assert sessions.session_id(sessions.issue()) != sid
    body, mac = cookie.rsplit(".", 1)
    for forged in (None, "", "x", f"{body}.{'0' * 64}", f"other.{body.split('.')[1]}.{mac}", cookie + "0", "a.b.c.d"):
        assert sessions.session_id(forged) is None, forged
    # Another key (another console run) does not accept it.
    assert Sessions("the-token-0123456789", b"j" * 32, clock=lambda: now[0]).session_id(cookie) is None
    now[0] += 61
    assert sessions.session_id(cookie) is None


def test_csrf_token_belongs_to_its_session() -> None:
    sessions = Sessions("the-token-0123456789", b"k" * 32)
    a, b = sessions.session_id(sessions.issue()), sessions.session_id(sessions.issue())
    assert a and b
    token = sessions.csrf_token(a)
    assert sessions.check_csrf(a, token)
    assert not sessions.check_csrf(b, token) and not sessions.check_csrf(a, None) and not sessions.check_csrf(None, token)
    assert not sessions.check_csrf(a, token[:-1] + ("0" if token[-1] != "0" else "1"))
    assert same_secret("é", "é") and not same_secret("\udcff", "x")  # non-ASCII input does not raise


def test_host_names() -> None:
    assert host_name("LocalHost:8080") == "localhost"
    assert host_name("example.com.") == "example.com"
    assert host_name("[::1]:8080") == "::1" and host_name("[::1]") == "::1"
    for bad in (None, "", "::1", "[::1", "[nope]:80", "host:port", "[::1]x"):
        assert host_name(bad) is None, bad


def test_host_allowlist() -> None:
    hosts = HostAllowlist("0.0.0.0", ["console.example", "[fd00::1]"])
    for ok in ("localhost", "localhost:1", "127.0.0.1:8080", "[::1]:8080", "0.0.0.0:80", "Console.Example:443",
               "[fd00::1]:80"):
        assert hosts.allows(ok), ok
    for refused in (None, "", "evil.example:8080", "127.0.0.2", "localhost.evil.example", "[::2]:80", "console"):
        assert not hosts.allows(refused), refused
    assert HostAllowlist("::1").allows("[::1]") and HostAllowlist("myhost").allows("myhost:8080")


def test_login_goes_back_only_to_this_server() -> None:
    assert safe_next("/topics/x?partition=1") == "/topics/x?partition=1"
    for elsewhere in (None, "", "https://evil.example/", "//evil.example/", "/\\evil.example", "topics"):
        assert safe_next(elsewhere) == "/", elsewhere


def test_supervisor_words_and_backoff() -> None:
    assert how_it_ended(-6) == "from SIGABRT" and how_it_ended(3) == "with exit code 3"
    crashes: deque[float] = deque()
    assert [restart_delay(crashes, 100.0 + i) for i in range(7)] == [0, 0, 0, 1, 2, 4, 8]
    assert restart_delay(crashes, 100.0 + 60 * 60) == 0  # an hour later: the old crashes are forgotten
    assert max(restart_delay(crashes, 5000.0) for _ in range(20)) == 30


def test_a_classic_members_assignment_is_read_whatever_follows_it() -> None:
    def assignment(version: int, topics: dict[str, list[int]], tail: bytes) -> bytes:
        out = [version.to_bytes(2, "big"), len(topics).to_bytes(4, "big")]
        for name, parts in topics.items():
            out += [len(name).to_bytes(2, "big"), name.encode(), len(parts).to_bytes(4, "big")]
            out += [p.to_bytes(4, "big") for p in parts]
        return b"".join(out) + tail

    data = assignment(3, {"b": [2, 0], "a": [1]}, (-1).to_bytes(4, "big", signed=True))
    assert assignment_partitions(data) == [("a", 1), ("b", 0), ("b", 2)]
    assert assignment_partitions(assignment(0, {}, b"")) == []
    assert assignment_partitions(b"") == assignment_partitions(None) == []
    assert assignment_partitions(data[:-9]) == []  # cut short: nothing rather than a guess
