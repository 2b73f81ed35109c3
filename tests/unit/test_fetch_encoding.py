"""The hand-written Fetch response encoder against kafka-python's schema-generated decoder."""

from __future__ import annotations

import uuid

import pytest
from kafka.protocol.consumer import FetchResponse

from odradek.protocol.fetch import FetchPartitionResult, FetchTopicResult, encode_fetch_response


@pytest.mark.parametrize("version", range(4, 17))
def test_every_version_decodes(version: int) -> None:
    tid = uuid.uuid4()
    topic = FetchTopicResult("topic-a", tid.bytes, [
        FetchPartitionResult(0, 0, 10, 10, 0, b"abcdef", diverging_epoch=(1, 5) if version >= 12 else None),
        FetchPartitionResult(1, 1, -1, -1, -1, None),
    ])
    data = b"".join(bytes(c) for c in encode_fetch_response(version, 7, [topic]))
    resp = FetchResponse.decode(data[5 if version >= 12 else 4 :], version=version)
    t = resp.responses[0]
    assert (t.topic_id == tid) if version >= 13 else (t.topic == "topic-a")
    ok, err = t.partitions
    assert (ok.partition_index, ok.high_watermark, ok.records) == (0, 10, b"abcdef")
    if version >= 12:
        assert (ok.diverging_epoch.epoch, ok.diverging_epoch.end_offset) == (1, 5)
    # an error partition carries an empty record set, never a null one (librdkafka rejects null)
    assert err.error_code == 1 and err.records == b""
