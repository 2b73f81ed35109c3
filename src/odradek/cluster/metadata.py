"""The broker's cache of cluster metadata, kept current from store watches: live brokers, controller,
topics with their ids, replica assignments, partition states and config overrides.

Partition states are read in pipelined batches: a new topic's states together, and state watches that
fire together (a controller writes a big topic's states in a few transactions) are coalesced into one
batch read, so a topic of N partitions costs O(N) and not N round trips."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from odradek.aio import TaskSet
from odradek.cluster import znodes as zn
from odradek.cluster.store import MetadataStore, NoNodeError, Stat, StoreError, Watcher, WatchEvent

log = logging.getLogger("odradek.metadata")


@dataclass(slots=True)
class TopicMeta:
    name: str
    topic_id: bytes
    assignment: dict[int, list[int]]
    states: dict[int, zn.PartitionState] = field(default_factory=dict)
    config: dict[str, str] = field(default_factory=dict)


PartitionListener = Callable[[str, int, "TopicMeta"], None]
TopicListener = Callable[[str, "TopicMeta"], None]
# awaited before the states of these partitions (first seen) enter the cache: the replica manager
# creates their logs in one batch there
PrepareListener = Callable[[str, list[int], "TopicMeta"], Awaitable[None]]
READ_BATCH = 1000


def _partition_of(state_path: str) -> int:
    """.../partitions/<p>/state -> p"""
    return int(state_path.rsplit("/", 2)[1])


class MetadataCache:
    def __init__(self, store: MetadataStore) -> None:
        self.store = store
        self.brokers: dict[int, zn.BrokerInfo] = {}
        self.controller_id: int = -1
        self.topics: dict[str, TopicMeta] = {}
        self.by_id: dict[bytes, str] = {}
        self.partition_listeners: list[PartitionListener] = []
        self.topic_removed_listeners: list[TopicListener] = []
        self.config_listeners: list[TopicListener] = []
        self.prepare_listeners: list[PrepareListener] = []
        self._pending: dict[str, set[int]] = {}  # partition states whose watch fired, to be re-read
        self._drain_lock = asyncio.Lock()
        self._drain_scheduled = False
        self._changed = asyncio.Event()
        self._loads: dict[str, int] = {}  # reload generation per watched path (see _begin)
        self._tasks = TaskSet(log, "Metadata refresh", expected=(StoreError,))

    # ---- waiting for propagation -------------------------------------------------------------
    async def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                return predicate()
        return True

    def _notify(self) -> None:
        self._changed.set()

    def _begin(self, key: str) -> int:
        """Number a reload of `key`. Reloads run as tasks and may overlap when a watch fires during one;
        only the latest may apply what it read, or an older, slower read would overwrite a newer one
        (and the watch that would correct it has already fired)."""
        n = self._loads[key] = self._loads.get(key, 0) + 1
        return n

    def _latest(self, key: str, n: int) -> bool:
        return self._loads.get(key) == n

    # ---- loading -------------------------------------------------------------------------------
    async def start(self, resync: bool = False) -> None:
        """Read the cluster and set the watches. `resync` after a new store session (ZooKeeper expired the
        old one, and with it every watch): topics already known are read again too, so whatever changed
        meanwhile (a new leader, a shrunk ISR, a new znode version) reaches the listeners as any change."""
        await self._load_brokers()
        await self._load_controller()
        await self._load_topics(resync)

    async def resync(self) -> None:
        await self.start(resync=True)

    def close(self) -> None:
        self._tasks.close()

    def _watch(self, fn: Callable[..., Coroutine[Any, Any, None]], *args: object) -> Callable[[WatchEvent], None]:
        def reload(_ev: WatchEvent) -> None:
            self._tasks.spawn(fn(*args))

        return reload

    async def _load_brokers(self) -> None:
        gen = self._begin(zn.BROKER_IDS)
        ids = await self.store.get_children(zn.BROKER_IDS, watch=self._watch(self._load_brokers))
        brokers: dict[int, zn.BrokerInfo] = {}
        for child in ids:
            try:
                bid = int(child)
                data, _ = await self.store.get_json(zn.broker_path(bid))
                brokers[bid] = zn.BrokerInfo.from_json(bid, data)
            except NoNodeError:
                continue
            except (StoreError, ValueError, KeyError, TypeError) as exc:
                log.warning("Ignoring malformed broker registration %s/%s: %s", zn.BROKER_IDS, child, exc)
        if self._latest(zn.BROKER_IDS, gen):
            self.brokers = brokers
            self._notify()

    async def _load_controller(self) -> None:
        gen = self._begin(zn.CONTROLLER)
        stat = await self.store.exists(zn.CONTROLLER, watch=self._watch(self._load_controller))
        cid = -1
        if stat is not None:
            try:
                data, _ = await self.store.get_json(zn.CONTROLLER)
                cid = int(data["brokerid"])
            except (NoNodeError, StoreError, KeyError, TypeError, ValueError) as exc:
                log.warning("Ignoring malformed %s: %s", zn.CONTROLLER, exc)
        if self._latest(zn.CONTROLLER, gen):
            self.controller_id = cid
            self._notify()

    async def _load_topics(self, resync: bool = False) -> None:
        gen = self._begin(zn.BROKER_TOPICS)
        names = await self.store.get_children(zn.BROKER_TOPICS, watch=self._watch(self._load_topics))
        for name in names:
            if resync or name not in self.topics:
                await self._load_topic(name, resync)
        if not self._latest(zn.BROKER_TOPICS, gen):
            return  # a newer listing removes what is gone (this one may predate a topic's creation)
        for name in [n for n in self.topics if n not in names]:
            meta = self.topics.pop(name)
            self.by_id.pop(meta.topic_id, None)
            for fn in self.topic_removed_listeners:
                fn(name, meta)
        self._notify()

    async def _load_topic(self, name: str, resync: bool = False) -> None:
        gen = self._begin(zn.topic_path(name))
        try:
            data, _ = await self.store.get_json(zn.topic_path(name), watch=self._watch(self._reload_topic, name))
            if not self._latest(zn.topic_path(name), gen):
                return
            assignment = zn.TopicAssignment.from_json(data)
        except NoNodeError:
            return
        except (StoreError, KeyError, TypeError, ValueError) as exc:
            log.warning("Ignoring malformed topic znode %s: %s", zn.topic_path(name), exc)
            return
        meta = self.topics.get(name)
        if meta is None:
            meta = TopicMeta(name, assignment.topic_id, assignment.partitions)
            self.topics[name] = meta
            self.by_id[meta.topic_id] = name
            await self._load_config(name)
            changed: list[int] = []
        else:
            changed = [p for p, r in assignment.partitions.items() if meta.assignment.get(p) != r]
            meta.assignment = assignment.partitions
            if resync:
                await self._load_config(name)
        # on a resync every state is read again (which also sets its watch again)
        fresh = list(assignment.partitions) if resync else [p for p in assignment.partitions if p not in meta.states]
        if fresh:
            self._pending.setdefault(name, set()).update(fresh)
            await self._drain()
        for p in changed:  # replicas added or removed (reassignment): the replica manager must know
            if p in meta.states:
                for fn in self.partition_listeners:
                    fn(name, p, meta)
        self._notify()

    async def _reload_topic(self, name: str) -> None:
        if name in self.topics:
            await self._load_topic(name)

    async def _load_config(self, name: str) -> None:
        path = zn.topic_config_path(name)
        gen = self._begin(path)
        stat = await self.store.exists(path, watch=self._watch(self._reload_config, name))
        config: dict[str, str] = {}
        if stat is not None:
            try:
                data, _ = await self.store.get_json(path)
                config = {str(k): str(v) for k, v in (data or {}).get("config", {}).items()}
            except NoNodeError:
                pass
            except (StoreError, AttributeError) as exc:
                log.warning("Ignoring malformed topic config %s: %s", path, exc)
        meta = self.topics.get(name)
        if meta is not None and meta.config != config and self._latest(path, gen):
            meta.config = config
            for fn in self.config_listeners:
                fn(name, meta)
        self._notify()

    async def _reload_config(self, name: str) -> None:
        if name in self.topics:
            await self._load_config(name)

    def _state_watch(self, name: str, partition: int) -> Watcher:
        def fire(_ev: WatchEvent) -> None:
            self._pending.setdefault(name, set()).add(partition)
            if not self._drain_scheduled:
                self._drain_scheduled = True
                self._tasks.spawn(self._drain())

        return fire

    async def _drain(self) -> None:
        """Read every pending partition state; one reader at a time, so reads apply in order."""
        async with self._drain_lock:
            self._drain_scheduled = False
            while self._pending:
                name, partitions = self._pending.popitem()
                await self._load_states(name, sorted(partitions))

    async def _load_states(self, name: str, partitions: list[int]) -> None:
        for i in range(0, len(partitions), READ_BATCH):
            chunk = partitions[i:i + READ_BATCH]
            paths = [zn.partition_state_path(name, p) for p in chunk]
            got = await self.store.get_many(paths, watch=lambda path: self._state_watch(name, _partition_of(path)))
            meta = self.topics.get(name)
            if meta is None:
                return
            states = {p: self._parse_state(name, p, item) for p, item in zip(chunk, got, strict=True)}
            first_seen = [p for p, st in states.items() if st is not None and p not in meta.states]
            for prepare in self.prepare_listeners:
                await prepare(name, first_seen, meta)
            for p, state in states.items():
                if not isinstance(state, bool):
                    self._apply_state(name, p, meta, state)
            self._notify()
            await asyncio.sleep(0)

    @staticmethod
    def _parse_state(name: str, p: int, item: tuple[bytes, Stat] | None) -> zn.PartitionState | None | bool:
        """The state; None when there is no znode; False when it is malformed (the cache keeps what it had)."""
        if item is None:
            return None
        try:
            return zn.PartitionState.from_json(json.loads(item[0]), item[1].version)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("Ignoring malformed partition state %s: %s", zn.partition_state_path(name, p), exc)
            return False

    def _apply_state(self, name: str, partition: int, meta: TopicMeta, state: zn.PartitionState | None) -> None:
        if state is None:
            meta.states.pop(partition, None)
            return
        old = meta.states.get(partition)
        meta.states[partition] = state
        # a new znode version alone counts too: a leader's conditional ISR write needs the current one
        if old is None or ((old.leader, old.leader_epoch, old.isr, old.zk_version)
                           != (state.leader, state.leader_epoch, state.isr, state.zk_version)):
            for fn in self.partition_listeners:
                fn(name, partition, meta)

    # ---- queries ---------------------------------------------------------------------------------
    def leader_of(self, topic: str, partition: int) -> int:
        meta = self.topics.get(topic)
        if meta is None:
            return -1
        st = meta.states.get(partition)
        return st.leader if st is not None else -1

    def topic_ready(self, name: str) -> bool:
        meta = self.topics.get(name)
        return (meta is not None and len(meta.states) >= len(meta.assignment)
                and all(p in meta.states for p in meta.assignment))
