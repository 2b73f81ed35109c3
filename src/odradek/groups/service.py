"""`GroupCoordinatorService`: the one group coordinator the broker builds and the request handlers call
(Kafka's GroupCoordinatorService). It is the `CoordinatorShard` of `__consumer_offsets` (a partition's
records replay into groups of both types, which it hands to their type), and it routes each API to the
group type concerned, so the handlers never ask what type a group is:

- the membership APIs of the classic protocol go to `GroupCoordinator`, unless the group is a consumer
  group: then `ConsumerGroupCoordinator` serves its classic members (online migration; a JoinGroup turns an
  empty consumer group into a classic group first); ConsumerGroupHeartbeat/Describe go to
  `ConsumerGroupCoordinator`, which may turn a classic group into a consumer group;
  StreamsGroupHeartbeat/Describe go to `StreamsGroupCoordinator` (KIP-1071, Kafka Streams'
  `group.protocol=streams`), which takes over an empty classic group of its id;
  ShareGroupHeartbeat/Describe go to `ShareGroupCoordinator` (KIP-932; its groups written as share-group records),
  whose share partitions (`SharePartitionManager`, their state kept by the broker's `ShareStatePersister`)
  ShareFetch and ShareAcknowledge use, and the share-group offsets APIs
  (Describe/Alter/DeleteShareGroupOffsets); a share group's id is refused to the other types' membership APIs;
- the offsets APIs, for every group type, to the one `OffsetManager`;
- DescribeGroups, ListGroups and DeleteGroups to the type of the group named.
"""

from __future__ import annotations

from odradek.cluster.znodes import BrokerInfo
from odradek.coordinator.partitions import Replayed
from odradek.groups.configs import GroupConfigLookup
from odradek.groups.consumer_coordinator import (
    GROUP_TYPE_CONSUMER,
    ConsumerGroupCoordinator,
    ConsumerGroupSettings,
    GroupDescription,
    Heartbeat,
    HeartbeatResult,
    Topics,
)
from odradek.groups.coordinator import GROUP_TYPE_CLASSIC, GroupCoordinator, GroupSettings
from odradek.groups.group import GroupSummary, JoinRequest, JoinResult, SyncResult
from odradek.groups.offset_manager import (
    LATEST_OFFSET_COMMIT_VERSION,
    OffsetManager,
    Offsets,
)
from odradek.groups.offsets import replay_partition
from odradek.groups.schemas import OffsetValue, TopicPartition
from odradek.groups.share_coordinator import (
    GROUP_TYPE_SHARE,
    ShareGroupCoordinator,
    ShareGroupSettings,
    ShareHeartbeat,
)
from odradek.groups.share_state import (
    InMemoryShareStatePersister,
    ShareKey,
    SharePartitionManager,
    SharePartitionSettings,
    ShareStatePersister,
    ShareStateSummary,
)
from odradek.groups.store import GroupStore, LoadedGroup
from odradek.groups.streams_coordinator import (
    GROUP_TYPE_STREAMS,
    CreateTopic,
    StreamsGroupCoordinator,
    StreamsGroupDescription,
    StreamsGroupSettings,
    StreamsHeartbeat,
    StreamsResult,
)
from odradek.protocol.errors import ErrorCode, KafkaError

__all__ = ["GROUP_TYPE_CLASSIC", "GROUP_TYPE_CONSUMER", "GROUP_TYPE_SHARE", "GROUP_TYPE_STREAMS",
           "GroupCoordinatorService"]


class GroupCoordinatorService:
    """Groups of every type on the `__consumer_offsets` partitions this broker leads."""

    def __init__(self, settings: GroupSettings, consumer_settings: ConsumerGroupSettings, store: GroupStore,
                 topics: Topics, share_settings: ShareGroupSettings | None = None,
                 share_partition_settings: SharePartitionSettings | None = None,
                 share_persister: ShareStatePersister | None = None, configs: GroupConfigLookup | None = None,
                 streams_settings: StreamsGroupSettings | None = None, create_topic: CreateTopic | None = None,
                 ) -> None:
        """`configs`: the groups' own configs (GROUP config resources) over the broker's; None: the
        settings for every group. `create_topic`: how streams groups create their internal topics."""
        self.store = store
        self.classic = GroupCoordinator(settings, store)
        self.consumer = ConsumerGroupCoordinator(consumer_settings, store, topics, self.classic, configs)
        self.streams = StreamsGroupCoordinator(streams_settings or StreamsGroupSettings(), store, topics, self.classic,
                                               create_topic, configs)
        self.offsets = OffsetManager(settings.offsets(), store, (self.consumer, self.streams, self.classic))
        self.share_partitions = SharePartitionManager(share_partition_settings or SharePartitionSettings(),
                                                      share_persister or InMemoryShareStatePersister(), configs)
        self.share = ShareGroupCoordinator(share_settings or ShareGroupSettings(), store, topics,
                                           self.share_partitions, configs)

    # ---- life cycle ----
    async def start(self) -> None:
        await self.store.start(self)
        self.offsets.start()

    async def shutdown(self) -> None:
        self.offsets.shutdown()
        await self.share.shutdown()
        await self.streams.shutdown()
        self.share_partitions.shutdown()
        await self.consumer.shutdown()
        await self.classic.shutdown()
        await self.store.shutdown()

    # ---- the CoordinatorShard of __consumer_offsets ----
    def replay(self, records: Replayed, open_txns: dict[int, Replayed]) -> dict[str, LoadedGroup]:
        return replay_partition(records, open_txns)

    def loaded(self, index: int, state: dict[str, LoadedGroup]) -> None:
        consumer = {gid: g for gid, g in state.items() if g.consumer is not None and g.consumer.epoch is not None}
        share = {gid: g.share for gid, g in state.items() if g.share is not None and g.share.epoch is not None}
        streams = {gid: g for gid, g in state.items() if g.streams is not None and g.streams.epoch is not None}
        self.classic.install({gid: g for gid, g in state.items()
                              if gid not in consumer and gid not in share and gid not in streams})
        for gid in [*consumer, *share, *streams]:
            self.classic.drop(gid)
        self.consumer.install(consumer)
        self.share.install(share)
        self.streams.install(streams)
        self.offsets.loaded(state)

    def unloaded(self, index: int) -> None:
        self.classic.unload_partition(index)
        self.consumer.unload_partition(index)
        self.share.unload_partition(index)
        self.streams.unload_partition(index)
        self.offsets.unloaded(index)

    # ---- FindCoordinator, AddOffsetsToTxn ----
    async def coordinator_node(self, group_id: str) -> BrokerInfo:
        """The broker that coordinates `group_id` (creating `__consumer_offsets` on first use)."""
        return await self.store.coordinator_node(group_id)

    def partition_for(self, group_id: str) -> int:
        return self.store.partition_for(group_id)

    def group_type(self, group_id: str) -> str | None:
        """"classic", "consumer", "streams" or "share" for a group this broker serves now, else None."""
        if self.share.is_share_group(group_id):
            return GROUP_TYPE_SHARE
        return self.offsets.group_type(group_id)

    # ---- the classic protocol ----
    # (a consumer group answers its classic members itself; any other group id goes to the classic type)
    async def join(self, req: JoinRequest) -> JoinResult:
        if self.share.is_share_group(req.group_id) or self.streams.is_streams_group(req.group_id):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id)
        joined = await self.consumer.classic_join(req)
        return joined if joined is not None else await self.classic.join(req)

    async def sync(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                   protocol_type: str | None, protocol_name: str | None,
                   assignments: list[tuple[str, bytes]]) -> SyncResult:
        synced = await self.consumer.classic_sync(group_id, generation, member_id, instance_id, protocol_type,
                                                  protocol_name)
        if synced is not None:
            return synced
        return await self.classic.sync(group_id, generation, member_id, instance_id, protocol_type, protocol_name,
                                       assignments)

    async def heartbeat(self, group_id: str, generation: int, member_id: str, instance_id: str | None) -> ErrorCode:
        beat = await self.consumer.classic_heartbeat(group_id, generation, member_id, instance_id)
        return beat if beat is not None else await self.classic.heartbeat(group_id, generation, member_id, instance_id)

    async def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> list[ErrorCode]:
        left = await self.consumer.classic_leave(group_id, members)
        return left if left is not None else await self.classic.leave(group_id, members)

    async def describe(self, group_id: str) -> GroupSummary:
        """DescribeGroups: a classic group's summary (Dead if there is none)."""
        return await self.classic.describe(group_id)

    # ---- the consumer protocol (KIP-848) ----
    async def consumer_heartbeat(self, hb: Heartbeat) -> HeartbeatResult:
        if self.share.is_share_group(hb.group_id) or self.streams.is_streams_group(hb.group_id):
            return HeartbeatResult(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {hb.group_id} is not a consumer group.",
                                   hb.member_id or None, hb.member_epoch)
        return await self.consumer.heartbeat(hb)

    async def consumer_describe(self, group_id: str) -> GroupDescription:
        if self.streams.is_streams_group(group_id):
            return GroupDescription(group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        return await self.consumer.describe(group_id)

    def topic_name(self, topic_id: bytes) -> str:
        return self.consumer.topic_name(topic_id)

    # ---- streams groups (KIP-1071) ----
    async def streams_heartbeat(self, hb: StreamsHeartbeat) -> StreamsResult:
        other = GROUP_TYPE_SHARE if self.share.is_share_group(hb.group_id) else self.offsets.group_type(hb.group_id)
        return await self.streams.heartbeat(hb, None if other == GROUP_TYPE_STREAMS else other)

    async def streams_describe(self, group_id: str) -> StreamsGroupDescription:
        other = self.group_type(group_id)
        return await self.streams.describe(group_id, None if other == GROUP_TYPE_STREAMS else other)

    # ---- share groups (KIP-932) ----
    async def share_heartbeat(self, hb: ShareHeartbeat) -> HeartbeatResult:
        return await self.share.heartbeat(hb, self.offsets.group_type(hb.group_id))

    def share_session_refusal(self, group_id: str, member_id: str) -> tuple[ErrorCode, str] | None:
        """Why a ShareFetch may not open a share session for this member, when this broker coordinates the
        group and so knows its members: the group is no share group (GROUP_ID_NOT_FOUND) or the member is
        not one of its members (UNKNOWN_MEMBER_ID). None otherwise, also where the group is coordinated
        elsewhere or still loading (the share-session cache's per-group bound holds there)."""
        try:
            self.store.check(group_id)
        except KafkaError:
            return None
        if not self.share.is_share_group(group_id):
            return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
        if not self.share.has_member(group_id, member_id):
            return ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of share group {group_id}."
        return None

    async def share_describe(self, group_id: str) -> GroupDescription:
        return await self.share.describe(group_id, self.offsets.group_type(group_id))

    async def share_describe_offsets(self, group_id: str, partitions: dict[bytes, list[int]] | None,
                                     ) -> dict[ShareKey, ShareStateSummary | None]:
        return await self.share.describe_offsets(group_id, self.offsets.group_type(group_id), partitions)

    async def share_alter_offsets(self, group_id: str, offsets: dict[ShareKey, int]) -> None:
        await self.share.alter_offsets(group_id, self.offsets.group_type(group_id), offsets)

    async def share_delete_offsets(self, group_id: str, topic_ids: set[bytes]) -> None:
        await self.share.delete_offsets(group_id, self.offsets.group_type(group_id), topic_ids)

    # ---- every group type ----
    def list_groups(self) -> tuple[ErrorCode, list[tuple[str, str, str, str]]]:
        """(group id, protocol type, state, group type) of every group, sorted; COORDINATOR_LOAD_IN_PROGRESS
        while a partition is still loading."""
        err, classic = self.classic.list_groups(None)
        listed = [(gid, ptype, state, GROUP_TYPE_CLASSIC) for gid, ptype, state in classic]
        listed += [(gid, ptype, state, GROUP_TYPE_CONSUMER) for gid, ptype, state in self.consumer.list_groups()]
        listed += [(gid, ptype, state, GROUP_TYPE_SHARE) for gid, ptype, state in self.share.list_groups()]
        listed += [(gid, ptype, state, GROUP_TYPE_STREAMS) for gid, ptype, state in self.streams.list_groups()]
        return err, sorted(listed)

    async def delete_group(self, group_id: str) -> ErrorCode:
        if self.share.is_share_group(group_id):
            return await self.share.delete_group(group_id)
        if self.offsets.type_of(group_id) is self.consumer:
            return await self.consumer.delete_group(group_id)
        if self.streams.is_streams_group(group_id):
            return await self.streams.delete_group(group_id)
        return await self.classic.delete_group(group_id)

    # ---- offsets (OffsetManager) ----
    def metadata_too_large(self, metadata: str | None) -> bool:
        return self.offsets.metadata_too_large(metadata)

    async def commit(self, group_id: str, generation_or_epoch: int, member_id: str, instance_id: str | None,
                     offsets: Offsets, api_version: int = LATEST_OFFSET_COMMIT_VERSION) -> ErrorCode:
        if self.share.is_share_group(group_id):
            return ErrorCode.GROUP_ID_NOT_FOUND  # a share group keeps no committed offsets
        return await self.offsets.commit(group_id, generation_or_epoch, member_id, instance_id, offsets, api_version)

    async def txn_commit(self, group_id: str, producer_id: int, producer_epoch: int, generation_or_epoch: int,
                         member_id: str, instance_id: str | None, offsets: Offsets) -> ErrorCode:
        if self.share.is_share_group(group_id):
            return ErrorCode.GROUP_ID_NOT_FOUND
        return await self.offsets.txn_commit(group_id, producer_id, producer_epoch, generation_or_epoch, member_id,
                                             instance_id, offsets)

    def complete_transaction(self, partition: int, producer_id: int, commit: bool) -> None:
        self.offsets.complete_transaction(partition, producer_id, commit)

    def unstable(self, group_id: str, tp: TopicPartition) -> bool:
        return self.offsets.unstable(group_id, tp)

    async def fetch_offsets(self, group_id: str, partitions: list[TopicPartition] | None,
                            member_id: str | None = None, member_epoch: int = -1,
                            ) -> list[tuple[TopicPartition, OffsetValue | None]]:
        return await self.offsets.fetch(group_id, partitions, member_id, member_epoch)

    async def delete_offsets(self, group_id: str, partitions: list[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        return await self.offsets.delete(group_id, partitions)

    def topic_deleted(self, topic: str, topic_id: bytes) -> None:
        """Drop the deleted topic's committed offsets and share-group state from the groups this broker
        coordinates."""
        self.offsets.topic_deleted(topic)
        self.share.topic_deleted(topic_id)

    async def expire_offsets(self, now: int) -> int:
        return await self.offsets.expire(now)
