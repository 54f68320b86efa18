# shellcheck shell=bash
# pythons.sh - the CPython versions besides the host's (3.11, Debian 12) that
# rbfly is built and tested on, each from a Debian release's own packages in
# a chroot: 3.13 from Debian 13 (trixie), 3.14 (its default python3) and 3.15
# (its newest) from Debian unstable. Used by scripts/pythons.sh (unit and
# core integration tests) and scripts/wheel.sh (a manylinux wheel for each);
# sourced after lib/common.sh and lib/rootfs.sh, never run.
#
# The rootfs are their own, not the brokers' (scripts/brokers.sh): apt-get
# there pulls in compilers and may upgrade libraries of Debian unstable,
# which must not happen under a running RabbitMQ. Each is debootstrapped once
# (~1.5 min) and cached in PYTHONS_DIR; its marker file lists the Pythons
# installed. A venv per version, /opt/rbfly/VERSION in its rootfs, holds the
# build and test tools (pinned by a stamp of their list).
#
# Environment (defaults in brackets):
#   RBFLY_PYTHONS [3.13 3.14 3.15]  the versions (none: "")
#   PYTHONS_DIR [/var/cache/rbfly-pythons]  the rootfs, logs
#   PYTHONS_MIRROR, PYTHONS_SECURITY_MIRROR  Debian mirrors [the host's]
#   PY_ARCH [the host's]  the rootfs' Debian architecture: lib/arm64.sh sets
#       arm64 (and its own PYTHONS_DIR and versions, 3.11 from Debian 12 too)
# Debian ships no free-threaded build (no python3.1Xt or -nogil package, in
# trixie or unstable), so none is tested.

PYTHONS_DIR=${PYTHONS_DIR:-/var/cache/rbfly-pythons}
RBFLY_PYTHONS=${RBFLY_PYTHONS-3.13 3.14 3.15}
# the build tools and the test dependencies of pyproject.toml that rbfly's
# unit and core tests import (not the peers' clients: python-qpid-proton
# has no wheels past 3.12, rstream, the benchmarks' tools): mypy (the tests
# of what a user's type checker says) and the serializers' packages too,
# which have wheels for 3.13 to 3.15; without them their tests skipped;
# httpx, of the admin extra (rbfly.streams.admin imports it when used)
# (tests/unit/test_pythons_script.py checks that every package the unit
# tests run here import is in this list)
PY_TOOLS=('setuptools>=77' 'cython>=3.0.11,<3.3' wheel
          'pytest>=8' 'pytest-asyncio>=1.5' 'hypothesis>=6.100' 'uvloop>=0.19'
          'opentelemetry-sdk>=1.25' mmh3 'cramjam>=2.8'
          'mypy>=1.11' 'msgpack>=1.0' 'msgspec>=0.18' 'pydantic>=2' 'httpx>=0.27')
# compression codecs tested where their wheels exist (zstandard and lz4 have
# none for 3.15 yet; an sdist build would take minutes)
PY_TOOLS_BINARY=('zstandard>=0.22' 'lz4>=4.3')

py_suite() {  # VERSION: the Debian suite whose packages give it
  case $1 in
    3.11) echo bookworm ;;  # the host's own on x86-64; the arm64 rootfs'
    3.13) echo trixie ;;
    3.14|3.15) echo sid ;;
    *) die "no Debian suite known for Python $1 (RBFLY_PYTHONS)" ;;
  esac
}
py_root() { echo "$PYTHONS_DIR/rootfs-$(py_suite "$1")"; }
py_venv() { echo "/opt/rbfly/$1"; }  # in the rootfs

# py_env: the environment of a command in a Python rootfs (env -i ...): pip
# reaches PyPI as the host does (its CA bundle, copied in by py_prepare, and
# index settings), the brokers' URLs pass through; CI is true unless set
# otherwise: the runs there are checks, where a missing broker fails the
# test rather than skipping it (tests/missing.py; CI=false to let it skip)
py_env() {
  local v
  printf '%s\n' env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=/root LANG=C.UTF-8 LC_ALL=C.UTF-8 \
    PIP_CERT=/etc/rbfly-host-ca.crt SSL_CERT_FILE=/etc/rbfly-host-ca.crt \
    PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_DEFAULT_TIMEOUT="${PIP_DEFAULT_TIMEOUT:-180}" \
    PIP_ROOT_USER_ACTION=ignore PYTHONDONTWRITEBYTECODE=1 CI="${CI:-true}"
  for v in PIP_INDEX_URL PIP_EXTRA_INDEX_URL http_proxy https_proxy HTTP_PROXY HTTPS_PROXY \
           no_proxy NO_PROXY RBFLY_URL RBFLY_URL4 RBFLY_URL43 CFLAGS; do
    [ -z "${!v:-}" ] || printf '%s=%s\n' "$v" "${!v}"
  done
}

# py_run VERSION CMD...: run CMD in the rootfs of VERSION (lib/rootfs.sh's
# in_rootfs: a private mount namespace, the host's network) with py_env
py_run() {
  local v=$1 env
  shift
  mapfile -t env < <(py_env)
  in_rootfs "$(py_root "$v")" -- "${env[@]}" "$@"
}

# py_fill PART SUITE PKG...: rootfs_install's filler: debootstrap, then the
# Pythons' packages
py_fill() {
  local part=$1 suite=$2
  shift 2
  rootfs_base "$part" "$suite"
  py_apt "$part" "$@"
}

# py_apt ROOT PKG...: apt-get install PKG... in ROOT
py_apt() {
  local root=$1 t=$EPOCHREALTIME
  shift
  local env=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive)
  log "${ROOTFS_LABEL}: apt-get install $* (inside the chroot)"
  { in_rootfs "$root" -- "${env[@]}" apt-get -q update &&
    in_rootfs "$root" -- "${env[@]}" apt-get -q -y install --no-install-recommends "$@" &&
    in_rootfs "$root" -- "${env[@]}" apt-get clean; } >> "${ROOTFS_LOGS}apt.log" 2>&1 ||
    { tail_logs "${ROOTFS_LOGS}apt.log"; die "${ROOTFS_LABEL}: apt-get install $* failed"; }
  rm -rf "$root"/var/lib/apt/lists/*_Packages* "$root"/var/lib/apt/lists/*_Translation*
  log "${ROOTFS_LABEL}: installed $* in $(elapsed "$t")s"
}

# py_prepare VERSION: its rootfs with gcc, pythonV-dev and pythonV-venv (and
# those of the other versions of RBFLY_PYTHONS from the same suite, in one
# go), and its venv of tools; cheap when both are there (one lock per
# rootfs: wheel.sh and pythons.sh may prepare the same one at once)
py_prepare() {
  local v=$1 suite root marker pkgs=(gcc) missing=() p w venv stamp
  suite=$(py_suite "$v")
  root=$(py_root "$v")
  marker=$root/.rbfly-pythons
  for w in $RBFLY_PYTHONS; do
    [ "$(py_suite "$w")" != "$suite" ] || pkgs+=("python$w-dev" "python$w-venv")
  done
  mkdir -p "$PYTHONS_DIR/log"
  (
    flock -w 900 9 || die "timeout waiting for $PYTHONS_DIR/$suite.lock"
    ROOTFS_LABEL=python-$suite${PY_ARCH:+-$PY_ARCH}
    ROOTFS_LOGS=$PYTHONS_DIR/log/$suite-
    # shellcheck disable=SC2034  # lib/rootfs.sh's settings
    ROOTFS_MIRROR=${PYTHONS_MIRROR:-} ROOTFS_SECURITY_MIRROR=${PYTHONS_SECURITY_MIRROR:-} \
      ROOTFS_MIRROR_SETTING=PYTHONS_MIRROR ROOTFS_ARCH=${PY_ARCH:-}
    if [ ! -f "$marker" ]; then
      [ "$(id -u)" = 0 ] || die "the Python $v rootfs needs root (debootstrap, chroot)"
      [ ! -e "$root.partial" ] || rm -rf --one-file-system "$root.partial"
      mkdir -p "$PYTHONS_DIR"
      py_fill "$root.partial" "$suite" "${pkgs[@]}"
      rm -rf --one-file-system "$root"
      mv "$root.partial" "$root"
      printf '%s\n' "${pkgs[@]}" > "$marker"
    else
      for p in "${pkgs[@]}"; do grep -qx "$p" "$marker" || missing+=("$p"); done
      if [ ${#missing[@]} -gt 0 ]; then
        py_apt "$root" "${missing[@]}"
        printf '%s\n' "${missing[@]}" >> "$marker"
      fi
    fi
    cp /etc/ssl/certs/ca-certificates.crt "$root/etc/rbfly-host-ca.crt"
  ) 9> "$PYTHONS_DIR/$suite.lock"

  venv=$(py_venv "$v")
  stamp=$venv/.rbfly-tools-$(printf '%s\n' "${PY_TOOLS[@]}" "${PY_TOOLS_BINARY[@]}" | sha1sum | cut -c1-12)
  [ ! -f "$root$stamp" ] || return 0
  log "python $v: venv $venv with the build and test tools"
  rm -rf "${root:?}$venv"
  py_run "$v" "python$v" -m venv "$venv"
  py_run "$v" "$venv/bin/python" -m pip install -q "${PY_TOOLS[@]}" >&2
  py_run "$v" "$venv/bin/python" -m pip install -q --only-binary :all: "${PY_TOOLS_BINARY[@]}" \
    >/dev/null 2>&1 || log "python $v: no wheels of ${PY_TOOLS_BINARY[*]} (their tests skip)"
  touch "$root$stamp"
}

# py_in VERSION DIR CMD...: py_run CMD in DIR (a path of the host in the
# rootfs of VERSION)
py_in() {
  local v=$1 dir=$2 root
  root=$(py_root "$v")
  shift 2
  # shellcheck disable=SC2016  # the chroot's shell expands them
  py_run "$v" /bin/sh -c 'cd "$1" && shift && exec "$@"' sh "${dir#"$root"}" "$@"
}

# py_prepare_all: py_prepare every version of RBFLY_PYTHONS, at once
py_prepare_all() {
  local v pids=() p rc=0
  for v in $RBFLY_PYTHONS; do py_prepare "$v" & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  [ $rc = 0 ] || die "preparing the Pythons failed (above)"
}

# py_tree VERSION: a fresh copy of rbfly's sources in the rootfs of VERSION
# (wheel.sh's way: the tracked and new, not ignored files, with the C files
# Cython generated in place, so no extension built on the host gets in);
# sets PY_TREE to its directory on the host (PY_TREE/src the sources,
# PY_TREE/out for wheels) and adds it to PY_TREES, which py_cleanup removes
PY_TREES=()
py_tree() {
  local f
  PY_TREE=$(mktemp -d "$(py_root "$1")/var/tmp/rbfly-$1-XXXXXX")
  PY_TREES+=("$PY_TREE")
  mkdir "$PY_TREE/src" "$PY_TREE/out"
  git ls-files -z --cached --others --exclude-standard |
    xargs -0 cp -p --parents -t "$PY_TREE/src" 2>/dev/null ||
    git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
      [ -e "$f" ] && cp -p --parents "$f" "$PY_TREE/src"; done
  find rbfly -name '*.c' -exec cp -p --parents -t "$PY_TREE/src" {} +
  printf '[build_ext]\nparallel = %s\n' "$(nproc)" >> "$PY_TREE/src/setup.cfg"
}
py_cleanup() { [ ${#PY_TREES[@]} = 0 ] || rm -rf "${PY_TREES[@]}"; }

# py_build_wheel VERSION DIR: build rbfly's wheel (not repaired) with Python
# VERSION from DIR/src (py_tree) into DIR/out, CFLAGS=-g0; prints its path
py_build_wheel() {
  local v=$1 dir=$2 root rc=0
  root=$(py_root "$v")
  CFLAGS="-g0 ${CFLAGS:-}" py_in "$v" "$dir/src" "$(py_venv "$v")/bin/python" -m pip wheel -q \
    --no-deps --no-build-isolation -w "${dir#"$root"}/out" . > "$dir/build.log" 2>&1 || rc=$?
  if [ $rc != 0 ]; then tail -n 40 "$dir/build.log" >&2; return 1; fi
  echo "$dir"/out/*.whl
}

# py_inplace VERSION DIR WHEEL: put the extension modules of WHEEL in place
# in DIR/src, as `setup.py build_ext --inplace` would (the tests run there)
py_inplace() {
  local v=$1 dir=$2 root
  root=$(py_root "$v")
  cp "$3" "$dir/"
  py_run "$v" "$(py_venv "$v")/bin/python" -c 'import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2], [n for n in z.namelist() if n.endswith(".so")])' \
    "${dir#"$root"}/$(basename "$3")" "${dir#"$root"}/src"
}

# the integration tests every version runs: publishing and subscribing,
# offsets, recovery from cut connections, and the behaviour tests (one
# specification, run against the brokers and the fake broker); the broker
# restart test is left out (it runs scripts/brokers.sh, on the host)
PY_CORE=(tests/integration/test_publish_subscribe.py tests/integration/test_offsets.py
         tests/integration/test_recovery.py tests/integration/test_behaviour.py)
PY_CORE_LEFT_OUT=(tests/integration/test_recovery.py::test_broker_restart)
# the unit tests of tools, not of rbfly, whose imports are not installed
# (or which read the repository with git, not in the versions' root filesystems)
PY_SKIP_UNIT=(tests/unit/test_perf_floor.py tests/unit/test_perf_imports.py
              tests/unit/test_perf_instructions.py tests/unit/test_perf_official.py
              tests/unit/test_perf_tool.py tests/unit/test_perf_workloads.py
              tests/unit/test_fuzz_regressions.py tests/unit/test_consumer_group_analysis.py
              tests/unit/test_soak_verdict.py tests/unit/amqp/test_interop_proton.py
              tests/unit/test_arm64_script.py tests/unit/test_fuzz_runs.py
              tests/unit/test_perf_page.py)

# py_pytest_args unit|core EXPR: pytest's arguments (one a line) for the
# unit tests or the core integration tests, EXPR a -k expression (empty:
# all); a test that skips for a reason not allowed fails the run
# (--no-skips, tests/skips.py), and the tests left out are deselected, not
# skipped
py_pytest_args() {
  local f
  printf '%s\n' -q -p no:cacheprovider --no-skips
  case $1 in
    unit)
      for f in "${PY_SKIP_UNIT[@]}"; do printf -- '--ignore=%s\n' "$f"; done
      printf '%s\n' -k "$2" tests/unit ;;
    core)
      for f in "${PY_CORE_LEFT_OUT[@]}"; do printf -- '--deselect=%s\n' "$f"; done
      printf '%s\n' -k "not uvloop${2:+ and $2}" "${PY_CORE[@]}" ;;
    *) die "py_pytest_args: unit or core, not $1" ;;
  esac
}
