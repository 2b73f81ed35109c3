"""The topic selection rules both `topics` paths (--bootstrap-server, --zookeeper) share."""

from __future__ import annotations

import argparse

import pytest

from odradek.cli.topic_model import TopicCommandError, existing_topics, matching_topics, warn_if_colliding

NAMES = ["b", "__consumer_offsets", "a.1", "a2"]


def opts(topic: str | None = None, exclude_internal: bool = False, if_exists: bool = False) -> argparse.Namespace:
    return argparse.Namespace(topic=topic, exclude_internal=exclude_internal, if_exists=if_exists)


def test_matching_is_sorted_regex_and_can_drop_internal_topics() -> None:
    assert matching_topics(NAMES, opts()) == ["__consumer_offsets", "a.1", "a2", "b"]
    assert matching_topics(NAMES, opts("a.*")) == ["a.1", "a2"]
    assert matching_topics(NAMES, opts("a.1,b")) == ["a.1", "b"]  # a comma means "or"; fullmatch: not a2
    assert matching_topics(NAMES, opts(exclude_internal=True)) == ["a.1", "a2", "b"]


def test_existing_refuses_nothing_unless_if_exists() -> None:
    with pytest.raises(TopicCommandError, match="Topic 'c' does not exist as expected"):
        existing_topics(NAMES, opts("c"))
    assert existing_topics(NAMES, opts("c", if_exists=True)) == []
    assert existing_topics([], opts()) == []  # no --topic: an empty cluster is no error


def test_collision_warning(capsys: pytest.CaptureFixture[str]) -> None:
    warn_if_colliding("plain-name")
    assert capsys.readouterr().out == ""
    warn_if_colliding("with_underscore")
    assert capsys.readouterr().out.startswith("WARNING: Due to limitations in metric names")
