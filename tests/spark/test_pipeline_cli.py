"""`odradek pipeline`: listing, argument errors and the generator, without Spark."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.clients import consume_all
from tests.harness import run_cli


def test_list_and_unknown_pipeline() -> None:
    listed = run_cli("pipeline", "list")
    assert listed.returncode == 0 and listed.stdout.split() == ["weblogs"]
    bad = run_cli("pipeline", "run", "nosuch", "--bootstrap-server", "127.0.0.1:1", "--checkpoint", "c", "--output", "o")
    assert bad.returncode == 2 and "unknown pipeline 'nosuch'" in bad.stderr
    usage = run_cli("pipeline", "run", "weblogs")
    assert usage.returncode == 2 and "--bootstrap-server" in usage.stderr
    helped = run_cli("pipeline", "--help")
    assert helped.returncode == 0 and "available-now" in helped.stdout


def test_generate_backfill(broker: Any) -> None:
    result = run_cli("pipeline", "generate", "weblogs", "--bootstrap-server", broker.bootstrap, "--topic", "gen-test",
                     "--partitions", "2", "--count", "700", "--malformed-fraction", "0.1",
                     "--start-time", "2025-11-21T12:00:00Z", "--seed", "3")
    assert result.returncode == 0, result.stderr
    assert "Produced 700 records to gen-test" in result.stdout
    assert result.stdout.startswith(f"Generating web access events to gen-test at {broker.bootstrap}, as fast as")
    assert re.search(r"^produced [\d,]+ events in \d+ s \([\d,]+/s\), malformed [\d,]+$", result.stdout, re.M)
    msgs = consume_all(broker.bootstrap, "gen-test", 700, partitions=2)
    assert len(msgs) == 700
    assert min(m.timestamp()[1] for m in msgs) >= 1_763_726_400_000
    lines = [m.value() or b"" for m in msgs]
    assert sum(b'HTTP/1.1" ' in v for v in lines) > 550


def test_every_generate_option_is_described() -> None:
    helped = run_cli("pipeline", "generate", "--help")
    assert helped.returncode == 0
    for flag in ("--topic", "--seed", "--rate", "--count", "--duration"):
        described = re.search(rf"^\s+{flag}\b.*\n(?:\s{{20,}}.*\n)*", helped.stdout, re.M)
        assert described and len(described.group(0).split()) > 2, (flag, helped.stdout)


def test_archive_keeps_sparks_noise_in_a_file(broker: Any, tmp_path: Path) -> None:
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
    made = run_cli("pipeline", "generate", "weblogs", "--bootstrap-server", broker.bootstrap, "--topic", "arc-test",
                   "--partitions", "1", "--count", "300", "--start-time", "2025-11-21T12:00:00Z")
    assert made.returncode == 0, made.stderr
    out = tmp_path / "archive"
    result = run_cli("pipeline", "archive", "weblogs", "--bootstrap-server", broker.bootstrap, "--topic", "arc-test",
                     "--output", str(out), timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "records read" in result.stdout and (out / "summary.json").exists()
    terminal = result.stdout + result.stderr
    for noise in ("log4j", "WARN", "NativeCodeLoader", "incubator", "replaced a statically registered"):
        assert noise not in terminal, (noise, terminal)
    assert (out / "spark.log").stat().st_size > 0


def test_a_wrong_or_absent_spark_master_is_one_line() -> None:
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
    from tests.harness import free_port

    nobody = f"spark://127.0.0.1:{free_port()}"
    for args, flag in ((("pipeline", "archive", "weblogs", "--bootstrap-server", "127.0.0.1:1", "--output", "o",
                         "--master"), "--master"),
                       (("pipeline", "run", "weblogs", "--bootstrap-server", "127.0.0.1:1", "--checkpoint", "c",
                         "--output", "o", "--master"), "--master"),
                       (("demo", "--spark-master"), "--spark-master")):
        absent = run_cli(*args, nobody)
        assert absent.returncode == 1 and absent.stderr == (
            f"Error: {flag}: no Spark master at {nobody}: Connection refused (start one with: odradek spark up)\n"), \
            absent.stdout + absent.stderr
        wrong = run_cli(*args, "yarn")
        assert wrong.returncode == 1 and wrong.stderr == (
            f"Error: {flag}: 'yarn' is not a Spark master URL: spark://HOST:PORT or local[N]\n"), wrong.stderr
