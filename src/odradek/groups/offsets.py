"""The offset store: group metadata and committed offsets as records in `__consumer_offsets`.

- A group lives in partition `abs(java_hash(group_id)) % partitions`, with Kafka's `Utils.abs`
  (`Integer.MIN_VALUE` maps to 0), so a group lands where a Kafka broker would put it.
- The coordinator of a group is the leader of that partition. Records are appended through the leader
  `Partition` and a write returns once the high watermark passes it (acks=all).
- When this broker becomes leader of a partition it reads the partition from its log start to its log end
  in a worker thread, replays the records (later records win, null values delete) and only then serves
  the partition's groups; until then requests get COORDINATOR_LOAD_IN_PROGRESS. Losing leadership drops
  the partition's groups. Leadership changes arrive through the metadata cache's partition listeners
  (which run after the replica manager's, so the `Partition` already has its new role).
- The topic is created on first use: `offsets.topic.num.partitions` partitions, replication factor
  min(`offsets.topic.replication.factor`, live brokers), compacted.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from odradek.groups import OFFSETS_TOPIC, schemas
from odradek.groups.store import GroupOwner, LoadedGroup
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.records import build_batch, decode_records, iter_batches

if TYPE_CHECKING:
    from odradek.cluster.metadata import TopicMeta
    from odradek.cluster.znodes import BrokerInfo

log = logging.getLogger("odradek.groups.offsets")

LOAD_WAIT_S = 2.0  # how long a request waits for a partition being loaded before LOAD_IN_PROGRESS
CREATE_WAIT_S = 5.0
RETRY_LOAD_S = 1.0
MAX_LOAD_BUFFER = 64 * 1024 * 1024

# Append/replication errors -> what a group client should see (as Kafka maps them).
_WRITE_ERRORS = {
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


def partition_for(group_id: str, num_partitions: int) -> int:
    return kafka_abs(java_string_hash(group_id)) % num_partitions


# ---- loading ------------------------------------------------------------------------------------


def replay(records: Iterable[tuple[bytes | None, bytes | None]]) -> dict[str, LoadedGroup]:
    """Fold a partition's records, oldest first, into the groups they leave behind."""
    groups: dict[str, LoadedGroup] = {}
    for raw_key, raw_value in records:
        try:
            _apply(groups, raw_key, raw_value)
        except schemas.SchemaError as exc:
            log.warning("Skipping malformed record in %s: %s", OFFSETS_TOPIC, exc)
    return {gid: g for gid, g in groups.items() if g.metadata is not None or g.offsets}


def _apply(groups: dict[str, LoadedGroup], raw_key: bytes | None, raw_value: bytes | None) -> None:
    if raw_key is None:
        return
    key = schemas.decode_key(raw_key)
    if isinstance(key, schemas.OffsetKey):
        entry = groups.setdefault(key.group, LoadedGroup())
        value = schemas.decode_offset_value(raw_value)
        if value is None:
            entry.offsets.pop((key.topic, key.partition), None)
        else:
            entry.offsets[(key.topic, key.partition)] = value
    elif key is not None:
        groups.setdefault(key.group, LoadedGroup()).metadata = schemas.decode_group_value(raw_value)


def _as_bytes(records: Any) -> bytes | memoryview:
    if isinstance(records, bytes | memoryview):
        return records
    if isinstance(records, bytearray):
        return memoryview(records)
    if isinstance(records, list | tuple):
        return b"".join(bytes(c) for c in records)
    return bytes(records)


def read_partition(log_: Any, buffer_size: int) -> list[tuple[bytes | None, bytes | None]]:
    """Every (key, value) of a log from its start to its end, skipping control batches. Blocking: run it
    in a worker thread."""
    end = log_.log_end_offset
    offset = log_.log_start_offset
    out: list[tuple[bytes | None, bytes | None]] = []
    while offset < end:
        buf = _as_bytes(log_.read(offset, buffer_size, max_offset=end).records)
        nxt = _collect(buf, offset, out)
        if nxt > offset:
            offset = nxt
        elif len(buf) == 0:
            break  # the rest of the log was compacted away
        elif buffer_size < MAX_LOAD_BUFFER:
            buffer_size = min(buffer_size * 2, MAX_LOAD_BUFFER)  # a batch larger than the buffer
        else:
            log.warning("Loading %s stopped at offset %d of %d: no readable batch", OFFSETS_TOPIC, offset, end)
            break
    return out


def _collect(buf: bytes | memoryview, offset: int, out: list[tuple[bytes | None, bytes | None]]) -> int:
    view = memoryview(buf)
    for pos, header in iter_batches(view):
        if header.next_offset <= offset:
            continue
        if not header.is_control:
            for rec in decode_records(view[pos : pos + header.size]):
                if rec.offset >= offset:
                    out.append((rec.key, rec.value))
        offset = header.next_offset
    return offset


# ---- the store ----------------------------------------------------------------------------------


@dataclass(eq=False)
class _PartitionLoad:
    epoch: int
    loaded: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


class OffsetStore:
    """Persistence and ownership of groups for the coordinator of one broker (a `GroupStore`)."""

    def __init__(self, broker: Any) -> None:
        self.broker = broker
        self._owner: GroupOwner | None = None
        cfg = broker.config
        self.default_partitions = int(cfg.get("offsets.topic.num.partitions"))
        self.replication_factor = int(cfg.get("offsets.topic.replication.factor"))
        self.segment_bytes = int(cfg.get("offsets.topic.segment.bytes"))
        self.commit_timeout_s = int(cfg.get("offsets.commit.timeout.ms")) / 1000
        self.load_buffer = int(cfg.get("offsets.load.buffer.size"))
        self._partitions: dict[int, _PartitionLoad] = {}
        self._create_lock = asyncio.Lock()
        self._closed = False

    # ---- life cycle ----
    async def start(self, owner: GroupOwner) -> None:
        self._owner = owner
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

    @property
    def _group_owner(self) -> GroupOwner:
        if self._owner is None:
            raise RuntimeError("OffsetStore.start() has not been called")
        return self._owner

    # ---- placement ----
    def num_partitions(self) -> int:
        meta = self.broker.metadata.topics.get(OFFSETS_TOPIC)
        return len(meta.assignment) if meta is not None and meta.assignment else self.default_partitions

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions())

    def check(self, group_id: str) -> None:
        st = self._partitions.get(self.partition_for(group_id))
        if st is None:
            raise KafkaError(ErrorCode.NOT_COORDINATOR, f"This broker is not the coordinator of group {group_id}")
        if not st.loaded:
            raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                             f"The coordinator is loading group {group_id}")

    def loading(self) -> bool:
        return any(not st.loaded for st in self._partitions.values())

    async def wait_ready(self, group_id: str, create: bool = False) -> None:
        if create and OFFSETS_TOPIC not in self.broker.metadata.topics:
            await self.ensure_topic()
        index = self.partition_for(group_id)
        st = self._partitions.get(index)
        if st is None:
            self._reconcile_one(index)
            st = self._partitions.get(index)
        if st is not None and not st.loaded:
            try:
                await asyncio.wait_for(st.done.wait(), LOAD_WAIT_S)
            except TimeoutError:
                pass
        self.check(group_id)

    async def ensure_topic(self) -> bool:
        """Create `__consumer_offsets` if it does not exist; True once it exists."""
        meta = self.broker.metadata
        if OFFSETS_TOPIC in meta.topics:
            return True
        async with self._create_lock:
            if OFFSETS_TOPIC in meta.topics:
                return True
            live = len(meta.brokers)
            if live == 0:
                return False
            configs = {"cleanup.policy": "compact", "compression.type": "producer",
                       "segment.bytes": str(self.segment_bytes)}
            factor = min(self.replication_factor, live)
            if factor < self.replication_factor:
                # Kafka refuses to create the topic until enough brokers are alive; Odradek creates it
                # with the brokers there are, so a small cluster's groups work (docs/DESIGN.md)
                log.warning("Creating %s with replication factor %d: offsets.topic.replication.factor is %d "
                            "but only %d broker(s) are alive; add brokers and reassign its partitions for "
                            "more replicas", OFFSETS_TOPIC, factor, self.replication_factor, live)
            try:
                await self.broker.topic_admin.create_topic(OFFSETS_TOPIC, self.default_partitions,
                                                           factor, configs, wait_s=CREATE_WAIT_S)
            except KafkaError as exc:
                if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                    log.warning("Could not create %s: %s", OFFSETS_TOPIC, exc)
                    return False
        self.reconcile()
        return OFFSETS_TOPIC in meta.topics

    async def coordinator_node(self, group_id: str) -> BrokerInfo:
        """The broker (metadata BrokerInfo) leading the group's partition; COORDINATOR_NOT_AVAILABLE if none."""
        if not await self.ensure_topic():
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{OFFSETS_TOPIC} is not available")
        meta = self.broker.metadata
        leader = meta.leader_of(OFFSETS_TOPIC, self.partition_for(group_id))
        info = meta.brokers.get(leader)
        if info is None:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available")
        return info

    # ---- writing ----
    async def write(self, group_id: str, records: schemas.Records) -> None:
        index = self.partition_for(group_id)
        st = self._partitions.get(index)
        if st is None or not st.loaded:
            raise KafkaError(ErrorCode.NOT_COORDINATOR, f"This broker is not the coordinator of group {group_id}")
        try:
            part = self.broker.replicas.leader_partition(OFFSETS_TOPIC, index)
            info = part.append_as_leader(memoryview(build_batch(records)), -1)
            target = part.log.log_end_offset
            if info.durable is not None:
                await asyncio.wrap_future(info.durable)
            await asyncio.wait_for(part.hw_waiter(target), self.commit_timeout_s)
        except KafkaError as exc:
            raise KafkaError(_WRITE_ERRORS.get(exc.code, exc.code), str(exc)) from None
        except TimeoutError:
            raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, "offsets.commit.timeout.ms passed") from None
        except OSError as exc:
            log.error("Writing to %s-%d failed: %s", OFFSETS_TOPIC, index, exc)
            raise KafkaError(ErrorCode.NOT_COORDINATOR, str(exc)) from None
        except Exception as exc:  # a storage bug must become an error code, not a dropped connection
            log.error("Writing to %s-%d failed: %s", OFFSETS_TOPIC, index, exc, exc_info=exc)
            raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, str(exc)) from None

    # ---- leadership ----
    def _on_partition_state(self, topic: str, index: int, meta: TopicMeta) -> None:
        if topic == OFFSETS_TOPIC and not self._closed:
            self._reconcile_one(index)

    def _on_topic_removed(self, topic: str, meta: TopicMeta) -> None:
        if topic == OFFSETS_TOPIC:
            for index in list(self._partitions):
                self._unload(index)

    def reconcile(self) -> None:
        """Bring loads in line with what this broker leads now."""
        meta = self.broker.metadata.topics.get(OFFSETS_TOPIC)
        indexes = set(self._partitions) | (set(meta.assignment) if meta is not None else set())
        for index in sorted(indexes):
            self._reconcile_one(index)

    def _leader_epoch(self, index: int) -> int | None:
        part = self.broker.replicas.get(OFFSETS_TOPIC, index)
        return part.leader_epoch if part is not None and part.is_leader else None

    def _reconcile_one(self, index: int) -> None:
        if self._closed or self._owner is None:
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
        self._group_owner.unload_partition(index)
        log.info("Unloaded groups of %s-%d", OFFSETS_TOPIC, index)

    async def _load(self, index: int, st: _PartitionLoad) -> None:
        part = self.broker.replicas.get(OFFSETS_TOPIC, index)
        started = time.monotonic()
        try:
            records = await asyncio.get_running_loop().run_in_executor(
                None, read_partition, part.log, self.load_buffer)
            loaded = replay(records)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error("Loading %s-%d failed, retrying: %s", OFFSETS_TOPIC, index, exc, exc_info=exc)
            await asyncio.sleep(RETRY_LOAD_S)
            if self._partitions.get(index) is st:
                del self._partitions[index]
                self._reconcile_one(index)
            return
        if self._partitions.get(index) is not st or self._leader_epoch(index) != st.epoch:
            return
        self._group_owner.install(loaded)
        st.loaded = True
        st.done.set()
        log.log(logging.INFO if records else logging.DEBUG,
                "Finished loading offsets and group metadata from %s-%d in %d milliseconds (%d records, %d groups)",
                OFFSETS_TOPIC, index, (time.monotonic() - started) * 1000, len(records), len(loaded))
