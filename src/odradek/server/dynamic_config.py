"""Dynamic broker configs (KIP-226) on a running broker: the two layers read from the metadata store go
into the BrokerConfig (per-broker over cluster default over server.properties), and what they change is
applied at once: new topic defaults to every log whose topic does not override them, the log cleaner's
settings, min.insync.replicas and unclean.leader.election.enable defaults, the partition limits, and the
connection limits for connections accepted from then on. Keys Kafka accepts but that mean nothing here
(thread pool sizes and the like) are stored, described and otherwise ignored.

Updates arrive through the store's watches (whichever broker wrote them); a broker that serves an
AlterConfigs also re-reads the store at once, so its answer to a DescribeConfigs right after it shows
the change.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from odradek.cluster.broker_configs import (
    BrokerConfigWatcher,
    entity_of,
    read_broker_config,
    write_broker_config,
)
from odradek.cluster.partition_limits import PartitionLimits
from odradek.server.limits import ConnectionLimits
from odradek.storage.cleaner import CleanerConfig

if TYPE_CHECKING:
    from odradek.server.broker import Broker

log = logging.getLogger("odradek.server")


class DynamicBrokerConfig:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.watcher = BrokerConfigWatcher(broker.store, broker.broker_id, self._on_change)
        self._lock = asyncio.Lock()  # one application at a time, in the order the changes came

    async def start(self) -> None:
        """Load the stored layers and apply them; called before the broker serves, and again after a new
        ZooKeeper session (whose watches are new)."""
        await self.watcher.start()

    def close(self) -> None:
        self.watcher.close()

    async def stored(self, broker_id: int | None) -> dict[str, str]:
        """The configs stored for this broker (`broker_id`) or the cluster default (None)."""
        return await read_broker_config(self.broker.store, entity_of(broker_id))

    async def write(self, broker_id: int | None, config: dict[str, str]) -> None:
        """Store a layer's new content, and apply it here without waiting for the watch."""
        await write_broker_config(self.broker.store, entity_of(broker_id), config)
        await self.watcher.refresh()
        async with self._lock:  # the store's watch may have started applying it first: wait for that too
            pass

    async def _on_change(self, per_broker: dict[str, str], cluster_default: dict[str, str]) -> None:
        async with self._lock:
            cfg = self.broker.config
            before = cfg.dynamic_props(True), cfg.dynamic_props(False)
            for line in cfg.set_dynamic(per_broker, cluster_default):
                log.error("%s %s", self.broker.prefix, line)
            after = cfg.dynamic_props(True), cfg.dynamic_props(False)
            if after != before:
                log.info("%s Dynamic broker configs now: per-broker %s, cluster default %s",
                         self.broker.prefix, after[0], after[1])
            await self._apply()

    async def _apply(self) -> None:
        broker, cfg = self.broker, self.broker.config
        defaults = cfg.topic_defaults()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, broker.logs.update_defaults, defaults)  # every log: off the event loop
        broker.logs.cleaner = CleanerConfig.from_broker(cfg)
        if (admin := getattr(broker, "topic_admin", None)) is not None:
            admin.topic_defaults = defaults
            admin.limits = PartitionLimits(cfg.get("max.partitions"), cfg.get("max.broker.partitions"))
        if (replicas := getattr(broker, "replicas", None)) is not None:
            replicas.set_default_min_isr(cfg.get("min.insync.replicas"))
        if (controller := getattr(broker, "controller", None)) is not None:
            controller.set_unclean_leader_election(cfg.get("unclean.leader.election.enable"))
        limits = broker.server.limits
        if limits is not None:
            overrides = cfg.max_connections_per_ip_overrides
            per_ip = await loop.run_in_executor(None, ConnectionLimits.resolve_overrides, overrides)
            limits.reconfigure(cfg.get("max.connections"), cfg.get("max.connections.per.ip"), per_ip,
                               cfg.get("max.connection.creation.rate"))
