"""What the broker does when one of its log dirs fails: Kafka's LogDirFailureHandler thread and
ReplicaManager.handleLogDirFailure. The storage's failure channel reports the dir from whichever thread met
the I/O error; here, on the event loop, the replicas in the dir stop at once (KAFKA_STORAGE_ERROR for every
request, acks=all waiters failed, fetchers stopped), then off the loop the log manager forgets and closes
the dir's logs. The broker halts (exit code 1) when no log dir is left, or when the dir held the embedded
metadata store (single-node mode; KRaft's broker likewise stops when its metadata log dir fails). Otherwise
the cluster is told: the broker's registration lists its offline replicas and a
`/log_dir_event_notification/log_dir_event_<seq>` znode makes the controller elect other leaders for them
(cluster/controller.py). Nothing writes to the dir again until the broker restarts."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from odradek.aio import TaskSet
from odradek.cluster import znodes as zn
from odradek.cluster.store import StoreError, to_json

if TYPE_CHECKING:
    from odradek.server.broker import Broker

log = logging.getLogger("odradek.server")

HALT_EXIT_CODE = 1
DEREGISTER_TIMEOUT_S = 2.0


class LogDirFailureHandler:
    """Create it on the event loop once the replica manager exists; it handles dirs already offline too."""

    def __init__(self, broker: Broker, metadata_store_dir: Path | None) -> None:
        self.broker = broker
        self.metadata_store_dir = metadata_store_dir  # the log dir holding the embedded store, if any
        self._loop = asyncio.get_running_loop()
        self._tasks = TaskSet(log, "Log dir failure handling")
        self._lock = asyncio.Lock()  # one dir at a time, in the order they failed
        failures = broker.logs.failures
        failures.listeners.append(self._reported)
        for d in failures.offline_dirs():
            self._on_loop(d)

    def close(self) -> None:
        self._tasks.close()

    def _reported(self, d: Path) -> None:
        """The failure channel's listener: any thread."""
        try:
            self._loop.call_soon_threadsafe(self._on_loop, d)
        except RuntimeError:  # the loop is closed: the broker is gone
            pass

    def _on_loop(self, d: Path) -> None:
        log.warning("Stopping serving replicas in dir %s", d)
        self.broker.replicas.stop_serving_dir(d)
        self._tasks.spawn(self._handle(d))

    async def _handle(self, d: Path) -> None:
        async with self._lock:
            logs = self.broker.logs
            await self._loop.run_in_executor(None, logs.handle_dir_failure, d)
            if not logs.online_dirs:
                await self._halt(f"Shutdown broker because all log dirs in {', '.join(map(str, logs.log_dirs))} "
                                 "have failed")
            if self.metadata_store_dir is not None and d == self.metadata_store_dir:
                await self._halt(f"Shutdown broker because the log dir {d} holding the metadata store has failed")
            if not self.broker.stopping:
                await self._propagate()
            log.warning("Stopped serving replicas in dir %s", d)

    async def _propagate(self) -> None:
        """Kafka's zkClient.propagateLogDirEvent, after listing the offline replicas in the registration."""
        broker = self.broker
        store = broker.store
        try:
            await store.set(zn.broker_path(broker.broker_id), to_json(broker.broker_info().to_json()))
            await store.create(f"{zn.LOG_DIR_EVENT_NOTIFICATION}/{zn.LOG_DIR_EVENT_PREFIX}",
                               to_json(zn.log_dir_event_json(broker.broker_id)), sequence=True, makepath=True)
        except StoreError as exc:  # the registration is rewritten with them on the next session anyway
            log.error("Could not tell the controller of the failed log dir: %s", exc)

    async def _halt(self, message: str) -> None:
        """Kafka's Exit.halt(1) after a fatal line. First (each bounded) the connections are closed, flushing
        answers already written, and the ZooKeeper session, so the controller moves leadership at once
        instead of after the session timeout."""
        log.error("%s", message)
        try:  # answers already written (the produce that met the error) reach their clients
            await asyncio.wait_for(self.broker.server.close(), DEREGISTER_TIMEOUT_S)
        except Exception as exc:
            log.warning("Closing the connections before halting failed: %s", exc)
        if self.broker.config.zookeeper_connect:
            try:
                await asyncio.wait_for(self.broker.store.close(), DEREGISTER_TIMEOUT_S)
            except Exception as exc:
                log.warning("Closing the ZooKeeper session before halting failed: %s", exc)
        for handler in logging.getLogger().handlers:
            handler.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(HALT_EXIT_CODE)
