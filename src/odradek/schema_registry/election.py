"""The primary's election through a Kafka group, as Confluent's registry does it: each node is a `GroupMember`
(admin_client/group_member.py) of `schema.registry.group.id` with protocol type `sr` and protocol `v0`, its
metadata the JSON identity {"version": 1, "host", "port", "master_eligibility", "scheme"}; the group's leader picks
the eligible member with the smallest URL and sends everyone {"version": 1, "error": 0, "master": member id,
"master_identity": {...}} ("master" null when no member is eligible)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from odradek.admin_client.group_member import GroupMember

log = logging.getLogger("odradek.schema_registry")

Identity = dict[str, Any]


def identity_url(identity: Identity) -> str:
    return f"{identity.get('scheme') or 'http'}://{identity['host']}:{identity['port']}"


def choose_primary(members: list[tuple[str, Identity]]) -> tuple[str, Identity] | None:
    eligible = [(mid, ident) for mid, ident in members if ident.get("master_eligibility", True)]
    return min(eligible, key=lambda m: identity_url(m[1])) if eligible else None


class Election(GroupMember):
    """`on_primary(identity or None, is_self)` runs on the election's thread after every SyncGroup (and with None
    when the membership is lost); `on_revoke()` when a rebalance starts (the primary stops writing until the
    group has chosen again)."""

    protocol_type = "sr"

    def __init__(self, bootstrap: str, client_props: Mapping[str, str], group: str, identity: Identity,
                 session_ms: int, heartbeat_ms: int, rebalance_ms: int,
                 on_primary: Callable[[Identity | None, bool], None], on_revoke: Callable[[], None]) -> None:
        super().__init__(bootstrap, client_props, group, session_ms, heartbeat_ms, rebalance_ms, log,
                         client_id="schema-registry", thread_name="schema-registry-election", stop_timeout=10)
        self.identity = identity
        self.on_primary, self.on_revoke = on_primary, on_revoke

    def join_protocols(self) -> list[tuple[str, bytes]]:
        return [("v0", json.dumps(self.identity).encode())]

    def on_rebalance(self) -> None:
        self.on_revoke()  # the group may choose another primary: stop writing until it has said who

    def on_lost(self) -> None:
        self.on_primary(None, False)

    def assign(self, members: list[tuple[str, bytes]], protocol: str) -> dict[str, bytes]:
        identities = []
        for member_id, metadata in members:
            try:
                identities.append((member_id, json.loads(metadata)))
            except ValueError:
                log.warning("Member %s of group %s sent unreadable metadata", member_id, self.group)
        chosen = choose_primary(identities)
        payload = json.dumps({"version": 1, "error": 0, "master": chosen[0] if chosen else None,
                              "master_identity": chosen[1] if chosen else None}).encode()
        return {member_id: payload for member_id, _ in identities}

    def on_assigned(self, assignment: bytes, protocol: str) -> None:
        try:
            decoded = json.loads(assignment)
        except ValueError:
            decoded = {}
        primary = decoded.get("master_identity") if decoded.get("master") else None
        log.info("Joined group %s at generation %d as %s; primary %s", self.group, self.generation, self.member_id,
                 identity_url(primary) if primary else "none")
        self.on_primary(primary, decoded.get("master") == self.member_id)
