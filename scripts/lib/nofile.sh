# shellcheck shell=bash
# nofile.sh - the open-file limit of the RabbitMQ nodes scripts/brokers.sh
# and cluster.sh start (sourced after common.sh, never run).
#
# RabbitMQ recommends at least 65536 open files for a node (its production
# checklist): every connection, stream segment and index is one. At
# Debian's default of 1,024, a RabbitMQ 3.10 with 256 streams ran out
# (emfile in its log), its metadata store crashed and it dropped every
# connection (issue 40). A node inherits the limit of the shell that starts
# it (raise_nofile before setsid), unless a PAM session sets its own:
# runuser's pam_limits put the host broker back to 1,024, so brokers.sh
# starts it with setpriv.
#
# BROKERS_NOFILE [65536]: the open files each node gets, and the least
# nofile_check accepts

BROKERS_NOFILE=${BROKERS_NOFILE:-65536}

# raise_nofile: raise this shell's open-file limit, soft and hard, to
# BROKERS_NOFILE (a node started from it inherits both). Where the hard
# limit cannot be raised (no CAP_SYS_RESOURCE, e.g. in a container), the
# soft one goes up to the hard one, with a warning; nofile_check fails then
raise_nofile() {
  local hard
  hard=$(ulimit -Hn)
  if [ "$hard" != unlimited ] && [ "$hard" -lt "$BROKERS_NOFILE" ]; then
    if ulimit -Hn "$BROKERS_NOFILE" 2>/dev/null; then
      hard=$BROKERS_NOFILE
    else
      log "WARNING: the hard limit of open files here is $hard, under RabbitMQ's recommended $BROKERS_NOFILE, and cannot be raised (no CAP_SYS_RESOURCE?): the node gets $hard; raise the limit of the shell that runs this script (ulimit -Hn $BROKERS_NOFILE as root, LimitNOFILE of a systemd unit, the container's --ulimit nofile)"
    fi
  fi
  if [ "$hard" = unlimited ] || [ "$hard" -ge "$BROKERS_NOFILE" ]; then
    ulimit -Sn "$BROKERS_NOFILE"
  else
    ulimit -Sn "$hard"
  fi
}

# nofile_in LIMITS: the soft limit of open files in a /proc/PID/limits file
# (a number or "unlimited"; nothing when the file cannot be read)
nofile_in() { awk '/^Max open files/ { print $4 }' "$1" 2>/dev/null || true; }

# nofile_check WHO LIMITS: print WHO's open-file limit (LIMITS: its
# /proc/PID/limits); return 1 when it is below BROKERS_NOFILE or unknown
nofile_check() {
  local n
  n=$(nofile_in "$2")
  if [ -z "$n" ]; then
    echo "$1: open files unknown (cannot read $2)"
    return 1
  fi
  if [ "$n" != unlimited ] && [ "$n" -lt "$BROKERS_NOFILE" ]; then
    echo "$1: open files $n, under RabbitMQ's recommended $BROKERS_NOFILE (restart the node with this script; if it warns of the hard limit, raise that first)"
    return 1
  fi
  echo "$1: open files $n"
}

# listener_pid PORT: the process listening on the TCP port PORT (ss -p, as root)
listener_pid() {
  { ss -Hltnp "( sport = :$1 )" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2; } ||
    true
}
