"""A registry process (`odradek schema-registry`) for the tests, a small REST client that returns the status
and the decoded JSON body of each call, and the broker-served registry (`schema_registry_api`) a module's broker
can run."""

from __future__ import annotations

import base64
import json
import os
import signal
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.harness import NO_REBALANCE_DELAY, BrokerProcess, free_port, odradek_cmd, stop_process, wait_port
from tests.waiting import wait_until

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class RestClient:
    """Calls to a registry at `url` (with basic auth credentials and a TLS context when set)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.auth: tuple[str, str] | None = None
        self.ssl_context: ssl.SSLContext | None = None

    def call(self, method: str, path: str, body: Any = None, raw: bool = False,
             headers: Mapping[str, str] | None = None, raw_body: bytes | None = None) -> tuple[int, Any]:
        data = raw_body if raw_body is not None else None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": CONTENT_TYPE, **(headers or {})})
        if self.auth is not None:
            token = base64.b64encode(f"{self.auth[0]}:{self.auth[1]}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(request, timeout=30, context=self.ssl_context) as resp:
                status, text = resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            status, text = exc.code, exc.read().decode()
        if raw:
            return status, text
        return status, json.loads(text) if text else None


class Registry(RestClient):
    """One registry process on 127.0.0.1 with a free port, its store at `broker` (a process or a bootstrap
    string); `props` are added to its properties file."""

    def __init__(self, cwd: Path, broker: BrokerProcess | str, props: Mapping[str, str] | None = None,
                 scheme: str = "http") -> None:
        cwd.mkdir(parents=True, exist_ok=True)
        self.cwd = cwd
        self.port = free_port()
        super().__init__(f"{scheme}://127.0.0.1:{self.port}")
        lines = {"listeners": self.url, "kafkastore.bootstrap.servers": broker if isinstance(broker, str) else broker.bootstrap,
                 "host.name": "127.0.0.1", "kafkagroup.session.timeout.ms": "6000",
                 "kafkagroup.heartbeat.interval.ms": "500", **(props or {})}
        (cwd / "schema-registry.properties").write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> Registry:
        with open(self.cwd / "registry.out", "ab") as out:
            self.proc = subprocess.Popen(odradek_cmd("schema-registry", "schema-registry.properties"), cwd=self.cwd,
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        wait_port(self.port, timeout, self.proc)
        return self

    def output(self) -> str:
        return (self.cwd / "registry.out").read_text(errors="replace")

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)


def big_schema(tag: str, fields: int = 600) -> str:
    """A record `Flood` of `fields` union fields, about 90 KB, each `tag` a new text: a tenth of a second to parse;
    incompatible (BACKWARD) with a first version `Flood` of other fields, so a registration is refused with 409
    after its check."""
    return json.dumps({"type": "record", "name": "Flood", "fields": [
        {"name": f"f{i}_{tag}", "type": ["string", {"type": "record", "name": f"R{i}_{tag}",
                                                   "fields": [{"name": "a", "type": "int"}]}]}
        for i in range(fields)]})


def wait_primary(registry: RestClient) -> None:
    """Until the registry accepts writes (its group has elected a primary)."""
    def writable() -> bool:
        status, _ = registry.call("PUT", "/config/__probe", {"compatibility": "BACKWARD"})
        return status == 200
    wait_until(writable, 30, "an elected schema registry primary")
    registry.call("DELETE", "/config/__probe")


def in_broker_config(port: int, host: str = "127.0.0.1") -> dict[str, str]:
    """A module broker's settings that make it serve the registry on `host`:`port` (a new group's first
    rebalance at once, so its primary is elected without the broker's initial delay)."""
    return {**NO_REBALANCE_DELAY, "schema_registry_api": f"http://{host}:{port}"}


def in_broker_registry(port: int) -> RestClient:
    """The broker-served registry on 127.0.0.1:`port`, once it listens and has a primary."""
    wait_port(port, 60)
    node = RestClient(f"http://127.0.0.1:{port}")
    wait_primary(node)
    return node
