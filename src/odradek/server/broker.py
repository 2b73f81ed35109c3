"""The broker: start-up and shut-down order, and the wiring of storage, metadata store, metadata cache,
controller, topic administration, replica manager, request handlers and the socket server."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

from odradek.aio import TaskSet
from odradek.cluster import znodes as zn
from odradek.cluster.assignment import INTERNAL_TOPICS
from odradek.cluster.broker_configs import bootstrap_cluster_configs
from odradek.cluster.controller import Controller
from odradek.cluster.embedded import STORE_FILE, EmbeddedStore
from odradek.cluster.group_configs import GroupConfigs
from odradek.cluster.metadata import MetadataCache
from odradek.cluster.partition_limits import PartitionLimits
from odradek.cluster.producer_ids import ProducerIdAllocator
from odradek.cluster.quotas import QuotaWatcher
from odradek.cluster.store import (
    MetadataStore,
    NodeExistsError,
    NoNodeError,
    StoreError,
    StoreUnavailableError,
    to_json,
)
from odradek.cluster.topic_admin import TopicAdmin
from odradek.config import BrokerConfig, Listener
from odradek.config_keys import ConfigError
from odradek.coordinator.runtime import CoordinatorRuntime
from odradek.fsutil import atomic_write
from odradek.groups.consumer_coordinator import ConsumerGroupSettings, MetadataTopics
from odradek.groups.coordinator import GroupSettings
from odradek.groups.offsets import offsets_topic_settings
from odradek.groups.service import GroupCoordinatorService
from odradek.groups.share_coordinator import ShareGroupSettings
from odradek.groups.share_persister import CoordinatorShareStatePersister
from odradek.groups.share_state import SharePartitionSettings
from odradek.groups.share_state_coordinator import ShareCoordinator, share_state_topic_settings
from odradek.groups.streams_coordinator import StreamsGroupSettings
from odradek.protocol.client_security import PLAINTEXT, ClientSecurity
from odradek.replication.manager import ReplicaManager
from odradek.security.acl_store import AclCache
from odradek.security.authorizer import Authorizer, check_class, parse_super_users
from odradek.security.http_host import HostAllowlist
from odradek.server.coordinator_partitions import BrokerPartitions
from odradek.server.dispatcher import Dispatcher
from odradek.server.dynamic_config import DynamicBrokerConfig
from odradek.server.fetch_sessions import FetchSessionCache
from odradek.server.http_endpoint import HttpAccess, HttpEndpoint
from odradek.server.limits import ConnectionLimits, RequestMemory
from odradek.server.log_dir_failure import LogDirFailureHandler
from odradek.server.metrics import BrokerMetrics
from odradek.server.network import SocketServer
from odradek.server.quotas import QuotaManager
from odradek.server.schema_registry_client import HttpSchemaLookup
from odradek.server.schema_validation import SchemaValidation
from odradek.server.secret_file import exposed_file_warning, exposed_secrets_warning
from odradek.server.security import (
    ListenerSecurity,
    inter_broker_security,
    trust_warnings,
    unsecured_token_warnings,
)
from odradek.server.share_sessions import ShareSessionCache
from odradek.storage.manager import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CleanerConfig,
    LogManager,
)
from odradek.txn.coordinator import TransactionCoordinator, TxnSettings, txn_topic_settings
from odradek.txn.markers import MarkerSender, MarkerWriter
from odradek.txn.verification import PartitionVerifier

log = logging.getLogger("odradek.server")


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
        self.topic_admin: TopicAdmin
        self.replicas: ReplicaManager
        self.metrics = BrokerMetrics(self)
        self.http: HttpEndpoint | None = None
        self.ready = False
        # Fetch responses send record bytes from the segment files with sendfile; ODRADEK_ZERO_COPY=0 reads
        # them into memory instead (the benchmark compares both).
        self.zero_copy = os.environ.get("ODRADEK_ZERO_COPY", "1") != "0"
        self.inter_broker_security: ClientSecurity = PLAINTEXT
        self.fetch_sessions = FetchSessionCache(config.get("max.incremental.fetch.session.cache.slots"))
        self.share_sessions = ShareSessionCache(config.get("group.share.max.share.sessions"))
        self.dynamic_config: DynamicBrokerConfig
        self.authorizer: Authorizer | None = None  # None: every request allowed
        self.quotas = QuotaManager(config.get("quota.window.num"), config.get("quota.window.size.seconds"),
                                   config.get("controller.quota.window.num"),
                                   config.get("controller.quota.window.size.seconds"))
        self.quota_watcher: QuotaWatcher | None = None
        self.group_configs: GroupConfigs  # every group's configs (GROUP config resources), for the coordinators
        # Schema ID Validation of produced records (topics that turn it on): the registry at
        # confluent.schema.registry.url, or (the cli layer sets it) the broker's own registry in process
        registry_urls = config.get("confluent.schema.registry.url")
        user_info = config.get("confluent.basic.auth.user.info")
        self.schema_validation = SchemaValidation(HttpSchemaLookup(
            registry_urls, config.get("confluent.basic.auth.credentials.source"),
            user_info.value if user_info is not None else None) if registry_urls else None)
        self.dispatcher = Dispatcher(self)
        self.server = SocketServer(
            self.dispatcher, config.get("socket.request.max.bytes"),
            ConnectionLimits(config.get("max.connections"), config.get("max.connections.per.ip"),
                             config.max_connections_per_ip_overrides, per_listener=config.listener_max_connections,
                             protected=config.inter_broker_listener.name if len(config.listeners) > 1 else None,
                             creation_rate=config.get("max.connection.creation.rate")),
            RequestMemory(config.get("queued.max.request.bytes")),
            max_idle_ms=config.get("connections.max.idle.ms"),
            max_unauthenticated_ms=config.get("connections.max.unauthenticated.ms"),
        )
        self.bound_ports: dict[str, int] = {}
        self._tasks = TaskSet(log, "Background task")
        self._disk_jobs: set[asyncio.Future[Any]] = set()  # storage work running on worker threads
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
        exposed = exposed_secrets_warning(cfg.origin, cfg)
        if exposed is not None:
            log.warning(exposed)
        try:
            with_authorizer = check_class(cfg.get("authorizer.class.name"))
        except ConfigError as exc:
            raise StartupError(str(exc)) from None
        try:
            self.inter_broker_security = inter_broker_security(cfg)
        except ConfigError as exc:
            if cfg.zookeeper_connect:
                raise StartupError(f"inter-broker listener {cfg.inter_broker_listener.name}: {exc}") from None
            self.inter_broker_security = PLAINTEXT  # a single node never reaches another broker
        log.info("Log directories: %s", ",".join(cfg.log_dirs))
        await self._start_http()
        logs = LogManager([Path(d) for d in cfg.log_dirs], cfg.topic_defaults(),
                          cleaner=CleanerConfig.from_broker(cfg))
        try:
            await asyncio.get_running_loop().run_in_executor(None, logs.startup)
        except Exception as exc:
            raise StartupError(f"log.dirs: {exc}") from None
        self.logs = logs
        try:
            self.store = self._make_store()
        except ConfigError as exc:
            raise StartupError(str(exc)) from None
        try:
            await self.store.start()
        except StoreUnavailableError as exc:
            raise StartupError(str(exc)) from None
        try:
            for path in zn.PERSISTENT_PATHS:
                await self.store.ensure_path(path)
        except StoreError as exc:  # refused (NoAuth, a failed login): nothing below could work either
            raise StartupError(str(exc)) from None
        self.cluster_id = await self._cluster_id()
        self._write_meta_properties()
        if with_authorizer:
            await self._start_authorizer()
        # dynamic broker configs first, so that everything built below starts from them (as Kafka's does)
        self.dynamic_config = DynamicBrokerConfig(self)
        await self.dynamic_config.start()
        for line in cfg.shadowed_statics():
            log.warning("%s %s (kafka-configs --describe shows it; --delete-config removes it)", self.prefix, line)
        self.quota_watcher = QuotaWatcher(self.store, self.quotas.update)
        await self.quota_watcher.start()
        self.group_configs = GroupConfigs(self.store, cfg)
        await self.group_configs.start()
        self.metadata = MetadataCache(self.store)
        self.topic_admin = TopicAdmin(self.store, self.metadata, cfg.get("delete.topic.enable"), cfg.topic_defaults(),
                                      PartitionLimits(cfg.get("max.partitions"), cfg.get("max.broker.partitions")))
        self.producer_ids = ProducerIdAllocator(self.store, self.broker_id)
        self.replicas = ReplicaManager(self.broker_id, self.logs, self.metadata, self.store, cfg)
        self.replicas.inter_broker_security = self.inter_broker_security
        # a failed log dir: its replicas stop, the controller hears of it (or the broker halts)
        store_dir = None if cfg.zookeeper_connect else Path(cfg.log_dirs[0]).absolute()
        self.log_dir_failures = LogDirFailureHandler(self, store_dir)
        loop = asyncio.get_running_loop()

        def on_loop(fn: Callable[[], None]) -> None:
            loop.call_soon_threadsafe(fn)

        self.logs.start_moves(on_loop)  # a move's swap runs on the event loop, where appends happen
        await self._listen()
        await self._register()
        await self.metadata.start()
        self.replicas.start()
        partitions = BrokerPartitions(self.metadata, self.replicas, self.topic_admin)
        self.share_coordinator = ShareCoordinator.from_config(cfg, CoordinatorRuntime(
            share_state_topic_settings(cfg), partitions, partitions, what="share-group state", kind="share partition"))
        await self.share_coordinator.start()
        self.share_persister = CoordinatorShareStatePersister(
            self.broker_id, self.share_coordinator, self.inter_broker_security,
            int(cfg.get("request.timeout.ms")) / 2000)
        self.groups = GroupCoordinatorService(
            GroupSettings.from_config(cfg), ConsumerGroupSettings.from_config(cfg),
            CoordinatorRuntime(offsets_topic_settings(cfg), partitions, partitions, what="offsets and group metadata",
                               kind="group"),
            MetadataTopics(self.metadata, INTERNAL_TOPICS),
            ShareGroupSettings.from_config(cfg), SharePartitionSettings.from_config(cfg), self.share_persister,
            self.group_configs, StreamsGroupSettings.from_config(cfg), self._create_internal_topic)
        await self.groups.start()
        self.metadata.topic_removed_listeners.append(lambda name, meta: self.groups.topic_deleted(name, meta.topic_id))
        self.txn_markers = MarkerWriter(self.replicas, self.groups.complete_transaction)
        self.transactions = TransactionCoordinator(
            TxnSettings.from_config(cfg),
            CoordinatorRuntime(txn_topic_settings(cfg), partitions, partitions, what="transaction metadata",
                               kind="transactional id"),
            MarkerSender(self.broker_id, self.metadata, self.txn_markers, self.inter_broker_security,
                         int(cfg.get("request.timeout.ms")) / 1000),
            self.producer_ids)
        await self.transactions.start()
        self.txn_verifier = PartitionVerifier(self.broker_id, self.metadata, self.transactions,
                                              self.inter_broker_security, int(cfg.get("request.timeout.ms")) / 1000)
        self.controller = Controller(
            self.broker_id, self.store, self.metadata,
            delete_topic_enable=cfg.get("delete.topic.enable"),
            unclean_leader_election=cfg.get("unclean.leader.election.enable"),
            config=cfg,
        )
        await self.controller.start()
        self._start_background()
        await self.server.start_serving()
        self.ready = True
        log.info("%s started (cluster id %s)", self.prefix, self.cluster_id)

    async def _start_authorizer(self) -> None:
        cfg = self.config
        cache = AclCache(self.store)
        await cache.start()
        self.authorizer = Authorizer(cache, parse_super_users(cfg.get("super.users")),
                                     cfg.get("allow.everyone.if.no.acl.found"))
        log.info("%s Authorizer %s: super users %s; allow.everyone.if.no.acl.found=%s", self.prefix,
                 cfg.get("authorizer.class.name"), ";".join(sorted(self.authorizer.super_users)) or "none",
                 str(self.authorizer.allow_if_no_acl).lower())

    def _make_store(self) -> MetadataStore:
        connect = self.config.zookeeper_connect
        if connect:
            from odradek.cluster.zk import ZooKeeperStore
            from odradek.security.zk_client import (
                DEFAULT_SECTION,
                JAAS_KEY,
                JAAS_PROPERTY,
                jaas_file,
                zk_client_security,
            )

            security = zk_client_security(self.config.props, set_acl=self.config.get("zookeeper.set.acl"))
            if security.secure_acls and not security.authenticates:
                raise ConfigError(
                    "zookeeper.set.acl is true, but the ZooKeeper session would not authenticate: give a JAAS "
                    f"file with a {DEFAULT_SECTION} section (-D{JAAS_PROPERTY}=... in KAFKA_OPTS, or "
                    f"{JAAS_KEY}), or TLS to ZooKeeper with a client certificate (zookeeper.ssl.client.enable, "
                    "zookeeper.ssl.keystore.location)")
            if security.sasl is not None:
                exposed = exposed_file_warning(jaas_file(self.config.props) or "", "ZooKeeper credentials (JAAS)")
                if exposed is not None:
                    log.warning("JAAS file %s", exposed)
            if security.sasl is not None or security.tls is not None:
                how = [f"SASL DIGEST-MD5 as {security.sasl.username}"] if security.sasl is not None else []
                how += ["TLS"] if security.tls is not None else []
                log.info("%s ZooKeeper client: %s; znodes created %s", self.prefix, " and ".join(how),
                         "creator-only (zookeeper.set.acl=true)" if security.secure_acls else "open to all")
            store = ZooKeeperStore(connect, self.config.get("zookeeper.session.timeout.ms"),
                                   self.config.zookeeper_connection_timeout_ms, security=security)
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
        await self.metadata.resync()
        await self.dynamic_config.start()
        if self.quota_watcher is not None:
            await self.quota_watcher.start()
        await self.group_configs.start()
        if self.authorizer is not None:
            await self.authorizer.cache.start()
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
        except NodeExistsError:
            data, _ = await self.store.get_json(zn.CLUSTER_ID)
            return str(data["id"])
        # this broker created the cluster. The embedded store is Kafka 4.1+'s KRaft: the cluster starts with
        # a cluster-level min.insync.replicas (KIP-966). ZooKeeper-mode Kafka never writes one: each broker's
        # file applies until an operator sets a cluster default.
        if self.config.single_node:
            await bootstrap_cluster_configs(self.store, str(self.config.static_value("min.insync.replicas")))
        return cid

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
            atomic_write(path, f"#\n#{path.name}\nversion=0\nbroker.id={self.broker_id}\ncluster.id={self.cluster_id}\n")

    async def _start_http(self) -> None:
        """The HTTP endpoint first, so that readiness says 'starting' while logs load."""
        address = self.config.get("http.listener")
        if not address:
            return
        host, sep, port = str(address).rpartition(":")
        if not sep or not port.isdigit():
            raise StartupError(f"http.listener: '{address}' is not of the form HOST:PORT")
        self.http = HttpEndpoint(host.strip("[]"), int(port), self.metrics.render, lambda: self.ready,
                                 self._http_access(host.strip("[]")))
        try:
            await self.http.start()
        except OSError as exc:
            raise StartupError(f"http.listener: cannot bind {address}: {exc.strerror or exc}") from None

    async def _create_internal_topic(self, name: str, partitions: int, replication_factor: int,
                                     configs: dict[str, str]) -> None:
        """A streams group's internal topic (KIP-1071: the group coordinator creates them); replication
        factor -1 is the broker's default.replication.factor."""
        rf = replication_factor if replication_factor > 0 else int(self.config.get("default.replication.factor"))
        await self.topic_admin.create_topic(name, partitions, rf, configs, wait_s=10.0)

    def _http_access(self, host: str) -> HttpAccess:
        """Who the HTTP endpoint answers: the Host names it accepts (this machine's, the advertised
        listeners', http.listener.allowed.hosts, and any IP address), the token /metrics needs, and its
        connection bounds."""
        names = [socket.gethostname(), *(a.host for a in self.config.advertised_listeners if a.host),
                 *self.config.get("http.listener.allowed.hosts")]
        token = self.config.get("http.listener.auth.token")
        return HttpAccess(HostAllowlist(host, names, any_address=True), token.value if token is not None else None,
                          self.config.get("http.listener.max.connections"),
                          self.config.get("http.listener.request.timeout.ms") / 1000)

    async def _listen(self) -> None:
        securities = []
        for listener in self.config.listeners:
            try:
                securities.append(ListenerSecurity.for_listener(self.config, listener))
            except ConfigError as exc:
                raise StartupError(f"listener {listener.name}: {exc}") from None
        for line in unsecured_token_warnings(securities):
            log.warning("%s %s", self.prefix, line)
        if self.authorizer is not None:
            for line in trust_warnings(securities, self.authorizer.super_users,
                                       self.config.inter_broker_listener.name, bool(self.config.zookeeper_connect)):
                log.warning("%s %s", self.prefix, line)
        for listener, security in zip(self.config.listeners, securities, strict=True):
            try:
                port = await self.server.listen(listener.host, listener.port, security)
            except OSError as exc:
                raise StartupError(
                    f"listeners: cannot bind {listener.name}://{listener.host}:{listener.port}: "
                    f"{exc.strerror or exc}"
                ) from None
            self.bound_ports[listener.name] = port
            log.info("%s Awaiting socket connections on %s:%d (%s).", self.prefix, listener.host or "0.0.0.0",
                     port, listener.security_protocol)

    def _advertised_endpoint(self, adv: Listener) -> tuple[str, int]:
        port = adv.port or self.bound_ports.get(adv.name, 9092)
        return adv.host or socket.gethostname(), port

    def advertised(self) -> tuple[str, int]:
        """The inter-broker endpoint."""
        return self._advertised_endpoint(self.config.inter_broker_listener)

    def broker_info(self) -> zn.BrokerInfo:
        """This broker's registration: its endpoints, and its replicas in failed log dirs."""
        host, port = self.advertised()
        inter = self.config.inter_broker_listener
        endpoints = {inter.name: (host, port)}
        protocols = {inter.name: inter.security_protocol}
        for adv in self.config.advertised_listeners:
            endpoints.setdefault(adv.name, self._advertised_endpoint(adv))
            protocols.setdefault(adv.name, adv.security_protocol)
        offline = self.replicas.offline_partitions() if hasattr(self, "replicas") else []
        return zn.BrokerInfo(self.broker_id, host, port, self.config.get("broker.rack"), inter.name, endpoints,
                             protocols, offline)

    async def _register(self) -> None:
        info = self.broker_info()
        host, port, endpoints = info.host, info.port, info.endpoints
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
        log.info("Registered broker %d at path %s with addresses: %s", self.broker_id, path,
                 ",".join(f"{n}://{h}:{p}" for n, (h, p) in endpoints.items()))

    def _start_background(self) -> None:
        cfg = self.config
        self._tasks.spawn(self._every(lambda: cfg.get("log.retention.check.interval.ms"), self._retention))
        if cfg.get("log.cleaner.enable"):  # log.cleaner.threads=0 (dynamic) pauses it: see CleanerConfig.enabled
            self._tasks.spawn(self._every(lambda: self.logs.cleaner.backoff_ms, self._clean_logs))
        self._tasks.spawn(self._every(lambda: cfg.log_flush_interval_ms, self._flush))
        # each checkpoint file on its own interval, as Kafka's
        for interval, file in ((lambda: cfg.get("log.flush.offset.checkpoint.interval.ms"), RECOVERY_POINT_CHECKPOINT),
                               (lambda: cfg.get("log.flush.start.offset.checkpoint.interval.ms"),
                                LOG_START_OFFSET_CHECKPOINT),
                               (lambda: cfg.get("replica.high.watermark.checkpoint.interval.ms"),
                                REPLICATION_OFFSET_CHECKPOINT)):
            self._tasks.spawn(self._every(interval, partial(self._checkpoint, file), f"checkpoint of {file}"))

    async def _every(self, interval_ms: Callable[[], int], fn: Callable[[], Awaitable[None]],
                     name: str | None = None) -> None:
        """Run `fn` every `interval_ms()` milliseconds. The interval is read at least once a second, so a
        dynamic config that shortens it takes effect without waiting out the old one."""
        loop = asyncio.get_running_loop()
        last = loop.time()
        while not self.stopping:
            wait = last + max(interval_ms(), 10) / 1000 - loop.time()
            if wait > 0:
                await asyncio.sleep(min(wait, 1.0))
                continue
            last = loop.time()
            try:
                await fn()
            except Exception as exc:
                log.error("%s background task %s failed: %s", self.prefix, name or getattr(fn, "__name__", fn), exc,
                          exc_info=exc)

    async def _on_disk_worker(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run storage work on a worker thread, never on the event loop. Each periodic task awaits its
        previous run before the next, so runs of one kind never overlap; a run cancelled with its task
        (at shutdown) still finishes, and shutdown waits for it before closing the logs."""
        job = asyncio.get_running_loop().run_in_executor(None, fn, *args)
        self._disk_jobs.add(job)
        job.add_done_callback(self._disk_jobs.discard)
        return await asyncio.shield(job)

    async def _retention(self) -> None:
        await self._on_disk_worker(self.logs.run_retention)

    async def _clean_logs(self) -> None:
        await self._on_disk_worker(self.logs.run_cleaner)

    async def _flush(self) -> None:
        await self._on_disk_worker(self.logs.flush_dirty, zn.now_ms())

    async def _checkpoint(self, file: str) -> None:
        await self._on_disk_worker(self.logs.checkpoint, (file,))

    # ---- shut-down -----------------------------------------------------------------------------
    async def shutdown(self) -> None:
        if self.stopping:
            return
        self.stopping = True
        log.info("%s shutting down", self.prefix)
        if getattr(self, "txn_verifier", None) is not None:
            await self.txn_verifier.close()
        if getattr(self, "transactions", None) is not None:
            await self.transactions.shutdown()
        if getattr(self, "groups", None) is not None:
            await self.groups.shutdown()
        if getattr(self, "share_persister", None) is not None:
            await self.share_persister.close()
        if getattr(self, "share_coordinator", None) is not None:
            await self.share_coordinator.shutdown()
        if hasattr(self, "replicas") and self.config.zookeeper_connect and self.config.get("controlled.shutdown.enable"):
            await self._controlled_shutdown()
        await self.server.close()
        await self.schema_validation.close()
        if self.http is not None:
            await self.http.close()
        if hasattr(self, "replicas"):
            await self.replicas.shutdown()
        self._tasks.close()
        if hasattr(self, "log_dir_failures"):
            self.log_dir_failures.close()
        if hasattr(self, "logs"):
            self.logs.stop_cleaning()
        if self._disk_jobs:
            await asyncio.gather(*self._disk_jobs, return_exceptions=True)
        if hasattr(self, "controller"):
            self.controller.close()
        if hasattr(self, "metadata"):
            self.metadata.close()
        if hasattr(self, "dynamic_config"):
            self.dynamic_config.close()
        if self.quota_watcher is not None:
            self.quota_watcher.close()
        if hasattr(self, "group_configs"):
            self.group_configs.close()
        if self.authorizer is not None:
            self.authorizer.cache.close()
        if hasattr(self, "store"):
            try:
                await self.store.close()
            except Exception as exc:
                log.warning("%s closing the metadata store failed: %s", self.prefix, exc)
        if hasattr(self, "logs"):
            try:
                await asyncio.get_running_loop().run_in_executor(None, self.logs.shutdown)
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

