"""The controller: elected through the `/controller` ephemeral znode, it turns topic znodes into partition
state (initial leaders), carries out topic deletion, and re-elects leaders when brokers come and go.
Every decision is a conditional write to the store, fenced by the controller epoch."""

from __future__ import annotations

import asyncio
import logging

from odradek.cluster import znodes as zn
from odradek.cluster.metadata import MetadataCache
from odradek.cluster.store import (
    BadVersionError,
    MetadataStore,
    NodeExistsError,
    NoNodeError,
    StoreError,
    WatchEvent,
    to_json,
)

log = logging.getLogger("odradek.controller")


class Controller:
    def __init__(
        self,
        broker_id: int,
        store: MetadataStore,
        metadata: MetadataCache,
        delete_topic_enable: bool = True,
        unclean_leader_election: bool = False,
    ) -> None:
        self.broker_id = broker_id
        self.store = store
        self.metadata = metadata
        self.delete_topic_enable = delete_topic_enable
        self.unclean_leader_election = unclean_leader_election
        self.active = False
        self.epoch = 0
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task] = set()
        self._closed = False
        self._live: set[int] = set()

    async def start(self) -> None:
        await self._elect()

    def close(self) -> None:
        self._closed = True
        for t in self._tasks:
            t.cancel()

    def _spawn(self, coro) -> None:  # type: ignore[no-untyped-def]
        if self._closed:
            coro.close()
            return
        task = asyncio.get_running_loop().create_task(self._guarded(coro))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _guarded(self, coro) -> None:  # type: ignore[no-untyped-def]
        try:
            async with self._lock:
                await coro
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a controller step failing must not kill the broker
            log.error("Controller step failed: %s", exc, exc_info=exc)

    def _on(self, fn, *args):  # type: ignore[no-untyped-def]
        return lambda _ev: self._spawn(fn(*args))

    # ---- election ------------------------------------------------------------------------------
    async def _elect(self) -> None:
        if self._closed:
            return
        payload = to_json({"version": 1, "brokerid": self.broker_id, "timestamp": str(zn.now_ms())})
        try:
            await self.store.create(zn.CONTROLLER, payload, ephemeral=True)
        except NodeExistsError:
            await self.store.exists(zn.CONTROLLER, watch=self._on_controller_change)
            return
        self.epoch = await self._bump_epoch()
        self.active = True
        log.info("[Controller id=%d] %d successfully elected as the controller. Epoch incremented to %d",
                 self.broker_id, self.broker_id, self.epoch)
        await self.store.exists(zn.CONTROLLER, watch=self._on_controller_change)
        await self._on_brokers_change()
        await self._sync_topics()
        await self._process_deletions()

    def _on_controller_change(self, ev: WatchEvent) -> None:
        if ev.type == "DELETED":
            if self.active:
                log.info("[Controller id=%d] Resigning", self.broker_id)
            self.active = False
            self._spawn(self._elect())
        else:
            self._spawn(self._rewatch_controller())

    async def _rewatch_controller(self) -> None:
        if await self.store.exists(zn.CONTROLLER, watch=self._on_controller_change) is None:
            self.active = False
            await self._elect()

    async def _bump_epoch(self) -> int:
        while True:
            try:
                data, stat = await self.store.get(zn.CONTROLLER_EPOCH)
            except NoNodeError:
                try:
                    await self.store.create(zn.CONTROLLER_EPOCH, b"1")
                    return 1
                except NodeExistsError:
                    continue
            epoch = int(data or b"0") + 1
            try:
                await self.store.set(zn.CONTROLLER_EPOCH, str(epoch).encode(), version=stat.version)
                return epoch
            except BadVersionError:
                continue

    # ---- topics --------------------------------------------------------------------------------
    async def _sync_topics(self) -> None:
        if not self.active:
            return
        names = await self.store.get_children(zn.BROKER_TOPICS, watch=self._on(self._sync_topics))
        for name in names:
            await self._ensure_states(name)

    async def _ensure_states(self, name: str) -> None:
        if not self.active:
            return
        try:
            data, _ = await self.store.get_json(zn.topic_path(name), watch=self._on(self._ensure_states, name))
            topic = zn.TopicAssignment.from_json(data)
        except NoNodeError:
            return
        except (StoreError, KeyError, TypeError, ValueError) as exc:
            log.warning("[Controller id=%d] Skipping malformed topic znode %s: %s", self.broker_id, name, exc)
            return
        for p, replicas in sorted(topic.partitions.items()):
            path = zn.partition_state_path(name, p)
            if await self.store.exists(path) is not None:
                continue
            live = [b for b in replicas if b in self._live]
            leader = live[0] if live else -1
            state = zn.PartitionState(leader, 0, live or list(replicas[:1]), self.epoch)
            try:
                await self.store.create(path, to_json(state.to_json()), makepath=True)
                log.info("[Controller id=%d] Partition %s-%d: initial leader %d, isr %s",
                         self.broker_id, name, p, leader, state.isr)
            except NodeExistsError:
                pass

    async def _process_deletions(self) -> None:
        if not self.active:
            return
        names = await self.store.get_children(zn.DELETE_TOPICS, watch=self._on(self._process_deletions))
        for name in names:
            if self.delete_topic_enable:
                log.info("[Controller id=%d] Deleting topic %s", self.broker_id, name)
                for path in (zn.topic_path(name), zn.topic_config_path(name)):
                    try:
                        await self.store.delete(path, recursive=True)
                    except NoNodeError:
                        pass
            try:
                await self.store.delete(f"{zn.DELETE_TOPICS}/{name}")
            except NoNodeError:
                pass

    # ---- brokers -------------------------------------------------------------------------------
    async def _on_brokers_change(self) -> None:
        if not self.active:
            return
        ids = await self.store.get_children(zn.BROKER_IDS, watch=self._on(self._on_brokers_change))
        live = {int(i) for i in ids if i.isdigit()}
        dead, born = self._live - live, live - self._live
        self._live = live
        if dead:
            log.info("[Controller id=%d] Broker failure callback for %s", self.broker_id, sorted(dead))
        if born:
            log.info("[Controller id=%d] Newly added brokers: %s", self.broker_id, sorted(born))
        await self._elect_offline_leaders()

    async def _elect_offline_leaders(self) -> None:
        """Partitions whose leader is not live get a new leader from the live ISR (or go offline)."""
        for name in await self.store.get_children(zn.BROKER_TOPICS):
            try:
                data, _ = await self.store.get_json(zn.topic_path(name))
                topic = zn.TopicAssignment.from_json(data)
            except (StoreError, KeyError, TypeError, ValueError):
                continue
            for p, replicas in topic.partitions.items():
                await self._maybe_reelect(name, p, replicas)

    async def _shrink_isr(self, name: str, p: int, state: zn.PartitionState, isr: list[int], version: int) -> None:
        """Dead followers leave the ISR at once, so acks=all producers need not wait out the lag time."""
        new_state = zn.PartitionState(state.leader, state.leader_epoch, isr, self.epoch)
        try:
            await self.store.set(zn.partition_state_path(name, p), to_json(new_state.to_json()), version=version)
            log.info("[Controller id=%d] Partition %s-%d: removed offline replicas from isr, now %s",
                     self.broker_id, name, p, isr)
        except BadVersionError:
            pass

    async def _maybe_reelect(self, name: str, p: int, replicas: list[int]) -> None:
        path = zn.partition_state_path(name, p)
        try:
            data, stat = await self.store.get_json(path)
            state = zn.PartitionState.from_json(data, stat.version)
        except NoNodeError:
            return
        except (StoreError, KeyError, TypeError, ValueError):
            return
        live_isr = [b for b in state.isr if b in self._live]
        if state.leader in self._live:
            if live_isr != state.isr:
                await self._shrink_isr(name, p, state, live_isr, stat.version)
            return
        candidates = [b for b in replicas if b in live_isr]
        if not candidates and self.unclean_leader_election:
            candidates = [b for b in replicas if b in self._live]
            if candidates:
                log.warning("[Controller id=%d] Unclean leader election for %s-%d: %d becomes leader; data may be lost",
                            self.broker_id, name, p, candidates[0])
        new_leader = candidates[0] if candidates else -1
        if new_leader == state.leader:
            return
        new_isr = live_isr if live_isr else ([new_leader] if new_leader >= 0 else state.isr)
        new_state = zn.PartitionState(new_leader, state.leader_epoch + 1, new_isr, self.epoch)
        try:
            await self.store.set(path, to_json(new_state.to_json()), version=stat.version)
            log.info("[Controller id=%d] Partition %s-%d: leader changed to %d (epoch %d), isr %s",
                     self.broker_id, name, p, new_leader, new_state.leader_epoch, new_isr)
        except BadVersionError:
            log.info("[Controller id=%d] Partition %s-%d state changed meanwhile; retrying later", self.broker_id, name, p)
