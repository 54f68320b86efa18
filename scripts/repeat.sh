#!/usr/bin/env bash
# repeat.sh - run chosen tests many times against the brokers, to find a
# test that fails one run in ten (never retry a flaky test: find why).
#
# Usage: scripts/repeat.sh [-n RUNS] PYTEST_ARGS...
#   scripts/repeat.sh -n 20 tests/integration/test_recovery.py::test_resume_callback_own_offset
#
# Starts the brokers (and the cluster for tests/cluster) as test.sh does,
# runs pytest RUNS times (default 10), keeps the output of every failed run
# in .repeat/run-N.log and prints how many runs passed. Exit status: 0 when
# all passed.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${RBFLY_VENV:-.venv}
runs=10
if [ "${1:-}" = -n ]; then runs=$2; shift 2; fi
[ $# -gt 0 ] || { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

scripts/setup.sh
scripts/brokers.sh start all >/dev/null
eval "$(scripts/brokers.sh env)"
if printf '%s\n' "$@" | grep -q 'tests/cluster\|^tests/\?$'; then
  scripts/cluster.sh start >/dev/null
  eval "$(scripts/cluster.sh env)"
fi
export RBFLY_BROKERS_SCRIPT="$PWD/scripts/brokers.sh"
mkdir -p .repeat
passed=0
for i in $(seq "$runs"); do
  if "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@" >".repeat/run-$i.log" 2>&1; then
    passed=$((passed + 1))
    rm -f ".repeat/run-$i.log"
    echo "run $i/$runs: passed"
  else
    echo "run $i/$runs: FAILED (.repeat/run-$i.log)"
    grep -E '^(FAILED|ERROR) ' ".repeat/run-$i.log" | sed 's/^/  /' || true
  fi
done
echo "$passed of $runs runs passed"
[ "$passed" = "$runs" ]
