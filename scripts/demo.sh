#!/usr/bin/env bash
# demo.sh - the main job: start a local RabbitMQ broker, create a stream,
# publish messages with confirmation, read them back, print what happened.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${RBFLY_VENV:-.venv}

scripts/setup.sh
scripts/brokers.sh start 310
eval "$(scripts/brokers.sh env)"
exec "$VENV/bin/python" examples/demo.py "$RBFLY_URL" "$@"
