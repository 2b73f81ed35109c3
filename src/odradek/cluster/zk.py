"""The metadata store on Apache ZooKeeper, through kazoo: Kafka's znodes live there, shared by every
broker of the cluster. Blocking kazoo calls run in worker threads; watch callbacks and session events
are handed to the broker's event loop."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Coroutine, Sequence
from functools import partial
from typing import Any, TypeVar

from kazoo import exceptions as kz
from kazoo.client import KazooClient, KazooState
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType, WatchedEvent
from kazoo.protocol.states import ZnodeStat as KzStat
from kazoo.retry import KazooRetry

from odradek.aio import TaskSet
from odradek.cluster import store as st
from odradek.cluster.store import (
    Create,
    Delete,
    MetadataStore,
    Op,
    OpResult,
    SetData,
    Stat,
    Watcher,
    WatchEvent,
)
from odradek.cluster.zk_security import OPEN, ZkClientSecurity

log = logging.getLogger("odradek.zookeeper")
T = TypeVar("T")
SessionListener = Callable[[], Coroutine[Any, Any, None]]  # run after a new session replaced an expired one

_EVENT_TYPES = {
    EventType.CREATED: "CREATED",
    EventType.DELETED: "DELETED",
    EventType.CHANGED: "CHANGED",
    EventType.CHILD: "CHILD",
}


def split_connect(connect: str) -> tuple[str, str]:
    """`h1:2181,h2:2182/chroot` -> ('h1:2181,h2:2182', '/chroot'); chroot '' when absent."""
    hosts, slash, chroot = connect.partition("/")
    chroot = ("/" + chroot.rstrip("/")) if slash and chroot.strip("/") else ""
    return hosts, chroot


def new_client(hosts: str, timeout_s: float, security: ZkClientSecurity = OPEN, **kwargs: Any) -> KazooClient:
    """A kazoo client authenticating as `security` says (SASL DIGEST-MD5, TLS); not started."""
    return KazooClient(hosts=hosts, timeout=timeout_s, **security.kazoo_options(), **kwargs)


def _stat(s: KzStat) -> Stat:
    return Stat(s.version, s.ephemeralOwner, s.ctime, s.mtime, s.numChildren)


# what a failed transaction reports for the ops it did not get to or undid
_NOT_THE_CAUSE = (kz.RolledBackError, kz.RuntimeInconsistency)
_OP_ERRORS: dict[type[Exception], type[st.StoreError]] = {
    kz.NoNodeError: st.NoNodeError,
    kz.NodeExistsError: st.NodeExistsError,
    kz.BadVersionError: st.BadVersionError,
    kz.NotEmptyError: st.NotEmptyError,
}


def make_path(client: KazooClient, path: str, security: ZkClientSecurity) -> None:
    """Create `path` and its missing ancestors, each with the ACL of its own path (kazoo's makepath would
    give the ancestors the leaf's)."""
    parts = [p for p in path.split("/") if p]
    if client.chroot and client.exists("/") is None:  # the chroot itself, as kazoo's makepath would
        try:
            client.create("/", b"", acl=security.acls("/"))
        except kz.NodeExistsError:
            pass
    for i in range(1, len(parts) + 1):
        node = "/" + "/".join(parts[:i])
        if client.exists(node) is None:
            try:
                client.create(node, b"", acl=security.acls(node))
            except kz.NodeExistsError:
                pass


class ZooKeeperStore(MetadataStore):
    def __init__(self, connect: str, session_timeout_ms: int = 18000, connection_timeout_ms: int = 18000,
                 *, create_chroot: bool = True, security: ZkClientSecurity = OPEN) -> None:
        self.connect = connect
        self.security = security
        self.hosts, self.chroot = split_connect(connect)
        self.session_timeout_ms = session_timeout_ms
        self.connection_timeout_ms = connection_timeout_ms
        self.create_chroot = create_chroot  # the tools only look: a missing chroot means no cluster there
        self.session_listeners: list[SessionListener] = []
        self._client: KazooClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lost = False
        # kazoo forgets every watch when the connection drops, even when the session lives on (it sends
        # no SetWatches on reconnect): the watches so dropped, re-fired once connected again
        self._dropped_watches: list[tuple[Watcher, WatchEvent]] = []
        self._connected = False
        self._watch_lock = threading.Lock()
        self._listener_tasks = TaskSet(log, "Session listener")

    def _new_client(self, hosts: str) -> KazooClient:
        return new_client(
            hosts,
            self.session_timeout_ms / 1000,
            self.security,
            connection_retry=KazooRetry(max_tries=-1, delay=0.2, max_delay=2),
            command_retry=KazooRetry(max_tries=3, delay=0.1, max_delay=1, ignore_expire=False),
            logger=logging.getLogger("kazoo.client"),
        )

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        log.info("Connecting to zookeeper on %s", self.connect)
        if self.chroot and self.create_chroot:
            await self._run(self._ensure_chroot)
        client = self._new_client(self.hosts + self.chroot)
        try:
            await self._loop.run_in_executor(None, partial(client.start, timeout=self.connection_timeout_ms / 1000))
        except KazooTimeoutError:
            client.stop()
            client.close()
            raise st.StoreUnavailableError(
                f"Timed out waiting for connection to ZooKeeper at {self.connect} "
                f"(zookeeper.connection.timeout.ms={self.connection_timeout_ms})"
            ) from None
        self._connected = True
        client.add_listener(self._on_state)
        self._client = client
        self.session_id = client.client_id[0] if client.client_id else 0
        log.info("Connected to zookeeper at %s (session 0x%x)", self.connect, self.session_id)

    def _ensure_chroot(self) -> None:
        probe = self._new_client(self.hosts)
        try:
            probe.start(timeout=self.connection_timeout_ms / 1000)
        except KazooTimeoutError:
            probe.stop()
            probe.close()
            raise st.StoreUnavailableError(
                f"Timed out waiting for connection to ZooKeeper at {self.hosts} "
                f"(zookeeper.connection.timeout.ms={self.connection_timeout_ms})"
            ) from None
        try:
            make_path(probe, self.chroot, self.security)
        finally:
            probe.stop()
            probe.close()

    def _on_state(self, state: str) -> None:
        """Called on kazoo's thread. A LOST session means our ephemeral nodes and watches are gone: once a
        new session is up, the broker re-registers and re-reads everything."""
        if self._client is None:
            return  # our own close
        with self._watch_lock:
            self._connected = state == KazooState.CONNECTED
            refire, self._dropped_watches = self._dropped_watches, []
        if state == KazooState.LOST:
            self._lost = True  # the session listeners re-read everything and so set every watch anew
            log.warning("ZooKeeper session expired; will re-register once reconnected")
        elif state == KazooState.SUSPENDED:
            log.warning("Disconnected from ZooKeeper; reconnecting")
            with self._watch_lock:
                self._dropped_watches = refire
        elif state == KazooState.CONNECTED and not self._lost and self._loop is not None:
            if refire:
                log.info("Reconnected to ZooKeeper (session 0x%x); re-reading %d watched znodes",
                         self.session_id, len(refire))
            for watch, event in refire:
                self._loop.call_soon_threadsafe(watch, event)
        elif state == KazooState.CONNECTED and self._lost and self._loop is not None:
            self._lost = False
            client = self._client
            if client is not None and client.client_id:
                self.session_id = client.client_id[0]
            for fn in self.session_listeners:
                self._loop.call_soon_threadsafe(self._spawn_listener, fn)

    def _spawn_listener(self, fn: SessionListener) -> None:
        self._listener_tasks.spawn(fn())

    async def close(self) -> None:
        self._listener_tasks.close()
        client, self._client = self._client, None
        if client is None:
            return
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(loop.run_in_executor(None, client.stop), 10)
        except TimeoutError:
            log.warning("Timed out closing the ZooKeeper session")
        client.close()

    # ---- operations ----------------------------------------------------------------------------
    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        assert self._loop is not None
        try:
            return await self._loop.run_in_executor(None, partial(fn, *args, **kwargs))
        except kz.NoNodeError as exc:
            raise st.NoNodeError(str(args[0]) if args else str(exc)) from None
        except kz.NodeExistsError:
            raise st.NodeExistsError(str(args[0]) if args else "") from None
        except kz.BadVersionError:
            raise st.BadVersionError(str(args[0]) if args else "") from None
        except kz.NotEmptyError:
            raise st.NotEmptyError(str(args[0]) if args else "") from None
        except (kz.ConnectionLoss, kz.SessionExpiredError, kz.OperationTimeoutError, kz.ZookeeperStoppedError,
                KazooTimeoutError) as exc:
            raise st.StoreUnavailableError(f"ZooKeeper unavailable: {type(exc).__name__}") from None
        except kz.AuthFailedError:
            who = f" as {self.security.sasl.username}" if self.security.sasl is not None else ""
            raise st.StoreUnavailableError(
                f"ZooKeeper authentication failed (SASL DIGEST-MD5{who}): check the JAAS Client section and "
                "that the servers take SASL (authProvider, a JAAS Server section)") from None
        except kz.NoAuthError:
            raise st.StoreError(f"ZooKeeper refused access to {args[0] if args else 'a znode'} (NoAuth): the "
                                "session is not authenticated as its ACL requires (zookeeper.set.acl, the JAAS "
                                "Client section)") from None
        except kz.ZookeeperError as exc:
            raise st.StoreError(f"ZooKeeper error on {args[0] if args else ''}: {type(exc).__name__}") from None

    @property
    def client(self) -> KazooClient:
        if self._client is None:
            raise st.StoreUnavailableError("not connected to ZooKeeper")
        return self._client

    def _wrap(self, watch: Watcher | None, path: str, children: bool = False
              ) -> Callable[[WatchedEvent], None] | None:
        """A kazoo watcher calling `watch` on the event loop. A watch kazoo dropped with the connection
        fires as a change of `path` once connected again, so its owner re-reads and watches anew."""
        if watch is None:
            return None
        loop = self._loop
        assert loop is not None

        def fire(ev: WatchedEvent) -> None:
            if loop.is_closed():
                return
            if ev.type == EventType.NONE:
                event = WatchEvent("CHILD" if children else "CHANGED", path)
                with self._watch_lock:
                    if not self._connected:
                        self._dropped_watches.append((watch, event))
                        return
                loop.call_soon_threadsafe(watch, event)
                return
            kind = _EVENT_TYPES.get(ev.type)
            if kind is not None:
                loop.call_soon_threadsafe(watch, WatchEvent(kind, ev.path))

        return fire

    async def create(self, path: str, data: bytes = b"", ephemeral: bool = False, makepath: bool = False,
                     sequence: bool = False) -> str:
        if makepath:
            await self._run(self._make_parents, path)
        return await self._run(self.client.create, path, data, acl=self.security.acls(path), ephemeral=ephemeral,
                               sequence=sequence)

    def _make_parents(self, path: str) -> None:
        make_path(self.client, path.rpartition("/")[0], self.security)

    async def get(self, path: str, watch: Watcher | None = None) -> tuple[bytes, Stat]:
        data, stat = await self._run(self.client.get, path, self._wrap(watch, path))
        return data or b"", _stat(stat)

    async def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        return _stat(await self._run(self.client.set, path, data, version))

    async def delete(self, path: str, version: int = -1, recursive: bool = False) -> None:
        await self._run(self.client.delete, path, version, recursive)

    async def multi(self, ops: Sequence[Op]) -> list[OpResult]:
        return await self._run(self._commit, list(ops))

    def _commit(self, ops: list[Op]) -> list[OpResult]:
        """One ZooKeeper transaction (on a worker thread). kazoo reports a failed op as an exception
        object in the results; the first one that is not a roll-back is raised as the store's error."""
        t = self.client.transaction()
        for op in ops:
            if isinstance(op, Create):
                t.create(op.path, op.data, acl=self.security.acls(op.path), ephemeral=op.ephemeral)
            elif isinstance(op, SetData):
                t.set_data(op.path, op.data, op.version)
            elif isinstance(op, Delete):
                t.delete(op.path, op.version)
            else:
                t.check(op.path, op.version)
        results = t.commit()
        for op, r in zip(ops, results, strict=False):
            if isinstance(r, Exception) and not isinstance(r, _NOT_THE_CAUSE):
                error = _OP_ERRORS.get(type(r))
                if error is not None:
                    raise error(op.path)
                raise st.StoreError(f"ZooKeeper transaction failed at {op.path}: {type(r).__name__}")
        failed = next((r for r in results if isinstance(r, Exception)), None)
        if failed is not None:
            raise st.StoreError(f"ZooKeeper transaction failed: {type(failed).__name__}")
        return [op.path if isinstance(op, Create) else _stat(r) if isinstance(op, SetData) else None
                for op, r in zip(ops, results, strict=True)]

    async def get_many(self, paths: Sequence[str], watch: Callable[[str], Watcher] | None = None
                       ) -> list[tuple[bytes, Stat] | None]:
        return await self._run(self._get_many, list(paths), watch)

    def _get_many(self, paths: list[str], watch: Callable[[str], Watcher] | None) -> list[tuple[bytes, Stat] | None]:
        """Pipelined: every request is sent before the first answer is awaited. A watch on a get is only
        left when the znode exists, so a missing one is asked again with an exists watch."""
        client = self.client
        watches = [self._wrap(watch(p), p) if watch is not None else None for p in paths]
        asked = [client.get_async(p, w) for p, w in zip(paths, watches, strict=True)]
        out: list[tuple[bytes, Stat] | None] = []
        missing: list[int] = []
        for i, a in enumerate(asked):
            try:
                data, stat = a.get()
                out.append((data or b"", _stat(stat)))
            except kz.NoNodeError:
                out.append(None)
                missing.append(i)
        probes = [(i, client.exists_async(paths[i], watches[i])) for i in missing]
        for i, a in probes:
            if a.get() is not None:  # created meanwhile: its exists watch is set, read it plainly
                try:
                    data, stat = client.get(paths[i])
                    out[i] = (data or b"", _stat(stat))
                except kz.NoNodeError:
                    pass
        return out

    async def exists(self, path: str, watch: Watcher | None = None) -> Stat | None:
        stat = await self._run(self.client.exists, path, self._wrap(watch, path))
        return _stat(stat) if stat is not None else None

    async def get_children(self, path: str, watch: Watcher | None = None) -> list[str]:
        return sorted(await self._run(self.client.get_children, path, self._wrap(watch, path, children=True)))
