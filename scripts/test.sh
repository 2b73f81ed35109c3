#!/usr/bin/env bash
# The README's test command: install what the tests need, then run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v kcat >/dev/null 2>&1 || ! [ -x /usr/share/zookeeper/bin/zkServer.sh ]; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat zookeeper) >/dev/null
  else
    (sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat zookeeper) >/dev/null
  fi
fi
python3 -m pip install -q -e ".[dev]"
python3 -m ruff check src tests bench
python3 -m pytest -q -p no:cacheprovider "$@"
