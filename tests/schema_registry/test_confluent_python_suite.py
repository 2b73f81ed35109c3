"""confluent-kafka-python's own schema registry integration tests (`tests/integration/schema_registry/_sync` of
its v2.15.0 tag: the API client and the Avro, JSON Schema and Protobuf serializers), run unmodified against our
registry process (SR_URL) and our broker (BROKERS). The test command fetches that tag's tests/ directory once into
$ODRADEK_CACHE/confluent-kafka-python-2.15.0 (scripts/env.sh, `confluent_python_tests`). Each file runs in a
pytest of its own; every test must pass but the ones listed in EXPECTED_SKIPS, which the suite itself skips or
deselects for a reason that is not the registry's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import BrokerProcess
from tests.schema_registry.helpers import Registry, RestClient

VERSION = "2.15.0"
SUITE = "tests/integration/schema_registry/_sync"
FILES = ["test_api_client.py", "test_avro_serializers.py", "test_json_serializers.py", "test_proto_serializers.py"]
# tests of another registry version (Confluent Platform 7.0.1 through trivup, a cluster of its own)
DESELECTED = ["kafka_cluster_cp_7_0_1"]


def suite_home() -> Path:
    home = Path(os.environ.get("ODRADEK_CACHE", Path.home() / ".cache" / "odradek")) / f"confluent-kafka-python-{VERSION}"
    if not (home / ".complete").exists():
        raise RuntimeError(f"confluent-kafka-python {VERSION}'s tests are not in {home}: run `bash scripts/test.sh` "
                           "once (it fetches them), or `. scripts/env.sh && confluent_python_tests`")
    return home


def run_suite(file: str, broker: BrokerProcess, registry: RestClient, tmp_path: Path) -> tuple[dict[str, int], str]:
    home = suite_home()
    env = {**os.environ, "BROKERS": broker.bootstrap, "SR_URL": registry.url, "PYTHONPATH": str(home)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfEs", "--timeout=120",
                           "-k", " and ".join(f"not {d}" for d in DESELECTED), f"{SUITE}/{file}",
                           f"--basetemp={tmp_path / 'pytest'}"], cwd=home, env=env, capture_output=True, text=True,
                          timeout=600)
    tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected)", tail)}
    return counts, proc.stdout[-6000:] + proc.stderr[-2000:]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("file", FILES)
def test_confluent_kafka_python_schema_registry_suite(file: str, broker: BrokerProcess, registry: Registry,
                                                      tmp_path: Path) -> None:
    counts, output = run_suite(file, broker, registry, tmp_path)
    print(f"{file}: {counts}")  # what the README quotes
    assert counts.get("passed", 0) > 0 and not counts.get("failed") and not counts.get("error") \
        and not counts.get("errors"), output
