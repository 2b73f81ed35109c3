"""The controller: elected through the `/controller` ephemeral znode, it turns topic znodes into partition
state (initial leaders), carries out topic deletion, re-elects leaders when brokers come and go, runs
preferred and unclean leader elections (ElectLeaders, `/admin/preferred_replica_election`, the periodic
auto leader rebalance) and partition reassignments (AlterPartitionReassignments,
`/admin/reassign_partitions`; KIP-455 in ZooKeeper mode).

Every decision is a conditional write to the store (fenced by znode versions); every leader change bumps
the leader epoch. A replica counts as live when its broker is registered and does not list it among its
`offline_replicas` (replicas in a failed log dir); a broker whose log dir failed writes a
`/log_dir_event_notification/log_dir_event_<seq>` znode, on which the controller re-reads its registration,
elects other leaders for the partitions it led there and removes it from their ISRs (Kafka's
LogDirEventNotification handling). Requests that arrive on other brokers are forwarded here by the request handlers.

Reassignment of a partition from its original replicas O to target replicas T:
1. the topic znode gets replicas = T ++ O (distinct), adding_replicas = T - O, removing_replicas = O - T,
   then the partition state gets a new leader epoch, so every replica (re)reads its assignment;
2. the new replicas create their logs, fetch from the leader and join the ISR once caught up (the leader
   writes that ISR change); the controller watches the partition state;
3. once every replica of T is in the ISR: the partition state gets a leader from T (the current one if it
   is in T) and the ISR restricted to T, with a new epoch; then the topic znode gets replicas = T and no
   adding/removing; replicas no longer assigned stop and delete their logs.
Cancelling reverts to O the same way (step 3 with O instead of T).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from odradek.aio import TaskSet
from odradek.cluster import znodes as zn
from odradek.cluster.elections import (
    PREFERRED,
    Election,
    PartitionView,
    ReplicaAssignment,
    TopicPartition,
    offline_election,
    parse_election_json,
    parse_reassignment_json,
    preferred_election,
    rebalance_candidates,
    tp_str,
    unclean_election,
    validate_target,
)
from odradek.cluster.metadata import MetadataCache
from odradek.cluster.store import (
    BadVersionError,
    Create,
    Delete,
    MetadataStore,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    Op,
    SetData,
    Stat,
    StoreError,
    StoreUnavailableError,
    Watcher,
    WatchEvent,
    batches,
    to_json,
)
from odradek.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from odradek.config import BrokerConfig

log = logging.getLogger("odradek.controller")

CAS_RETRIES = 5
READ_BATCH = 1000  # partition states read per pipelined request batch
UNKNOWN_PARTITION = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")

ReassignResult = tuple[ErrorCode, str | None]
T = TypeVar("T")


class NotControllerError(Exception):
    """This broker is not (or no longer) the controller."""


def _abridged(assignment: dict[int, list[int]], shown: int = 8) -> str:
    items = [f"{p}:{r}" for p, r in sorted(assignment.items())[:shown]]
    more = len(assignment) - shown
    return "{" + ", ".join(items) + (f", ... {more} more" if more > 0 else "") + "}"


def assignment_of(topic: zn.TopicAssignment, p: int) -> ReplicaAssignment:
    return ReplicaAssignment(list(topic.partitions[p]), list(topic.adding.get(p, [])), list(topic.removing.get(p, [])))


def set_assignment(topic: zn.TopicAssignment, p: int, a: ReplicaAssignment) -> None:
    topic.partitions[p] = list(a.replicas)
    for field, value in ((topic.adding, a.adding), (topic.removing, a.removing)):
        if value:
            field[p] = list(value)
        else:
            field.pop(p, None)


async def read_reassignments(store: MetadataStore, names: list[str]) -> dict[TopicPartition, ReplicaAssignment]:
    """The ongoing reassignments of these topics, from their znodes (any broker may ask)."""
    out: dict[TopicPartition, ReplicaAssignment] = {}
    for name in names:
        try:
            data, _ = await store.get_json(zn.topic_path(name))
            topic = zn.TopicAssignment.from_json(data)
        except NoNodeError:
            continue
        except StoreUnavailableError:
            raise
        except (StoreError, KeyError, TypeError, ValueError, AttributeError):
            continue
        for p in sorted(topic.partitions):
            a = assignment_of(topic, p)
            if a.reassigning:
                out[(name, p)] = a
    return out


class Controller:
    def __init__(
        self,
        broker_id: int,
        store: MetadataStore,
        metadata: MetadataCache,
        delete_topic_enable: bool = True,
        unclean_leader_election: bool = False,
        config: BrokerConfig | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.store = store
        self.metadata = metadata
        self.delete_topic_enable = delete_topic_enable
        self.unclean_leader_election = unclean_leader_election
        self.auto_leader_rebalance = bool(config.get("auto.leader.rebalance.enable")) if config else False
        self.imbalance_check_interval_s = float(config.get("leader.imbalance.check.interval.seconds")) if config else 300.0
        self.imbalance_percentage = int(config.get("leader.imbalance.per.broker.percentage")) if config else 10
        self.active = False
        self.epoch = 0
        self._lock = asyncio.Lock()
        self._tasks = TaskSet(log, "Controller step")
        self._live: set[int] = set()
        self._offline_replicas: dict[int, set[TopicPartition]] = {}  # live broker -> its replicas in failed dirs
        self._watched: set[str] = set()  # paths with one of our one-shot watches pending
        self._synced: set[str] = set()  # topics whose states this term has written (their watch is set)
        self._rebalance_task: asyncio.Task | None = None

    @property
    def prefix(self) -> str:
        return f"[Controller id={self.broker_id}]"

    async def start(self) -> None:
        self._watched.clear()  # after a new session no watch of ours is left
        if self.auto_leader_rebalance and self._rebalance_task is None:
            self._rebalance_task = self._tasks.spawn(self._rebalance_loop())
        await self._elect()

    def close(self) -> None:
        self._tasks.close()

    def _spawn(self, step: Coroutine[Any, Any, None]) -> None:
        """Run a controller step in the background; steps run one at a time."""
        if self._tasks.closed:
            step.close()
            return
        self._tasks.spawn(self._locked(step))

    async def _locked(self, step: Coroutine[Any, Any, None]) -> None:
        async with self._lock:
            await step

    def _on(self, fn: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> Callable[[WatchEvent], None]:
        return lambda _ev: self._spawn(fn(*args))

    async def _watch_exists(self, path: str, fn: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> Stat | None:
        """exists(path) with a one-shot watch running fn(*args), unless one is already pending."""
        if path in self._watched:
            return await self.store.exists(path)
        self._watched.add(path)

        def fire(_ev: WatchEvent) -> None:
            self._watched.discard(path)
            self._spawn(fn(*args))

        try:
            return await self.store.exists(path, watch=fire)
        except BaseException:
            self._watched.discard(path)
            raise

    # ---- election ------------------------------------------------------------------------------
    async def _elect(self) -> None:
        if self._tasks.closed:
            return
        payload = to_json({"version": 1, "brokerid": self.broker_id, "timestamp": str(zn.now_ms())})
        try:
            await self.store.create(zn.CONTROLLER, payload, ephemeral=True)
        except NodeExistsError:
            await self.store.exists(zn.CONTROLLER, watch=self._on_controller_change)
            return
        self.epoch = await self._bump_epoch()
        self._synced.clear()
        self.active = True
        log.info("%s %d successfully elected as the controller. Epoch incremented to %d",
                 self.prefix, self.broker_id, self.epoch)
        await self.store.exists(zn.CONTROLLER, watch=self._on_controller_change)
        await self._on_brokers_change()
        await self._on_log_dir_event()
        await self._sync_topics()
        await self._process_deletions()
        await self._resume_reassignments()
        await self._on_reassign_znode()
        await self._on_preferred_znode()

    def _on_controller_change(self, ev: WatchEvent) -> None:
        if ev.type == "DELETED":
            if self.active:
                log.info("%s Resigning", self.prefix)
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

    # ---- reading and writing znodes ----------------------------------------------------------------
    async def _read_topic(self, name: str, watch: Watcher | None = None) -> tuple[zn.TopicAssignment, int] | None:
        try:
            data, stat = await self.store.get_json(zn.topic_path(name), watch=watch)
            return zn.TopicAssignment.from_json(data), stat.version
        except NoNodeError:
            return None
        except StoreUnavailableError:
            raise
        except (StoreError, KeyError, TypeError, ValueError, AttributeError) as exc:
            log.warning("%s Skipping malformed topic znode %s: %s", self.prefix, name, exc)
            return None

    async def _read_state(self, name: str, p: int) -> zn.PartitionState | None:
        """The partition state, with zk_version set to the znode version it was read at."""
        try:
            data, stat = await self.store.get_json(zn.partition_state_path(name, p))
            return zn.PartitionState.from_json(data, stat.version)
        except NoNodeError:
            return None
        except StoreUnavailableError:
            raise
        except (StoreError, KeyError, TypeError, ValueError, AttributeError) as exc:
            log.warning("%s Skipping malformed state of %s-%d: %s", self.prefix, name, p, exc)
            return None

    async def _write_state(self, name: str, p: int, new: zn.PartitionState, version: int) -> bool:
        """Conditional write; False if the state changed since it was read at `version`."""
        try:
            await self.store.set(zn.partition_state_path(name, p), to_json(new.to_json()), version=version)
            return True
        except BadVersionError:
            return False

    def _log_leader(self, name: str, p: int, new: zn.PartitionState) -> None:
        log.info("%s Partition %s-%d: leader changed to %d (epoch %d), isr %s",
                 self.prefix, name, p, new.leader, new.leader_epoch, new.isr)

    def _log_unclean(self, name: str, p: int, isr: list[int], leader: int) -> None:
        log.warning("%s Unclean leader election for partition %s-%d: no broker in ISR %s is alive. Elect leader "
                    "%d from live brokers %s. There's potential data loss.",
                    self.prefix, name, p, isr, leader, sorted(self._live))

    def set_unclean_leader_election(self, enabled: bool) -> None:
        """A new broker default of unclean.leader.election.enable (dynamic config). Turned on, the
        active controller at once elects leaders for partitions left without one, as Kafka's does."""
        was, self.unclean_leader_election = self.unclean_leader_election, enabled
        if enabled and not was and self.active:
            self._spawn(self._elect_offline_leaders())

    def _unclean_allowed(self, name: str) -> bool:
        meta = self.metadata.topics.get(name)
        value = meta.config.get("unclean.leader.election.enable") if meta is not None else None
        return self.unclean_leader_election if value is None else value.strip().lower() == "true"

    async def _all_topics(self) -> list[str]:
        names = await self.store.get_children(zn.BROKER_TOPICS)
        deleting = set(await self.store.get_children(zn.DELETE_TOPICS))
        return [n for n in names if n not in deleting]

    # ---- topics --------------------------------------------------------------------------------
    async def _sync_topics(self) -> None:
        if not self.active:
            return
        names = await self.store.get_children(zn.BROKER_TOPICS, watch=self._on(self._sync_topics))
        self._synced &= set(names)
        for name in names:
            if name not in self._synced:  # known topics change through their own watch
                await self._ensure_states(name)

    async def _ensure_states(self, name: str) -> None:
        """Give every partition of the topic without a state znode its initial state: leader the first
        live replica, ISR the live replicas. Written in batches of one transaction each."""
        if not self.active:
            return
        read = await self._read_topic(name, watch=self._on(self._ensure_states, name))
        if read is None:
            return
        self._synced.add(name)
        topic = read[0]
        states = await self._read_states(name, sorted(topic.partitions))
        missing = [p for p in sorted(topic.partitions) if states.get(p) is None]
        if not missing:
            return
        ops: list[Op] = []
        parents = set(await self._children(zn.partitions_path(name)))
        if not parents and await self.store.exists(zn.partitions_path(name)) is None:
            ops.append(Create(zn.partitions_path(name)))
        for p in missing:
            replicas = topic.partitions[p]
            online = self._live_for(name, p)
            live = [b for b in replicas if b in online]
            state = zn.PartitionState(live[0] if live else -1, 0, live or list(replicas[:1]), self.epoch)
            if str(p) not in parents:
                ops.append(Create(f"{zn.partitions_path(name)}/{p}"))
            ops.append(Create(zn.partition_state_path(name, p), to_json(state.to_json())))
        for chunk in batches(ops):
            try:
                await self.store.multi(chunk)
            except NodeExistsError:  # another writer got to some: create the rest one by one
                for op in chunk:
                    with contextlib.suppress(NodeExistsError):
                        await self.store.multi([op])
            await asyncio.sleep(0)  # big topics: let the broker serve between batches
        leaders = {p: topic.partitions[p] for p in missing}
        log.info("%s Topic %s: initial states of %d partitions written (leaders: first live replica of %s)",
                 self.prefix, name, len(missing), _abridged(leaders))

    async def _children(self, path: str) -> list[str]:
        try:
            return await self.store.get_children(path)
        except NoNodeError:
            return []

    async def _read_states(self, name: str, partitions: list[int]) -> dict[int, zn.PartitionState | None]:
        """The states of these partitions (None where missing or malformed), read in pipelined batches."""
        out: dict[int, zn.PartitionState | None] = {}
        for i in range(0, len(partitions), READ_BATCH):
            chunk = partitions[i:i + READ_BATCH]
            got = await self.store.get_many([zn.partition_state_path(name, p) for p in chunk])
            for p, item in zip(chunk, got, strict=True):
                out[p] = self._parse_state(name, p, item)
            await asyncio.sleep(0)
        return out

    def _parse_state(self, name: str, p: int, item: tuple[bytes, Stat] | None) -> zn.PartitionState | None:
        if item is None:
            return None
        try:
            return zn.PartitionState.from_json(json.loads(item[0]), item[1].version)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("%s Skipping malformed state of %s-%d: %s", self.prefix, name, p, exc)
            return None

    async def _process_deletions(self) -> None:
        if not self.active:
            return
        names = await self.store.get_children(zn.DELETE_TOPICS, watch=self._on(self._process_deletions))
        for name in names:
            if self.delete_topic_enable:
                log.info("%s Deleting topic %s", self.prefix, name)
                await self._delete_topic_znodes(name)
                await self._delete_quietly(zn.topic_config_path(name), recursive=True)
            await self._delete_quietly(f"{zn.DELETE_TOPICS}/{name}")

    async def _delete_topic_znodes(self, name: str) -> None:
        """The topic's znode tree, Kafka's layout (partitions/<p>/state) deleted in batched transactions,
        leaves first; anything else found there falls back to a recursive delete."""
        parts = zn.partitions_path(name)
        ops: list[Op] = []
        for p in sorted(await self._children(parts), key=lambda c: (len(c), c)):
            ops += [Delete(f"{parts}/{p}/state"), Delete(f"{parts}/{p}")]
        ops += [Delete(parts), Delete(zn.topic_path(name))]
        try:
            for chunk in batches(ops):
                await self.store.multi(chunk)
                await asyncio.sleep(0)
        except (NoNodeError, NotEmptyError):
            await self._delete_quietly(zn.topic_path(name), recursive=True)

    # ---- brokers -------------------------------------------------------------------------------
    async def _on_brokers_change(self) -> None:
        if not self.active:
            return
        ids = await self.store.get_children(zn.BROKER_IDS, watch=self._on(self._on_brokers_change))
        live = {int(i) for i in ids if i.isdigit()}
        dead, born = self._live - live, live - self._live
        self._live = live
        if dead:
            log.info("%s Broker failure callback for %s", self.prefix, sorted(dead))
        if born:
            log.info("%s Newly added brokers: %s", self.prefix, sorted(born))
        await self._read_offline_replicas(sorted(live), replace=True)
        await self._elect_offline_leaders()

    # ---- log dir failures ----------------------------------------------------------------------
    def _live_for(self, name: str, p: int) -> set[int]:
        """The brokers whose replica of the partition is online: live, and its log dir has not failed."""
        if not any(self._offline_replicas.values()):
            return self._live
        return {b for b in self._live if (name, p) not in self._offline_replicas.get(b, ())}

    async def _read_offline_replicas(self, broker_ids: list[int], replace: bool = False) -> None:
        """The offline replicas these brokers list in their registrations (`replace`: of all live brokers)."""
        got = await self.store.get_many([zn.broker_path(b) for b in broker_ids])
        offline: dict[int, set[TopicPartition]] = {} if replace else dict(self._offline_replicas)
        for b, item in zip(broker_ids, got, strict=True):
            offline.pop(b, None)
            if item is None:
                continue
            try:
                replicas = set(zn.BrokerInfo.from_json(b, json.loads(item[0])).offline_replicas)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                log.warning("%s Ignoring malformed registration of broker %d: %s", self.prefix, b, exc)
                continue
            if replicas:
                offline[b] = replicas
        for b, replicas in offline.items():
            if replicas != self._offline_replicas.get(b):
                log.info("%s Broker %d has offline replicas (failed log dirs): %s", self.prefix, b,
                         ",".join(tp_str(tp) for tp in sorted(replicas)))
        self._offline_replicas = offline

    async def _on_log_dir_event(self) -> None:
        """Kafka's LogDirEventNotification: brokers whose log dir failed. Their offline replicas come from
        their registrations; partitions they led get other leaders, their ISRs lose them. The
        notifications are deleted once handled."""
        if not self.active:
            return
        children = await self.store.get_children(zn.LOG_DIR_EVENT_NOTIFICATION, watch=self._on(self._on_log_dir_event))
        events = sorted(c for c in children if c.startswith(zn.LOG_DIR_EVENT_PREFIX))
        if not events:
            return
        paths = [f"{zn.LOG_DIR_EVENT_NOTIFICATION}/{c}" for c in events]
        brokers: set[int] = set()
        for path, item in zip(paths, await self.store.get_many(paths), strict=True):
            try:
                if item is not None:
                    brokers.add(int(json.loads(item[0])["broker"]))
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("%s Ignoring malformed log dir event %s: %s", self.prefix, path, exc)
        ids = sorted(brokers & self._live)
        if ids:
            log.info("%s Handling log directory failure for brokers %s", self.prefix, ",".join(map(str, ids)))
            await self._read_offline_replicas(ids)
            await self._elect_offline_leaders()
        for path in paths:
            await self._delete_quietly(path)

    async def _elect_offline_leaders(self) -> None:
        """Partitions whose leader is not live get a new leader from the live ISR (or go offline); dead
        replicas leave the ISR. States are read in batches, the changes written in batches."""
        for name in await self.store.get_children(zn.BROKER_TOPICS):
            read = await self._read_topic(name)
            if read is None:
                continue
            try:
                states = await self._read_states(name, sorted(read[0].partitions))
            except StoreError:
                continue
            changes = [(p, c) for p, replicas in sorted(read[0].partitions.items())
                       if (c := self._offline_change(name, p, replicas, states.get(p))) is not None]
            await self._write_states(name, changes)

    def _offline_change(self, name: str, p: int, replicas: list[int], state: zn.PartitionState | None
                        ) -> tuple[zn.PartitionState, zn.PartitionState] | None:
        """(old, new) state if the partition's leader or ISR must change for the live brokers."""
        if state is None:
            return None
        live = self._live_for(name, p)
        live_isr = [b for b in state.isr if b in live]
        if state.leader in live:
            if live_isr == state.isr:
                return None
            return state, zn.PartitionState(state.leader, state.leader_epoch, live_isr, self.epoch)
        choice = offline_election(replicas, live_isr, live, self._unclean_allowed(name))
        if choice.unclean:
            self._log_unclean(name, p, state.isr, choice.leader)
        new_leader = choice.leader
        if new_leader == state.leader:
            return None
        if choice.unclean:
            new_isr = [new_leader]
        else:
            new_isr = live_isr if live_isr else ([new_leader] if new_leader >= 0 else state.isr)
        return state, zn.PartitionState(new_leader, state.leader_epoch + 1, new_isr, self.epoch)

    async def _write_states(self, name: str,
                            changes: list[tuple[int, tuple[zn.PartitionState, zn.PartitionState]]]) -> None:
        """Conditional writes of new states, a transaction per batch; when a batch fails because some
        state changed since it was read, its writes go one by one (those that fail retry later)."""
        ops: list[Op] = [SetData(zn.partition_state_path(name, p), to_json(new.to_json()), old.zk_version)
                         for p, (old, new) in changes]
        by_path = {op.path: (p, old, new) for op, (p, (old, new)) in zip(ops, changes, strict=True)}
        for chunk in batches(ops):
            try:
                await self.store.multi(chunk)
                written = chunk
            except (BadVersionError, NoNodeError):
                written = []
                for op in chunk:
                    with contextlib.suppress(BadVersionError, NoNodeError):
                        await self.store.multi([op])
                        written.append(op)
            for op in chunk:
                p, old, new = by_path[op.path]
                if op not in written:
                    log.info("%s Partition %s-%d state changed meanwhile; retrying later", self.prefix, name, p)
                elif new.leader != old.leader:
                    self._log_leader(name, p, new)
                else:
                    log.info("%s Partition %s-%d: removed offline replicas from isr, now %s", self.prefix, name,
                             p, new.isr)
            await asyncio.sleep(0)

    # ---- preferred and unclean leader election ---------------------------------------------------
    async def elect_leaders(self, election_type: int, partitions: list[TopicPartition] | None,
                            trigger: str = "AdminClientTriggered") -> dict[TopicPartition, Election]:
        """ElectLeaders: one result per partition (all partitions when `partitions` is None)."""
        async with self._lock:
            if not self.active:
                raise NotControllerError(f"broker {self.broker_id} is not the controller")
            return await self._elect_leaders(election_type, partitions, trigger)

    async def _elect_leaders(self, election_type: int, partitions: list[TopicPartition] | None,
                             trigger: str) -> dict[TopicPartition, Election]:
        topics: dict[str, zn.TopicAssignment | None] = {}
        if partitions is None:
            partitions = []
            for name in await self._all_topics():
                read = await self._read_topic(name)
                topics[name] = read[0] if read else None
                if read:
                    partitions += [(name, p) for p in sorted(read[0].partitions)]
        kind = "PREFERRED" if election_type == PREFERRED else "UNCLEAN"
        if partitions:
            log.info("%s Starting replica leader election (%s) for partitions %s triggered by %s",
                     self.prefix, kind, ",".join(tp_str(tp) for tp in partitions), trigger)
        results: dict[TopicPartition, Election] = {}
        for tp in partitions:
            if tp[0] not in topics:
                read = await self._read_topic(tp[0])
                topics[tp[0]] = read[0] if read else None
            topic = topics[tp[0]]
            if topic is None or tp[1] not in topic.partitions:
                results[tp] = Election(error=UNKNOWN_PARTITION[0], message=UNKNOWN_PARTITION[1])
            else:
                results[tp] = await self._elect_one(tp, topic.partitions[tp[1]], election_type)
        return results

    async def _elect_one(self, tp: TopicPartition, replicas: list[int], election_type: int) -> Election:
        name, p = tp
        for _ in range(CAS_RETRIES):
            state = await self._read_state(name, p)
            if state is None:
                return Election(error=ErrorCode.LEADER_NOT_AVAILABLE, message=f"{tp_str(tp)} has no state yet")
            live = self._live_for(name, p)
            if election_type == PREFERRED:
                choice = preferred_election(tp, replicas, state.leader, state.isr, live)
            else:
                choice = unclean_election(tp, replicas, state.leader, state.isr, live)
            if not choice.elected:
                return choice
            if choice.unclean:
                self._log_unclean(name, p, state.isr, choice.leader)
                isr = [choice.leader]
            else:
                isr = [b for b in state.isr if b in live]
            new = zn.PartitionState(choice.leader, state.leader_epoch + 1, isr, self.epoch)
            if await self._write_state(name, p, new, state.zk_version):
                self._log_leader(name, p, new)
                return choice
        return Election(error=ErrorCode.REQUEST_TIMED_OUT, message=f"the state of {tp_str(tp)} kept changing")

    async def _read_request_znode(self, path: str, on_change: Callable[[], Coroutine[Any, Any, None]],
                                  parse: Callable[[Any], T]) -> T | None:
        """The parsed content of a request znode that tools write (`on_change` runs when it changes); None
        when there is none, or when it is malformed (then it is deleted)."""
        if not self.active or await self._watch_exists(path, on_change) is None:
            return None
        try:
            data, _ = await self.store.get_json(path)
            return parse(data)
        except NoNodeError:
            return None
        except (StoreError, ValueError) as exc:
            log.warning("%s Ignoring malformed %s: %s", self.prefix, path, exc)
            await self._delete_quietly(path)
            return None

    async def _on_preferred_znode(self) -> None:
        """A tool wrote /admin/preferred_replica_election: elect, then delete the znode."""
        path = zn.PREFERRED_REPLICA_ELECTION
        partitions = await self._read_request_znode(
            path, self._on_preferred_znode, lambda data: parse_election_json(data, "Preferred replica election data"))
        if partitions is None:
            return
        results = await self._elect_leaders(PREFERRED, partitions, "ZkTriggered")
        for tp, r in sorted(results.items()):
            if r.error not in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED):
                log.warning("%s Preferred replica election for %s failed: %s", self.prefix, tp_str(tp), r.message)
        await self._delete_quietly(path)

    # ---- auto leader rebalance ---------------------------------------------------------------------
    async def _rebalance_loop(self) -> None:
        while not self._tasks.closed:
            await asyncio.sleep(self.imbalance_check_interval_s)
            if self.active:
                self._spawn(self._auto_rebalance())

    async def _partition_views(self) -> dict[TopicPartition, PartitionView]:
        views: dict[TopicPartition, PartitionView] = {}
        for name in await self._all_topics():
            read = await self._read_topic(name)
            if read is None:
                continue
            topic = read[0]
            states = await self._read_states(name, sorted(topic.partitions))
            for p in sorted(topic.partitions):
                state = states.get(p)
                if state is not None:
                    views[(name, p)] = PartitionView(topic.partitions[p], state.leader, state.isr,
                                                     assignment_of(topic, p).reassigning)
        return views

    async def _auto_rebalance(self) -> None:
        if not self.active:
            return
        views = await self._partition_views()
        candidates = rebalance_candidates(views, self._live, self.imbalance_percentage)
        if candidates:
            log.info("%s Processing automatic preferred replica leader election", self.prefix)
            await self._elect_leaders(PREFERRED, candidates, "AutoTriggered")

    # ---- partition reassignment --------------------------------------------------------------------
    async def alter_reassignments(self, requests: dict[TopicPartition, list[int] | None],
                                  allow_rf_change: bool = True) -> dict[TopicPartition, ReassignResult]:
        """AlterPartitionReassignments: start (target replicas) or cancel (None) per partition."""
        async with self._lock:
            if not self.active:
                raise NotControllerError(f"broker {self.broker_id} is not the controller")
            results = {tp: await self._reassign(tp, target, allow_rf_change) for tp, target in requests.items()}
            await self._drop_from_reassign_znode([tp for tp, (code, _) in results.items() if code == ErrorCode.NONE])
            return results

    async def _reassign(self, tp: TopicPartition, target: list[int] | None, allow_rf_change: bool) -> ReassignResult:
        name, p = tp
        for _ in range(CAS_RETRIES):
            read = await self._read_topic(name)
            if read is None or p not in read[0].partitions:
                return UNKNOWN_PARTITION
            topic, version = read
            current = assignment_of(topic, p)
            error = validate_target(target, current, self._live, allow_rf_change)
            if error is not None:
                return error
            new = current.cancelled() if target is None else current.reassign_to(target)
            if new == current:
                return ErrorCode.NONE, None
            leaving = [r for r in current.replicas if r not in new.replicas]
            if leaving and not await self._restrict_state(name, p, new.replicas):
                return (ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                        f"No live in-sync replica of {new.replicas} can lead {tp_str(tp)}")
            set_assignment(topic, p, new)
            if not await self._write_topic(name, topic, version):
                continue
            self._log_reassignment(tp, current, new, cancelled=target is None)
            if not leaving:
                await self._bump_leader_epoch(name, p)
            await self._check_reassignment(name, p)
            return ErrorCode.NONE, None
        return ErrorCode.REQUEST_TIMED_OUT, f"the assignment of {tp_str(tp)} kept changing"

    def _log_reassignment(self, tp: TopicPartition, old: ReplicaAssignment, new: ReplicaAssignment,
                          cancelled: bool) -> None:
        if cancelled:
            log.info("%s Cancelled reassignment of partition %s: replicas reverted to %s (removing %s)",
                     self.prefix, tp_str(tp), new.replicas, [r for r in old.replicas if r not in new.replicas])
        else:
            log.info("%s Partition %s: reassigning from %s to %s (replicas %s, adding %s, removing %s)",
                     self.prefix, tp_str(tp), old.origin, new.target, new.replicas, new.adding, new.removing)

    async def _write_topic(self, name: str, topic: zn.TopicAssignment, version: int) -> bool:
        try:
            await self.store.set(zn.topic_path(name), to_json(topic.to_json()), version=version)
            return True
        except (BadVersionError, NoNodeError):
            return False

    async def _bump_leader_epoch(self, name: str, p: int) -> None:
        """A new leader epoch (same leader and ISR), so every replica takes up the new assignment."""
        for _ in range(CAS_RETRIES):
            state = await self._read_state(name, p)
            if state is None:
                return
            new = zn.PartitionState(state.leader, state.leader_epoch + 1, state.isr, self.epoch)
            if await self._write_state(name, p, new, state.zk_version):
                log.info("%s Partition %s-%d: leader epoch bumped to %d for the new replica assignment",
                         self.prefix, name, p, new.leader_epoch)
                return

    async def _restrict_state(self, name: str, p: int, replicas: list[int]) -> bool:
        """Leader and ISR inside `replicas` (moving leadership if needed), with a new leader epoch.
        False when no live in-sync replica of `replicas` could lead."""
        for _ in range(CAS_RETRIES):
            state = await self._read_state(name, p)
            if state is None:
                return False
            leader = state.leader
            live = self._live_for(name, p)
            if leader not in replicas or leader not in live:
                choice = offline_election(replicas, state.isr, live, allow_unclean=False)
                if not choice.elected and state.leader >= 0:
                    return False
                leader = choice.leader
            isr = [r for r in state.isr if r in replicas] or ([leader] if leader >= 0 else list(replicas[:1]))
            new = zn.PartitionState(leader, state.leader_epoch + 1, isr, self.epoch)
            if await self._write_state(name, p, new, state.zk_version):
                if leader != state.leader:
                    self._log_leader(name, p, new)
                else:
                    log.info("%s Partition %s-%d: leader epoch bumped to %d, isr %s", self.prefix, name, p,
                             new.leader_epoch, new.isr)
                return True
        return False

    async def _check_reassignment(self, name: str, p: int) -> None:
        """Complete the partition's reassignment once every target replica is in the ISR; until then
        watch its state (the leader writes ISR changes there)."""
        if not self.active:
            return
        await self._watch_exists(zn.partition_state_path(name, p), self._check_reassignment, name, p)
        read = await self._read_topic(name)
        if read is None or p not in read[0].partitions:
            return
        current = assignment_of(read[0], p)
        if not current.reassigning:
            return
        state = await self._read_state(name, p)
        target = current.target
        if state is None or not all(r in state.isr for r in target):
            return
        if not await self._restrict_state(name, p, target):
            return
        await self._finish_reassignment(name, p, target)

    async def _finish_reassignment(self, name: str, p: int, target: list[int]) -> None:
        for _ in range(CAS_RETRIES):
            read = await self._read_topic(name)
            if read is None or p not in read[0].partitions:
                return
            topic, version = read
            removed = [r for r in topic.partitions[p] if r not in target]
            set_assignment(topic, p, ReplicaAssignment(target))
            if await self._write_topic(name, topic, version):
                log.info("%s Partition %s-%d: reassignment completed, replicas %s (removed %s)",
                         self.prefix, name, p, target, removed)
                await self._drop_from_reassign_znode([(name, p)])
                return

    async def _resume_reassignments(self) -> None:
        """A new controller carries on with the reassignments recorded in the topic znodes."""
        for name in await self._all_topics():
            read = await self._read_topic(name)
            if read is None:
                continue
            for p in sorted(read[0].partitions):
                if assignment_of(read[0], p).reassigning:
                    await self._check_reassignment(name, p)

    async def _on_reassign_znode(self) -> None:
        """A tool wrote /admin/reassign_partitions: start what is not running yet. Partitions leave the
        znode as their reassignments complete; the znode goes when it is empty."""
        entries = await self._read_request_znode(zn.REASSIGN_PARTITIONS, self._on_reassign_znode,
                                                 parse_reassignment_json)
        if entries is None:
            return
        done: list[TopicPartition] = []
        for tp, target in entries:
            if await self._start_from_znode(tp, target):
                done.append(tp)
        await self._drop_from_reassign_znode(done)

    async def _start_from_znode(self, tp: TopicPartition, target: list[int]) -> bool:
        """Returns True when the partition can leave the znode (completed, or refused)."""
        read = await self._read_topic(tp[0])
        if read is None or tp[1] not in read[0].partitions:
            log.warning("%s Skipping reassignment of partition %s since it doesn't exist", self.prefix, tp_str(tp))
            return True
        current = assignment_of(read[0], tp[1])
        if current.target == target:
            return not current.reassigning
        code, message = await self._reassign(tp, target, True)
        if code != ErrorCode.NONE:
            log.warning("%s Reassignment of partition %s to %s refused: %s", self.prefix, tp_str(tp), target, message)
            return True
        return False

    async def _drop_from_reassign_znode(self, partitions: list[TopicPartition]) -> None:
        if not partitions:
            return
        path = zn.REASSIGN_PARTITIONS
        for _ in range(CAS_RETRIES):
            try:
                data, stat = await self.store.get_json(path)
                entries = parse_reassignment_json(data)
            except NoNodeError:
                return
            except (StoreError, ValueError):
                await self._delete_quietly(path)
                return
            left = [(tp, r) for tp, r in entries if tp not in partitions]
            if len(left) == len(entries):
                return
            try:
                if left:
                    body = {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r}
                                                         for (t, p), r in left]}
                    await self.store.set(path, to_json(body), version=stat.version)
                else:
                    await self.store.delete(path, version=stat.version)
                return
            except BadVersionError:
                continue
            except NoNodeError:
                return

    async def _delete_quietly(self, path: str, recursive: bool = False) -> None:
        try:
            await self.store.delete(path, recursive=recursive)
        except NoNodeError:
            pass
