#!/usr/bin/env bash
# The README's test command: install what the tests need (Debian's kcat, zookeeper and chromium, Java for
# ZooKeeper and Spark; the package with its dev and spark extras into the project's .venv), then run ruff, mypy, vulture and
# the whole suite. Extra arguments go to pytest (e.g. --run-slow).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
need=()
command -v kcat >/dev/null 2>&1 || need+=(kcat)
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
[ -x /usr/bin/chromium ] || need+=(chromium)  # the web console's browser tests (Playwright drives it)
command -v ip >/dev/null 2>&1 || need+=(iproute2)  # the fault tests' network namespaces (tests/faults)
apt_install "${need[@]}"
ensure_venv dev,spark
tools_hint
ruff check src tests bench
mypy src/odradek
vulture  # dead code in src/odradek (settings: [tool.vulture] in pyproject.toml)
python -m pytest -q -p no:cacheprovider "$@"
