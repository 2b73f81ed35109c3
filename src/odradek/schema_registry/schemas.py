"""The seam between the registry's server and its schema formats: parse a schema of one of the three types
(AVRO, JSON, PROTOBUF) with its references resolved, give its canonical and normalized text, and check a new
schema's compatibility with earlier versions at one of Confluent's seven levels.

The server (REST API, storage, ids) knows schemas only through this module; the formats live beside it
(`avro_format`, `json_format`, `protobuf_format`, `compatibility`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")
LEVELS = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE", "NONE")
DEFAULT_LEVEL = "BACKWARD"


class SchemaError(ValueError):
    """The schema is not valid for its type (the registry's 42201, "Invalid schema"); the message says why."""


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
        """The text the registry stores and compares: the same schema written twice with different whitespace
        (or, for Avro, attribute order and doc-free parsing form as Confluent keeps it) gives the same text."""

    def normalized(self) -> str:
        """The text under `normalize=true` (Confluent's normalization: for Avro the canonical form with
        defaults kept, for Protobuf options and field order normalised, for JSON sorted keys); identical
        schemas normalise to identical text, so they keep one id."""


def parse(schema_type: str, text: str, references: Mapping[str, str] | None = None) -> ParsedSchema:
    """Parse `text` as a schema of `schema_type` ("AVRO" when the request names none); `references` maps each
    referenced name (transitively) to the referenced schema's text. Raises SchemaError naming the problem."""
    raise NotImplementedError


def check_compatibility(level: str, new: ParsedSchema, previous: Sequence[ParsedSchema]) -> list[str]:
    """Whether `new` may follow `previous` (oldest first, the latest last) at `level`: [] when it may, else one
    message per incompatibility in Confluent's verbose style (what changed, where, and which rule it breaks).
    Non-transitive levels compare with the latest only; NONE accepts anything; schemas of another type than
    `new`'s are incompatible."""
    raise NotImplementedError
