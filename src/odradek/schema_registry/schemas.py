"""The seam between the registry's server and its schema formats: parse a schema of one of the three types
(AVRO, JSON, PROTOBUF) with its references resolved, give its canonical and normalized text, and check a new
schema's compatibility with earlier versions at one of Confluent's seven levels.

The server (REST API, storage, ids) knows schemas only through this module; the formats live beside it
(`avro_format`, `json_format`, `protobuf_format` with `protobuf_render`), their bounds in `limits`. Each
format's schema class offers more than the protocol: AvroSchema.defined_names and resolved(),
JsonSchema.draft, ProtobufSchema.serialized() and message_names()."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from odradek.schema_registry.errors import SchemaError

SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")
LEVELS = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE", "NONE")
DEFAULT_LEVEL = "BACKWARD"


__all__ = ["DEFAULT_LEVEL", "LEVELS", "SCHEMA_TYPES", "ParsedSchema", "Reference", "SchemaError",
           "check_compatibility", "formatted", "parse"]


@dataclass(frozen=True)
class Reference:
    """A schema reference as the REST API carries it: the name the referring schema imports (an Avro full
    name, a JSON Schema `$ref` URL, a Protobuf import path) and the subject and version that hold it."""
    name: str
    subject: str
    version: int


class ParsedSchema(Protocol):
    """A valid schema of one type, its references resolved."""

    @property
    def schema_type(self) -> str: ...

    def canonical(self) -> str:
        """The text the registry compares (and may store): the same schema written with other whitespace gives
        the same text. Avro: compact JSON in Avro's Java attribute order, docs kept; JSON Schema: compact JSON
        in the order given; Protobuf: .proto text rendered from the compiled descriptor (so the base64
        descriptor Confluent's Python serializer sends and the .proto text it came from give the same)."""

    def normalized(self) -> str:
        """The text under `normalize=true`: Avro's parsing canonical form with what resolution reads kept
        (defaults, aliases, order, logical types; full names, no docs); JSON Schema with sorted keys; Protobuf
        with imports, options and declarations sorted and fields by number. Identical schemas normalise to
        identical text, so they keep one id."""

    def reader_errors(self, writer: ParsedSchema, reader_label: str, writer_label: str) -> list[str]:
        """Every reason this schema (the reader) cannot read what `writer` (a schema of the same type) allows:
        [] when it can. The labels ("new", "old") name the two schemas in the messages."""


def parse(schema_type: str, text: str, references: Mapping[str, str] | None = None) -> ParsedSchema:
    """Parse `text` as a schema of `schema_type` ("AVRO" when the request names none); `references` maps each
    referenced name (transitively) to the referenced schema's text. Raises SchemaError naming the problem, and
    nothing else, whatever the text; the cost is bounded (see `limits`)."""
    if schema_type not in SCHEMA_TYPES:
        raise SchemaError(f"unknown schema type {schema_type!r}: one of {', '.join(SCHEMA_TYPES)}")
    try:
        return _parse(schema_type, text, references)
    except SchemaError:
        raise
    except RecursionError:
        raise SchemaError("the schema nests too deeply") from None
    except Exception as e:  # a library's own error on input it refuses: still the client's invalid schema
        raise SchemaError(f"invalid {schema_type} schema: {type(e).__name__}: {str(e)[:300]}") from None
    except BaseException as e:
        if not _is_panic(e):
            raise
        raise SchemaError(f"invalid {schema_type} schema: a library failed on it ({str(e)[:200]})") from None


def _is_panic(exc: BaseException) -> bool:
    """A Rust extension's panic (pyo3's PanicException, a BaseException), e.g. a RecursionError met inside one."""
    return type(exc).__name__ == "PanicException"


def _parse(schema_type: str, text: str, references: Mapping[str, str] | None) -> ParsedSchema:
    if schema_type == "AVRO":
        from odradek.schema_registry import avro_format
        return avro_format.parse(text, references)
    if schema_type == "JSON":
        from odradek.schema_registry import json_format
        return json_format.parse(text, references)
    from odradek.schema_registry import protobuf_format
    return protobuf_format.parse(text, references)


def formatted(schema: ParsedSchema, fmt: str) -> str | None:
    """The schema's text under the REST API's `format` parameter: "serialized" for Protobuf (the base64
    FileDescriptorProto Confluent's Python deserializer asks for), "resolved" for Avro (referenced types
    inlined); None when the format does not apply to the schema's type (the server then gives the stored
    text, as Confluent does)."""
    fmt = fmt.lower()
    if fmt == "serialized" and schema.schema_type == "PROTOBUF":
        return str(schema.serialized())  # type: ignore[attr-defined]
    if fmt == "resolved" and schema.schema_type == "AVRO":
        try:
            return str(schema.resolved())  # type: ignore[attr-defined]
        except RecursionError:  # references inlined within references, hundreds deep: the stored text then
            return None
    return None


def check_compatibility(level: str, new: ParsedSchema, previous: Sequence[ParsedSchema]) -> list[str]:
    """Whether `new` may follow `previous` (oldest first, the latest last) at `level`: [] when it may, else one
    message per incompatibility in Confluent's verbose style (what changed, where, and which rule it breaks).
    Non-transitive levels compare with the latest only; NONE accepts anything; schemas of another type than
    `new`'s are incompatible. A message found against several versions is given once."""
    if level not in LEVELS:
        raise ValueError(f"unknown compatibility level {level!r}")
    if level == "NONE":
        return []
    against = previous if level.endswith("_TRANSITIVE") else previous[-1:]
    rule = level.removesuffix("_TRANSITIVE")
    messages: list[str] = []
    for old in reversed(against):
        if old.schema_type != new.schema_type:
            messages.append(f"Incompatible schema type: the new schema is {new.schema_type}, "
                            f"an earlier version is {old.schema_type}")
            continue
        try:
            if rule in ("BACKWARD", "FULL"):
                messages += new.reader_errors(old, "new", "old")
            if rule in ("FORWARD", "FULL"):
                messages += old.reader_errors(new, "old", "new")
        except RecursionError:  # a chain of thousands of named types, each using the next
            messages.append("The schemas' types refer to one another too deeply to compare: treated as "
                            "incompatible")
        except BaseException as e:
            if not _is_panic(e):
                raise
            messages.append("The schemas' types refer to one another too deeply to compare: treated as "
                            "incompatible")
    return list(dict.fromkeys(messages))
