"""Issue #36, observation 3: a broker warns at start when its config file holds secrets that group or others
can read; the warning names the file, its mode and the keys, never their values."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from odradek.config import BrokerConfig
from odradek.server.secret_file import exposed_secrets_warning

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret";')


def _config(tmp_path: Path, mode: int, **extra: str) -> tuple[str, BrokerConfig]:
    path = tmp_path / "server.properties"
    props = {"log.dirs": str(tmp_path / "data"), **extra}
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    path.chmod(mode)
    return str(path), BrokerConfig.load(path)


def test_a_readable_file_with_secrets_is_named(tmp_path: Path) -> None:
    path, cfg = _config(tmp_path, 0o644, **{"listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
                                            "ssl.key.password": "k3y"})
    warning = exposed_secrets_warning(path, cfg)
    assert warning is not None
    assert path in warning and "0644" in warning and "group and others" in warning
    assert "listener.name.sasl_plaintext.plain.sasl.jaas.config" in warning and "ssl.key.password" in warning
    assert "admin-secret" not in warning and "k3y" not in warning
    path, cfg = _config(tmp_path, 0o640, **{"ssl.key.password": "k3y"})
    assert "readable by group (mode 0640)" in (exposed_secrets_warning(path, cfg) or "")


def test_private_files_and_files_without_secrets_pass(tmp_path: Path) -> None:
    path, cfg = _config(tmp_path, 0o600, **{"ssl.key.password": "k3y"})
    assert exposed_secrets_warning(path, cfg) is None
    path, cfg = _config(tmp_path, 0o644, **{"num.partitions": "3"})
    assert exposed_secrets_warning(path, cfg) is None


def test_the_broker_logs_it_as_a_warning_at_start(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from odradek.server.broker import Broker, StartupError

    path, cfg = _config(tmp_path, 0o644, **{"ssl.key.password": "k3y", "listeners": "PLAINTEXT://127.0.0.1:0",
                                            "authorizer.class.name": "no.such.Authorizer"})
    broker = Broker(cfg)
    with caplog.at_level(logging.WARNING, logger="odradek.server"), pytest.raises(StartupError):
        asyncio.run(broker.start())  # stops at the authorizer class, after the start-up warnings
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "holds secrets" in r.getMessage()]
    assert len(warnings) == 1 and path in warnings[0].getMessage()


def test_files_with_secrets_are_written_owner_only(tmp_path: Path) -> None:
    """The ZooKeeper launcher's generated config keeps a password key (ssl.keyStore.password) private;
    `odradek cluster up` writes its files through cluster_security.write_private (checked end to end in
    tests/integration/test_cluster_tool.py)."""
    from odradek.cli.cluster_security import write_private
    from odradek.cli.zookeeper import write_properties

    write_properties(tmp_path / "zk.cfg", {"dataDir": "/d", "ssl.keyStore.password": "pw"}, "generated")
    write_properties(tmp_path / "open.cfg", {"dataDir": "/d"}, "generated")
    existing = tmp_path / "server.properties"
    existing.write_text("old\n")
    existing.chmod(0o644)
    write_private(existing, "sasl.jaas.config=x\n")
    assert (tmp_path / "zk.cfg").stat().st_mode & 0o777 == 0o600
    assert existing.stat().st_mode & 0o777 == 0o600 and existing.read_text() == "sasl.jaas.config=x\n"


def test_a_readable_jaas_file_is_named(tmp_path: Path) -> None:
    from odradek.server.secret_file import exposed_file_warning

    jaas = tmp_path / "kafka_jaas.conf"
    jaas.write_text('Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="k" password="p"; };')
    jaas.chmod(0o604)
    assert exposed_file_warning(str(jaas), "ZooKeeper credentials (JAAS)") == (
        f"{jaas} holds ZooKeeper credentials (JAAS) and is readable by others (mode 0604); restrict it with chmod 600")
    jaas.chmod(0o600)
    assert exposed_file_warning(str(jaas), "ZooKeeper credentials (JAAS)") is None
    assert exposed_file_warning(str(tmp_path / "absent"), "x") is None
