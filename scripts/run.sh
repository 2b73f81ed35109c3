#!/usr/bin/env bash
# The README's main job: install what it needs, then run the demo on an embedded single-node broker.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -e .
exec python3 -m odradek.cli.main demo "$@"
