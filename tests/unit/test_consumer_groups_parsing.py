"""`odradek consumer-groups` without a broker: flag checks, value parsers and table layouts."""

from __future__ import annotations

import pytest

from odradek.admin_client.errors import CliError, UsageError
from odradek.cli import consumer_groups as cg

BS = ["--bootstrap-server", "localhost:9092"]


def parse(*args: str) -> tuple[str, object]:
    opts = cg.build_parser().parse_args([*BS, *args])
    return cg.validate(opts), opts


@pytest.mark.parametrize(
    ("args", "action"),
    [
        (["--list"], "list"),
        (["--list", "--state"], "list"),
        (["--list", "--state", "stable,Empty"], "list"),
        (["--describe", "--group", "g"], "describe"),
        (["--describe", "--all-groups", "--members", "--verbose"], "describe"),
        (["--describe", "--group", "a", "--group", "b", "--state"], "describe"),
        (["--delete", "--group", "g"], "delete"),
        (["--delete-offsets", "--group", "g", "--topic", "t:0,1", "--topic", "u"], "delete-offsets"),
        (["--reset-offsets", "--group", "g", "--all-topics", "--to-earliest"], "reset-offsets"),
        (["--reset-offsets", "--group", "g", "--topic", "t", "--shift-by", "-3", "--execute"], "reset-offsets"),
        (["--reset-offsets", "--all-groups", "--topic", "t:1", "--to-offset", "5", "--dry-run", "--export"],
         "reset-offsets"),
        (["--reset-offsets", "--group", "g", "--topic", "t", "--by-duration", "P1DT2H3M4.5S"], "reset-offsets"),
        (["--reset-offsets", "--group", "g", "--from-file", "plan.csv"], "reset-offsets"),
    ],
)
def test_valid_combinations(args: list[str], action: str) -> None:
    assert parse(*args)[0] == action


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--list", "--delete"], "Command must include exactly one action"),
        (["--list", "--group", "g"], 'Option "[group]" can\'t be used with option "[list]"'),
        (["--describe", "--group", "g", "--all-groups"], 'Option "[group]" can\'t be used with option "[all-groups]"'),
        (["--describe", "--group", "g", "--topic", "t"], 'Option "[topic]" can\'t be used with option "[describe]"'),
        (["--describe", "--group", "g", "--state", "stable"], "does not take a value for [state]"),
        (["--describe", "--group", "g", "--offsets", "--members"], "takes at most one of these options"),
        (["--list", "--state", "happy"], "Invalid state list 'happy'. Valid states are: PreparingRebalance"),
        (["--delete", "--all-groups", "--execute"], 'Option "[execute]" can\'t be used with option "[delete]"'),
        (["--delete-offsets", "--group", "g"], "Option [delete-offsets] takes the following options"),
        (["--delete-offsets", "--group", "g", "--topic", "t:x"], "Invalid partition 'x'"),
        (["--reset-offsets", "--topic", "t", "--to-earliest"], "Option [reset-offsets] takes one of these options"),
        (["--reset-offsets", "--group", "g", "--topic", "t"], "requires one of the following scenarios"),
        (["--reset-offsets", "--group", "g", "--topic", "t", "--to-offset", "1", "--shift-by", "2"],
         'Option "[to-offset]" can\'t be used with option "[shift-by]"'),
        (["--reset-offsets", "--group", "g", "--topic", "t", "--all-topics", "--to-latest"], "[all-topics]"),
        (["--reset-offsets", "--group", "g", "--topic", "t", "--to-offset", "ten"], "--to-offset expects an integer"),
        (["--reset-offsets", "--group", "g", "--topic", "t:1:2", "--to-latest"], "Invalid topic arg 't:1:2'"),
        (["--reset-offsets", "--group", "g", "--topic", "t", "--by-duration", "5 minutes"], "cannot be parsed"),
        (["--list", "--timeout", "0"], "--timeout must be at least 1"),
    ],
)
def test_refused_combinations(args: list[str], message: str) -> None:
    with pytest.raises(UsageError) as info:
        parse(*args)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_main_reports_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cg.main([*BS, "--describe"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert cg.main(["--help"]) == 0
    assert "--reset-offsets" in capsys.readouterr().out


def test_parse_datetime() -> None:
    assert cg.parse_datetime("1970-01-01T00:00:01.500") == 1500
    assert cg.parse_datetime("2017-08-01T12:00:00.000") == 1501588800000
    assert cg.parse_datetime("2017-08-01T12:00:00.000Z") == 1501588800000
    assert cg.parse_datetime("2017-08-01T14:00:00.000+02:00") == 1501588800000
    assert cg.parse_datetime("2017-08-01T14:00:00.000+0200") == 1501588800000
    assert cg.parse_datetime("2017-08-01T10:00:00.000-02") == 1501588800000
    assert cg.parse_datetime("2017-08-01T12:00:00") == 1501588800000
    for bad in ("2017-08-01", "2017-13-01T00:00:00.000", "yesterday", "2017-08-01 12:00:00.000"):
        with pytest.raises(UsageError):
            cg.parse_datetime(bad)


def test_parse_duration() -> None:
    assert cg.parse_duration("PT5M") == 300_000
    assert cg.parse_duration("P1DT2H3M4S") == ((24 + 2) * 3600 + 3 * 60 + 4) * 1000
    assert cg.parse_duration("pt0.25s") == 250
    assert cg.parse_duration("P2D") == 2 * 86_400_000
    assert cg.parse_duration("-PT1H") == -3_600_000
    for bad in ("P", "PT", "5M", "P1H", "PT1D", ""):
        with pytest.raises(UsageError):
            cg.parse_duration(bad)


def test_topic_args_and_states() -> None:
    assert cg.parse_topic_arg("t") == ("t", None)
    assert cg.parse_topic_arg("t:0,2") == ("t", [0, 2])
    assert cg.parse_states("stable, EMPTY") == ["Stable", "Empty"]


def test_reset_plan() -> None:
    assert cg.parse_reset_plan("t,0,5\nt,1,7\n", ["g"]) == {"g": {("t", 0): 5, ("t", 1): 7}}
    assert cg.parse_reset_plan("g,t,0,5\nh,u,2,1\n", ["g", "h"]) == {"g": {("t", 0): 5}, "h": {("u", 2): 1}}
    with pytest.raises(CliError):
        cg.parse_reset_plan("t,zero,5\n", ["g"])
    results = {"g": {("t", 1): 7, ("t", 0): 5}}
    assert cg.reset_csv(results, with_group=False) == ["t,0,5", "t,1,7"]
    assert cg.parse_reset_plan("\n".join(cg.reset_csv(results, with_group=True)), ["g", "x"]) == results


def test_offsets_table_layout() -> None:
    rows = [
        cg.OffsetRow("group-with-a-long-name", "t", 0, 4, 10, "consumer-1", "/127.0.0.1", "client"),
        cg.OffsetRow("group-with-a-long-name", "t", 1, None, 10),
    ]
    lines = cg.offsets_table(rows)
    assert lines[0].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                                "CONSUMER-ID", "HOST", "CLIENT-ID"]
    assert lines[1].split() == ["group-with-a-long-name", "t", "0", "4", "10", "6", "consumer-1", "/127.0.0.1",
                                "client"]
    assert lines[2].split() == ["group-with-a-long-name", "t", "1", "-", "10", "-", "-", "-", "-"]
    assert lines[0].index("TOPIC") == lines[1].index(" t ") + 1 == len("group-with-a-long-name") + 1
    assert lines[0].index("LAG") == lines[1].index(" 6 ") + 1
    verbose = cg.offsets_table(rows, verbose=True)
    assert verbose[0].split()[3] == "LEADER-EPOCH"


def test_members_and_state_layout() -> None:
    rows = [cg.MemberRow("g", "m-1", "", "/10.0.0.1", "c", [("t", 2), ("t", 0), ("u", 1)]),
            cg.MemberRow("g", "m-2", "", "/10.0.0.2", "c", [])]
    lines = cg.members_table(rows, verbose=True)
    assert lines[0].split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"]
    assert lines[1].split() == ["g", "m-1", "/10.0.0.1", "c", "3", "t(0,2),u(1)"]
    assert lines[2].split() == ["g", "m-2", "/10.0.0.2", "c", "0", "-"]
    static = cg.members_table([cg.MemberRow("g", "m-1", "instance-1", "/h", "c", [])])
    assert "GROUP-INSTANCE-ID" in static[0] and "instance-1" in static[1]
    state = cg.state_table("g", "localhost:9092  (1)", "", "Empty", 0)
    assert state[1].split() == ["g", "localhost:9092", "(1)", "-", "Empty", "0"]
    assert state[0].index("ASSIGNMENT-STRATEGY") == state[1].index("-")
