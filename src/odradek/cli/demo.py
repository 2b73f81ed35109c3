"""`odradek demo [--duration S] [--port P]`: the main job. Starts an embedded single-node broker in a temp
dir, creates a topic, produces a stream of web-access events, consumes it back in a consumer group and
shows live per-second figures in the terminal, then stops everything cleanly."""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

PATHS = ["/", "/index.html", "/products", "/cart", "/checkout", "/api/items", "/api/search", "/login", "/about"]
STATUSES = [200] * 90 + [301, 304, 404, 404, 500, 502, 503, 200, 200, 200]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _event(rng: random.Random) -> bytes:
    path = PATHS[min(int(rng.paretovariate(1.2)) - 1, len(PATHS) - 1)]
    return json.dumps({
        "ts": int(time.time() * 1000), "ip": f"10.0.{rng.randrange(4)}.{rng.randrange(256)}",
        "method": rng.choice(["GET"] * 8 + ["POST", "PUT"]), "path": path, "status": rng.choice(STATUSES),
        "bytes": int(rng.lognormvariate(7, 1)), "latency_ms": round(rng.lognormvariate(3, 0.7), 1),
    }).encode()


def _start_broker(workdir: Path, port: int) -> subprocess.Popen:
    cfg = workdir / "server.properties"
    cfg.write_text(
        f"broker.id=0\nlisteners=PLAINTEXT://127.0.0.1:{port}\nlog.dirs={workdir / 'data'}\n"
        "num.partitions=3\noffsets.topic.replication.factor=1\ngroup.initial.rebalance.delay.ms=0\n"
    )
    out = open(workdir / "broker.out", "wb")  # noqa: SIM115 - handed to the child process
    return subprocess.Popen([sys.executable, "-m", "odradek.cli.main", "server-start", str(cfg)],
                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _wait_ready(bootstrap: str, proc: subprocess.Popen, timeout: float = 30) -> None:
    from confluent_kafka.admin import AdminClient

    deadline = time.monotonic() + timeout
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"Error: the broker exited with status {proc.returncode}")
        try:
            admin.list_topics(timeout=1)
            return
        except Exception:
            time.sleep(0.2)
    raise SystemExit("Error: the broker did not become ready in time")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="odradek demo", description=__doc__)
    ap.add_argument("--duration", type=float, default=60.0, help="seconds to run (default 60)")
    ap.add_argument("--rate", type=int, default=2000, help="events per second to produce (default 2000)")
    ap.add_argument("--port", type=int, default=0, help="broker port (default: a free one)")
    args = ap.parse_args(argv)
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    port = args.port or _free_port()
    bootstrap = f"127.0.0.1:{port}"
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with tempfile.TemporaryDirectory(prefix="odradek-demo-") as tmp:
        workdir = Path(tmp)
        broker = _start_broker(workdir, port)
        try:
            _wait_ready(bootstrap, broker)
            print(f"Broker running at {bootstrap} (data in {workdir / 'data'})")
            admin = AdminClient({"bootstrap.servers": bootstrap})
            admin.create_topics([NewTopic("access-logs", 3, 1)])["access-logs"].result(15)
            produced = [0]

            def generate() -> None:
                rng = random.Random(42)
                p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
                interval = 1.0 / max(args.rate, 1)
                next_t = time.monotonic()
                while not stop.is_set():
                    e = _event(rng)
                    p.produce("access-logs", e, key=json.loads(e)["ip"].encode())
                    produced[0] += 1
                    p.poll(0)
                    next_t += interval
                    delay = next_t - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                p.flush(10)

            gen = threading.Thread(target=generate, daemon=True)
            gen.start()
            c = Consumer({"bootstrap.servers": bootstrap, "group.id": "demo", "auto.offset.reset": "earliest"})
            c.subscribe(["access-logs"])
            start = time.monotonic()
            counts: dict[str, int] = {}
            errors = consumed = 0
            last_print = 0.0
            while not stop.is_set() and time.monotonic() - start < args.duration:
                for m in c.consume(1000, 0.2):
                    if m.error():
                        continue
                    ev = json.loads(m.value())
                    consumed += 1
                    counts[ev["path"]] = counts.get(ev["path"], 0) + 1
                    errors += ev["status"] >= 500
                now = time.monotonic()
                if now - last_print >= 1.0:
                    last_print = now
                    top = sorted(counts.items(), key=lambda kv: -kv[1])[:5]
                    print(f"\r[{now - start:5.1f}s] produced {produced[0]:>8} consumed {consumed:>8} "
                          f"5xx {errors:>5}  top: " + ", ".join(f"{k} {v}" for k, v in top), end="", flush=True)
            print()
            stop.set()
            gen.join(15)
            c.close()
            print(f"Done: {produced[0]} events produced, {consumed} consumed through the broker.")
        finally:
            stop.set()
            broker.send_signal(signal.SIGTERM)
            try:
                broker.wait(30)
            except subprocess.TimeoutExpired:
                broker.kill()
                broker.wait()
    return 0
