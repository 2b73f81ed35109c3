"""`odradek reassign-partitions`: move partition replicas between brokers, like Kafka's
kafka-reassign-partitions.sh (KIP-455 semantics).

    odradek reassign-partitions --bootstrap-server H:P
        (--generate --topics-to-move-json-file F --broker-list 0,1,2
         | --execute --reassignment-json-file F [--additional]
         | --verify --reassignment-json-file F
         | --cancel --reassignment-json-file F
         | --list)
    odradek reassign-partitions --zookeeper H:P[/chroot] (--generate ... | --execute ... | --verify ... | --list)

With --bootstrap-server the tool speaks the AlterPartitionReassignments / ListPartitionReassignments APIs
(kafka-python's codecs over a socket: confluent-kafka has no call for them) and Metadata; with the
deprecated --zookeeper it reads the topic znodes and writes `/admin/reassign_partitions`, which the
controller picks up. JSON formats and output lines are Kafka's. A "log_dirs" entry other than "any" moves
that replica to that log dir of its broker (AlterReplicaLogDirs, `cli/replica_moves.py`; this needs
--bootstrap-server, also next to --zookeeper). Replication throttles do not exist in Odradek: --throttle
and --replica-alter-log-dirs-throttle are refused.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any, Protocol

from kafka.protocol.admin import AlterPartitionReassignmentsRequest, ListPartitionReassignmentsRequest

from odradek.admin_client.command import ArgParser, run_tool
from odradek.admin_client.connect import read_properties_file
from odradek.admin_client.errors import CliError, UsageError
from odradek.cli import replica_moves, zk_session
from odradek.cli.broker_connection import AdminConnection, security_of
from odradek.cli.common import add_zookeeper_flag, one_action
from odradek.cli.zk_session import ZkSession
from odradek.cluster import znodes as zn
from odradek.cluster.assignment import assign_replicas
from odradek.cluster.controller import read_reassignments
from odradek.cluster.elections import (
    ReplicaAssignment,
    TopicPartition,
    duplicates,
    parse_reassignment_json,
    parse_replica_log_dirs,
    parse_topics_json,
    reassignment_json,
    tp_str,
    validate_reassignment_entries,
)
from odradek.cluster.store import MetadataStore
from odradek.protocol.errors import ErrorCode, KafkaError

ACTIONS = ("generate", "execute", "verify", "cancel", "list")
REQUIRED = {"generate": ("topics_to_move_json_file", "broker_list"), "execute": ("reassignment_json_file",),
            "verify": ("reassignment_json_file",), "cancel": ("reassignment_json_file",), "list": ()}
REQUEST_TIMEOUT_S = 30.0
EXISTING_MESSAGE = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to override this and "
    "create a new partition assignment in addition to the existing one. The --additional flag can also be "
    "used to change the throttle by resubmitting the current reassignment."
)
Assignment = dict[TopicPartition, list[int]]


def compact(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"))


def plural(n: int) -> str:
    return "" if n == 1 else "s"


def tp_list(tps: list[TopicPartition]) -> str:
    return ",".join(tp_str(tp) for tp in sorted(tps))


# ---- flags --------------------------------------------------------------------------------------


def build_parser() -> ArgParser:
    parser = ArgParser("reassign-partitions", "This tool helps to move topic partitions between replicas.")
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="the broker(s) to connect to")
    add_zookeeper_flag(parser, "DEPRECATED: work through ZooKeeper instead (no --cancel)")
    parser.add_argument("--command-config", metavar="FILE",
                        help="client properties (client.id, security.protocol, sasl.*, ssl.* with PEM stores)")
    for action, text in (("generate", "generate a candidate assignment for --topics-to-move-json-file and "
                                      "--broker-list (nothing is executed)"),
                         ("execute", "start the reassignment in --reassignment-json-file"),
                         ("verify", "report whether the reassignment in --reassignment-json-file is complete"),
                         ("cancel", "cancel the active reassignments in --reassignment-json-file"),
                         ("list", "list the partition reassignments in progress")):
        parser.add_argument(f"--{action}", action="store_true", help=text)
    parser.add_argument("--reassignment-json-file", metavar="FILE",
                        help='{"version":1,"partitions":[{"topic":"foo","partition":1,"replicas":[1,2]}]}')
    parser.add_argument("--topics-to-move-json-file", metavar="FILE",
                        help='{"version":1,"topics":[{"topic":"foo"},{"topic":"foo1"}]}')
    parser.add_argument("--broker-list", metavar="0,1,2", help="brokers to spread the topics over (--generate)")
    parser.add_argument("--additional", action="store_true",
                        help="execute although other reassignments are in progress")
    parser.add_argument("--disable-rack-aware", action="store_true", help="accepted for compatibility (no racks)")
    parser.add_argument("--preserve-throttles", action="store_true", help="accepted for compatibility (no throttles)")
    parser.add_argument("--timeout", default="10000", metavar="MS", help="accepted for compatibility")
    parser.add_argument("--throttle", metavar="B/S", help="not supported: Odradek has no replication quotas")
    parser.add_argument("--replica-alter-log-dirs-throttle", metavar="B/S", help="not supported")
    return parser


def chosen_action(opts: argparse.Namespace) -> str:
    action = one_action(opts, ACTIONS, "Error: Command must include exactly one action: "
                        "--generate, --execute, --verify, --cancel, --list")
    for dest in REQUIRED[action]:
        if not getattr(opts, dest):
            raise UsageError(f'Error: Missing required argument "[{dest.replace("_", "-")}]"')
    if not opts.bootstrap_server and not opts.zookeeper:
        raise UsageError("Error: Please specify --bootstrap-server")
    if opts.throttle is not None or opts.replica_alter_log_dirs_throttle is not None:
        raise UsageError("Error: replication throttles are not supported by Odradek")
    if action == "cancel" and not opts.bootstrap_server:
        raise UsageError("Error: --cancel requires --bootstrap-server")
    return action


def read_json(path: str) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"Error: cannot read {path}: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"Error: {path} is not valid JSON: {exc.msg} (line {exc.lineno})") from None


def read_reassignment_file(path: str, validate: bool) -> Assignment:
    try:
        entries = parse_reassignment_json(read_json(path))
        if validate:
            validate_reassignment_entries(entries)
    except ValueError as exc:
        raise CliError(f"Error: {exc}") from None
    return dict(entries)


def read_log_dirs_file(path: str) -> dict[replica_moves.Replica, str]:
    """The replicas the file moves to a log dir (its "log_dirs" entries other than "any")."""
    try:
        return parse_replica_log_dirs(read_json(path))
    except ValueError as exc:
        raise CliError(f"Error: {exc}") from None


def moves_connection(opts: argparse.Namespace, backend: Backend, what: str) -> AdminConnection:
    """The connection replica moves go through: the tool's own, or --bootstrap-server next to --zookeeper."""
    if isinstance(backend, KafkaBackend):
        return backend.conn
    if not opts.bootstrap_server:
        raise CliError(f"bootstrap-server needs to be provided in order to {what}")
    return admin_connection(opts)


def admin_connection(opts: argparse.Namespace) -> AdminConnection:
    """To --bootstrap-server, with --command-config's client.id and security settings."""
    props = read_properties_file(opts.command_config)
    return AdminConnection(opts.bootstrap_server, REQUEST_TIMEOUT_S + 10,
                           props.get("client.id", "reassign-partitions-tool"), security=security_of(props))


def parse_broker_list(text: str) -> list[int]:
    try:
        brokers = [int(b) for b in text.split(",")]
    except ValueError:
        raise UsageError(f"Error: --broker-list expects comma-separated broker ids, got '{text}'") from None
    dups = duplicates(brokers)
    if dups:
        raise CliError(f"Error: Broker list contains duplicate entries: {','.join(map(str, dups))}")
    return brokers


def propose(current: Assignment, brokers: list[int], rng: random.Random | None = None) -> Assignment:
    """--generate: each topic spread over `brokers` as topic creation would (same partition count and
    replication factor)."""
    proposed: Assignment = {}
    for t in sorted({t for t, _ in current}):
        parts = sorted(p for tt, p in current if tt == t)
        rf = len(current[(t, parts[0])])
        try:
            spread = assign_replicas(brokers, len(parts), rf, rng=rng)
        except KafkaError as exc:
            raise CliError(f"Error: {exc.message}") from None
        proposed.update({(t, p): spread[p] for p in parts})
    return proposed


# ---- where the data comes from: the Kafka protocol or ZooKeeper -------------------------------------


class Backend(Protocol):
    def replicas(self, topics: list[str]) -> Assignment: ...

    def brokers(self) -> list[int]: ...

    def ongoing(self) -> dict[TopicPartition, ReplicaAssignment]: ...

    def alter(self, changes: dict[TopicPartition, list[int] | None]) -> dict[TopicPartition, str]: ...


class KafkaBackend:
    """Metadata, ListPartitionReassignments and AlterPartitionReassignments over the Kafka protocol."""

    def __init__(self, conn: AdminConnection) -> None:
        self.conn = conn

    def replicas(self, topics: list[str]) -> Assignment:
        md = self.conn.metadata(topics)
        out: Assignment = {}
        for t in md.topics:
            if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                raise CliError(f"Error: Topic {t.name} not found.")
            for p in t.partitions:
                out[(t.name, p.partition_index)] = list(p.replica_nodes)
        return out

    def brokers(self) -> list[int]:
        return sorted(b.node_id for b in self.conn.metadata([]).brokers)

    def ongoing(self) -> dict[TopicPartition, ReplicaAssignment]:
        req = ListPartitionReassignmentsRequest(timeout_ms=int(REQUEST_TIMEOUT_S * 1000), topics=None)
        resp = self.conn.controller().request(req, 0)
        _raise_top_level(resp)
        return {(t.name, p.partition_index): ReplicaAssignment(list(p.replicas), list(p.adding_replicas),
                                                               list(p.removing_replicas))
                for t in resp.topics for p in t.partitions}

    def alter(self, changes: dict[TopicPartition, list[int] | None]) -> dict[TopicPartition, str]:
        r = AlterPartitionReassignmentsRequest
        by_topic: dict[str, list[Any]] = {}
        for (t, p), replicas in sorted(changes.items()):
            by_topic.setdefault(t, []).append(
                r.ReassignableTopic.ReassignablePartition(partition_index=p, replicas=replicas))
        req = r(timeout_ms=int(REQUEST_TIMEOUT_S * 1000), topics=[
            r.ReassignableTopic(name=t, partitions=ps) for t, ps in by_topic.items()])
        resp = self.conn.controller().request(req, 0)
        _raise_top_level(resp)
        return {(t.name, p.partition_index): p.error_message or _error_name(p.error_code)
                for t in resp.responses for p in t.partitions if p.error_code}


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


def _raise_top_level(resp: Any) -> None:
    if resp.error_code:
        raise CliError(f"Error: {_error_name(resp.error_code)}: {resp.error_message or ''}".rstrip(": "))


class ZkBackend:
    """The same through ZooKeeper: topic znodes and /admin/reassign_partitions."""

    def __init__(self, zk: ZkSession) -> None:
        self.zk = zk

    def replicas(self, topics: list[str]) -> Assignment:
        return self.zk.run(_zk_replicas, topics)

    def brokers(self) -> list[int]:
        return self.zk.run(zk_session.broker_ids)

    def ongoing(self) -> dict[TopicPartition, ReplicaAssignment]:
        return self.zk.run(_zk_ongoing)

    def alter(self, changes: dict[TopicPartition, list[int] | None]) -> dict[TopicPartition, str]:
        body = {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r}
                                             for (t, p), r in sorted(changes.items())]}
        if not self.zk.run(zk_session.create_json, zn.REASSIGN_PARTITIONS, body):
            raise CliError("There is an existing assignment running.")
        return {}


async def _zk_replicas(store: MetadataStore, topics: list[str]) -> Assignment:
    out: Assignment = {}
    for name in topics:
        topic = await zk_session.read_topic(store, name)
        if topic is None:
            raise CliError(f"Error: Topic {name} not found.")
        out.update({(name, p): list(r) for p, r in topic.partitions.items()})
    return out


async def _zk_ongoing(store: MetadataStore) -> dict[TopicPartition, ReplicaAssignment]:
    """Reassignments under way in the topic znodes, plus those still waiting in /admin/reassign_partitions."""
    out = await read_reassignments(store, await zk_session.topic_names(store))
    pending = await zk_session.read_json(store, zn.REASSIGN_PARTITIONS)
    topics: dict[str, zn.TopicAssignment | None] = {}
    for tp, _ in _lenient_entries(pending) if pending is not None else []:
        if tp[0] not in topics:
            topics[tp[0]] = await zk_session.read_topic(store, tp[0])
        topic = topics[tp[0]]
        if topic is not None and tp[1] in topic.partitions and tp not in out:
            out[tp] = ReplicaAssignment(list(topic.partitions[tp[1]]))
    return out


def _lenient_entries(data: Any) -> list[tuple[TopicPartition, list[int]]]:
    try:
        return parse_reassignment_json(data)
    except ValueError:
        return []


# ---- actions --------------------------------------------------------------------------------------


def generate(backend: Backend, opts: argparse.Namespace) -> int:
    brokers = parse_broker_list(opts.broker_list)
    try:
        topics = parse_topics_json(read_json(opts.topics_to_move_json_file))
    except ValueError as exc:
        raise CliError(f"Error: {exc}") from None
    current = backend.replicas(topics)
    known = set(backend.brokers())
    proposed = propose(current, [b for b in brokers if b in known])
    print(f"Current partition replica assignment\n{compact(reassignment_json(current))}\n")
    print(f"Proposed partition reassignment configuration\n{compact(reassignment_json(proposed))}")
    return 0


def execute(backend: Backend, opts: argparse.Namespace) -> int:
    proposed = read_reassignment_file(opts.reassignment_json_file, validate=True)
    moves = read_log_dirs_file(opts.reassignment_json_file)
    conn = moves_connection(opts, backend, "reassign replica to the specified log directory") if moves else None
    if not opts.additional and backend.ongoing():
        raise CliError(EXISTING_MESSAGE)
    known = set(backend.brokers())
    unknown = next((b for tp in sorted(proposed) for b in proposed[tp] if b not in known), None)
    if unknown is not None:
        raise CliError(f"Error: Unknown broker id {unknown}")
    current = backend.replicas(sorted({t for t, _ in proposed}))
    missing = [tp for tp in proposed if tp not in current]
    if missing:
        raise CliError(f"Error: Unable to find partition: {', '.join(tp_str(tp) for tp in sorted(missing))}")
    rollback = {tp: current[tp] for tp in proposed}
    print(f"Current partition replica assignment\n\n{compact(reassignment_json(rollback))}\n\n"
          "Save this to use as the --reassignment-json-file option during rollback")
    errors = backend.alter(dict(proposed))
    if errors:
        lines = "\n".join(f"{tp_str(tp)}: {msg}" for tp, msg in sorted(errors.items()))
        raise CliError(f"Error reassigning partition(s):\n{lines}")
    print(f"Successfully started partition reassignment{plural(len(proposed))} for {tp_list(list(proposed))}")
    if conn is not None:
        replica_moves.execute_moves(conn, moves, _timeout_ms(opts))
    return 0


def _timeout_ms(opts: argparse.Namespace) -> int:
    try:
        return int(opts.timeout)
    except ValueError:
        raise UsageError(f"Error: --timeout must be a number of milliseconds, not '{opts.timeout}'") from None


def verify(backend: Backend, opts: argparse.Namespace) -> int:
    targets = read_reassignment_file(opts.reassignment_json_file, validate=False)
    ongoing = backend.ongoing()
    current: Assignment = {}
    for t in sorted({t for t, _ in targets}):
        try:
            current.update(backend.replicas([t]))
        except CliError:
            pass  # a deleted topic: reported with an empty replica set, as Kafka does
    print("Status of partition reassignment:")
    for tp in sorted(targets):
        if tp in ongoing:
            print(f"Reassignment of partition {tp_str(tp)} is still in progress.")
        elif current.get(tp, []) == targets[tp]:
            print(f"Reassignment of partition {tp_str(tp)} is completed.")
        else:
            have = ",".join(map(str, current.get(tp, [])))
            print(f"There is no active reassignment of partition {tp_str(tp)}, but replica set is {have} "
                  f"rather than {','.join(map(str, targets[tp]))}.")
    moves = read_log_dirs_file(opts.reassignment_json_file)
    if moves:
        conn = moves_connection(opts, backend, "verify replica log directories")
        dirs = replica_moves.replica_dirs(conn, sorted(moves))
        print("\n".join(replica_moves.verify_lines(moves, dirs)))
    return 0


def cancel(backend: Backend, opts: argparse.Namespace) -> int:
    targets = read_reassignment_file(opts.reassignment_json_file, validate=False)
    ongoing = backend.ongoing()
    active = sorted(tp for tp in targets if tp in ongoing and ongoing[tp].reassigning)
    if not active:
        print("None of the specified partition reassignments are active.")
    else:
        errors = backend.alter({tp: None for tp in active})
        if errors:
            lines = "\n".join(f"{tp_str(tp)}: {msg}" for tp, msg in sorted(errors.items()))
            raise CliError(f"Error cancelling partition reassignment{plural(len(errors))} for:\n{lines}")
        print(f"Successfully cancelled partition reassignment{plural(len(active))} for: {tp_list(active)}")
    moves = read_log_dirs_file(opts.reassignment_json_file)
    if moves:  # a move is cancelled by asking for the log dir the replica is in
        conn = moves_connection(opts, backend, "cancel replica log directory moves")
        dirs = replica_moves.replica_dirs(conn, sorted(moves))
        moving = {r: current for r, (current, future) in dirs.items() if current is not None and future is not None}
        if moving:
            replica_moves.execute_moves(conn, moving, _timeout_ms(opts))
        else:
            print("None of the specified partition moves are active.")
    return 0


def list_reassignments(backend: Backend, opts: argparse.Namespace) -> int:
    ongoing = backend.ongoing()
    if not ongoing:
        print("No partition reassignments found.")
        return 0
    print("Current partition reassignments:")
    for tp, a in sorted(ongoing.items()):
        adding = f" adding: {','.join(map(str, a.adding))}." if a.adding else ""
        removing = f" removing: {','.join(map(str, a.removing))}." if a.removing else ""
        print(f"{tp_str(tp)}: replicas: {','.join(map(str, a.replicas))}.{adding}{removing}")
    return 0


HANDLERS = {"generate": generate, "execute": execute, "verify": verify, "cancel": cancel, "list": list_reassignments}


def main(argv: list[str]) -> int:
    def body() -> int:
        opts = build_parser().parse_args(argv)
        action = chosen_action(opts)
        if opts.zookeeper and action != "cancel":
            print("Warning: --zookeeper is deprecated, and will be removed in a future version of Kafka.")
            with ZkSession(opts.zookeeper, int(REQUEST_TIMEOUT_S * 1000)) as zk:
                return HANDLERS[action](ZkBackend(zk), opts)
        with admin_connection(opts) as conn:
            return HANDLERS[action](KafkaBackend(conn), opts)

    return run_tool(body)
