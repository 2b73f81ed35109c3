"""Shared by the format tests: the verdict expected at each of the seven levels from a pair's backward and
forward verdicts, and the check that the seam gives it."""

from __future__ import annotations

from odradek.schema_registry.schemas import LEVELS, ParsedSchema, check_compatibility


def expected(level: str, backward: bool, forward: bool) -> bool:
    rule = level.removesuffix("_TRANSITIVE")
    return {"BACKWARD": backward, "FORWARD": forward, "FULL": backward and forward, "NONE": True}[rule]


def assert_levels(old: ParsedSchema, new: ParsedSchema, backward: bool, forward: bool) -> None:
    for level in LEVELS:
        messages = check_compatibility(level, new, [old])
        assert (messages == []) == expected(level, backward, forward), (level, messages)
        assert all(isinstance(m, str) and m for m in messages)
