#!/usr/bin/env bash
# The README's main job: install what it needs (Java for Spark if missing, the package with its spark extra:
# pyspark, pyarrow), then run the demo: embedded single-node broker, generator, Spark streaming job, live metrics.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v java >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless) >/dev/null
  else
    (sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless) >/dev/null
  fi
fi
python3 -m pip install -q -e ".[spark]"
exec python3 -m odradek.cli.main demo "$@"
