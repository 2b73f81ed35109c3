"""`odradek topics`: create, list, describe, alter and delete topics, like Kafka's kafka-topics.sh.

Flags, messages and the `--describe` layout follow Kafka's TopicCommand so its users feel at home.
With `--bootstrap-server` all requests go through confluent-kafka's AdminClient with bounded timeouts;
with `--zookeeper HOST:PORT[/chroot]` (Kafka 0.9-2.x style, cluster mode) the znodes are read and
written directly, see :mod:`odradek.cli.zkadmin`. Both print the topic model of
:mod:`odradek.cli.topic_model`.
"""

from __future__ import annotations

import argparse
import base64
import struct
import sys
import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import (
    AdminClient,
    ConfigEntry,
    ConfigSource,
    NewPartitions,
    NewTopic,
)

from odradek.admin_client.command import ArgParser, run_tool
from odradek.admin_client.connect import (
    DEFAULT_REQUEST_TIMEOUT_MS,
    add_bootstrap_flags,
    bootstrap_of,
    open_client,
    read_properties_file,
)
from odradek.admin_client.errors import CliError, UsageError, kafka_message
from odradek.admin_client.topic_configs import topic_resource
from odradek.cli.common import add_zookeeper_flag, one_action, parse_key_values
from odradek.cli.topic_model import (
    INTERNAL_TOPICS,
    MIN_ISR_KEY,
    PartitionInfo,
    Report,
    TopicCommandError,
    TopicInfo,
    describe_lines,
    existing_topics,
    matching_topics,
    parse_replica_assignment,
    validate_topic_name,
    warn_if_colliding,
)

ACTIONS = ("create", "list", "describe", "alter", "delete")
CONTROLLER_TRY_TIMEOUT_S = 5.0


class NoController(Exception):
    """A request librdkafka sends to the controller timed out (no controller, or a dead one)."""


# --- flags ------------------------------------------------------------------------------------


def build_parser() -> ArgParser:
    parser = ArgParser(
        "topics",
        "Create, delete, describe, or change a topic.",
        epilog="Exactly one action is required: --create, --list, --describe, --alter or --delete.",
    )
    add_bootstrap_flags(parser)
    add_zookeeper_flag(parser, "DEPRECATED (Kafka 0.9-2.x): work on the cluster's znodes in ZooKeeper (cluster mode only)",
                       "HOST:PORT[,HOST:PORT][/chroot]")
    parser.add_argument("--command-config", metavar="FILE", help="admin client properties file")
    actions = parser.add_argument_group("actions")
    for action in ACTIONS:
        actions.add_argument(f"--{action}", action="store_true", help=_ACTION_HELP[action])
    _add_topic_flags(parser)
    _add_report_flags(parser)
    parser.add_argument(
        "--command-timeout",
        type=int,
        default=DEFAULT_REQUEST_TIMEOUT_MS,
        metavar="MS",
        help=f"timeout of each request to the broker (default {DEFAULT_REQUEST_TIMEOUT_MS})",
    )
    return parser


_ACTION_HELP = {
    "create": "create a new topic",
    "list": "list all available topics",
    "describe": "list details for the given topics",
    "alter": "alter the number of partitions and/or the configuration of a topic",
    "delete": "delete a topic",
}


def _add_topic_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topic", metavar="TOPIC", help="the topic; a regular expression except with --create")
    parser.add_argument("--partitions", type=int, metavar="N", help="number of partitions (create, alter)")
    parser.add_argument("--replication-factor", type=int, metavar="N", help="replication factor (create)")
    parser.add_argument(
        "--replica-assignment",
        metavar="B0:B1,B1:B2",
        help="manual assignment: partitions separated by ',', their broker ids by ':'",
    )
    parser.add_argument("--config", action="append", metavar="NAME=VALUE", help="a topic config override")
    parser.add_argument("--delete-config", action="append", metavar="NAME", help="remove a config override (alter)")
    parser.add_argument("--if-not-exists", action="store_true", help="create only if the topic does not exist")
    parser.add_argument("--if-exists", action="store_true", help="alter/describe/delete only if the topic exists")
    parser.add_argument("--disable-rack-aware", action="store_true", help="accepted for compatibility (no racks)")
    parser.add_argument("--force", action="store_true", help="accepted for compatibility (there are no prompts)")


def _add_report_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--exclude-internal", action="store_true", help="leave out internal topics")
    parser.add_argument("--topics-with-overrides", action="store_true", help="describe topics with overrides only")
    parser.add_argument(
        "--under-replicated-partitions", action="store_true", help="describe under-replicated partitions only"
    )
    parser.add_argument(
        "--unavailable-partitions", action="store_true", help="describe partitions without a live leader only"
    )
    parser.add_argument(
        "--under-min-isr-partitions", action="store_true", help="describe partitions with ISR < min.insync.replicas"
    )
    parser.add_argument(
        "--at-min-isr-partitions", action="store_true", help="describe partitions with ISR = min.insync.replicas"
    )


def parse_args(argv: list[str]) -> argparse.Namespace:
    opts = build_parser().parse_args(argv)
    validate(opts)
    return opts


def chosen_action(opts: argparse.Namespace) -> str:
    return one_action(opts, ACTIONS,
                      "Command must include exactly one action: --list, --describe, --create, --alter or --delete")


def validate(opts: argparse.Namespace) -> None:
    """Kafka's cross-flag checks, each failing with one line."""
    if opts.zookeeper and (opts.bootstrap_server or opts.command_config):
        raise UsageError("Error: Only one of --bootstrap-server or --zookeeper must be specified")
    if not opts.zookeeper:
        bootstrap_of(opts)
    action = chosen_action(opts)
    if action in ("create", "alter", "delete") and not opts.topic:
        raise UsageError('Error: Missing required argument "[topic]"')
    _only_with(opts, "partitions", ("create", "alter"), action)
    _only_with(opts, "replication_factor", ("create",), action)
    _only_with(opts, "replica_assignment", ("create", "alter"), action)
    _only_with(opts, "config", ("create", "alter"), action)
    _only_with(opts, "delete_config", ("alter",), action)
    _only_with(opts, "if_not_exists", ("create",), action)
    _only_with(opts, "if_exists", ("alter", "describe", "delete"), action)
    if opts.replica_assignment and (opts.replication_factor is not None or
                                    (action == "create" and opts.partitions is not None)):
        raise UsageError("Error: --replica-assignment can't be used with --partitions or --replication-factor")
    if opts.partitions is not None and opts.partitions < 1:
        raise UsageError("Error: The partitions must be greater than 0")
    if opts.replication_factor is not None and not 1 <= opts.replication_factor <= 32767:
        raise UsageError("Error: The replication factor must be between 1 and 32767")
    if action == "alter" and not (opts.partitions or opts.config or opts.delete_config):
        raise UsageError("Error: --alter needs --partitions, --config or --delete-config")


def _only_with(opts: argparse.Namespace, dest: str, allowed: tuple[str, ...], action: str) -> None:
    value = getattr(opts, dest)
    if value in (None, False, []) or action in allowed:
        return
    flag = "--" + dest.replace("_", "-")
    raise UsageError(f'Error: Option "[{flag.lstrip("-")}]" can\'t be used with option "[{action}]"')


# --- talking to the broker --------------------------------------------------------------------


class Topics:
    """The actions of the tool, over one AdminClient."""

    def __init__(self, admin: AdminClient, opts: argparse.Namespace, metadata: Any = None) -> None:
        self.admin = admin
        self.opts = opts
        self.timeout = opts.command_timeout / 1000
        self.metadata: Any = metadata

    # Shared lookups

    def refresh(self) -> Any:
        self.metadata = self.admin.list_topics(timeout=self.timeout)
        return self.metadata

    def topic_names(self) -> list[str]:
        return matching_topics((self.metadata or self.refresh()).topics, self.opts)

    def existing_topics(self) -> list[str]:
        return existing_topics((self.metadata or self.refresh()).topics, self.opts)

    def wait_for(self, future: Any, topic: str) -> None:
        """Wait for a request about `topic`; its failure in the words of Kafka's TopicCommand."""
        try:
            wait(future, self.timeout)
        except KafkaException as exc:
            raise TopicCommandError(topic_error_text(exc, topic)) from None

    # Actions

    def do_list(self) -> None:
        for name in self.topic_names():
            print(name)

    def do_create(self) -> None:
        name = self.opts.topic
        validate_topic_name(name)
        if self.opts.if_not_exists and name in self.refresh().topics:
            return
        warn_if_colliding(name)
        future = self.admin.create_topics(
            [self.new_topic(name)], request_timeout=self.timeout, operation_timeout=self.timeout
        )[name]
        try:
            wait(future, self.timeout)
        except KafkaException as exc:
            if self.opts.if_not_exists and _is_code(exc, "TOPIC_ALREADY_EXISTS"):
                return
            raise TopicCommandError(topic_error_text(exc, name)) from None
        print(f"Created topic {name}.")

    def new_topic(self, name: str) -> NewTopic:
        configs = parse_key_values(self.opts.config, "--config")
        if self.opts.replica_assignment:
            assignment = parse_replica_assignment(self.opts.replica_assignment)
            # librdkafka wants the real partition count alongside an assignment (and no replication factor).
            return NewTopic(name, num_partitions=len(assignment), replica_assignment=assignment, config=configs)
        partitions = -1 if self.opts.partitions is None else self.opts.partitions
        factor = -1 if self.opts.replication_factor is None else self.opts.replication_factor
        return NewTopic(name, num_partitions=partitions, replication_factor=factor, config=configs)

    def do_alter(self) -> None:
        names = self.existing_topics()
        if not names:
            return
        if self.opts.partitions is not None:
            self.add_partitions(names)
        if self.opts.config or self.opts.delete_config:
            self.alter_configs(names)

    def add_partitions(self, names: list[str]) -> None:
        requests = [self.new_partitions(name) for name in names]
        futures = self.admin.create_partitions(requests, request_timeout=self.timeout, operation_timeout=self.timeout)
        for name in names:
            self.wait_for(futures[name], name)

    def new_partitions(self, name: str) -> NewPartitions:
        total = self.opts.partitions
        if not self.opts.replica_assignment:
            return NewPartitions(name, total)
        assignment = parse_replica_assignment(self.opts.replica_assignment)
        existing = len(self.metadata.topics[name].partitions)
        if len(assignment) == total:
            assignment = assignment[existing:]
        if len(assignment) != total - existing:
            raise TopicCommandError(
                f"The replica assignment lists {len(assignment)} new partitions, expected {total - existing}"
            )
        return NewPartitions(name, total, replica_assignment=assignment)

    def alter_configs(self, names: list[str]) -> None:
        changes: list[tuple[str, str | None]] = [*parse_key_values(self.opts.config, "--config").items()]
        changes += [(k, None) for k in self.opts.delete_config or ()]
        resources = [topic_resource(n, changes) for n in names]
        futures = self.admin.incremental_alter_configs(resources, request_timeout=self.timeout)
        for resource, future in futures.items():
            self.wait_for(future, resource.name)
            print(f"Updated config for topic {resource.name}.")

    def do_delete(self) -> None:
        names = self.existing_topics()
        if not names:
            return
        futures = self.admin.delete_topics(names, request_timeout=self.timeout, operation_timeout=self.timeout)
        for name in names:
            self.wait_for(futures[name], name)

    def do_describe(self) -> None:
        names = self.existing_topics()
        if not names:
            return
        infos, configs = self.describe_with_retries(names)
        live = {b for b in self.metadata.brokers}
        for info in infos:
            for line in describe_lines(info, configs.get(info.name, {}), Report.from_opts(self.opts), live):
                print(line)

    def describe_with_retries(self, names: list[str]) -> tuple[list[TopicInfo], dict[str, dict[str, str]]]:
        """DescribeTopics and DescribeConfigs, which librdkafka sends to the controller. While a fail-over
        is under way the client may keep waiting for a controller that is gone: each try is short, and
        the next one starts from a fresh client (fresh metadata, the new controller) until the timeout."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return self.describe_topics(names), self.describe_configs(names)
            except NoController:
                if time.monotonic() >= deadline:
                    raise CliError(
                        f"Error: no controller answered within {self.opts.command_timeout} ms"
                    ) from None
                self.admin, self.metadata = connect(self.opts)

    def describe_topics(self, names: list[str]) -> list[TopicInfo]:
        timeout = self.try_timeout()
        try:
            futures = self.admin.describe_topics(TopicCollection(names), request_timeout=timeout)
        except KafkaException as exc:
            if _is_code(exc, "_UNSUPPORTED_FEATURE"):
                return [info_from_metadata(self.metadata.topics[n]) for n in names]
            raise
        infos = []
        for name in names:
            try:
                infos.append(info_from_description(wait(futures[name], timeout)))
            except KafkaException as exc:
                if self.opts.if_exists and _is_code(exc, "UNKNOWN_TOPIC_OR_PART"):
                    continue
                if _is_code(exc, "_TIMED_OUT"):
                    raise NoController() from None
                raise TopicCommandError(topic_error_text(exc, name)) from None
        return infos

    def try_timeout(self) -> float:
        return min(self.timeout, CONTROLLER_TRY_TIMEOUT_S)

    def describe_configs(self, names: list[str]) -> dict[str, dict[str, str]]:
        """Per topic: its overrides (DYNAMIC_TOPIC_CONFIG) plus min.insync.replicas."""
        resources = [topic_resource(n) for n in names]
        timeout = self.try_timeout()
        futures = self.admin.describe_configs(resources, request_timeout=timeout)
        result: dict[str, dict[str, str]] = {}
        for resource, future in futures.items():
            try:
                entries = wait(future, timeout)
            except KafkaException as exc:
                if _is_code(exc, "UNKNOWN_TOPIC_OR_PART"):
                    continue
                if _is_code(exc, "_TIMED_OUT"):
                    raise NoController() from None
                raise TopicCommandError(topic_error_text(exc, resource.name)) from None
            result[resource.name] = configs_of(entries.values())
        return result


def configs_of(entries: Iterable[ConfigEntry]) -> dict[str, str]:
    """Overrides of a topic, plus its effective min.insync.replicas under a private key."""
    result: dict[str, str] = {}
    for entry in entries:
        if _source(entry) == ConfigSource.DYNAMIC_TOPIC_CONFIG.value:
            result[entry.name] = "" if entry.value is None else str(entry.value)
        if entry.name == "min.insync.replicas" and entry.value is not None:
            result[MIN_ISR_KEY] = str(entry.value)
    return result


def _source(entry: ConfigEntry) -> int:
    source: Any = entry.source
    return int(getattr(source, "value", source))


def topic_id_text(topic_id: Any) -> str | None:
    """Kafka's rendering of a topic id (URL-safe base64, unpadded); None for a missing/zero id."""
    if topic_id is None:
        return None
    high, low = topic_id.get_most_significant_bits(), topic_id.get_least_significant_bits()
    if not (high or low):
        return None
    raw = struct.pack(">qq", high, low)
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def info_from_description(desc: Any) -> TopicInfo:
    shown_id = topic_id_text(desc.topic_id)
    partitions = [
        PartitionInfo(
            p.id,
            p.leader.id if p.leader is not None else -1,
            [n.id for n in p.replicas],
            [n.id for n in p.isr],
        )
        for p in desc.partitions
    ]
    return TopicInfo(desc.name, shown_id, bool(desc.is_internal), sorted(partitions, key=lambda p: p.id))


def info_from_metadata(meta: Any) -> TopicInfo:
    partitions = [
        PartitionInfo(p.id, p.leader, list(p.replicas), list(p.isrs)) for p in meta.partitions.values()
    ]
    return TopicInfo(meta.topic, None, meta.topic in INTERNAL_TOPICS, sorted(partitions, key=lambda p: p.id))


# --- errors -----------------------------------------------------------------------------------


def wait(future: Any, timeout: float) -> Any:
    """A future's result within `timeout` seconds (plus slack for librdkafka's own timer)."""
    try:
        return future.result(timeout=timeout + 5)
    except TimeoutError:
        raise CliError(f"Error: no answer from the broker within {int(timeout * 1000)} ms") from None


def _is_code(exc: KafkaException, name: str) -> bool:
    err = exc.args[0] if exc.args else None
    return bool(err is not None and hasattr(err, "name") and err.name() == name)


def topic_error_text(exc: KafkaException, topic: str) -> str:
    """Kafka's wording for the common per-topic errors; the broker's message otherwise."""
    if _is_code(exc, "TOPIC_ALREADY_EXISTS"):
        return f"Topic '{topic}' already exists."
    if _is_code(exc, "UNKNOWN_TOPIC_OR_PART"):
        return f"Topic '{topic}' does not exist as expected"
    return kafka_message(exc)


# --- entry point ------------------------------------------------------------------------------


def connect(opts: argparse.Namespace) -> tuple[AdminClient, Any]:
    """An AdminClient for --bootstrap-server, and the cluster metadata proving it is reachable."""
    return open_client(AdminClient, bootstrap_of(opts), read_properties_file(opts.command_config),
                       defaults={"socket.timeout.ms": opts.command_timeout},
                       timeout_ms=min(opts.command_timeout, 10_000))


def execute(argv: list[str]) -> int:
    opts = parse_args(argv)
    action = chosen_action(opts)
    if opts.zookeeper:
        from odradek.cli import zkadmin  # kazoo only when asked for

        return zkadmin.execute_topics(opts, action)
    admin, metadata = connect(opts)
    topics = Topics(admin, opts, metadata)
    getattr(topics, f"do_{action}")()
    sys.stdout.flush()
    return 0


def main(argv: list[str]) -> int:
    return run_tool(lambda: execute(argv))
