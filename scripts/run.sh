#!/usr/bin/env bash
# The README's main job: install what it needs (Java for Spark if missing; the package with its spark
# extra into the project's .venv), then run the demo: embedded single-node broker, generator, Spark
# streaming job, live metrics.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
command -v java >/dev/null 2>&1 || apt_install openjdk-17-jre-headless
ensure_venv spark
tools_hint
exec .venv/bin/python -m odradek.cli.main demo "$@"
