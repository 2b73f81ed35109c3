"""format("odradek") in any SparkSession: Spark 4 registers the installed top-level `pyspark_odradek` module's
DefaultSource by itself, so a session that never imports odradek nor calls register() can read a topic."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from tests.clients import create_topic, produce  # noqa: E402

pytestmark = pytest.mark.timeout(240)
ROOT = Path(__file__).resolve().parents[2]

# A plain PySpark driver: no odradek import, no register call, only what any user session would do.
DRIVER = """
import json, sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").appName("plain")
         .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.memory", "512m")
         .config("spark.log.level", "ERROR").getOrCreate())
try:
    df = (spark.read.format("odradek").option("kafka.bootstrap.servers", sys.argv[1])
          .option("subscribe", sys.argv[2]).load())
    rows = sorted((r.offset, bytes(r.value).decode()) for r in df.select("offset", "value").collect())
    print("ROWS=" + json.dumps(rows))
    print("ODRADEK_LOADED=" + json.dumps("odradek" in sys.modules))
finally:
    spark.stop()
"""


def test_the_package_installs_pyspark_odradek_as_a_top_level_module() -> None:
    from setuptools import find_packages

    import pyspark_odradek
    from odradek.spark.source import OdradekDataSource

    assert pyspark_odradek.DefaultSource is OdradekDataSource and OdradekDataSource.name() == "odradek"
    found = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = find_packages(str(ROOT / found["where"][0]), include=found.get("include", ["*"]))
    assert "pyspark_odradek" in packages and "odradek.spark" in packages


def test_a_session_without_register_reads_format_odradek(broker: Any, tmp_path: Path) -> None:
    create_topic(broker.bootstrap, "auto-reg")
    produce(broker.bootstrap, "auto-reg", [f"r{i}".encode() for i in range(25)])
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    script = tmp_path / "plain_driver.py"
    script.write_text(DRIVER)
    done = subprocess.run([sys.executable, str(script), broker.bootstrap, "auto-reg"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=200, start_new_session=True)
    out = {line.split("=", 1)[0]: json.loads(line.split("=", 1)[1])
           for line in done.stdout.splitlines() if line.startswith(("ROWS=", "ODRADEK_LOADED="))}
    assert done.returncode == 0 and "ROWS" in out, done.stdout[-2000:] + done.stderr[-4000:]
    assert out["ROWS"] == [[i, f"r{i}"] for i in range(25)]
    assert out["ODRADEK_LOADED"] is False  # the driver never imported odradek: Spark found the source itself


def test_register_still_works_beside_the_automatic_registration(spark: Any, broker: Any) -> None:
    from odradek.spark import register

    create_topic(broker.bootstrap, "auto-reg-2")
    produce(broker.bootstrap, "auto-reg-2", [b"x", b"y"])
    register(spark)  # a second explicit registration of the same name is harmless
    df = spark.read.format("odradek").option("kafka.bootstrap.servers", broker.bootstrap).option(
        "subscribe", "auto-reg-2").load()
    assert sorted(bytes(r.value) for r in df.collect()) == [b"x", b"y"]
