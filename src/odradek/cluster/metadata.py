"""The broker's cache of cluster metadata, kept current from store watches: live brokers, controller,
topics with their ids, replica assignments, partition states and config overrides."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from odradek.aio import TaskSet
from odradek.cluster import znodes as zn
from odradek.cluster.store import MetadataStore, NoNodeError, StoreError, WatchEvent

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
        self._changed = asyncio.Event()
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

    # ---- loading -------------------------------------------------------------------------------
    async def start(self) -> None:
        await self._load_brokers()
        await self._load_controller()
        await self._load_topics()

    def close(self) -> None:
        self._tasks.close()

    def _watch(self, fn: Callable[..., Coroutine[Any, Any, None]], *args: object) -> Callable[[WatchEvent], None]:
        def reload(_ev: WatchEvent) -> None:
            self._tasks.spawn(fn(*args))

        return reload

    async def _load_brokers(self) -> None:
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
        self.brokers = brokers
        self._notify()

    async def _load_controller(self) -> None:
        stat = await self.store.exists(zn.CONTROLLER, watch=self._watch(self._load_controller))
        cid = -1
        if stat is not None:
            try:
                data, _ = await self.store.get_json(zn.CONTROLLER)
                cid = int(data["brokerid"])
            except (NoNodeError, StoreError, KeyError, TypeError, ValueError) as exc:
                log.warning("Ignoring malformed %s: %s", zn.CONTROLLER, exc)
        self.controller_id = cid
        self._notify()

    async def _load_topics(self) -> None:
        names = await self.store.get_children(zn.BROKER_TOPICS, watch=self._watch(self._load_topics))
        for name in names:
            if name not in self.topics:
                await self._load_topic(name)
        for name in [n for n in self.topics if n not in names]:
            meta = self.topics.pop(name)
            self.by_id.pop(meta.topic_id, None)
            for fn in self.topic_removed_listeners:
                fn(name, meta)
        self._notify()

    async def _load_topic(self, name: str) -> None:
        try:
            data, _ = await self.store.get_json(zn.topic_path(name), watch=self._watch(self._reload_topic, name))
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
        for p in assignment.partitions:
            if p not in meta.states:
                await self._load_state(name, p)
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
        if meta is not None and meta.config != config:
            meta.config = config
            for fn in self.config_listeners:
                fn(name, meta)
        self._notify()

    async def _reload_config(self, name: str) -> None:
        if name in self.topics:
            await self._load_config(name)

    async def _load_state(self, name: str, partition: int) -> None:
        path = zn.partition_state_path(name, partition)
        meta = self.topics.get(name)
        if meta is None:
            return
        stat = await self.store.exists(path, watch=self._watch(self._load_state, name, partition))
        if stat is None:
            meta.states.pop(partition, None)
            return
        try:
            data, stat2 = await self.store.get_json(path)
            state = zn.PartitionState.from_json(data, stat2.version)
        except NoNodeError:
            return
        except (StoreError, KeyError, TypeError, ValueError) as exc:
            log.warning("Ignoring malformed partition state %s: %s", path, exc)
            return
        old = meta.states.get(partition)
        meta.states[partition] = state
        if old is None or (old.leader, old.leader_epoch, old.isr) != (state.leader, state.leader_epoch, state.isr):
            for fn in self.partition_listeners:
                fn(name, partition, meta)
        self._notify()

    # ---- queries ---------------------------------------------------------------------------------
    def leader_of(self, topic: str, partition: int) -> int:
        meta = self.topics.get(topic)
        if meta is None:
            return -1
        st = meta.states.get(partition)
        return st.leader if st is not None else -1

    def topic_ready(self, name: str) -> bool:
        meta = self.topics.get(name)
        return meta is not None and all(p in meta.states for p in meta.assignment)
