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

A single-node broker keeps its metadata in process, without ZooKeeper: when nothing answers at the
address, or ZooKeeper answers without ``/brokers/ids``, the tools say so in one line and point to
``--bootstrap-server``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from odradek.cli.common import CliError, UsageError, parse_key_values
from odradek.cli.topics import (
    INTERNAL_TOPICS,
    MIN_ISR_KEY,
    PartitionInfo,
    Report,
    TopicCommandError,
    TopicInfo,
    chosen_action,
    describe_lines,
    parse_replica_assignment,
    topic_pattern,
    validate_topic_name,
)
from odradek.cluster import admin
from odradek.cluster import znodes as zn
from odradek.cluster.assignment import assign_replicas
from odradek.cluster.store import MetadataStore, NoNodeError, StoreError
from odradek.config import ConfigError, validate_topic_configs
from odradek.protocol.errors import KafkaError

DEFAULT_ZK_PORT = 2181
PROBE_TIMEOUT_S = 1.0
SESSION_TIMEOUT_MS = 10_000
MAX_CONNECT_TIMEOUT_MS = 15_000
POLL_INTERVAL_S = 0.1
QUIET_LOGGERS = ("kazoo", "kazoo.client", "odradek.zookeeper")
NO_CLUSTER = (
    "Error: no Odradek cluster found in ZooKeeper at {connect} (a single-node broker runs without ZooKeeper): "
    "use --bootstrap-server instead"
)
PARTITIONS_WARNING = (
    "WARNING: If partitions are increased for a topic that has a key, the partition logic or ordering of the "
    "messages will be affected"
)
DELETE_NOTE = "Note: This will have no impact if delete.topic.enable is not set to true."
T = TypeVar("T")


class NoClusterError(CliError):
    """Nothing at the ZooKeeper address, or no Odradek/Kafka cluster registered there."""

    def __init__(self, connect: str) -> None:
        super().__init__(NO_CLUSTER.format(connect=connect))


# --- connecting -------------------------------------------------------------------------------


def quiet_logging() -> None:
    """kazoo and the store log reconnects as warnings: a command-line tool must not print them."""
    for name in QUIET_LOGGERS:
        logger = logging.getLogger(name)
        logger.addHandler(logging.NullHandler())
        logger.propagate = False


def zk_hosts(connect: str) -> list[tuple[str, int]]:
    """`h1:2181,h2/chroot` -> [('h1', 2181), ('h2', 2181)]; a UsageError when a port is not a number."""
    hosts, _, _ = connect.partition("/")
    result: list[tuple[str, int]] = []
    for item in hosts.split(","):
        item = item.strip()
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep:
            host, port = item, str(DEFAULT_ZK_PORT)
        if not port.isdigit() or not 0 < int(port) <= 65535:
            raise UsageError(f"Error: invalid --zookeeper '{connect}': expected HOST:PORT[,HOST:PORT...][/chroot]")
        result.append((host.strip("[]") or "127.0.0.1", int(port)))
    if not result:
        raise UsageError(f"Error: invalid --zookeeper '{connect}': expected HOST:PORT[,HOST:PORT...][/chroot]")
    return result


def any_answers(hosts: list[tuple[str, int]], timeout: float = PROBE_TIMEOUT_S) -> bool:
    """Whether some server accepts a TCP connection (so kazoo is not left retrying nothing)."""
    for host, port in hosts:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return True
        except OSError:
            continue
    return False


def has_cluster(connect: str, timeout_s: float) -> bool:
    """Whether ZooKeeper at `connect` (chroot included) holds /brokers/ids, without writing anything."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import KazooException
    from kazoo.handlers.threading import KazooTimeoutError

    client = KazooClient(hosts=connect, timeout=SESSION_TIMEOUT_MS / 1000, logger=logging.getLogger("kazoo.client"))
    try:
        client.start(timeout=timeout_s)
    except KazooTimeoutError:
        client.close()
        return False
    try:
        return client.exists(zn.BROKER_IDS) is not None
    except KazooException:
        return False
    finally:
        client.stop()
        client.close()


@asynccontextmanager
async def open_store(connect: str, timeout_ms: int) -> AsyncIterator[MetadataStore]:
    """A started ZooKeeperStore on a ZooKeeper that holds a cluster, or NoClusterError."""
    from odradek.cluster.zk import ZooKeeperStore

    quiet_logging()
    if not any_answers(zk_hosts(connect)):
        raise NoClusterError(connect)
    connect_timeout_ms = min(timeout_ms, MAX_CONNECT_TIMEOUT_MS)
    loop = asyncio.get_running_loop()
    if not await loop.run_in_executor(None, has_cluster, connect, connect_timeout_ms / 1000):
        raise NoClusterError(connect)
    store = ZooKeeperStore(connect, session_timeout_ms=SESSION_TIMEOUT_MS, connection_timeout_ms=connect_timeout_ms)
    try:
        await store.start()
    except StoreError as exc:
        raise CliError(f"Error: {exc}") from None
    try:
        yield store
    finally:
        await store.close()


def run_with_store(connect: str, timeout_ms: int, body: Callable[[MetadataStore], Awaitable[T]]) -> T:
    """Run `body(store)` on a fresh event loop; store failures become one-line errors."""

    async def main() -> T:
        async with open_store(connect, timeout_ms) as store:
            try:
                return await body(store)
            except StoreError as exc:
                raise CliError(f"Error: ZooKeeper at {connect}: {exc}") from None

    return asyncio.run(main())


# --- reading the cluster ----------------------------------------------------------------------


async def live_brokers(store: MetadataStore) -> dict[int, zn.BrokerInfo]:
    """The brokers registered under /brokers/ids (malformed registrations are skipped)."""
    brokers: dict[int, zn.BrokerInfo] = {}
    for child in await store.get_children(zn.BROKER_IDS):
        if not child.isdigit():
            continue
        try:
            data, _ = await store.get_json(zn.broker_path(int(child)))
            brokers[int(child)] = zn.BrokerInfo.from_json(int(child), data)
        except (NoNodeError, StoreError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return brokers


async def all_topics(store: MetadataStore) -> list[str]:
    try:
        return sorted(await store.get_children(zn.BROKER_TOPICS))
    except NoNodeError:
        return []


async def marked_for_deletion(store: MetadataStore) -> set[str]:
    try:
        return set(await store.get_children(zn.DELETE_TOPICS))
    except NoNodeError:
        return set()


async def read_assignment(store: MetadataStore, name: str) -> tuple[dict[str, Any], zn.TopicAssignment] | None:
    """The raw JSON and parsed content of /brokers/topics/<name>, or None when it is gone."""
    try:
        data, _ = await store.get_json(zn.topic_path(name))
    except NoNodeError:
        return None
    try:
        return data, zn.TopicAssignment.from_json(data)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise TopicCommandError(f"The znode {zn.topic_path(name)} is malformed") from None


async def read_config(store: MetadataStore, name: str) -> dict[str, str]:
    """The overrides of a topic (/config/topics/<name>)."""
    try:
        data, _ = await store.get_json(zn.topic_config_path(name))
    except NoNodeError:
        return {}
    config = data.get("config", {}) if isinstance(data, dict) else {}
    return {str(k): str(v) for k, v in (config or {}).items()}


async def read_state(store: MetadataStore, name: str, partition: int) -> zn.PartitionState | None:
    try:
        data, stat = await store.get_json(zn.partition_state_path(name, partition))
        return zn.PartitionState.from_json(data, stat.version)
    except NoNodeError:
        return None
    except (KeyError, TypeError, ValueError):
        return None


async def topic_info(store: MetadataStore, name: str) -> TopicInfo | None:
    """A topic as --describe shows it: replicas from the assignment, leader and ISR from the states."""
    found = await read_assignment(store, name)
    if found is None:
        return None
    raw, assignment = found
    partitions = []
    for pid, replicas in sorted(assignment.partitions.items()):
        state = await read_state(store, name, pid)
        leader, isr = (state.leader, list(state.isr)) if state is not None else (-1, [])
        partitions.append(PartitionInfo(pid, leader, list(replicas), isr))
    shown_id = zn.uuid_to_str(assignment.topic_id) if raw.get("topic_id") else None
    return TopicInfo(name, shown_id, name in INTERNAL_TOPICS, partitions)


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

    async def matching(self) -> list[str]:
        """Topics matching --topic (a regex), sorted; internal ones unless --exclude-internal."""
        names = await all_topics(self.store)
        if self.opts.topic:
            pattern = topic_pattern(self.opts.topic)
            names = [n for n in names if pattern.fullmatch(n)]
        if self.opts.exclude_internal:
            names = [n for n in names if n not in INTERNAL_TOPICS]
        return names

    async def existing(self) -> list[str]:
        names = await self.matching()
        if not names and self.opts.topic and not self.opts.if_exists:
            raise TopicCommandError(f"Topic '{self.opts.topic}' does not exist as expected")
        return names

    async def do_list(self) -> None:
        deleting = await marked_for_deletion(self.store)
        for name in await self.matching():
            print(f"{name} - marked for deletion" if name in deleting else name)

    async def do_describe(self) -> None:
        names = await self.existing()
        live = set(await live_brokers(self.store))
        report = Report(
            self.opts.topics_with_overrides,
            self.opts.under_replicated_partitions,
            self.opts.unavailable_partitions,
            self.opts.under_min_isr_partitions,
            self.opts.at_min_isr_partitions,
        )
        for name in names:
            info = await topic_info(self.store, name)
            if info is None:
                continue
            configs = await read_config(self.store, name)
            if "min.insync.replicas" in configs:
                configs[MIN_ISR_KEY] = configs["min.insync.replicas"]
            for line in describe_lines(info, configs, report, live):
                print(line)

    async def do_create(self) -> None:
        name = self.opts.topic
        validate_topic_name(name)
        if await self.store.exists(zn.topic_path(name)) is not None:
            if self.opts.if_not_exists:
                return
            raise TopicCommandError(f"Topic '{name}' already exists.")
        configs = checked_configs(parse_key_values(self.opts.config, "--config"))
        live = set(await live_brokers(self.store))
        assignment = self.new_assignment(sorted(live))
        if "." in name or "_" in name:
            print(
                "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') "
                "could collide. To avoid issues it is best to use either, but not both."
            )
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
            assignment = dict(enumerate(parse_replica_assignment(self.opts.replica_assignment)))
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
        found = await read_assignment(self.store, name)
        if found is None:
            raise TopicCommandError(f"Topic '{name}' does not exist as expected")
        current = found[1].partitions
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
            listed = parse_replica_assignment(self.opts.replica_assignment)
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
        config = await read_config(self.store, name)
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
            if name in INTERNAL_TOPICS:
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


def execute_topics(opts: argparse.Namespace) -> int:
    """Run the chosen `topics` action against ZooKeeper (`--zookeeper`)."""
    action = chosen_action(opts)

    async def body(store: MetadataStore) -> None:
        await getattr(ZkTopics(store, opts), f"do_{action}")()

    run_with_store(opts.zookeeper, opts.command_timeout, body)
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

    return run_with_store(connect, timeout_ms, body)
