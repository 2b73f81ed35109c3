"""One partition replica on this broker: its log, leadership and leader epoch, ISR and high watermark,
and the waiters parked on it (long-poll fetches, acks=all produces)."""

from __future__ import annotations

import asyncio
import logging

from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.storage.log import AppendInfo, FetchDataInfo, Log

log = logging.getLogger("odradek.partition")


class Partition:
    def __init__(self, topic: str, index: int, broker_id: int, log_: Log) -> None:
        self.topic = topic
        self.index = index
        self.broker_id = broker_id
        self.log = log_
        self.leader_id = -1
        self.leader_epoch = -1
        self.replicas: list[int] = []
        self.isr: list[int] = []
        self.min_insync_replicas = 1
        self._data_waiters: list[asyncio.Future[None]] = []
        self._hw_waiters: list[tuple[int, asyncio.Future[None]]] = []

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.index}"

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    def make_leader(self, leader_epoch: int, isr: list[int], replicas: list[int]) -> None:
        changed = not self.is_leader or leader_epoch != self.leader_epoch
        self.leader_id = self.broker_id
        self.leader_epoch = leader_epoch
        self.isr = list(isr)
        self.replicas = list(replicas)
        if changed:
            log.info("[Partition %s broker=%d] Leader %s starting at leader epoch %d from offset %d, isr %s",
                     self.name, self.broker_id, self.name, leader_epoch, self.log.log_end_offset, isr)
        self._maybe_advance_hw()

    def make_follower(self, leader_id: int, leader_epoch: int, isr: list[int], replicas: list[int]) -> None:
        if leader_id != self.leader_id:
            log.info("[Partition %s broker=%d] leader changed to %d (epoch %d)", self.name, self.broker_id,
                     leader_id, leader_epoch)
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self.isr = list(isr)
        self.replicas = list(replicas)
        self._wake_all()

    # ---- leader side ---------------------------------------------------------------------------
    def append_as_leader(self, records: memoryview, required_acks: int) -> AppendInfo:
        if not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"This broker is not the leader of {self.name}")
        if required_acks == -1 and len(self.isr) < self.min_insync_replicas:
            raise KafkaError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"The size of the current ISR {self.isr} is insufficient to satisfy the min.isr requirement "
                f"of {self.min_insync_replicas} for partition {self.name}",
            )
        info = self.log.append_as_leader(records, self.leader_epoch)
        self._maybe_advance_hw()
        self._wake_data()
        return info

    def _maybe_advance_hw(self) -> None:
        # With replication, the HW is the minimum LEO over the ISR; a sole in-sync replica is its own LEO.
        if self.is_leader and self.isr == [self.broker_id]:
            leo = self.log.log_end_offset
            if leo > self.log.high_watermark:
                self.log.high_watermark = leo
                self._wake_hw()

    def read(self, offset: int, max_bytes: int, replica: bool, min_one: bool) -> FetchDataInfo:
        upper = None if replica else self.log.high_watermark
        return self.log.read(offset, max_bytes, max_offset=upper, min_one_message=min_one)

    # ---- waiting -------------------------------------------------------------------------------
    def data_waiter(self) -> asyncio.Future[None]:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._data_waiters.append(fut)
        return fut

    def hw_waiter(self, offset: int) -> asyncio.Future[None]:
        """Resolves once the high watermark reaches `offset`."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self.log.high_watermark >= offset:
            fut.set_result(None)
        else:
            self._hw_waiters.append((offset, fut))
        return fut

    def _wake_data(self) -> None:
        waiters, self._data_waiters = self._data_waiters, []
        for f in waiters:
            if not f.done():
                f.set_result(None)

    def _wake_hw(self) -> None:
        hw = self.log.high_watermark
        keep: list[tuple[int, asyncio.Future[None]]] = []
        for off, f in self._hw_waiters:
            if f.done():
                continue
            if hw >= off:
                f.set_result(None)
            else:
                keep.append((off, f))
        self._hw_waiters = keep
        self._wake_data()

    def _wake_all(self) -> None:
        self._wake_data()
        for _off, f in self._hw_waiters:
            if not f.done():
                f.set_exception(KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"leadership of {self.name} moved"))
        self._hw_waiters = []
