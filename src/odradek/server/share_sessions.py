"""Share sessions (KIP-932): the partitions a share consumer fetches, kept by the broker between its
ShareFetch requests, keyed by (group id, member id), like fetch sessions (`fetch_sessions.py`).

A ShareFetch with epoch 0 opens a session (replacing the member's previous one), -1 closes it (after its
acknowledgements are applied; the records the member still holds in the session's partitions are given
back), any other epoch must be the session's next one (no session: SHARE_SESSION_NOT_FOUND; another
epoch: INVALID_SHARE_SESSION_EPOCH) and moves it on. ShareAcknowledge never opens a session. At most
`group.share.max.share.sessions` sessions exist, and at most a group's member limit
(`group.share.max.size`) of one group, so the sessions of one group (made-up member ids of a group whose
coordinator is another broker, which cannot check them) never fill the cache for the others
(SHARE_SESSION_LIMIT_REACHED). No I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from odradek.protocol.errors import ErrorCode, KafkaError

OPEN_EPOCH, CLOSE_EPOCH = 0, -1
TopicPartitionId = tuple[bytes, int]  # (topic id, partition)


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    epoch: int = 1  # what the next request must carry
    partitions: dict[TopicPartitionId, None] = field(default_factory=dict)  # ordered set


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1


class ShareSessionCache:
    def __init__(self, max_sessions: int) -> None:
        self.max_sessions = max_sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        self.per_group: dict[str, int] = {}

    def open(self, group_id: str, member_id: str, group_limit: int) -> ShareSession:
        """A new session for the member (replacing its previous one), unless the cache holds
        `max_sessions` or the group `group_limit` sessions."""
        key = (group_id, member_id)
        if key not in self.sessions:
            if len(self.sessions) >= self.max_sessions:
                raise KafkaError(ErrorCode.SHARE_SESSION_LIMIT_REACHED,
                                 f"The share session cache is full ({self.max_sessions} sessions).")
            if self.per_group.get(group_id, 0) >= group_limit:
                raise KafkaError(ErrorCode.SHARE_SESSION_LIMIT_REACHED,
                                 f"Group {group_id} has the most share sessions it may have ({group_limit}).")
            self.per_group[group_id] = self.per_group.get(group_id, 0) + 1
        session = self.sessions[key] = ShareSession(group_id, member_id)
        return session

    def current(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """The member's session for a request with `epoch` (neither 0 nor -1 here), moved to its next
        epoch, or the Kafka error."""
        session = self.sessions.get((group_id, member_id))
        if session is None:
            raise KafkaError(ErrorCode.SHARE_SESSION_NOT_FOUND,
                             f"No share session for member {member_id} of group {group_id}.")
        if epoch != session.epoch:
            raise KafkaError(ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                             f"The share session epoch is {session.epoch}, the request says {epoch}.")
        session.epoch = next_epoch(epoch)
        return session

    def closing(self, group_id: str, member_id: str) -> ShareSession:
        """The session a request with epoch -1 closes (it stays until `close`)."""
        session = self.sessions.get((group_id, member_id))
        if session is None:
            raise KafkaError(ErrorCode.SHARE_SESSION_NOT_FOUND,
                             f"No share session for member {member_id} of group {group_id}.")
        return session

    def close(self, session: ShareSession) -> None:
        if self.sessions.get((session.group_id, session.member_id)) is session:
            del self.sessions[(session.group_id, session.member_id)]
            left = self.per_group[session.group_id] - 1
            if left:
                self.per_group[session.group_id] = left
            else:
                del self.per_group[session.group_id]
