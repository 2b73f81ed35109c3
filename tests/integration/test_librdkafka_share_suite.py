"""librdkafka's own share-consumer tests (KIP-932), 0170-0185 of librdkafka 2.15.0's tests/ directory,
unmodified, run by its test program against one Odradek broker as librdkafka's CI runs them against
Kafka 4.2.0 (TEST_KAFKA_VERSION=4.2.0; the broker settings of its single-broker test cluster).

scripts/test.sh builds the test program once into ~/.cache/odradek (`librdkafka_tests` in scripts/env.sh,
from the librdkafka release source that npm's @confluentinc/kafka-javascript ships). Each librdkafka test
is one pytest test; its whole log is kept in the test's temp dir and its failing lines are the assertion's
message. The cheap ones run by default, the rest (minutes each: they wait out heartbeats, lock expiry and
session timeouts) with --run-slow. 0182 and 0183 are not run: they test librdkafka against its own mock
cluster, never a broker.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.harness import BrokerProcess, group_timers

VERSION = "2.15.0"
KAFKA_VERSION = "4.2.0"
# each librdkafka test, and the one cheap sub-test of it (a substring of its name, librdkafka's SUBTESTS) that the
# default run picks; --run-slow runs every test whole
TESTS = {
    "0170": "do_test_auto_offset_reset_earliest", "0171": "single_consumer_single_topic_multiple_partitions",
    "0172": "do_test_release_redelivery", "0173": "do_test_commit_async_callback", "0174": None,
    "0175": "do_test_two_groups_same_topic", "0176": None, "0177": None, "0178": None, "0179": None,
    "0180": None, "0181": None, "0184": None, "0185": None,
}  # 0182 and 0183 are left out: they run on librdkafka's mock cluster, not on a broker
_ANSI = re.compile(r"\x1b\[[0-9;]*m|\x1b\(B")


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    """What librdkafka's test cluster sets on a single Kafka 4.2 broker (tests/cluster_testing.py, and its
    default scenario's topic auto-creation with 4 partitions: 0184 produces through a topic's deletion, so the
    topic a metadata request auto-creates must keep the deleted one's partitions). And share heartbeats every
    500 ms: with Kafka's 5 s a new group's first records come 5 s late (its partitions are assigned at its
    second heartbeat), and the quick tests took 35 s instead of 15."""
    return {
        **group_timers("share", heartbeat_ms=500),
        "auto.create.topics.enable": "true",
        "num.partitions": "4",
        "group.share.min.record.lock.duration.ms": "1000",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
    }


def librdkafka_home() -> Path:
    """Where the test command built librdkafka and its test program."""
    home = os.environ.get("ODRADEK_LIBRDKAFKA_HOME")
    path = Path(home) if home else (Path(os.environ.get("ODRADEK_CACHE", Path.home() / ".cache" / "odradek"))
                                    / f"librdkafka-{VERSION}")
    if not (path / ".complete").exists():
        raise RuntimeError(f"librdkafka {VERSION}'s test program is not in {path}: run `bash scripts/test.sh` once "
                           "(it builds it), or `. scripts/env.sh && librdkafka_tests`")
    return path


def failure_lines(log: str) -> str:
    """The lines of a test-runner log that say what failed (ANSI colours dropped)."""
    lines = [_ANSI.sub("", line) for line in log.splitlines()]
    picked = [line for line in lines if re.search(r"FAIL|[Aa]ssert|Test .* failed", line)]
    return "\n".join((picked or lines)[-40:])


def run_test_runner(broker: BrokerProcess, tmp_path: Path, number: str, subtests: str | None = None) -> None:
    """Run librdkafka test `number` (its sub-tests matching `subtests`, or all) against `broker`."""
    home = librdkafka_home()
    conf = tmp_path / "test.conf"
    conf.write_text(f"bootstrap.servers={broker.bootstrap}\n")
    env = {**os.environ, "TESTS": number, "TEST_KAFKA_VERSION": KAFKA_VERSION, "RDKAFKA_TEST_CONF": str(conf),
           "LD_LIBRARY_PATH": f"{home / 'src'}:{home / 'src-cpp'}"}
    if subtests:
        env["SUBTESTS"] = subtests
    log_path = tmp_path / f"{number}.log"
    with open(log_path, "wb") as log:
        # the test program keeps its own per-test timeouts; this one only stops a hung run
        rc = subprocess.run([str(home / "tests" / "test-runner")], cwd=tmp_path, env=env, stdout=log,
                            stderr=subprocess.STDOUT, timeout=1200, check=False).returncode
    out = log_path.read_text(errors="replace")
    assert rc == 0 and "ALL TESTS PASSED" in out, f"librdkafka test {number} failed (rc {rc}, log {log_path}):\n" \
        + failure_lines(out)
    if subtests:  # a name that matches no sub-test would pass having run nothing
        assert ": PASS (" in _ANSI.sub("", out), f"no sub-test of {number} matches {subtests!r}"


@pytest.mark.parametrize("number", [n for n, sub in TESTS.items() if sub])
def test_librdkafka_share_consumer_quick(broker: BrokerProcess, tmp_path: Path, number: str) -> None:
    run_test_runner(broker, tmp_path, number, TESTS[number])


@pytest.mark.slow
@pytest.mark.timeout(1800)  # 0174 takes 7-12 minutes here, others 1-4; the suite's default is 300 s per test
@pytest.mark.parametrize("number", list(TESTS))
def test_librdkafka_share_consumer(broker: BrokerProcess, tmp_path: Path, number: str) -> None:
    run_test_runner(broker, tmp_path, number)
