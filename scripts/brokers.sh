#!/usr/bin/env bash
# brokers.sh - provision and start the RabbitMQ brokers used by rbfly's tests.
#
#   310  Debian 12's own rabbitmq-server (3.10.x) on the host, stream port 5552,
#        stream over TLS on 5551
#   4    RabbitMQ 4.x from Debian trixie inside a debootstrap chroot (cached
#        under $BROKERS_DIR), stream port 5553, stream over TLS on 5554,
#        private epmd on port 4370
#   43   the newest RabbitMQ of Debian unstable (sid; 4.3.x when written) in a
#        chroot of its own, stream port 5556, stream over TLS on 5557, epmd
#        4372 (4371 is the cluster's): for the features of RabbitMQ 4.3
#        (ResolveOffsetSpec). Optional:
#        `start` (all) warns and carries on when it cannot be provisioned or
#        started (sid changes daily), and its tests skip, saying so
#
# TLS: a test CA, a server certificate for localhost (DNS:localhost,
# IP:127.0.0.1, IP:::1) and a client certificate with CN "guest" are made
# once under $BROKERS_DIR/tls (openssl); each broker gets a copy of the CA and
# of the server certificate and key in /etc/rabbitmq/tls (inside the chroot
# for 4.x). The TLS listeners verify a client certificate when one is sent
# (verify_peer, fail_if_no_peer_cert = false); with the plugin
# rabbitmq_auth_mechanism_ssl, SASL EXTERNAL logs the client certificate in
# as the user named by its CN (ssl_cert_login_from = common_name).
#
# Run as root on Debian 12; systemd is not needed (nodes are started directly
# and detached with setsid). Every command is idempotent.
#
# Usage: scripts/brokers.sh COMMAND [ARGS]
#   start [310|4|43|all]      install what is missing, start, wait until the
#                          stream port and the node answer (default: all;
#                          both brokers start in parallel); a running broker
#                          is reused (restarted only if its config changed)
#   stop [310|4|43|all]    graceful shutdown (default: all)
#   restart [310|4|43|all] stop + start
#   status                 one line per broker (with its open-file limit);
#                          exit 0 only if all run
#   limits                 each running broker's open-file limit (of its
#                          process, /proc/PID/limits); exit 1 when one is
#                          below BROKERS_NOFILE (RabbitMQ's recommended
#                          65536: restart it to apply), 3 when none runs
#   env                    client settings: eval "$(scripts/brokers.sh env)" (stream
#                          URLs, management ports, TLS files)
#   ctl 310|4|43 CMD [ARG...] run a RabbitMQ CLI as the broker's rabbitmq user, e.g.
#                          scripts/brokers.sh ctl 4 rabbitmq-streams add_super_stream s --partitions 3
#   logs 310|4|43 [LINES]     tail the node log
#
# Environment (defaults in brackets):
#   BROKERS_DIR [/var/cache/rbfly-brokers]  cached rootfs, logs, pid files
#   BROKERS_TIMEOUT [120]                   seconds to wait for a node to boot
#   BROKERS_ADVERTISED_HOST [localhost]     stream.advertised_host of both
#   BROKERS_MIRROR, BROKERS_SECURITY_MIRROR Debian mirror for the chroot
#                                           [taken from the host's apt sources]
#   BROKER310_{AMQP,STREAM,TLS,MGMT,DIST,EPMD}_PORT [5672 5552 5551 15672 25672 4369]
#   BROKER310_NODENAME [rabbit@localhost]
#   BROKER4_{AMQP,STREAM,TLS,MGMT,DIST,EPMD}_PORT   [5673 5553 5554 15673 25673 4370]
#   BROKER4_NODENAME [rabbit4@localhost]
#   BROKER310_PLUGINS, BROKER4_PLUGINS
#     [rabbitmq_management,rabbitmq_stream,rabbitmq_stream_management]
#     (rabbitmq_auth_mechanism_ssl is always added, for SASL EXTERNAL)
#   BROKER43_{AMQP,STREAM,TLS,MGMT,DIST,EPMD}_PORT  [5675 5556 5557 15675 25675 4372]
#   BROKER43_NODENAME [rabbit43@localhost]  BROKER43_PLUGINS
#   BROKER4_SUITE [trixie]  BROKER4_ROOT [$BROKERS_DIR/rootfs-$BROKER4_SUITE]
#   BROKER43_SUITE [sid]    BROKER43_ROOT [$BROKERS_DIR/rootfs-$BROKER43_SUITE]
#   BROKER4_UID [64672]     uid/gid of the rabbitmq account inside the chroot
#   BROKERS_NOFILE [65536]  open files each node gets (scripts/lib/nofile.sh;
#     where the hard limit cannot be raised, as far as it goes, warned)
#   BROKERS_ERL_ARGS [none]  extra Erlang VM flags of both nodes
#     (RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS), e.g. "+sbwt none" to stop
#     schedulers spinning on a machine shared with the clients
set -euo pipefail

BROKERS_DIR=${BROKERS_DIR:-/var/cache/rbfly-brokers}
BROKERS_TIMEOUT=${BROKERS_TIMEOUT:-120}
BROKERS_ADVERTISED_HOST=${BROKERS_ADVERTISED_HOST:-localhost}
BROKERS_MIRROR=${BROKERS_MIRROR:-}
BROKERS_SECURITY_MIRROR=${BROKERS_SECURITY_MIRROR:-}
BROKERS_ERL_ARGS=${BROKERS_ERL_ARGS:-}
DEFAULT_PLUGINS=rabbitmq_management,rabbitmq_stream,rabbitmq_stream_management

BROKER310_AMQP_PORT=${BROKER310_AMQP_PORT:-5672}
BROKER310_STREAM_PORT=${BROKER310_STREAM_PORT:-5552}
BROKER310_TLS_PORT=${BROKER310_TLS_PORT:-5551}
BROKER310_MGMT_PORT=${BROKER310_MGMT_PORT:-15672}
BROKER310_DIST_PORT=${BROKER310_DIST_PORT:-25672}
BROKER310_EPMD_PORT=${BROKER310_EPMD_PORT:-4369}
BROKER310_NODENAME=${BROKER310_NODENAME:-rabbit@localhost}
BROKER310_PLUGINS=${BROKER310_PLUGINS:-$DEFAULT_PLUGINS}

BROKER4_AMQP_PORT=${BROKER4_AMQP_PORT:-5673}
BROKER4_STREAM_PORT=${BROKER4_STREAM_PORT:-5553}
BROKER4_TLS_PORT=${BROKER4_TLS_PORT:-5554}
BROKER4_MGMT_PORT=${BROKER4_MGMT_PORT:-15673}
BROKER4_DIST_PORT=${BROKER4_DIST_PORT:-25673}
BROKER4_EPMD_PORT=${BROKER4_EPMD_PORT:-4370}
BROKER4_NODENAME=${BROKER4_NODENAME:-rabbit4@localhost}
BROKER4_PLUGINS=${BROKER4_PLUGINS:-$DEFAULT_PLUGINS}
BROKER4_SUITE=${BROKER4_SUITE:-trixie}
BROKER4_ROOT=${BROKER4_ROOT:-$BROKERS_DIR/rootfs-$BROKER4_SUITE}
BROKER4_UID=${BROKER4_UID:-64672}

BROKER43_AMQP_PORT=${BROKER43_AMQP_PORT:-5675}
BROKER43_STREAM_PORT=${BROKER43_STREAM_PORT:-5556}
BROKER43_TLS_PORT=${BROKER43_TLS_PORT:-5557}
BROKER43_MGMT_PORT=${BROKER43_MGMT_PORT:-15675}
BROKER43_DIST_PORT=${BROKER43_DIST_PORT:-25675}
BROKER43_EPMD_PORT=${BROKER43_EPMD_PORT:-4372}
BROKER43_NODENAME=${BROKER43_NODENAME:-rabbit43@localhost}
BROKER43_PLUGINS=${BROKER43_PLUGINS:-$DEFAULT_PLUGINS}
BROKER43_SUITE=${BROKER43_SUITE:-sid}
BROKER43_ROOT=${BROKER43_ROOT:-$BROKERS_DIR/rootfs-$BROKER43_SUITE}

RUN_DIR=$BROKERS_DIR/run
LOG_DIR=$BROKERS_DIR/log
TLS_DIR=$BROKERS_DIR/tls

LOG_TAG=brokers
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/common.sh
. "$SCRIPT_DIR/lib/common.sh"
# shellcheck source=lib/rootfs.sh
. "$SCRIPT_DIR/lib/rootfs.sh"
# shellcheck source=lib/nofile.sh
. "$SCRIPT_DIR/lib/nofile.sh"
LOG_T0=${BROKERS_T0:-$LOG_T0}
export BROKERS_T0=$LOG_T0  # the parallel workers log times relative to the same start
HOST_APT_LOCK=$RUN_DIR/apt.lock
HOST_APT_LOG=$LOG_DIR/host-apt.log
ROOTFS_MIRROR=$BROKERS_MIRROR
ROOTFS_SECURITY_MIRROR=$BROKERS_SECURITY_MIRROR
ROOTFS_MIRROR_SETTING=BROKERS_MIRROR

# --- helpers -------------------------------------------------------------------
# select_broker 310|4|43: set the per-broker variables used below
select_broker() {
  B=$1
  case "$B" in
    310) P=BROKER310; ROOT=; ETC=/etc/rabbitmq ;;
    4) P=BROKER4; ROOT=$BROKER4_ROOT; SUITE=$BROKER4_SUITE ;;
    43) P=BROKER43; ROOT=$BROKER43_ROOT; SUITE=$BROKER43_SUITE ;;
    *) die "unknown broker '$1' (expected 310, 4 or 43)" ;;
  esac
  local v
  for v in AMQP_PORT STREAM_PORT TLS_PORT MGMT_PORT DIST_PORT EPMD_PORT NODENAME PLUGINS; do
    eval "$v=\${${P}_$v}"
  done
  PIDFILE=$RUN_DIR/$B.pid
  CONSOLE_LOG=$LOG_DIR/$B-console.log
  NODE_LOG=$ROOT/var/log/rabbitmq/$NODENAME.log
  ETC=$ROOT/etc/rabbitmq
  MARKER=$ROOT/.rbfly-installed
  ROOTFS_LABEL=$B
  ROOTFS_LOGS=$LOG_DIR/$B-
  ROOTFS_ELSEWHERE="BROKERS_DIR or ${P}_ROOT"
}

is_installed() {
  if [ "$B" = 310 ]; then installed rabbitmq-server; else [ -f "$MARKER" ]; fi
}

version() {
  if [ "$B" = 310 ]; then dpkg-query -W -f='${Version}' rabbitmq-server
  else sed -n 's/.*rabbitmq-server=\([^ ]*\).*/\1/p' "$MARKER"; fi
}

# as_rabbit CMD...: run CMD as the broker's rabbitmq user with a clean
# environment (HOME holds the Erlang cookie shared with the node)
as_rabbit() {
  local env=(env -i HOME=/var/lib/rabbitmq PATH="$CHROOT_PATH" LANG=C.UTF-8 LC_ALL=C.UTF-8
             ERL_EPMD_PORT="$EPMD_PORT")
  if [ "$B" = 310 ]; then
    (cd /var/lib/rabbitmq && exec runuser -u rabbitmq -- "${env[@]}" "$@")
  else
    in_chroot --userspec="$BROKER4_UID:$BROKER4_UID" -- "${env[@]}" "$@"
  fi
}

# in_chroot [CHROOT-OPTION...] -- CMD...: run CMD in the broker's rootfs (in_rootfs)
in_chroot() { in_rootfs "$ROOT" "$@"; }

node_up() { as_rabbit rabbitmq-diagnostics -q check_running >/dev/null 2>&1; }

pid_alive() {  # the recorded process still exists and is ours
  local pid cmdline
  pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [ -n "$pid" ] || return 1
  cmdline=$(tr '\0' ' ' 2>/dev/null < "/proc/$pid/cmdline") || return 1
  # (right after the fork it is still this script, then the node's command)
  [[ $cmdline == *rabbitmq* || $cmdline == *brokers.sh* ]]
}

# --- installation ----------------------------------------------------------------
# build_rootfs: debootstrap the broker's suite and install rabbitmq-server in it
# (skipped when the cached rootfs is complete; scripts/lib/rootfs.sh)
build_rootfs() {
  rootfs_install "$ROOT" "$MARKER" "$SUITE" rootfs_debootstrap "$SUITE" "$BROKER4_UID"
}

# --- TLS material ------------------------------------------------------------------
# tls_ok: the CA, server and client certificates exist, chain to the CA and
# stay valid for 30 more days (one openssl process: fast when warm)
tls_ok() {
  local f
  for f in ca.pem server.pem server.key client.pem client.key; do
    [ -s "$TLS_DIR/$f" ] || return 1
  done
  openssl verify -attime "$(( $(date +%s) + 30 * 86400 ))" -CAfile "$TLS_DIR/ca.pem" \
    "$TLS_DIR/ca.pem" "$TLS_DIR/server.pem" "$TLS_DIR/client.pem" >/dev/null 2>&1
}

# ensure_tls: make the test CA, the server certificate for localhost and the
# client certificate (CN guest) under $TLS_DIR, unless they are there already
ensure_tls() {
  if command -v openssl >/dev/null && tls_ok; then return 0; fi
  command -v openssl >/dev/null || host_apt_install openssl
  mkdir -p "$RUN_DIR" "$LOG_DIR"
  (
    flock -w 120 9 || die "timeout waiting for $RUN_DIR/tls.lock"
    if tls_ok; then exit 0; fi  # made by the other worker meanwhile
    local part=$TLS_DIR.partial t=$EPOCHREALTIME
    rm -rf "$part"
    mkdir -p "$part"
    cat > "$part/openssl.cnf" <<'EOF'
# generated by rbfly scripts/brokers.sh: test certificates only
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1, IP:::1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF
    log "tls: making a test CA, server (localhost) and client (CN guest) certificates in $TLS_DIR"
    (
      cd "$part" &&
      openssl req -x509 -config openssl.cnf -extensions ca -newkey rsa:2048 -nodes \
        -keyout ca.key -out ca.pem -days 3650 -subj '/CN=rbfly test CA' &&
      for name in server client; do
        if [ $name = server ]; then cn=localhost; else cn=guest; fi
        openssl req -new -config openssl.cnf -newkey rsa:2048 -nodes \
          -keyout $name.key -out $name.csr -subj "/CN=$cn" &&
        openssl x509 -req -in $name.csr -CA ca.pem -CAkey ca.key \
          -set_serial "0x$(openssl rand -hex 16)" -days 3650 \
          -extfile openssl.cnf -extensions $name -out $name.pem || exit 1
      done &&
      rm -f ./*.csr
    ) > "$LOG_DIR/tls.log" 2>&1 || { tail_logs "$LOG_DIR/tls.log"; die "tls: openssl failed"; }
    # the CA and server keys stay private (each broker gets its own copy of
    # the server key); the client key is a test credential that any test
    # runner may read
    chmod 600 "$part/ca.key" "$part/server.key"
    chmod 644 "$part/ca.pem" "$part/server.pem" "$part/client.pem" "$part/client.key"
    chmod 755 "$part"
    rm -rf "$TLS_DIR"
    mv "$part" "$TLS_DIR"
    tls_ok || die "tls: the new certificates do not verify"
    log "tls: done in $(elapsed "$t")s"
  ) 9> "$RUN_DIR/tls.lock"
}

# ensure_oauth2_key: the RSA key pair that signs the OAuth 2 tokens of the
# tests (oauth2.key, a test credential any test runner may read) and that
# the 4.x broker checks them with (oauth2.pub)
ensure_oauth2_key() {
  [ -s "$TLS_DIR/oauth2.key" ] && [ -s "$TLS_DIR/oauth2.pub" ] && return 0
  local part=$TLS_DIR/oauth2.partial
  (
    flock -w 120 9 || die "timeout waiting for $RUN_DIR/tls.lock"
    [ -s "$TLS_DIR/oauth2.key" ] && [ -s "$TLS_DIR/oauth2.pub" ] && exit 0
    log "oauth2: making the key pair that signs the tests' tokens"
    # shellcheck disable=SC2015  # either openssl failing is fatal
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$part.key" \
      > "$LOG_DIR/oauth2.log" 2>&1 &&
    openssl pkey -in "$part.key" -pubout -out "$part.pub" >> "$LOG_DIR/oauth2.log" 2>&1 ||
      { tail_logs "$LOG_DIR/oauth2.log"; die "oauth2: openssl failed"; }
    chmod 644 "$part.key" "$part.pub"
    mv "$part.pub" "$TLS_DIR/oauth2.pub"
    mv "$part.key" "$TLS_DIR/oauth2.key"
  ) 9> "$RUN_DIR/tls.lock"
}

# --- configuration (rewritten when it differs; CONFIG_CHANGED=1 then) --------------
# (put_file: scripts/lib/common.sh)
put_copy() {  # SRC DEST MODE: copy SRC when DEST differs
  if ! cmp -s "$1" "$2"; then
    cp "$1" "$2"
    CONFIG_CHANGED=1
  fi
  chmod "$3" "$2"
}

write_config() {
  CONFIG_CHANGED=0
  local pdir owner=rabbitmq:rabbitmq
  [ "$B" = 310 ] || owner=$BROKER4_UID:$BROKER4_UID
  # the CLI needs PLUGINS_DIR to find plugin commands (rabbitmq-streams ...)
  pdir=$(cd "$ROOT/" && printf '%s\n' usr/lib/rabbitmq/lib/rabbitmq_server-*/plugins | sort -V | tail -n 1)
  mkdir -p "$ETC/tls"
  # TLS files the broker reads (inside the chroot for 4.x)
  put_copy "$TLS_DIR/ca.pem" "$ETC/tls/ca.pem" 644
  put_copy "$TLS_DIR/server.pem" "$ETC/tls/server.pem" 644
  put_copy "$TLS_DIR/server.key" "$ETC/tls/server.key" 600
  chmod 750 "$ETC/tls"
  # shellcheck disable=SC2153  # PLUGINS: set by select_broker
  local plugins=$PLUGINS mechanisms oauth2=''
  [[ ,$plugins, == *,rabbitmq_auth_mechanism_ssl,* ]] || plugins=$plugins,rabbitmq_auth_mechanism_ssl
  if [ "$B" != 310 ]; then
    # 4.x: OAuth 2 tokens signed with the tests' key, then the internal users
    mkdir -p "$ETC/oauth2"
    put_copy "$TLS_DIR/oauth2.pub" "$ETC/oauth2/signing.pem" 644
    [[ ,$plugins, == *,rabbitmq_auth_backend_oauth2,* ]] ||
      plugins=$plugins,rabbitmq_auth_backend_oauth2
    oauth2=$'auth_backends.1 = rabbit_auth_backend_oauth2\nauth_backends.2 = rabbit_auth_backend_internal'
    oauth2+=$'\nauth_oauth2.resource_server_id = rbfly'
    oauth2+=$'\nauth_oauth2.default_key = rbfly-test'
    oauth2+=$'\nauth_oauth2.signing_keys.rbfly-test = /etc/rabbitmq/oauth2/signing.pem'
  fi
  # EXTERNAL next to the defaults; 4.x also keeps its default ANONYMOUS
  mechanisms=$'auth_mechanisms.1 = PLAIN\nauth_mechanisms.2 = AMQPLAIN\nauth_mechanisms.3 = EXTERNAL'
  [ "$B" = 310 ] || mechanisms+=$'\nauth_mechanisms.4 = ANONYMOUS'
  put_file "$ETC/rabbitmq-env.conf" <<EOF
# generated by rbfly scripts/brokers.sh
NODENAME=$NODENAME
USE_LONGNAME=false
DIST_PORT=$DIST_PORT
PLUGINS_DIR=/$pdir
export ERL_EPMD_PORT=$EPMD_PORT
EOF
  put_file "$ETC/rabbitmq.conf" <<EOF
# generated by rbfly scripts/brokers.sh
listeners.tcp.default = $AMQP_PORT
stream.listeners.tcp.default = $STREAM_PORT
stream.advertised_host = $BROKERS_ADVERTISED_HOST
stream.advertised_port = $STREAM_PORT
stream.listeners.ssl.default = $TLS_PORT
stream.advertised_tls_host = $BROKERS_ADVERTISED_HOST
stream.advertised_tls_port = $TLS_PORT
ssl_options.cacertfile = /etc/rabbitmq/tls/ca.pem
ssl_options.certfile = /etc/rabbitmq/tls/server.pem
ssl_options.keyfile = /etc/rabbitmq/tls/server.key
ssl_options.verify = verify_peer
ssl_options.fail_if_no_peer_cert = false
$mechanisms
ssl_cert_login_from = common_name
management.tcp.port = $MGMT_PORT
$oauth2
EOF
  put_file "$ETC/enabled_plugins" <<< "[${plugins}]."
  chown -R "$owner" "$ETC"
}

# --- start / stop --------------------------------------------------------------
launch() {  # start the node in its own session, record its pid
  local env=(env -i HOME=/var/lib/rabbitmq PATH="$CHROOT_PATH" LANG=C.UTF-8 LC_ALL=C.UTF-8
             ERL_EPMD_PORT="$EPMD_PORT"
             RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="$BROKERS_ERL_ARGS")
  # the node inherits the open-file limit (scripts/lib/nofile.sh)
  raise_nofile
  echo "=== $(date -Is) start $NODENAME" > "$CONSOLE_LOG"
  # (fd 8 is start_one's lock: the node must not inherit it)
  if [ "$B" = 310 ]; then
    # setpriv, not runuser: runuser's PAM session (pam_limits) set the
    # node's open files back to 1,024
    (cd /var/lib/rabbitmq &&
     exec setsid setpriv --reuid=rabbitmq --regid=rabbitmq --init-groups -- \
       "${env[@]}" rabbitmq-server) >> "$CONSOLE_LOG" 2>&1 < /dev/null 8>&- &
  else
    setsid unshare --mount --propagation private -- /bin/sh -c "$ROOTFS_MOUNT_PROC" "$ROOT" \
      chroot --userspec="$BROKER4_UID:$BROKER4_UID" "$ROOT" \
      "${env[@]}" rabbitmq-server >> "$CONSOLE_LOG" 2>&1 < /dev/null 8>&- &
  fi
  echo $! > "$PIDFILE"
}

start_one() {
  select_broker "$1"
  local t=$EPOCHREALTIME p
  mkdir -p "$RUN_DIR" "$LOG_DIR"
  exec 8> "$RUN_DIR/$B.lock"
  flock -w "$BROKERS_TIMEOUT" 8 || die "$B: another brokers.sh holds $RUN_DIR/$B.lock"
  if [ "$B" = 310 ]; then host_apt_install rabbitmq-server; else build_rootfs; fi
  ensure_tls
  ensure_oauth2_key
  write_config
  if port_open "$STREAM_PORT" && node_up; then
    if [ "$CONFIG_CHANGED" = 0 ] && port_open "$TLS_PORT"; then
      log "$B: already running (RabbitMQ $(version), stream $BROKERS_ADVERTISED_HOST:$STREAM_PORT, tls $TLS_PORT)"
      # (not restarted for it: others may be using the broker)
      limits_one "$B" >/dev/null ||
        log "WARNING: $(limits_one "$B" || true); restart it to apply: $0 restart $B"
      return 0
    fi
    if [ "$CONFIG_CHANGED" = 0 ]; then log "$B: no TLS listener on $TLS_PORT; restarting"
    else log "$B: configuration changed; restarting"; fi
    stop_one "$B"
  elif pid_alive || port_open "$AMQP_PORT" || port_open "$DIST_PORT"; then
    log "$B: a node is up but not serving streams on $STREAM_PORT; stopping it"
    stop_one "$B"
  fi
  # a node just stopped may hold its ports for a moment (seen in CI under
  # load): wait a little before calling them taken
  for p in "$AMQP_PORT" "$STREAM_PORT" "$TLS_PORT" "$MGMT_PORT" "$DIST_PORT"; do
    for _ in $(seq 1 50); do port_open "$p" || break; sleep 0.3; done
    ! port_open "$p" || die "$B: port $p is used by another program"
  done

  log "$B: starting $NODENAME (RabbitMQ $(version); amqp $AMQP_PORT, stream $STREAM_PORT, tls $TLS_PORT, mgmt $MGMT_PORT, dist $DIST_PORT, epmd $EPMD_PORT)"
  t=$EPOCHREALTIME
  launch
  local deadline=$((SECONDS + BROKERS_TIMEOUT))
  until port_open "$STREAM_PORT" && port_open "$TLS_PORT" && node_up; do
    # (a process in the middle of an exec shows an empty command line for
    # a moment: seen once, 0.2 s after the start of the 4.x node; look again)
    if ! pid_alive && ! { sleep 0.5; pid_alive; }; then
      tail_logs "$CONSOLE_LOG" "$NODE_LOG"
      rm -f "$PIDFILE"
      die "$B: node exited during startup (logs: $CONSOLE_LOG $NODE_LOG)"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      tail_logs "$CONSOLE_LOG" "$NODE_LOG"
      stop_one "$B" || true
      die "$B: node not up after ${BROKERS_TIMEOUT}s (logs: $CONSOLE_LOG $NODE_LOG)"
    fi
    sleep 0.3
  done
  if [ "$B" != 310 ]; then
    # stream filtering, single active consumer etc. need the newest flags
    as_rabbit rabbitmqctl -q enable_feature_flag all >> "$CONSOLE_LOG" 2>&1 ||
      { tail_logs "$CONSOLE_LOG"; die "$B: rabbitmqctl enable_feature_flag all failed"; }
  fi
  log "$B: up in $(elapsed "$t")s (pid $(cat "$PIDFILE"), stream $BROKERS_ADVERTISED_HOST:$STREAM_PORT, tls $TLS_PORT)"
}

stop_one() {
  select_broker "$1"
  if ! is_installed; then log "$B: not installed"; return 0; fi
  local pid=""
  pid=$(cat "$PIDFILE" 2>/dev/null || true)
  pid_alive || pid=""
  if [ -n "$pid" ] || port_open "$AMQP_PORT" || port_open "$DIST_PORT"; then
    log "$B: stopping $NODENAME"
    as_rabbit rabbitmqctl -q shutdown >/dev/null 2>&1 || true
  fi
  if [ -n "$pid" ]; then
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$pid" 2>/dev/null; then
      log "$B: graceful stop timed out; killing process group $pid"
      kill -TERM -- "-$pid" 2>/dev/null || true
      sleep 3
      kill -KILL -- "-$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$PIDFILE"
  # stop the epmd the node started (epmd refuses while any name is registered,
  # e.g. another Erlang node or a CLI that is just exiting: retry a little)
  for _ in $(seq 1 10); do
    port_open "$EPMD_PORT" || break
    as_rabbit epmd -kill >/dev/null 2>&1 || true
    sleep 0.3
  done
  log "$B: stopped"
}

# limits_one 310|4|43: the running node's open-file limit (nofile_check);
# return 1 when it is below BROKERS_NOFILE, 3 when the node does not run
limits_one() {
  select_broker "$1"
  local pid
  pid=$(listener_pid "$STREAM_PORT")
  if [ -z "$pid" ]; then echo "$B: not running"; return 3; fi
  nofile_check "$B ($NODENAME, pid $pid)" "/proc/$pid/limits"
}

status_one() {
  select_broker "$1"
  if ! is_installed; then echo "$B: not installed"; return 3; fi
  local pid=""
  ! pid_alive || pid=" pid $(cat "$PIDFILE")"
  if port_open "$STREAM_PORT" && node_up; then
    local files
    files=$(nofile_in "/proc/$(listener_pid "$STREAM_PORT")/limits")
    echo "$B: running  RabbitMQ $(version)  $NODENAME  stream $BROKERS_ADVERTISED_HOST:$STREAM_PORT  tls $TLS_PORT  amqp $AMQP_PORT  mgmt $MGMT_PORT$pid  open files ${files:-unknown}"
  else
    echo "$B: not running  RabbitMQ $(version)$pid"
    return 3
  fi
}

# run_each start|stop ARG: run the action for the brokers named by ARG in
# parallel; each runs as a separate process of this script, so that errexit
# holds there whatever context run_each is called from
run_each() {
  local action=$1 pids=() b i rc=0 targets
  case "${2:-all}" in
    all) targets=(310 4 43) ;;
    310|4|43) targets=("$2") ;;
    *) die "unknown broker '$2' (expected 310, 4, 43 or all)" ;;
  esac
  for b in "${targets[@]}"; do
    bash "$0" _one "$action" "$b" &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" && continue
    if [ "${targets[$i]}" = 43 ] && [ "${2:-all}" = all ]; then
      log "WARNING: 43 (RabbitMQ of Debian $BROKER43_SUITE) failed; the tests of RabbitMQ 4.3 features will skip"
    else
      rc=1
    fi
  done
  return $rc
}

# --- main ----------------------------------------------------------------------
cmd=${1:-}
[ $# = 0 ] || shift
case "$cmd" in
  env)
    echo "export RBFLY_URL=rabbitmq-stream://guest:guest@localhost:$BROKER310_STREAM_PORT/"
    echo "export RBFLY_URL4=rabbitmq-stream://guest:guest@localhost:$BROKER4_STREAM_PORT/"
    echo "export RBFLY_TLS_URL=rabbitmq-stream+tls://guest:guest@localhost:$BROKER310_TLS_PORT/"
    echo "export RBFLY_TLS_URL4=rabbitmq-stream+tls://guest:guest@localhost:$BROKER4_TLS_PORT/"
    echo "export RBFLY_URL43=rabbitmq-stream://guest:guest@localhost:$BROKER43_STREAM_PORT/"
    # the management plugin's HTTP API of each (rbfly.streams.admin, rbfly stream list)
    echo "export RBFLY_MANAGEMENT_PORT=$BROKER310_MGMT_PORT"
    echo "export RBFLY_MANAGEMENT_PORT4=$BROKER4_MGMT_PORT"
    echo "export RBFLY_MANAGEMENT_PORT43=$BROKER43_MGMT_PORT"
    printf 'export RBFLY_TLS_CA=%q\n' "$TLS_DIR/ca.pem"
    printf 'export RBFLY_TLS_CERT=%q\n' "$TLS_DIR/client.pem"
    printf 'export RBFLY_TLS_KEY=%q\n' "$TLS_DIR/client.key"
    printf 'export RBFLY_OAUTH2_KEY=%q\n' "$TLS_DIR/oauth2.key"
    exit 0 ;;
  start|stop|restart|status|limits|ctl|logs|_one) ;;
  *) usage ;;
esac
[ "$(id -u)" = 0 ] || die "must run as root"

case "$cmd" in
  start)
    log "start ${1:-all}"
    if [ "${1:-all}" != 310 ] && { [ ! -f "$BROKER4_ROOT/.rbfly-installed" ] ||
                                   [ ! -f "$BROKER43_ROOT/.rbfly-installed" ]; }; then
      host_apt_install debootstrap
    fi
    if run_each start "${1:-all}"; then log "done"; else die "start failed"; fi ;;
  stop) run_each stop "${1:-all}" ;;
  restart)
    run_each stop "${1:-all}"
    if run_each start "${1:-all}"; then log "done"; else die "start failed"; fi ;;
  _one) "$1_one" "$2" ;;  # internal: run_each's worker
  status)
    rc=0
    status_one 310 || rc=$?
    status_one 4 || rc=$?
    status_one 43 || rc=$?
    exit $rc ;;
  limits)
    # every running broker; a broker not running is listed, not checked
    rc=0 running=0
    for b in 310 4 43; do
      r=0; limits_one "$b" || r=$?
      case $r in 0) running=1 ;; 3) ;; *) running=1; rc=1 ;; esac
    done
    [ "$running" = 1 ] || { echo "no broker runs"; exit 3; }
    exit $rc ;;
  ctl)
    [ $# -ge 2 ] || usage
    select_broker "$1"; shift
    is_installed || die "$B: not installed (run: $0 start $B)"
    as_rabbit "$@" ;;
  logs)
    [ $# -ge 1 ] || usage
    select_broker "$1"
    tail -n "${2:-50}" "$NODE_LOG" ;;
esac
