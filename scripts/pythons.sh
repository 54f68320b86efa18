#!/usr/bin/env bash
# pythons.sh - build rbfly with every other CPython it supports and run its
# unit tests and a core of its integration tests on each, against the
# brokers (scripts/brokers.sh; the full suite runs on the host's Python).
#
# The versions (RBFLY_PYTHONS, default "3.13 3.14 3.15") come from Debian's
# packages in chroots of their own (scripts/lib/pythons.sh): 3.13 from
# Debian 13, 3.14 and 3.15 from Debian unstable. For each, in its chroot: a
# fresh copy of the sources, rbfly's wheel built from it (Cython, gcc; or
# taken from --wheels DIR, where scripts/wheel.sh put them), its extension
# modules put in place, then pytest: tests/unit but for the tests of the
# benchmarks', fuzzers' and soak's tools and of Qpid Proton (no wheels past
# 3.12), and the core of tests/integration (PY_CORE, scripts/lib/pythons.sh)
# on the asyncio loop (the unit tests run on uvloop too); where zstandard
# and lz4 have no wheels (3.15), the tests of their codecs are left out.
# The chroots share the host's network: the brokers are reached on its
# loopback. The broker restart test is left out (it needs
# scripts/brokers.sh, on the host). The tests run with CI=true (a missing
# broker fails; CI=false lets it skip) and --no-skips: a test skipping for
# a reason tests/skips.py does not allow fails the run (mypy or a
# serializer's package missing skipped six unit tests silently). Measured
# on the 2-core machine with the wheels given: the three versions at once
# in 90 s (27 s CPU each).
#
# Usage: scripts/pythons.sh [--wheels DIR] [prepare]
#   prepare     only make the chroots and their venvs (apt, PyPI)
#   --wheels DIR  test the cpXY wheels of DIR instead of building them
# Needs root (debootstrap, chroot). Extra settings: scripts/lib/pythons.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

LOG_TAG=pythons
# shellcheck source=lib/common.sh
. scripts/lib/common.sh
# shellcheck source=lib/rootfs.sh
. scripts/lib/rootfs.sh
# shellcheck source=lib/pythons.sh
. scripts/lib/pythons.sh
HOST_APT_LOCK=$PYTHONS_DIR/apt.lock
HOST_APT_LOG=$PYTHONS_DIR/log/host-apt.log

wheels=""
if [ "${1:-}" = --wheels ]; then wheels=$(cd "$2" && pwd); shift 2; fi
case "${1:-}" in
  prepare) py_prepare_all; exit 0 ;;
  "") ;;
  *) usage ;;
esac

# test_version VERSION: build (or take) its wheel and run the tests; its
# output goes to PYTHONS_DIR/log/test-VERSION.log, the summary to stderr
test_version() {
  local v=$1 t=$EPOCHREALTIME wheel args=() rc=0 codecs log=$PYTHONS_DIR/log/test-$1.log
  py_prepare "$v"
  py_tree "$v"
  : > "$log"
  wheel=""
  if [ -n "$wheels" ]; then
    wheel=$(find "$wheels" -name "rbfly-*-cp${v/./}-cp${v/./}-*.whl" | head -n 1)
  fi
  if [ -z "$wheel" ]; then
    wheel=$(py_build_wheel "$v" "$PY_TREE") || die "python $v: the build failed"
    log "python $v: built $(basename "$wheel") in $(elapsed "$t")s"
  fi
  py_inplace "$v" "$PY_TREE" "$wheel"
  # zstandard and lz4 have no wheels for the newest Pythons (3.15): their
  # codecs' tests expect them installed
  codecs=""  # a -k expression (empty: all)
  if ! py_run "$v" "$(py_venv "$v")/bin/python" -c 'import zstandard, lz4' 2>/dev/null; then
    log "python $v: no zstandard or lz4 (no wheels): the tests of their codecs are left out"
    codecs="not zstd and not lz4"
  fi
  t=$EPOCHREALTIME
  mapfile -t args < <(py_pytest_args unit "$codecs")
  py_in "$v" "$PY_TREE/src" "$(py_venv "$v")/bin/python" -m pytest "${args[@]}" \
    >> "$log" 2>&1 || rc=$?
  log "python $v: unit tests in $(elapsed "$t")s: $(tail -n 1 "$log")"
  [ $rc = 0 ] || { cat "$log" >&2; die "python $v: unit tests failed"; }
  t=$EPOCHREALTIME
  mapfile -t args < <(py_pytest_args core "$codecs")
  py_in "$v" "$PY_TREE/src" "$(py_venv "$v")/bin/python" -m pytest "${args[@]}" \
    >> "$log" 2>&1 || rc=$?
  log "python $v: core integration tests in $(elapsed "$t")s: $(tail -n 1 "$log")"
  [ $rc = 0 ] || { cat "$log" >&2; die "python $v: core integration tests failed"; }
}

# the versions at once: their unit tests are mostly CPU, their integration
# tests mostly waiting for the brokers; the chroots first (apt and PyPI,
# one at a time per rootfs)
t0=$EPOCHREALTIME
trap py_cleanup EXIT
py_prepare_all
jobs=()
for v in $RBFLY_PYTHONS; do
  (trap py_cleanup EXIT; TIMEFORMAT="[pythons] python $v: done in %0Rs, CPU %0Us user %0Ss sys"
   time test_version "$v") &
  jobs+=($!)
done
failed=0
for j in "${jobs[@]}"; do wait "$j" || failed=1; done
[ $failed = 0 ] || die "some Python failed (above)"
log "all passed ($RBFLY_PYTHONS) in $(elapsed "$t0")s"
