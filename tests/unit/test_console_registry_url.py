"""The console's discovery of a broker-served schema registry (console/schemas.py `registry_url_of`): the first
http(s) URL with a port of the broker's `schema_registry_api`, a wildcard host replaced by the broker's own."""

from __future__ import annotations

import pytest

from odradek.console.schemas import registry_url_of


@pytest.mark.parametrize(("value", "broker_host", "expected"), [
    ("http://0.0.0.0:8081", "10.1.2.3", "http://10.1.2.3:8081"),
    ("http://[::]:8081", "broker-1", "http://broker-1:8081"),
    ("http://:8081", "broker-1", "http://broker-1:8081"),
    ("https://0.0.0.0:8443", "::1", "https://[::1]:8443"),
    ("http://127.0.0.1:8081", "10.1.2.3", "http://127.0.0.1:8081"),
    ("http://registry.example:8081", "10.1.2.3", "http://registry.example:8081"),
    # entries the console cannot use are passed over for the next
    ("ftp://0.0.0.0:21, http://0.0.0.0:8081", "h", "http://h:8081"),
    ("http://0.0.0.0, http://0.0.0.0:8082", "h", "http://h:8082"),
    ("", "h", None),
    (None, "h", None),
    ("not a url", "h", None),
])
def test_registry_url_of(value: str | None, broker_host: str, expected: str | None) -> None:
    assert registry_url_of(value, broker_host) == expected
