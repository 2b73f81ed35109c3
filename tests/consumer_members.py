"""In-process KIP-848 members for the consumer group unit tests: the topics a coordinator sees, and a member
that does what the heartbeat answers say."""

from __future__ import annotations

from typing import Any

from odradek.groups.consumer_coordinator import ConsumerGroupCoordinator, ConsumerGroupSettings, Heartbeat
from odradek.groups.consumer_group import TopicInfo
from odradek.protocol.errors import ErrorCode

SETTINGS = ConsumerGroupSettings(session_timeout_ms=200, heartbeat_interval_ms=50)  # quick timers


def tps(a: dict[bytes, frozenset[int]]) -> set[tuple[bytes, int]]:
    """The (topic id, partition) pairs of an assignment."""
    return {(t, p) for t, ps in a.items() for p in ps}


class FakeTopics:
    def __init__(self, **counts: int) -> None:
        self.by_name = {name: TopicInfo(bytes([i + 1]) * 16, n) for i, (name, n) in enumerate(counts.items())}

    def info(self, name: str) -> TopicInfo | None:
        return self.by_name.get(name)

    def names(self) -> list[str]:
        return list(self.by_name)

    def name_of(self, topic_id: bytes) -> str | None:
        return next((n for n, i in self.by_name.items() if i.topic_id == topic_id), None)


class Client:
    """A member that does what the answers say: takes the assignment given, revokes what is not in it."""

    def __init__(self, cg: ConsumerGroupCoordinator, member_id: str, topics: list[str] | None = None,
                 regex: str | None = None, instance: str | None = None) -> None:
        self.cg, self.member_id, self.topics, self.regex, self.instance = cg, member_id, topics, regex, instance
        self.epoch = 0
        self.owned: dict[bytes, frozenset[int]] = {}

    async def beat(self, group: str = "g") -> Any:
        joining = self.epoch == 0
        res = await self.cg.heartbeat(Heartbeat(
            group, self.member_id, self.epoch, instance_id=self.instance,
            rebalance_timeout_ms=1000 if joining else -1,
            subscribed_topic_names=(self.topics if self.topics is not None else ([] if self.regex is None else None))
            if joining else None,
            subscribed_topic_regex=self.regex if joining else None, owned=dict(self.owned),
            client_id="c", client_host="/h"))
        if res.error == ErrorCode.NONE:
            self.epoch = res.member_epoch
            if res.assignment is not None:
                self.owned = {t: ps for t, ps in res.assignment.items() if ps}
        return res

    def partitions(self) -> set[tuple[bytes, int]]:
        return tps(self.owned)
