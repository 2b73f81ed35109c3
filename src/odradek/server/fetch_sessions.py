"""Incremental fetch sessions (KIP-227): the partitions a fetcher follows, kept by the broker between its
Fetch requests, so that an incremental request sends only what changed (new offsets, added and removed
partitions) and its response holds only partitions with news (records, a moved high watermark or log
start, an error). The cache holds `max.incremental.fetch.session.cache.slots` sessions; when full, the
least recently used one makes room if it has been idle for two minutes (as in Kafka). No I/O here."""

from __future__ import annotations

import random
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

INITIAL_EPOCH = 0  # a full fetch that asks for a new session
FINAL_EPOCH = -1  # a full fetch without (or closing) a session


@dataclass(slots=True)
class Want:
    """What a fetcher asks of one partition (from a request or a session)."""

    topic: str
    topic_id: bytes
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    # what the fetcher was last told, to answer only with news (-1: nothing yet, so the next answer tells)
    sent_high_watermark: int = -1
    sent_log_start: int = -1


@dataclass
class FetchSession:
    session_id: int
    epoch: int  # the epoch the next incremental request must carry
    wants: dict[tuple[str, int], Want] = field(default_factory=dict)
    last_used: float = 0.0

    def must_answer(self, want: Want, error: int, high_watermark: int, log_start: int, has_records: bool,
                    diverging: bool) -> bool:
        """Whether the partition goes in this response; remembers what it was told."""
        news = has_records or error != 0 or diverging
        if high_watermark != want.sent_high_watermark:
            news = True
            want.sent_high_watermark = high_watermark
        if log_start != want.sent_log_start:
            news = True
            want.sent_log_start = log_start
        if error != 0:
            want.sent_high_watermark = -1  # once the error clears, the partition is sent again
        return news


class FetchSessionCache:
    def __init__(self, slots: int, eviction_ms: int = 120_000, clock: Callable[[], float] = time.monotonic) -> None:
        self.slots = slots
        self.eviction_s = eviction_ms / 1000
        self.clock = clock
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()  # least recently used first
        self._ids = random.Random()

    def __len__(self) -> int:
        return len(self._sessions)

    def create(self, wants: list[Want]) -> FetchSession | None:
        """A new session for `wants` (epoch 1 next), or None when no slot is free or can be freed."""
        if self.slots <= 0 or not wants:
            return None
        now = self.clock()
        if len(self._sessions) >= self.slots:
            oldest_id, oldest = next(iter(self._sessions.items()))
            if now - oldest.last_used < self.eviction_s:
                return None
            del self._sessions[oldest_id]
        session_id = next(i for i in iter(lambda: self._ids.randrange(1, 2**31), None)
                          if i not in self._sessions)
        session = FetchSession(session_id, 1, {(w.topic, w.partition): w for w in wants}, now)
        self._sessions[session_id] = session
        return session

    def get(self, session_id: int) -> FetchSession | None:
        session = self._sessions.get(session_id)
        if session is not None:
            session.last_used = self.clock()
            self._sessions.move_to_end(session_id)
        return session

    def remove(self, session_id: int) -> None:
        self._sessions.pop(session_id, None)

    def update(self, session: FetchSession, changed: list[Want], forgotten: list[tuple[str, int]]) -> None:
        """Apply an incremental request: new or moved partitions, then the forgotten ones."""
        for want in changed:
            key = (want.topic, want.partition)
            old = session.wants.get(key)
            if old is not None:  # keep what the fetcher was last told
                want.sent_high_watermark, want.sent_log_start = old.sent_high_watermark, old.sent_log_start
            session.wants[key] = want
        for key in forgotten:
            session.wants.pop(key, None)
        session.epoch = next_epoch(session.epoch)


def next_epoch(epoch: int) -> int:
    """Epochs run 1..INT32_MAX, then wrap to 1 (0 and -1 have their own meanings)."""
    return 1 if epoch >= 2**31 - 1 else epoch + 1

