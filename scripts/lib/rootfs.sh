# shellcheck shell=bash
# rootfs.sh - the Debian chroots that scripts/brokers.sh (RabbitMQ 4.x single
# brokers) and scripts/cluster.sh (the three-node cluster) run RabbitMQ in:
# one builder for both (sourced after lib/common.sh, never run).
#
# Settings the sourcing script sets (globals):
#   ROOTFS_MIRROR, ROOTFS_SECURITY_MIRROR  Debian mirrors for the chroot;
#       find_mirrors fills the empty ones from the host's apt sources
#   ROOTFS_MIRROR_SETTING  the script's variable naming the mirror (for errors)
#   ROOTFS_ELSEWHERE       the script's variables that place the rootfs (for errors)
#   ROOTFS_LABEL           prefix of the log lines (e.g. the broker), or empty
#   ROOTFS_LOGS            prefix of the log files: ${ROOTFS_LOGS}debootstrap.log,
#                          ${ROOTFS_LOGS}apt.log
#   ROOTFS_ARCH            Debian architecture of the rootfs (empty: the host's);
#                          another one runs under qemu-user (lib/arm64.sh's
#                          arm64_binfmt registers it first)
#
# A finished rootfs has a marker file (its name is the script's) holding
# "suite=SUITE rabbitmq-server=VERSION erlang-base=VERSION": what was built.

# PATH inside the chroot (RabbitMQ's CLI first)
CHROOT_PATH=/usr/lib/rabbitmq/bin:/usr/sbin:/usr/bin:/sbin:/bin
# sh -c script that mounts /proc in the rootfs ($0) and runs the command
# shellcheck disable=SC2016
ROOTFS_MOUNT_PROC='mount -t proc proc "$0/proc" && exec "$@"'

# in_rootfs DIR [CHROOT-OPTION...] -- CMD...: run CMD in the rootfs DIR, in a
# private mount namespace with its own /proc (RabbitMQ needs /proc); nothing
# is ever mounted on the host, so the rootfs can always be deleted safely
in_rootfs() {
  local dir=$1 opts=()
  shift
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  unshare --mount --propagation private -- /bin/sh -c "$ROOTFS_MOUNT_PROC" "$dir" \
    chroot "${opts[@]}" "$dir" "$@"
}

# host_mirrors: print "URI SUITE" for every deb source of the host's apt config
host_mirrors() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ }
                       print $i, $(i + 1) }' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'BEGIN { RS = ""; FS = "\n" }
         { t = u = s = ""; en = "yes"
           for (i = 1; i <= NF; i++) {
             if ($i ~ /^#/) continue
             k = tolower($i); sub(/:.*/, "", k); v = $i; sub(/^[^:]*:[ \t]*/, "", v)
             if (k == "types") t = v; else if (k == "uris") u = v
             else if (k == "suites") s = v; else if (k == "enabled") en = tolower(v)
           }
           if (en == "no" || (" " t " ") !~ / deb /) next
           nu = split(u, us, /[ \t]+/); ns = split(s, ss, /[ \t]+/)
           for (a = 1; a <= nu; a++) for (b = 1; b <= ns; b++) print us[a], ss[b] }' "$f"
  done
}

find_mirrors() {  # set ROOTFS_MIRROR / ROOTFS_SECURITY_MIRROR unless given
  local codename list
  # shellcheck disable=SC1091
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  list=$(host_mirrors | grep -E '^(https?|ftp|file):/' || true)
  [ -n "$ROOTFS_MIRROR" ] ||
    ROOTFS_MIRROR=$(awk -v s="$codename" '$2 == s { print $1; exit }' <<< "$list")
  [ -n "$ROOTFS_SECURITY_MIRROR" ] ||
    ROOTFS_SECURITY_MIRROR=$(awk -v s="$codename-security" '$2 == s { print $1; exit }' <<< "$list")
  [ -n "$ROOTFS_MIRROR" ] ||
    die "${ROOTFS_LABEL:+$ROOTFS_LABEL: }no Debian mirror for '$codename' in the host's apt sources; set $ROOTFS_MIRROR_SETTING"
}

rootfs_pkg_version() {  # DIR PKG: version of the package installed in the rootfs
  # shellcheck disable=SC2016
  chroot "$1" dpkg-query -W -f='${Version}' "$2"
}

# rootfs_base PART SUITE: debootstrap SUITE (minbase) into PART, with its apt
# sources, the host's apt proxy, no service starting from maintainer scripts
# and name resolution of localhost (scripts/pythons.sh's rootfs are this)
rootfs_base() {
  local part=$1 suite=$2 t script=() arch=() proxy="" who=${ROOTFS_LABEL:+$ROOTFS_LABEL: }
  host_apt_install debootstrap
  [ -z "${ROOTFS_ARCH:-}" ] || arch=(--arch "$ROOTFS_ARCH")
  find_mirrors
  eval "$(apt-config shell proxy Acquire::http::Proxy)"
  [ -z "$proxy" ] || export http_proxy=$proxy
  # suites newer than the host's debootstrap use the sid script
  [ -e "/usr/share/debootstrap/scripts/$suite" ] || script=(/usr/share/debootstrap/scripts/sid)
  log "${who}debootstrap $suite${ROOTFS_ARCH:+ ($ROOTFS_ARCH)} from $ROOTFS_MIRROR -> $part"
  t=$EPOCHREALTIME
  # a private mount namespace: whatever debootstrap mounts goes away with it
  # (another architecture's second stage runs through binfmt_misc and qemu)
  unshare --mount --propagation private -- \
    debootstrap --variant=minbase "${arch[@]}" "$suite" "$part" "$ROOTFS_MIRROR" "${script[@]}" \
    > "${ROOTFS_LOGS}debootstrap.log" 2>&1 ||
    { tail_logs "${ROOTFS_LOGS}debootstrap.log" "$part/debootstrap/debootstrap.log"; die "${who}debootstrap failed"; }
  log "${who}debootstrap done in $(elapsed "$t")s"

  # no service starts from maintainer scripts; name resolution; apt sources
  printf '#!/bin/sh\nexit 101\n' > "$part/usr/sbin/policy-rc.d"
  chmod 755 "$part/usr/sbin/policy-rc.d"
  printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$part/etc/hosts"
  {
    echo "deb $ROOTFS_MIRROR $suite main"
    # unstable has no -updates or -security suites
    if [ "$suite" != sid ] && [ "$suite" != unstable ]; then
      echo "deb $ROOTFS_MIRROR $suite-updates main"
      [ -z "$ROOTFS_SECURITY_MIRROR" ] || echo "deb $ROOTFS_SECURITY_MIRROR $suite-security main"
    fi
  } > "$part/etc/apt/sources.list"
  # Release files of -updates/-security expire; a mirror snapshot or a skewed
  # clock must not break CI
  {
    echo 'Acquire::Check-Valid-Until "false";'
    [ -z "$proxy" ] || echo "Acquire::http::Proxy \"$proxy\";"
  } > "$part/etc/apt/apt.conf.d/90rbfly"
}

# rootfs_debootstrap PART SUITE UID: rootfs_base, then install rabbitmq-server
# there; the service account rabbitmq gets uid/gid UID
rootfs_debootstrap() {
  local part=$1 suite=$2 uid=$3 t who=${ROOTFS_LABEL:+$ROOTFS_LABEL: }
  rootfs_base "$part" "$suite"
  # a distinctive uid for the service account (the package only creates it
  # when missing), so it cannot alias a host account
  chroot "$part" groupadd --system --gid "$uid" rabbitmq
  chroot "$part" useradd --system --uid "$uid" --gid "$uid" \
    --home-dir /var/lib/rabbitmq --no-create-home --shell /usr/sbin/nologin rabbitmq

  log "${who}apt-get install rabbitmq-server (inside the chroot)"
  t=$EPOCHREALTIME
  local env=(env -i PATH="$CHROOT_PATH" LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive)
  { in_rootfs "$part" -- "${env[@]}" apt-get -q update &&
    in_rootfs "$part" -- "${env[@]}" apt-get -q -y install --no-install-recommends rabbitmq-server &&
    in_rootfs "$part" -- "${env[@]}" apt-get clean; } > "${ROOTFS_LOGS}apt.log" 2>&1 ||
    { tail_logs "${ROOTFS_LOGS}apt.log"; die "${who}apt-get install rabbitmq-server in the chroot failed"; }
  rm -rf "$part"/var/lib/apt/lists/*_Packages* "$part"/var/lib/apt/lists/*_Translation*
  log "${who}installed rabbitmq-server $(rootfs_pkg_version "$part" rabbitmq-server)" \
      "(erlang $(rootfs_pkg_version "$part" erlang-base)) in $(elapsed "$t")s"
}

# rootfs_install ROOT MARKER SUITE FILL [ARG...]: unless MARKER (a file in
# ROOT) is there, let FILL PART ARG... fill PART (ROOT.partial, which it
# finds empty), then put PART in place of ROOT and write MARKER (the versions
# it holds). FILL is rootfs_debootstrap or a function of the script's.
rootfs_install() {
  local root=$1 marker=$2 suite=$3 fill=$4 part=$1.partial opts ver erl
  local who=${ROOTFS_LABEL:+$ROOTFS_LABEL: }
  shift 4
  [ ! -f "$marker" ] || return 0
  mkdir -p "$(dirname "$root")"
  opts=$(findmnt -no OPTIONS --target "$(dirname "$root")" || true)
  case ",$opts," in *,noexec,*|*,nodev,*)
    die "${who}$(dirname "$root") is mounted noexec/nodev; set $ROOTFS_ELSEWHERE elsewhere" ;;
  esac
  if [ -e "$part" ]; then log "${who}removing unfinished $part"; rm -rf --one-file-system "$part"; fi
  "$fill" "$part" "$@"
  ver=$(rootfs_pkg_version "$part" rabbitmq-server)
  erl=$(rootfs_pkg_version "$part" erlang-base)
  rm -rf --one-file-system "$root"
  mv "$part" "$root"
  echo "suite=$suite rabbitmq-server=$ver erlang-base=$erl" > "$marker"
}
