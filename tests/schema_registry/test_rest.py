"""The registry's REST API against one broker and one registry process over real HTTP: every endpoint and
Confluent's error codes (subjects, versions, soft and permanent deletes, ids, types, config, mode with IMPORT,
compatibility with `verbose`, contexts, references), and the `_schemas` topic's records in Confluent's format
read both ways."""

from __future__ import annotations

import json
from itertools import count

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.harness import BrokerProcess
from tests.schema_registry.helpers import Registry
from tests.waiting import wait_until

_names = count()


def subject() -> str:
    return f"subject-{next(_names)}"


def record(name: str, *fields: tuple[str, str]) -> str:
    return json.dumps({"type": "record", "name": name, "fields": [{"name": f, "type": t} for f, t in fields]})


def register(registry: Registry, subj: str, schema: str, **extra: object) -> tuple[int, object]:
    return registry.call("POST", f"/subjects/{subj}/versions", {"schema": schema, **extra})


def test_root_types_and_unknown_paths(registry: Registry) -> None:
    assert registry.call("GET", "/") == (200, {})
    assert registry.call("GET", "/schemas/types") == (200, ["JSON", "PROTOBUF", "AVRO"])
    assert registry.call("GET", "/nowhere") == (404, {"error_code": 404, "message": "HTTP 404 Not Found"})
    assert registry.call("PATCH", "/config")[0] == 405


def test_global_config_and_subject_config(registry: Registry) -> None:
    s = subject()
    assert registry.call("GET", "/config") == (200, {"compatibilityLevel": "BACKWARD"})
    assert registry.call("GET", f"/config/{s}") == (404, {
        "error_code": 40408, "message": f"Subject '{s}' does not have subject-level compatibility configured"})
    assert registry.call("GET", f"/config/{s}?defaultToGlobal=true") == (200, {"compatibilityLevel": "BACKWARD"})
    assert registry.call("PUT", f"/config/{s}", {"compatibility": "full_transitive"}) == (
        200, {"compatibility": "FULL_TRANSITIVE"})
    assert registry.call("GET", f"/config/{s}") == (200, {"compatibilityLevel": "FULL_TRANSITIVE"})
    status, body = registry.call("PUT", f"/config/{s}", {"compatibility": "SIDEWAYS"})
    assert (status, body["error_code"]) == (422, 42203)
    assert registry.call("DELETE", f"/config/{s}") == (200, {"compatibilityLevel": "FULL_TRANSITIVE"})
    assert registry.call("DELETE", f"/config/{s}")[1]["error_code"] == 40401
    assert registry.call("PUT", "/config", {"compatibility": "NONE", "normalize": True}) == (
        200, {"compatibility": "NONE", "normalize": True})
    assert registry.call("GET", "/config") == (200, {"compatibilityLevel": "NONE", "normalize": True})
    assert registry.call("DELETE", "/config") == (200, {"compatibilityLevel": "NONE"})
    assert registry.call("GET", "/config") == (200, {"compatibilityLevel": "BACKWARD"})


def test_modes(registry: Registry) -> None:
    s = subject()
    assert registry.call("GET", "/mode") == (200, {"mode": "READWRITE"})
    assert registry.call("GET", f"/mode/{s}")[1]["error_code"] == 40409
    assert registry.call("GET", f"/mode/{s}?defaultToGlobal=true") == (200, {"mode": "READWRITE"})
    assert registry.call("PUT", f"/mode/{s}", {"mode": "SIDEWAYS"})[1]["error_code"] == 42204
    assert registry.call("PUT", f"/mode/{s}", {"mode": "READONLY"}) == (200, {"mode": "READONLY"})
    status, body = register(registry, s, record("R", ("a", "int")))
    assert (status, body["error_code"]) == (422, 42205)
    assert registry.call("DELETE", f"/mode/{s}") == (200, {"mode": "READONLY"})
    assert registry.call("DELETE", f"/mode/{s}")[1]["error_code"] == 40401


def test_schemas_topic_in_confluents_format_is_read(registry: Registry, broker: BrokerProcess) -> None:
    """Records as Confluent's registry writes them appear through the API (no parsing needed to read)."""
    s = subject()
    schema = record("Written", ("x", "string"))
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    key = json.dumps({"keytype": "SCHEMA", "subject": s, "version": 1, "magic": 1})
    producer.produce("_schemas", json.dumps({"subject": s, "version": 1, "id": 9001, "schema": schema,
                                             "deleted": False}), key, 0)
    producer.produce("_schemas", json.dumps({"compatibilityLevel": "FORWARD"}),
                     json.dumps({"keytype": "CONFIG", "subject": s, "magic": 0}), 0)
    producer.produce("_schemas", b"not json", b"not json either", 0)  # skipped, the reader goes on
    producer.flush(10)
    wait_until(lambda: registry.call("GET", f"/subjects/{s}/versions")[0] == 200, 10, "the subject read")
    assert registry.call("GET", f"/subjects/{s}/versions/1") == (
        200, {"subject": s, "version": 1, "id": 9001, "schema": schema})
    assert registry.call("GET", "/schemas/ids/9001") == (200, {"schema": schema})
    assert registry.call("GET", "/schemas/ids/9001/schema", raw=True) == (200, schema)
    assert registry.call("GET", "/schemas/ids/9001/subjects") == (200, [s])
    assert registry.call("GET", "/schemas/ids/9001/versions") == (200, [{"subject": s, "version": 1}])
    assert registry.call("GET", f"/subjects/{s}/versions/latest/schema", raw=True) == (200, schema)
    assert registry.call("GET", f"/config/{s}") == (200, {"compatibilityLevel": "FORWARD"})
    assert s in registry.call("GET", "/subjects")[1]
    assert registry.call("GET", "/schemas/ids/123456")[1] == {"error_code": 40403, "message": "Schema 123456 not found"}
    # IMPORT needs a subject without versions, or force
    assert registry.call("PUT", f"/mode/{s}", {"mode": "IMPORT"})[1]["error_code"] == 42205
    assert registry.call("PUT", f"/mode/{s}?force=true", {"mode": "IMPORT"}) == (200, {"mode": "IMPORT"})
    assert registry.call("DELETE", f"/mode/{s}") == (200, {"mode": "IMPORT"})


def test_lookup_errors_without_parsing(registry: Registry) -> None:
    s = subject()
    assert registry.call("GET", f"/subjects/{s}/versions")[1]["error_code"] == 40401
    assert registry.call("GET", f"/subjects/{s}/versions/1")[1]["error_code"] == 40401
    assert registry.call("GET", f"/subjects/{s}/versions/zero")[1]["error_code"] == 42202
    assert registry.call("GET", f"/subjects/{s}/versions/0")[1]["error_code"] == 42202
    assert registry.call("DELETE", f"/subjects/{s}")[1]["error_code"] == 40401
    assert registry.call("POST", f"/subjects/{s}/versions", {"schema": ""})[1]["error_code"] == 42201
    status, body = registry.call("POST", f"/subjects/{s}/versions", {"schema": "{}", "schemaType": "XML"})
    assert (status, body["error_code"]) == (422, 42201)
    status, _ = registry.call("POST", f"/subjects/{s}/versions", raw=True, body=None)
    assert status == 400


# ---- what needs the Avro format --------------------------------------------------------------------------------

def test_register_lookup_and_versions(registry: Registry) -> None:
    s, other = subject(), subject()
    v1 = record("User", ("name", "string"))
    status, body = register(registry, s, v1)
    assert status == 200 and set(body) == {"id"}
    first = body["id"]
    assert register(registry, s, v1) == (200, {"id": first})  # the same schema again: no new version
    assert register(registry, other, v1) == (200, {"id": first})  # the same schema elsewhere: the same id
    v2 = json.dumps({"type": "record", "name": "User", "fields": [
        {"name": "name", "type": "string"}, {"name": "age", "type": "int", "default": 0}]})
    second = register(registry, s, v2)[1]["id"]
    assert second > first
    assert registry.call("GET", f"/subjects/{s}/versions") == (200, [1, 2])
    status, body = registry.call("GET", f"/subjects/{s}/versions/latest")
    assert (status, body["version"], body["id"]) == (200, 2, second)
    status, body = registry.call("POST", f"/subjects/{s}", {"schema": v1})
    assert (status, body["version"], body["id"], body["subject"]) == (200, 1, first, s)
    status, body = registry.call("POST", f"/subjects/{s}", {"schema": record("Other", ("z", "int"))})
    assert (status, body["error_code"]) == (404, 40403)
    assert registry.call("POST", f"/subjects/{subject()}", {"schema": v1})[1]["error_code"] == 40401
    assert registry.call("GET", f"/subjects/{s}/versions/3")[1]["error_code"] == 40402
    assert registry.call("GET", f"/schemas/ids/{first}/subjects") == (200, sorted([s, other]))


def test_invalid_and_incompatible_schemas(registry: Registry) -> None:
    s = subject()
    status, body = register(registry, s, '{"type": "record", "name": "R", "fields": [{"name": "a"}]}')
    assert (status, body["error_code"]) == (422, 42201)
    register(registry, s, record("R", ("a", "int")))
    status, body = register(registry, s, record("R", ("a", "int"), ("b", "string")))  # no default: not BACKWARD
    assert (status, body["error_code"]) == (409, 409)
    status, body = registry.call("POST", f"/compatibility/subjects/{s}/versions/latest?verbose=true",
                                 {"schema": record("R", ("a", "int"), ("b", "string"))})
    assert status == 200 and body["is_compatible"] is False and body["messages"]
    assert registry.call("POST", f"/compatibility/subjects/{s}/versions/1",
                         {"schema": record("R", ("a", "int"))}) == (200, {"is_compatible": True})
    assert registry.call("POST", f"/compatibility/subjects/{s}/versions/7",
                         {"schema": record("R", ("a", "int"))})[1]["error_code"] == 40402
    registry.call("PUT", f"/config/{s}", {"compatibility": "NONE"})
    assert register(registry, s, record("R", ("a", "int"), ("b", "string")))[0] == 200


def test_soft_and_permanent_deletes(registry: Registry) -> None:
    s = subject()
    register(registry, s, record("D", ("a", "int")))
    registry.call("PUT", f"/config/{s}", {"compatibility": "NONE"})
    assert register(registry, s, record("D2", ("a", "int")))[0] == 200
    assert registry.call("DELETE", f"/subjects/{s}/versions/1?permanent=true")[1]["error_code"] == 40407
    assert registry.call("DELETE", f"/subjects/{s}/versions/1") == (200, 1)
    assert registry.call("DELETE", f"/subjects/{s}/versions/1")[1]["error_code"] == 40406
    assert registry.call("GET", f"/subjects/{s}/versions") == (200, [2])
    assert registry.call("GET", f"/subjects/{s}/versions?deleted=true") == (200, [1, 2])
    assert registry.call("GET", f"/subjects/{s}/versions/1")[1]["error_code"] == 40402
    assert registry.call("GET", f"/subjects/{s}/versions/1?deleted=true")[0] == 200
    assert registry.call("DELETE", f"/subjects/{s}/versions/1?permanent=true") == (200, 1)
    assert registry.call("GET", f"/subjects/{s}/versions?deleted=true") == (200, [2])
    assert registry.call("DELETE", f"/subjects/{s}?permanent=true")[1]["error_code"] == 40405
    assert registry.call("DELETE", f"/subjects/{s}") == (200, [2])
    assert registry.call("DELETE", f"/subjects/{s}")[1]["error_code"] == 40404
    assert s not in registry.call("GET", "/subjects")[1]
    assert s in registry.call("GET", "/subjects?deleted=true")[1]
    assert registry.call("GET", f"/subjects/{s}/versions")[1]["error_code"] == 40401
    assert registry.call("DELETE", f"/subjects/{s}?permanent=true") == (200, [2])
    assert s not in registry.call("GET", "/subjects?deleted=true")[1]


def test_references_and_referencedby(registry: Registry) -> None:
    base, user = subject(), subject()
    address = json.dumps({"type": "record", "name": "Address", "namespace": "ex",
                          "fields": [{"name": "city", "type": "string"}]})
    address_id = register(registry, base, address)[1]["id"]
    person = json.dumps({"type": "record", "name": "Person", "namespace": "ex",
                         "fields": [{"name": "home", "type": "ex.Address"}]})
    refs = [{"name": "ex.Address", "subject": base, "version": 1}]
    status, body = register(registry, user, person, references=refs)
    assert status == 200, body
    person_id = body["id"]
    assert registry.call("GET", f"/subjects/{base}/versions/1/referencedby") == (200, [person_id])
    status, body = registry.call("GET", f"/schemas/ids/{person_id}")
    assert body["references"] == refs
    status, body = registry.call("DELETE", f"/subjects/{base}")
    assert (status, body["error_code"]) == (422, 42206)
    assert registry.call("DELETE", f"/subjects/{base}/versions/1")[1]["error_code"] == 42206
    missing = [{"name": "ex.Nothing", "subject": subject(), "version": 1}]
    assert register(registry, subject(), person, references=missing)[1]["error_code"] == 42201
    assert address_id != person_id


def test_contexts(registry: Registry) -> None:
    s = subject()
    qualified = f":.team:{s}"
    assert register(registry, qualified, record("C", ("a", "int")))[0] == 200
    assert ".team" in registry.call("GET", "/contexts")[1]
    assert "." in registry.call("GET", "/contexts")[1]
    assert registry.call("GET", "/subjects?subjectPrefix=:.team:") == (200, [qualified])
    assert registry.call("GET", f"/subjects/{qualified}/versions") == (200, [1])
    assert registry.call("GET", f"/subjects/{s}/versions")[1]["error_code"] == 40401


def test_import_mode_keeps_given_ids(registry: Registry) -> None:
    s = subject()
    assert registry.call("PUT", f"/mode/{s}", {"mode": "IMPORT"}) == (200, {"mode": "IMPORT"})
    schema = record("Imported", ("a", "int"))
    assert register(registry, s, schema, id=777777, version=5) == (200, {"id": 777777})
    assert registry.call("GET", f"/subjects/{s}/versions") == (200, [5])
    assert register(registry, s, record("Clash", ("b", "int")), id=777777, version=6)[1]["error_code"] == 42207
    registry.call("DELETE", f"/mode/{s}")
    status, body = register(registry, subject(), record("Next", ("c", "int")))
    assert body["id"] > 777777  # ids stay above every imported one
    assert register(registry, subject(), record("NotImport", ("d", "int")), id=888888)[1]["error_code"] == 42205


def test_written_records_have_confluents_format(registry: Registry, broker: BrokerProcess) -> None:
    s = subject()
    schema_id = register(registry, s, record("F", ("a", "int")))[1]["id"]
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "sr-format-check"})
    consumer.assign([TopicPartition("_schemas", 0, 0)])
    found = None
    try:
        while found is None:
            msg = consumer.poll(10)
            assert msg is not None, "the subject's record is not in the topic"
            if msg.error() is None and msg.key().startswith(b"{") and json.loads(msg.key()).get("subject") == s:
                found = msg
    finally:
        consumer.close()
    assert json.loads(found.key()) == {"keytype": "SCHEMA", "subject": s, "version": 1, "magic": 1}
    value = json.loads(found.value())
    assert value["id"] == schema_id and value["deleted"] is False and value["subject"] == s
    assert "schemaType" not in value  # AVRO is the absent type, as Confluent writes it


@pytest.mark.parametrize("path", ["/subjects/x/versions/1/schema", "/schemas/ids/abc"])
def test_not_found_shapes(registry: Registry, path: str) -> None:
    status, body = registry.call("GET", path)
    assert status == 404 and body["error_code"] in (40401, 40403)


def test_json_and_protobuf_schemas(registry: Registry) -> None:
    s, p = subject(), subject()
    js = json.dumps({"type": "object", "properties": {"a": {"type": "string"}}})
    status, body = register(registry, s, js, schemaType="JSON")
    assert status == 200, body
    status, body = registry.call("GET", f"/schemas/ids/{body['id']}")
    assert body["schemaType"] == "JSON"
    proto = 'syntax = "proto3";\npackage ex;\nmessage M { string a = 1; }\n'
    status, body = register(registry, p, proto, schemaType="PROTOBUF")
    assert status == 200, body
    pid = body["id"]
    status, body = registry.call("GET", f"/schemas/ids/{pid}?format=serialized")
    assert status == 200 and body["schemaType"] == "PROTOBUF" and "message" not in body["schema"]
    status, body = registry.call("GET", f"/subjects/{p}/versions/1")
    assert "message M" in body["schema"]
    status, body = register(registry, p, 'syntax = "proto3";\npackage ex;\nmessage M { int32 a = 1; }\n',
                            schemaType="PROTOBUF")
    assert (status, body["error_code"]) == (409, 409)
    assert register(registry, p, "message {", schemaType="PROTOBUF")[1]["error_code"] == 42201


def test_lists_page_and_filter(registry: Registry) -> None:
    names = sorted(registry.call("GET", "/subjects")[1])
    assert len(names) >= 3
    assert registry.call("GET", "/subjects?offset=1&limit=2") == (200, names[1:3])
    assert registry.call("GET", "/subjects?limit=abc")[0] == 400
    s = subject()
    register(registry, s, record("L", ("a", "int")))
    status, body = registry.call("GET", f"/schemas?subjectPrefix={s}&latestOnly=true")
    assert status == 200 and [(d["subject"], d["version"]) for d in body] == [(s, 1)]
    assert registry.call("POST", f"/compatibility/subjects/{s}/versions?verbose=true",
                         {"schema": record("L", ("a", "int"))}) == (200, {"is_compatible": True, "messages": []})


def test_resolved_format_inlines_avro_references(registry: Registry) -> None:
    base, user = subject(), subject()
    register(registry, base, json.dumps({"type": "record", "name": "Zip", "namespace": "ex",
                                         "fields": [{"name": "code", "type": "string"}]}))
    person = json.dumps({"type": "record", "name": "Home", "namespace": "ex",
                         "fields": [{"name": "zip", "type": "ex.Zip"}]})
    sid = register(registry, user, person, references=[{"name": "ex.Zip", "subject": base, "version": 1}])[1]["id"]
    status, body = registry.call("GET", f"/schemas/ids/{sid}?format=resolved")
    assert status == 200 and '"code"' in body["schema"]
    assert '"code"' not in registry.call("GET", f"/schemas/ids/{sid}")[1]["schema"]
    assert registry.call("GET", f"/subjects/{user}/versions/1?format=nonsense")[1]["schema"] == \
        registry.call("GET", f"/subjects/{user}/versions/1")[1]["schema"]
