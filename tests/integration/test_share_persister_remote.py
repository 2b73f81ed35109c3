"""The share-state persister's remote path: a broker whose share partition's state is kept by another
broker's share coordinator reads, writes, summarises and deletes it with the state APIs over the wire.

The persister under test runs in the test as broker 999 of a cluster whose share coordinator for every
key is the real broker 0 (a stand-in runtime names it), so each call takes the remote branch and what it
gets back is what a real broker answered."""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace
from typing import Any

from odradek.cluster.znodes import BrokerInfo
from odradek.groups.share_partition import RecordState, StateBatch
from odradek.groups.share_persister import CoordinatorShareStatePersister
from odradek.groups.share_state import ShareKey, ShareSnapshot, ShareStateSummary
from odradek.protocol.errors import ErrorCode
from odradek.protocol.kip932 import InitializeShareGroupStateRequest
from tests.clients import unique_name
from tests.harness import BrokerProcess
from tests.rawclient import RawClient
from tests.waiting import wait_until


class _ElsewhereRuntime:
    """Names the real broker as the share coordinator of every key."""

    def __init__(self, broker: BrokerProcess) -> None:
        self.node = BrokerInfo(broker.broker_id, "127.0.0.1", broker.port)

    async def coordinator_node(self, key: str) -> BrokerInfo:
        return self.node


def _initialize(broker: BrokerProcess, key: ShareKey, start: int) -> None:
    init = InitializeShareGroupStateRequest
    request = init(group_id=key.group_id, topics=[init.InitializeStateData(
        topic_id=uuid.UUID(bytes=key.topic_id), partitions=[
            init.InitializeStateData.PartitionData(partition=key.partition, state_epoch=1, start_offset=start)])])
    with RawClient(broker.port, timeout=30) as raw:
        def answered() -> Any:  # the first call creates __share_group_state
            (p,) = [p for t in raw.request(request, version=0).results for p in t.partitions]
            return None if p.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS else p

        assert wait_until(answered, 30, "the share coordinator").error_code == 0


def test_read_write_summary_delete_through_another_broker(broker: BrokerProcess) -> None:
    key = ShareKey(unique_name("sg"), uuid.uuid4().bytes, 2)
    _initialize(broker, key, 10)
    coordinator: Any = SimpleNamespace(runtime=_ElsewhereRuntime(broker))  # only its runtime is asked
    persister = CoordinatorShareStatePersister(999, coordinator, timeout_s=30)
    written = (StateBatch(12, 13, RecordState.ACKNOWLEDGED, 1), StateBatch(14, 16, RecordState.AVAILABLE, 2),
               StateBatch(17, 17, RecordState.ARCHIVED, 3))

    async def run() -> tuple[Any, ...]:
        try:
            first = await persister.read_state(key, leader_epoch=4)
            await persister.write_state(key, ShareSnapshot(12, written, leader_epoch=4, state_epoch=1))
            after = await persister.read_state(key, leader_epoch=4)
            summary = await persister.read_summary(key)
            await persister.delete_state(key)
            gone = await persister.read_summary(key)
            return first, after, summary, gone
        finally:
            await persister.close()

    first, after, summary, gone = asyncio.run(run())
    assert first == ShareSnapshot(10, (), leader_epoch=4, state_epoch=1)
    assert after == ShareSnapshot(12, written, leader_epoch=4, state_epoch=1)
    # 12-13 acknowledged and 17 archived: three records past the start offset are done with
    assert summary == ShareStateSummary(12, 1, 4, 3)
    assert gone is None


def test_initialize_through_another_broker(broker: BrokerProcess) -> None:
    """The group coordinator's InitializeShareGroupState over the wire: a state at the group's epoch with
    no start offset, read back as such (the leader then takes the start from share.auto.offset.reset) and
    summarised as no state yet."""
    key = ShareKey(unique_name("sg"), uuid.uuid4().bytes, 0)
    _initialize(broker, ShareKey(key.group_id, uuid.uuid4().bytes, 0), 0)  # __share_group_state is there
    coordinator: Any = SimpleNamespace(runtime=_ElsewhereRuntime(broker))
    persister = CoordinatorShareStatePersister(999, coordinator, timeout_s=30)

    async def run() -> tuple[Any, ...]:
        try:
            await persister.initialize_state(key, 3, -1)
            return await persister.read_state(key, leader_epoch=2), await persister.read_summary(key)
        finally:
            await persister.close()

    state, summary = asyncio.run(run())
    assert state == ShareSnapshot(-1, (), leader_epoch=2, state_epoch=3)
    assert summary is None
