"""A member of a Kafka group over the classic protocol, for groups librdkafka does not join (it joins consumer
groups only): FindCoordinator, JoinGroup with the subclass's protocol type and protocols, SyncGroup (the leader
sends every member's assignment), Heartbeat every `heartbeat_ms` and LeaveGroup on a clean stop, sent over
Odradek's blocking protocol connection from a thread of its own. A Connect worker's membership of its group and
the schema registry's primary election are each one; the subclass says what the metadata and the assignments
hold."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from kafka.protocol.consumer import HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest
from kafka.protocol.metadata import FindCoordinatorRequest

from odradek.protocol.transport import BlockingConnection
from odradek.security.client_config import client_security

MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION = 79, 27, 25, 22
COORDINATOR_ERRORS = (14, 15, 16)  # load in progress, not available, not coordinator: find it again


class GroupMember:
    """Subclasses give `protocol_type`, `join_protocols()`, `assign()` and `on_assigned()`, and may hook
    `before_join()`, `on_joined()`, `on_rebalance()` and `on_lost()`. `request_rejoin()` starts a new round."""

    protocol_type = ""

    def __init__(self, bootstrap: str, client_props: Mapping[str, str], group: str, session_ms: int,
                 heartbeat_ms: int, rebalance_ms: int, log: logging.Logger, *, client_id: str, thread_name: str,
                 stop_timeout: float) -> None:
        self.servers = _servers(bootstrap)
        self.security = client_security(client_props)  # the client's TLS/SASL keys
        self.group = group
        self.session_ms, self.heartbeat_s, self.rebalance_ms = session_ms, heartbeat_ms / 1000, rebalance_ms
        self.log, self.client_id, self.stop_timeout = log, client_id, stop_timeout
        self.member_id = ""
        self.generation = -1
        self.rejoin = threading.Event()
        self._stop = threading.Event()
        self._conn: BlockingConnection | None = None
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)

    # ---- what a kind of group says ---------------------------------------------------------------------

    def join_protocols(self) -> list[tuple[str, bytes]]:
        """The protocols offered, the preferred first, each with this member's metadata."""
        raise NotImplementedError

    def assign(self, members: list[tuple[str, bytes]], protocol: str) -> dict[str, bytes]:
        """On the leader: every member's assignment from the members' (id, metadata) under the group's protocol."""
        raise NotImplementedError

    def on_assigned(self, assignment: bytes, protocol: str) -> None:
        """After every SyncGroup, with this member's assignment."""
        raise NotImplementedError

    def before_join(self) -> None:
        """Before every JoinGroup."""

    def on_joined(self, protocol: str) -> None:
        """After a JoinGroup answered, with the protocol the group chose."""

    def on_rebalance(self) -> None:
        """A heartbeat said the group rebalances (or forgot this member): a new round follows."""

    def on_lost(self) -> None:
        """The coordinator's connection was lost or the round failed: the membership starts again."""

    # ---- life ------------------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def request_rejoin(self) -> None:
        self.rejoin.set()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(self.stop_timeout)
        conn = self._conn
        if conn is not None and self.member_id:
            try:
                conn.request(LeaveGroupRequest(group_id=self.group, member_id=self.member_id), 1)
            except (OSError, ConnectionError):
                pass
            conn.close()

    # ---- the membership loop ---------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._conn = self._coordinator()
                self._member_loop(self._conn)
            except (OSError, ConnectionError) as exc:
                self.log.warning("Group coordinator connection for %s lost (%s); rediscovering", self.group, exc)
                self.on_lost()
            except Exception:
                self.log.exception("Group membership of %s failed; rejoining", self.group)
                self.on_lost()
            if self._conn is not None and not self._stop.is_set():
                self._conn.close()
                self._conn = None
            self._stop.wait(0.5)

    def _coordinator(self) -> BlockingConnection:
        last: Exception | None = None
        for host, port in self.servers:
            try:
                with BlockingConnection(host, port, self.client_id, 10, security=self.security) as bootstrap:
                    resp = bootstrap.request(FindCoordinatorRequest(key=self.group, key_type=0), 1)
                if resp.error_code:
                    raise ConnectionError(f"FindCoordinator error {resp.error_code}")
                return BlockingConnection(resp.host, resp.port, self.client_id, self.rebalance_ms / 1000 + 10,
                                          security=self.security)
            except (OSError, ConnectionError) as exc:
                last = exc
        raise ConnectionError(f"no coordinator for {self.group}: {last}")

    def _member_loop(self, conn: BlockingConnection) -> None:
        while not self._stop.is_set():
            if not self._join(conn):
                continue
            next_beat = 0.0
            while not self._stop.is_set() and not self.rejoin.is_set():
                now = time.monotonic()
                if now >= next_beat:
                    resp = conn.request(HeartbeatRequest(group_id=self.group, generation_id=self.generation,
                                                         member_id=self.member_id), 1)
                    if resp.error_code in (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID):
                        self.on_rebalance()
                        if resp.error_code == UNKNOWN_MEMBER_ID:
                            self.member_id = ""
                        break
                    if resp.error_code in COORDINATOR_ERRORS:
                        raise ConnectionError(f"Heartbeat error {resp.error_code}")
                    next_beat = now + self.heartbeat_s
                self.rejoin.wait(min(0.1, max(next_beat - now, 0.01)))

    def _join(self, conn: BlockingConnection) -> bool:
        """One JoinGroup + SyncGroup round; False when it must be tried again."""
        # cleared before the round, not after it: a change seen while the round is under way (a connector
        # created between JoinGroup and SyncGroup) asks for the next round and must not be forgotten
        self.rejoin.clear()
        self.before_join()
        request = JoinGroupRequest(group_id=self.group, session_timeout_ms=self.session_ms,
                                   rebalance_timeout_ms=self.rebalance_ms, member_id=self.member_id,
                                   group_instance_id=None, protocol_type=self.protocol_type,
                                   protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=name, metadata=metadata)
                                              for name, metadata in self.join_protocols()])
        resp = conn.request(request, 5)
        if resp.error_code in (MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID):
            self.member_id = resp.member_id if resp.error_code == MEMBER_ID_REQUIRED else ""
            return False
        if resp.error_code in COORDINATOR_ERRORS:
            raise ConnectionError(f"JoinGroup error {resp.error_code}")
        if resp.error_code:
            self.log.warning("JoinGroup of %s failed with error %d; retrying", self.group, resp.error_code)
            self._stop.wait(0.5)
            return False
        self.member_id, self.generation = resp.member_id, resp.generation_id
        self.on_joined(resp.protocol_name)
        assignments: list[Any] = []
        if resp.leader == resp.member_id:
            plan = self.assign([(m.member_id, m.metadata) for m in resp.members], resp.protocol_name)
            assignments = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=mid, assignment=a)
                           for mid, a in plan.items()]
        sync = conn.request(SyncGroupRequest(group_id=self.group, generation_id=self.generation,
                                             member_id=self.member_id, group_instance_id=None,
                                             assignments=assignments), 3)
        if sync.error_code:
            if sync.error_code == UNKNOWN_MEMBER_ID:
                self.member_id = ""
            if sync.error_code in COORDINATOR_ERRORS:
                raise ConnectionError(f"SyncGroup error {sync.error_code}")
            return False
        self.on_assigned(sync.assignment, resp.protocol_name)
        return True


def _servers(bootstrap: str) -> list[tuple[str, int]]:
    """`bootstrap.servers` as (host, port) pairs (entries without a port skipped)."""
    out = []
    for item in bootstrap.split(","):
        host, sep, port = item.strip().rpartition(":")
        if sep and port.isdigit():
            out.append((host.strip("[]") or "localhost", int(port)))
    return out
