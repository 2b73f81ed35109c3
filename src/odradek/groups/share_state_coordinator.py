"""The share coordinator (KIP-932, Kafka's ShareCoordinatorShard): the durable state of share partitions
in `__share_group_state`, as the `CoordinatorShard` of that topic on the coordinator runtime.

- A share partition's key (group id, topic id, partition) lives in partition
  `partition_for("<group>:<topic id>:<partition>")` of the topic, the topic id in Kafka's base64 form
  (`coordinator_key`); the coordinator of a key is the leader of that partition.
- Replay folds ShareSnapshot and ShareUpdate records (`odradek.groups.share_records`) into one state per
  key; a tombstone deletes it.
- Initialize, Read, Write, Delete and ReadSummary are what the state APIs (83-87) and the local persister
  call. A write is appended (acks=all) before memory changes, as an update record, or as a snapshot once
  `share.coordinator.snapshot.update.records.per.snapshot` updates followed the last one; a write or read
  with an older leader epoch than the one stored is FENCED_LEADER_EPOCH, a write with an older state epoch
  FENCED_STATE_EPOCH. A read at a newer leader epoch records it first (fencing the old leader's writes).
- Departure: every update record this shard writes carries the merged state (start offset and every
  batch), not only the batches of the request, so compaction (the topic is compacted here; Kafka's is
  `cleanup.policy=delete` with the coordinator pruning it) never loses an update another one built on.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from odradek.coordinator.partitions import Records, Replayed
from odradek.coordinator.runtime import CoordinatorRuntime, TopicSettings
from odradek.groups import share_records as rec
from odradek.groups.schemas import SchemaError
from odradek.groups.share_partition import StateBatch
from odradek.groups.share_state import ShareKey
from odradek.protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from odradek.config import BrokerConfig

log = logging.getLogger("odradek.groups.share")

SHARE_STATE_TOPIC = "__share_group_state"
UNINITIALIZED_START_OFFSET = -1


def share_state_topic_settings(cfg: BrokerConfig) -> TopicSettings:
    return TopicSettings.from_config(cfg, SHARE_STATE_TOPIC, "share.coordinator.state.topic",
                                     write_timeout_ms=cfg.get("share.coordinator.write.timeout.ms"),
                                     load_buffer=cfg.get("share.coordinator.load.buffer.size"))


def coordinator_key(key: ShareKey) -> str:
    """Kafka's SharePartitionKey as a coordinator key: "<group>:<topic id>:<partition>", the topic id as
    Kafka prints a Uuid (URL-safe base64, no padding)."""
    topic = base64.urlsafe_b64encode(key.topic_id).rstrip(b"=").decode("ascii")
    return f"{key.group_id}:{topic}:{key.partition}"


def parse_coordinator_key(key: str) -> ShareKey | None:
    """A share coordinator key ("<group>:<topic id>:<partition>"), None if it is not one."""
    parts = key.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        return None
    group, topic, partition = parts
    try:
        topic_id = base64.urlsafe_b64decode(topic + "=" * (-len(topic) % 4))
        index = int(partition)
    except ValueError:
        return None
    if len(topic_id) != 16 or index < 0 or not partition.isdigit():
        return None
    return ShareKey(group, topic_id, index)


@dataclass(slots=True)
class KeyState:
    """One share partition's durable state and the update records written since its last snapshot."""

    value: rec.ShareStateValue
    updates: int = 0


def apply(states: dict[ShareKey, KeyState], record_type: int, key: ShareKey, value: rec.ShareStateValue | None,
          ) -> None:
    """Fold one record into `states`."""
    if value is None:
        states.pop(key, None)
        return
    current = states.get(key)
    if record_type == rec.SHARE_SNAPSHOT or current is None:
        states[key] = KeyState(value)
        return
    old = current.value
    start = value.start_offset if value.start_offset != UNINITIALIZED_START_OFFSET else old.start_offset
    start = max(start, old.start_offset)
    current.value = replace(old, snapshot_epoch=value.snapshot_epoch, leader_epoch=value.leader_epoch,
                            start_offset=start, batches=rec.merge_batches(old.batches, value.batches, start))
    current.updates += 1


def decode(raw_key: bytes, raw_value: bytes | None) -> tuple[int, ShareKey, rec.ShareStateValue | None] | None:
    """(record type, key, value) of one record, None for a record type this broker does not know."""
    decoded = rec.decode_key(raw_key)
    if decoded is None:
        return None
    record_type, key = decoded
    if raw_value is None:
        return record_type, key, None
    value = rec.decode_snapshot(raw_value) if record_type == rec.SHARE_SNAPSHOT else rec.decode_update(raw_value)
    return record_type, key, value


def replay(records: Replayed) -> dict[ShareKey, KeyState]:
    """A partition's records, oldest first, folded into the share partitions' states."""
    states: dict[ShareKey, KeyState] = {}
    for raw_key, raw_value in records:
        try:
            got = decode(raw_key, raw_value) if raw_key is not None else None
        except SchemaError as exc:
            log.warning("Skipping malformed record in %s: %s", SHARE_STATE_TOPIC, exc)
            continue
        if got is not None:
            apply(states, *got)
    return states


@dataclass(frozen=True, slots=True)
class StateRead:
    error: ErrorCode
    value: rec.ShareStateValue | None = None
    message: str | None = None


ShareStateRuntime = CoordinatorRuntime[dict[ShareKey, KeyState]]


class ShareCoordinator:
    """The share partitions' states of the `__share_group_state` partitions this broker leads."""

    def __init__(self, runtime: ShareStateRuntime, snapshot_every: int = 500) -> None:
        self.runtime = runtime
        self.snapshot_every = snapshot_every
        self.states: dict[ShareKey, KeyState] = {}
        self._locks: dict[int, asyncio.Lock] = {}

    @classmethod
    def from_config(cls, cfg: BrokerConfig, runtime: ShareStateRuntime) -> ShareCoordinator:
        return cls(runtime, cfg.get("share.coordinator.snapshot.update.records.per.snapshot"))

    async def start(self) -> None:
        await self.runtime.start(self)

    async def shutdown(self) -> None:
        await self.runtime.shutdown()
        self.states.clear()

    # ---- CoordinatorShard ----
    def replay(self, records: Replayed, open_txns: dict[int, Replayed]) -> dict[ShareKey, KeyState]:
        return replay(records)

    def loaded(self, index: int, state: dict[ShareKey, KeyState]) -> None:
        self.states.update(state)

    def unloaded(self, index: int) -> None:
        for key in [k for k in self.states if self.runtime.partition_for(coordinator_key(k)) == index]:
            del self.states[key]

    # ---- the state APIs ----
    async def initialize(self, key: ShareKey, state_epoch: int, start_offset: int) -> ErrorCode:
        """InitializeShareGroupState: a fresh state at `state_epoch` (a state at that epoch or later is kept)."""
        async with self._serving(key) as err:
            if err:
                return err
            current = self.states.get(key)
            if current is not None and current.value.state_epoch >= state_epoch:
                return ErrorCode.NONE
            now = _now_ms()
            value = rec.ShareStateValue(0, -1, start_offset, (), state_epoch, now, now)
            return await self._write(key, rec.SHARE_SNAPSHOT, value)

    async def read(self, key: ShareKey, leader_epoch: int) -> StateRead:
        """ReadShareGroupState by the share partition's leader at `leader_epoch`; a state never written reads
        as start offset -1 (the leader initialises it from `share.auto.offset.reset`)."""
        async with self._serving(key) as err:
            if err:
                return StateRead(err)
            current = self.states.get(key)
            if current is None:
                return StateRead(ErrorCode.NONE, rec.ShareStateValue(0, leader_epoch, UNINITIALIZED_START_OFFSET, ()))
            if leader_epoch < current.value.leader_epoch:
                return StateRead(ErrorCode.FENCED_LEADER_EPOCH, message=f"Leader epoch {leader_epoch} is older than "
                                 f"{current.value.leader_epoch}")
            if leader_epoch > current.value.leader_epoch:
                update = replace(current.value, leader_epoch=leader_epoch)  # the whole state (see above)
                err = await self._write(key, rec.SHARE_UPDATE, update)
                if err:
                    return StateRead(err)
            return StateRead(ErrorCode.NONE, self.states[key].value)

    async def read_summary(self, key: ShareKey) -> StateRead:
        """ReadShareGroupStateSummary: the state without fencing anybody."""
        async with self._serving(key) as err:
            if err:
                return StateRead(err)
            current = self.states.get(key)
            if current is None:
                return StateRead(ErrorCode.NONE, rec.ShareStateValue(0, -1, UNINITIALIZED_START_OFFSET, ()))
            return StateRead(ErrorCode.NONE, current.value)

    async def write(self, key: ShareKey, state_epoch: int, leader_epoch: int, start_offset: int,
                    batches: tuple[StateBatch, ...]) -> tuple[ErrorCode, str | None]:
        """WriteShareGroupState: `batches` laid over the state, the start offset moved (-1: not moved)."""
        ordered = sorted(batches, key=lambda b: b.first_offset)
        for a, b in zip(ordered, ordered[1:], strict=False):
            if b.first_offset <= a.last_offset:
                return ErrorCode.INVALID_REQUEST, "Overlapping state batches."
        if any(b.first_offset > b.last_offset or b.first_offset < 0 for b in ordered):
            return ErrorCode.INVALID_REQUEST, "A state batch ends before it starts."
        async with self._serving(key) as err:
            if err:
                return err, None
            current = self.states.get(key)
            if current is not None:
                if leader_epoch < current.value.leader_epoch:
                    return ErrorCode.FENCED_LEADER_EPOCH, None
                if state_epoch < current.value.state_epoch:
                    return ErrorCode.FENCED_STATE_EPOCH, None
            now = _now_ms()
            if current is None:
                merged = rec.ShareStateValue(0, leader_epoch, start_offset, tuple(ordered), state_epoch, now, now)
            else:
                trial = {key: KeyState(current.value)}
                apply(trial, rec.SHARE_UPDATE, key, rec.ShareStateValue(
                    current.value.snapshot_epoch, leader_epoch, start_offset, tuple(ordered)))
                merged = trial[key].value
            if current is None or current.updates + 1 >= self.snapshot_every:
                epoch = 0 if current is None else (current.value.snapshot_epoch + 1) & 0xFFFF
                snapshot = replace(merged, snapshot_epoch=epoch, state_epoch=max(state_epoch, merged.state_epoch),
                                   write_timestamp=now)
                return await self._write(key, rec.SHARE_SNAPSHOT, snapshot), None
            update = rec.ShareStateValue(merged.snapshot_epoch, leader_epoch, merged.start_offset, merged.batches)
            return await self._write(key, rec.SHARE_UPDATE, update), None

    async def delete(self, key: ShareKey) -> ErrorCode:
        """DeleteShareGroupState: tombstones for both record types of the key."""
        async with self._serving(key) as err:
            if err:
                return err
            records: Records = [(rec.encode_key(t, key), None) for t in (rec.SHARE_SNAPSHOT, rec.SHARE_UPDATE)]
            try:
                await self.runtime.write(coordinator_key(key), records)
            except KafkaError as exc:
                return exc.code
            self.states.pop(key, None)
            return ErrorCode.NONE

    # ---- internals ----
    def _serving(self, key: ShareKey) -> _Serving:
        return _Serving(self, key)

    async def _write(self, key: ShareKey, record_type: int, value: rec.ShareStateValue) -> ErrorCode:
        encode = rec.encode_snapshot if record_type == rec.SHARE_SNAPSHOT else rec.encode_update
        try:
            await self.runtime.write(coordinator_key(key), [(rec.encode_key(record_type, key), encode(value))])
        except KafkaError as exc:
            return exc.code
        apply(self.states, record_type, key, value)
        if record_type == rec.SHARE_SNAPSHOT:
            self.states[key].updates = 0
        return ErrorCode.NONE


class _Serving:
    """`async with`: the key's `__share_group_state` partition is served here (else its error code), and
    its writes are serialised."""

    def __init__(self, coordinator: ShareCoordinator, key: ShareKey) -> None:
        self.coordinator = coordinator
        self.key = coordinator_key(key)
        self.lock: asyncio.Lock | None = None

    async def __aenter__(self) -> ErrorCode:
        runtime = self.coordinator.runtime
        try:
            await runtime.wait_ready(self.key, create=True)
        except KafkaError as exc:
            return exc.code
        self.lock = self.coordinator._locks.setdefault(runtime.partition_for(self.key), asyncio.Lock())
        await self.lock.acquire()
        try:
            runtime.check(self.key)  # still served after waiting for the lock
        except KafkaError as exc:
            self.lock.release()
            self.lock = None
            return exc.code
        return ErrorCode.NONE

    async def __aexit__(self, *exc: object) -> None:
        if self.lock is not None:
            self.lock.release()


def _now_ms() -> int:
    return int(time.time() * 1000)
