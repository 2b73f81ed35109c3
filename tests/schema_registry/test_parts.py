"""The registry's parts without a broker: the `_schemas` records applied to the state (Confluent's keys and
values, soft deletes through DELETE_SUBJECT, tombstones, unreadable records skipped), the primary's choice (the
eligible member with the smallest URL), and the properties (the example file, one-line errors, the
`kafkastore.` client keys)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odradek.config import read_properties_file
from odradek.schema_registry import records
from odradek.schema_registry.config import RegistryConfig, RegistryConfigError
from odradek.schema_registry.election import choose_primary
from odradek.schema_registry.records import SchemaRecord
from odradek.schema_registry.state import RegistryState, context_of
from tests.harness import run_cli

ROOT = Path(__file__).resolve().parents[2]


def test_records_apply_as_confluent_writes_them() -> None:
    state = RegistryState()
    for version, schema_id in ((1, 3), (2, 5)):
        state.apply(records.schema_key("s", version), SchemaRecord("s", version, schema_id, '"string"').value())
    state.apply(records.schema_key("p", 1), SchemaRecord("p", 1, 4, "syntax = \"proto3\";", "PROTOBUF",
                                                         [{"name": "a.proto", "subject": "s", "version": 1}]).value())
    assert json.loads(records.schema_key("s", 1)) == {"keytype": "SCHEMA", "subject": "s", "version": 1, "magic": 1}
    assert json.loads(SchemaRecord("p", 1, 4, "x", "PROTOBUF").value())["schemaType"] == "PROTOBUF"
    assert [r.version for r in state.versions("s")] == [1, 2] and state.max_id == 5
    assert state.referenced_by("s", 1) == [4]
    state.apply(records.delete_subject_key("s"), records.delete_subject_value("s", 1))
    assert [r.version for r in state.versions("s")] == [2]
    assert [r.version for r in state.versions("s", deleted=True)] == [1, 2]
    state.apply(records.schema_key("s", 1), None)
    assert [r.version for r in state.versions("s", deleted=True)] == [2]
    state.apply(records.config_key(None), records.config_value("FULL"))
    state.apply(records.config_key("s"), b'{"compatibilityLevel":"none"}')
    state.apply(records.mode_key(None), records.mode_value("READONLY"))
    assert state.config(None).level == "FULL" and state.config("s").level == "NONE"  # type: ignore[union-attr]
    assert state.mode(None) == "READONLY"
    state.apply(records.config_key("s"), None)
    assert state.config("s") is None
    for key, value in ((b"junk", b"{}"), (b'{"keytype":"SCHEMA"}', b"{}"), (records.schema_key("q", 1), b"[1]"),
                       (records.noop_key(), None)):
        state.apply(key, value)  # skipped, logged
    assert state.subject_names() == ["p", "s"]


def test_contexts_of_subjects() -> None:
    assert context_of(":.team:orders-value") == ".team"
    assert context_of("orders-value") == "."
    assert context_of(":.:x") == "."


def test_the_primary_is_the_eligible_member_with_the_smallest_url() -> None:
    def ident(host: str, port: int, eligible: bool = True) -> dict[str, object]:
        return {"version": 1, "host": host, "port": port, "master_eligibility": eligible, "scheme": "http"}

    members = [("m1", ident("b", 8081)), ("m2", ident("a", 8081, eligible=False)), ("m3", ident("a", 9000))]
    assert choose_primary(members) == ("m3", ident("a", 9000))
    assert choose_primary([("m2", ident("a", 8081, eligible=False))]) is None


def test_properties() -> None:
    config = RegistryConfig(read_properties_file(str(ROOT / "config" / "schema-registry.properties")))
    assert config.bootstrap == "localhost:9092" and config.topic == "_schemas" and config.level == "BACKWARD"
    secured = RegistryConfig({"kafkastore.bootstrap.servers": "h:1", "kafkastore.security.protocol": "SASL_SSL",
                              "kafkastore.sasl.mechanism": "PLAIN", "kafkastore.topic": "t"})
    assert secured.client_props() == {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}
    listed = RegistryConfig({"kafkastore.bootstrap.servers": "SASL_PLAINTEXT://a:1, SASL_SSL://b:2,c:3"})
    assert listed.bootstrap == "a:1,b:2,c:3"
    with pytest.raises(RegistryConfigError, match="kafkastore.bootstrap.servers"):
        RegistryConfig({})
    for props, words in (({"listeners": "ftp://x:1"}, "scheme"), ({"listeners": "http://x"}, "no port"),
                         ({"schema.compatibility.level": "sideways"}, "schema.compatibility.level")):
        with pytest.raises(RegistryConfigError, match=words):
            RegistryConfig({"kafkastore.bootstrap.servers": "h:1", **props})


def test_command_errors_are_one_line(tmp_path: Path) -> None:
    missing = run_cli("schema-registry", str(tmp_path / "nothing.properties"))
    assert missing.returncode == 1 and len(missing.stderr.splitlines()) == 1
    bad = tmp_path / "bad.properties"
    bad.write_text("kafkastore.bootstrap.servers=127.0.0.1:1\nlisteners=http://127.0.0.1\n")
    result = run_cli("schema-registry", str(bad))
    assert result.returncode == 1 and result.stderr.strip().endswith("no port")
