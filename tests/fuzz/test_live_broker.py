"""Fuzzing a live broker: mutated real client frames over raw sockets, with canary records produced by a
real client in between. Afterwards the broker must answer at once, hold every acknowledged canary record
intact, have logged no unexpected error, and have stayed within a memory bound all along.

CI sends FRAMES_CI frames; `--run-slow` sends FRAMES_SLOW. ODRADEK_FUZZ_FRAMES=N and ODRADEK_FUZZ_SEED=S
override the count and the seed; the seed is printed, so a failing run can be replayed (the same seed sends
the same frames). ODRADEK_FUZZ_TRACE=path writes each frame sent, after the client port it was sent from,
which the broker's log names.
"""

from __future__ import annotations

import os
import random
import time
import uuid
from pathlib import Path

import pytest
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest

from odradek.protocol.transport import BlockingConnection
from tests.clients import create_topic
from tests.fuzz import corpus
from tests.fuzz.live import Canary, FrameSource, RawFuzzer, RssSampler, scan_log
from tests.harness import BrokerPool, BrokerProcess

FRAMES_CI = 3_000
FRAMES_SLOW = 1_000_000
FRAMES_ENV = "ODRADEK_FUZZ_FRAMES"
SEED_ENV = "ODRADEK_FUZZ_SEED"
TRACE_ENV = "ODRADEK_FUZZ_TRACE"
DEFAULT_SEED = 20240611
CANARY_EVERY = 250  # frames between two canary rounds
CANARY_PARTITIONS = 3
MiB = 1 << 20
RSS_GROWTH_LIMIT = 200 * MiB  # over the broker's resident size before the first frame
ANSWER_LIMIT_S = 1.0
BAD_LOG_LINES = ("Unexpected error", "Traceback")

# Mutated CreateTopics, CreatePartitions and Metadata (auto-creation) frames create topics with made-up
# names; the partition limits keep what a long run may create small. Repeated array elements make frames of
# up to ~100 MB, which a broker holds twice while reading them (the read buffer and the frame): the request
# size limit keeps that within the memory bound, which is about what requests amplify, not their own size.
BROKER_CONFIG = {
    "max.partitions": "400",
    "max.broker.partitions": "400",
    "socket.request.max.bytes": str(16 << 20),
    "group.initial.rebalance.delay.ms": "0",
}


@pytest.fixture
def fuzz_broker(brokers: BrokerPool) -> BrokerProcess:
    return brokers.start(BROKER_CONFIG, name="livefuzz")


def _frame_count(config: pytest.Config) -> int:
    if FRAMES_ENV in os.environ:
        return int(os.environ[FRAMES_ENV])
    return FRAMES_SLOW if config.getoption("--run-slow") else FRAMES_CI


def _answers_within(port: int, limit: float) -> float:
    """Seconds for ApiVersions then Metadata on a new connection, each bounded by `limit`."""
    start = time.monotonic()
    with BlockingConnection("127.0.0.1", port, "fuzz-check", limit) as c:
        versions = c.request(ApiVersionsRequest(client_software_name="fuzz", client_software_version="1"), 3)
        assert versions.error_code == 0
        metadata = c.request(MetadataRequest(topics=None, allow_auto_topic_creation=False), 9)
        assert metadata.brokers
    return time.monotonic() - start


@pytest.mark.timeout(3 * 3600)
def test_live_broker_survives_mutated_frames(fuzz_broker: BrokerProcess, pytestconfig: pytest.Config) -> None:
    count = _frame_count(pytestconfig)
    seed = int(os.environ.get(SEED_ENV, DEFAULT_SEED))
    print(f"live fuzz: {count} frames, seed {seed} (replay: {SEED_ENV}={seed} {FRAMES_ENV}={count})")
    topic = "canary-" + uuid.uuid4().hex[:8]
    create_topic(fuzz_broker.bootstrap, topic, partitions=CANARY_PARTITIONS)
    canary = Canary(fuzz_broker.bootstrap, topic, CANARY_PARTITIONS)
    canary.produce()
    assert fuzz_broker.pid is not None
    baseline = RssSampler(fuzz_broker.pid).peak

    trace = Path(os.environ[TRACE_ENV]) if TRACE_ENV in os.environ else None
    fuzzer = RawFuzzer(fuzz_broker.port, FrameSource(corpus.load(), random.Random(seed)), trace=trace)
    start = time.monotonic()
    with RssSampler(fuzz_broker.pid) as rss:
        stats = fuzzer.run(count, CANARY_EVERY, lambda _sent: canary.produce())
        canary.produce()
    elapsed = time.monotonic() - start
    print(f"{stats} in {elapsed:.1f}s; rss {baseline / MiB:.0f} MiB before, peak {rss.peak / MiB:.0f} MiB; "
          f"{len(canary.acked)} canary records acknowledged")

    assert fuzz_broker.alive(), f"the broker died:\n{fuzz_broker.output()[-5000:]}"
    assert _answers_within(fuzz_broker.port, ANSWER_LIMIT_S) < ANSWER_LIMIT_S
    bad = list(scan_log(fuzz_broker.stdout_path, BAD_LOG_LINES))
    assert not bad, f"{len(bad)} unexpected errors logged (seed {seed}), the first:\n" + "\n".join(bad[:3])
    assert not canary.failed, f"canary deliveries failed (seed {seed}): {canary.failed[:5]}"
    got = canary.read_back(fuzz_broker.bootstrap)
    lost = {k: v for k, v in canary.acked.items() if got.get(k) != v}
    assert not lost, f"{len(lost)} of {len(canary.acked)} acknowledged canary records lost or changed: " \
                     f"{sorted(lost.items())[:10]}"
    assert rss.peak < baseline + RSS_GROWTH_LIMIT, f"rss peaked at {rss.peak / MiB:.0f} MiB (seed {seed})"
    assert stats.sent == count and stats.answered + stats.closed + stats.unanswered == count
    canary.close()
