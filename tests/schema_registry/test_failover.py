"""Two registry processes in one registry group over one broker: the group elects one primary (the eligible member
with the smallest URL), the follower forwards writes to it and serves reads itself; a node with
`leader.eligibility=false` never becomes the primary, and answers a forwarded write once it has read it. The primary is killed with SIGKILL: once the group has
noticed, writes continue on the survivor, no schema is lost and no id is given twice."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.harness import BrokerProcess
from tests.schema_registry.conftest import wait_primary
from tests.schema_registry.helpers import Registry
from tests.waiting import wait_until

PROPS = {"schema.registry.group.id": "sr-failover", "kafkastore.topic": "_schemas_failover"}


def schema(n: int) -> str:
    return json.dumps({"type": "record", "name": f"R{n}", "fields": [{"name": "f", "type": "int"}]})


def is_primary(node: Registry) -> bool:
    """Whether the node's last join named itself the primary."""
    joins = [line for line in node.output().splitlines() if "; primary " in line]
    return bool(joins) and joins[-1].split("; primary ")[1].split()[0] == node.url


@pytest.mark.timeout(180)
def test_primary_kill_keeps_every_schema_and_id(broker: BrokerProcess, tmp_path: Path) -> None:
    a = Registry(tmp_path / "a", broker, PROPS).start()
    b = Registry(tmp_path / "b", broker, PROPS).start()
    try:
        wait_primary(a)
        wait_primary(b)
        wait_until(lambda: is_primary(a) or is_primary(b), 30, "one node logging it is the primary")
        ids: dict[str, int] = {}
        for n in range(6):  # through both nodes: the follower forwards
            node = (a, b)[n % 2]
            status, body = node.call("POST", f"/subjects/s{n}/versions", {"schema": schema(n)})
            assert status == 200, body
            ids[f"s{n}"] = body["id"]
        assert len(set(ids.values())) == 6
        primary, survivor = (a, b) if is_primary(a) else (b, a)
        assert not is_primary(survivor)
        wait_until(lambda: survivor.call("GET", f"/schemas/ids/{max(ids.values())}")[0] == 200, 10,
                   "the follower reading the last schema")

        primary.kill()

        def registered() -> bool:
            status, body = survivor.call("POST", "/subjects/after/versions", {"schema": schema(100)})
            if status == 200:
                ids["after"] = body["id"]
            return status == 200
        wait_until(registered, 60, "a write accepted by the new primary")
        assert is_primary(survivor)
        assert ids["after"] > max(v for k, v in ids.items() if k != "after")
        for n in range(6):
            status, body = survivor.call("GET", f"/subjects/s{n}/versions/1")
            assert (status, body["id"]) == (200, ids[f"s{n}"])
        # a third node, not eligible, reads everything and forwards to the survivor
        c = Registry(tmp_path / "c", broker, {**PROPS, "leader.eligibility": "false"}).start()
        try:
            wait_until(lambda: c.call("POST", "/subjects/late/versions", {"schema": schema(200)})[0] == 200, 60,
                       "a write through the ineligible node")
            assert not is_primary(c)
            every = sorted([*(f"s{n}" for n in range(6)), "after", "late"])
            assert c.call("GET", "/subjects")[1] == every  # a forwarded write is read before its answer
            late = c.call("GET", "/subjects/late/versions/1")[1]["id"]
            assert late > ids["after"]
        finally:
            c.stop()
    finally:
        a.stop()
        b.stop()


@pytest.mark.timeout(120)
def test_clean_stop_hands_over_without_the_session_timeout(broker: BrokerProcess, tmp_path: Path) -> None:
    """A primary stopped with SIGTERM leaves the group, so the other node takes over in well under the
    session timeout (60 s here)."""
    props = {**PROPS, "schema.registry.group.id": "sr-handover", "kafkastore.topic": "_schemas_handover",
             "kafkagroup.session.timeout.ms": "60000"}
    a = Registry(tmp_path / "a", broker, props).start()
    b = Registry(tmp_path / "b", broker, props).start()
    try:
        wait_primary(a)
        wait_primary(b)
        wait_until(lambda: is_primary(a) or is_primary(b), 30, "one node logging it is the primary")
        primary, other = (a, b) if is_primary(a) else (b, a)
        primary.stop()
        start = time.monotonic()
        wait_until(lambda: other.call("POST", "/subjects/handover/versions", {"schema": schema(7)})[0] == 200, 30,
                   "a write accepted by the other node")
        assert time.monotonic() - start < 30 and is_primary(other)
    finally:
        a.stop()
        b.stop()
