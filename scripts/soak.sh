#!/usr/bin/env bash
# soak.sh - publish and consume for a long time while faults are injected,
# then check that nothing confirmed was lost or duplicated and that memory,
# tasks and file descriptors stayed bounded (soak/soak.py says how).
#
# Usage: scripts/soak.sh [--minutes N] [--ci] [--json PATH] [--seed N]
#   --minutes N  length of the run (default 30): half on the RabbitMQ 4.x
#                broker behind a proxy that cuts connections, restarted
#                every two minutes; half on the three-node cluster, a
#                stream leader killed and revived every 50 s
#   --ci         a two-minute run (what scripts/test.sh runs)
# Starts the brokers and the cluster (scripts/brokers.sh, scripts/cluster.sh).
# Exit status 0 when every confirmed message was read back exactly once, in
# order per publisher, and nothing leaked.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${RBFLY_VENV:-.venv}
scripts/setup.sh >/dev/null
scripts/brokers.sh start 4 >/dev/null
scripts/cluster.sh start >/dev/null
eval "$(scripts/brokers.sh env)"
eval "$(scripts/cluster.sh env)"
exec "$VENV/bin/python" soak/soak.py "$@"
