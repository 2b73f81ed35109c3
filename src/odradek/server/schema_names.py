"""The record name of a registered schema, as Confluent's serializers name the subject under RecordNameStrategy
and TopicRecordNameStrategy: Avro's full name of a named type (namespace.name; a primitive's name is its type,
as confluent-kafka's AvroSerializer gives it), JSON Schema's `title`, Protobuf's first message by its full name
(package.Message). None when the schema has none (an Avro union, a JSON Schema without a title, a .proto
without messages). Pure: no registry, no references (a record name is in the schema's own text)."""

from __future__ import annotations

import json
import re
from typing import Any

_IDENT = re.compile(r"[A-Za-z_][\w.]*")


def record_name(schema_type: str, text: str) -> str | None:
    """The record name of a schema of `schema_type` (AVRO, JSON, PROTOBUF) written as `text`."""
    if schema_type == "PROTOBUF":
        return _proto_first_message(text)
    try:
        doc: Any = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if schema_type == "JSON":
        title = doc.get("title") if isinstance(doc, dict) else None
        return title if isinstance(title, str) else None
    return _avro_name(doc)


def _avro_name(doc: Any) -> str | None:
    if isinstance(doc, str):
        return doc
    if not isinstance(doc, dict):
        return None  # a union
    kind = doc.get("type")
    name = doc.get("name")
    if kind in ("record", "error", "enum", "fixed") and isinstance(name, str):
        namespace = doc.get("namespace")
        if "." in name or not isinstance(namespace, str) or not namespace:
            return name
        return f"{namespace}.{name}"
    if isinstance(kind, str):
        return kind
    return _avro_name(kind) if isinstance(kind, dict) else None


def _proto_first_message(text: str) -> str | None:
    """package.Message of the first top-level `message` of a .proto text (comments and strings skipped); one
    pass, linear in the text whatever it holds."""
    package = ""
    depth = 0
    words: list[str] = []  # the top-level words since the last ';', '{' or '}'
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            i = _after(text, "\n", i + 2)
        elif c == "/" and text.startswith("/*", i):
            i = _after(text, "*/", i + 2)
        elif c in "\"'":
            i += 1
            while i < n and text[i] != c and text[i] != "\n":
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif c in "{};":
            if depth == 0 and c == "{" and len(words) >= 2 and words[0] == "message":
                return f"{package}.{words[1]}" if package else words[1]
            if depth == 0 and c == ";" and len(words) >= 2 and words[0] == "package":
                package = words[1]
            depth = depth + 1 if c == "{" else max(depth - 1, 0) if c == "}" else depth
            words = []
            i += 1
        elif (m := _IDENT.match(text, i)) is not None:
            words.append(m.group())
            i = m.end()
        else:
            i += 1
    return None


def _after(text: str, end: str, start: int) -> int:
    found = text.find(end, start)
    return len(text) if found < 0 else found + len(end)
