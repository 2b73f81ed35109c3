"""Pure logic of elections and reassignment: election decisions, leader imbalance, KIP-455 replica sets,
the JSON of admin znodes and tool files, --generate's proposal and the tools' flag checks."""

from __future__ import annotations

import random

import pytest

from odradek.admin_client.errors import CliError, UsageError
from odradek.cli import leader_election, preferred_replica_election, reassign_partitions
from odradek.cluster.elections import (
    PartitionView,
    ReplicaAssignment,
    election_json,
    imbalance,
    imbalance_ratios,
    offline_election,
    parse_election_json,
    parse_reassignment_json,
    parse_replica_log_dirs,
    parse_topics_json,
    preferred_election,
    reassignment_json,
    rebalance_candidates,
    unclean_election,
    validate_reassignment_entries,
    validate_target,
)
from odradek.protocol.errors import ErrorCode

TP = ("t", 0)


def test_preferred_election() -> None:
    assert preferred_election(TP, [1, 0], leader=0, isr=[0, 1], live={0, 1}).leader == 1
    assert preferred_election(TP, [1, 0], leader=1, isr=[0, 1], live={0, 1}).error == ErrorCode.ELECTION_NOT_NEEDED
    dead = preferred_election(TP, [1, 0], leader=0, isr=[0, 1], live={0})
    assert dead.error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE and "not alive" in (dead.message or "")
    lagging = preferred_election(TP, [1, 0], leader=0, isr=[0], live={0, 1})
    assert lagging.error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE and "ISR" in (lagging.message or "")
    assert preferred_election(TP, [], 0, [0], {0}).error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_offline_and_unclean_election() -> None:
    assert offline_election([0, 1, 2], isr=[2, 1], live={1, 2}, allow_unclean=False).leader == 1
    assert not offline_election([0, 1], isr=[0], live={1}, allow_unclean=False).elected
    unclean = offline_election([0, 1], isr=[0], live={1}, allow_unclean=True)
    assert unclean.leader == 1 and unclean.unclean
    assert unclean_election(TP, [0, 1], leader=0, isr=[0], live={0, 1}).error == ErrorCode.ELECTION_NOT_NEEDED
    chosen = unclean_election(TP, [0, 1], leader=-1, isr=[0], live={1})
    assert chosen.leader == 1 and chosen.unclean
    clean = unclean_election(TP, [0, 1, 2], leader=-1, isr=[2], live={1, 2})
    assert clean.leader == 2 and not clean.unclean
    none = unclean_election(TP, [0, 1], leader=-1, isr=[0], live={2})
    assert none.error == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE


def _views(leaders: list[int], replicas: list[list[int]], isr: list[int] | None = None) -> dict:
    return {("t", p): PartitionView(r, ld, isr if isr is not None else list(r))
            for p, (ld, r) in enumerate(zip(leaders, replicas, strict=True))}


def test_imbalance_ratio_and_candidates() -> None:
    replicas = [[0, 1], [1, 0], [0, 1], [1, 0]]
    views = _views([0, 0, 0, 0], replicas)
    assert imbalance(views) == {0: (0, 2), 1: (2, 2)}
    assert imbalance_ratios(views) == {0: 0.0, 1: 1.0}
    assert rebalance_candidates(views, {0, 1}, 10) == [("t", 1), ("t", 3)]
    assert rebalance_candidates(views, {0}, 10) == []  # preferred replica dead
    assert rebalance_candidates(_views([0, 0, 0, 0], replicas, isr=[0]), {0, 1}, 10) == []  # not in sync
    # 1 of 10 partitions off its preferred broker: 10% is not more than 10%
    ten = _views([1] + [0] * 9, [[0, 1]] * 10)
    assert rebalance_candidates(ten, {0, 1}, 10) == []
    assert rebalance_candidates(ten, {0, 1}, 5) == [("t", 0)]
    moving = {("t", 0): PartitionView([1, 0], 0, [0, 1], reassigning=True)}
    assert rebalance_candidates(moving, {0, 1}, 10) == []


def test_reassignment_replica_sets() -> None:
    start = ReplicaAssignment([0, 1])
    moving = start.reassign_to([1, 2])
    assert moving == ReplicaAssignment([1, 2, 0], [2], [0])
    assert moving.reassigning and moving.target == [1, 2] and moving.origin == [1, 0]
    assert moving.cancelled() == ReplicaAssignment([1, 0])
    # a new target replaces the ongoing reassignment, from the original replicas
    assert moving.reassign_to([1, 3]) == ReplicaAssignment([1, 3, 0], [3], [0])
    assert moving.reassign_to([0, 1]) == ReplicaAssignment([0, 1])
    grow = ReplicaAssignment([0]).reassign_to([0, 1, 2])
    assert grow == ReplicaAssignment([0, 1, 2], [1, 2], [])
    assert ReplicaAssignment([0, 1, 2]).reassign_to([0, 1]) == ReplicaAssignment([0, 1, 2], [], [2])


def test_validate_target() -> None:
    cur = ReplicaAssignment([0, 1])
    assert validate_target([1, 2], cur, {0, 1, 2}) is None
    assert validate_target(None, cur, {0, 1})[0] == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS  # type: ignore[index]
    assert validate_target(None, cur.reassign_to([1, 2]), {0, 1, 2}) is None
    assert validate_target([], cur, {0})[0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT  # type: ignore[index]
    assert validate_target([1, 1], cur, {1})[0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT  # type: ignore[index]
    dead = validate_target([1, 5], cur, {0, 1})
    assert dead is not None and "not alive" in dead[1]
    assert validate_target([1, 0], cur, {0, 1}) is None  # no new replica: liveness does not matter
    rf = validate_target([0, 1, 2], cur, {0, 1, 2}, allow_rf_change=False)
    assert rf is not None and rf[0] == ErrorCode.INVALID_REPLICATION_FACTOR


def test_election_json() -> None:
    data = election_json([("a", 0), ("b", 2)])
    assert data == {"version": 1, "partitions": [{"topic": "a", "partition": 0}, {"topic": "b", "partition": 2}]}
    assert parse_election_json(data) == [("a", 0), ("b", 2)]
    with pytest.raises(ValueError, match='missing "partitions"'):
        parse_election_json({"version": 1})
    with pytest.raises(ValueError, match="duplicate partitions: a-0"):
        parse_election_json({"partitions": [{"topic": "a", "partition": 0}, {"topic": "a", "partition": 0}]})
    with pytest.raises(ValueError, match="integer"):
        parse_election_json({"partitions": [{"topic": "a", "partition": "0"}]})


def test_reassignment_json() -> None:
    text = {"version": 1, "partitions": [{"topic": "t", "partition": 1, "replicas": [1, 2], "log_dirs": ["any", "any"]},
                                         {"topic": "t", "partition": 0, "replicas": [2, 3]}]}
    entries = parse_reassignment_json(text)
    assert entries == [(("t", 1), [1, 2]), (("t", 0), [2, 3])]
    assert reassignment_json(dict(entries)) == {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [2, 3], "log_dirs": ["any", "any"]},
        {"topic": "t", "partition": 1, "replicas": [1, 2], "log_dirs": ["any", "any"]}]}
    with pytest.raises(ValueError, match="Size of replicas list"):
        parse_reassignment_json({"partitions": [{"topic": "t", "partition": 0, "replicas": [1], "log_dirs": []}]})
    with pytest.raises(ValueError, match="Not supported version"):
        parse_reassignment_json({"version": 2, "partitions": []})
    moves = {"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "/d2"]},
                            {"topic": "u", "partition": 3, "replicas": [2]}]}
    assert parse_replica_log_dirs(moves) == {("t", 0, 2): "/d2"}
    assert parse_reassignment_json(moves) == [(("t", 0), [1, 2]), (("u", 3), [2])]
    with pytest.raises(ValueError, match="array of strings"):
        parse_replica_log_dirs({"partitions": [{"topic": "t", "partition": 0, "replicas": [1], "log_dirs": [1]}]})
    with pytest.raises(ValueError, match="cannot be empty"):
        validate_reassignment_entries([])
    with pytest.raises(ValueError, match="duplicate topic partitions: t-0"):
        validate_reassignment_entries([(("t", 0), [1]), (("t", 0), [2])])
    with pytest.raises(ValueError, match="t-0 contains multiple entries for 1"):
        validate_reassignment_entries([(("t", 0), [1, 1])])


def test_topics_json() -> None:
    assert parse_topics_json({"version": 1, "topics": [{"topic": "a"}, {"topic": "b"}]}) == ["a", "b"]
    with pytest.raises(ValueError, match="duplicate entries: a"):
        parse_topics_json({"topics": [{"topic": "a"}, {"topic": "a"}]})


def test_generate_proposal() -> None:
    current = {("t", 0): [0, 1], ("t", 1): [1, 0], ("t", 2): [0, 1], ("u", 0): [0]}
    proposed = reassign_partitions.propose(current, [1, 2, 3], rng=random.Random(7))
    assert set(proposed) == set(current)
    for tp, replicas in proposed.items():
        assert len(replicas) == len(current[tp]) and set(replicas) <= {1, 2, 3} and len(set(replicas)) == len(replicas)
    with pytest.raises(CliError, match="larger than available brokers"):
        reassign_partitions.propose(current, [3])
    assert reassign_partitions.parse_broker_list("0,1,2") == [0, 1, 2]
    with pytest.raises(CliError, match="duplicate entries: 1"):
        reassign_partitions.parse_broker_list("1,1")


def _opts(parser_mod, argv: list[str]):  # type: ignore[no-untyped-def]
    return parser_mod.build_parser().parse_args(argv)


def test_leader_election_flags() -> None:
    base = ["--bootstrap-server", "h:1", "--election-type", "preferred"]
    leader_election.validate(_opts(leader_election, [*base, "--all-topic-partitions"]))
    for argv, message in (
        (["--election-type", "preferred", "--all-topic-partitions"], "Missing required option(s): bootstrap-server"),
        ([*base], "One and only one of the following options is required"),
        ([*base, "--all-topic-partitions", "--topic", "t", "--partition", "0"], "One and only one"),
        ([*base, "--topic", "t"], "Missing required option(s): partition"),
        ([*base, "--path-to-json-file", "f", "--partition", "1"], "only allowed if topic is used"),
    ):
        with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
            leader_election.validate(_opts(leader_election, argv))
    with pytest.raises(UsageError, match="PREFERRED or UNCLEAN"):
        leader_election.election_type("random")
    assert leader_election.election_type("Unclean").name == "UNCLEAN"
    assert leader_election.java_exception("PREFERRED_LEADER_NOT_AVAILABLE", "m") == \
        "org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: m"


def test_preferred_replica_election_flags() -> None:
    with pytest.raises(UsageError, match="Exactly one of"):
        preferred_replica_election.validate(_opts(preferred_replica_election, []))
    with pytest.raises(UsageError, match="Exactly one of"):
        preferred_replica_election.validate(
            _opts(preferred_replica_election, ["--zookeeper", "z:1", "--bootstrap-server", "h:1"]))
    assert preferred_replica_election.scala_set([("t", 0), ("t", 1)]) == "Set(t-0, t-1)"


def test_reassign_partitions_flags() -> None:
    for argv, message in (
        (["--bootstrap-server", "h:1"], "exactly one action"),
        (["--bootstrap-server", "h:1", "--execute", "--verify", "--reassignment-json-file", "f"], "exactly one action"),
        (["--bootstrap-server", "h:1", "--execute"], r'Missing required argument "\[reassignment-json-file\]"'),
        (["--bootstrap-server", "h:1", "--generate", "--topics-to-move-json-file", "f"],
         r'Missing required argument "\[broker-list\]"'),
        (["--execute", "--reassignment-json-file", "f"], "Please specify --bootstrap-server"),
        (["--zookeeper", "z:1", "--cancel", "--reassignment-json-file", "f"], "--cancel requires"),
    ):
        with pytest.raises(UsageError, match=message):
            reassign_partitions.chosen_action(_opts(reassign_partitions, argv))
    assert reassign_partitions.chosen_action(_opts(reassign_partitions, ["--zookeeper", "z:1", "--list"])) == "list"
