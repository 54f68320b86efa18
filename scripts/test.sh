#!/usr/bin/env bash
# test.sh - run rbfly's whole test suite: lint, unit tests, integration tests
# against RabbitMQ 3.10 (Debian) and 4.x (chroot), on asyncio and uvloop.
#
# Installs what it needs (scripts/setup.sh) and starts the brokers
# (scripts/brokers.sh). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${RBFLY_VENV:-.venv}

scripts/setup.sh
scripts/lint.sh
scripts/brokers.sh start all
eval "$(scripts/brokers.sh env)"
export RBFLY_BROKERS_SCRIPT="$PWD/scripts/brokers.sh"
exec "$VENV/bin/python" -m pytest tests "$@"
