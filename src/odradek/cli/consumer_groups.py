"""`odradek consumer-groups`: list, describe and delete consumer groups, and reset or delete their
committed offsets, like Kafka's kafka-consumer-groups.sh (ConsumerGroupCommand).

Flags, messages and table layouts follow Kafka's tool. Everything goes through confluent-kafka's
AdminClient (ListGroups, DescribeGroups, OffsetFetch, OffsetCommit, DeleteGroups, ListOffsets) with
bounded timeouts, except `--delete-offsets`: librdkafka's Python binding has no call for OffsetDelete,
so that one request is sent to the group's coordinator over a plain socket
(:mod:`odradek.cli.broker_connection`). Failures are one line on stderr and a non-zero exit code.

Exit codes: 0 on success (also when `--describe` finds a group that does not exist: Kafka reports that
and exits 0); 1 for bad flags, an unreachable cluster, a refused reset, a failed deletion or any other
error.
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from odradek.admin_client.command import ArgParser, parse_int, run_tool
from odradek.admin_client.connect import add_bootstrap_flags, bootstrap_of, open_client, read_properties_file
from odradek.admin_client.errors import ERROR_MESSAGES, CliError, UsageError, error_text, kafka_message
from odradek.admin_client.model import STATES, state_name
from odradek.admin_client.offsets import list_offsets
from odradek.cli.common import one_action

TP = tuple[str, int]

DEFAULT_TIMEOUT_MS = 5000
MISSING = "-"
ACTIONS = ("list", "describe", "delete", "reset-offsets", "delete-offsets")
SCENARIOS = ("to-offset", "shift-by", "to-datetime", "by-duration", "to-earliest", "to-latest", "to-current",
             "from-file")
RESET_ONLY = ("dry-run", "execute", "export", "all-topics", *SCENARIOS)
DESCRIBE_ONLY = ("members", "verbose", "offsets")

# Kafka's group types (GroupType's names, as its tool prints them) and librdkafka's enum for each.
TYPES: dict[str, ConsumerGroupType] = {"Classic": ConsumerGroupType.CLASSIC, "Consumer": ConsumerGroupType.CONSUMER}
TYPE_NAMES: dict[ConsumerGroupType, str] = {v: k for k, v in TYPES.items()}
REBALANCING = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")

DRY_RUN_WARNING = (
    "WARN: No action will be performed as the --execute option is missing."
    "In a future major release, the default behavior of this command will be to prompt the user before "
    "executing the reset rather than doing a dry run. You should add the --dry-run option explicitly "
    "if you are scripting this command and want to keep the current default behavior without prompting."
)

ERROR_NAMES = {3: "UNKNOWN_TOPIC_OR_PARTITION", 24: "INVALID_GROUP_ID", 30: "GROUP_AUTHORIZATION_FAILED",
               68: "NON_EMPTY_GROUP", 69: "GROUP_ID_NOT_FOUND", 86: "GROUP_SUBSCRIBED_TO_TOPIC"}


class CommandFailed(CliError):
    """A failure while executing the command, worded like Kafka's ConsumerGroupCommand."""

    def __init__(self, message: str) -> None:
        super().__init__(f"Error: Executing consumer group command failed due to {message}")


# --- flags ------------------------------------------------------------------------------------


def build_parser() -> ArgParser:
    parser = ArgParser(
        "consumer-groups",
        "This tool helps to list all consumer groups, describe a consumer group, delete consumer group info, "
        "or reset consumer group offsets.",
        epilog="Exactly one action is required: --list, --describe, --delete, --reset-offsets or --delete-offsets.",
    )
    add_bootstrap_flags(parser)
    parser.add_argument("--command-config", metavar="FILE",
                        help="property file containing configs to be passed to the admin client")
    parser.add_argument("--timeout", metavar="MS", default=str(DEFAULT_TIMEOUT_MS),
                        help=f"timeout of each request to the cluster (default {DEFAULT_TIMEOUT_MS})")
    actions = parser.add_argument_group("actions")
    actions.add_argument("--list", action="store_true", help="list all consumer groups")
    actions.add_argument("--describe", action="store_true",
                         help="describe consumer groups and list offset lag (messages not yet processed)")
    actions.add_argument("--delete", action="store_true", help="delete consumer groups with their offsets")
    actions.add_argument("--reset-offsets", action="store_true",
                         help="reset offsets of inactive consumer groups: --dry-run (default) or --execute")
    actions.add_argument("--delete-offsets", action="store_true",
                         help="delete offsets of one consumer group for the given topics")
    scope = parser.add_argument_group("scope")
    scope.add_argument("--group", action="append", metavar="GROUP", help="a consumer group (repeatable)")
    scope.add_argument("--all-groups", action="store_true", help="apply to all consumer groups")
    scope.add_argument("--topic", action="append", metavar="TOPIC[:P,P]",
                       help="a topic, with --reset-offsets and --delete-offsets optionally limited to partitions")
    scope.add_argument("--all-topics", action="store_true",
                       help="with --reset-offsets: all topics the group has committed offsets for")
    describe = parser.add_argument_group("describe")
    describe.add_argument("--offsets", action="store_true", help="partitions with offsets and lag (default)")
    describe.add_argument("--members", action="store_true", help="the members of the group")
    describe.add_argument("--verbose", action="store_true", help="more detail (assignments, leader epochs)")
    describe.add_argument("--type", nargs="?", const="", metavar="TYPES",
                          help="with --list: show the group types (classic, consumer), or only groups of these "
                               "comma-separated types")
    describe.add_argument("--state", nargs="?", const="", metavar="STATES",
                          help="with --describe: the group's state; with --list: show states, or only "
                               "groups in these comma-separated states")
    reset = parser.add_argument_group("reset-offsets")
    reset.add_argument("--dry-run", action="store_true", help="only show the new offsets (the default)")
    reset.add_argument("--execute", action="store_true", help="commit the new offsets")
    reset.add_argument("--export", action="store_true", help="print the new offsets as CSV")
    reset.add_argument("--to-offset", metavar="N", help="to offset N (within the log's range)")
    reset.add_argument("--shift-by", metavar="N", help="the committed offset plus N (N may be negative)")
    reset.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss",
                       help="to the first offset at or after this time (UTC unless a zone is given)")
    reset.add_argument("--by-duration", metavar="PnDTnHnMnS", help="to the first offset at or after now - duration")
    reset.add_argument("--to-earliest", action="store_true", help="to the log start offset")
    reset.add_argument("--to-latest", action="store_true", help="to the log end offset")
    reset.add_argument("--to-current", action="store_true", help="to the committed offset (log end if none)")
    reset.add_argument("--from-file", metavar="CSV", help="to the offsets of a CSV file written by --export")
    return parser


def _has(opts: argparse.Namespace, flag: str) -> bool:
    value = getattr(opts, flag.replace("-", "_"))
    return value is not None and value is not False


def parse_args(argv: list[str]) -> argparse.Namespace:
    opts = build_parser().parse_args(argv)
    validate(opts)
    return opts


def chosen_action(opts: argparse.Namespace) -> str:
    return one_action(opts, ACTIONS, "Error: Command must include exactly one action: "
                      + ", ".join(f"--{a}" for a in ACTIONS))


def _cannot_combine(used: str, other: str) -> UsageError:
    return UsageError(f'Error: Option "[{used}]" can\'t be used with option "[{other}]"')


def validate(opts: argparse.Namespace) -> str:
    """Kafka's checks of the flag combination, each failing with one line; returns the action."""
    bootstrap_of(opts)
    action = chosen_action(opts)
    opts.timeout_ms = parse_int(opts.timeout, "--timeout", minimum=1)
    unavailable = [f for f in DESCRIBE_ONLY if _has(opts, f) and action != "describe"]
    if opts.state is not None and action not in ("describe", "list"):
        unavailable.append("state")
    if opts.type is not None and action != "list":
        unavailable.append("type")
    if unavailable:
        raise UsageError(f"Error: Option(s) [{', '.join(unavailable)}] are unavailable given other options "
                         "on the command line")
    for flag in RESET_ONLY:
        if _has(opts, flag) and action != "reset-offsets":
            raise _cannot_combine(flag, action)
    if opts.group and opts.all_groups:
        raise _cannot_combine("group", "all-groups")
    if opts.group and action == "list":
        raise _cannot_combine("group", "list")
    if opts.all_groups and action in ("list", "delete-offsets"):
        raise _cannot_combine("all-groups", action)
    if opts.topic and action in ("list", "describe"):
        raise _cannot_combine("topic", action)
    scope = "[group], [all-groups]"
    if action == "describe":
        if not (opts.group or opts.all_groups):
            raise UsageError(f"Error: Option [describe] takes one of these options: {scope}")
        if sum(_has(opts, f) for f in ("members", "offsets", "state")) > 1:
            raise UsageError("Error: Option [describe] takes at most one of these options: [members], [offsets], [state]")
        if opts.state:
            raise UsageError("Error: Option [describe] does not take a value for [state]")
    elif action == "list":
        if opts.state:
            parse_states(opts.state)
        if opts.type:
            parse_types(opts.type)
    elif action == "delete":
        if not (opts.group or opts.all_groups):
            raise UsageError(f"Error: Option [delete] takes one of these options: {scope}")
        if opts.topic:
            raise UsageError("Error: The consumer does not support topic-specific offset deletion from a consumer group.")
    elif action == "delete-offsets":
        if not (opts.group and opts.topic):
            raise UsageError("Error: Option [delete-offsets] takes the following options: [group], [topic]")
        if len(opts.group) > 1:
            raise UsageError("Error: Option [delete-offsets] supports one consumer group at a time")
        for arg in opts.topic:
            parse_topic_arg(arg)
    elif action == "reset-offsets":
        _validate_reset(opts, scope)
    return action


def _validate_reset(opts: argparse.Namespace, scope: str) -> None:
    if opts.dry_run and opts.execute:
        raise UsageError("Error: Option [reset-offsets] only accepts one of [execute] and [dry-run]")
    if not (opts.group or opts.all_groups):
        raise UsageError(f"Error: Option [reset-offsets] takes one of these options: {scope}")
    chosen = [s for s in SCENARIOS if _has(opts, s)]
    if len(chosen) > 1:
        raise _cannot_combine(chosen[0], chosen[1])
    if not chosen:
        raise UsageError("Error: Option [reset-offsets] requires one of the following scenarios: "
                         + ", ".join(f"[{s}]" for s in SCENARIOS))
    if opts.topic and opts.all_topics:
        raise _cannot_combine("all-topics", "topic")
    if not (opts.topic or opts.all_topics or opts.from_file):
        raise UsageError("Error: One of the reset scopes should be defined: --all-topics, --topic.")
    for arg in opts.topic or ():
        parse_topic_arg(arg)
    if opts.to_offset is not None:
        opts.to_offset = parse_int(opts.to_offset, "--to-offset")
    if opts.shift_by is not None:
        opts.shift_by = parse_int(opts.shift_by, "--shift-by")
    if opts.to_datetime is not None:
        parse_datetime(opts.to_datetime)
    if opts.by_duration is not None:
        parse_duration(opts.by_duration)


# --- values -----------------------------------------------------------------------------------


def parse_states(text: str) -> list[str]:
    """'stable,EMPTY' -> ['Stable', 'Empty']; unknown names are refused with Kafka's message."""
    return _parse_names(text, STATES, "state", ", ".join(STATES))


def parse_types(text: str) -> list[str]:
    """'consumer,CLASSIC' -> ['Consumer', 'Classic'] (Kafka's names, any case)."""
    return _parse_names(text, TYPES, "type", ", ".join(n.lower() for n in TYPES))


def _parse_names(text: str, known: Iterable[str], kind: str, valid: str) -> list[str]:
    """Comma-separated names of `known` in any case, as Kafka spells them; an unknown one is refused with
    Kafka's message, which lists `valid`."""
    by_lower = {name.lower(): name for name in known}
    names = []
    for item in text.split(","):
        name = by_lower.get(item.strip().lower())
        if name is None:
            raise UsageError(f"Error: Invalid {kind} list '{text}'. Valid {kind}s are: {valid}")
        names.append(name)
    return names


def parse_topic_arg(arg: str) -> tuple[str, list[int] | None]:
    """'t' -> ('t', None); 't:0,2' -> ('t', [0, 2]) (Kafka's --topic syntax)."""
    if ":" not in arg:
        if not arg:
            raise UsageError("Error: Invalid topic arg '', expected a topic name")
        return arg, None
    parts = arg.split(":")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        raise UsageError(f"Error: Invalid topic arg '{arg}', expected topic name and partitions")
    partitions = []
    for item in parts[1].split(","):
        try:
            number = int(item)
        except ValueError:
            raise UsageError(f"Error: Invalid partition '{item}' specified in topic arg '{arg}'") from None
        if number < 0:
            raise UsageError(f"Error: Invalid partition '{item}' specified in topic arg '{arg}'")
        partitions.append(number)
    return parts[0], partitions


_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?(Z|[+-]\d{2}(?::?\d{2})?)?"
)


def parse_datetime(text: str) -> int:
    """Kafka's --to-datetime ('YYYY-MM-DDTHH:mm:SS.sss', optional zone Z/+hh/+hhmm/+hh:mm; UTC without
    one) -> epoch milliseconds."""
    match = _DATETIME.fullmatch(text.strip())
    bad = UsageError(f"Error: Unparseable date: \"{text}\" (expected YYYY-MM-DDTHH:mm:SS.sss, "
                     "optionally followed by Z or a zone offset such as +01:00)")
    if match is None:
        raise bad
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    millis = int((match.group(7) or "0").ljust(3, "0"))
    zone = match.group(8) or "Z"
    offset = timedelta(0)
    if zone != "Z":
        digits = zone[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
        if zone[0] == "-":
            offset = -offset
    try:
        when = datetime(year, month, day, hour, minute, second, millis * 1000, tzinfo=timezone(offset))
    except ValueError:
        raise bad from None
    return int(when.timestamp() * 1000)


_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_duration(text: str) -> int:
    """Java's Duration syntax as Kafka's --by-duration takes it ('PnDTnHnMnS') -> milliseconds."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or all(g is None for g in match.groups()[1:5]) or re.search(r"T$", text.strip(), re.I):
        raise UsageError(f"Error: Text cannot be parsed to a Duration: '{text}' (expected PnDTnHnMnS)")
    sign, days, hours, minutes, seconds, fraction = match.groups()
    total = timedelta(days=int(days or 0), hours=int(hours or 0), minutes=int(minutes or 0),
                      seconds=int(seconds or 0))
    if fraction:
        nanos = int(fraction.ljust(9, "0"))
        total += timedelta(microseconds=nanos // 1000) * (-1 if (seconds or "").startswith("-") else 1)
    millis = int(total / timedelta(milliseconds=1))
    return -millis if sign == "-" else millis


def parse_reset_plan(text: str, groups: Sequence[str]) -> dict[str, dict[TP, int]]:
    """A CSV reset plan as --export writes it: 'topic,partition,offset' (one --group) or
    'group,topic,partition,offset'."""
    plan: dict[str, dict[TP, int]] = {}
    for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or not "".join(row).strip():
            continue
        fields = [f.strip() for f in row]
        try:
            if len(fields) == 3 and len(groups) == 1:
                group, (topic, partition, offset) = groups[0], fields
            elif len(fields) == 4:
                group, topic, partition, offset = fields
            else:
                raise ValueError
            plan.setdefault(group, {})[(topic, int(partition))] = int(offset)
        except ValueError:
            raise CliError(f"Error: invalid reset plan line {number}: '{','.join(row)}'") from None
    return plan


def type_name(listing: Any) -> str:
    """Kafka's name of a group's type ('Classic', 'Consumer'); 'Unknown' when the broker did not say."""
    return TYPE_NAMES.get(getattr(listing, "type", None), "Unknown")  # type: ignore[arg-type]


def tp_text(tp: TP) -> str:
    return f"{tp[0]}-{tp[1]}"


# --- layout -----------------------------------------------------------------------------------


def table_line(widths: Sequence[int], values: Sequence[Any]) -> str:
    """Java's '%-Ns %-Ns ... %s': each value but the last left-aligned in its width."""
    cells = [str(v).ljust(w) for w, v in zip(widths, values, strict=False)]
    cells += [str(v) for v in values[len(widths):]]
    return " ".join(cells).rstrip()


@dataclass
class OffsetRow:
    """One line of --describe --offsets."""

    group: str
    topic: str
    partition: int
    offset: int | None
    log_end: int | None
    consumer_id: str = MISSING
    host: str = MISSING
    client_id: str = MISSING
    leader_epoch: int | None = None

    @property
    def lag(self) -> int | None:
        if self.offset is None or self.offset < 0 or self.log_end is None:
            return None
        return self.log_end - self.offset


def _shown(value: int | None) -> str:
    return MISSING if value is None else str(value)


def offsets_table(rows: Sequence[OffsetRow], verbose: bool = False) -> list[str]:
    group_w = max([15] + [len(r.group) for r in rows])
    topic_w = max([15] + [len(r.topic) for r in rows])
    consumer_w = max([15] + [len(r.consumer_id) for r in rows])
    host_w = max([15] + [len(r.host) for r in rows])
    head: list[Any] = ["GROUP", "TOPIC", "PARTITION"]
    widths = [group_w, topic_w, 10]
    if verbose:
        head.append("LEADER-EPOCH")
        widths.append(15)
    head += ["CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
    widths += [15, 15, 15, consumer_w, host_w]
    lines = [table_line(widths, head)]
    for r in rows:
        values: list[Any] = [r.group, r.topic, r.partition]
        if verbose:
            values.append(_shown(r.leader_epoch))
        values += [_shown(r.offset), _shown(r.log_end), _shown(r.lag), r.consumer_id, r.host, r.client_id]
        lines.append(table_line(widths, values))
    return lines


@dataclass
class MemberRow:
    """One line of --describe --members."""

    group: str
    consumer_id: str
    group_instance_id: str
    host: str
    client_id: str
    assignment: list[TP]
    # consumer groups (KIP-848) only, shown with --verbose
    current_epoch: int | None = None
    target_epoch: int | None = None
    target: list[TP] | None = None


def assignment_text(assignment: Iterable[TP]) -> str:
    """[('t', 1), ('t', 0), ('u', 2)] -> 't(0,1),u(2)'; '-' when empty."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in assignment:
        by_topic.setdefault(topic, []).append(partition)
    if not by_topic:
        return MISSING
    return ",".join(f"{t}({','.join(map(str, sorted(ps)))})" for t, ps in sorted(by_topic.items()))


def members_table(rows: Sequence[MemberRow], verbose: bool = False) -> list[str]:
    with_instance = any(r.group_instance_id for r in rows)
    head = ["GROUP", "CONSUMER-ID"] + (["GROUP-INSTANCE-ID"] if with_instance else []) + [
        "HOST", "CLIENT-ID", "#PARTITIONS"]
    widths = [max([15] + [len(r.group) for r in rows]), max([15] + [len(r.consumer_id) for r in rows])]
    if with_instance:
        widths.append(max([17] + [len(r.group_instance_id) for r in rows]))
    widths += [max([15] + [len(r.host) for r in rows]), max([15] + [len(r.client_id) for r in rows]), 15]
    modern = verbose and any(r.current_epoch is not None for r in rows)
    if modern:
        # Kafka 4's columns for a consumer group: the member's epoch and assignment, and its target
        current_w = max([20] + [len(assignment_text(r.assignment)) for r in rows])
        head += ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
        widths += [15, current_w, 15]
    elif verbose:
        head.append("ASSIGNMENT")
    lines = [table_line(widths, head)]
    for r in rows:
        values: list[Any] = [r.group, r.consumer_id] + ([r.group_instance_id] if with_instance else [])
        values += [r.host, r.client_id, len(r.assignment)]
        if modern:
            values += [_shown(r.current_epoch), assignment_text(r.assignment), _shown(r.target_epoch),
                       assignment_text(r.target or [])]
        elif verbose:
            values.append(assignment_text(r.assignment))
        lines.append(table_line(widths, values))
    return lines


def state_table(group: str, coordinator: str, strategy: str, state: str, members: int,
                epochs: tuple[int, int] | None = None) -> list[str]:
    """With `epochs` (a consumer group's group epoch and target assignment epoch, --verbose), Kafka 4's
    two extra columns."""
    widths = [max(15, len(group)), max(25, len(coordinator)), 20, 20]
    head = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE"]
    values: list[Any] = [group, coordinator, strategy or MISSING, state]
    if epochs is not None:
        widths += [15, 25]
        head += ["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"]
        values += list(epochs)
    return [table_line(widths, head + ["#MEMBERS"]), table_line(widths, values + [members])]


def reset_table(results: dict[str, dict[TP, int]]) -> list[str]:
    group_w = max([15] + [len(g) for g in results])
    topic_w = max([15] + [len(t) for offsets in results.values() for t, _ in offsets])
    widths = [group_w, topic_w, 10]
    lines = [table_line(widths, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"])]
    for group, offsets in results.items():
        for (topic, partition), offset in sorted(offsets.items()):
            lines.append(table_line(widths, [group, topic, partition, offset]))
    return lines


def reset_csv(results: dict[str, dict[TP, int]], with_group: bool) -> list[str]:
    lines = []
    for group, offsets in results.items():
        for (topic, partition), offset in sorted(offsets.items()):
            lines.append(f"{group},{topic},{partition},{offset}" if with_group else f"{topic},{partition},{offset}")
    return lines


def status_table(statuses: dict[TP, str]) -> list[str]:
    widths = [max([15] + [len(t) for t, _ in statuses]), 10]
    lines = [table_line(widths, ["TOPIC", "PARTITION", "STATUS"])]
    for (topic, partition), status in sorted(statuses.items()):
        lines.append(table_line(widths, [topic, partition if partition >= 0 else MISSING, status]))
    return lines


def out(lines: Iterable[str] = ("",)) -> None:
    for line in lines:
        print(line)


def err(line: str) -> None:
    print(line, file=sys.stderr)


# --- talking to the cluster -------------------------------------------------------------------


class ConsumerGroups:
    """The actions of the tool, over one AdminClient."""

    def __init__(self, admin: AdminClient, opts: argparse.Namespace, metadata: Any) -> None:
        self.admin = admin
        self.opts = opts
        self.timeout = opts.timeout_ms / 1000
        from odradek.cli.broker_connection import security_of

        self.security = security_of(read_properties_file(opts.command_config))
        self.metadata = metadata

    # Shared lookups

    def wait(self, future: Any) -> Any:
        try:
            return future.result(timeout=self.timeout + 5)
        except TimeoutError:
            raise CliError(f"Error: no answer from the cluster within {self.opts.timeout_ms} ms") from None

    def list_groups(self, states: Iterable[str] = (), types: Iterable[str] = ()) -> list[Any]:
        kwargs: dict[str, Any] = {"request_timeout": self.timeout}
        wanted = {STATES[s] for s in states}
        if wanted:
            kwargs["states"] = wanted
        kinds = {TYPES[t] for t in types}
        if kinds:
            kwargs["types"] = kinds
        result = self.wait(self.admin.list_consumer_groups(**kwargs))
        if result.errors and not result.valid:
            raise CommandFailed(kafka_message(KafkaException(result.errors[0])))
        return sorted(result.valid, key=lambda g: g.group_id)

    def group_ids(self) -> list[str]:
        if self.opts.all_groups:
            return [g.group_id for g in self.list_groups()]
        return list(dict.fromkeys(self.opts.group))

    def describe(self, group_ids: list[str]) -> dict[str, Any]:
        """Descriptions by group id; None for a group the coordinator says does not exist."""
        if not group_ids:
            return {}
        futures = self.admin.describe_consumer_groups(group_ids, request_timeout=self.timeout)
        result: dict[str, Any] = {}
        for group in group_ids:
            try:
                result[group] = self.wait(futures[group])
            except KafkaException as exc:
                if _code(exc) == 69:  # GROUP_ID_NOT_FOUND: newer coordinators' answer for a dead group
                    result[group] = None
                    continue
                raise CommandFailed(error_text(exc)) from None
        return result

    def committed(self, group: str) -> dict[TP, TopicPartition]:
        """The group's committed offsets (partitions without a commit are left out)."""
        request = [ConsumerGroupTopicPartitions(group)]
        future = self.admin.list_consumer_group_offsets(request, request_timeout=self.timeout)[group]
        try:
            answer = self.wait(future)
        except KafkaException as exc:
            if _code(exc) == 69:
                return {}
            raise CommandFailed(error_text(exc)) from None
        return {(tp.topic, tp.partition): tp for tp in answer.topic_partitions or [] if tp.offset >= 0}

    def log_offsets(self, partitions: Iterable[TP], spec: OffsetSpec) -> dict[TP, int | None]:
        """ListOffsets for each partition; None where the cluster could not answer."""
        return list_offsets(self.admin, partitions, spec, self.timeout, wait=self.wait)

    def partitions_of(self, topic: str) -> list[int] | None:
        """Partition ids of a topic, None if it does not exist."""
        meta = self.metadata.topics.get(topic)
        if meta is None or meta.error is not None:
            self.metadata = self.admin.list_topics(timeout=self.timeout)
            meta = self.metadata.topics.get(topic)
        if meta is None or meta.error is not None:
            return None
        return sorted(meta.partitions)

    # --list

    def do_list(self) -> int:
        if self.opts.state is None and self.opts.type is None:
            out(g.group_id for g in self.list_groups())
            return 0
        listings = self.list_groups(parse_states(self.opts.state) if self.opts.state else (),
                                    parse_types(self.opts.type) if self.opts.type else ())
        widths = [max([15] + [len(g.group_id) for g in listings]) + 10]
        head = ["GROUP"]
        if self.opts.type is not None:
            head.append("TYPE")
            widths.append(max([10] + [len(type_name(g)) for g in listings]) + 5)
        if self.opts.state is not None:
            head.append("STATE")

        def row(g: Any) -> list[str]:
            return [g.group_id] + ([type_name(g)] if self.opts.type is not None else []) + (
                [state_name(g)] if self.opts.state is not None else [])

        out([table_line(widths, head)])
        out(table_line(widths, row(g)) for g in listings)
        return 0

    # --describe

    def do_describe(self) -> int:
        groups = self.group_ids()
        descriptions = self.describe(groups)
        for group in sorted(descriptions):
            description = descriptions[group]
            if self.opts.members:
                self.describe_members(group, description)
            elif self.opts.state is not None:
                self.describe_state(group, description)
            else:
                self.describe_offsets(group, description)
        return 0

    def _announce(self, group: str, state: str, rows: int) -> bool:
        """Kafka's notes on special states; True if the group's table is to be printed."""
        if state == "Dead":
            err(f"Error: Consumer group '{group}' does not exist.")
            return False
        if state == "Empty":
            err(f"Consumer group '{group}' has no active members.")
        elif state in REBALANCING:
            err(f"Warning: Consumer group '{group}' is rebalancing.")
        return rows > 0

    def offset_rows(self, group: str, description: Any) -> list[OffsetRow]:
        committed = self.committed(group)
        rows: list[OffsetRow] = []
        assigned: set[TP] = set()
        members = [m for m in getattr(description, "members", None) or [] if _assignment(m)]
        for member in sorted(members, key=lambda m: -len(_assignment(m))):
            for tp in sorted(_assignment(member)):
                assigned.add(tp)
                done = committed.get(tp)
                rows.append(OffsetRow(group, tp[0], tp[1], done.offset if done else None, None,
                                      member.member_id or MISSING, member.host or MISSING,
                                      member.client_id or MISSING, _epoch(done)))
        for tp in sorted(set(committed) - assigned):
            rows.append(OffsetRow(group, tp[0], tp[1], committed[tp].offset, None, leader_epoch=_epoch(committed[tp])))
        ends = self.log_offsets(((r.topic, r.partition) for r in rows), OffsetSpec.latest())
        for r in rows:
            r.log_end = ends.get((r.topic, r.partition))
        return rows

    def describe_offsets(self, group: str, description: Any) -> None:
        state = state_name(description)
        rows = self.offset_rows(group, description) if state != "Dead" else []
        if self._announce(group, state, len(rows)):
            out()
            out(offsets_table(rows, self.opts.verbose))

    def describe_members(self, group: str, description: Any) -> None:
        state = state_name(description)
        modern = self.consumer_group_details(group, description) if self.opts.verbose else None
        epochs = {m.member_id: m.member_epoch for m in modern.members} if modern is not None else {}
        rows = [
            MemberRow(group, m.member_id or MISSING, m.group_instance_id or "", m.host or MISSING,
                      m.client_id or MISSING, sorted(_assignment(m)), epochs.get(m.member_id),
                      modern.assignment_epoch if modern is not None else None,
                      sorted(_assignment(m, "target_assignment")) if modern is not None else None)
            for m in (getattr(description, "members", None) or [])
        ]
        if self._announce(group, state, len(rows)):
            out()
            out(members_table(rows, self.opts.verbose))

    def describe_state(self, group: str, description: Any) -> None:
        state = state_name(description)
        if not self._announce(group, state, 1):
            return
        node = description.coordinator
        coordinator = f"{node.host}:{node.port}  ({node.id})" if node is not None else MISSING
        modern = self.consumer_group_details(group, description) if self.opts.verbose else None
        epochs = (modern.group_epoch, modern.assignment_epoch) if modern is not None else None
        if modern is not None:
            state = modern.group_state or state  # librdkafka knows no Assigning/Reconciling
        out()
        out(state_table(group, coordinator, description.partition_assignor or "", state, len(description.members),
                        epochs))

    def consumer_group_details(self, group: str, description: Any) -> Any:
        """ConsumerGroupDescribe at the coordinator, for what librdkafka does not expose (the epochs);
        None for a classic group or when the coordinator does not answer."""
        if description is None or getattr(description, "type", None) != ConsumerGroupType.CONSUMER:
            return None
        from odradek.cli.broker_connection import BrokerConnection
        from odradek.protocol.kip848 import ConsumerGroupDescribeRequest

        node = description.coordinator
        if node is None:
            return None
        try:
            conn = BrokerConnection(node.host, node.port, "odradek-consumer-groups", self.timeout, self.security)
        except OSError:
            return None
        try:
            response = conn.request(ConsumerGroupDescribeRequest(group_ids=[group], include_authorized_operations=False),
                                    0)
        except CliError:
            return None
        finally:
            conn.close()
        found = next((g for g in response.groups if g.group_id == group and g.error_code == 0), None)
        return found

    # --delete

    def do_delete(self) -> int:
        groups = self.group_ids()
        succeeded: list[str] = []
        failed: dict[str, str] = {}
        if groups:
            futures = self.admin.delete_consumer_groups(groups, request_timeout=self.timeout)
            for group in groups:
                try:
                    self.wait(futures[group])
                    succeeded.append(group)
                except KafkaException as exc:
                    failed[group] = error_text(exc)
        quoted = ", ".join(f"'{g}'" for g in succeeded)
        if not failed:
            out([f"Deletion of requested consumer groups ({quoted}) was successful."])
            return 0
        err("Error: Deletion of some consumer groups failed:")
        for group, reason in failed.items():
            err(f"* Group '{group}' could not be deleted due to: {reason}")
        if succeeded:
            out([f"These consumer groups were deleted successfully: {quoted}"])
        return 1

    # --reset-offsets

    def do_reset_offsets(self) -> int:
        groups = self.group_ids()
        descriptions = self.describe(groups)
        plan = self.reset_plan(groups)
        results: dict[str, dict[TP, int]] = {}
        refused = False
        for group in groups:
            state = state_name(descriptions.get(group))
            if state not in ("Empty", "Dead"):
                err(f"Error: Assignments can only be reset if the group '{group}' is inactive, "
                    f"but the current state is {state}.")
                refused = True
                continue
            offsets = self.prepare_offsets(group, plan)
            if self.opts.execute and offsets:
                self.commit(group, offsets)
            results[group] = offsets
        if self.opts.export:
            out(reset_csv(results, with_group=len(groups) != 1))
        elif results:
            out()
            out(reset_table(results))
        return 1 if refused else 0

    def reset_plan(self, groups: list[str]) -> dict[str, dict[TP, int]] | None:
        if not self.opts.from_file:
            return None
        try:
            text = Path(self.opts.from_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise CliError(f"Error: cannot read {self.opts.from_file}: {exc.strerror or exc}") from None
        return parse_reset_plan(text, groups)

    def partitions_to_reset(self, group: str, committed: dict[TP, Any]) -> list[TP]:
        if self.opts.all_topics:
            return sorted(committed)
        result: list[TP] = []
        missing: list[str] = []
        for arg in self.opts.topic or ():
            topic, chosen = parse_topic_arg(arg)
            existing = self.partitions_of(topic)
            if chosen is None:
                if existing is None:
                    missing.append(f"{topic} (no such topic)")
                    continue
                chosen = existing
            missing += [tp_text((topic, p)) for p in chosen if existing is None or p not in existing]
            result += [(topic, p) for p in chosen if existing is not None and p in existing]
        if missing:
            raise CommandFailed(f"The partitions \"{','.join(missing)}\" do not exist")
        return sorted(set(result))

    def prepare_offsets(self, group: str, plan: dict[str, dict[TP, int]] | None) -> dict[TP, int]:
        o = self.opts
        committed = self.committed(group)
        if plan is not None:
            if group not in plan:
                err(f"Error: No reset plan for group {group} found.")
                return {}
            return self.clamp(plan[group])
        partitions = self.partitions_to_reset(group, committed)
        if not partitions:
            return {}
        if o.to_offset is not None:
            return self.clamp(dict.fromkeys(partitions, o.to_offset))
        if o.shift_by is not None:
            missing = [tp for tp in partitions if tp not in committed]
            if missing:
                raise CliError(f"Error: Cannot shift offset for partition {tp_text(missing[0])} "
                               "since there is no current committed offset")
            return self.clamp({tp: committed[tp].offset + o.shift_by for tp in partitions})
        if o.to_earliest:
            return self.required(partitions, OffsetSpec.earliest(), "starting")
        if o.to_latest:
            return self.required(partitions, OffsetSpec.latest(), "ending")
        if o.to_current:
            result = {tp: committed[tp].offset for tp in partitions if tp in committed}
            result.update(self.required([tp for tp in partitions if tp not in committed], OffsetSpec.latest(), "ending"))
            return result
        if o.to_datetime is not None:
            return self.by_timestamp(partitions, parse_datetime(o.to_datetime))
        return self.by_timestamp(partitions, int(time.time() * 1000) - parse_duration(o.by_duration))

    def required(self, partitions: list[TP], spec: OffsetSpec, which: str) -> dict[TP, int]:
        found = self.log_offsets(partitions, spec)
        result = {}
        for tp in partitions:
            offset = found.get(tp)
            if offset is None or offset < 0:
                raise CliError(f"Error: Error getting {which} offset of topic partition: {tp_text(tp)}")
            result[tp] = offset
        return result

    def clamp(self, requested: dict[TP, int]) -> dict[TP, int]:
        """Requested offsets moved into [log start, log end] (Kafka's checkOffsetsRange)."""
        starts = self.log_offsets(requested, OffsetSpec.earliest())
        ends = self.log_offsets(requested, OffsetSpec.latest())
        result = {}
        for tp, offset in requested.items():
            end, start = ends.get(tp), starts.get(tp)
            if end is None:
                raise CommandFailed(f"Unexpected non-existing offset value for topic partition {tp_text(tp)}")
            if offset > end:
                offset = end
            elif start is not None and offset < start:
                offset = start
            result[tp] = offset
        return result

    def by_timestamp(self, partitions: list[TP], timestamp: int) -> dict[TP, int]:
        found = self.log_offsets(partitions, OffsetSpec.for_timestamp(timestamp))
        result = {tp: offset for tp, offset in found.items() if offset is not None and offset >= 0}
        later = [tp for tp in partitions if tp not in result]
        for topic, partition in later:
            err(f"Warn: Partition {partition} from topic {topic} is empty. Falling back to latest known offset.")
        result.update(self.required(later, OffsetSpec.latest(), "ending"))
        return result

    def commit(self, group: str, offsets: dict[TP, int]) -> None:
        request = [ConsumerGroupTopicPartitions(group, [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())])]
        future = self.admin.alter_consumer_group_offsets(request, request_timeout=self.timeout)[group]
        try:
            answer = self.wait(future)
        except KafkaException as exc:
            raise CommandFailed(error_text(exc)) from None
        for tp in answer.topic_partitions or []:
            if tp.error is not None:
                raise CommandFailed(f"{error_text(KafkaException(tp.error))} ({tp.topic}-{tp.partition})")

    # --delete-offsets

    def do_delete_offsets(self) -> int:
        group = self.opts.group[0]
        statuses: dict[TP, str] = {}
        partitions: list[TP] = []
        for arg in self.opts.topic:
            topic, chosen = parse_topic_arg(arg)
            if chosen is None:
                existing = self.partitions_of(topic)
                if existing is None:
                    statuses[(topic, -1)] = f"Error: {ERROR_MESSAGES[3]}"
                    continue
                chosen = existing
            partitions += [(topic, p) for p in chosen]
        partitions = sorted(set(partitions))
        top, errors = self.offset_delete(group, partitions) if partitions else (3, {})
        for tp in partitions:
            code = errors.get(tp, top)
            statuses[tp] = "Successful" if code == 0 else f"Error: {_message(code)}"
        if top == 0 and statuses and all(s == "Successful" for s in statuses.values()):
            out([f"Request succeeded for deleting offsets from group {group}."])
        elif top in (24, 69, 30, 68):
            err(f"Error: {_message(top)}")
        elif top in (86, 29, 3) or top == 0:
            err("Error: Encountered some partition-level error, see the follow-up details.")
        else:
            err(f"Error: Encountered some unknown error: {ERROR_NAMES.get(top, top)}")
        out()
        out(status_table(statuses))
        return 0 if all(s == "Successful" for s in statuses.values()) else 1

    def offset_delete(self, group: str, partitions: list[TP]) -> tuple[int, dict[TP, int]]:
        """OffsetDelete v0 at the group's coordinator -> (top-level error, error per partition);
        the top-level error is the first partition error when the request itself succeeded."""
        from kafka.protocol.consumer.group import OffsetDeleteRequest

        from odradek.cli.broker_connection import BrokerConnection

        description = self.describe([group]).get(group)
        node = getattr(description, "coordinator", None)
        if node is None:
            raise CommandFailed(f"no coordinator found for group '{group}'")
        topic_cls = OffsetDeleteRequest.OffsetDeleteRequestTopic
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        request = OffsetDeleteRequest(group_id=group, topics=[
            topic_cls(name=t, partitions=[topic_cls.OffsetDeleteRequestPartition(partition_index=p) for p in ps])
            for t, ps in by_topic.items()
        ])
        try:
            conn = BrokerConnection(node.host, node.port, "odradek-consumer-groups", self.timeout, self.security)
        except OSError as exc:
            raise CliError(f"Error: could not connect to the coordinator {node.host}:{node.port}: "
                           f"{exc.strerror or exc}") from None
        try:
            response = conn.request(request, 0)
        finally:
            conn.close()
        if response.error_code:
            return response.error_code, {}
        errors = {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}
        first = next((code for _, code in sorted(errors.items()) if code), 0)
        return first, errors


def _assignment(member: Any, which: str = "assignment") -> list[TP]:
    assignment = getattr(member, which, None)
    return [(tp.topic, tp.partition) for tp in getattr(assignment, "topic_partitions", None) or []]


def _epoch(tp: TopicPartition | None) -> int | None:
    epoch = getattr(tp, "leader_epoch", None)
    return epoch if epoch is not None and epoch >= 0 else None


def _code(exc: KafkaException) -> int | None:
    err_: Any = exc.args[0] if exc.args else None
    return err_.code() if hasattr(err_, "code") else None


def _message(code: int) -> str:
    return ERROR_MESSAGES.get(code) or f"error code {code}"


# --- entry point ------------------------------------------------------------------------------


def connect(opts: argparse.Namespace) -> tuple[AdminClient, Any]:
    """An AdminClient for --bootstrap-server, and the cluster metadata proving it is reachable."""
    return open_client(AdminClient, bootstrap_of(opts), read_properties_file(opts.command_config),
                       defaults={"socket.timeout.ms": max(opts.timeout_ms, 10)}, timeout_ms=opts.timeout_ms)


def execute(argv: list[str]) -> int:
    opts = build_parser().parse_args(argv)
    action = validate(opts)
    if action == "reset-offsets" and not (opts.dry_run or opts.execute):
        err(DRY_RUN_WARNING)
    admin, metadata = connect(opts)
    tool = ConsumerGroups(admin, opts, metadata)
    code = getattr(tool, "do_" + action.replace("-", "_"))()
    sys.stdout.flush()
    return int(code)


def main(argv: list[str]) -> int:
    return run_tool(lambda: execute(argv))
