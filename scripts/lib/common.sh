# shellcheck shell=bash
# common.sh - helpers shared by scripts/brokers.sh, cluster.sh, kafka.sh and
# java-perf.sh (sourced after `set -euo pipefail`, never run).
#
# The sourcing script sets LOG_TAG (the name in its log lines) first. It may
# set LOG_T0 (an $EPOCHREALTIME) after sourcing, to count the times in its log
# lines from an earlier start (brokers.sh's parallel workers do).
# host_apt_install needs HOST_APT_LOCK and HOST_APT_LOG (file paths).

LOG_T0=$EPOCHREALTIME

elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
log() { printf '[%s %s +%ss] %s\n' "$LOG_TAG" "$(date +%T)" "$(elapsed "$LOG_T0")" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
installed() { [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == *"ok installed" ]]; }

# usage: the script's header comment (from line 2 to `set -euo`) on stderr
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }

tail_logs() {  # FILE... : show the end of every existing file on stderr
  local f
  for f; do
    [ -s "$f" ] || continue
    printf -- '----- tail %s -----\n' "$f" >&2
    tail -n 40 "$f" >&2
  done
}

# put_file PATH < content: write PATH when its content differs (then
# CONFIG_CHANGED=1)
put_file() {
  local new
  new=$(cat)
  if [ -f "$1" ] && [ "$(cat "$1")" = "$new" ]; then return 0; fi
  printf '%s\n' "$new" > "$1"
  # shellcheck disable=SC2034  # read by the sourcing script
  CONFIG_CHANGED=1
}

# host_apt_install PKG...: apt-get install on the host what is missing, one
# script at a time ($HOST_APT_LOCK), output in $HOST_APT_LOG; apt-get update
# only when a package has no candidate or the install fails (stale lists)
host_apt_install() {
  local p missing=() update=0
  for p; do installed "$p" || missing+=("$p"); done
  [ "${#missing[@]}" -gt 0 ] || return 0
  [ "$(id -u)" = 0 ] || die "install ${missing[*]} first (needs root)"
  mkdir -p "$(dirname "$HOST_APT_LOCK")" "$(dirname "$HOST_APT_LOG")"
  (
    flock -w 600 9 || die "timeout waiting for $HOST_APT_LOCK"
    for p in "${missing[@]}"; do
      [[ $(apt-cache policy "$p" 2>/dev/null) == *"Candidate: "[^\(]* ]] || update=1
    done
    export DEBIAN_FRONTEND=noninteractive
    local apt=(apt-get -q -y -o DPkg::Lock::Timeout=300) t=$EPOCHREALTIME rc=0 own_policy=0
    # keep the maintainer scripts from starting services (we start the node ourselves)
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
      chmod 755 /usr/sbin/policy-rc.d; own_policy=1
    fi
    log "host: apt-get install ${missing[*]}$([ $update = 0 ] || echo ' (after apt-get update)')"
    {
      if [ $update = 1 ]; then "${apt[@]}" update; fi
      "${apt[@]}" install --no-install-recommends "${missing[@]}" ||
        { [ $update = 0 ] && "${apt[@]}" update &&
          "${apt[@]}" install --no-install-recommends "${missing[@]}"; }
    } >> "$HOST_APT_LOG" 2>&1 || rc=$?
    if [ $own_policy = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi
    if [ $rc != 0 ]; then tail_logs "$HOST_APT_LOG"; die "host: apt-get install ${missing[*]} failed"; fi
    log "host: installed ${missing[*]} in $(elapsed "$t")s"
  ) 9> "$HOST_APT_LOCK"
}
