"""The registry's store and group on a SASL cluster with an authorizer (tests/adversarial/secured.py): with
`kafkastore.security.protocol=SASL_PLAINTEXT` and the admin user's `kafkastore.sasl.jaas.config` it creates and
uses its topic and elects itself through its group over SASL; as a user without ACLs it does not start and
says so in one line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.adversarial.secured import PASSWORDS, SECURED, listeners
from tests.harness import BrokerPool, free_port, odradek_cmd
from tests.schema_registry.helpers import Registry, wait_primary


def store_props(user: str) -> dict[str, str]:
    return {"kafkastore.security.protocol": "SASL_PLAINTEXT", "kafkastore.sasl.mechanism": "PLAIN",
            "kafkastore.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
                                           f'username="{user}" password="{PASSWORDS[user]}";',
            "kafkastore.init.timeout.ms": "15000"}


def test_registry_over_sasl_with_acls(brokers: BrokerPool, tmp_path: Path) -> None:
    plain, sasl = free_port(), free_port()
    broker = brokers.start({**SECURED, "listeners": listeners(plain, sasl), "group.initial.rebalance.delay.ms": "0"},
                           name="sr-secured", port=plain)
    sasl_bootstrap = f"127.0.0.1:{sasl}"
    node = Registry(tmp_path / "admin", sasl_bootstrap, store_props("admin")).start()
    try:
        wait_primary(node)
        schema = json.dumps({"type": "record", "name": "Sasl", "fields": [{"name": "a", "type": "int"}]})
        status, body = node.call("POST", "/subjects/sasl/versions", {"schema": schema})
        assert (status, body) == (200, {"id": 1})
    finally:
        node.stop()
    # bob has no ACL on the topic or the group: the registry stops at start-up with one line
    denied = Registry(tmp_path / "bob", sasl_bootstrap, {**store_props("bob"), "kafkastore.topic": "_schemas_bob"})
    proc = subprocess.run(odradek_cmd("schema-registry", "schema-registry.properties"), cwd=denied.cwd,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stdout
    assert proc.stderr.startswith("Error: cannot start the schema registry:") and len(proc.stderr.splitlines()) == 1
    assert broker.alive()
