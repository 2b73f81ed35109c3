"""Replica fetchers: for each leader broker (times num.replica.fetchers), one task that fetches the
partitions this broker follows from that leader with its replica id, appends what it gets to the local
logs (offsets kept), truncates where the leader says the logs diverge, and moves the follower's high
watermark."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from kafka.protocol.consumer import ListOffsetsRequest

from odradek.protocol import replica_fetch
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.replica_fetch import FetchedPartition, FetchPosition
from odradek.protocol.transport import AsyncConnection

if TYPE_CHECKING:
    from odradek.replication.manager import ReplicaManager
    from odradek.replication.partition import Partition

log = logging.getLogger("odradek.fetcher")


class ReplicaFetcher:
    def __init__(self, manager: ReplicaManager, leader_id: int, fetcher_id: int) -> None:
        self.manager = manager
        self.leader_id = leader_id
        self.fetcher_id = fetcher_id
        self.name = f"ReplicaFetcherThread-{fetcher_id}-{leader_id}"
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.delayed: dict[tuple[str, int], float] = {}
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._client: AsyncConnection | None = None
        self._stopping = False

    def add(self, part: Partition) -> None:
        self.partitions[(part.topic, part.index)] = part
        self.delayed.pop((part.topic, part.index), None)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
            log.info("[%s] Starting; added partition %s", self.name, part.name)
        self._wakeup.set()

    def remove(self, part: Partition) -> bool:
        return self.partitions.pop((part.topic, part.index), None) is not None

    async def stop(self) -> None:
        self._stopping = True
        self._wakeup.set()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
        if self._client is not None:
            await self._client.close()

    # ---- loop ----------------------------------------------------------------------------------
    async def _run(self) -> None:
        cfg = self.manager.config
        backoff = cfg.get("replica.fetch.backoff.ms") / 1000
        while not self._stopping:
            ready = self._ready_partitions()
            if not ready:
                self._wakeup.clear()
                try:
                    await asyncio.wait_for(self._wakeup.wait(), backoff)
                except TimeoutError:
                    pass
                continue
            try:
                client = await self._connect()
                await self._fetch_once(client, ready)
            except asyncio.CancelledError:
                raise
            except (OSError, LookupError) as exc:
                log.warning("[%s] Error fetching from broker %d: %s", self.name, self.leader_id, exc or type(exc).__name__)
                await self._drop_client()
                await asyncio.sleep(backoff)
            except Exception as exc:
                log.error("[%s] Unexpected error: %s", self.name, exc, exc_info=exc)
                await self._drop_client()
                await asyncio.sleep(backoff)

    def _ready_partitions(self) -> list[Partition]:
        loop = asyncio.get_running_loop()
        now = loop.time()
        return [p for k, p in self.partitions.items() if self.delayed.get(k, 0) <= now]

    async def _connect(self) -> AsyncConnection:
        if self._client is not None and self._client.connected:
            return self._client
        info = self.manager.metadata.brokers.get(self.leader_id)
        if info is None:
            raise LookupError(f"broker {self.leader_id} is not registered")
        self._client = AsyncConnection(info.host, info.port, f"broker-{self.manager.broker_id}-fetcher-{self.fetcher_id}",
                                       timeout_s=self.manager.config.get("replica.socket.timeout.ms") / 1000,
                                       security=self.manager.inter_broker_security)
        await self._client.connect()
        return self._client

    async def _drop_client(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    def _delay(self, part: Partition) -> None:
        backoff = self.manager.config.get("replica.fetch.backoff.ms") / 1000
        self.delayed[(part.topic, part.index)] = asyncio.get_running_loop().time() + backoff

    # ---- one fetch -----------------------------------------------------------------------------
    async def _fetch_once(self, client: AsyncConnection, parts: list[Partition]) -> None:
        cfg = self.manager.config
        max_bytes = cfg.get("replica.fetch.max.bytes")
        by_topic: dict[str, list[FetchPosition]] = {}
        sent: dict[tuple[str, int], tuple[Partition, int, int]] = {}
        for p in parts:
            lg = p.log
            leo = lg.log_end_offset
            by_topic.setdefault(p.topic, []).append(FetchPosition(
                p.index, p.leader_epoch, leo, lg.epochs.latest_epoch, lg.log_start_offset, max_bytes))
            sent[(p.topic, p.index)] = (p, p.leader_epoch, leo)
        body = replica_fetch.encode_request(
            self.manager.broker_id, cfg.get("replica.fetch.wait.max.ms"), cfg.get("replica.fetch.min.bytes"),
            cfg.get("replica.fetch.response.max.bytes"), list(by_topic.items()))
        answer = await client.request_raw(replica_fetch.API_KEY, replica_fetch.VERSION, True, body)
        resp = replica_fetch.parse_response(answer)
        if resp.error_code:
            raise ConnectionError(f"fetch failed with {ErrorCode(resp.error_code).name}")
        for topic, fetched in resp.topics:
            for pr in fetched:
                entry = sent.get((topic, pr.partition))
                if entry is None:
                    continue
                part, epoch, offset = entry
                if self.partitions.get((part.topic, part.index)) is not part or part.leader_epoch != epoch:
                    continue  # leadership moved while the fetch was in flight
                await self._process(client, part, offset, pr)

    async def _process(self, client: AsyncConnection, part: Partition, offset: int, pr: FetchedPartition) -> None:
        code = pr.error_code
        if code == ErrorCode.NONE:
            div = pr.diverging_epoch
            if div is not None and div != (-1, -1):
                part.truncate_to_diverging(*div)
                return
            records = pr.records
            if records:
                if part.log.log_end_offset != offset:
                    return
                try:
                    info = part.log.append_as_follower(records)
                    if info.durable is not None:  # flush.messages / flush.ms: on disk before the next fetch
                        await asyncio.wrap_future(info.durable)
                except (KafkaError, OSError) as exc:
                    log.error("[%s] Cannot append to %s at offset %d: %s", self.name, part.name, offset, exc)
                    self._delay(part)
                    return
                self.manager.on_follower_append(part)
            part.set_follower_hw(pr.high_watermark)
            self._follow_log_start(part, pr.log_start_offset)
        elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
            await self._handle_out_of_range(client, part)
        else:
            if code not in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH,
                            ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                            ErrorCode.LEADER_NOT_AVAILABLE):
                log.warning("[%s] Error for partition %s at offset %d: %s", self.name, part.name, offset,
                            ErrorCode(code).name if code in ErrorCode._value2member_map_ else code)
            self._delay(part)

    def _follow_log_start(self, part: Partition, leader_log_start: int) -> None:
        lg = part.log
        if lg.log_start_offset < leader_log_start <= lg.high_watermark:
            try:
                lg.delete_records_before(leader_log_start)
            except KafkaError:
                pass

    async def _handle_out_of_range(self, client: AsyncConnection, part: Partition) -> None:
        """Our end is outside the leader's log: above its end (truncate down) or below its start (start over)."""
        earliest = await self._leader_offset(client, part, -2)
        latest = await self._leader_offset(client, part, -1)
        lg = part.log
        if lg.log_end_offset > latest:
            log.info("[%s] Truncating %s from %d to the leader's end offset %d", self.name, part.name,
                     lg.log_end_offset, latest)
            lg.truncate_to(latest)
        elif lg.log_end_offset < earliest:
            log.info("[%s] %s is behind the leader's log start %d: starting over there", self.name, part.name, earliest)
            lg.truncate_fully_and_start_at(earliest)
        else:
            self._delay(part)

    async def _leader_offset(self, client: AsyncConnection, part: Partition, ts: int) -> int:
        req = ListOffsetsRequest(replica_id=self.manager.broker_id, isolation_level=0, topics=[
            ListOffsetsRequest.ListOffsetsTopic(name=part.topic, partitions=[
                ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                    partition_index=part.index, current_leader_epoch=part.leader_epoch, timestamp=ts)])])
        resp = await client.request(req, 4)
        p = resp.topics[0].partitions[0]
        if p.error_code:
            raise ConnectionError(f"ListOffsets failed with error {p.error_code}")
        return p.offset
