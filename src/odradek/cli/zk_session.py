"""The one way the tools reach ZooKeeper: the deprecated ``--zookeeper`` of topics, console-consumer,
preferred-replica-election and reassign-partitions, and ``cluster up|status``.

They use the brokers' own metadata store (:class:`odradek.cluster.zk.ZooKeeperStore`) and znode layout
(:mod:`odradek.cluster.znodes`), through a blocking session so that each tool stays plain code::

    with ZkSession("h1:2181,h2:2181/chroot", timeout_ms=30_000) as zk:
        names = zk.run(topic_names)

A single-node broker keeps its metadata in process, without ZooKeeper: when nothing answers at the
address, or ZooKeeper answers without ``/brokers/ids``, the session fails in one line saying which of
the two it is and pointing to ``--bootstrap-server`` (unless asked not to, by a caller that waits for brokers to register). A tool
never creates the chroot. Store failures are one-line errors, and kazoo's own logging is kept quiet.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Concatenate, ParamSpec, TypeVar

from odradek.admin_client.errors import CliError, UsageError
from odradek.cluster import znodes as zn
from odradek.cluster.store import MetadataStore, NodeExistsError, NoNodeError, StoreError, to_json
from odradek.cluster.zk_security import ZkClientSecurity
from odradek.config_keys import ConfigError

DEFAULT_ZK_PORT = 2181
PROBE_TIMEOUT_S = 1.0
SESSION_TIMEOUT_MS = 10_000
MAX_CONNECT_TIMEOUT_MS = 15_000
QUIET_LOGGERS = ("kazoo", "odradek.zookeeper")
NO_CLUSTER = (
    "Error: ZooKeeper at {connect} holds no Odradek cluster (no brokers ever registered there; a single-node "
    "broker runs without ZooKeeper): use --bootstrap-server instead"
)
NO_ZOOKEEPER = (
    "Error: no ZooKeeper answers at {connect} (is it started? a single-node broker runs without ZooKeeper: "
    "use --bootstrap-server instead)"
)
T = TypeVar("T")
P = ParamSpec("P")


class NoClusterError(CliError):
    """Nothing at the ZooKeeper address, or no Odradek/Kafka cluster registered there."""

    def __init__(self, connect: str, message: str = NO_CLUSTER) -> None:
        super().__init__(message.format(connect=connect))


class NoZooKeeperError(NoClusterError):
    """Nothing accepts a connection at the ZooKeeper address."""

    def __init__(self, connect: str) -> None:
        super().__init__(connect, NO_ZOOKEEPER)


class ZooKeeperUnavailable(CliError):
    """No ZooKeeper session could be had at the address within the connection timeout."""

    def __init__(self, connect: str, timeout_ms: int) -> None:
        super().__init__(f"Error: Timed out waiting for connection to ZooKeeper at {connect} within {timeout_ms} ms")


def quiet_kazoo() -> None:
    """kazoo and the store log reconnects as warnings, and kazoo warns of a missing chroot: a command-line
    tool reports trouble itself, in one line."""
    for name in QUIET_LOGGERS:
        logger = logging.getLogger(name)
        logger.addHandler(logging.NullHandler())
        logger.propagate = False
    warnings.filterwarnings("ignore", category=UserWarning, module=r"kazoo\.")


def tool_security(zk_config: Mapping[str, str] | None = None) -> ZkClientSecurity:
    """How a tool's session authenticates, as Kafka's tools do: the JAAS `Client` section that
    -Djava.security.auth.login.config in $KAFKA_OPTS names, TLS from the zookeeper.* keys given; what it
    creates is ACLed (creator-only, world READ where not sensitive) when the session authenticates."""
    from odradek.security.zk_client import zk_client_security

    try:
        return zk_client_security(dict(zk_config or {}))
    except ConfigError as exc:
        raise CliError(f"Error: {exc}") from None


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


class ZkSession:
    """A ZooKeeper session for a tool: `run` calls one coroutine on the store and returns its result."""

    def __init__(self, connect: str, timeout_ms: int, *, require_cluster: bool = True,
                 zk_config: Mapping[str, str] | None = None) -> None:
        self.connect = connect
        self.zk_config = dict(zk_config or {})  # zookeeper.* keys, e.g. from --zk-tls-config-file
        self.connect_timeout_ms = min(timeout_ms, MAX_CONNECT_TIMEOUT_MS)
        self.require_cluster = require_cluster
        self._runner = asyncio.Runner()
        self._store: MetadataStore | None = None

    def __enter__(self) -> ZkSession:
        try:
            self._store = self._runner.run(self._open())
        except BaseException:
            self._runner.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._store is not None:
                self._runner.run(self._store.close())
        finally:
            self._runner.close()

    async def _open(self) -> MetadataStore:
        from odradek.cluster.zk import ZooKeeperStore  # kazoo only when asked for

        quiet_kazoo()
        if not any_answers(zk_hosts(self.connect)):
            if self.require_cluster:
                raise NoZooKeeperError(self.connect)
            raise ZooKeeperUnavailable(self.connect, self.connect_timeout_ms)
        store = ZooKeeperStore(self.connect, session_timeout_ms=SESSION_TIMEOUT_MS,
                               connection_timeout_ms=self.connect_timeout_ms, create_chroot=False,
                               security=tool_security(self.zk_config))
        try:
            await store.start()
        except StoreError:
            raise ZooKeeperUnavailable(self.connect, self.connect_timeout_ms) from None
        try:
            if self.require_cluster and await store.exists(zn.BROKER_IDS) is None:
                raise NoClusterError(self.connect)
        except BaseException:
            await store.close()
            raise
        return store

    def run(self, fn: Callable[Concatenate[MetadataStore, P], Awaitable[T]], *args: P.args, **kwargs: P.kwargs) -> T:
        """`fn(store, *args, **kwargs)`; a store failure is a one-line CliError."""
        assert self._store is not None, "use ZkSession as a context manager"
        store = self._store

        async def call() -> T:
            return await fn(store, *args, **kwargs)

        try:
            return self._runner.run(call())
        except StoreError as exc:
            raise CliError(f"Error: ZooKeeper at {self.connect}: {exc}") from None


# --- znodes the tools read and write ----------------------------------------------------------


async def children(store: MetadataStore, path: str) -> list[str]:
    """The children of `path`, sorted; none when it does not exist."""
    try:
        return sorted(await store.get_children(path))
    except NoNodeError:
        return []


async def read_json(store: MetadataStore, path: str) -> Any | None:
    """The JSON content of `path`; None when it does not exist."""
    try:
        data, _ = await store.get_json(path)
    except NoNodeError:
        return None
    return data


async def create_json(store: MetadataStore, path: str, data: Any) -> bool:
    """Create the persistent znode `path` holding `data` (parents too); False when it already exists."""
    try:
        await store.create(path, to_json(data), makepath=True)
    except NodeExistsError:
        return False
    return True


async def broker_ids(store: MetadataStore) -> list[int]:
    """The ids registered under /brokers/ids."""
    return sorted(int(child) for child in await children(store, zn.BROKER_IDS) if child.isdigit())


async def live_brokers(store: MetadataStore) -> dict[int, zn.BrokerInfo]:
    """The brokers registered under /brokers/ids (malformed registrations are skipped)."""
    brokers: dict[int, zn.BrokerInfo] = {}
    for broker_id in await broker_ids(store):
        try:
            data, _ = await store.get_json(zn.broker_path(broker_id))
            brokers[broker_id] = zn.BrokerInfo.from_json(broker_id, data)
        except (StoreError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return brokers


async def controller_id(store: MetadataStore) -> int | None:
    """The broker id in /controller; None when there is no controller (or its znode is malformed)."""
    data = await read_json(store, zn.CONTROLLER)
    try:
        return zn.controller_from_json(data) if data is not None else None
    except (KeyError, TypeError, ValueError):
        return None


async def topic_names(store: MetadataStore) -> list[str]:
    """The topics under /brokers/topics, sorted."""
    return await children(store, zn.BROKER_TOPICS)


async def read_topic_znode(store: MetadataStore, name: str) -> tuple[dict[str, Any], zn.TopicAssignment] | None:
    """The JSON of /brokers/topics/<name> and its parsed content; None when the topic does not exist."""
    data = await read_json(store, zn.topic_path(name))
    if data is None:
        return None
    try:
        return data, zn.TopicAssignment.from_json(data)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise StoreError(f"malformed topic znode {zn.topic_path(name)}") from None


async def read_topic(store: MetadataStore, name: str) -> zn.TopicAssignment | None:
    """The assignment of topic `name`; None when it does not exist."""
    found = await read_topic_znode(store, name)
    return found[1] if found is not None else None


async def read_topic_config(store: MetadataStore, name: str) -> dict[str, str]:
    """The overrides of topic `name` (/config/topics/<name>)."""
    return zn.config_from_json(await read_json(store, zn.topic_config_path(name)))


async def read_partition_state(store: MetadataStore, name: str, partition: int) -> zn.PartitionState | None:
    """The leader and ISR the controller wrote for a partition; None before it did (or when malformed)."""
    try:
        data, stat = await store.get_json(zn.partition_state_path(name, partition))
        return zn.PartitionState.from_json(data, stat.version)
    except (NoNodeError, KeyError, TypeError, ValueError):
        return None
