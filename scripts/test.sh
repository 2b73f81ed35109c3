#!/usr/bin/env bash
# The README's test command: install what the tests need (Debian's kcat and zookeeper, Java for ZooKeeper
# and Spark, the package with its dev and spark extras), then run ruff and the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v kcat >/dev/null 2>&1 || need+=(kcat)
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  ($sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}") >/dev/null
fi
python3 -m pip install -q -e ".[dev,spark]"
python3 -m ruff check src tests bench
python3 -m pytest -q -p no:cacheprovider "$@"
