"""Coordinator state kept in a compacted internal topic (`__consumer_offsets`, `__transaction_state`).

What the group and the transaction coordinators share:
- A key (group id, transactional id) lives in partition `abs(java_hash(key)) % partitions`, with Kafka's
  `Utils.abs` (`Integer.MIN_VALUE` maps to 0), so it lands where a Kafka broker would put it.
- The coordinator of a key is the leader of that partition. Records are appended through the leader
  `Partition`; a write returns once the high watermark passes it (acks=all).
- When this broker becomes leader of a partition it reads the partition from its log start to its log end
  in a worker thread and replays the records (the subclass's `replay`), then serves the partition's keys
  (`installed`); until then requests get COORDINATOR_LOAD_IN_PROGRESS. Losing leadership drops them
  (`unloaded`). Leadership changes arrive through the metadata cache's partition listeners (which run
  after the replica manager's, so the `Partition` already has its new role).
- The topic is created on first use with the configured partitions, replication factor
  min(configured, live brokers), compacted.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.records import COMMIT_MARKER, build_batch, decode_records, iter_batches, marker_type
from odradek.storage.log_validator import AppendOrigin

if TYPE_CHECKING:
    from odradek.cluster.metadata import TopicMeta
    from odradek.cluster.znodes import BrokerInfo

log = logging.getLogger("odradek.coordinator")

LOAD_WAIT_S = 2.0  # how long a request waits for a partition being loaded before LOAD_IN_PROGRESS
CREATE_WAIT_S = 5.0
RETRY_LOAD_S = 1.0
MAX_LOAD_BUFFER = 64 * 1024 * 1024

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

Records = list[tuple[bytes, bytes | None]]


# ---- placement ----------------------------------------------------------------------------------


def java_string_hash(s: str) -> int:
    """Java's String.hashCode: over UTF-16 code units, 32-bit signed overflow."""
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """Kafka's Utils.abs: Math.abs, except Integer.MIN_VALUE (whose Math.abs is negative) gives 0."""
    return 0 if n == -(1 << 31) else abs(n)


def partition_for(key: str, num_partitions: int) -> int:
    return kafka_abs(java_string_hash(key)) % num_partitions


# ---- reading a partition --------------------------------------------------------------------------


def _as_bytes(records: Any) -> bytes | memoryview:
    if isinstance(records, bytes | memoryview):
        return records
    if isinstance(records, bytearray):
        return memoryview(records)
    if isinstance(records, list | tuple):
        return b"".join(bytes(c) for c in records)
    return bytes(records)


def read_partition(log_: Any, buffer_size: int, topic: str = "",
                   open_txns: dict[int, list[tuple[bytes | None, bytes | None]]] | None = None,
                   ) -> list[tuple[bytes | None, bytes | None]]:
    """Every (key, value) of a log from its start to its end as a reader of committed data sees them:
    records of a transaction (transactional offset commits) appear where its commit marker is and not
    at all if it aborted; those of transactions still open at the end go to `open_txns` by producer id.
    Blocking: run it in a worker thread."""
    end = log_.log_end_offset
    offset = log_.log_start_offset
    out: list[tuple[bytes | None, bytes | None]] = []
    pending: dict[int, list[tuple[bytes | None, bytes | None]]] = {}
    while offset < end:
        buf = _as_bytes(log_.read(offset, buffer_size, max_offset=end).records)
        nxt = _collect(buf, offset, out, pending)
        if nxt > offset:
            offset = nxt
        elif len(buf) == 0:
            break  # the rest of the log was compacted away
        elif buffer_size < MAX_LOAD_BUFFER:
            buffer_size = min(buffer_size * 2, MAX_LOAD_BUFFER)  # a batch larger than the buffer
        else:
            log.warning("Loading %s stopped at offset %d of %d: no readable batch", topic, offset, end)
            break
    if open_txns is not None:
        open_txns.update(pending)
    return out


def _collect(buf: bytes | memoryview, offset: int, out: list[tuple[bytes | None, bytes | None]],
             pending: dict[int, list[tuple[bytes | None, bytes | None]]]) -> int:
    view = memoryview(buf)
    for pos, header in iter_batches(view):
        if header.next_offset <= offset:
            continue
        batch = view[pos : pos + header.size]
        if header.is_control:
            records = pending.pop(header.producer_id, [])
            if marker_type(batch) == COMMIT_MARKER:
                out.extend(records)
        else:
            target = pending.setdefault(header.producer_id, []) if header.is_transactional else out
            for rec in decode_records(batch):
                if rec.offset >= offset:
                    target.append((rec.key, rec.value))
        offset = header.next_offset
    return offset


# ---- the store ----------------------------------------------------------------------------------


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


@dataclass(eq=False)
class _PartitionLoad:
    epoch: int
    loaded: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


class InternalTopicStore:
    """Ownership and persistence of the keys of one internal topic for one broker's coordinator.
    Subclasses say how records replay (`replay`) and what loading and unloading a partition does."""

    what = "coordinator state"  # for log lines: "Finished loading <what> from <topic>-<n>"

    def __init__(self, broker: Any, settings: TopicSettings) -> None:
        self.broker = broker
        self.settings = settings
        self.topic = settings.name
        self._partitions: dict[int, _PartitionLoad] = {}
        self._create_lock = asyncio.Lock()
        self._closed = False
        self._started = False

    # ---- what a subclass provides ----
    def replay(self, records: Iterable[tuple[bytes | None, bytes | None]],
               open_txns: dict[int, list[tuple[bytes | None, bytes | None]]]) -> Any:
        """Fold a partition's records, oldest first, into what `installed` gets; `open_txns` holds the
        records of transactions not yet committed or aborted, by producer id."""
        raise NotImplementedError

    def installed(self, index: int, loaded: Any) -> None:
        """This broker now serves partition `index`, whose records replayed into `loaded`."""
        raise NotImplementedError

    def unloaded(self, index: int) -> None:
        """This broker no longer serves partition `index`."""
        raise NotImplementedError

    def loaded_count(self, loaded: Any) -> int:
        return len(loaded) if hasattr(loaded, "__len__") else 0

    # ---- life cycle ----
    def follow(self) -> None:
        """Start following leadership of the topic's partitions."""
        self._started = True
        meta = self.broker.metadata
        meta.partition_listeners.append(self._on_partition_state)
        meta.topic_removed_listeners.append(self._on_topic_removed)
        self.reconcile()

    async def shutdown(self) -> None:
        self._closed = True
        meta = self.broker.metadata
        for listeners, fn in ((meta.partition_listeners, self._on_partition_state),
                              (meta.topic_removed_listeners, self._on_topic_removed)):
            if fn in listeners:
                listeners.remove(fn)
        for st in self._partitions.values():
            if st.task is not None:
                st.task.cancel()
        self._partitions.clear()

    # ---- placement ----
    def num_partitions(self) -> int:
        meta = self.broker.metadata.topics.get(self.topic)
        return len(meta.assignment) if meta is not None and meta.assignment else self.settings.num_partitions

    def partition_for(self, key: str) -> int:
        return partition_for(key, self.num_partitions())

    def is_loaded(self, index: int) -> bool:
        st = self._partitions.get(index)
        return st is not None and st.loaded

    def led_partitions(self) -> list[int]:
        return sorted(i for i, st in self._partitions.items() if st.loaded)

    def check(self, key: str, kind: str = "group") -> None:
        st = self._partitions.get(self.partition_for(key))
        if st is None:
            raise KafkaError(ErrorCode.NOT_COORDINATOR, f"This broker is not the coordinator of {kind} {key}")
        if not st.loaded:
            raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, f"The coordinator is loading {kind} {key}")

    def loading(self) -> bool:
        return any(not st.loaded for st in self._partitions.values())

    async def wait_ready(self, key: str, create: bool = False, kind: str = "group") -> None:
        if create and self.topic not in self.broker.metadata.topics:
            await self.ensure_topic()
        index = self.partition_for(key)
        st = self._partitions.get(index)
        if st is None:
            self._reconcile_one(index)
            st = self._partitions.get(index)
        if st is not None and not st.loaded:
            try:
                await asyncio.wait_for(st.done.wait(), LOAD_WAIT_S)
            except TimeoutError:
                pass
        InternalTopicStore.check(self, key, kind)

    async def ensure_topic(self) -> bool:
        """Create the topic if it does not exist; True once it exists."""
        meta = self.broker.metadata
        if self.topic in meta.topics:
            return True
        async with self._create_lock:
            if self.topic in meta.topics:
                return True
            live = len(meta.brokers)
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
                await self.broker.topic_admin.create_topic(self.topic, s.num_partitions, factor, configs,
                                                           wait_s=CREATE_WAIT_S)
            except KafkaError as exc:
                if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                    log.warning("Could not create %s: %s", self.topic, exc)
                    return False
        self.reconcile()
        return self.topic in meta.topics

    async def coordinator_node(self, key: str) -> BrokerInfo:
        """The broker (metadata BrokerInfo) leading the key's partition; COORDINATOR_NOT_AVAILABLE if none."""
        if not await self.ensure_topic():
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{self.topic} is not available")
        meta = self.broker.metadata
        leader = meta.leader_of(self.topic, self.partition_for(key))
        info = meta.brokers.get(leader)
        if info is None:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available")
        return info

    # ---- writing ----
    async def write(self, key: str, records: Records, kind: str = "group") -> None:
        """Append records to the key's partition; returns once they are committed, else KafkaError."""
        await self.write_to(self.partition_for(key), records, kind, key)

    async def write_to(self, index: int, records: Records, kind: str = "group", key: str = "",
                       producer: tuple[int, int] | None = None) -> None:
        """Append to partition `index`; with `producer` (id, epoch) as a transactional batch of it."""
        st = self._partitions.get(index)
        if st is None or not st.loaded:
            raise KafkaError(ErrorCode.NOT_COORDINATOR, f"This broker is not the coordinator of {kind} {key}")
        try:
            part = self.broker.replicas.leader_partition(self.topic, index)
            if producer is None:
                batch = build_batch(records)
                info = part.append_as_leader(memoryview(batch), -1)
            else:
                batch = build_batch(records, producer_id=producer[0], producer_epoch=producer[1],
                                    is_transactional=True)
                info = part.append_as_leader(memoryview(batch), -1, origin=AppendOrigin.COORDINATOR)
            target = part.log.log_end_offset
            if info.durable is not None:
                await asyncio.wrap_future(info.durable)
            await asyncio.wait_for(part.hw_waiter(target), self.settings.write_timeout_s)
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
    def _on_partition_state(self, topic: str, index: int, meta: TopicMeta) -> None:
        if topic == self.topic and not self._closed:
            self._reconcile_one(index)

    def _on_topic_removed(self, topic: str, meta: TopicMeta) -> None:
        if topic == self.topic:
            for index in list(self._partitions):
                self._unload(index)

    def reconcile(self) -> None:
        """Bring loads in line with what this broker leads now."""
        meta = self.broker.metadata.topics.get(self.topic)
        indexes = set(self._partitions) | (set(meta.assignment) if meta is not None else set())
        for index in sorted(indexes):
            self._reconcile_one(index)

    def _leader_epoch(self, index: int) -> int | None:
        part = self.broker.replicas.get(self.topic, index)
        return part.leader_epoch if part is not None and part.is_leader else None

    def _reconcile_one(self, index: int) -> None:
        if self._closed or not self._started:
            return
        epoch = self._leader_epoch(index)
        st = self._partitions.get(index)
        if epoch is None:
            if st is not None:
                self._unload(index)
            return
        if st is not None and st.epoch == epoch:
            return
        if st is not None:
            self._unload(index)
        st = self._partitions[index] = _PartitionLoad(epoch)
        st.task = asyncio.get_running_loop().create_task(self._load(index, st))

    def _unload(self, index: int) -> None:
        st = self._partitions.pop(index, None)
        if st is None:
            return
        if st.task is not None and not st.task.done():
            st.task.cancel()
        st.done.set()
        self.unloaded(index)
        log.info("Unloaded %s of %s-%d", self.what, self.topic, index)

    def leader_epoch_of(self, index: int) -> int:
        """The leader epoch this broker loaded the partition at (the coordinator epoch), -1 if none."""
        st = self._partitions.get(index)
        return st.epoch if st is not None else -1

    async def _load(self, index: int, st: _PartitionLoad) -> None:
        part = self.broker.replicas.get(self.topic, index)
        started = time.monotonic()
        try:
            open_txns: dict[int, list[tuple[bytes | None, bytes | None]]] = {}
            records = await asyncio.get_running_loop().run_in_executor(
                None, read_partition, part.log, self.settings.load_buffer, self.topic, open_txns)
            loaded = self.replay(records, open_txns)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error("Loading %s-%d failed, retrying: %s", self.topic, index, exc, exc_info=exc)
            await asyncio.sleep(RETRY_LOAD_S)
            if self._partitions.get(index) is st:
                del self._partitions[index]
                self._reconcile_one(index)
            return
        if self._partitions.get(index) is not st or self._leader_epoch(index) != st.epoch:
            return
        st.loaded = True
        st.done.set()
        self.installed(index, loaded)
        log.log(logging.INFO if records else logging.DEBUG,
                "Finished loading %s from %s-%d in %d milliseconds (%d records, %d loaded)",
                self.what, self.topic, index, (time.monotonic() - started) * 1000, len(records),
                self.loaded_count(loaded))
