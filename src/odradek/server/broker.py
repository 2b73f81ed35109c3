"""The broker: start-up and shut-down order, and the wiring of storage, metadata store, metadata cache,
controller, replica manager, request handlers and the socket server."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from odradek.cluster import admin
from odradek.cluster import znodes as zn
from odradek.cluster.assignment import assign_replicas, validate_topic_name
from odradek.cluster.controller import Controller
from odradek.cluster.embedded import STORE_FILE, EmbeddedStore
from odradek.cluster.metadata import MetadataCache
from odradek.cluster.producer_ids import ProducerIdAllocator
from odradek.cluster.store import (
    MetadataStore,
    NodeExistsError,
    NoNodeError,
    StoreError,
    StoreUnavailableError,
    to_json,
)
from odradek.config import BrokerConfig, ConfigError, validate_topic_configs
from odradek.groups.coordinator import GroupCoordinator, GroupSettings
from odradek.groups.offsets import OffsetStore
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.replication.manager import ReplicaManager
from odradek.server.dispatcher import Dispatcher
from odradek.server.network import SocketServer
from odradek.storage.manager import CleanerConfig, LogManager

log = logging.getLogger("odradek.server")


@contextlib.contextmanager
def store_errors_as_kafka_errors() -> Iterator[None]:
    """Admin operations write to the metadata store; if it is unreachable (ZooKeeper without quorum),
    the client gets REQUEST_TIMED_OUT with the reason instead of a dropped connection."""
    try:
        yield
    except StoreError as exc:
        raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"The metadata store (ZooKeeper) is unavailable: {exc}") from None


class StartupError(Exception):
    """Start-up cannot go on; the message is one line naming the problem."""


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.broker_id: int = max(config.broker_id, 0)
        self.cluster_id = ""
        self.stopping = False
        self.logs: LogManager
        self.store: MetadataStore
        self.metadata: MetadataCache
        self.controller: Controller
        self.replicas: ReplicaManager
        self.dispatcher = Dispatcher(self)
        self.server = SocketServer(self.dispatcher, config.get("socket.request.max.bytes"))
        self.bound_ports: list[int] = []
        self._tasks: list[asyncio.Task] = []
        self._stopped = asyncio.Event()

    @property
    def prefix(self) -> str:
        return f"[KafkaServer id={self.broker_id}]"

    # ---- start-up ------------------------------------------------------------------------------
    async def start(self) -> None:
        cfg = self.config
        log.info("%s starting", self.prefix)
        for line in cfg.warnings:
            log.warning(line)
        log.info("Log directories: %s", ",".join(cfg.log_dirs))
        logs = LogManager([Path(d) for d in cfg.log_dirs], cfg.topic_defaults(),
                          cleaner=CleanerConfig.from_broker(cfg.get))
        try:
            await asyncio.get_running_loop().run_in_executor(None, logs.startup)
        except Exception as exc:
            raise StartupError(f"log.dirs: {exc}") from None
        self.logs = logs
        self.store = self._make_store()
        try:
            await self.store.start()
        except StoreUnavailableError as exc:
            raise StartupError(str(exc)) from None
        for path in zn.PERSISTENT_PATHS:
            await self.store.ensure_path(path)
        self.cluster_id = await self._cluster_id()
        self._write_meta_properties()
        self.metadata = MetadataCache(self.store, self.cluster_id)
        self.producer_ids = ProducerIdAllocator(self.store, self.broker_id)
        self.replicas = ReplicaManager(self.broker_id, self.logs, self.metadata, self.store, cfg)
        await self._listen()
        await self._register()
        await self.metadata.start()
        self.replicas.start()
        self.groups = GroupCoordinator(GroupSettings.from_config(cfg), OffsetStore(self))
        await self.groups.start()
        self.controller = Controller(
            self.broker_id, self.store, self.metadata,
            delete_topic_enable=cfg.get("delete.topic.enable"),
            unclean_leader_election=cfg.get("unclean.leader.election.enable"),
            config=cfg,
        )
        await self.controller.start()
        self._start_background()
        await self.server.start_serving()
        log.info("%s started (cluster id %s)", self.prefix, self.cluster_id)

    def _make_store(self) -> MetadataStore:
        connect = self.config.zookeeper_connect
        if connect:
            from odradek.cluster.zk import ZooKeeperStore

            store = ZooKeeperStore(connect, self.config.get("zookeeper.session.timeout.ms"),
                                   self.config.zookeeper_connection_timeout_ms)
            store.session_listeners.append(self._on_new_session)
            return store
        return EmbeddedStore(Path(self.config.log_dirs[0]) / STORE_FILE)

    async def _on_new_session(self) -> None:
        """After a ZooKeeper session expired: our ephemeral znodes and watches are gone; register again
        and re-read the metadata (the controller re-runs its election)."""
        if self.stopping:
            return
        log.info("%s Re-registering after a new ZooKeeper session", self.prefix)
        try:
            await self._register()
        except StartupError as exc:
            log.error("%s %s", self.prefix, exc)
        await self.metadata.start()
        await self.controller.start()

    async def _cluster_id(self) -> str:
        try:
            data, _ = await self.store.get_json(zn.CLUSTER_ID)
            return str(data["id"])
        except NoNodeError:
            pass
        cid = zn.uuid_to_str(uuid.uuid4().bytes)
        try:
            await self.store.create(zn.CLUSTER_ID, to_json({"version": "1", "id": cid}), makepath=True)
            return cid
        except NodeExistsError:
            data, _ = await self.store.get_json(zn.CLUSTER_ID)
            return str(data["id"])

    def _write_meta_properties(self) -> None:
        for d in self.config.log_dirs:
            path = Path(d) / "meta.properties"
            existing: dict[str, str] = {}
            if path.exists():
                for line in path.read_text().splitlines():
                    if "=" in line and not line.startswith("#"):
                        k, v = line.split("=", 1)
                        existing[k.strip()] = v.strip()
                if existing.get("cluster.id") not in (None, self.cluster_id):
                    raise StartupError(
                        f"The cluster id {self.cluster_id} does not match the stored cluster id "
                        f"{existing['cluster.id']} in {path}"
                    )
                if existing.get("broker.id") not in (None, str(self.broker_id)):
                    raise StartupError(
                        f"broker.id {self.broker_id} does not match the broker.id {existing['broker.id']} stored in {path}"
                    )
            path.write_text(f"#\n#{path.name}\nversion=0\nbroker.id={self.broker_id}\ncluster.id={self.cluster_id}\n")

    async def _listen(self) -> None:
        for listener in self.config.listeners:
            try:
                port = await self.server.listen(listener.host, listener.port)
            except OSError as exc:
                raise StartupError(
                    f"listeners: cannot bind {listener.name}://{listener.host}:{listener.port}: "
                    f"{exc.strerror or exc}"
                ) from None
            self.bound_ports.append(port)
            log.info("%s Awaiting socket connections on %s:%d.", self.prefix, listener.host or "0.0.0.0", port)

    def advertised(self) -> tuple[str, int]:
        adv = self.config.advertised_listeners[0]
        port = adv.port or (self.bound_ports[0] if self.bound_ports else 9092)
        return adv.host or socket.gethostname(), port

    async def _register(self) -> None:
        host, port = self.advertised()
        info = zn.BrokerInfo(self.broker_id, host, port, self.config.get("broker.rack"),
                             self.config.advertised_listeners[0].name)
        path = zn.broker_path(self.broker_id)
        loop = asyncio.get_running_loop()
        # A znode holding our own endpoint is our previous incarnation (killed before its session expired):
        # wait for ZooKeeper to expire it. Another endpoint is another broker with this id.
        deadline = loop.time() + self.config.get("zookeeper.session.timeout.ms") / 1000 + 10
        while True:
            try:
                await self.store.create(path, to_json(info.to_json()), ephemeral=True, makepath=True)
                break
            except NodeExistsError:
                try:
                    data, _ = await self.store.get_json(path)
                    same = zn.BrokerInfo.from_json(self.broker_id, data)
                    ours = (same.host, same.port) == (host, port)
                except NoNodeError:
                    continue
                except Exception:
                    ours = False
                if not ours or loop.time() > deadline:
                    raise StartupError(
                        f"broker.id {self.broker_id} is already registered at {path}: another broker uses this id"
                    ) from None
                log.info("%s %s still holds the registration of a previous session; waiting for it to expire",
                         self.prefix, path)
                await asyncio.sleep(1.0)
        log.info("Registered broker %d at path %s with addresses: %s://%s:%d", self.broker_id, path,
                 info.listener_name, host, port)

    def _start_background(self) -> None:
        loop = asyncio.get_running_loop()
        cfg = self.config
        self._tasks.append(loop.create_task(self._every(cfg.get("log.retention.check.interval.ms"), self._retention)))
        if self.logs.cleaner.enabled:
            self._tasks.append(loop.create_task(self._every(self.logs.cleaner.backoff_ms, self._clean_logs)))
        self._tasks.append(loop.create_task(self._every(cfg.log_flush_interval_ms, self._flush)))
        self._tasks.append(loop.create_task(self._every(
            cfg.get("log.flush.offset.checkpoint.interval.ms"), self._checkpoint)))

    async def _every(self, interval_ms: int, fn: Any) -> None:
        interval = max(interval_ms, 10) / 1000
        while not self.stopping:
            await asyncio.sleep(interval)
            try:
                await fn()
            except Exception as exc:
                log.error("%s background task %s failed: %s", self.prefix, fn.__name__, exc, exc_info=exc)

    async def _retention(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.logs.run_retention)

    async def _clean_logs(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.logs.run_cleaner)

    async def _flush(self) -> None:
        self.logs.flush_dirty(zn.now_ms())

    async def _checkpoint(self) -> None:
        self.logs.checkpoint()

    # ---- topic administration (any broker) ------------------------------------------------------
    def _validate_configs(self, configs: dict[str, str]) -> dict[str, str]:
        try:
            return validate_topic_configs(configs)
        except ConfigError as exc:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None

    async def create_topic(
        self, name: str, partitions: int, replication_factor: int, configs: dict[str, str],
        assignment: dict[int, list[int]] | None = None, validate_only: bool = False, wait_s: float = 30.0,
    ) -> bytes:
        validate_topic_name(name)
        if name in self.metadata.topics:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        configs = self._validate_configs(configs)
        live = sorted(self.metadata.brokers)
        if assignment is None:
            assignment = assign_replicas(live, partitions, replication_factor)
        else:
            self._check_assignment(assignment, live)
        if validate_only:
            return b""
        with store_errors_as_kafka_errors():
            topic_id = await admin.create_topic(self.store, name, assignment, configs)
        log.info("Creating topic %s with configuration %s and initial partition assignment %s",
                 name, configs, assignment)
        await self.metadata.wait_for(lambda: self.metadata.topic_ready(name), wait_s)
        return topic_id

    def _check_assignment(self, assignment: dict[int, list[int]], live: list[int], start: int = 0) -> None:
        if sorted(assignment) != list(range(start, start + len(assignment))):
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Partitions must be consecutive from 0")
        sizes = {len(r) for r in assignment.values()}
        if len(sizes) != 1 or 0 in sizes:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "All partitions must have the same replication factor")
        for p, replicas in assignment.items():
            if len(set(replicas)) != len(replicas):
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Duplicate brokers in assignment of partition {p}")
            unknown = [b for b in replicas if b not in live]
            if unknown:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Unknown broker(s) {unknown} in assignment")

    async def delete_topic(self, name: str, wait_s: float = 30.0) -> None:
        if name not in self.metadata.topics:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
        if not self.config.get("delete.topic.enable"):
            raise KafkaError(ErrorCode.TOPIC_DELETION_DISABLED, "Topic deletion is disabled (delete.topic.enable=false)")
        with store_errors_as_kafka_errors():
            await admin.mark_topic_for_deletion(self.store, name)
        if not await self.metadata.wait_for(lambda: name not in self.metadata.topics, wait_s):
            raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"Deletion of topic {name} did not complete in time")

    async def create_partitions(
        self, name: str, count: int, assignments: list[list[int]] | None, validate_only: bool, wait_s: float
    ) -> None:
        meta = self.metadata.topics.get(name)
        if meta is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
        current = len(meta.assignment)
        if count <= current:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             f"Topic currently has {current} partitions, {count} would not be an increase.")
        live = sorted(self.metadata.brokers)
        rf = len(meta.assignment[0]) if meta.assignment else 1
        if assignments is not None:
            if len(assignments) != count - current:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"Increasing the number of partitions by {count - current} but "
                                 f"{len(assignments)} assignments provided.")
            new = {current + i: list(a) for i, a in enumerate(assignments)}
            self._check_assignment(new, live, start=current)
        else:
            new = assign_replicas(live, count - current, rf, start_partition=current)
        if validate_only:
            return
        with store_errors_as_kafka_errors():
            await admin.add_partitions(self.store, name, new)
        await self.metadata.wait_for(lambda: self.metadata.topic_ready(name)
                                     and len(self.metadata.topics[name].assignment) >= count, wait_s)

    async def alter_topic_config(self, name: str, configs: dict[str, str], validate_only: bool = False) -> None:
        configs = self._validate_configs(configs)
        if validate_only:
            return
        with store_errors_as_kafka_errors():
            await admin.set_topic_config(self.store, name, configs)
        await self.metadata.wait_for(lambda: name in self.metadata.topics
                                     and self.metadata.topics[name].config == configs, 5.0)

    # ---- shut-down -----------------------------------------------------------------------------
    async def shutdown(self) -> None:
        if self.stopping:
            return
        self.stopping = True
        log.info("%s shutting down", self.prefix)
        if getattr(self, "groups", None) is not None:
            await self.groups.shutdown()
        if hasattr(self, "replicas") and self.config.zookeeper_connect and self.config.get("controlled.shutdown.enable"):
            await self._controlled_shutdown()
        await self.server.close()
        if hasattr(self, "replicas"):
            await self.replicas.shutdown()
        for t in self._tasks:
            t.cancel()
        if hasattr(self, "controller"):
            self.controller.close()
        if hasattr(self, "metadata"):
            self.metadata.close()
        if hasattr(self, "store"):
            try:
                await self.store.close()
            except Exception as exc:
                log.warning("%s closing the metadata store failed: %s", self.prefix, exc)
        if hasattr(self, "logs"):
            try:
                self.logs.shutdown()
            except Exception as exc:
                log.error("%s shutting down the log manager failed: %s", self.prefix, exc)
        log.info("%s shut down completed", self.prefix)
        self._stopped.set()

    async def _controlled_shutdown(self) -> None:
        """Move leadership away before exiting: leave /brokers/ids so the controller elects other leaders
        from the ISR, and wait (bounded) until this broker leads nothing that another replica could."""
        log.info("%s Starting controlled shutdown", self.prefix)
        try:
            await self.store.delete(zn.broker_path(self.broker_id))
        except Exception as exc:
            log.warning("%s Controlled shutdown could not deregister: %s", self.prefix, exc)
            return

        def done() -> bool:
            for p in self.replicas.leaders():
                if any(r != self.broker_id and r in self.metadata.brokers for r in p.isr):
                    return False
            return True

        timeout = self.config.get("controlled.shutdown.max.retries") * self.config.get(
            "controlled.shutdown.retry.backoff.ms") / 1000
        if await self.metadata.wait_for(done, max(timeout, 5.0)):
            log.info("%s Controlled shutdown succeeded", self.prefix)
        else:
            log.warning("%s Controlled shutdown timed out; some partitions are still led by this broker", self.prefix)

    async def wait_stopped(self) -> None:
        await self._stopped.wait()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True
