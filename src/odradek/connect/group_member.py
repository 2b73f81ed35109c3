"""A distributed worker's membership of the Connect group: FindCoordinator, JoinGroup with protocol type `connect`
and the protocols `connect.protocol` allows (`compatible`, the incremental cooperative one, before the eager
`default`; `default` alone), SyncGroup (the leader sends every member's assignment), Heartbeat every
`heartbeat.interval.ms` and LeaveGroup on a clean stop, sent over Odradek's blocking protocol connection from a
thread of its own (librdkafka joins consumer groups only). While the group's protocol is eager the worker gives up
everything it ran before each join; after each SyncGroup it is handed its new assignment."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka.protocol.consumer import HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest
from kafka.protocol.metadata import FindCoordinatorRequest

from odradek.connect.connect_protocol import (
    COMPATIBLE,
    EAGER,
    PROTOCOL_VERSION,
    SESSIONED,
    Assignment,
    WorkerState,
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
)
from odradek.connect.worker_config import WorkerConfig
from odradek.protocol.transport import BlockingConnection
from odradek.security.client_config import client_security

log = logging.getLogger("odradek.connect.distributed")

MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION = 79, 27, 25, 22
COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS = 15, 16, 14


@dataclass
class Member:
    member_id: str
    state: WorkerState


class GroupMember:
    """`on_revoke()` runs before every join of an eager group; `assign(members, leader_id, protocol)` runs on the
    leader to compute every member's Assignment; `on_assigned(assignment, generation, protocol)` runs after every
    SyncGroup. `current_state(version)` is the metadata sent with each join."""

    def __init__(self, config: WorkerConfig, current_state: Callable[[int], WorkerState],
                 on_revoke: Callable[[], None], assign: Callable[[list[Member], str, str], dict[str, Assignment]],
                 on_assigned: Callable[[Assignment, int, str], None]) -> None:
        self.config = config
        self.group = str(config.get("group.id"))
        self.session_ms = int(config.props["session.timeout.ms"])
        self.rebalance_ms = int(config.props["rebalance.timeout.ms"])
        self.heartbeat_s = int(config.props["heartbeat.interval.ms"]) / 1000
        self.current_state, self.on_revoke, self.assign, self.on_assigned = current_state, on_revoke, assign, \
            on_assigned
        self.member_id = ""
        self.generation = -1
        # the protocols offered, the preferred first: `sessioned` (KIP-507: signed internal requests) falls back to
        # `compatible` and `eager` in a group with older workers, as Kafka's do
        self.protocols = {EAGER: [EAGER], COMPATIBLE: [COMPATIBLE, EAGER]}.get(
            config.props["connect.protocol"], [SESSIONED, COMPATIBLE, EAGER])
        self.protocol = self.protocols[0]  # the group's, as of the last join
        self.rejoin = threading.Event()
        self._stop = threading.Event()
        self._conn: BlockingConnection | None = None
        self.security = client_security(config.client_props("admin"))  # the worker's TLS/SASL keys
        self._thread = threading.Thread(target=self._run, name="DistributedHerder-group", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def request_rejoin(self) -> None:
        self.rejoin.set()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(self.rebalance_ms / 1000 + 5)
        conn = self._conn
        if conn is not None and self.member_id:
            try:
                conn.request(LeaveGroupRequest(group_id=self.group, member_id=self.member_id), 1)
            except (OSError, ConnectionError):
                pass
            conn.close()

    # ---- the membership loop --------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._conn = self._coordinator()
                self._member_loop(self._conn)
            except (OSError, ConnectionError) as exc:
                log.warning("Group coordinator connection for %s lost (%s); rediscovering", self.group, exc)
            except Exception:
                log.exception("Group membership of %s failed; rejoining", self.group)
            if self._conn is not None and not self._stop.is_set():
                self._conn.close()
                self._conn = None
            self._stop.wait(0.5)

    def _coordinator(self) -> BlockingConnection:
        timeout = self.rebalance_ms / 1000 + 10
        last: Exception | None = None
        for host, port in _servers(self.config.bootstrap_servers):
            try:
                with BlockingConnection(host, port, "connect-group", 10, security=self.security) as bootstrap:
                    resp = bootstrap.request(FindCoordinatorRequest(key=self.group, key_type=0), 1)
                if resp.error_code:
                    raise ConnectionError(f"FindCoordinator error {resp.error_code}")
                return BlockingConnection(resp.host, resp.port, f"connect-{self.member_id or 'worker'}", timeout,
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
                    if resp.error_code in (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION):
                        break
                    if resp.error_code == UNKNOWN_MEMBER_ID:
                        self.member_id = ""
                        break
                    if resp.error_code in (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE):
                        raise ConnectionError(f"Heartbeat error {resp.error_code}")
                    next_beat = now + self.heartbeat_s
                self.rejoin.wait(min(0.1, max(next_beat - now, 0.01)))

    def _join(self, conn: BlockingConnection) -> bool:
        """One JoinGroup + SyncGroup round; False when it must be tried again."""
        # cleared before the round, not after it: a change read while the round is under way (a connector
        # created between JoinGroup and SyncGroup) asks for the next round and must not be forgotten
        self.rejoin.clear()
        if self.protocol == EAGER:
            self.on_revoke()
        request = JoinGroupRequest(group_id=self.group, session_timeout_ms=self.session_ms,
                                   rebalance_timeout_ms=self.rebalance_ms, member_id=self.member_id,
                                   group_instance_id=None, protocol_type="connect",
                                   protocols=[JoinGroupRequest.JoinGroupRequestProtocol(
                                       name=name, metadata=encode_metadata(self.current_state(PROTOCOL_VERSION[name])))
                                       for name in self.protocols])
        resp = conn.request(request, 5)
        if resp.error_code == MEMBER_ID_REQUIRED:
            self.member_id = resp.member_id
            return False
        if resp.error_code == UNKNOWN_MEMBER_ID:
            self.member_id = ""
            return False
        if resp.error_code in (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS):
            raise ConnectionError(f"JoinGroup error {resp.error_code}")
        if resp.error_code:
            log.warning("JoinGroup of %s failed with error %d; retrying", self.group, resp.error_code)
            self._stop.wait(0.5)
            return False
        self.member_id, self.generation = resp.member_id, resp.generation_id
        protocol = resp.protocol_name if resp.protocol_name in PROTOCOL_VERSION else EAGER
        if protocol == EAGER and self.protocol != EAGER:
            self.on_revoke()  # the group fell back to eager: nothing carries over
        self.protocol = protocol
        assignments: list[Any] = []
        if resp.leader == resp.member_id:
            members = [Member(m.member_id, decode_metadata(m.metadata)) for m in resp.members]
            plan = self.assign(members, resp.member_id, protocol)
            assignments = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=mid, assignment=encode_assignment(a))
                           for mid, a in plan.items()]
        sync = conn.request(SyncGroupRequest(group_id=self.group, generation_id=self.generation,
                                             member_id=self.member_id, group_instance_id=None,
                                             assignments=assignments), 3)
        if sync.error_code:
            if sync.error_code == UNKNOWN_MEMBER_ID:
                self.member_id = ""
            if sync.error_code in (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE):
                raise ConnectionError(f"SyncGroup error {sync.error_code}")
            return False
        assignment = decode_assignment(sync.assignment)
        log.info("Joined group at generation %d as %s with protocol %s and leader %s (%s); assignment: connectors "
                 "%s, tasks %s, revoked connectors %s, revoked tasks %s, delay %d ms", self.generation,
                 self.member_id, protocol, assignment.leader, assignment.leader_url, assignment.connectors,
                 assignment.tasks, assignment.revoked_connectors, assignment.revoked_tasks, assignment.delay_ms)
        self.on_assigned(assignment, self.generation, protocol)
        return True


def _servers(bootstrap: str) -> list[tuple[str, int]]:
    """`bootstrap.servers` as (host, port) pairs (entries without a port skipped)."""
    out = []
    for item in bootstrap.split(","):
        host, sep, port = item.strip().rpartition(":")
        if sep and port.isdigit():
            out.append((host.strip("[]") or "localhost", int(port)))
    return out
