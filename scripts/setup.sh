#!/usr/bin/env bash
# setup.sh - prepare a development environment for rbfly (idempotent).
#
# Installs the system packages a build needs (C compiler, Python headers,
# venv) when they are missing, creates the virtualenv $RBFLY_VENV (.venv),
# installs rbfly (editable) with its test, lint, fuzz and perf dependency
# groups (PEP 735, [dependency-groups] of pyproject.toml; pip 25.1+ installs
# them, so pip is upgraded first) into it (perf: scripts/test.sh draws the
# report's plots from its quick benchmarks, with matplotlib), and compiles
# the Cython extensions in place. A second run only recompiles what changed.
#
# Usage: scripts/setup.sh [GROUP]   (a group besides test,lint,fuzz,perf, e.g. doc)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${RBFLY_VENV:-.venv}
DEV_GROUPS=test,lint,fuzz,perf${1:+,$1}
log() { printf '[setup %s] %s\n' "$(date +%T)" "$*" >&2; }

need=()
command -v gcc >/dev/null || need+=(gcc)
command -v "$PYTHON" >/dev/null || need+=(python3)
if command -v "$PYTHON" >/dev/null; then
  "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
  "$PYTHON" - <<'PY' 2>/dev/null || need+=(python3-dev)
import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))
PY
fi
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { log "missing ${need[*]}: run as root or install them"; exit 1; }
  log "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "${need[@]}" >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null && apt-get install -y -q "${need[@]}" >/dev/null; }
fi
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { log "rbfly needs Python 3.11 or later ($PYTHON is $("$PYTHON" -V))"; exit 1; }

if [ ! -x "$VENV/bin/python" ]; then
  log "creating virtualenv $VENV"
  "$PYTHON" -m venv "$VENV"
fi
# the stamp names the hash of the build files and the groups installed
# (.rbfly-deps-HASH-test-lint-fuzz-perf-doc): a run asking for groups all
# installed for this hash installs nothing, one asking for another group
# installs it beside them (scripts/docs.sh asks for doc, the others did not:
# each would reinstall everything in turn)
hash=$(cat pyproject.toml setup.py | sha1sum | cut -c1-12)
installed=
for f in "$VENV"/.rbfly-deps-"$hash"-*; do
  [ -f "$f" ] && installed=${f##*/.rbfly-deps-"$hash"-}
done
installed=${installed//-/,}
for g in ${DEV_GROUPS//,/ }; do
  case ",$installed," in *",$g,"*) ;; *) installed=${installed:+$installed,}$g ;; esac
done
DEV_GROUPS=$installed
stamp="$VENV/.rbfly-deps-$hash-${DEV_GROUPS//,/-}"
if [ ! -f "$stamp" ]; then
  log "installing build tools, rbfly and the groups $DEV_GROUPS into $VENV"
  # pip 25.1 is the first to install dependency groups (--group)
  "$VENV/bin/python" -m pip install -q -U 'pip>=25.1'
  # cffi first: python-qpid-proton comes as an sdist whose extension is a
  # cffi module, silently left out when cffi is missing at its build
  # the build floor of pyproject.toml (setuptools 77: SPDX license, license-files)
  "$VENV/bin/python" -m pip install -q 'setuptools>=77' 'cython>=3.0.11,<3.3' wheel cffi
  group_args=()
  for g in ${DEV_GROUPS//,/ }; do group_args+=(--group "$g"); done
  "$VENV/bin/python" -m pip install -q --no-build-isolation -e . "${group_args[@]}"
  rm -f "$VENV"/.rbfly-deps-*
  touch "$stamp"
fi
if ! "$VENV/bin/python" -c 'import proton' 2>/dev/null; then
  # a Qpid Proton built without cffi (or by an older setup.sh): rebuild it
  log "rebuilding python-qpid-proton with its C extension"
  "$VENV/bin/python" -m pip install -q cffi
  "$VENV/bin/python" -m pip install -q --no-build-isolation --no-deps --force-reinstall \
    --no-cache-dir 'python-qpid-proton>=0.39'
  "$VENV/bin/python" -c 'import proton'
fi
log "compiling Cython extensions"
# a failed build stops here, with its output: the extensions an earlier
# build left in place would still import, and the tests would run old code
# (the build's output went through grep, whose status `|| true` hid with
# the build's; tests/unit/test_setup_script.py)
build_log=$(mktemp)
trap 'rm -f "$build_log"' EXIT
if ! "$VENV/bin/python" setup.py -q build_ext --inplace > "$build_log" 2>&1; then
  cat "$build_log" >&2
  log "compiling the Cython extensions failed (above)"
  exit 1
fi
# Cython's warnings, but for the known wraparound ones (none left: fine)
grep -v '^warning: .*wraparound\|^$' "$build_log" >&2 || true
# every extension of setup.py's MODULES imports
"$VENV/bin/python" - <<'PY' || { log "an extension module does not import (above)"; exit 1; }
import ast
import importlib

[modules] = [
    ast.literal_eval(node.value) for node in ast.parse(open('setup.py').read()).body
    if isinstance(node, ast.Assign) and any(getattr(t, 'id', '') == 'MODULES' for t in node.targets)
]
for name in modules:
    importlib.import_module(name)
PY
log "ready: $VENV"
