"""Hostile requests to the schema registry's REST API: a body nested a hundred thousand deep (Python's json
parser raises RecursionError, which once escaped as a 500 with a traceback), a body over the 16 MiB bound,
bytes that are not UTF-8, JSON that is not an object, absurd ids and versions. Each gets one error answer in
Confluent's shape and the registry keeps serving."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.harness import BrokerProcess
from tests.schema_registry.conftest import wait_primary
from tests.schema_registry.helpers import Registry


@pytest.fixture(scope="module")
def registry(broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    node = Registry(tmp_path_factory.mktemp("registry"), broker).start()
    try:
        wait_primary(node)
        yield node
    finally:
        node.stop()


@pytest.mark.parametrize("body, status", [
    (b"[" * 100_000 + b"]" * 100_000, 400),
    (b'{"schema": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", 400),
    (b"\xff\xfe{not utf-8", 400),
    (b'["a", "list"]', 422),
    (b'"text"', 422),
])
def test_bad_bodies_get_one_error(registry: Registry, body: bytes, status: int) -> None:
    for path in ("/subjects/hostile/versions", "/subjects/hostile", "/config", "/mode",
                 "/compatibility/subjects/hostile/versions/latest"):
        method = "PUT" if path in ("/config", "/mode") else "POST"
        got, answer = registry.call(method, path, raw_body=body)
        assert got == status, (path, answer)
        assert set(answer) == {"error_code", "message"} and len(answer["message"]) < 1000
    assert registry.call("GET", "/") == (200, {})


def test_oversized_body_is_refused(registry: Registry) -> None:
    body = b'{"schema": "' + b"x" * (17 * 1024 * 1024) + b'"}'
    status, answer = registry.call("POST", "/subjects/big/versions", raw_body=body)
    assert (status, answer["error_code"]) == (413, 413)
    assert registry.call("GET", "/") == (200, {})


@pytest.mark.parametrize("path, code", [
    ("/schemas/ids/99999999999999999999999", 40403),
    ("/schemas/ids/-1", 40403),
    ("/subjects/x/versions/99999999999999999999", 42202),
    ("/subjects/x/versions/1e3", 42202),
    ("/subjects/x/versions/-2", 42202),
])
def test_absurd_ids_and_versions(registry: Registry, path: str, code: int) -> None:
    status, answer = registry.call("GET", path)
    assert answer["error_code"] == code
