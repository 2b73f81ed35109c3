"""What the registry does, with Confluent's rules and error codes: register (same schema, same id; a new schema
checked against the subject's live versions at its compatibility level, given the next global id), look up,
soft and permanent deletes (permanent only after soft; nothing referenced may go), configs, modes (READONLY
refuses writes, IMPORT takes explicit ids and versions) and compatibility tests. Reads come from the state;
writes are records for the `_schemas` topic, handed to `write` (the primary's store) one request at a time.
Its methods block (parsing, the topic): the REST layer runs them on threads."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from odradek.schema_registry import records, schemas
from odradek.schema_registry.records import SchemaRecord
from odradek.schema_registry.state import RegistryState, SubjectConfig

Write = Callable[[list[tuple[bytes, bytes | None]]], None]

MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")
MAX_VERSION = 2**31 - 1
PARSED_CACHE_SIZE = 1000


class RegistryError(Exception):
    """An error answer: HTTP `status` with body {"error_code": code, "message": message}."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version: Any) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(schema_id: Any = None) -> RegistryError:
    return RegistryError(404, 40403, "Schema not found" if schema_id is None else f"Schema {schema_id} not found")


def invalid_version(version: str) -> RegistryError:
    return RegistryError(422, 42202, f"The specified version '{version}' is not a valid version id. Allowed values "
                                     "are between [1, 2^31-1] and the string \"latest\"")


def invalid_level() -> RegistryError:
    return RegistryError(422, 42203, "Invalid compatibility level. Valid values are none, backward, forward, full, "
                                     "backward_transitive, forward_transitive, and full_transitive")


def invalid_mode() -> RegistryError:
    return RegistryError(422, 42204, "Invalid mode. Valid values are READWRITE, READONLY, IMPORT and FORWARD.")


def parse_version(text: str) -> int | None:
    """A path's version: an int in [1, 2^31-1], or None for `latest` / -1; 42202 otherwise."""
    if text in ("latest", "-1"):
        return None
    try:
        version = int(text)
    except ValueError:
        raise invalid_version(text) from None
    if not 1 <= version <= MAX_VERSION:
        raise invalid_version(text)
    return version


def describe(rec: SchemaRecord, with_subject: bool = True) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    if with_subject:
        doc.update(subject=rec.subject, version=rec.version)
    doc["id"] = rec.schema_id
    if rec.schema_type != "AVRO":
        doc["schemaType"] = rec.schema_type
    if rec.references:
        doc["references"] = rec.references
    doc["schema"] = rec.schema
    return doc


class Registry:
    def __init__(self, state: RegistryState, default_level: str = schemas.DEFAULT_LEVEL) -> None:
        self.state = state
        self.default_level = default_level
        self.write_lock = threading.Lock()
        # parsing costs milliseconds (Protobuf compiles): the versions compared on each registration are kept
        self._parsed_cache: OrderedDict[tuple[str, str, tuple[tuple[str, str], ...]], schemas.ParsedSchema] = \
            OrderedDict()
        self._cache_lock = threading.Lock()

    # ---- parsing --------------------------------------------------------------------------------------

    def _ref_texts(self, refs: list[dict[str, Any]], out: dict[str, str], depth: int = 0) -> None:
        if depth > 32:
            raise RegistryError(422, 42201, "Invalid schema: references nest too deep")
        for ref in refs:
            versions = {r.version: r for r in self.state.versions(ref["subject"], deleted=True)}
            rec = versions.get(ref["version"]) if ref["version"] != -1 else (
                max(versions.values(), key=lambda r: r.version) if versions else None)
            if rec is None:
                raise RegistryError(422, 42201, f"Invalid schema: reference {ref['name']} to subject "
                                                f"'{ref['subject']}' version {ref['version']} not found")
            if ref["name"] not in out:
                out[ref["name"]] = rec.schema
                self._ref_texts(rec.references, out, depth + 1)

    def parse(self, schema_type: str, text: str, refs: list[dict[str, Any]]) -> schemas.ParsedSchema:
        if schema_type not in schemas.SCHEMA_TYPES:
            raise RegistryError(422, 42201, f"Invalid schema: unknown schema type {schema_type}")
        texts: dict[str, str] = {}
        self._ref_texts(refs, texts)
        key = (schema_type, text, tuple(sorted(texts.items())))
        with self._cache_lock:
            cached = self._parsed_cache.get(key)
            if cached is not None:
                self._parsed_cache.move_to_end(key)
                return cached
        try:
            parsed = schemas.parse(schema_type, text, texts)
        except schemas.SchemaError as exc:
            raise RegistryError(422, 42201, f"Invalid schema {text[:200]} with refs {refs} of type {schema_type}, "
                                            f"details: {exc}") from None
        except NotImplementedError:
            raise RegistryError(422, 42201, f"Invalid schema: the {schema_type} format is not available") from None
        with self._cache_lock:
            self._parsed_cache[key] = parsed
            while len(self._parsed_cache) > PARSED_CACHE_SIZE:
                self._parsed_cache.popitem(last=False)
        return parsed

    def _parsed(self, rec: SchemaRecord) -> schemas.ParsedSchema:
        return self.parse(rec.schema_type, rec.schema, rec.references)

    # ---- settings -------------------------------------------------------------------------------------

    def level(self, subject: str | None) -> str:
        config = (self.state.config(subject) if subject is not None else None) or self.state.config(None)
        return config.level if config else self.default_level

    def mode(self, subject: str | None) -> str:
        return (self.state.mode(subject) if subject is not None else None) or self.state.mode(None) or "READWRITE"

    def _check_writable(self, subject: str | None) -> str:
        mode = self.mode(subject)
        if mode in ("READONLY", "READONLY_OVERRIDE"):
            raise RegistryError(422, 42205, f"Subject {subject} is in read-only mode" if subject else
                                "The registry is in read-only mode")
        return mode

    # ---- reads ----------------------------------------------------------------------------------------

    def version(self, subject: str, version_text: str, deleted: bool = False) -> SchemaRecord:
        version = parse_version(version_text)
        all_versions = self.state.versions(subject, deleted=True)
        if not all_versions:
            raise subject_not_found(subject)
        live = [r for r in all_versions if deleted or not r.deleted]
        if version is None:
            if not live:
                raise subject_not_found(subject)
            return live[-1]
        for rec in live:
            if rec.version == version:
                return rec
        raise version_not_found(version)

    def lookup(self, subject: str, body: dict[str, Any], normalize: bool, deleted: bool) -> SchemaRecord:
        schema_type, text, refs = _schema_fields(body)
        versions = self.state.versions(subject, deleted=deleted)
        if not versions:
            raise subject_not_found(subject)
        parsed = self.parse(schema_type, text, refs)
        found = self._matching(parsed, versions, normalize or self._normalizes(subject), refs)
        if found is None:
            raise schema_not_found()
        return found

    def _normalizes(self, subject: str) -> bool:
        config = self.state.config(subject) or self.state.config(None)
        return bool(config and config.normalize)

    def _matching(self, parsed: schemas.ParsedSchema, candidates: list[SchemaRecord], normalize: bool,
                  refs: list[dict[str, Any]]) -> SchemaRecord | None:
        canonical = parsed.canonical()
        normalized = parsed.normalized() if normalize else None
        for rec in reversed(candidates):
            if rec.schema_type != parsed.schema_type or rec.references != refs:
                continue
            if rec.schema == canonical:
                return rec
            if normalized is not None:
                try:
                    if self._parsed(rec).normalized() == normalized:
                        return rec
                except RegistryError:
                    continue
        return None

    # ---- writes ---------------------------------------------------------------------------------------

    def register(self, subject: str, body: dict[str, Any], normalize: bool, write: Write) -> int:
        if not subject or len(subject) > 4096 or any(ord(c) < 32 for c in subject):
            raise RegistryError(422, 42208, f"The specified subject '{subject[:200]}' is not a valid.")
        schema_type, text, refs = _schema_fields(body)
        explicit_id, explicit_version = body.get("id"), body.get("version")
        with self.write_lock:
            mode = self._check_writable(subject)
            normalize = normalize or self._normalizes(subject)
            parsed = self.parse(schema_type, text, refs)
            stored_text = parsed.normalized() if normalize else parsed.canonical()
            every = self.state.versions(subject, deleted=True)
            live = [r for r in every if not r.deleted]
            if mode == "IMPORT":
                return self._import(subject, parsed, stored_text, refs, explicit_id, explicit_version, every, write)
            if explicit_id not in (None, -1, 0) or explicit_version not in (None, -1, 0):
                existing = self._matching(parsed, live, normalize, refs)
                if existing is not None and explicit_id in (None, existing.schema_id):
                    return existing.schema_id
                raise RegistryError(422, 42205, f"Subject {subject} is not in import mode")
            existing = self._matching(parsed, live, normalize, refs)
            if existing is not None:
                return existing.schema_id
            self._check_compatible(subject, parsed, live)
            schema_id = self._id_for(parsed, stored_text, refs)
            version = max((r.version for r in every), default=0) + 1
            rec = SchemaRecord(subject, version, schema_id, stored_text, parsed.schema_type, refs)
            write([(records.schema_key(subject, version), rec.value())])
            return schema_id

    def _id_for(self, parsed: schemas.ParsedSchema, text: str, refs: list[dict[str, Any]]) -> int:
        """The id of an identical schema under any subject, else the next id."""
        with self.state.lock:
            found = self.state.id_of(parsed.schema_type, text, refs)
            return found if found is not None else self.state.max_id + 1

    def _import(self, subject: str, parsed: schemas.ParsedSchema, text: str, refs: list[dict[str, Any]],
                explicit_id: Any, explicit_version: Any, every: list[SchemaRecord], write: Write) -> int:
        if explicit_id in (None, -1, 0):
            schema_id = self._id_for(parsed, text, refs)
        else:
            schema_id = _positive(explicit_id, "id")
            held = self.state.schema(schema_id)
            if held is not None and (held.schema != text or held.schema_type != parsed.schema_type):
                raise RegistryError(422, 42207, f"Overwrite new schema with id {schema_id} is not permitted.")
        if explicit_version in (None, -1, 0):
            version = max((r.version for r in every), default=0) + 1
        else:
            version = _positive(explicit_version, "version")
            for rec in every:
                if rec.version == version:
                    if rec.schema_id == schema_id:
                        return schema_id
                    raise RegistryError(422, 42205, f"Version {version} of subject {subject} already holds "
                                                    f"schema {rec.schema_id}")
        rec = SchemaRecord(subject, version, schema_id, text, parsed.schema_type, refs)
        write([(records.schema_key(subject, version), rec.value())])
        return schema_id

    def _check_compatible(self, subject: str, parsed: schemas.ParsedSchema, live: list[SchemaRecord]) -> None:
        level = self.level(subject)
        if level == "NONE" or not live:
            return
        previous = [self._parsed(r) for r in (live if level.endswith("_TRANSITIVE") else live[-1:])]
        problems = schemas.check_compatibility(level, parsed, previous)
        if problems:
            raise RegistryError(409, 409, f"Schema being registered is incompatible with an earlier schema for "
                                          f"subject \"{subject}\", details: {problems}")

    def compatibility(self, subject: str, version_text: str | None, body: dict[str, Any],
                      normalize: bool) -> list[str]:
        """The incompatibilities of the body's schema with one version (or, version_text None, with every live
        version the subject's level asks for)."""
        schema_type, text, refs = _schema_fields(body)
        live = self.state.versions(subject)
        if version_text is not None:
            version = parse_version(version_text)
            if not live:
                if version is None:  # `latest` of a subject without versions: anything goes
                    return []
                raise subject_not_found(subject)
            targets = [self.version(subject, version_text)]
            level = self.level(subject)
        else:
            targets, level = live, self.level(subject)
        parsed = self.parse(schema_type, text, refs)
        if level == "NONE" or not targets:
            return []
        if version_text is not None or not level.endswith("_TRANSITIVE"):
            targets = targets[-1:]
        return schemas.check_compatibility(level, parsed, [self._parsed(r) for r in targets])

    def delete_subject(self, subject: str, permanent: bool, write: Write) -> list[int]:
        with self.write_lock:
            self._check_writable(subject)
            every = self.state.versions(subject, deleted=True)
            if not every:
                raise subject_not_found(subject)
            live = [r for r in every if not r.deleted]
            for rec in every:
                if self.state.referenced_by(subject, rec.version):
                    raise RegistryError(422, 42206, f"One or more references exist to the schema "
                                                    f"{{magic=1,keytype=SCHEMA,subject={subject},"
                                                    f"version={rec.version}}}.")
            if permanent:
                if live:
                    raise RegistryError(404, 40405, f"Subject '{subject}' was not deleted first before being "
                                                    "permanently deleted")
                # the highest first, as Confluent deletes (a version may reference an earlier one)
                items: list[tuple[bytes, bytes | None]] = [(records.schema_key(subject, r.version), None)
                                                           for r in reversed(every)]
                if self.state.mode(subject) is not None:
                    items.append((records.mode_key(subject), None))
                if self.state.config(subject) is not None:
                    items.append((records.config_key(subject), None))
                write(items)
                return [r.version for r in every]
            if not live:
                raise RegistryError(404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true to "
                                                "delete permanently")
            write([(records.delete_subject_key(subject), records.delete_subject_value(subject, live[-1].version))])
            return [r.version for r in live]

    def delete_version(self, subject: str, version_text: str, permanent: bool, write: Write) -> int:
        version = parse_version(version_text)
        with self.write_lock:
            self._check_writable(subject)
            every = self.state.versions(subject, deleted=True)
            if not every:
                raise subject_not_found(subject)
            if version is None:
                live = [r for r in every if not r.deleted]
                rec = (live or every)[-1] if permanent else (live[-1] if live else None)
                if rec is None:
                    raise subject_not_found(subject)
            else:
                found = [r for r in every if r.version == version]
                if not found:
                    raise version_not_found(version)
                rec = found[0]
            if self.state.referenced_by(subject, rec.version):
                raise RegistryError(422, 42206, f"One or more references exist to the schema "
                                                f"{{magic=1,keytype=SCHEMA,subject={subject},version={rec.version}}}.")
            if permanent:
                if not rec.deleted:
                    raise RegistryError(404, 40407, f"Subject '{subject}' Version {rec.version} was not deleted "
                                                    "first before being permanently deleted")
                write([(records.schema_key(subject, rec.version), None)])
            else:
                if rec.deleted:
                    raise RegistryError(404, 40406, f"Subject '{subject}' Version {rec.version} was soft deleted."
                                                    "Set permanent=true to delete permanently")
                gone = SchemaRecord(rec.subject, rec.version, rec.schema_id, rec.schema, rec.schema_type,
                                    rec.references, deleted=True)
                write([(records.schema_key(subject, rec.version), gone.value())])
            return rec.version

    def set_config(self, subject: str | None, body: dict[str, Any], write: Write) -> dict[str, Any]:
        level = body.get("compatibility", body.get("compatibilityLevel"))
        normalize = body.get("normalize")
        if not isinstance(level, str) or level.upper() not in schemas.LEVELS:
            raise invalid_level()
        if normalize is not None and not isinstance(normalize, bool):
            raise RegistryError(422, 42203, "Invalid normalize value: must be true or false")
        with self.write_lock:
            write([(records.config_key(subject), records.config_value(level.upper(), normalize))])
        answer: dict[str, Any] = {"compatibility": level.upper()}
        if normalize is not None:
            answer["normalize"] = normalize
        return answer

    def get_config(self, subject: str | None, default_to_global: bool) -> dict[str, Any]:
        config = self.state.config(subject)
        if config is None and subject is not None:
            if not default_to_global:
                raise RegistryError(404, 40408, f"Subject '{subject}' does not have subject-level compatibility "
                                                "configured")
            config = self.state.config(None)
        if config is None:
            config = SubjectConfig(self.default_level)
        answer: dict[str, Any] = {"compatibilityLevel": config.level}
        if config.normalize is not None:
            answer["normalize"] = config.normalize
        return answer

    def delete_config(self, subject: str | None, write: Write) -> dict[str, Any]:
        config = self.state.config(subject)
        if subject is not None and config is None:
            raise subject_not_found(subject)
        answer = {"compatibilityLevel": config.level if config else self.default_level}
        with self.write_lock:
            write([(records.config_key(subject), None)])
        return answer

    def set_mode(self, subject: str | None, body: dict[str, Any], force: bool, write: Write) -> dict[str, Any]:
        mode = body.get("mode")
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise invalid_mode()
        mode = mode.upper()
        with self.write_lock:
            if mode == "IMPORT" and not force:
                names = self.state.subject_names(deleted=True)
                if (subject is None and names) or (subject is not None and subject in names):
                    raise RegistryError(422, 42205, "Cannot import since found existing subjects")
            write([(records.mode_key(subject), records.mode_value(mode))])
        return {"mode": mode}

    def get_mode(self, subject: str | None, default_to_global: bool) -> dict[str, Any]:
        if subject is None:
            return {"mode": self.mode(None)}
        mode = self.state.mode(subject)
        if mode is None:
            if not default_to_global:
                raise RegistryError(404, 40409, f"Subject '{subject}' does not have subject-level mode configured")
            mode = self.mode(None)
        return {"mode": mode}

    def delete_mode(self, subject: str, write: Write) -> dict[str, Any]:
        mode = self.state.mode(subject)
        if mode is None:
            raise subject_not_found(subject)
        with self.write_lock:
            write([(records.mode_key(subject), None)])
        return {"mode": mode}


def _positive(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_VERSION:
        raise RegistryError(422, 42202 if what == "version" else 42201, f"Invalid {what} {value}")
    return value


def _schema_fields(body: dict[str, Any]) -> tuple[str, str, list[dict[str, Any]]]:
    """The request's schema type, text and references, checked (42201 / 422 otherwise)."""
    text = body.get("schema")
    if not isinstance(text, str) or not text:
        raise RegistryError(422, 42201, "Invalid schema: the request carries no schema")
    schema_type = body.get("schemaType") or "AVRO"
    if not isinstance(schema_type, str):
        raise RegistryError(422, 42201, "Invalid schema: schemaType must be a string")
    refs_in = body.get("references") or []
    if not isinstance(refs_in, list):
        raise RegistryError(422, 42201, "Invalid schema: references must be a list")
    refs: list[dict[str, Any]] = []
    for ref in refs_in:
        if not (isinstance(ref, dict) and isinstance(ref.get("name"), str) and isinstance(ref.get("subject"), str)
                and isinstance(ref.get("version"), int) and not isinstance(ref.get("version"), bool)):
            raise RegistryError(422, 42201, f"Invalid schema: invalid reference {ref}")
        refs.append({"name": ref["name"], "subject": ref["subject"], "version": ref["version"]})
    return schema_type.upper(), text, refs
