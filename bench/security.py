"""Throughput over SASL_SSL (SCRAM-SHA-512 on TLS) beside PLAINTEXT, one broker serving both listeners in
the same run, with confluent-kafka; and the connection set-up rate (TCP + TLS handshake + SCRAM login)
against plain TCP connects.

    python bench/security.py            # 500,000 x 100 B per listener, best of 2 rounds, 200 logins
    python bench/security.py --quick    # CI-sized
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from tests.harness import free_port  # noqa: E402

from bench.common import running_broker  # noqa: E402
from bench.produce_consume import consume, produce  # noqa: E402
from odradek.cli.cluster_security import issue_certificates  # noqa: E402
from odradek.protocol.transport import BlockingConnection  # noqa: E402
from odradek.security.client_config import client_security  # noqa: E402

USER, PASSWORD = "bench", "bench-secret"


def logins_per_second(port: int, props: dict[str, str], count: int) -> float:
    security = client_security(props)
    start = time.perf_counter()
    for _ in range(count):
        BlockingConnection("127.0.0.1", port, "bench-login", 10.0, security=security).close()
    return count / (time.perf_counter() - start)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small run for CI")
    args = ap.parse_args()
    n, rounds, logins = (50_000, 1, 20) if args.quick else (500_000, 2, 200)
    with tempfile.TemporaryDirectory() as tmp:
        ca_pem, broker_pem, _admin_pem = issue_certificates("127.0.0.1")  # no client certificates here
        (Path(tmp) / "ca.pem").write_text(ca_pem)
        (Path(tmp) / "broker.pem").write_text(broker_pem)
        plain, secured = free_port(), free_port()
        with running_broker(Path(tmp) / "broker", port=plain, overrides={
                "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_SSL://127.0.0.1:{secured}",
                "sasl.enabled.mechanisms": "SCRAM-SHA-512", "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(Path(tmp) / "broker.pem")}) as broker:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            upsert = UserScramCredentialUpsertion(USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                                  PASSWORD.encode())
            for f in admin.alter_user_scram_credentials([upsert]).values():
                f.result(30)
            sasl_ssl = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": USER,
                        "sasl.password": PASSWORD, "ssl.ca.location": str(Path(tmp) / "ca.pem")}
            listeners = {"PLAINTEXT": (broker.bootstrap, {}), "SASL_SSL": (f"127.0.0.1:{secured}", sasl_ssl)}
            best: dict[tuple[str, str], float] = {}
            for _ in range(rounds):  # alternate, so both listeners see the same machine load
                for name, (bootstrap, conf) in listeners.items():
                    topic = f"bench-sec-{name.lower()}-{uuid.uuid4().hex[:6]}"
                    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
                    t = produce(bootstrap, topic, n, 100, "1", 1, conf)
                    best[name, "produce"] = min(best.get((name, "produce"), float("inf")), t)
                    t = consume(bootstrap, topic, n, 1, conf)
                    best[name, "consume"] = min(best.get((name, "consume"), float("inf")), t)
            print(f"{n} x 100 B, one partition, acks=1, best of {rounds}")
            print(f"{'':10} {'PLAINTEXT msgs/s':>17} {'SASL_SSL msgs/s':>16} {'ratio':>7}")
            for what in ("produce", "consume"):
                p, s = n / best["PLAINTEXT", what], n / best["SASL_SSL", what]
                print(f"{what:10} {p:>17.0f} {s:>16.0f} {s / p:>7.2f}")
            tcp = logins_per_second(plain, {}, logins * 5)
            scram = logins_per_second(secured, sasl_ssl, logins)
            print(f"connection set-up: {tcp:.0f}/s plain TCP, {scram:.0f}/s TLS + SCRAM-SHA-512 login "
                  f"(4096 iterations; client and broker on the same cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
