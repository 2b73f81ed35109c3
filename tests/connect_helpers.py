"""A standalone Connect worker for the tests (`odradek connect-standalone`, a process stopped by its pid) made from
the shipped `config/connect-standalone.properties` with the test broker's address and a free REST port, and a
small JSON client of its REST API."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.harness import BrokerProcess, free_port, odradek_cmd, stop_process, wait_port

CONFIG = Path(__file__).resolve().parents[1] / "config"


class Worker:
    def __init__(self, cwd: Path, broker: BrokerProcess, extra: dict[str, str] | None = None) -> None:
        self.cwd = cwd
        self.port = free_port()
        worker = (CONFIG / "connect-standalone.properties").read_text()
        worker = worker.replace("bootstrap.servers=localhost:9092", f"bootstrap.servers={broker.bootstrap}")
        worker = worker.replace("offset.storage.file.filename=/tmp/connect.offsets",
                                f"offset.storage.file.filename={cwd / 'connect.offsets'}")
        worker += f"listeners=http://127.0.0.1:{self.port}\noffset.flush.interval.ms=500\n"
        worker += "".join(f"{k}={v}\n" for k, v in (extra or {}).items())
        (cwd / "config").mkdir(exist_ok=True)
        (cwd / "config" / "connect-standalone.properties").write_text(worker)
        for name in ("connect-file-source.properties", "connect-file-sink.properties"):
            shutil.copy(CONFIG / name, cwd / "config" / name)
        self.proc: subprocess.Popen | None = None

    def start(self, *connector_files: str) -> None:
        with open(self.cwd / "connect.out", "ab") as out:
            self.proc = subprocess.Popen(odradek_cmd("connect-standalone", "config/connect-standalone.properties",
                                                     *connector_files),
                                         cwd=self.cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        wait_port(self.port, 60, self.proc)

    def output(self) -> str:
        return (self.cwd / "connect.out").read_text(errors="replace")

    def get(self, path: str) -> Any:
        return self.call("GET", path)[1]

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """(status, decoded JSON body or None) of a REST call."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                raw = resp.read()
                return resp.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as err:
            raw = err.read()
            return err.code, json.loads(raw) if raw else None

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)


