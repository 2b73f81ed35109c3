"""A distributed worker's membership of the Connect group, a `GroupMember` (admin_client/group_member.py) with
protocol type `connect` and the protocols `connect.protocol` allows (`compatible`, the incremental cooperative
one, before the eager `default`; `default` alone), each with the worker's state as its metadata; the leader deals
out every member's Assignment. While the group's protocol is eager the worker gives up everything it ran before
each join; after each SyncGroup it is handed its new assignment."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from odradek.admin_client.group_member import GroupMember
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

log = logging.getLogger("odradek.connect.distributed")


@dataclass
class Member:
    member_id: str
    state: WorkerState


class WorkerMember(GroupMember):
    """`on_revoke()` runs before every join of an eager group; `assign(members, leader_id, protocol)` runs on the
    leader to compute every member's Assignment; `on_assigned(assignment, generation, protocol)` runs after every
    SyncGroup. `current_state(version)` is the metadata sent with each join."""

    protocol_type = "connect"

    def __init__(self, config: WorkerConfig, current_state: Callable[[int], WorkerState],
                 on_revoke: Callable[[], None], assign: Callable[[list[Member], str, str], dict[str, Assignment]],
                 on_assigned: Callable[[Assignment, int, str], None]) -> None:
        rebalance_ms = int(config.props["rebalance.timeout.ms"])
        super().__init__(config.bootstrap_servers, config.client_props("admin"), str(config.get("group.id")),
                         int(config.props["session.timeout.ms"]), int(config.props["heartbeat.interval.ms"]),
                         rebalance_ms, log, client_id="connect-group", thread_name="DistributedHerder-group",
                         stop_timeout=rebalance_ms / 1000 + 5)
        self.current_state, self.revoke, self.plan, self.assigned = current_state, on_revoke, assign, on_assigned
        # the protocols offered, the preferred first: `sessioned` (KIP-507: signed internal requests) falls back to
        # `compatible` and `eager` in a group with older workers, as Kafka's do
        self.protocols = {EAGER: [EAGER], COMPATIBLE: [COMPATIBLE, EAGER]}.get(
            config.props["connect.protocol"], [SESSIONED, COMPATIBLE, EAGER])
        self.protocol = self.protocols[0]  # the group's, as of the last join

    def join_protocols(self) -> list[tuple[str, bytes]]:
        return [(name, encode_metadata(self.current_state(PROTOCOL_VERSION[name]))) for name in self.protocols]

    def before_join(self) -> None:
        if self.protocol == EAGER:
            self.revoke()

    def on_joined(self, protocol: str) -> None:
        protocol = protocol if protocol in PROTOCOL_VERSION else EAGER
        if protocol == EAGER and self.protocol != EAGER:
            self.revoke()  # the group fell back to eager: nothing carries over
        self.protocol = protocol

    def assign(self, members: list[tuple[str, bytes]], protocol: str) -> dict[str, bytes]:
        workers = [Member(member_id, decode_metadata(metadata)) for member_id, metadata in members]
        plan = self.plan(workers, self.member_id, self.protocol)
        return {member_id: encode_assignment(a) for member_id, a in plan.items()}

    def on_assigned(self, assignment: bytes, protocol: str) -> None:
        decoded = decode_assignment(assignment)
        log.info("Joined group at generation %d as %s with protocol %s and leader %s (%s); assignment: connectors "
                 "%s, tasks %s, revoked connectors %s, revoked tasks %s, delay %d ms", self.generation,
                 self.member_id, self.protocol, decoded.leader, decoded.leader_url, decoded.connectors,
                 decoded.tasks, decoded.revoked_connectors, decoded.revoked_tasks, decoded.delay_ms)
        self.assigned(decoded, self.generation, self.protocol)
