"""The registry's state as the `_schemas` topic says it: every subject's versions (deleted or not), schemas by id,
the global and per-subject compatibility configs and modes. `apply()` takes one record of the topic (the reader
thread calls it); the REST layer reads under the same lock. Ids are global over all contexts: the next one is
one above the highest any record carried."""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from typing import Any

from odradek.schema_registry import records
from odradek.schema_registry.records import SchemaRecord

log = logging.getLogger("odradek.schema_registry")

DEFAULT_CONTEXT = "."


@dataclass
class SubjectConfig:
    level: str
    normalize: bool | None = None


def context_of(subject: str) -> str:
    """A qualified subject `:.ctx:name` lives in context `.ctx`; any other in the default context `.`."""
    if subject.startswith(":.") and subject.count(":") >= 2:
        return subject[1:subject.index(":", 1)]
    return DEFAULT_CONTEXT


def content_key(schema_type: str, text: str, references: list[dict[str, Any]]) -> tuple[str, str, str]:
    return schema_type, text, json.dumps(references, sort_keys=True)


class RegistryState:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.subjects: dict[str, dict[int, SchemaRecord]] = {}
        self.by_id: dict[int, SchemaRecord] = {}  # the first record that carried each id
        self.by_content: dict[tuple[str, str, str], int] = {}  # (type, text, references) -> id
        self.configs: dict[str | None, SubjectConfig] = {}
        self.modes: dict[str | None, str] = {}
        self.max_id = 0
        self.contexts: set[str] = {DEFAULT_CONTEXT}
        self.generation = 0  # counts the records applied: what was read of the state before a change is stale

    def apply(self, key: bytes | None, value: bytes | None, _offset: int = 0) -> None:
        try:
            k = json.loads(key or b"")
            keytype = k["keytype"]
        except (ValueError, KeyError, TypeError):
            log.warning("Skipping a record of the schemas topic with an unreadable key %r", key)
            return
        doc: Any = None
        if value is not None:
            try:
                doc = json.loads(value)
            except ValueError:
                log.warning("Skipping a record of the schemas topic with an unreadable value for key %r", key)
                return
        with self.lock:
            self.generation += 1
            try:
                self._apply(keytype, k, doc)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                log.warning("Skipping a malformed %s record of the schemas topic: %s", keytype, exc)

    def _apply(self, keytype: str, key: dict[str, Any], doc: Any) -> None:
        subject = key.get("subject")
        if keytype == records.SCHEMA:
            version = int(key["version"])
            if doc is None:  # a permanent delete
                versions = self.subjects.get(str(subject), {})
                versions.pop(version, None)
                if not versions:
                    self.subjects.pop(str(subject), None)
                return
            rec = records.schema_value(doc)
            self.subjects.setdefault(rec.subject, {})[rec.version] = rec
            self.by_id.setdefault(rec.schema_id, rec)
            self.by_content.setdefault(content_key(rec.schema_type, rec.schema, rec.references), rec.schema_id)
            self.max_id = max(self.max_id, rec.schema_id)
            self.contexts.add(context_of(rec.subject))
        elif keytype == records.CONFIG:
            if doc is None:
                self.configs.pop(subject, None)
            else:
                level = doc.get("compatibilityLevel") or doc.get("compatibility")
                if level:
                    self.configs[subject] = SubjectConfig(str(level).upper(), doc.get("normalize"))
        elif keytype == records.MODE:
            if doc is None:
                self.modes.pop(subject, None)
            else:
                self.modes[subject] = str(doc["mode"]).upper()
        elif keytype == records.DELETE_SUBJECT and doc is not None:
            upto = int(doc["version"])
            for version, rec in self.subjects.get(str(subject), {}).items():
                if version <= upto:
                    rec.deleted = True

    # ---- reads (callers hold no lock: each takes it) ----------------------------------------------------

    def versions(self, subject: str, deleted: bool = False) -> list[SchemaRecord]:
        with self.lock:
            return [r for _, r in sorted(self.subjects.get(subject, {}).items()) if deleted or not r.deleted]

    def subject_names(self, deleted: bool = False) -> list[str]:
        with self.lock:
            return sorted(s for s, vs in self.subjects.items() if vs and (deleted or any(not r.deleted
                                                                                      for r in vs.values())))

    def id_of(self, schema_type: str, text: str, references: list[dict[str, Any]]) -> int | None:
        with self.lock:
            return self.by_content.get(content_key(schema_type, text, references))

    def schema(self, schema_id: int) -> SchemaRecord | None:
        with self.lock:
            return self.by_id.get(schema_id)

    def uses_of(self, schema_id: int, deleted: bool = False) -> list[SchemaRecord]:
        with self.lock:
            return sorted((r for vs in self.subjects.values() for r in vs.values()
                           if r.schema_id == schema_id and (deleted or not r.deleted)),
                          key=lambda r: (r.subject, r.version))

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """Ids of the live schemas whose references name this subject version."""
        with self.lock:
            return sorted({r.schema_id for vs in self.subjects.values() for r in vs.values() if not r.deleted
                           and any(ref["subject"] == subject and ref["version"] == version for ref in r.references)})

    def config(self, subject: str | None) -> SubjectConfig | None:
        with self.lock:
            return self.configs.get(subject)

    def mode(self, subject: str | None) -> str | None:
        with self.lock:
            return self.modes.get(subject)
