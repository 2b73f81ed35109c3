"""RangeReader over offsets that hold no record (transaction markers, aborted records), with a stand-in
consumer: the read ends when the consumer's position reaches the range end, with no record at end - 1,
no end-of-partition event, no timeout and no data-loss report."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install -e '.[spark]')")

from confluent_kafka import TopicPartition  # noqa: E402

from odradek.spark import fetcher  # noqa: E402
from odradek.spark.offsets import TP, OffsetRange  # noqa: E402


class Msg:
    def __init__(self, offset: int) -> None:
        self._offset = offset

    def offset(self) -> int:
        return self._offset

    def error(self) -> None:
        return None

    def key(self) -> None:
        return None

    def value(self) -> bytes:
        return b"v%d" % self._offset

    def timestamp(self) -> tuple[int, int]:
        return (1, 1000)

    def headers(self) -> None:
        return None


class GappyConsumer:
    """Records at `records`; everything else up to `end` is markers or aborted: consumed (the position
    moves past it) but never returned. No end-of-partition event (as when an open transaction follows)."""

    def __init__(self, conf: dict[str, Any], records: list[int], end: int) -> None:
        self.conf = conf
        self.records = records
        self.end = end
        self.pos = -1001
        self.watermark_calls = 0

    def assign(self, tps: list[TopicPartition]) -> None:
        self.pos = tps[0].offset

    def consume(self, num_messages: int, timeout: float) -> list[Msg]:
        out = [Msg(o) for o in self.records if o >= self.pos][:num_messages]
        self.pos = out[-1].offset() + 1 if len(out) == num_messages else self.end
        return out

    def position(self, tps: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(tps[0].topic, tps[0].partition, self.pos)]

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float) -> tuple[int, int]:
        self.watermark_calls += 1
        return (0, self.end)

    def close(self) -> None:
        pass


@pytest.mark.parametrize("records,until,want", [
    ([0, 1, 2, 3, 4, 6, 7], 9, [0, 1, 2, 3, 4, 6, 7]),  # 5 and 8 are markers, the range ends on one
    ([0, 1, 2], 12, [0, 1, 2]),  # an aborted transaction and its marker fill [3, 12)
    ([], 5, []),  # nothing but aborted records and markers
])
def test_the_read_ends_at_the_consumers_position(monkeypatch: pytest.MonkeyPatch, records: list[int], until: int,
                                                 want: list[int]) -> None:
    made: list[GappyConsumer] = []

    def consumer(conf: dict[str, Any]) -> GappyConsumer:
        made.append(GappyConsumer(conf, records, until))
        return made[-1]

    monkeypatch.setattr(fetcher, "Consumer", consumer)
    reader = fetcher.RangeReader({"isolation.level": "read_committed"}, OffsetRange(TP("t", 0), 0, until),
                                 include_headers=False, fail_on_data_loss=True, poll_timeout_ms=5_000)
    got = [o for b in reader.batches() for o in b.column(4).to_pylist()]
    assert got == want
    assert made[0].conf["isolation.level"] == "read_committed"
    assert made[0].watermark_calls == 0  # finished without waiting for an idle check
