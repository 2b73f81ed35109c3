"""The replay helpers themselves: both --describe layouts parse alike; localize changes values only."""

from __future__ import annotations

import pytest

from tests.guides.replay import DATA, guide_file, localize, parse_describe

OLD = "Topic:t\tPartitionCount:2\tReplicationFactor:2\tConfigs:\n\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,0\tIsr: 0,1\n" \
      "\tTopic: t\tPartition: 1\tLeader: -1\tReplicas: 0,1\tIsr: 0\n"
NEW = "Topic: t\tTopicId: AbC_dEf-123\tPartitionCount: 2\tReplicationFactor: 2\tConfigs: \n" \
      "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,0\tIsr: 0,1\n\tTopic: t\tPartition: 1\tLeader: none\tReplicas: 0,1\tIsr: 0\n"


def test_both_describe_layouts_parse_alike() -> None:
    old, new = parse_describe(OLD)["t"], parse_describe(NEW)["t"]
    assert old == new
    assert (new.partition_count, new.replication_factor, new.configs) == (2, 2, "")
    assert new.leaders() == {0: 1, 1: None} and new.partitions[0].isr == [0, 1]


def test_localize_rewrites_values_only() -> None:
    text = "# c\nbroker.id=0  \nlisteners=PLAINTEXT://:9092  #note\nreplica.lag.max.messages =4000\n"
    out = localize(text, {"listeners": "PLAINTEXT://:1234", "replica.lag.max.messages": "1"})
    assert out == "# c\nbroker.id=0  \nlisteners=PLAINTEXT://:1234  #note\nreplica.lag.max.messages =1\n"
    with pytest.raises(KeyError, match="port"):
        localize(text, {"port": "1"})


def test_every_data_file_names_its_guide() -> None:
    for path in sorted(DATA.iterdir()):
        assert guide_file(path.name).startswith("# Guide: "), path.name
