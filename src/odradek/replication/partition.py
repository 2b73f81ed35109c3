"""One partition replica on this broker: its log, leadership and leader epoch, ISR and high watermark,
the progress of its followers (when leader), and the waiters parked on it (long-poll fetches,
acks=all produces). A replica whose log dir failed is offline (`go_offline`) until the broker restarts."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from odradek.cluster.znodes import PartitionState
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.storage.log import AppendInfo, FetchDataInfo, Log
from odradek.storage.log_validator import AppendOrigin
from odradek.storage.region import FileRegion

log = logging.getLogger("odradek.partition")


def now_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclass(slots=True)
class FollowerState:
    """What the leader knows of one follower, from its fetches."""

    log_end_offset: int = -1
    last_caught_up_ms: int = 0
    leader_leo_at_last_fetch: int = -1
    last_fetch_ms: int = 0


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
        self.zk_version = 0
        self.controller_epoch = 0
        self.min_insync_replicas = 1
        self.followers: dict[int, FollowerState] = {}
        self.isr_change_pending = False
        self.offline = False  # its log dir failed: every request for it answers KAFKA_STORAGE_ERROR
        # long-polling fetches: consumers' wake on appends and high watermark moves, followers' (which read
        # to the log end) on appends only, as Kafka's delayed fetches complete
        self._data_waiters: list[asyncio.Future[None]] = []
        self._replica_waiters: list[asyncio.Future[None]] = []
        self._hw_waiters: list[tuple[int, asyncio.Future[None]]] = []

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.index}"

    @property
    def prefix(self) -> str:
        return f"[Partition {self.name} broker={self.broker_id}]"

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    def go_offline(self) -> None:
        """The log dir failed: acks=all produces waiting here fail with KAFKA_STORAGE_ERROR, long polls
        wake (and their next read fails)."""
        self.offline = True
        self.leader_id = -1  # leads nothing here any more (the controller moves leadership)
        self._fail_hw_waiters(ErrorCode.KAFKA_STORAGE_ERROR, f"the log dir of {self.name} failed")
        self._wake_data()

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    def _adopt(self, state: PartitionState, replicas: list[int]) -> None:
        self.isr = list(state.isr)
        self.replicas = list(replicas)
        self.zk_version = state.zk_version
        self.controller_epoch = state.controller_epoch

    def make_leader(self, state: PartitionState, replicas: list[int]) -> None:
        new_term = not self.is_leader or state.leader_epoch != self.leader_epoch
        self.leader_id = self.broker_id
        self.leader_epoch = state.leader_epoch
        self._adopt(state, replicas)
        if new_term:
            self.log.epochs.assign(state.leader_epoch, self.log.log_end_offset)
            now = now_ms()
            # followers in the ISR get a full lag window to show up before they can be dropped
            self.followers = {
                r: FollowerState(last_caught_up_ms=now if r in self.isr else 0)
                for r in replicas if r != self.broker_id
            }
            log.info("%s Leader %s starting at leader epoch %d from offset %d with high watermark %d, isr %s",
                     self.prefix, self.name, state.leader_epoch, self.log.log_end_offset, self.high_watermark,
                     ",".join(map(str, self.isr)))
        else:  # same term, new assignment (a reassignment adds or removes replicas)
            for r in replicas:
                if r != self.broker_id and r not in self.followers:
                    self.followers[r] = FollowerState()
            for r in [r for r in self.followers if r not in replicas]:
                del self.followers[r]
        self._maybe_advance_hw()
        self._wake_data()

    def make_follower(self, state: PartitionState, replicas: list[int]) -> bool:
        """Returns whether the leader or its epoch changed (the fetcher must restart for this partition)."""
        changed = state.leader != self.leader_id or state.leader_epoch != self.leader_epoch
        if changed:
            log.info("%s leader changed to %d (epoch %d)", self.prefix, state.leader, state.leader_epoch)
        self.leader_id = state.leader
        self.leader_epoch = state.leader_epoch
        self._adopt(state, replicas)
        self.followers = {}
        if changed:
            self._fail_hw_waiters()
        self._wake_data()
        return changed

    # ---- leader side ---------------------------------------------------------------------------
    def append_as_leader(self, records: memoryview, required_acks: int,
                         origin: AppendOrigin = AppendOrigin.CLIENT, transaction_version: int = 0,
                         verification_guard: int | None = None) -> AppendInfo:
        """Append as leader; a coordinator (transaction markers, transactional offset commits) may write
        control batches, which clients may not; a marker comes with its transaction's version, a client's
        transactional batch with the guard of its verification when verification is on."""
        if not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"This broker is not the leader of {self.name}")
        if required_acks == -1 and len(self.isr) < self.min_insync_replicas:
            raise KafkaError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"The size of the current ISR {self.isr} is insufficient to satisfy the min.isr requirement "
                f"of {self.min_insync_replicas} for partition {self.name}",
            )
        info = self.log.append_as_leader(records, self.leader_epoch, origin=origin,
                                         transaction_version=transaction_version,
                                         verification_guard=verification_guard)
        self._maybe_advance_hw()
        self._wake_data()
        return info

    def start_transaction_verification(self, producer_id: int, sequence: int, epoch: int) -> int:
        """As leader: the guard of a verification of the producer's transaction here (`Log`'s)."""
        if not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"This broker is not the leader of {self.name}")
        return self.log.start_transaction_verification(producer_id, sequence, epoch)

    def update_follower(self, replica_id: int, fetch_offset: int) -> None:
        """A follower fetched from `fetch_offset`: that is its log end offset."""
        st = self.followers.get(replica_id)
        if st is None:
            return
        now = now_ms()
        leader_leo = self.log.log_end_offset
        if fetch_offset >= leader_leo:
            st.last_caught_up_ms = now
        elif fetch_offset >= st.leader_leo_at_last_fetch >= 0:
            st.last_caught_up_ms = max(st.last_caught_up_ms, st.last_fetch_ms)
        st.leader_leo_at_last_fetch = leader_leo
        st.last_fetch_ms = now
        st.log_end_offset = fetch_offset
        self._maybe_advance_hw()

    def can_join_isr(self, replica_id: int) -> bool:
        """A follower outside the ISR that has just fetched from at least the high watermark and the start
        of the current leader epoch may join it (only the fetching replica is judged, as Kafka does: a
        dead follower's last known offset never brings it back)."""
        st = self.followers.get(replica_id)
        if st is None or replica_id in self.isr or replica_id not in self.replicas:
            return False
        epoch_start = self.log.epochs.end_offset_for(self.leader_epoch - 1, self.log.log_end_offset)[1]
        return st.log_end_offset >= self.high_watermark and st.log_end_offset >= max(epoch_start, 0)

    def isr_to_shrink(self, lag_time_ms: int) -> list[int]:
        now = now_ms()
        return [
            r for r in self.isr
            if r != self.broker_id and now - self.followers.get(r, FollowerState()).last_caught_up_ms > lag_time_ms
        ]

    def set_isr(self, isr: list[int], zk_version: int) -> None:
        self.isr = list(isr)
        self.zk_version = zk_version
        self._maybe_advance_hw()

    def _maybe_advance_hw(self) -> None:
        if not self.is_leader:
            return
        hw = self.log.log_end_offset
        for r in self.isr:
            if r != self.broker_id:
                st = self.followers.get(r)
                hw = min(hw, st.log_end_offset if st is not None else -1)
        if hw > self.log.high_watermark:
            self.log.high_watermark = hw
            self._wake_hw()

    def diverging_epoch(self, last_fetched_epoch: int, fetch_offset: int) -> tuple[int, int] | None:
        """Where a follower's log diverges from ours, from the epoch of its last fetched batch (KIP-595's
        check on the fetch path, equivalent to an OffsetForLeaderEpoch round trip)."""
        if last_fetched_epoch < 0:
            return None
        epoch, end = self.log.epochs.end_offset_for(last_fetched_epoch, self.log.log_end_offset)
        if epoch < 0:
            return -1, self.high_watermark
        if epoch < last_fetched_epoch or end < fetch_offset:
            return epoch, end
        return None

    # ---- follower side -------------------------------------------------------------------------
    def truncate_to_diverging(self, epoch: int, end_offset: int) -> int:
        """Drop our tail where it diverges from the leader's log; returns the new log end offset."""
        mine_epoch, mine_end = self.log.epochs.end_offset_for(epoch, self.log.log_end_offset) if epoch >= 0 else (-1, -1)
        target = min(end_offset, self.log.high_watermark if mine_epoch < 0 else mine_end)
        if target < self.log.log_end_offset:
            log.info("%s Truncating to offset %d after a divergence at epoch %d (leader end offset %d)",
                     self.prefix, target, epoch, end_offset)
        # also at or past the end: that drops an epoch of ours the leader never had (Log.truncate_to)
        self.log.truncate_to(max(target, self.log.log_start_offset))
        return self.log.log_end_offset

    def set_follower_hw(self, leader_hw: int) -> None:
        hw = min(leader_hw, self.log.log_end_offset)
        if hw > self.log.high_watermark:
            self.log.high_watermark = hw

    # ---- reads and waiting ---------------------------------------------------------------------
    def read(self, offset: int, max_bytes: int, replica: bool, min_one: bool, read_committed: bool = False,
             zero_copy: bool = False) -> FetchDataInfo[bytes | FileRegion]:
        """Followers read to the log end, consumers to the high watermark, read_committed consumers to the
        last stable offset. `zero_copy`: the records as a FileRegion (see Log.read)."""
        upper = None if replica else self.log.last_stable_offset if read_committed else self.log.high_watermark
        return self.log.read(offset, max_bytes, max_offset=upper, min_one_message=min_one, zero_copy=zero_copy)

    def data_waiter(self, replica: bool = False) -> asyncio.Future[None]:
        """Resolves when a fetch parked here should read again: on an append or a change of leadership,
        and for a consumer (not a `replica`) also when the high watermark moves."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        (self._replica_waiters if replica else self._data_waiters).append(fut)
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
        self._wake_consumers()
        waiters, self._replica_waiters = self._replica_waiters, []
        for f in waiters:
            if not f.done():
                f.set_result(None)

    def _wake_consumers(self) -> None:
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
        self._wake_consumers()

    def _fail_hw_waiters(self, code: ErrorCode = ErrorCode.NOT_LEADER_OR_FOLLOWER, why: str = "") -> None:
        for _off, f in self._hw_waiters:
            if not f.done():
                f.set_exception(KafkaError(code, why or f"leadership of {self.name} moved"))
        self._hw_waiters = []
