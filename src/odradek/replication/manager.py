"""The replica manager: keeps this broker's Partition objects in step with the partition states in the
metadata cache (become leader or follower, create or delete logs), runs the replica fetchers for the
partitions it follows, maintains the ISR of the partitions it leads (shrink after replica.lag.time.max.ms,
expand once caught up; conditional writes to the partition state znode), and is what the produce and
fetch handlers talk to. When a log dir fails it stops serving the replicas in it (`stop_serving_dir`,
Kafka's ReplicaManager.handleLogDirFailure): they answer KAFKA_STORAGE_ERROR, their fetchers stop, and
metadata changes no longer touch them until the broker restarts."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from odradek.aio import TaskSet
from odradek.cluster import znodes as zn
from odradek.cluster.metadata import MetadataCache, TopicMeta
from odradek.cluster.store import BadVersionError, MetadataStore, StoreError, to_json
from odradek.protocol.client_security import PLAINTEXT, ClientSecurity
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.replication.fetcher import ReplicaFetcher
from odradek.replication.partition import Partition
from odradek.storage.log import Log
from odradek.storage.manager import LogManager, StorageError

if TYPE_CHECKING:
    from odradek.config import BrokerConfig

log = logging.getLogger("odradek.replica")


class ReplicaManager:
    def __init__(self, broker_id: int, logs: LogManager, metadata: MetadataCache, store: MetadataStore,
                 config: BrokerConfig) -> None:
        self.broker_id = broker_id
        self.logs = logs
        self.metadata = metadata
        self.store = store
        self.config = config
        self.inter_broker_security: ClientSecurity = PLAINTEXT  # the broker sets it from its config
        self.default_min_isr = config.get("min.insync.replicas")
        self.lag_time_ms = config.get("replica.lag.time.max.ms")
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.isr_changes = {"shrink": 0, "expand": 0}  # as leader, for the metrics
        self.fetchers: dict[tuple[int, int], ReplicaFetcher] = {}
        self._tasks = TaskSet(log, "Replica manager task")
        self.stopping = False
        metadata.prepare_listeners.append(self._create_logs)
        metadata.partition_listeners.append(self._on_partition_state)
        metadata.topic_removed_listeners.append(self._on_topic_removed)
        metadata.config_listeners.append(self._on_config)
        logs.replaced_listeners.append(self._on_log_replaced)

    def start(self) -> None:
        """Apply the states already in the cache (the listeners catch what changes later)."""
        self._delete_stray_logs()
        for name, meta in list(self.metadata.topics.items()):
            for p in meta.states:
                self._on_partition_state(name, p, meta)
        self._tasks.spawn(self._isr_maintenance())

    async def shutdown(self) -> None:
        self.stopping = True
        self._tasks.close()
        for f in list(self.fetchers.values()):
            await f.stop()
        self.fetchers.clear()

    def get(self, topic: str, partition: int) -> Partition | None:
        return self.partitions.get((topic, partition))

    def leader_partition(self, topic: str, partition: int) -> Partition:
        """The partition if this broker leads it; otherwise the Kafka error a client should see."""
        p = self.partitions.get((topic, partition))
        if p is not None and p.is_leader and not p.offline:
            return p
        if (p is not None and p.offline) or (p is None and self.logs.is_offline(topic, partition)):
            raise StorageError(message=f"The replica of {topic}-{partition} on broker {self.broker_id} is offline: "
                                       "its log dir failed")
        meta = self.metadata.topics.get(topic)
        if meta is None or partition not in meta.assignment:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition} does not exist")
        st = meta.states.get(partition)
        if st is None or st.leader < 0:
            raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{topic}-{partition} has no leader")
        raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"broker {self.broker_id} does not lead {topic}-{partition}")

    def leaders(self) -> list[Partition]:
        return [p for p in self.partitions.values() if p.is_leader and not p.offline]

    def offline_partitions(self) -> list[tuple[str, int]]:
        """The replicas of this broker that are offline (their log dir failed), the ones without a
        Partition yet (their log could not be created) included."""
        return sorted({*self.logs.offline_partitions(), *(k for k, p in self.partitions.items() if p.offline)})

    def stop_serving_dir(self, log_dir: Path) -> list[Partition]:
        """Log dir `log_dir` failed (on the event loop, at once): its replicas go offline and stop fetching."""
        stopped = [p for p in self.partitions.values() if not p.offline and p.log.dir.parent == log_dir]
        for part in stopped:
            part.go_offline()
            self._stop_fetching(part)
        if stopped:
            log.info("Broker %d stopped fetcher for partitions %s because they are in the failed log directory %s",
                     self.broker_id, ",".join(p.name for p in stopped), log_dir)
        return stopped

    def _min_isr(self, meta: TopicMeta) -> int:
        try:
            return int(meta.config.get("min.insync.replicas", self.default_min_isr))
        except ValueError:
            return self.default_min_isr

    # ---- reacting to metadata ------------------------------------------------------------------
    async def _create_logs(self, topic: str, partitions: list[int], meta: TopicMeta) -> None:
        """Before the states of new partitions are applied: create the logs this broker will need for
        them in one batch, on a worker thread (creating a log touches the disk)."""
        wanted = [p for p in partitions if self.broker_id in meta.assignment.get(p, ())
                  and self.logs.get_log(topic, p) is None]
        if wanted and not self.stopping:
            try:
                await asyncio.get_running_loop().run_in_executor(
                    None, self.logs.create_logs, topic, wanted, dict(meta.config))
            except StorageError as exc:  # a log dir failed: the replicas it could not create are offline
                log.warning("Creating the logs of %s on broker %d: %s", topic, self.broker_id, exc)

    def _on_partition_state(self, topic: str, index: int, meta: TopicMeta) -> None:
        if self.stopping:
            return
        state = meta.states.get(index)
        replicas = meta.assignment.get(index, [])
        if state is None or self.broker_id not in replicas:
            part = self.partitions.get((topic, index))
            if part is not None and self.broker_id not in replicas:
                self._remove_replica(part)
            return
        part = self.partitions.get((topic, index))
        if part is not None and part.offline:
            return  # until the broker restarts (the controller knows it is offline)
        if part is None:
            try:
                log_ = self.logs.get_or_create_log(topic, index, meta.config)
            except StorageError as exc:
                log.warning("Not serving %s-%d on broker %d: %s", topic, index, self.broker_id, exc)
                return
            part = Partition(topic, index, self.broker_id, log_)
            self.partitions[(topic, index)] = part
        part.min_insync_replicas = self._min_isr(meta)
        if state.leader == self.broker_id:
            self._stop_fetching(part)
            part.make_leader(state, replicas)
        else:
            changed = part.make_follower(state, replicas)
            if state.leader < 0:
                self._stop_fetching(part)
            elif changed or not self._is_fetching(part):
                self._stop_fetching(part)
                self._start_fetching(part, state.leader)

    def _on_log_replaced(self, topic: str, index: int, new_log: Log) -> None:
        """A move to another log dir swapped in the partition's new log (on the event loop)."""
        part = self.partitions.get((topic, index))
        if part is not None:
            part.log = new_log

    def _on_topic_removed(self, topic: str, meta: TopicMeta) -> None:
        for key in [k for k in self.partitions if k[0] == topic]:
            part = self.partitions.pop(key)
            self._stop_fetching(part)
            part.leader_id = -1
            part._fail_hw_waiters()
            part._wake_data()
            self.logs.delete_log(topic, key[1])
        for key in self.logs.offline_partitions():  # offline before they had a Partition
            if key[0] == topic:
                self.logs.delete_log(*key)
        log.info("Deleted logs of topic %s on broker %d", topic, self.broker_id)

    def _remove_replica(self, part: Partition) -> None:
        """This broker is no longer assigned the partition (reassigned away): stop it, delete its log."""
        self.partitions.pop((part.topic, part.index), None)
        self._stop_fetching(part)
        part.leader_id = -1
        part._fail_hw_waiters()
        part._wake_data()
        self.logs.delete_log(part.topic, part.index)
        log.info("%s Stopped the replica and deleted its log: no longer assigned to broker %d",
                 part.prefix, self.broker_id)

    def _delete_stray_logs(self) -> None:
        """Logs of partitions reassigned away from this broker while it was down."""
        for lg in self.logs.logs():
            meta = self.metadata.topics.get(lg.topic)
            replicas = meta.assignment.get(lg.partition) if meta is not None else None
            if replicas is not None and self.broker_id not in replicas:
                self.logs.delete_log(lg.topic, lg.partition)
                log.info("Deleted stray log of %s-%d: not assigned to broker %d", lg.topic, lg.partition,
                         self.broker_id)

    def set_default_min_isr(self, value: int) -> None:
        """A new broker default of min.insync.replicas (dynamic config): partitions of topics without
        their own take it at once."""
        self.default_min_isr = value
        for (topic, _), part in self.partitions.items():
            meta = self.metadata.topics.get(topic)
            if meta is not None:
                part.min_insync_replicas = self._min_isr(meta)

    def _on_config(self, topic: str, meta: TopicMeta) -> None:
        self.logs.update_topic_config(topic, meta.config)
        for (t, _), part in self.partitions.items():
            if t == topic:
                part.min_insync_replicas = self._min_isr(meta)

    # ---- fetchers ------------------------------------------------------------------------------
    def _fetcher_key(self, part: Partition, leader: int) -> tuple[int, int]:
        n = max(self.config.get("num.replica.fetchers"), 1)
        return leader, hash((part.topic, part.index)) % n

    def _start_fetching(self, part: Partition, leader: int) -> None:
        key = self._fetcher_key(part, leader)
        fetcher = self.fetchers.get(key)
        if fetcher is None:
            fetcher = ReplicaFetcher(self, leader, key[1])
            self.fetchers[key] = fetcher
        fetcher.add(part)

    def _stop_fetching(self, part: Partition) -> None:
        for key, fetcher in list(self.fetchers.items()):
            if fetcher.remove(part) and not fetcher.partitions:
                del self.fetchers[key]
                self._tasks.spawn(fetcher.stop())

    def _is_fetching(self, part: Partition) -> bool:
        return any((part.topic, part.index) in f.partitions for f in self.fetchers.values())

    def on_follower_append(self, part: Partition) -> None:
        part._wake_data()

    # ---- the leader's side of replication -------------------------------------------------------
    def record_follower_fetch(self, part: Partition, replica_id: int, fetch_offset: int) -> None:
        part.update_follower(replica_id, fetch_offset)
        if part.can_join_isr(replica_id) and not part.isr_change_pending:
            self._tasks.spawn(self._update_isr(part, "expand", replica_id))

    async def _isr_maintenance(self) -> None:
        interval = max(self.lag_time_ms / 2, 100) / 1000
        while not self.stopping:
            await asyncio.sleep(interval)
            for part in self.leaders():
                if part.isr_to_shrink(self.lag_time_ms) and not part.isr_change_pending:
                    await self._update_isr(part, "shrink")

    async def _update_isr(self, part: Partition, why: str, joining: int = -1) -> None:
        part.isr_change_pending = True
        try:
            if why == "expand":
                if not part.can_join_isr(joining):
                    return
                order = {r: i for i, r in enumerate(part.replicas)}
                new_isr = sorted({*part.isr, joining}, key=lambda r: order.get(r, len(order)))
            else:
                lagging = set(part.isr_to_shrink(self.lag_time_ms))
                new_isr = [r for r in part.isr if r not in lagging]
            if new_isr == part.isr or not part.is_leader:
                return
            state = zn.PartitionState(self.broker_id, part.leader_epoch, new_isr, part.controller_epoch)
            path = zn.partition_state_path(part.topic, part.index)
            try:
                stat = await self.store.set(path, to_json(state.to_json()), version=part.zk_version)
            except BadVersionError:
                log.info("%s Cached zkVersion %d not equal to that in zookeeper, skip updating ISR",
                         part.prefix, part.zk_version)
                return
            except StoreError as exc:
                log.warning("%s Failed to update ISR: %s", part.prefix, exc)
                return
            self.isr_changes[why] += 1
            verb = "Expanding" if why == "expand" else "Shrinking"
            log.info("%s %s ISR from %s to %s", part.prefix, verb, ",".join(map(str, part.isr)),
                     ",".join(map(str, new_isr)))
            part.set_isr(new_isr, stat.version)
        finally:
            part.isr_change_pending = False
