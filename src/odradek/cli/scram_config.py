"""The value of a SCRAM credential in kafka-configs.sh's --add-config, `SCRAM-SHA-256=[iterations=N,password=P]`,
shared by `odradek configs` against brokers and against ZooKeeper."""

from __future__ import annotations

from odradek.admin_client.errors import UsageError


def scram_settings(mechanism: str, value: str) -> tuple[int, str]:
    """(iterations, password) of `SCRAM-SHA-256=[iterations=8192,password=secret]` (iterations 4096 if not
    given, as kafka-configs.sh)."""
    fields: dict[str, str] = {}
    for part in value.split(","):
        key, eq, val = part.partition("=")
        if not eq:
            raise UsageError(f"Invalid {mechanism} value: expected [iterations=N,password=...]")
        fields[key.strip()] = val.strip()
    if "password" not in fields:
        raise UsageError(f"Invalid {mechanism} value: a password must be given, e.g. [password=secret]")
    iterations = fields.get("iterations", "4096")
    if not iterations.isdigit():
        raise UsageError(f"Invalid {mechanism} value: iterations must be a number")
    return int(iterations), fields["password"]
