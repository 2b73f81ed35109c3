#!/usr/bin/env bash
# The README's test command: install what the tests need (Debian's kcat, zookeeper and chromium, a JDK and Maven
# for ZooKeeper, Spark and Apache Kafka's own jars, which are fetched once into ~/.cache/odradek, as librdkafka's
# test program is built there once from npm's copy of its release source; the package with
# its dev and spark extras into the project's .venv), then run ruff, mypy, vulture and the whole suite. Extra arguments go to pytest (e.g. --run-slow, or tests/unit -q). The suite runs on
# ODRADEK_TEST_WORKERS pytest-xdist workers (4 by default; 0 runs it in this process), a test module on one worker
# and all Spark tests on one (--dist loadfile, groups set in tests/conftest.py), and ends with its 25 slowest tests.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
need=()
command -v kcat >/dev/null 2>&1 || need+=(kcat)
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)  # ZooKeeper, Spark, Apache Kafka's jars
command -v mvn >/dev/null 2>&1 || need+=(maven)  # fetches Apache Kafka's jars from Maven Central (tests/jvm)
[ -x /usr/bin/chromium ] || need+=(chromium)  # the web console's browser tests (Playwright drives it)
command -v ip >/dev/null 2>&1 || need+=(iproute2)  # the fault tests' network namespaces (tests/faults)
apt_install "${need[@]}"
ensure_venv dev,spark
kafka_jars
# librdkafka's share-consumer tests (tests/integration/test_librdkafka_share_suite.py); a failed build fails those
# tests alone, not the whole run
librdkafka_tests || echo "odradek: librdkafka's test program could not be built: test_librdkafka_share_suite will fail" >&2
confluent_python_tests || echo "odradek: confluent-kafka-python's tests could not be fetched: test_confluent_python_suite will fail" >&2
tools_hint
# the project's own modules compiled once, here: where PYTHONDONTWRITEBYTECODE is set (as on this project's
# development machines), every broker, tool and Spark worker process the suite starts would otherwise compile them
# again, 0.35 s of CPU each (the installed packages are compiled by pip)
python -m compileall -q -j 0 src/odradek tests >/dev/null
ruff check src tests bench
mypy src/odradek
vulture  # dead code in src/odradek (settings: [tool.vulture] in pyproject.toml)
quiet=(-q)  # one -q of ours: a -q given too would make it -qq, which drops pytest's result line
for arg in "$@"; do case "$arg" in -q | -qq | --quiet) quiet=() ;; esac; done
python -m pytest "${quiet[@]}" -p no:cacheprovider -n "${ODRADEK_TEST_WORKERS:-4}" --dist loadfile --no-loadscope-reorder \
  --durations=25 "$@"
