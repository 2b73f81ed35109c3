"""The seam between the registry's server and its formats: dispatch by type, the seven levels' choice of
versions, and that parse raises nothing but SchemaError on any text."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.schema_registry.schemas import SCHEMA_TYPES, SchemaError, check_compatibility, parse


class _Other:
    schema_type = "OTHER"

    def canonical(self) -> str:
        return "x"

    def normalized(self) -> str:
        return "x"

    def reader_errors(self, writer: object, reader_label: str, writer_label: str) -> list[str]:
        return []


def test_unknown_type_and_level() -> None:
    with pytest.raises(SchemaError, match="unknown schema type"):
        parse("XML", "<a/>")
    with pytest.raises(ValueError, match="level"):
        check_compatibility("SIDEWAYS", parse("AVRO", '"int"'), [])


def test_first_version_and_other_types() -> None:
    avro = parse("AVRO", '"int"')
    assert check_compatibility("FULL_TRANSITIVE", avro, []) == []
    [message] = check_compatibility("BACKWARD", avro, [_Other()])
    assert "OTHER" in message
    assert check_compatibility("NONE", avro, [_Other()]) == []
    # non-transitive levels look at the latest version only
    assert check_compatibility("BACKWARD", avro, [_Other(), parse("AVRO", '"int"')]) == []


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                       lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
                           st.sampled_from(["type", "name", "fields", "items", "values", "symbols", "size",
                                            "default", "properties", "syntax", "$ref", "required"]) | st.text(max_size=5),
                           inner, max_size=4), max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(schema_type=st.sampled_from(SCHEMA_TYPES), text=st.text(max_size=200) | JSONISH.map(json.dumps))
def test_parse_raises_only_schema_error(schema_type: str, text: str) -> None:
    try:
        parse(schema_type, text)
    except SchemaError:
        pass
