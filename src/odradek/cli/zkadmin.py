"""Topic administration directly through ZooKeeper, for `topics --zookeeper` and `console-consumer --zookeeper`.

Kafka up to 2.x let kafka-topics.sh work on the znodes of a cluster instead of asking a broker
(TopicCommand with ``--zookeeper HOST:PORT[,HOST:PORT][/chroot]``), and the 0.8-era console consumer
found its brokers through ZooKeeper. The guides our users follow still type those commands, so:

* the topic actions write the znodes the brokers and the controller act on, through the same code the
  brokers use (:mod:`odradek.cluster.admin`, :func:`~odradek.cluster.assignment.assign_replicas`,
  :class:`~odradek.cluster.znodes.TopicAssignment`): ``/config/topics/<t>`` then ``/brokers/topics/<t>``
  to create, ``/admin/delete_topics/<t>`` to delete, and they read ``/brokers/ids`` (live brokers) and the
  partition states to describe, printing exactly what ``--bootstrap-server`` prints;
* :func:`bootstrap_from_zookeeper` turns the brokers registered in ``/brokers/ids`` into bootstrap servers.

ZooKeeper is reached through :class:`~odradek.cli.zk_session.ZkSession` (which also says, in one line,
when there is no cluster at the address), and topics are shown with :mod:`odradek.cli.topic_model`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from odradek.admin_client.errors import CliError, UsageError
from odradek.cli import topic_model as model
from odradek.cli.common import parse_key_values
from odradek.cli.topic_model import TopicCommandError
from odradek.cli.zk_session import (
    MAX_CONNECT_TIMEOUT_MS,
    ZkSession,
    children,
    live_brokers,
    read_partition_state,
    read_topic,
    read_topic_config,
    read_topic_znode,
    topic_names,
)
from odradek.cluster import admin
from odradek.cluster import znodes as zn
from odradek.cluster.assignment import assign_replicas
from odradek.cluster.store import MetadataStore
from odradek.config import ConfigError, validate_topic_configs
from odradek.protocol.errors import KafkaError

POLL_INTERVAL_S = 0.1
PARTITIONS_WARNING = (
    "WARNING: If partitions are increased for a topic that has a key, the partition logic or ordering of the "
    "messages will be affected"
)
DELETE_NOTE = "Note: This will have no impact if delete.topic.enable is not set to true."


# --- reading the cluster ----------------------------------------------------------------------


async def topic_info(store: MetadataStore, name: str) -> model.TopicInfo | None:
    """A topic as --describe shows it: replicas from the assignment, leader and ISR from the states."""
    found = await read_topic_znode(store, name)
    if found is None:
        return None
    raw, assignment = found
    partitions = []
    for pid, replicas in sorted(assignment.partitions.items()):
        state = await read_partition_state(store, name, pid)
        leader, isr = (state.leader, list(state.isr)) if state is not None else (-1, [])
        partitions.append(model.PartitionInfo(pid, leader, list(replicas), isr))
    shown_id = zn.uuid_to_str(assignment.topic_id) if raw.get("topic_id") else None
    return model.TopicInfo(name, shown_id, name in model.INTERNAL_TOPICS, partitions)


async def wait_for_states(store: MetadataStore, name: str, partitions: list[int], timeout_s: float) -> bool:
    """Wait until the controller has written the state of every partition in `partitions`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    pending = list(partitions)
    while pending:
        pending = [p for p in pending if await store.exists(zn.partition_state_path(name, p)) is None]
        if not pending:
            return True
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(POLL_INTERVAL_S)
    return True


async def wait_gone(store: MetadataStore, path: str, timeout_s: float) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while await store.exists(path) is not None:
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(POLL_INTERVAL_S)
    return True


def checked_configs(configs: dict[str, str]) -> dict[str, str]:
    try:
        return validate_topic_configs(configs)
    except ConfigError as exc:
        raise TopicCommandError(str(exc)) from None


def check_assignment(assignment: dict[int, list[int]], live: set[int], first: int = 0) -> None:
    """The checks a broker applies to a manual assignment (so both paths refuse the same input)."""
    if sorted(assignment) != list(range(first, first + len(assignment))):
        raise TopicCommandError("Partitions must be consecutive from 0")
    unknown = sorted({b for replicas in assignment.values() for b in replicas if b not in live})
    if unknown:
        raise TopicCommandError(f"Unknown broker(s) {unknown} in assignment")


# --- the actions ------------------------------------------------------------------------------


class ZkTopics:
    """`topics --zookeeper`: the actions of TopicCommand, on the znodes."""

    def __init__(self, store: MetadataStore, opts: argparse.Namespace) -> None:
        self.store = store
        self.opts = opts
        self.timeout_s = opts.command_timeout / 1000

    async def existing(self) -> list[str]:
        return model.existing_topics(await topic_names(self.store), self.opts)

    async def do_list(self) -> None:
        deleting = set(await children(self.store, zn.DELETE_TOPICS))
        for name in model.matching_topics(await topic_names(self.store), self.opts):
            print(f"{name} - marked for deletion" if name in deleting else name)

    async def do_describe(self) -> None:
        names = await self.existing()
        live = set(await live_brokers(self.store))
        report = model.Report.from_opts(self.opts)
        for name in names:
            info = await topic_info(self.store, name)
            if info is None:
                continue
            configs = await read_topic_config(self.store, name)
            if "min.insync.replicas" in configs:
                configs[model.MIN_ISR_KEY] = configs["min.insync.replicas"]
            for line in model.describe_lines(info, configs, report, live):
                print(line)

    async def do_create(self) -> None:
        name = self.opts.topic
        model.validate_topic_name(name)
        if await self.store.exists(zn.topic_path(name)) is not None:
            if self.opts.if_not_exists:
                return
            raise TopicCommandError(f"Topic '{name}' already exists.")
        configs = checked_configs(parse_key_values(self.opts.config, "--config"))
        live = set(await live_brokers(self.store))
        assignment = self.new_assignment(sorted(live))
        model.warn_if_colliding(name)
        try:
            await admin.create_topic(self.store, name, assignment, configs)
        except KafkaError as exc:
            if self.opts.if_not_exists and "already exists" in str(exc):
                return
            raise TopicCommandError(str(exc)) from None
        if not await wait_for_states(self.store, name, sorted(assignment), self.timeout_s):
            raise TopicCommandError(
                f"Topic '{name}' was written to ZooKeeper, but no controller created its partitions within "
                f"{self.opts.command_timeout} ms (are the brokers running?)"
            )
        print(f"Created topic {name}.")

    def new_assignment(self, live: list[int]) -> dict[int, list[int]]:
        if self.opts.replica_assignment:
            assignment = dict(enumerate(model.parse_replica_assignment(self.opts.replica_assignment)))
            check_assignment(assignment, set(live))
            return assignment
        if self.opts.partitions is None:
            raise UsageError('Error: Missing required argument "[partitions]"')
        if self.opts.replication_factor is None:
            raise UsageError('Error: Missing required argument "[replication-factor]"')
        try:
            return assign_replicas(live, self.opts.partitions, self.opts.replication_factor)
        except KafkaError as exc:
            raise TopicCommandError(str(exc)) from None

    async def do_alter(self) -> None:
        names = await self.existing()
        for name in names:
            if self.opts.partitions is not None:
                await self.add_partitions(name)
            if self.opts.config or self.opts.delete_config:
                await self.alter_config(name)

    async def add_partitions(self, name: str) -> None:
        if name == "__consumer_offsets":
            raise TopicCommandError("The number of partitions for the offsets topic cannot be changed.")
        topic = await read_topic(self.store, name)
        if topic is None:
            raise TopicCommandError(f"Topic '{name}' does not exist as expected")
        current = topic.partitions
        total = self.opts.partitions
        if total <= len(current):
            raise TopicCommandError(
                f"The number of partitions for a topic can only be increased. Topic {name} currently has "
                f"{len(current)} partitions, {total} would not be an increase."
            )
        live = sorted(await live_brokers(self.store))
        new = self.added_assignment(len(current), total, current, live)
        print(PARTITIONS_WARNING)
        try:
            await admin.add_partitions(self.store, name, new)
        except KafkaError as exc:
            raise TopicCommandError(str(exc)) from None
        if not await wait_for_states(self.store, name, sorted(new), self.timeout_s):
            raise TopicCommandError(
                f"The new partitions of topic '{name}' were written to ZooKeeper, but no controller created them "
                f"within {self.opts.command_timeout} ms"
            )
        print("Adding partitions succeeded!")

    def added_assignment(
        self, existing: int, total: int, current: dict[int, list[int]], live: list[int]
    ) -> dict[int, list[int]]:
        if self.opts.replica_assignment:
            listed = model.parse_replica_assignment(self.opts.replica_assignment)
            if len(listed) == total:
                listed = listed[existing:]
            if len(listed) != total - existing:
                raise TopicCommandError(
                    f"The replica assignment lists {len(listed)} new partitions, expected {total - existing}"
                )
            new = {existing + i: replicas for i, replicas in enumerate(listed)}
            check_assignment(new, set(live), first=existing)
            return new
        factor = len(next(iter(current.values()))) if current else 1
        try:
            return assign_replicas(live, total - existing, factor, start_partition=existing)
        except KafkaError as exc:
            raise TopicCommandError(str(exc)) from None

    async def alter_config(self, name: str) -> None:
        config = await read_topic_config(self.store, name)
        config.update(parse_key_values(self.opts.config, "--config"))
        for key in self.opts.delete_config or ():
            config.pop(key, None)
        try:
            await admin.set_topic_config(self.store, name, checked_configs(config))
        except KafkaError as exc:
            raise TopicCommandError(str(exc)) from None
        print(f"Updated config for topic {name}.")

    async def do_delete(self) -> None:
        names = await self.existing()
        controller = await self.store.exists(zn.CONTROLLER) is not None
        for name in names:
            if name in model.INTERNAL_TOPICS:
                raise TopicCommandError(
                    f"Topic {name} is a kafka internal topic and is not allowed to be marked for deletion."
                )
            try:
                await admin.mark_topic_for_deletion(self.store, name)
            except KafkaError as exc:
                raise TopicCommandError(str(exc)) from None
            if controller:  # the controller consumes the marker at once: wait, so a re-create works
                await wait_gone(self.store, f"{zn.DELETE_TOPICS}/{name}", self.timeout_s)
            print(f"Topic {name} is marked for deletion.")
            print(DELETE_NOTE)


def execute_topics(opts: argparse.Namespace, action: str) -> int:
    """Run `topics --<action>` against ZooKeeper (`--zookeeper`)."""

    async def body(store: MetadataStore) -> None:
        await getattr(ZkTopics(store, opts), f"do_{action}")()

    with ZkSession(opts.zookeeper, opts.command_timeout) as zk:
        zk.run(body)
    sys.stdout.flush()
    return 0


# --- the old consumer's --zookeeper -----------------------------------------------------------


def bootstrap_from_zookeeper(connect: str, timeout_ms: int = MAX_CONNECT_TIMEOUT_MS) -> str:
    """`host:port,...` of the brokers registered in ZooKeeper at `connect`, or a one-line error."""

    async def body(store: MetadataStore) -> str:
        brokers = await live_brokers(store)
        if not brokers:
            raise CliError(f"Error: no broker is registered in ZooKeeper at {connect} (under {zn.BROKER_IDS})")
        return ",".join(f"{b.host or '127.0.0.1'}:{b.port}" for _, b in sorted(brokers.items()))

    with ZkSession(connect, timeout_ms) as zk:
        return zk.run(body)
