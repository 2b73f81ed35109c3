"""Share consumers for the share-group integration tests: confluent-kafka's `ShareConsumer` in explicit
acknowledgement mode, polled by the test's thread, the broker settings that make lock expiry and
redelivery quick, and the waits the tests share (warm-up, draining, a marker record)."""

from __future__ import annotations

import uuid
from typing import Any

from confluent_kafka import AcknowledgeType, ShareConsumer

from tests.clients import produce
from tests.harness import BrokerCluster, BrokerProcess, group_timers, run_cli
from tests.rawclient import RawClient
from tests.waiting import wait_until

LOCK_MS = 1000
CONFIG = {
    "group.share.record.lock.duration.ms": str(LOCK_MS),
    "group.share.min.record.lock.duration.ms": str(LOCK_MS),
    **group_timers("share", heartbeat_ms=300),
    "group.share.delivery.count.limit": "3",
}
WARM = b"warm-up"


class Share:
    """One ShareConsumer in explicit acknowledgement mode, polled by the test's thread."""

    def __init__(self, broker: BrokerProcess, group: str, topic: str, max_records: int = 500) -> None:
        self.c = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                                "share.acknowledgement.mode": "explicit", "max.poll.records": max_records})
        self.c.subscribe([topic])
        self.closed = False

    def poll(self, timeout: float = 0.2) -> list[Any]:
        return [m for m in self.c.poll(timeout) if m.error() is None]

    def settle(self, msgs: list[Any], kind: Any = AcknowledgeType.ACCEPT) -> None:
        """Acknowledge `msgs` with `kind` and wait for the broker's answer (no failure allowed)."""
        for m in msgs:
            self.c.acknowledge(m, kind)
        if msgs:
            results = self.c.commit_sync(30)
            assert all(e is None for e in results.values()), results

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.c.close()


def warm_up(broker: BrokerProcess, topic: str, shares: list[Share]) -> None:
    """Produce warm-up records until one reaches a consumer (the share partition is initialised), and
    accept whatever warm-up records arrive."""
    def got_one() -> bool:
        produce(broker.bootstrap, topic, [WARM])
        seen = False
        for s in shares:
            msgs = s.poll(0.3)
            s.settle(msgs)
            seen = seen or bool(msgs)
        return seen

    wait_until(got_one, timeout=60, message="a warm-up record to reach a share consumer", interval=0)


def drain(shares: list[Share], want: int, timeout: float = 60) -> dict[int, list[tuple[int, bytes]]]:
    """Poll every consumer, accepting every record, until `want` non-warm-up records were accepted; the
    (offset, value) accepted by each consumer."""
    accepted: dict[int, list[tuple[int, bytes]]] = {i: [] for i in range(len(shares))}

    def step() -> bool:
        for i, s in enumerate(shares):
            msgs = s.poll(0.1)
            s.settle(msgs)
            accepted[i] += [(m.offset(), m.value()) for m in msgs if m.value() != WARM]
        return sum(len(v) for v in accepted.values()) >= want

    wait_until(step, timeout=timeout, message=lambda: f"{want} records accepted (have {accepted})", interval=0)
    return accepted


def until_marker(broker: BrokerProcess, topic: str, s: Share, marker: bytes) -> list[bytes]:
    """Produce `marker`, then accept everything `s` receives until the marker: the values received."""
    produce(broker.bootstrap, topic, [marker])
    rest: list[bytes] = []

    def step() -> bool:
        msgs = s.poll(0.2)
        s.settle(msgs)
        rest.extend(m.value() for m in msgs)
        return marker in rest

    wait_until(step, timeout=30, message=f"the marker {marker!r}", interval=0)
    return rest


def join_share_group(conn: Any, group: str, member_id: str, topics: list[str]) -> Any:
    """Join `member_id` to share group `group` with one ShareGroupHeartbeat over the raw connection `conn`
    (a broker serving ShareFetch opens share sessions only for members it knows), retried while the group
    coordinator comes up; the heartbeat's answer. The session timeout (45 s) outlasts a test."""
    from kafka.protocol.metadata import FindCoordinatorRequest

    from odradek.protocol.kip932 import ShareGroupHeartbeatRequest

    conn.request(FindCoordinatorRequest(key=group), 1)  # creates __consumer_offsets

    def join() -> Any:
        hb = conn.request(ShareGroupHeartbeatRequest(group_id=group, member_id=member_id, member_epoch=0,
                                                     subscribed_topic_names=topics), version=1)
        return hb if hb.error_code == 0 else None

    return wait_until(join, message=f"member {member_id} to join share group {group}")


def share_groups_tool(broker: BrokerProcess | BrokerCluster, *args: str, code: int = 0) -> list[str]:
    """Run `odradek share-groups`; its stdout lines with runs of blanks squeezed (the columns' padding)."""
    done = run_cli("share-groups", "--bootstrap-server", broker.bootstrap, *args)
    assert done.returncode == code, (done.stdout, done.stderr)
    if code:
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    return [" ".join(line.split()) for line in (done.stdout + done.stderr).splitlines() if line.strip()]


def topic_id(raw: RawClient, topic: str) -> uuid.UUID | None:
    from kafka.protocol.metadata import MetadataRequest

    resp = raw.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(topic_id=None, name=topic)],
                                       allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
                                       include_topic_authorized_operations=False), version=12)
    tid = resp.topics[0].topic_id
    return tid if tid and tid.int else None
