"""`odradek consumer-groups` against a real broker with real consumers (confluent-kafka): describe while a
consumer is active and after it left, list, state, members, offset resets (dry run and execute, then a
consumer resumes from the new offsets), refusals while the group is active, deletes, --help, bad flags and
an unreachable server.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.clients import unique_name
from tests.harness import NO_REBALANCE_DELAY, BrokerProcess, free_port, run_cli
from tests.waiting import wait_until

OFFSETS_HEADER = "GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID"
MESSAGES_PER_PARTITION = 10


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return NO_REBALANCE_DELAY


# --- helpers ----------------------------------------------------------------------------------


def create_topic(bootstrap: str, partitions: int) -> str:
    topic = unique_name("cg-t")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(20)
    return topic


def produce(bootstrap: str, topic: str, partitions: int, timestamps: list[int] | None = None) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for partition in range(partitions):
        for i in range(MESSAGES_PER_PARTITION):
            extra: dict[str, Any] = {"timestamp": timestamps[i]} if timestamps else {}
            producer.produce(topic, value=f"{partition}-{i}".encode(), partition=partition, **extra)
    assert producer.flush(20) == 0


def consumer(bootstrap: str, group: str, **extra: Any) -> Consumer:
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
            "client.id": "cg-tool-test"}
    conf.update(extra)
    return Consumer(conf)


def assigned_consumer(bootstrap: str, prefix: str) -> tuple[str, str, Consumer]:
    """A topic of 3 partitions holding records, and a consumer of a new group that has joined and owns them
    all: (topic, group, consumer)."""
    topic = create_topic(bootstrap, 3)
    produce(bootstrap, topic, 3)
    group = unique_name(prefix)
    c = consumer(bootstrap, group)
    c.subscribe([topic])

    def owns_all() -> bool:
        c.poll(0.1)  # the consumer joins inside poll()
        return len(c.assignment()) == 3

    wait_until(owns_all, 20, lambda: f"the consumer to own 3 partitions, not {c.assignment()}", interval=0)
    return topic, group, c


def first_offsets(bootstrap: str, group: str, topic: str, expected: int, timeout: float = 20) -> dict[int, int]:
    """Join `group`, read `expected` records of `topic` and return the first offset read per partition."""
    c = consumer(bootstrap, group)
    c.subscribe([topic])
    seen: dict[int, int] = {}
    got = 0
    deadline = time.monotonic() + timeout
    try:
        while got < expected and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None or m.error():
                continue
            got += 1
            seen.setdefault(m.partition(), m.offset())
    finally:
        c.close()
    assert got == expected, f"read {got} of {expected} records"
    return seen


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    c = consumer(bootstrap, group)
    try:
        tps = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
        return [tp.offset for tp in tps]
    finally:
        c.close()


def cg(broker: BrokerProcess, *args: str, ok: bool = True) -> Any:
    result = run_cli("consumer-groups", "--bootstrap-server", broker.bootstrap, *args, timeout=60)
    assert "Traceback" not in result.stderr, result.stderr
    if ok:
        assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result


def rows(stdout: str) -> list[list[str]]:
    return [line.split() for line in stdout.splitlines() if line.strip()]


def assert_aligned(stdout: str) -> None:
    """Every row's cells start where the header's columns start."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    header = lines[0]
    # "COORDINATOR (ID)" is one column with a blank inside; all other headers are single words
    starts = [i for i, ch in enumerate(header) if ch not in " (" and (i == 0 or header[i - 1] == " ")]
    for line in lines[1:]:
        for start in starts[1:]:
            if start < len(line):
                assert line[start - 1] == " " and line[start] != " ", (header, line)


def by_partition(stdout: str, group: str) -> dict[int, list[str]]:
    table = rows(stdout)
    assert " ".join(table[0]) == OFFSETS_HEADER
    return {int(r[2]): r for r in table[1:] if r[0] == group}


# --- flags, help, unreachable ------------------------------------------------------------------


def test_help_and_tool_table() -> None:
    result = run_cli("consumer-groups", "--help")
    assert result.returncode == 0
    for flag in ("--bootstrap-server", "--list", "--describe", "--delete", "--reset-offsets", "--delete-offsets",
                 "--to-datetime", "--by-duration", "--shift-by", "--dry-run", "--execute", "--members"):
        assert flag in result.stdout
    top = run_cli("--help")
    assert "consumer-groups" in top.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], 'Missing required argument "[bootstrap-server]"'),
        (["--bootstrap-server", "x:1"], "Command must include exactly one action"),
        (["--bootstrap-server", "x:1", "--list", "--describe"], "Command must include exactly one action"),
        (["--bootstrap-server", "x:1", "--describe"], "Option [describe] takes one of these options"),
        (["--bootstrap-server", "x:1", "--describe", "--group", "g", "--members", "--state"], "at most one"),
        (["--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--topic", "t", "--to-earliest",
          "--dry-run", "--execute"], "only accepts one of [execute] and [dry-run]"),
        (["--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--to-earliest"],
         "One of the reset scopes should be defined"),
        (["--bootstrap-server", "x:1", "--reset-offsets", "--group", "g", "--topic", "t", "--to-datetime", "yesterday"],
         "Unparseable date"),
        (["--bootstrap-server", "x:1", "--delete", "--group", "g", "--topic", "t"], "topic-specific offset deletion"),
        (["--bootstrap-server", "x:1", "--list", "--members"], "unavailable given other options"),
        (["--bootstrap-server", "x:1", "--frobnicate"], "--frobnicate is not a recognized option"),
    ],
)
def test_bad_flags_one_line(args: list[str], message: str) -> None:
    result = run_cli("consumer-groups", *args)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr


def test_unreachable_server() -> None:
    start = time.monotonic()
    result = run_cli("consumer-groups", "--bootstrap-server", f"127.0.0.1:{free_port()}", "--list",
                     "--timeout", "2000")
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "could not reach" in result.stderr
    assert time.monotonic() - start < 20


# --- a group with a live consumer, then without ------------------------------------------------


def test_describe_list_state_members_and_refusals_while_active(broker: BrokerProcess) -> None:
    topic, group, c = assigned_consumer(broker.bootstrap, "cg-live")
    try:
        c.commit(offsets=[TopicPartition(topic, 0, 4), TopicPartition(topic, 1, 10)], asynchronous=False)
        member_id = c.memberid()

        described = cg(broker, "--describe", "--group", group)
        assert_aligned(described.stdout)
        parts = by_partition(described.stdout, group)
        assert sorted(parts) == [0, 1, 2]
        assert parts[0][3:6] == ["4", "10", "6"]
        assert parts[1][3:6] == ["10", "10", "0"]
        assert parts[2][3:6] == ["-", "10", "-"]  # assigned, never committed
        for r in parts.values():
            assert r[6:] == [member_id, "/127.0.0.1", "cg-tool-test"]
        assert "no active members" not in described.stderr

        offsets = cg(broker, "--describe", "--group", group, "--offsets")
        assert by_partition(offsets.stdout, group) == parts

        members = cg(broker, "--describe", "--group", group, "--members")
        table = rows(members.stdout)
        assert " ".join(table[0]) == "GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS"
        assert table[1:] == [[group, member_id, "/127.0.0.1", "cg-tool-test", "3"]]
        verbose = cg(broker, "--describe", "--group", group, "--members", "--verbose")
        table = rows(verbose.stdout)
        assert table[0][-1] == "ASSIGNMENT" and table[1][-1] == f"{topic}(0,1,2)"

        state = cg(broker, "--describe", "--group", group, "--state")
        lines = [line for line in state.stdout.splitlines() if line.strip()]
        assert lines[0].split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
        assert lines[1].split() == [group, broker.bootstrap, "(0)", "range", "Stable", "1"]
        assert_aligned(state.stdout)

        listed = cg(broker, "--list")
        assert group in listed.stdout.split()
        with_state = cg(broker, "--list", "--state")
        assert rows(with_state.stdout)[0] == ["GROUP", "STATE"] and [group, "Stable"] in rows(with_state.stdout)
        assert [group, "Stable"] in rows(cg(broker, "--list", "--state", "stable").stdout)
        assert group not in cg(broker, "--list", "--state", "Empty,Dead").stdout

        refused = cg(broker, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute",
                     ok=False)
        assert refused.returncode == 1
        assert (f"Error: Assignments can only be reset if the group '{group}' is inactive, "
                "but the current state is Stable.") in refused.stderr
        not_deleted = cg(broker, "--delete", "--group", group, ok=False)
        assert not_deleted.returncode == 1
        assert "Error: Deletion of some consumer groups failed:" in not_deleted.stderr
        assert f"* Group '{group}' could not be deleted due to: NON_EMPTY_GROUP" in not_deleted.stderr
        subscribed = cg(broker, "--delete-offsets", "--group", group, "--topic", topic, ok=False)
        assert subscribed.returncode == 1
        assert "partition-level error" in subscribed.stderr
        assert "actively subscribed" in subscribed.stdout
        assert committed(broker.bootstrap, group, topic, 3)[:2] == [4, 10]
    finally:
        c.close()

    # The consumer left: no active members, committed offsets only, lag = end - committed.
    after = cg(broker, "--describe", "--group", group)
    assert f"Consumer group '{group}' has no active members." in after.stderr
    parts = by_partition(after.stdout, group)
    assert parts == {0: [group, topic, "0", "4", "10", "6", "-", "-", "-"],
                     1: [group, topic, "1", "10", "10", "0", "-", "-", "-"]}
    empty_state = cg(broker, "--describe", "--group", group, "--state")
    assert rows(empty_state.stdout)[1][-2:] == ["Empty", "0"]
    assert [group, "Empty"] in rows(cg(broker, "--list", "--state", "empty").stdout)

    deleted_offsets = cg(broker, "--delete-offsets", "--group", group, "--topic", f"{topic}:1")
    assert f"Request succeeded for deleting offsets from group {group}." in deleted_offsets.stdout
    assert [topic, "1", "Successful"] in rows(deleted_offsets.stdout)
    assert sorted(by_partition(cg(broker, "--describe", "--group", group).stdout, group)) == [0]

    deleted = cg(broker, "--delete", "--group", group)
    assert f"Deletion of requested consumer groups ('{group}') was successful." in deleted.stdout
    gone = cg(broker, "--describe", "--group", group)
    assert f"Error: Consumer group '{group}' does not exist." in gone.stderr
    assert group not in cg(broker, "--list").stdout.split()


# --- offset resets -------------------------------------------------------------------------------


def reset_rows(stdout: str) -> dict[tuple[str, int], int]:
    table = rows(stdout)
    assert table[0] == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    return {(r[1], int(r[2])): int(r[3]) for r in table[1:]}


def test_reset_offsets_dry_run_execute_and_resume(broker: BrokerProcess) -> None:
    topic, group, c = assigned_consumer(broker.bootstrap, "cg-reset")
    c.commit(offsets=[TopicPartition(topic, p, 6) for p in range(3)], asynchronous=False)
    c.close()

    # --to-earliest, neither --dry-run nor --execute: Kafka's warning, a dry run
    dry = cg(broker, "--reset-offsets", "--group", group, "--all-topics", "--to-earliest")
    assert "WARN: No action will be performed as the --execute option is missing." in dry.stderr
    assert reset_rows(dry.stdout) == {(topic, p): 0 for p in range(3)}
    assert committed(broker.bootstrap, group, topic, 3) == [6, 6, 6]

    # --shift-by is relative to the committed offset and clamped to the log end
    shifted = cg(broker, "--reset-offsets", "--group", group, "--topic", f"{topic}:0,2", "--shift-by", "-2",
                 "--dry-run")
    assert reset_rows(shifted.stdout) == {(topic, 0): 4, (topic, 2): 4}
    clamped = cg(broker, "--reset-offsets", "--group", group, "--topic", topic, "--shift-by", "100", "--dry-run")
    assert reset_rows(clamped.stdout) == {(topic, p): 10 for p in range(3)}
    below = cg(broker, "--reset-offsets", "--group", group, "--topic", topic, "--to-offset", "-5", "--dry-run")
    assert reset_rows(below.stdout) == {(topic, p): 0 for p in range(3)}
    exported = cg(broker, "--reset-offsets", "--group", group, "--topic", f"{topic}:1", "--to-latest", "--dry-run",
                  "--export")
    assert exported.stdout.split() == [f"{topic},1,10"]
    assert committed(broker.bootstrap, group, topic, 3) == [6, 6, 6]

    # --execute commits; a consumer of the group then resumes from there
    executed = cg(broker, "--reset-offsets", "--group", group, "--topic", topic, "--to-offset", "7", "--execute")
    assert "WARN" not in executed.stderr
    assert reset_rows(executed.stdout) == {(topic, p): 7 for p in range(3)}
    assert committed(broker.bootstrap, group, topic, 3) == [7, 7, 7]
    shift = cg(broker, "--reset-offsets", "--group", group, "--topic", f"{topic}:0", "--shift-by", "-5", "--execute")
    assert reset_rows(shift.stdout) == {(topic, 0): 2}
    assert first_offsets(broker.bootstrap, group, topic, 8 + 3 + 3) == {0: 2, 1: 7, 2: 7}

    earliest = cg(broker, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
    assert reset_rows(earliest.stdout) == {(topic, p): 0 for p in range(3)}
    assert first_offsets(broker.bootstrap, group, topic, 30) == {0: 0, 1: 0, 2: 0}

    missing = cg(broker, "--reset-offsets", "--group", group, "--topic", f"{topic}:7", "--to-earliest",
                 "--dry-run", ok=False)
    assert missing.returncode == 1 and f'"{topic}-7" do not exist' in missing.stderr


def _utc_text(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]


def test_reset_by_time(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, 1)
    hour = 3_600_000
    now = int(time.time() * 1000)
    stamps = [now - (10 - i) * hour for i in range(MESSAGES_PER_PARTITION)]  # 10 h ago ... 1 h ago
    produce(broker.bootstrap, topic, 1, timestamps=stamps)
    group = unique_name("cg-time")

    # a group that does not exist yet can be given offsets (Kafka: Dead groups are inactive)
    at = cg(broker, "--reset-offsets", "--group", group, "--topic", topic, "--to-datetime", _utc_text(stamps[3]),
            "--dry-run")
    assert reset_rows(at.stdout) == {(topic, 0): 3}
    between = cg(broker, "--reset-offsets", "--group", group, "--topic", topic,
                 "--to-datetime", _utc_text(stamps[3] + 1), "--dry-run")
    assert reset_rows(between.stdout) == {(topic, 0): 4}
    future = cg(broker, "--reset-offsets", "--group", group, "--topic", topic,
                "--to-datetime", _utc_text(now + hour), "--dry-run")
    assert reset_rows(future.stdout) == {(topic, 0): 10}
    assert "Falling back to latest known offset" in future.stderr

    executed = cg(broker, "--reset-offsets", "--group", group, "--topic", topic,
                  "--to-datetime", _utc_text(stamps[6]), "--execute")
    assert reset_rows(executed.stdout) == {(topic, 0): 6}
    assert first_offsets(broker.bootstrap, group, topic, 4) == {0: 6}

    duration = cg(broker, "--reset-offsets", "--group", group, "--topic", topic, "--by-duration", "PT5H30M",
                  "--execute")
    assert reset_rows(duration.stdout) == {(topic, 0): 5}
    assert committed(broker.bootstrap, group, topic, 1) == [5]
    days = cg(broker, "--reset-offsets", "--group", group, "--topic", topic, "--by-duration", "P1DT0H0M0S",
              "--dry-run")
    assert reset_rows(days.stdout) == {(topic, 0): 0}


def test_command_config_and_all_groups(broker: BrokerProcess, tmp_path: Any) -> None:
    topic = create_topic(broker.bootstrap, 1)
    produce(broker.bootstrap, topic, 1)
    groups = sorted(unique_name("cg-all") for _ in range(2))
    for group in groups:
        cg(broker, "--reset-offsets", "--group", group, "--topic", topic, "--to-offset", "3", "--execute")
    config = tmp_path / "admin.properties"
    config.write_text("client.id=cg-tool-admin\nkey.deserializer=org.example.Ignored\n")
    listed = cg(broker, "--list", "--command-config", str(config))
    assert set(groups) <= set(listed.stdout.split())
    described = cg(broker, "--describe", "--all-groups", "--command-config", str(config))
    table = rows(described.stdout)
    for group in groups:
        assert [group, topic, "0", "3", "10", "7", "-", "-", "-"] in table
    exported = cg(broker, "--reset-offsets", "--group", groups[0], "--group", groups[1], "--topic", topic,
                  "--to-latest", "--dry-run", "--export")
    assert exported.stdout.split() == [f"{g},{topic},0,10" for g in groups]
    plan = tmp_path / "plan.csv"
    plan.write_text(f"{groups[0]},{topic},0,5\n{groups[1]},{topic},0,50\n")
    from_file = cg(broker, "--reset-offsets", "--group", groups[0], "--group", groups[1], "--from-file", str(plan),
                   "--execute")
    assert rows(from_file.stdout)[1:] == [[groups[0], topic, "0", "5"], [groups[1], topic, "0", "10"]]  # clamped
    assert committed(broker.bootstrap, groups[0], topic, 1) == [5]
    assert committed(broker.bootstrap, groups[1], topic, 1) == [10]
    deleted = cg(broker, "--delete", "--group", groups[0], "--group", groups[1])
    assert f"('{groups[0]}', '{groups[1]}')" in deleted.stdout
