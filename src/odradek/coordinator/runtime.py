"""`CoordinatorRuntime`: the keys of one internal topic for one broker's coordinator (Kafka's
CoordinatorRuntime in `coordinator-common`).

- A key lives in partition `partition_for(key, partitions)`; the coordinator of a key is the leader of
  that partition. Records are appended through the leader (`PartitionWriter.append`); a write returns
  once the high watermark passes it (acks=all).
- When this broker becomes leader of a partition the runtime reads the partition from its log start to its
  log end in a worker thread, has the shard replay the records (`CoordinatorShard.replay`) and hands the
  result over (`loaded`); until then requests get COORDINATOR_LOAD_IN_PROGRESS. Losing leadership, or a
  new leader epoch (the partition moved away and back), unloads it (`unloaded`) first: a coordinator never
  serves state loaded under another epoch. Leadership changes arrive through
  `CoordinatorMetadata.subscribe` (after the replica has its new role).
- The topic is created on first use with the configured partitions, replication factor
  min(configured, live brokers), compacted.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sized
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from odradek.cluster.znodes import BrokerInfo
from odradek.coordinator import loader
from odradek.coordinator.partitions import (
    CoordinatorMetadata,
    PartitionWriter,
    ProducerIdAndEpoch,
    Records,
    Replayed,
)
from odradek.coordinator.placement import partition_for
from odradek.protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from odradek.config import BrokerConfig

log = logging.getLogger("odradek.coordinator")

LOAD_WAIT_S = 2.0  # how long a request waits for a partition being loaded before LOAD_IN_PROGRESS
CREATE_WAIT_S = 5.0
RETRY_LOAD_S = 1.0

# Append/replication errors -> what a coordinator's client should see (as Kafka maps them).
WRITE_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.LEADER_NOT_AVAILABLE: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
}

S = TypeVar("S", bound=Sized)


class CoordinatorShard(Protocol[S]):
    """What a partition's records mean: the group or the transaction coordinator."""

    def replay(self, records: Replayed, open_txns: dict[int, Replayed]) -> S:
        """Fold a partition's records, oldest first, into its state; `open_txns` holds the records of
        transactions not yet committed or aborted, by producer id."""
        ...

    def loaded(self, index: int, state: S) -> None:
        """This broker now serves partition `index`, whose records replayed into `state`."""
        ...

    def unloaded(self, index: int) -> None:
        """This broker no longer serves partition `index`."""
        ...


@dataclass(frozen=True, slots=True)
class TopicSettings:
    """How the internal topic is created and written (from the broker keys `<prefix>.num.partitions`...)."""

    name: str
    num_partitions: int
    replication_factor: int
    segment_bytes: int
    write_timeout_s: float
    load_buffer: int
    min_isr: int | None = None
    key_prefix: str = ""  # of the broker keys, for messages: "offsets.topic", "transaction.state.log"

    @classmethod
    def from_config(cls, config: BrokerConfig, name: str, key_prefix: str, *, write_timeout_ms: int,
                    load_buffer: int, with_min_isr: bool = True) -> TopicSettings:
        """The topic keys under `key_prefix` (`.num.partitions`, `.replication.factor`, `.segment.bytes`, and
        `.min.isr` unless the topic has none); the write timeout and load buffer come from keys named
        otherwise, read by the caller."""

        def key(suffix: str) -> int:
            value = config.value(f"{key_prefix}.{suffix}")  # every one of them is an int key
            assert isinstance(value, int), (key_prefix, suffix)
            return value

        return cls(name, key("num.partitions"), key("replication.factor"), key("segment.bytes"),
                   write_timeout_ms / 1000, load_buffer, key("min.isr") if with_min_isr else None,
                   key_prefix=key_prefix)


@dataclass(eq=False)
class _PartitionLoad:
    epoch: int
    loaded: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


class CoordinatorRuntime(Generic[S]):
    """Ownership and persistence of the keys of one internal topic for one broker's coordinator."""

    def __init__(self, settings: TopicSettings, partitions: PartitionWriter, metadata: CoordinatorMetadata, *,
                 what: str = "coordinator state", kind: str = "key") -> None:
        self.settings = settings
        self.topic = settings.name
        self.partitions = partitions
        self.metadata = metadata
        self.what = what  # for log lines: "Finished loading <what> from <topic>-<n>"
        self.kind = kind  # for error messages: "This broker is not the coordinator of <kind> <key>"
        self._shard: CoordinatorShard[S] | None = None
        self._loads: dict[int, _PartitionLoad] = {}
        self._create_lock = asyncio.Lock()
        self._unsubscribe: Callable[[], None] | None = None
        self._closed = False

    # ---- life cycle ----
    async def start(self, shard: CoordinatorShard[S]) -> None:
        """Start following leadership of the topic's partitions, loading into `shard`."""
        self._shard = shard
        self._unsubscribe = self.metadata.subscribe(self.topic, self._reconcile_one, self._on_topic_removed)
        self.reconcile()

    async def shutdown(self) -> None:
        self._closed = True
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for st in self._loads.values():
            if st.task is not None:
                st.task.cancel()
        self._loads.clear()

    # ---- placement ----
    def num_partitions(self) -> int:
        return sum(1 for _ in self.metadata.partitions(self.topic)) or self.settings.num_partitions

    def partition_for(self, key: str) -> int:
        return partition_for(key, self.num_partitions())

    def is_loaded(self, index: int) -> bool:
        st = self._loads.get(index)
        return st is not None and st.loaded

    def led_partitions(self) -> list[int]:
        return sorted(i for i, st in self._loads.items() if st.loaded)

    def leader_epoch_of(self, index: int) -> int:
        """The leader epoch this broker loaded the partition at (the coordinator epoch), -1 if none."""
        st = self._loads.get(index)
        return st.epoch if st is not None else -1

    def check(self, key: str) -> None:
        """Raise NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS unless this broker serves `key` now."""
        st = self._loads.get(self.partition_for(key))
        if st is None:
            raise KafkaError(ErrorCode.NOT_COORDINATOR, f"This broker is not the coordinator of {self.kind} {key}")
        if not st.loaded:
            raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, f"The coordinator is loading {self.kind} {key}")

    def loading(self) -> bool:
        """Whether any partition this broker leads is still being loaded."""
        return any(not st.loaded for st in self._loads.values())

    async def wait_ready(self, key: str, create: bool = False) -> None:
        """Like `check`, after waiting a little for a load under way (creating the topic if `create`)."""
        if create and not self.metadata.topic_exists(self.topic):
            await self.ensure_topic()
        index = self.partition_for(key)
        st = self._loads.get(index)
        if st is None:
            self._reconcile_one(index)
            st = self._loads.get(index)
        if st is not None and not st.loaded:
            try:
                await asyncio.wait_for(st.done.wait(), LOAD_WAIT_S)
            except TimeoutError:
                pass
        self.check(key)

    async def ensure_topic(self) -> bool:
        """Create the topic if it does not exist; True once it exists."""
        if self.metadata.topic_exists(self.topic):
            return True
        async with self._create_lock:
            if self.metadata.topic_exists(self.topic):
                return True
            live = self.metadata.live_brokers()
            if live == 0:
                log.warning("Cannot create %s yet: the metadata cache lists no live broker", self.topic)
                return False
            s = self.settings
            configs = {"cleanup.policy": "compact", "compression.type": "producer",
                       "segment.bytes": str(s.segment_bytes)}
            factor = min(s.replication_factor, live)
            if s.min_isr is not None:
                configs["min.insync.replicas"] = str(min(s.min_isr, factor))
            if factor < s.replication_factor:
                # Kafka refuses to create the topic until enough brokers are alive; Odradek creates it
                # with the brokers there are, so a small cluster's coordinators work (docs/DESIGN.md)
                log.warning("Creating %s with replication factor %d: %s.replication.factor is %d "
                            "but only %d broker(s) are alive; add brokers and reassign its partitions for "
                            "more replicas", self.topic, factor, s.key_prefix, s.replication_factor, live)
            try:
                await self.metadata.create_topic(self.topic, s.num_partitions, factor, configs, CREATE_WAIT_S)
            except KafkaError as exc:
                if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                    log.warning("Could not create %s: %s", self.topic, exc)
                    return False
        self.reconcile()
        return self.metadata.topic_exists(self.topic)

    async def coordinator_node(self, key: str) -> BrokerInfo:
        """The broker leading the key's partition (creating the topic on first use);
        COORDINATOR_NOT_AVAILABLE if none."""
        if not await self.ensure_topic():
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{self.topic} is not available")
        info = self.metadata.leader(self.topic, self.partition_for(key))
        if info is None:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available")
        return info

    # ---- writing ----
    async def write(self, key: str, records: Records) -> None:
        """Append records to the key's partition; returns once they are committed, else KafkaError."""
        await self.write_to(self.partition_for(key), records, key)

    async def write_transactional(self, key: str, records: Records, producer_id: int, producer_epoch: int) -> None:
        """Like `write`, as a batch of the producer's transaction (visible once its commit marker is)."""
        await self.write_to(self.partition_for(key), records, key, (producer_id, producer_epoch))

    async def write_to(self, index: int, records: Records, key: str = "",
                       producer: ProducerIdAndEpoch | None = None) -> None:
        """Append to partition `index`; with `producer` (id, epoch) as a transactional batch of it."""
        st = self._loads.get(index)
        if st is None or not st.loaded:
            raise KafkaError(ErrorCode.NOT_COORDINATOR, f"This broker is not the coordinator of {self.kind} {key}")
        try:
            await self.partitions.append(self.topic, index, records, producer, self.settings.write_timeout_s)
        except KafkaError as exc:
            raise KafkaError(WRITE_ERRORS.get(exc.code, exc.code), str(exc)) from None
        except TimeoutError:
            raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"writing to {self.topic}-{index} timed out") from None
        except OSError as exc:
            log.error("Writing to %s-%d failed: %s", self.topic, index, exc)
            raise KafkaError(ErrorCode.NOT_COORDINATOR, str(exc)) from None
        except Exception as exc:  # a storage bug must become an error code, not a dropped connection
            log.error("Writing to %s-%d failed: %s", self.topic, index, exc, exc_info=exc)
            raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, str(exc)) from None

    # ---- leadership ----
    def _on_topic_removed(self) -> None:
        for index in list(self._loads):
            self._unload(index)

    def reconcile(self) -> None:
        """Bring loads in line with what this broker leads now."""
        for index in sorted(set(self._loads) | set(self.metadata.partitions(self.topic))):
            self._reconcile_one(index)

    def _reconcile_one(self, index: int) -> None:
        if self._closed or self._shard is None:
            return
        epoch = self.partitions.leader_epoch(self.topic, index)
        st = self._loads.get(index)
        if epoch is None:
            if st is not None:
                self._unload(index)
            return
        if st is not None and st.epoch == epoch:
            return
        if st is not None:
            self._unload(index)
        st = self._loads[index] = _PartitionLoad(epoch)
        st.task = asyncio.get_running_loop().create_task(self._load(index, st))

    def _unload(self, index: int) -> None:
        st = self._loads.pop(index, None)
        if st is None:
            return
        if st.task is not None and not st.task.done():
            st.task.cancel()
        st.done.set()
        if self._shard is not None:
            self._shard.unloaded(index)
        log.info("Unloaded %s of %s-%d", self.what, self.topic, index)

    async def _load(self, index: int, st: _PartitionLoad) -> None:
        shard = self._shard
        assert shard is not None
        started = time.monotonic()
        try:
            log_ = self.partitions.log(self.topic, index)
            if log_ is None:
                raise RuntimeError(f"no local replica of {self.topic}-{index}")
            open_txns: dict[int, Replayed] = {}
            records = await asyncio.get_running_loop().run_in_executor(
                None, loader.read_partition, log_, self.settings.load_buffer, self.topic, open_txns)
            state = shard.replay(records, open_txns)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error("Loading %s-%d failed, retrying: %s", self.topic, index, exc, exc_info=exc)
            await asyncio.sleep(RETRY_LOAD_S)
            if self._loads.get(index) is st:
                del self._loads[index]
                self._reconcile_one(index)
            return
        if self._loads.get(index) is not st or self.partitions.leader_epoch(self.topic, index) != st.epoch:
            return
        st.loaded = True
        st.done.set()
        shard.loaded(index, state)
        log.log(logging.INFO if records else logging.DEBUG,
                "Finished loading %s from %s-%d in %d milliseconds (%d records, %d loaded)",
                self.what, self.topic, index, (time.monotonic() - started) * 1000, len(records), len(state))
