# shellcheck shell=bash disable=SC2034  # it sets lib/pythons.sh's and lib/common.sh's settings
# arm64.sh - rbfly's aarch64 wheels, built and tested in Debian arm64 root
# filesystems under emulation (qemu-user through binfmt_misc), for
# scripts/wheel.sh --arch aarch64 and scripts/arm64.sh; sourced after
# lib/common.sh, lib/rootfs.sh and lib/pythons.sh, never run.
#
# The root filesystems are lib/pythons.sh's, made of Debian's arm64 binary
# packages (PY_ARCH=arm64) in a directory of their own: CPython 3.11 from
# Debian 12, 3.13 from Debian 13, 3.14 and 3.15 from Debian unstable (the
# versions Debian builds for arm64; no 3.12 and no free-threaded build is
# packaged there). Everything runs emulated: a program of the rootfs is
# started by the kernel through qemu-aarch64-static, registered with the F
# flag (the interpreter is opened once, so it works inside a chroot).
#
# The cache (ARM64_DIR), what makes a second run quick:
#   rootfs-SUITE/      the root filesystems, with gcc, pythonV-dev and
#                      pythonV-venv, and /opt/rbfly/V, the venv of the build
#                      and test tools (lib/pythons.sh; a marker file each)
#   ext/KEY/cpVV/      the extension modules compiled for CPython V.V from
#                      the Cython sources whose hash is KEY (arm64_key): a
#                      wheel of other Python files reuses them, and only a
#                      change to the Cython sources compiles again
#   wheels/            the repaired wheels of the last build
#   log/               debootstrap, apt and build logs
#
# Environment (defaults in brackets):
#   RBFLY_ARM64_DIR [~/.cache/rbfly-arm64]  the cache
#   RBFLY_ARM64_PYTHONS [3.11 3.13 3.14 3.15]  the versions
#   RBFLY_ARM64_CROSS [1]  compile the extension modules here with Debian's
#                          cross-compiler (arm64_cross); 0: under emulation

ARM64_DIR=${RBFLY_ARM64_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rbfly-arm64}
ARM64_PYTHONS=${RBFLY_ARM64_PYTHONS-3.11 3.13 3.14 3.15}
# lib/pythons.sh's settings: its rootfs, of arm64, in the cache
PYTHONS_DIR=$ARM64_DIR
RBFLY_PYTHONS=$ARM64_PYTHONS
PY_ARCH=arm64
HOST_APT_LOCK=$ARM64_DIR/apt.lock
HOST_APT_LOG=$ARM64_DIR/log/host-apt.log
BINFMT=/proc/sys/fs/binfmt_misc

# arm64_binfmt: qemu-user-static installed (Debian's package) and aarch64
# binaries registered with binfmt_misc, with the F flag
arm64_binfmt() {
  [ "$(id -u)" = 0 ] || die "aarch64 emulation needs root (binfmt_misc, debootstrap, chroot)"
  host_apt_install qemu-user-static
  if [ ! -e "$BINFMT/register" ]; then
    mount -t binfmt_misc binfmt_misc "$BINFMT" || die "cannot mount binfmt_misc on $BINFMT"
  fi
  if [ ! -e "$BINFMT/qemu-aarch64" ]; then
    # the registration Debian's package ships for systemd-binfmt (flags OPF)
    cat /usr/lib/binfmt.d/qemu-aarch64.conf > "$BINFMT/register" ||
      die "cannot register qemu-aarch64 with binfmt_misc"
    log "registered $(sed -n 's/^interpreter //p' "$BINFMT/qemu-aarch64") for aarch64 binaries"
  fi
  grep -qx enabled "$BINFMT/qemu-aarch64" || die "$BINFMT/qemu-aarch64 is disabled (echo 1 > it)"
  grep -q '^flags:.*F' "$BINFMT/qemu-aarch64" ||
    die "qemu-aarch64 is registered without the F flag: chroots cannot find its interpreter" \
        "(echo -1 > $BINFMT/qemu-aarch64 and run again)"
}

# arm64_key: the hash of the Cython sources and of what is compiled from
# them: the .pyx, .pxd, .pxi and .h files of rbfly, the C files Cython
# generated from them here (scripts/setup.sh makes them; they are compiled
# as they are, not made again by Cython under emulation, and they carry
# the Cython version) and setup.py, which sets the compiler's flags; 16 hex
# digits. Fails when a C file is older than its .pyx or .pxd (run
# scripts/setup.sh): it would be a build of older sources.
arm64_key() {
  local f c cs=()
  mapfile -t cs < <(find rbfly -name '*.c' | LC_ALL=C sort)
  [ ${#cs[@]} -gt 0 ] || die "no C files generated from the .pyx files: run scripts/setup.sh first"
  for c in "${cs[@]}"; do
    for f in "${c%.c}.pyx" "${c%.c}.pxd"; do
      [ ! "$f" -nt "$c" ] || die "$c is older than $f: run scripts/setup.sh (it runs Cython)"
    done
  done
  {
    git ls-files -z --cached --others --exclude-standard -- \
      'rbfly/*.pyx' 'rbfly/*.pxd' 'rbfly/*.pxi' 'rbfly/*.h' setup.py | LC_ALL=C sort -z
    printf '%s\0' "${cs[@]}"
  } | while IFS= read -r -d '' f; do
    [ -e "$f" ] && printf '%s %s\n' "$f" "$(sha256sum < "$f" | cut -c1-64)"; done |
    sha256sum | cut -c1-16
}

arm64_ext() { echo "$ARM64_DIR/ext/$1/cp${2/./}"; }  # KEY VERSION: its cached modules

# arm64_cached KEY: whether every version's rootfs, venv and extension
# modules of KEY are in the cache (what scripts/arm64.sh --cached needs);
# prints what is missing
arm64_cached() {
  local v ok=0 root stamp
  stamp=.rbfly-tools-$(printf '%s\n' "${PY_TOOLS[@]}" "${PY_TOOLS_BINARY[@]}" | sha1sum | cut -c1-12)
  for v in $ARM64_PYTHONS; do
    root=$(py_root "$v")
    if [ ! -f "$root/.rbfly-pythons" ] || [ ! -f "$root$(py_venv "$v")/$stamp" ]; then
      echo "python $v: no rootfs or venv of tools in $root"; ok=1
    elif [ ! -f "$(arm64_ext "$1" "$v")/.done" ]; then
      echo "python $v: no extension modules built from these Cython sources ($(arm64_ext "$1" "$v"))"
      ok=1
    fi
  done
  return $ok
}

# arm64_wheel VERSION KEY OUT: the aarch64 wheel of CPython VERSION, built
# in its rootfs from a fresh copy of the sources, with the extension modules
# of KEY when cached (compiled there otherwise, then cached), repaired
# (auditwheel on the host: a manylinux tag), installed into a
# fresh venv there and smoke-tested (scripts/smoke.py); copied to OUT and
# ARM64_DIR/wheels; prints its path. Needs auditwheel and patchelf on PATH.
arm64_wheel() {
  local v=$1 key=$2 out=$3 t=$EPOCHREALTIME ext dir root raw wheel libdir venv cached=0
  ext=$(arm64_ext "$key" "$v")
  py_prepare "$v"
  root=$(py_root "$v")
  py_tree "$v"
  dir=$PY_TREE
  # the C files newer than the Cython includes of the rootfs' venv (its
  # install time), else cythonize makes them again there (~5 min emulated)
  find "$dir/src/rbfly" -name '*.c' -exec touch {} +
  case ${RBFLY_ARM64_CROSS:-1} in
    0|1) ;;
    *) die "RBFLY_ARM64_CROSS=$RBFLY_ARM64_CROSS: 1 (cross-compile, the default) or 0 (gcc under emulation)" ;;
  esac
  if [ ! -f "$ext/.done" ] && [ "${RBFLY_ARM64_CROSS:-1}" = 1 ]; then
    arm64_cross "$v" "$key" "$dir"
  fi
  if [ -f "$ext/.done" ]; then
    # the cached modules where setuptools' build_ext puts them, newer than
    # their C files: it takes them as up to date and compiles nothing
    libdir=$(py_run "$v" "python$v" -c 'import sys, sysconfig
print("lib.{}-{}".format(sysconfig.get_platform(), sys.implementation.cache_tag))')
    mkdir -p "$dir/src/build/$libdir"
    cp -r "$ext/rbfly" "$dir/src/build/$libdir/"
    find "$dir/src/build" -name '*.so' -exec touch {} +
    cached=1
  fi
  raw=$(py_build_wheel "$v" "$dir") || { cp "$dir/build.log" "$ARM64_DIR/log/build-$v.log"; die "python $v (aarch64): the build failed (log: $ARM64_DIR/log/build-$v.log)"; }
  cp "$dir/build.log" "$ARM64_DIR/log/build-$v.log"
  if [ $cached = 1 ]; then
    # the wheel holds the cached modules, byte for byte
    arm64_so_files "$raw" "$dir/check"
    diff -rq "$ext/rbfly" "$dir/check/rbfly" >&2 ||
      die "python $v (aarch64): the wheel's extension modules are not the cached ones"
    log "python $v (aarch64): $(basename "$raw") from the cached extension modules" \
        "(key $key) in $(elapsed "$t")s"
  else
    rm -rf "$ext.partial"
    arm64_so_files "$raw" "$ext.partial"
    printf 'built %s with %s, %s; %ss\n' "$(date -u +%FT%TZ)" \
      "$(py_run "$v" "python$v" -VV | head -n 1)" "$(py_run "$v" gcc --version | head -n 1)" \
      "$(elapsed "$t")" > "$ext.partial/.done"
    rm -rf "$ext"
    mv "$ext.partial" "$ext"
    log "python $v (aarch64): compiled $(basename "$raw") under emulation in $(elapsed "$t")s" \
        "(cached as $ext)"
  fi

  # without --strip: it runs this machine's strip, which cannot read
  # aarch64 files, and setup.py links them stripped already (-s)
  mkdir "$dir/repaired"
  auditwheel repair -w "$dir/repaired" "$raw" > "$dir/repair.log" 2>&1 ||
    { cat "$dir/repair.log" >&2; die "python $v (aarch64): auditwheel repair failed"; }
  wheel=$(echo "$dir"/repaired/*.whl)
  case "$(basename "$wheel")" in
    *manylinux*_aarch64.whl) ;;
    *) die "python $v (aarch64): auditwheel gave no manylinux aarch64 tag: $(basename "$wheel")" ;;
  esac
  auditwheel show "$wheel" | tr '\n' ' ' | sed 's/  */ /g; s/^/[auditwheel show] /' >&2; echo >&2

  # installed into a fresh venv in the rootfs, smoke-tested from outside
  # the source tree
  venv=${dir#"$root"}/venv
  py_run "$v" "python$v" -m venv --without-pip "$venv"
  py_run "$v" "$(py_venv "$v")/bin/python" -m pip --python "$venv/bin/python" install -q \
    --no-index --no-deps "${wheel#"$root"}" >&2
  py_in "$v" "$dir" "$venv/bin/python" "${dir#"$root"}/src/scripts/smoke.py" >&2
  mkdir -p "$ARM64_DIR/wheels" "$out"
  rm -f "$ARM64_DIR/wheels/rbfly-"*"-cp${v/./}-"*.whl "$out/rbfly-"*"-cp${v/./}-"*aarch64*.whl
  cp "$wheel" "$ARM64_DIR/wheels/"
  cp "$wheel" "$out/"
  log "python $v (aarch64): $(basename "$wheel") in $(elapsed "$t")s"
  echo "$out/$(basename "$wheel")"
}

# arm64_cross VERSION KEY DIR: the extension modules of CPython VERSION
# compiled here by Debian's cross-compiler (gcc-aarch64-linux-gnu, native:
# seconds, where the rootfs' gcc under emulation took 20 minutes) into the
# cache (ext/KEY/cpVV), from the sources of DIR (py_tree). setuptools runs
# in the rootfs as for an emulated build, so that it decides every flag,
# with a compiler that writes its calls down instead (DIR/rec/cc; the
# outputs made empty, so that it goes on to the links); arm64_cross.py makes
# those calls here with --sysroot the rootfs, which gives the CPython
# headers (and pyconfig.h) of the rootfs. glibc's headers, crti.o and the
# libc.so linked are the cross toolchain's own (libc6-dev-arm64-cross, glibc
# 2.36 of Debian 12: searched before the sysroot), older than those of
# Debian 13 and unstable: the modules need no newer glibc than the wheel's
# manylinux tag says, and they run on the newer ones (the tests run there).
# RBFLY_ARM64_CROSS=0 compiles under emulation instead.
arm64_cross() {
  local v=$1 key=$2 dir=$3 t=$EPOCHREALTIME root ext rec libdir links
  root=$(py_root "$v")
  ext=$(arm64_ext "$key" "$v")
  host_apt_install gcc-aarch64-linux-gnu
  rec=$dir/rec
  mkdir -p "$rec/calls"
  cat > "$rec/cc" <<'EOF'
#!/bin/sh
set -e
# a compiler that writes its call down (its directory, then its arguments,
# NUL-separated, a file a call) and makes its output, empty
printf '%s\0' "$PWD" "$@" > "$RBFLY_CALLS/$(date +%s%N).$$"
prev=
for a; do
  [ "$prev" != -o ] || : > "$a"
  prev=$a
done
EOF
  chmod +x "$rec/cc"
  py_in "$v" "$dir/src" env CC="${rec#"$root"}/cc" RBFLY_CALLS="${rec#"$root"}/calls" \
    "$(py_venv "$v")/bin/python" setup.py build_ext > "$dir/record.log" 2>&1 ||
    { tail -n 40 "$dir/record.log" >&2; die "python $v (aarch64): setuptools' build in the rootfs failed"; }
  python3 scripts/lib/arm64_cross.py "$root" "$rec/calls" aarch64-linux-gnu-gcc >&2 ||
    die "python $v (aarch64): the cross-compilation failed"
  rm -rf "$ext.partial"
  mkdir -p "$ext.partial"
  libdir=$(find "$dir/src/build" -maxdepth 1 -name 'lib.*' -type d)
  [ -d "$libdir/rbfly" ] || die "python $v (aarch64): no build/lib.* of setuptools in $dir/src"
  (cd "$libdir" && find rbfly -name '*.so' -exec cp --parents -t "$ext.partial" {} +) ||
    die "python $v (aarch64): the cross-compiled modules could not be copied to the cache"
  # as many modules as links made (a missing one would fail every later
  # build at the check that the wheel holds the cached modules)
  links=$(grep -Lz -- '^-c$' "$rec"/calls/* | wc -l)
  if [ "$links" = 0 ] || [ "$(find "$ext.partial" -name '*.so' | wc -l)" != "$links" ]; then
    die "python $v (aarch64): $links links made, but $(find "$ext.partial" -name '*.so' | wc -l)" \
        "extension modules came out of the cross-compilation"
  fi
  printf 'built %s by %s, glibc %s of the cross toolchain, against %s (cross-compiled, --sysroot %s); %ss\n' \
    "$(date -u +%FT%TZ)" "$(aarch64-linux-gnu-gcc --version | head -n 1)" \
    "$(dpkg-query -W -f '${Version}' libc6-dev-arm64-cross)" \
    "$(py_run "$v" "python$v" -VV | head -n 1)" "$root" "$(elapsed "$t")" > "$ext.partial/.done"
  rm -rf "$ext"
  mv "$ext.partial" "$ext"
  log "python $v (aarch64): extension modules cross-compiled in $(elapsed "$t")s (cached as $ext)"
}

# arm64_so_files WHEEL DIR: the extension modules of WHEEL, under DIR
arm64_so_files() {
  python3 -c 'import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2], [n for n in z.namelist() if n.endswith(".so")])' "$1" "$2"
}
