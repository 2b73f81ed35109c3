"""The `_schemas` topic's records in Confluent Schema Registry's JSON format, so Confluent's registry or Karapace
can read a topic Odradek wrote and the other way round. Keys: {"keytype": "SCHEMA", "subject", "version",
"magic": 1}, {"keytype": "CONFIG" | "MODE", "subject" (null for the global one), "magic": 0},
{"keytype": "DELETE_SUBJECT", "subject", "magic": 0}, {"keytype": "NOOP", "magic": 0}. Values: a schema's
{"subject", "version", "id", "schema", "schemaType" (absent for AVRO), "references", "deleted"}; a config's
{"compatibilityLevel", "normalize"?}; a mode's {"mode"}; a subject deletion's {"subject", "version"} (every version
up to it is soft-deleted). A null value (tombstone) removes what its key names."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

SCHEMA, CONFIG, MODE, DELETE_SUBJECT, NOOP = "SCHEMA", "CONFIG", "MODE", "DELETE_SUBJECT", "NOOP"


def _dump(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


def schema_key(subject: str, version: int) -> bytes:
    return _dump({"keytype": SCHEMA, "subject": subject, "version": version, "magic": 1})


def config_key(subject: str | None) -> bytes:
    return _dump({"keytype": CONFIG, "subject": subject, "magic": 0})


def mode_key(subject: str | None) -> bytes:
    return _dump({"keytype": MODE, "subject": subject, "magic": 0})


def delete_subject_key(subject: str) -> bytes:
    return _dump({"keytype": DELETE_SUBJECT, "subject": subject, "magic": 0})


def noop_key() -> bytes:
    return _dump({"keytype": NOOP, "magic": 0})


@dataclass
class SchemaRecord:
    """One subject version as the topic holds it."""
    subject: str
    version: int
    schema_id: int
    schema: str
    schema_type: str = "AVRO"
    references: list[dict[str, Any]] = field(default_factory=list)
    deleted: bool = False

    def value(self) -> bytes:
        doc: dict[str, Any] = {"subject": self.subject, "version": self.version, "id": self.schema_id,
                               "schema": self.schema}
        if self.schema_type != "AVRO":
            doc["schemaType"] = self.schema_type
        if self.references:
            doc["references"] = self.references
        doc["deleted"] = self.deleted
        return _dump(doc)


def schema_value(doc: dict[str, Any]) -> SchemaRecord:
    """A SCHEMA value read from the topic (KeyError/TypeError/ValueError when malformed)."""
    refs = doc.get("references") or []
    return SchemaRecord(subject=str(doc["subject"]), version=int(doc["version"]), schema_id=int(doc["id"]),
                        schema=str(doc["schema"]), schema_type=str(doc.get("schemaType") or "AVRO"),
                        references=[{"name": str(r["name"]), "subject": str(r["subject"]),
                                     "version": int(r["version"])} for r in refs],
                        deleted=bool(doc.get("deleted", False)))


def config_value(level: str, normalize: bool | None = None) -> bytes:
    doc: dict[str, Any] = {"compatibilityLevel": level}
    if normalize is not None:
        doc["normalize"] = normalize
    return _dump(doc)


def mode_value(mode: str) -> bytes:
    return _dump({"mode": mode})


def delete_subject_value(subject: str, version: int) -> bytes:
    return _dump({"subject": subject, "version": version})
