"""The primary's election through a Kafka group, as Confluent's registry does it: each node joins
`schema.registry.group.id` with protocol type `sr` and protocol `v0`, its metadata the JSON identity
{"version": 1, "host", "port", "master_eligibility", "scheme"}; the group's leader picks the eligible member with
the smallest URL and sends everyone {"version": 1, "error": 0, "master": member id, "master_identity": {...}}
("master" null when no member is eligible). Runs on a thread of its own over Odradek's blocking protocol
connection: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup on stop."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from kafka.protocol.consumer import HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest
from kafka.protocol.metadata import FindCoordinatorRequest

from odradek.protocol.transport import BlockingConnection
from odradek.security.client_config import client_security

log = logging.getLogger("odradek.schema_registry")

MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION = 79, 27, 25, 22
COORDINATOR_ERRORS = (14, 15, 16)  # load in progress, not available, not coordinator

Identity = dict[str, Any]


def identity_url(identity: Identity) -> str:
    return f"{identity.get('scheme') or 'http'}://{identity['host']}:{identity['port']}"


def choose_primary(members: list[tuple[str, Identity]]) -> tuple[str, Identity] | None:
    eligible = [(mid, ident) for mid, ident in members if ident.get("master_eligibility", True)]
    return min(eligible, key=lambda m: identity_url(m[1])) if eligible else None


class Election:
    """`on_primary(identity or None, is_self)` runs on the election's thread after every SyncGroup; `on_revoke()`
    when a rebalance starts (the primary stops writing until the group has chosen again)."""

    def __init__(self, bootstrap: str, client_props: Mapping[str, str], group: str, identity: Identity,
                 session_ms: int, heartbeat_ms: int, rebalance_ms: int,
                 on_primary: Callable[[Identity | None, bool], None], on_revoke: Callable[[], None]) -> None:
        self.servers = _servers(bootstrap)
        self.security = client_security(client_props)
        self.group, self.identity = group, identity
        self.session_ms, self.heartbeat_s, self.rebalance_ms = session_ms, heartbeat_ms / 1000, rebalance_ms
        self.on_primary, self.on_revoke = on_primary, on_revoke
        self.member_id = ""
        self.generation = -1
        self._stop = threading.Event()
        self._conn: BlockingConnection | None = None
        self._thread = threading.Thread(target=self._run, name="schema-registry-election", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        conn = self._conn
        if conn is not None and self.member_id:
            try:
                conn.request(LeaveGroupRequest(group_id=self.group, member_id=self.member_id), 1)
            except (OSError, ConnectionError):
                pass
            conn.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._conn = self._coordinator()
                self._member_loop(self._conn)
            except (OSError, ConnectionError) as exc:
                log.warning("Lost the coordinator of group %s (%s); rediscovering", self.group, exc)
                self.on_primary(None, False)
            except Exception:
                log.exception("Membership of group %s failed; rejoining", self.group)
                self.on_primary(None, False)
            if self._conn is not None and not self._stop.is_set():
                self._conn.close()
                self._conn = None
            self._stop.wait(0.5)

    def _coordinator(self) -> BlockingConnection:
        last: Exception | None = None
        for host, port in self.servers:
            try:
                with BlockingConnection(host, port, "schema-registry", 10, security=self.security) as boot:
                    resp = boot.request(FindCoordinatorRequest(key=self.group, key_type=0), 1)
                if resp.error_code:
                    raise ConnectionError(f"FindCoordinator error {resp.error_code}")
                return BlockingConnection(resp.host, resp.port, "schema-registry", self.rebalance_ms / 1000 + 10,
                                          security=self.security)
            except (OSError, ConnectionError) as exc:
                last = exc
        raise ConnectionError(f"no coordinator for {self.group}: {last}")

    def _member_loop(self, conn: BlockingConnection) -> None:
        while not self._stop.is_set():
            if not self._join(conn):
                continue
            next_beat = 0.0
            while not self._stop.is_set():
                now = time.monotonic()
                if now >= next_beat:
                    resp = conn.request(HeartbeatRequest(group_id=self.group, generation_id=self.generation,
                                                         member_id=self.member_id), 1)
                    if resp.error_code in (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID):
                        # the group may choose another primary: stop writing until it has said who
                        self.on_revoke()
                        if resp.error_code == UNKNOWN_MEMBER_ID:
                            self.member_id = ""
                        break
                    if resp.error_code in COORDINATOR_ERRORS:
                        raise ConnectionError(f"Heartbeat error {resp.error_code}")
                    next_beat = now + self.heartbeat_s
                self._stop.wait(min(0.1, max(next_beat - now, 0.01)))

    def _join(self, conn: BlockingConnection) -> bool:
        request = JoinGroupRequest(
            group_id=self.group, session_timeout_ms=self.session_ms, rebalance_timeout_ms=self.rebalance_ms,
            member_id=self.member_id, group_instance_id=None, protocol_type="sr",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="v0",
                                                                 metadata=json.dumps(self.identity).encode())])
        resp = conn.request(request, 5)
        if resp.error_code in (MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID):
            self.member_id = resp.member_id if resp.error_code == MEMBER_ID_REQUIRED else ""
            return False
        if resp.error_code in COORDINATOR_ERRORS:
            raise ConnectionError(f"JoinGroup error {resp.error_code}")
        if resp.error_code:
            log.warning("JoinGroup of %s failed with error %d; retrying", self.group, resp.error_code)
            self._stop.wait(0.5)
            return False
        self.member_id, self.generation = resp.member_id, resp.generation_id
        assignments: list[Any] = []
        if resp.leader == resp.member_id:
            members = []
            for member in resp.members:
                try:
                    members.append((member.member_id, json.loads(member.metadata)))
                except ValueError:
                    log.warning("Member %s of group %s sent unreadable metadata", member.member_id, self.group)
            chosen = choose_primary(members)
            plan = {"version": 1, "error": 0, "master": chosen[0] if chosen else None,
                    "master_identity": chosen[1] if chosen else None}
            payload = json.dumps(plan).encode()
            assignments = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=mid, assignment=payload)
                           for mid, _ in members]
        sync = conn.request(SyncGroupRequest(group_id=self.group, generation_id=self.generation,
                                             member_id=self.member_id, group_instance_id=None,
                                             assignments=assignments), 3)
        if sync.error_code:
            if sync.error_code == UNKNOWN_MEMBER_ID:
                self.member_id = ""
            if sync.error_code in COORDINATOR_ERRORS:
                raise ConnectionError(f"SyncGroup error {sync.error_code}")
            return False
        try:
            assignment = json.loads(sync.assignment)
        except ValueError:
            assignment = {}
        primary = assignment.get("master_identity") if assignment.get("master") else None
        log.info("Joined group %s at generation %d as %s; primary %s", self.group, self.generation, self.member_id,
                 identity_url(primary) if primary else "none")
        self.on_primary(primary, assignment.get("master") == self.member_id)
        return True


def _servers(bootstrap: str) -> list[tuple[str, int]]:
    out = []
    for item in bootstrap.split(","):
        host, sep, port = item.strip().rpartition(":")
        if sep and port.isdigit():
            out.append((host.strip("[]") or "localhost", int(port)))
    return out
