"""`odradek share-groups`: list, describe and delete share groups (KIP-932), and reset or delete their
share-partition start offsets, like Kafka 4.2's kafka-share-groups.sh (ShareGroupCommand).

Flags, messages and table layouts follow Kafka's tool: `--describe` prints GROUP TOPIC PARTITION
START-OFFSET LAG (`--verbose`: LEADER-EPOCH too), `--members` GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS
ASSIGNMENT (`--verbose`: MEMBER-EPOCH), `--state` GROUP COORDINATOR (ID) STATE #MEMBERS (`--verbose`:
GROUP-EPOCH, ASSIGNMENT-EPOCH); `--reset-offsets` (--to-earliest, --to-latest, --to-datetime, --to-offset;
--dry-run, the default, or --execute) only for a group without members, GROUP TOPIC PARTITION NEW-OFFSET.
librdkafka 2.16's AdminClient has no share-group calls, so every request goes over the project's protocol
client (`odradek.admin_client.share_groups`). Failures are one line on stderr and exit code 1 (a group
that does not exist is reported and exits 0 for --describe, as Kafka's tool does).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from odradek.admin_client.command import ArgParser, parse_int, run_tool
from odradek.admin_client.connect import bootstrap_of, read_properties_file
from odradek.admin_client.errors import CliError, UsageError
from odradek.admin_client.share_groups import (
    EARLIEST,
    LATEST,
    SHARE_STATES,
    GroupError,
    ShareGroup,
    ShareGroupsClient,
    error_message,
)
from odradek.cli.common import one_action
from odradek.cli.consumer_groups import (
    MISSING,
    TP,
    check_available,
    deletion_report,
    err,
    group_tool_parser,
    has_flag,
    out,
    parse_datetime,
    parse_topic_arg,
    reset_table,
    table_line,
    tp_text,
)

DEFAULT_TIMEOUT_MS = 30_000
ACTIONS = ("list", "describe", "delete", "reset-offsets", "delete-offsets")
SCENARIOS = ("to-datetime", "to-earliest", "to-latest", "to-offset")
RESET_ONLY = ("dry-run", "execute", "all-topics", *SCENARIOS)
DESCRIBE_ONLY = ("members", "offsets", "verbose")


def build_parser() -> ArgParser:
    parser, _describe, _reset = group_tool_parser(
        "share", "This tool helps to list, describe, reset and delete share groups.", DEFAULT_TIMEOUT_MS)
    return parser


def parse_states(text: str) -> list[str]:
    """'stable,EMPTY' -> ['Stable', 'Empty']; others refused with Kafka's message."""
    by_lower = {s.lower(): s for s in SHARE_STATES}
    states = [by_lower.get(s.strip().lower()) for s in text.split(",")]
    if None in states:
        raise UsageError(f"Error: Invalid state list '{text}'. Valid states are: {', '.join(SHARE_STATES)}")
    return [s for s in states if s is not None]


def validate(opts: argparse.Namespace) -> str:
    """Kafka's checks of the flag combination, each failing with one line; returns the action."""
    bootstrap_of(opts)
    action = one_action(opts, ACTIONS, "Error: Command must include exactly one action: "
                        + ", ".join(f"--{a}" for a in ACTIONS) + ".")
    opts.timeout_ms = parse_int(opts.timeout, "--timeout", minimum=1)
    check_available(opts, action, DESCRIBE_ONLY)
    for flag in RESET_ONLY:
        if has_flag(opts, flag) and action != "reset-offsets":
            raise UsageError(f'Error: Option "[{flag}]" can\'t be used with option "[{action}]"')
    if opts.group and opts.all_groups:
        raise UsageError(f"Error: Option [{action}] takes either [group] or [all-groups], not both.")
    if opts.group and action == "list":
        raise UsageError('Error: Option "[group]" can\'t be used with option "[list]"')
    if opts.topic and action in ("list", "describe", "delete"):
        raise UsageError(f"Error: Option [{action}] does not take the option: [topic]")
    if action in ("describe", "delete") and not (opts.group or opts.all_groups):
        raise UsageError(f"Error: Option [{action}] takes one of these options: [group], [all-groups]")
    if action == "describe":
        if sum(has_flag(opts, f) for f in ("members", "offsets", "state")) > 1:
            raise UsageError("Error: Option [describe] takes at most one of these options: [members], [offsets], "
                             "[state]")
        if opts.state:
            raise UsageError("Error: Option [describe] does not take a value for [state]")
    elif action == "list" and opts.state:
        parse_states(opts.state)
    elif action == "delete-offsets":
        if not (opts.group and opts.topic) or opts.all_groups:
            raise UsageError("Error: Option [delete-offsets] takes the following options: [group], [topic]")
        if len(opts.group) > 1:
            raise UsageError("Error: Option [delete-offsets] supports one share group at a time")
    elif action == "reset-offsets":
        _validate_reset(opts)
    return action


def _validate_reset(opts: argparse.Namespace) -> None:
    if opts.dry_run and opts.execute:
        raise UsageError("Error: Option [reset-offsets] only accepts one of [execute] and [dry-run]")
    if not opts.group or opts.all_groups or len(opts.group) > 1:
        raise UsageError("Error: Option [reset-offsets] takes the option: [group] (one share group at a time)")
    chosen = [s for s in SCENARIOS if has_flag(opts, s)]
    if len(chosen) != 1:
        raise UsageError("Error: Option [reset-offsets] requires one of the following scenarios: "
                         + ", ".join(f"[{s}]" for s in SCENARIOS))
    if opts.topic and opts.all_topics:
        raise UsageError('Error: Option "[all-topics]" can\'t be used with option "[topic]"')
    for arg in opts.topic or ():
        parse_topic_arg(arg)
    if opts.to_offset is not None:
        opts.to_offset = parse_int(opts.to_offset, "--to-offset", minimum=0)
    if opts.to_datetime is not None:
        parse_datetime(opts.to_datetime)


# --- layout -----------------------------------------------------------------------------------


def _shown(value: int | None) -> str:
    return MISSING if value is None else str(value)


def offsets_table(group: str, rows: list[tuple[TP, Any]], verbose: bool) -> list[str]:
    """GROUP TOPIC PARTITION [LEADER-EPOCH] START-OFFSET LAG; `rows`: (partition, ShareOffset)."""
    widths = [max(15, len(group)), max([15] + [len(t) for (t, _p), _o in rows]), 10] + ([13] if verbose else []) + [13]
    head = ["GROUP", "TOPIC", "PARTITION"] + (["LEADER-EPOCH"] if verbose else []) + ["START-OFFSET", "LAG"]
    lines = [table_line(widths, head)]
    for (topic, partition), o in rows:
        values = [group, topic, partition] + ([_shown(o.leader_epoch)] if verbose else [])
        lines.append(table_line(widths, values + [_shown(o.start_offset), _shown(o.lag)]))
    return lines


def assignment_text(assignment: list[TP]) -> str:
    """[('t', 1), ('t', 0), ('u', 2)] -> 't:0,1;u:2' (Kafka's share-group form)."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in assignment:
        by_topic.setdefault(topic, []).append(partition)
    return ";".join(f"{t}:{','.join(map(str, sorted(ps)))}" for t, ps in sorted(by_topic.items()))


def members_table(group: ShareGroup, verbose: bool) -> list[str]:
    ms = group.members
    widths = [max(15, len(group.group_id)), max([15] + [len(m.member_id) for m in ms]),
              max([15] + [len(m.host) for m in ms]), max([15] + [len(m.client_id) for m in ms]), 12]
    head = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    if verbose:
        widths.append(13)
        head.append("MEMBER-EPOCH")
    lines = [table_line(widths, head + ["ASSIGNMENT"])]
    for m in ms:
        values: list[Any] = [group.group_id, m.member_id, m.host, m.client_id, len(m.assignment)]
        values += [m.member_epoch] if verbose else []
        lines.append(table_line(widths, values + [assignment_text(m.assignment)]))
    return lines


def state_table(group: ShareGroup, verbose: bool) -> list[str]:
    coordinator = str(group.coordinator) if group.coordinator is not None else MISSING
    widths = [max(15, len(group.group_id)), max(25, len(coordinator)), 15]
    head = ["GROUP", "COORDINATOR (ID)", "STATE"]
    values: list[Any] = [group.group_id, coordinator, group.state]
    if verbose:
        widths += [12, 17]
        head += ["GROUP-EPOCH", "ASSIGNMENT-EPOCH"]
        values += [group.group_epoch, group.assignment_epoch]
    return [table_line(widths, head + ["#MEMBERS"]), table_line(widths, values + [len(group.members)])]


# --- the actions ------------------------------------------------------------------------------


class ShareGroups:
    """The actions of the tool, over one `ShareGroupsClient`."""

    def __init__(self, client: ShareGroupsClient, opts: argparse.Namespace) -> None:
        self.client = client
        self.opts = opts

    def group_ids(self) -> list[str]:
        if self.opts.all_groups:
            return [g for g, _s in self.client.list_groups()]
        return list(dict.fromkeys(self.opts.group))

    def do_list(self) -> int:
        if self.opts.state is None:
            out(g for g, _s in self.client.list_groups())
            return 0
        listed = self.client.list_groups(parse_states(self.opts.state) if self.opts.state else ())
        widths = [max([15] + [len(g) for g, _s in listed])]
        out([table_line(widths, ["GROUP", "STATE"])])
        out(table_line(widths, [g, s]) for g, s in listed)
        return 0

    def _announce(self, group: ShareGroup, rows: int) -> bool:
        """Kafka's notes on an empty or missing group; True if its table is to be printed."""
        if group.state == "Dead":
            err(f"Error: Share group '{group.group_id}' does not exist.")
            return False
        if group.state == "Empty":
            err(f"Share group '{group.group_id}' has no active members.")
        return rows > 0

    def do_describe(self) -> int:
        for group_id in sorted(self.group_ids()):
            group = self.client.describe(group_id)
            if self.opts.members:
                if self._announce(group, len(group.members)):
                    out()
                    out(members_table(group, self.opts.verbose))
            elif self.opts.state is not None:
                if self._announce(group, 1):
                    out()
                    out(state_table(group, self.opts.verbose))
            elif group.state == "Dead":
                self._announce(group, 0)
            else:
                offsets = sorted(self.client.offsets(group_id).items())
                out()
                if not offsets:
                    out([f"Share group '{group_id}' has no offset information."])
                    continue
                out(offsets_table(group_id, offsets, self.opts.verbose))
        return 0

    def do_delete(self) -> int:
        listed = dict(self.client.list_groups())
        failed: dict[str, str] = {}
        succeeded: list[str] = []
        for group_id in self.group_ids():
            state = listed.get(group_id)
            if state is None:
                failed[group_id] = f"GroupIdNotFoundException: Group '{group_id}' is not a share group."
            elif state != "Empty":
                failed[group_id] = f"GroupNotEmptyException: Share group '{group_id}' is not EMPTY."
            else:
                code = self.client.delete_group(group_id)
                if code:
                    failed[group_id] = f"{_error_name(code)}: {error_message(code)}"
                else:
                    succeeded.append(group_id)
        return deletion_report("share", succeeded, failed)

    def do_delete_offsets(self) -> int:
        group_id = self.opts.group[0]
        topics = list(dict.fromkeys(parse_topic_arg(t)[0] for t in self.opts.topic))
        try:
            results = self.client.delete_offsets(group_id, topics)
        except GroupError as exc:
            raise CliError(f"Error: {exc}") from None
        width = max([15] + [len(t) for t in results])
        if any(results.values()):
            err("Error: Encountered some topic-level error, see the follow-up details.")
        out()
        out([table_line([width], ["TOPIC", "STATUS"])])
        out(table_line([width], [t, f"Error: {error_message(code)}" if code else "Successful"])
            for t, code in sorted(results.items()))
        return 1 if any(results.values()) else 0

    def do_reset_offsets(self) -> int:
        group_id = self.opts.group[0]
        group = self.client.describe(group_id)
        if group.state not in ("Empty", "Dead"):
            raise CliError(f"Error: Share group '{group_id}' is not empty.")
        offsets = self.new_offsets(self.partitions_to_reset(group_id, group))
        if self.opts.execute and offsets:
            try:
                errors = self.client.alter_offsets(group_id, offsets)
            except GroupError as exc:
                raise CliError(f"Error: Executing share group command failed due to {exc}") from None
            bad = {tp: code for tp, code in errors.items() if code}
            if bad:
                tp, code = sorted(bad.items())[0]
                raise CliError(f"Error: Executing share group command failed due to {error_message(code)} "
                               f"({tp_text(tp)})")
        if offsets:
            out()
            out(reset_table({group_id: offsets}))
        return 0

    def partitions_to_reset(self, group_id: str, group: ShareGroup) -> list[TP]:
        if not self.opts.topic:
            return sorted(self.client.offsets(group_id)) if group.state != "Dead" else []
        result: list[TP] = []
        missing: list[str] = []
        for arg in self.opts.topic:
            topic, chosen = parse_topic_arg(arg)
            existing = self.client.partitions_of(topic)
            if existing is None:
                missing.append(f"{topic} (no such topic)")
                continue
            chosen = existing if chosen is None else chosen
            missing += [tp_text((topic, p)) for p in chosen if p not in existing]
            result += [(topic, p) for p in chosen if p in existing]
        if missing:
            raise CliError(f"Error: Executing share group command failed due to The partitions \"{','.join(missing)}\" "
                           "do not exist")
        return sorted(set(result))

    def new_offsets(self, partitions: list[TP]) -> dict[TP, int]:
        o = self.opts
        if not partitions:
            return {}
        if o.to_earliest:
            return self.required(partitions, EARLIEST, "starting")
        if o.to_latest:
            return self.required(partitions, LATEST, "ending")
        if o.to_offset is not None:
            starts = self.required(partitions, EARLIEST, "starting")
            ends = self.required(partitions, LATEST, "ending")
            return {tp: min(max(o.to_offset, starts[tp]), ends[tp]) for tp in partitions}
        found = self.client.list_offsets(partitions, parse_datetime(o.to_datetime))
        result = {tp: offset for tp, offset in found.items() if offset is not None}
        later = [tp for tp in partitions if tp not in result]
        for topic, partition in later:
            err(f"Warn: Partition {partition} from topic {topic} is empty. Falling back to latest known offset.")
        result.update(self.required(later, LATEST, "ending"))
        return result

    def required(self, partitions: list[TP], timestamp: int, which: str) -> dict[TP, int]:
        found = self.client.list_offsets(partitions, timestamp) if partitions else {}
        result = {}
        for tp in partitions:
            offset = found.get(tp)
            if offset is None:
                raise CliError(f"Error: Error getting {which} offset of topic partition: {tp_text(tp)}")
            result[tp] = offset
        return result


def _error_name(code: int) -> str:
    from odradek.protocol.errors import ErrorCode

    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


# --- entry point ------------------------------------------------------------------------------


def execute(argv: list[str]) -> int:
    opts = build_parser().parse_args(argv)
    action = validate(opts)
    from odradek.cli.broker_connection import security_of

    security = security_of(read_properties_file(opts.command_config))
    with ShareGroupsClient(bootstrap_of(opts), opts.timeout_ms / 1000, security=security) as client:
        code = getattr(ShareGroups(client, opts), "do_" + action.replace("-", "_"))()
    sys.stdout.flush()
    return int(code)


def main(argv: list[str]) -> int:
    return run_tool(lambda: execute(argv))
