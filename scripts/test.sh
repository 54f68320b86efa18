#!/usr/bin/env bash
# test.sh - run rbfly's whole test suite: lint, the documentation, the
# binary wheel, unit tests, integration tests
# against RabbitMQ 3.10 (Debian) and 4.x (chroot), failover tests on a
# three-node 4.x cluster (chroot), on asyncio and uvloop; then the unit
# tests and the core integration tests on the other CPythons (3.13, 3.14,
# 3.15 from Debian 13 and unstable, in chroots: scripts/pythons.sh); with
# RBFLY_ARM64=1, the aarch64 wheels' tests under emulation, when cached
# (scripts/arm64.sh).
#
# Installs what it needs (scripts/setup.sh) and starts the brokers
# (scripts/brokers.sh). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${RBFLY_VENV:-.venv}

scripts/setup.sh doc  # docs.sh, run beside the brokers' start, then installs nothing
scripts/lint.sh
# while the brokers start (apt, chroots, Erlang boot: mostly waiting), one
# after the other: the documentation with zero warnings (~15 s), the
# manylinux wheel installed into a fresh venv and smoke-tested, the same
# for each of the other CPythons in its chroot (~1 min each),
# and a short fuzzing run of every decoder of network bytes (~50 s; a
# finding fails the suite; scripts/fuzz.sh --time N for a longer one).
# docs.sh and wheel.sh install their tools into the venv when missing.
checks_log=$(mktemp)
(scripts/docs.sh && scripts/wheel.sh --all && scripts/fuzz.sh --ci) > "$checks_log" 2>&1 &
checks=$!
scripts/brokers.sh start all
eval "$(scripts/brokers.sh env)"
# three RabbitMQ 4.x nodes, for the leader failover tests (tests/cluster)
scripts/cluster.sh start
eval "$(scripts/cluster.sh env)"
# the tests run alone on the machine: wait for the checks first
if ! wait "$checks"; then
  cat "$checks_log" >&2
  echo "test.sh: docs, wheel or fuzzing failed (above)" >&2
  exit 1
fi
tail -n 12 "$checks_log"  # the fuzzing summary
rm -f "$checks_log"
export RBFLY_BROKERS_SCRIPT="$PWD/scripts/brokers.sh"
"$VENV/bin/python" -m pytest tests "$@"
# the other CPythons, on the wheels wheel.sh built (scripts/pythons.sh)
scripts/pythons.sh --wheels dist
# aarch64 under emulation (scripts/arm64.sh): on request only (RBFLY_ARM64=1)
# and from its cache only (the root filesystems and the extension modules of
# these Cython sources, made by scripts/wheel.sh --arch aarch64): the unit
# tests of the compiled modules and the smoke test on each CPython, within
# RBFLY_ARM64_TIMEOUT seconds (600 a CPython). Requested and not cached, it fails
# under CI=true and says so otherwise; not requested, it takes no time.
scripts/arm64.sh --ci
# two minutes of publishing and consuming under faults (connection cuts, a
# broker restart, node kills on the cluster), in the background (what
# scripts/soak.sh --ci runs; the brokers and the cluster are up already)
mkdir -p .soak
"$VENV/bin/python" soak/soak.py --ci --json .soak/ci.json >.soak/ci.log 2>&1 &
soak=$!
trap 'kill "$soak" 2>/dev/null || true' EXIT  # not left running if a benchmark fails
# the benchmarks in quick mode, so they never rot (no timing assertions),
# and the report's plots and tables drawn from their results
quick=$(mktemp -d)
trap 'kill "$soak" 2>/dev/null || true; rm -rf "$quick"' EXIT
"$VENV/bin/python" -m perf.codec --count 1000 --rounds 1 --json "$quick/codec.json" >/dev/null
"$VENV/bin/python" -m perf.floor --count 35000 --rounds 1 >/dev/null 2>&1
"$VENV/bin/python" -m perf.scale --quick --url "$RBFLY_URL4" >/dev/null 2>"$quick/scale.log" \
  || { cat "$quick/scale.log" >&2; exit 1; }
java=()  # the Java stream client harness too, where java and mvn are installed
if scripts/java-perf.sh --prepare >/dev/null 2>&1; then java=(java); fi
"$VENV/bin/python" -m perf.publish --quick --url "$RBFLY_URL" --json "$quick/publish.json" \
  --impl rbfly rbfly-0.10 rstream rbfly-subentry rbfly-spin ceiling ceiling-polling "${java[@]}" >/dev/null
"$VENV/bin/python" -m perf.consume --quick --url "$RBFLY_URL" --json "$quick/consume.json" \
  --impl rbfly rbfly-chunks rbfly-spin rbfly-nopause rbfly-0.10 rstream ceiling ceiling-polling "${java[@]}" >/dev/null
"$VENV/bin/python" -m perf.report.plot --output-dir "$quick" "$quick"/{codec,publish,consume}.json >/dev/null
"$VENV/bin/python" -m perf.report --output-dir "$quick" "$quick"/{codec,publish,consume}.json \
  >/dev/null
# the workloads users run (sizes, many publishers, latency at a fixed load,
# a slow application, compression), rbfly and the Python peers; --strict:
# a client that fails a run fails the suite
"$VENV/bin/python" -m perf.workloads --quick --strict --url "$RBFLY_URL" \
  --impl rbfly rbfly-0.10 rstream --json "$quick/workloads.json" >/dev/null 2>"$quick/workloads.log" \
  || { cat "$quick/workloads.log" >&2; exit 1; }
"$VENV/bin/python" -m perf.report.workloads --output-dir "$quick" "$quick/workloads.json" \
  2>/dev/null
# many tasks each awaiting the confirmation of one message at a time
"$VENV/bin/python" -m perf.concurrent --quick --strict --url "$RBFLY_URL" \
  --json "$quick/concurrent.json" >/dev/null 2>"$quick/concurrent.log" \
  || { cat "$quick/concurrent.log" >&2; exit 1; }
# recovery under repeated faults: a proxy cutting connections, and one
# dropping each (--strict fails on the no-progress pacing only, which load
# does not move; the rate shares are printed)
"$VENV/bin/python" -m perf.recovery --quick --strict --url "$RBFLY_URL" \
  --json "$quick/recovery.json" >/dev/null 2>"$quick/recovery.log" \
  || { cat "$quick/recovery.log" >&2; exit 1; }
# its table in doc/reliability.rst, drawn from those results
"$VENV/bin/python" -m perf.report.recovery --output-dir "$quick" "$quick/recovery.json" \
  2>/dev/null
# the Java client's own perf tool against the harness (seconds each), and
# at a fixed rate as the workloads run it, where its jars resolve
# (stream-client 0.13.0 and the tool's dependencies)
if [ ${#java[@]} -gt 0 ] && scripts/java-perf.sh --official --help >/dev/null 2>&1; then
  "$VENV/bin/python" -m perf.official --quick --url "$RBFLY_URL" >/dev/null
  "$VENV/bin/python" -m perf.workloads --quick --strict --url "$RBFLY_URL" --impl java \
    --workloads latency >/dev/null 2>"$quick/workloads.log" \
    || { cat "$quick/workloads.log" >&2; exit 1; }
elif [ ${#java[@]} -gt 0 ]; then
  echo "benchmarks: the Java client's own perf tool did not resolve; not compared" >&2
fi
rm -rf "$quick"
echo "benchmarks: quick mode ran, report drawn"
# the soak's two minutes ran beside the benchmarks (it uses the 4.x broker
# and the cluster, they use 3.10): nothing lost or duplicated
if ! wait "$soak"; then
  cat .soak/ci.log; echo "soak: FAILED" >&2; exit 1
fi
tail -n 1 .soak/ci.log
