#!/usr/bin/env bash
# cluster.sh - a three-node RabbitMQ 4.x cluster for rbfly's failover tests
# (tests/cluster): nodes r1@localhost..r3@localhost, all inside one Debian
# trixie chroot under $BROKERS_DIR/cluster, next to (and without touching)
# the single-node brokers of scripts/brokers.sh.
#
# The rootfs is a copy of the one scripts/brokers.sh built for its 4.x
# broker ($BROKERS_DIR/rootfs-trixie; a few seconds, no download), minus its
# broker state; only when that one is missing is a rootfs debootstrapped,
# by the builder scripts/brokers.sh uses (scripts/lib/rootfs.sh; mirrors from
# the host's apt sources).
#
# Ports (node i = 1..3):  stream 5560+i   amqp 5680+i   mgmt 15680+i
#   dist 25680+i   stream replication 6100+50(i-1)+1..+50   CLI 35690-35699
#   private epmd 4371 (all bound to 127.0.0.1 but stream/amqp/mgmt)
#
# Run as root on Debian 12 (systemd not needed). Every command is idempotent.
#
# Usage: scripts/cluster.sh COMMAND [ARGS]
#   start [NODE..]  install what is missing, start the nodes (all by default,
#                   in parallel), wait until they serve streams, join r2..rN
#                   to r1 when not clustered yet; running nodes are reused
#   stop [NODE..]   graceful shutdown (all by default), then the private epmd
#   restart         stop + start
#   status          per node: state, pid, RSS, ports, open files; cluster
#                   members and streams; exit 0 only if all nodes are up
#   limits          each running node's open-file limit; exit 1 when one
#                   is below BROKERS_NOFILE (RabbitMQ's recommended 65536:
#                   restart the node to apply), 3 when none runs
#   kill NODE       SIGKILL the node's Erlang VM (a crash); prints the time
#   stop-app NODE   rabbitmqctl stop_app on NODE (the VM stays up)
#   revive NODE     bring NODE back (start_app if its VM is up, else boot it)
#   leader STREAM   node name of STREAM's leader, e.g. r2@localhost
#   coordinator     node name of the stream coordinator's Raft leader (when
#                   that node dies, streams have no leader until the
#                   coordinator elected a new one)
#   env             client settings: eval "$(scripts/cluster.sh env)";
#                   RBFLY_CLUSTER_URLS lists the nodes in order (the i-th
#                   URL is node ri)
#   ctl NODE CMD..  a RabbitMQ CLI against NODE inside the chroot, e.g.
#                   scripts/cluster.sh ctl r1 rabbitmq-streams stream_status s
#   logs NODE [N]   tail NODE's log
#   reset           stop and wipe the nodes' data (keeps the rootfs)
#   uninstall       stop and delete the rootfs
# NODE is r1|r2|r3 (or 1|2|3, or r1@localhost).
#
# Environment (defaults in brackets):
#   BROKERS_DIR [/var/cache/rbfly-brokers]
#   CLUSTER_BASE [$BROKERS_DIR/cluster]        rootfs, logs, lock
#   CLUSTER_SEED [$BROKERS_DIR/rootfs-trixie]  finished rootfs to copy (empty:
#                                              always debootstrap)
#   CLUSTER_SUITE [trixie]   CLUSTER_SIZE [3]   CLUSTER_UID [64673]
#   CLUSTER_MIRROR, CLUSTER_SECURITY_MIRROR     [from the host's apt sources;
#                                              BROKERS_MIRROR... also work]
#   CLUSTER_{STREAM,AMQP,MGMT,DIST,REPL}_BASE [5560 5680 15680 25680 6100]
#   CLUSTER_EPMD_PORT [4371]  CLUSTER_ADVERTISED_HOST [localhost]
#   CLUSTER_START_TIMEOUT [240]  seconds to wait for nodes to boot
#   CLUSTER_ERL_ARGS [none]  extra Erlang VM flags of the nodes
#     (RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS)
#   CLUSTER_EXTRA_CONF  extra rabbitmq.conf lines for every node
#   BROKERS_NOFILE [65536]  open files each node gets (scripts/lib/nofile.sh)
set -euo pipefail

BROKERS_DIR=${BROKERS_DIR:-/var/cache/rbfly-brokers}
CLUSTER_BASE=${CLUSTER_BASE:-$BROKERS_DIR/cluster}
CLUSTER_SUITE=${CLUSTER_SUITE:-trixie}
CLUSTER_ROOT=${CLUSTER_ROOT:-$CLUSTER_BASE/rootfs-$CLUSTER_SUITE}
CLUSTER_SEED=${CLUSTER_SEED-$BROKERS_DIR/rootfs-trixie}
CLUSTER_SEED_MARKER=.rbfly-installed  # written by scripts/brokers.sh
CLUSTER_MIRROR=${CLUSTER_MIRROR:-${BROKERS_MIRROR:-}}
CLUSTER_SECURITY_MIRROR=${CLUSTER_SECURITY_MIRROR:-${BROKERS_SECURITY_MIRROR:-}}
CLUSTER_SIZE=${CLUSTER_SIZE:-3}
CLUSTER_NODE_PREFIX=${CLUSTER_NODE_PREFIX:-r}
CLUSTER_HOSTNAME=${CLUSTER_HOSTNAME:-localhost}
CLUSTER_ADVERTISED_HOST=${CLUSTER_ADVERTISED_HOST:-localhost}
CLUSTER_AMQP_BASE=${CLUSTER_AMQP_BASE:-5680}
CLUSTER_STREAM_BASE=${CLUSTER_STREAM_BASE:-5560}
CLUSTER_MGMT_BASE=${CLUSTER_MGMT_BASE:-15680}
CLUSTER_DIST_BASE=${CLUSTER_DIST_BASE:-25680}
CLUSTER_REPL_BASE=${CLUSTER_REPL_BASE:-6100}
CLUSTER_CTL_DIST_MIN=${CLUSTER_CTL_DIST_MIN:-35690}
CLUSTER_CTL_DIST_MAX=${CLUSTER_CTL_DIST_MAX:-35699}
CLUSTER_EPMD_PORT=${CLUSTER_EPMD_PORT:-4371}
CLUSTER_DIST_ADDRESS=${CLUSTER_DIST_ADDRESS:-127.0.0.1}
CLUSTER_PLUGINS=${CLUSTER_PLUGINS:-rabbitmq_management,rabbitmq_stream,rabbitmq_stream_management}
CLUSTER_EXTRA_CONF=${CLUSTER_EXTRA_CONF:-}
CLUSTER_UID=${CLUSTER_UID:-64673}
CLUSTER_START_TIMEOUT=${CLUSTER_START_TIMEOUT:-240}
CLUSTER_ERL_ARGS=${CLUSTER_ERL_ARGS:-}

MARKER=$CLUSTER_ROOT/.cluster-installed
RUN=$CLUSTER_BASE/run
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

LOG_TAG=cluster
# shellcheck source=lib/common.sh
. "$SCRIPT_DIR/lib/common.sh"
# shellcheck source=lib/rootfs.sh
. "$SCRIPT_DIR/lib/rootfs.sh"
# shellcheck source=lib/nofile.sh
. "$SCRIPT_DIR/lib/nofile.sh"
# (the apt lock is scripts/brokers.sh's: one of them installs at a time)
HOST_APT_LOCK=$BROKERS_DIR/run/apt.lock
HOST_APT_LOG=$RUN/host-apt.log
ROOTFS_MIRROR=$CLUSTER_MIRROR
ROOTFS_SECURITY_MIRROR=$CLUSTER_SECURITY_MIRROR
ROOTFS_MIRROR_SETTING=CLUSTER_MIRROR
ROOTFS_ELSEWHERE="CLUSTER_BASE or CLUSTER_ROOT"
ROOTFS_LABEL=
ROOTFS_LOGS=$RUN/

# --- nodes ---------------------------------------------------------------------
all_nodes() { seq 1 "$CLUSTER_SIZE"; }
node_index() {  # r2 | 2 | r2@localhost -> 2
  local n=${1%%@*}
  n=${n#"$CLUSTER_NODE_PREFIX"}
  # shellcheck disable=SC2015  # die when any test fails
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le "$CLUSTER_SIZE" ] || die "unknown node '$1'"
  echo "$n"
}
nodename() { echo "$CLUSTER_NODE_PREFIX$1@$CLUSTER_HOSTNAME"; }
amqp_port() { echo $((CLUSTER_AMQP_BASE + $1)); }
stream_port() { echo $((CLUSTER_STREAM_BASE + $1)); }
mgmt_port() { echo $((CLUSTER_MGMT_BASE + $1)); }
dist_port() { echo $((CLUSTER_DIST_BASE + $1)); }
repl_min() { echo $((CLUSTER_REPL_BASE + 50 * ($1 - 1) + 1)); }
repl_max() { echo $((CLUSTER_REPL_BASE + 50 * $1)); }
env_file() { echo "/etc/rabbitmq/$CLUSTER_NODE_PREFIX$1-env.conf"; }
node_log() { echo "$CLUSTER_ROOT/var/log/rabbitmq/$(nodename "$1").log"; }
console_log() { echo "$RUN/$CLUSTER_NODE_PREFIX$1-console.log"; }

# --- running things inside the chroot -----------------------------------------------
# Each call gets a private mount namespace with /proc mounted inside the rootfs
# (RabbitMQ needs /proc); nothing is mounted on the host. ROLE: root|rabbitmq;
# NODE (index or empty) selects the per-node env file (node name, ports).
build_prefix() {
  local role=$1 node=${2:-} spec=() nodeenv=()
  [ "$role" != rabbitmq ] || spec=(--userspec="$CLUSTER_UID:$CLUSTER_UID")
  [ -z "$node" ] || nodeenv=(RABBITMQ_CONF_ENV_FILE="$(env_file "$node")")
  PREFIX=(unshare --mount --propagation private -- /bin/sh -c
          "$ROOTFS_MOUNT_PROC" "$CLUSTER_ROOT"
          chroot "${spec[@]}" "$CLUSTER_ROOT" /usr/bin/env -i
          HOME=/var/lib/rabbitmq PATH="$CHROOT_PATH" LANG=C.UTF-8 LC_ALL=C.UTF-8
          ERL_EPMD_PORT="$CLUSTER_EPMD_PORT"
          ${CLUSTER_DIST_ADDRESS:+ERL_EPMD_ADDRESS=$CLUSTER_DIST_ADDRESS}
          DEBIAN_FRONTEND=noninteractive "${nodeenv[@]}")
}
in_root() { local role=$1; shift; build_prefix "$role"; "${PREFIX[@]}" "$@"; }
ctl() { local node=$1; shift; build_prefix rabbitmq "$node"; "${PREFIX[@]}" "$@"; }

# beam.smp pid of node i: a beam whose root is our rootfs and whose
# environment names the node's env file (never the other brokers' nodes)
node_pid() {
  local want p
  want="RABBITMQ_CONF_ENV_FILE=$(env_file "$1")"
  for p in /proc/[0-9]*; do
    [ "$(cat "$p/comm" 2>/dev/null)" = beam.smp ] || continue
    [ "$(readlink "$p/root" 2>/dev/null)" = "$CLUSTER_ROOT" ] || continue
    tr '\0' '\n' < "$p/environ" 2>/dev/null | grep -qxF "$want" || continue
    echo "${p#/proc/}"
    return 0
  done
  return 1
}
listening() { ss -Hltn "( sport = :$1 )" 2>/dev/null | grep -q .; }
node_up() { node_pid "$1" >/dev/null && listening "$(stream_port "$1")"; }
rss_mb() { awk '/^VmRSS/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null; }

# --- installation ----------------------------------------------------------------
# (the rootfs builder, rootfs_install and rootfs_debootstrap: scripts/lib/rootfs.sh)
seed_ok() {
  [ -n "$CLUSTER_SEED" ] && [ -f "$CLUSTER_SEED/$CLUSTER_SEED_MARKER" ] &&
    [ -x "$CLUSTER_SEED/usr/lib/rabbitmq/bin/rabbitmq-server" ]
}

install_copy() {  # copy the finished rootfs of scripts/brokers.sh, minus broker state
  local part=$1 old
  log "copying $CLUSTER_SEED ($(cat "$CLUSTER_SEED/$CLUSTER_SEED_MARKER"))"
  mkdir -p "$part"
  tar -C "$CLUSTER_SEED" --one-file-system --numeric-owner \
      --exclude='./proc/*' --exclude='./var/lib/rabbitmq/*' --exclude='./var/log/rabbitmq/*' \
      --exclude='./etc/rabbitmq/*' --exclude='./tmp/*' --exclude="./$CLUSTER_SEED_MARKER" \
      --exclude='./.cluster-installed' -cf - . | tar -C "$part" --numeric-owner -xpf -
  # an own uid for the service account, so that ps/kill tell our nodes apart
  old=$(awk -F: '$1 == "rabbitmq" { print $3 }' "$part/etc/passwd")
  if [ -n "$old" ] && [ "$old" != "$CLUSTER_UID" ]; then
    sed -i "s/^rabbitmq:x:$old:$old:/rabbitmq:x:$CLUSTER_UID:$CLUSTER_UID:/" "$part/etc/passwd"
    sed -i "s/^rabbitmq:x:$old:/rabbitmq:x:$CLUSTER_UID:/" "$part/etc/group"
    find "$part" -xdev -uid "$old" -exec chown -h "$CLUSTER_UID" {} +
    find "$part" -xdev -gid "$old" -exec chgrp -h "$CLUSTER_UID" {} +
  fi
}

fill_rootfs() {  # PART: the seed's copy, or (no seed) a rootfs of our own
  local part=$1
  if seed_ok; then install_copy "$part"
  else rootfs_debootstrap "$part" "$CLUSTER_SUITE" "$CLUSTER_UID"; fi
  install -d -m 755 -o "$CLUSTER_UID" -g "$CLUSTER_UID" "$part/var/lib/rabbitmq" "$part/etc/rabbitmq" \
    "$part/var/log/rabbitmq"
  install -d -m 750 -o "$CLUSTER_UID" -g "$CLUSTER_UID" "$part/var/lib/rabbitmq/mnesia"
}

cmd_install() {
  [ ! -f "$MARKER" ] || return 0
  mkdir -p "$CLUSTER_BASE" "$RUN"
  local t=$EPOCHREALTIME
  rootfs_install "$CLUSTER_ROOT" "$MARKER" "$CLUSTER_SUITE" fill_rootfs
  log "installed in $(elapsed "$t")s: $(cat "$MARKER")"
}

# --- configuration (rewritten when it differs: put_file, scripts/lib/common.sh) -----
write_config() {
  local etc=$CLUSTER_ROOT/etc/rabbitmq pdir i cookie
  pdir=$(cd "$CLUSTER_ROOT/" && printf '%s\n' usr/lib/rabbitmq/lib/rabbitmq_server-*/plugins | sort -V | tail -n 1)
  mkdir -p "$etc"
  # a bare CLI call inside the chroot must not reach another epmd
  put_file "$etc/rabbitmq-env.conf" <<EOF
# generated by rbfly scripts/cluster.sh; per-node settings: ${CLUSTER_NODE_PREFIX}N-env.conf
PLUGINS_DIR=/$pdir
export ERL_EPMD_PORT=$CLUSTER_EPMD_PORT
EOF
  for i in $(all_nodes); do
    put_file "$CLUSTER_ROOT$(env_file "$i")" <<EOF
# generated by rbfly scripts/cluster.sh
NODENAME=$(nodename "$i")
USE_LONGNAME=false
DIST_PORT=$(dist_port "$i")
CONFIG_FILE=/etc/rabbitmq/$CLUSTER_NODE_PREFIX$i.conf
ENABLED_PLUGINS_FILE=/etc/rabbitmq/enabled_plugins
PLUGINS_DIR=/$pdir
CTL_DIST_PORT_MIN=$CLUSTER_CTL_DIST_MIN
CTL_DIST_PORT_MAX=$CLUSTER_CTL_DIST_MAX
export ERL_EPMD_PORT=$CLUSTER_EPMD_PORT
${CLUSTER_DIST_ADDRESS:+export ERL_EPMD_ADDRESS=$CLUSTER_DIST_ADDRESS}
EOF
    {
      echo "# generated by rbfly scripts/cluster.sh for $(nodename "$i")"
      echo "cluster_name = rbfly-cluster"
      echo "listeners.tcp.default = $(amqp_port "$i")"
      echo "stream.listeners.tcp.default = $(stream_port "$i")"
      echo "stream.advertised_host = $CLUSTER_ADVERTISED_HOST"
      echo "stream.advertised_port = $(stream_port "$i")"
      echo "stream.replication.port_range.min = $(repl_min "$i")"
      echo "stream.replication.port_range.max = $(repl_max "$i")"
      echo "management.tcp.port = $(mgmt_port "$i")"
      [ -z "$CLUSTER_DIST_ADDRESS" ] || echo "distribution.listener.interface = $CLUSTER_DIST_ADDRESS"
      [ -z "$CLUSTER_EXTRA_CONF" ] || printf '%s\n' "$CLUSTER_EXTRA_CONF"
    } | put_file "$etc/$CLUSTER_NODE_PREFIX$i.conf"
  done
  put_file "$etc/enabled_plugins" <<< "[$CLUSTER_PLUGINS]."
  cookie=$CLUSTER_ROOT/var/lib/rabbitmq/.erlang.cookie
  if [ ! -s "$cookie" ]; then
    # shellcheck disable=SC2019  # ASCII letters only
    (umask 077; tr -dc 'A-Z' < /dev/urandom | head -c 32 > "$cookie") || true
  fi
  chown "$CLUSTER_UID:$CLUSTER_UID" "$cookie"
  chmod 400 "$cookie"
  chown -R "$CLUSTER_UID:$CLUSTER_UID" "$etc"
}

# --- runtime ---------------------------------------------------------------------
launch_node() {  # start node i in the background
  local i=$1 p
  for p in "$(amqp_port "$i")" "$(stream_port "$i")" "$(mgmt_port "$i")" "$(dist_port "$i")"; do
    ! listening "$p" || die "port $p (of $(nodename "$i")) is used by another program"
  done
  # the node inherits the open-file limit (scripts/lib/nofile.sh)
  raise_nofile
  log "starting $(nodename "$i") (stream $(stream_port "$i"), amqp $(amqp_port "$i"), mgmt $(mgmt_port "$i"), dist $(dist_port "$i"), epmd $CLUSTER_EPMD_PORT)"
  build_prefix rabbitmq "$i"
  echo "=== $(date -Is) start $(nodename "$i")" >> "$(console_log "$i")"
  # the node keeps no descriptor of ours: not our lock (fd 9), nor what our
  # caller let us inherit (the pipes it reads our output from, which would
  # never see EOF; a client's sockets)
  (
    for fd in /proc/self/fd/*; do
      fd=${fd##*/}
      if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    exec setsid "${PREFIX[@]}" RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="$CLUSTER_ERL_ARGS" rabbitmq-server
  ) >> "$(console_log "$i")" 2>&1 < /dev/null &
  echo $! > "$RUN/$CLUSTER_NODE_PREFIX$i.pid"
}

declare -A RETRIED=()
wait_up() {  # wait until every node in "$@" has a VM and a stream listener
  local deadline=$((SECONDS + CLUSTER_START_TIMEOUT)) i pending
  while :; do
    pending=()
    for i; do node_up "$i" || pending+=("$i"); done
    [ ${#pending[@]} -gt 0 ] || return 0
    for i in "${pending[@]}"; do
      if ! node_pid "$i" >/dev/null &&
         ! kill -0 "$(cat "$RUN/$CLUSTER_NODE_PREFIX$i.pid" 2>/dev/null || echo 0)" 2>/dev/null; then
        tail_logs "$(console_log "$i")" "$(node_log "$i")"
        # nodes started together after an unclean stop can race in the
        # Mnesia handshake ("negotiate_protocol ... killed"); once more
        # with the others up is enough
        if [ -z "${RETRIED[$i]:-}" ]; then
          RETRIED[$i]=1
          log "$(nodename "$i") exited during startup; starting it once more"
          launch_node "$i"
          continue
        fi
        die "$(nodename "$i") exited during startup (logs: $(console_log "$i") $(node_log "$i"))"
      fi
    done
    [ "$SECONDS" -lt "$deadline" ] ||
      die "not up after ${CLUSTER_START_TIMEOUT}s: ${pending[*]} (logs: $RUN, $CLUSTER_ROOT/var/log/rabbitmq)"
    sleep 0.3
  done
}

# the state of the cluster as node i sees it, one CLI call:
# line 1 the running members, line 2 "true" when the stream coordinator runs
cluster_view() {
  ctl "$1" rabbitmqctl -q eval \
    'io:format("~s~n~s~n", [lists:join(" ", [atom_to_list(N) || N <- rabbit_nodes:list_running()]), is_pid(whereis(rabbit_stream_coordinator))]), ok.' \
    2>/dev/null | grep -v '^ok$'
}

ensure_cluster() {  # join every running node that r1 does not see to r1
  local i t seed view
  seed=$(nodename 1)
  node_up 1 || die "$seed must be up to form the cluster"
  view=$(cluster_view 1) || die "cannot query $seed"
  for i in $(all_nodes); do
    [ "$i" != 1 ] || continue
    node_up "$i" || { log "$(nodename "$i") is not up; not joining it"; continue; }
    [[ " $(head -n 1 <<< "$view") " != *" $(nodename "$i") "* ]] || continue
    log "joining $(nodename "$i") to $seed"
    t=$EPOCHREALTIME
    ctl "$i" rabbitmqctl -q stop_app
    ctl "$i" rabbitmqctl -q reset
    ctl "$i" rabbitmqctl -q join_cluster "$seed"
    ctl "$i" rabbitmqctl -q start_app
    wait_up "$i"
    log "$(nodename "$i") joined in $(elapsed "$t")s"
  done
  WARM=$(tail -n 1 <<< "$view")
}

coord_running() {
  [ "$(ctl "$1" rabbitmqctl -q eval 'is_pid(whereis(rabbit_stream_coordinator)).' 2>/dev/null)" = true ]
}
sync_dets() { ctl "$1" rabbitmqctl -q eval '[dets:sync(T) || T <- dets:all()], ok.' >/dev/null 2>&1 || true; }

# The stream coordinator (a Ra cluster) is only created with the first stream,
# and its Ra name registration lives in names.dets, flushed lazily. A node
# SIGKILLed before the flush comes back without its coordinator member and
# answers stream requests with STREAM_NOT_AVAILABLE ("Error locating ...
# stream members: noproc" in its log). So: create the coordinator when the
# cluster forms (a throwaway stream) and force the dets to disk; and heal a
# node that lost it anyway (heal_coordinator).
warm_coordinator() {
  local i
  [ "${WARM:-}" != true ] || return 0
  log "warming up the stream coordinator (a throwaway super stream)"
  ctl 1 rabbitmq-streams -q add_super_stream rbfly-cluster-warmup --partitions 1 >/dev/null
  ctl 1 rabbitmq-streams -q delete_super_stream rbfly-cluster-warmup >/dev/null
  for i in $(all_nodes); do if node_up "$i"; then sync_dets "$i"; fi; done
}

heal_coordinator() {  # NODE...: nodes just (re)started
  local i j ok
  for i; do
    coord_running "$i" && continue
    ok=""
    for j in $(all_nodes); do
      [ "$j" != "$i" ] || continue
      if node_up "$j" && coord_running "$j"; then ok=$j; break; fi
    done
    [ -n "$ok" ] || continue  # no coordinator anywhere yet (no stream so far)
    log "$(nodename "$i") came back without its stream coordinator member; re-adding it"
    ctl "$ok" rabbitmqctl -q eval "ra:remove_member({rabbit_stream_coordinator, node()}, {rabbit_stream_coordinator, '$(nodename "$i")'})." >/dev/null || true
    for _ in $(seq 1 60); do coord_running "$i" && break; sleep 1; done
    if coord_running "$i"; then sync_dets "$i"; log "$(nodename "$i"): coordinator member re-added"
    else log "WARNING: $(nodename "$i") still has no stream coordinator member"; fi
  done
}

parse_nodes() {  # ARGS -> NODES (all when none)
  NODES=()
  local a
  if [ $# = 0 ]; then
    for a in $(all_nodes); do NODES+=("$a"); done
    return 0
  fi
  for a; do NODES+=("$(node_index "$a")"); done
}

cmd_start() {
  parse_nodes "$@"
  cmd_install
  mkdir -p "$RUN"
  write_config
  local t=$EPOCHREALTIME i launched=() appdown=()
  for i in "${NODES[@]}"; do
    if node_up "$i"; then continue; fi
    if node_pid "$i" >/dev/null; then appdown+=("$i"); else launch_node "$i"; launched+=("$i"); fi
  done
  for i in "${appdown[@]}"; do
    log "$(nodename "$i"): VM up, application stopped or booting; start_app"
    ctl "$i" rabbitmqctl -q start_app || true
  done
  if [ ${#launched[@]} -gt 0 ] || [ ${#appdown[@]} -gt 0 ]; then
    wait_up "${launched[@]}" "${appdown[@]}"
    log "${launched[*]/#/$CLUSTER_NODE_PREFIX} ${appdown[*]/#/$CLUSTER_NODE_PREFIX} up in $(elapsed "$t")s"
  fi
  if [ $# = 0 ]; then ensure_cluster; warm_coordinator; fi
  if [ ${#launched[@]} -gt 0 ] || [ ${#appdown[@]} -gt 0 ]; then
    heal_coordinator "${launched[@]}" "${appdown[@]}"
  fi
  for i in "${NODES[@]}"; do
    log "$(nodename "$i"): pid $(node_pid "$i") rss $(rss_mb "$(node_pid "$i")")MB stream $CLUSTER_ADVERTISED_HOST:$(stream_port "$i")"
  done
  log "start done ($(cat "$MARKER"))"
}

stop_epmd_if_idle() {
  local i
  for i in $(all_nodes); do if node_pid "$i" >/dev/null; then return 0; fi; done
  for _ in $(seq 1 20); do
    listening "$CLUSTER_EPMD_PORT" || break
    in_root rabbitmq epmd -kill >/dev/null 2>&1 || true
    sleep 0.5
  done
}

stop_node() {
  local i=$1 pid
  pid=$(node_pid "$i") || { log "$(nodename "$i") is not running"; return 0; }
  log "stopping $(nodename "$i") (pid $pid)"
  ctl "$i" rabbitmqctl -q shutdown >/dev/null 2>&1 || true
  for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "$pid" 2>/dev/null; then
    log "graceful stop of $(nodename "$i") timed out; SIGKILL $pid"
    kill -KILL "$pid" 2>/dev/null || true
  fi
}

cmd_stop() {
  parse_nodes "$@"
  [ -f "$MARKER" ] || { log "not installed"; return 0; }
  local i
  for ((i = ${#NODES[@]} - 1; i >= 0; i--)); do stop_node "${NODES[$i]}"; done
  stop_epmd_if_idle
  log "stopped ${NODES[*]/#/$CLUSTER_NODE_PREFIX}"
}

cmd_kill() {
  local i pid t
  i=$(node_index "${1:?kill NODE}")
  pid=$(node_pid "$i") || die "$(nodename "$i") is not running"
  t=$EPOCHREALTIME
  kill -KILL "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  log "killed $(nodename "$i") (pid $pid)"
  echo "$t"
}

cmd_stop_app() {
  local i
  i=$(node_index "${1:?stop-app NODE}")
  ctl "$i" rabbitmqctl -q stop_app
  log "stop_app $(nodename "$i") done"
}

first_up() {
  local i
  for i in $(all_nodes); do if node_up "$i"; then echo "$i"; return 0; fi; done
  return 1
}

cmd_leader() {
  local s=${1:?leader STREAM} i
  i=$(first_up) || die "no node is up"
  ctl "$i" rabbitmqctl -q list_queues name leader --no-table-headers 2>/dev/null |
    awk -v s="$s" '$1 == s { print $2; f = 1 } END { exit !f }'
}

cmd_coordinator() {
  local i
  i=$(first_up) || die "no node is up"
  ctl "$i" rabbitmqctl -q eval 'ra_leaderboard:lookup_leader(rabbit_stream_coordinator).' 2>/dev/null |
    sed -n 's/^{rabbit_stream_coordinator,\(.*\)}$/\1/p' | grep . || die "no stream coordinator leader"
}

cmd_status() {
  [ -f "$MARKER" ] || { echo "not installed ($CLUSTER_ROOT)"; return 3; }
  echo "$(cat "$MARKER")  epmd $CLUSTER_EPMD_PORT $(listening "$CLUSTER_EPMD_PORT" && echo up || echo down)"
  local i pid state rc=0 up=""
  for i in $(all_nodes); do
    if pid=$(node_pid "$i"); then
      if listening "$(stream_port "$i")"; then state=running; up=${up:-$i}; else state=app-down; rc=3; fi
      printf '%-14s %-9s pid %-7s rss %5sMB  stream %s amqp %s mgmt %s dist %s  open files %s\n' \
        "$(nodename "$i")" "$state" "$pid" "$(rss_mb "$pid")" \
        "$(stream_port "$i")" "$(amqp_port "$i")" "$(mgmt_port "$i")" "$(dist_port "$i")" \
        "$(nofile_in "/proc/$pid/limits")"
    else
      printf '%-14s %-9s\n' "$(nodename "$i")" down
      rc=3
    fi
  done
  if [ -n "$up" ]; then
    echo "--- cluster (seen by $(nodename "$up")): members, running"
    ctl "$up" rabbitmqctl -q eval \
      'io:format("~p~n~p~n", [rabbit_nodes:list_members(), rabbit_nodes:list_running()]), ok.' \
      2>/dev/null | grep -v '^ok$' || true
    echo "--- streams: name leader members online"
    ctl "$up" rabbitmqctl -q list_queues name type leader members online --no-table-headers \
      2>/dev/null | awk '$2 == "stream" { $2 = ""; print }' || true
  fi
  return $rc
}

# each running node's open-file limit; exit 1 when one is below
# BROKERS_NOFILE, 3 when none runs
cmd_limits() {
  local i pid rc=0 running=0
  for i in $(all_nodes); do
    if pid=$(node_pid "$i"); then
      running=1
      nofile_check "$(nodename "$i") (pid $pid)" "/proc/$pid/limits" || rc=1
    else
      echo "$(nodename "$i"): not running"
    fi
  done
  [ "$running" = 1 ] || return 3
  return $rc
}

cmd_env() {
  local i urls="" nodes=""
  for i in $(all_nodes); do
    urls+="${urls:+ }rabbitmq-stream://guest:guest@$CLUSTER_ADVERTISED_HOST:$(stream_port "$i")/"
    nodes+="${nodes:+ }$(nodename "$i")"
  done
  echo "export RBFLY_CLUSTER_URLS=\"$urls\""
  echo "export RBFLY_CLUSTER_NODES=\"$nodes\""
  printf 'export RBFLY_CLUSTER_SCRIPT=%q\n' "$SCRIPT_DIR/cluster.sh"
}

cmd_reset() {
  cmd_stop
  [ -f "$MARKER" ] || return 0
  rm -rf --one-file-system "$CLUSTER_ROOT/var/lib/rabbitmq/mnesia" "$CLUSTER_ROOT"/var/log/rabbitmq/*
  install -d -m 750 -o "$CLUSTER_UID" -g "$CLUSTER_UID" "$CLUSTER_ROOT/var/lib/rabbitmq/mnesia"
  log "node data wiped"
}

cmd_uninstall() {
  cmd_stop || true
  rm -rf --one-file-system "$CLUSTER_ROOT" "$CLUSTER_ROOT.partial" "$RUN"
  log "removed $CLUSTER_ROOT"
}

# --- main ------------------------------------------------------------------------
cmd=${1:-}
[ $# = 0 ] || shift
case "$cmd" in
  env) cmd_env; exit 0 ;;
  start|stop|restart|status|limits|kill|stop-app|revive|leader|coordinator|ctl|logs|reset|uninstall) ;;
  *) usage ;;
esac
[ "$(id -u)" = 0 ] || die "must run as root"

# commands that change state run one at a time (tests may call us in parallel)
case "$cmd" in start|stop|restart|revive|reset|uninstall)
  mkdir -p "$CLUSTER_BASE"
  exec 9> "$CLUSTER_BASE/.lock"
  flock -w 600 9 || die "another cluster.sh holds $CLUSTER_BASE/.lock" ;;
esac

case "$cmd" in
  start) cmd_start "$@" ;;
  stop) cmd_stop "$@" ;;
  restart) cmd_stop; cmd_start ;;
  status) cmd_status ;;
  limits) cmd_limits ;;
  kill) cmd_kill "${1:-}" ;;
  stop-app) cmd_stop_app "${1:-}" ;;
  revive) cmd_start "$(node_index "${1:?revive NODE}")" ;;
  leader) cmd_leader "${1:-}" ;;
  coordinator) cmd_coordinator ;;
  ctl)
    [ -f "$MARKER" ] || die "not installed (run: $0 start)"
    n=$(node_index "${1:?ctl NODE CMD...}")
    shift
    ctl "$n" "$@" ;;
  logs) tail -n "${2:-50}" "$(node_log "$(node_index "${1:?logs NODE}")")" ;;
  reset) cmd_reset ;;
  uninstall) cmd_uninstall ;;
esac
