#!/usr/bin/env bash
# kafka.sh - provision and start the Apache Kafka broker used by rbfly's
# publishing benchmark (python -m perf.publish --impl aiokafka).
#
# A single Kafka 4.x node in KRaft mode (broker and controller in one JVM, no
# ZooKeeper) on 127.0.0.1:9092. There is no Debian package of Kafka, so the
# broker's jars are resolved from Maven Central with Maven (org.apache.kafka:
# kafka_2.13 and its runtime dependencies, plus the log4j SLF4J binding the
# release tarball adds) and cached under $KAFKA_DIR/libs, the versions resolved
# stamped in $KAFKA_DIR/libs/versions (scripts/lib/maven.sh); the repository
# Maven uses is whatever its settings configure. Java 17+ and Maven are
# installed with apt-get when missing.
#
# Durability, matched to RabbitMQ streams: RabbitMQ confirms a message once
# its chunk is written to the stream's segment file (the OS page cache; it
# does not fsync) on the leader and its replicas; this Kafka node is the
# only replica, the benchmark's producer sends with acks=all (the in-sync
# replica set is this node, min.insync.replicas=1) and Kafka does not fsync
# either (log.flush.interval.messages/ms are left at their defaults:
# flushing is left to the OS). The log directory is on permanent storage
# ($KAFKA_DIR/data, not a tmpfs), as the RbFly 0.10 report required.
#
# Run as root or as any user who can write $KAFKA_DIR. Every command is
# idempotent.
#
# Usage: scripts/kafka.sh COMMAND
#   start     install what is missing, format the storage once, start the
#             node and wait until it serves clients; a running node is
#             reused (restarted only if its configuration changed)
#   stop      controlled shutdown (SIGTERM; SIGKILL after $KAFKA_STOP_TIMEOUT s)
#   restart   stop + start
#   status    one line; exit 0 only if the node runs and its port answers
#   env       client settings: eval "$(scripts/kafka.sh env)"
#   logs [N]  tail the server log
#   install   resolve the jars and write the configuration only
#   reset     stop and delete the data directory
#
# Environment (defaults in brackets):
#   KAFKA_DIR [${BROKERS_DIR:-/var/cache/rbfly-brokers}/kafka]  jars, data, logs
#   KAFKA_VERSION [4.3.1]      a Kafka 4.x release published on Maven Central
#   KAFKA_PORT [9092]  KAFKA_CONTROLLER_PORT [9093]
#   KAFKA_HEAP [512m]          JVM heap (-Xms and -Xmx)
#   KAFKA_START_TIMEOUT [90]  KAFKA_STOP_TIMEOUT [60]   seconds
set -euo pipefail

KAFKA_DIR=${KAFKA_DIR:-${BROKERS_DIR:-/var/cache/rbfly-brokers}/kafka}
KAFKA_VERSION=${KAFKA_VERSION:-4.3.1}
KAFKA_PORT=${KAFKA_PORT:-9092}
KAFKA_CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-9093}
KAFKA_HEAP=${KAFKA_HEAP:-512m}
KAFKA_START_TIMEOUT=${KAFKA_START_TIMEOUT:-90}
KAFKA_STOP_TIMEOUT=${KAFKA_STOP_TIMEOUT:-60}
KAFKA_ARTIFACT=org.apache.kafka:kafka_2.13

LIBS=$KAFKA_DIR/libs        # the jars; what they are: $LIBS/versions
CONF=$KAFKA_DIR/config
DATA=$KAFKA_DIR/data
LOGS=$KAFKA_DIR/logs
PIDFILE=$KAFKA_DIR/kafka.pid
CONF_SUM=$KAFKA_DIR/.config-sum   # configuration the running node started with

LOG_TAG=kafka
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/common.sh
. "$SCRIPT_DIR/lib/common.sh"
# shellcheck source=lib/maven.sh
. "$SCRIPT_DIR/lib/maven.sh"
# (the apt lock is scripts/brokers.sh's: one script installs at a time)
HOST_APT_LOCK=${BROKERS_DIR:-/var/cache/rbfly-brokers}/run/apt.lock
HOST_APT_LOG=$KAFKA_DIR/apt.log

# --- helpers -------------------------------------------------------------------
pid_alive() {  # print the pid of our running node
  local pid
  pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q 'kafka\.Kafka' || return 1
  echo "$pid"
}

# --- installation ----------------------------------------------------------------
# add_log4j_binding DIR: the published POM has log4j-core and slf4j-api, but
# no SLF4J binding (the release tarball adds one): without it the broker
# logs nothing (maven_resolve's hook)
add_log4j_binding() {
  local core log4j slf4j binding
  core=$(find "$1" -name 'log4j-core-*.jar' | head -n 1)
  [ -n "$core" ] || die "no log4j-core among the jars of Kafka $KAFKA_VERSION"
  log4j=$(basename "$core" .jar); log4j=${log4j#log4j-core-}
  slf4j=$(basename "$(find "$1" -name 'slf4j-api-*.jar' | head -n 1)" .jar)
  slf4j=${slf4j#slf4j-api-}
  if [[ $slf4j == 1.* ]]; then binding='log4j-slf4j-impl'; else binding='log4j-slf4j2-impl'; fi
  maven_copy "org.apache.logging.log4j:$binding:$log4j"
}

resolve_jars() {
  [[ $KAFKA_VERSION == 4.* ]] || die "Kafka 4.x only (KAFKA_VERSION=$KAFKA_VERSION);" \
    "3.x needs ZooKeeper or other jars"
  # jars resolved before the versions stamp (scripts/lib/maven.sh) existed
  if [ ! -f "$LIBS/versions" ] && [ "$(cat "$LIBS/.kafka-version" 2>/dev/null)" = "$KAFKA_VERSION" ]; then
    maven_stamp "$KAFKA_DIR/m2" "$LIBS" "$KAFKA_ARTIFACT:$KAFKA_VERSION"
    rm -f "$LIBS/.kafka-version"
  fi
  maven_resolve --java jre --hook add_log4j_binding "$KAFKA_DIR" "$LIBS" "$KAFKA_ARTIFACT:$KAFKA_VERSION"
}

write_config() {
  mkdir -p "$CONF" "$LOGS" "$DATA"
  cat > "$CONF/server.properties" <<EOF
# generated by rbfly scripts/kafka.sh: one KRaft node, broker and controller
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$DATA
num.partitions=1
default.replication.factor=1
# durability (see the header of scripts/kafka.sh): acks=all waits for the
# in-sync replicas, which are this node; no fsync per message (OS flushes)
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
# the benchmark creates and deletes a topic per run
delete.topic.enable=true
auto.create.topics.enable=false
EOF
  local f file level
  for f in log4j2.properties:server.log:INFO log4j2-tools.properties:tools.log:WARN; do
    IFS=: read -r f file level <<< "$f"
    cat > "$CONF/$f" <<EOF
status = warn
shutdownHook = disable
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $LOGS/$file
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = $level
rootLogger.appenderRef.file.ref = FILE
EOF
  done
}

config_sum() { cat "$CONF"/*.properties <(echo "$KAFKA_VERSION $KAFKA_HEAP") | md5sum | cut -d' ' -f1; }

tool() {  # tool MAINCLASS ARG...: a short-lived Kafka command line tool
  java -Xmx256m -Dkafka.logs.dir="$LOGS" -Dlog4j2.configurationFile="$CONF/log4j2-tools.properties" \
       -cp "$LIBS/*" "$@"
}

format_storage() {
  [ -f "$DATA/meta.properties" ] && return 0
  [ -f "$KAFKA_DIR/cluster.id" ] || tool kafka.tools.StorageTool random-uuid > "$KAFKA_DIR/cluster.id"
  log "formatting $DATA (cluster id $(cat "$KAFKA_DIR/cluster.id"))"
  tool kafka.tools.StorageTool format -t "$(cat "$KAFKA_DIR/cluster.id")" \
      -c "$CONF/server.properties" --ignore-formatted > "$LOGS/format.log" 2>&1 ||
    { cat "$LOGS/format.log" >&2; die "formatting the storage failed"; }
}

# --- commands --------------------------------------------------------------------
cmd_install() {
  mkdir -p "$KAFKA_DIR"
  resolve_jars
  write_config
}

cmd_start() {
  local pid
  cmd_install
  if pid=$(pid_alive); then
    if [ "$(cat "$CONF_SUM" 2>/dev/null)" = "$(config_sum)" ]; then
      log "running (pid $pid), Kafka $KAFKA_VERSION on 127.0.0.1:$KAFKA_PORT"
      return 0
    fi
    log "configuration changed; restarting"
    cmd_stop
  fi
  local port
  for port in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"; do
    port_open "$port" && die "port $port is used by another process"
  done
  format_storage
  [ -f "$LOGS/server.log" ] && mv -f "$LOGS/server.log" "$LOGS/server.log.1"
  config_sum > "$CONF_SUM"
  local t=$SECONDS i
  # its own session, so the node outlives this shell; exec keeps the pid
  # shellcheck disable=SC2016
  setsid sh -c 'echo $$ > "$0"; exec "$@"' "$PIDFILE" \
    java "-Xms$KAFKA_HEAP" "-Xmx$KAFKA_HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
         -XX:InitiatingHeapOccupancyPercent=35 -Djava.awt.headless=true \
         -Dkafka.logs.dir="$LOGS" -Dlog4j2.configurationFile="$CONF/log4j2.properties" \
         -cp "$LIBS/*" kafka.Kafka "$CONF/server.properties" \
    > "$LOGS/stdout.log" 2>&1 < /dev/null &
  for ((i = 0; i < KAFKA_START_TIMEOUT * 10; i++)); do
    sleep 0.1
    if ! pid=$(pid_alive); then
      if ((i > 30)); then
        tail -n 30 "$LOGS/stdout.log" "$LOGS/server.log" >&2 2> /dev/null || true
        die "the node exited while starting"
      fi
      continue
    fi
    if port_open "$KAFKA_PORT" && grep -q 'Kafka Server started' "$LOGS/server.log" 2> /dev/null; then
      log "started in $((SECONDS - t))s: pid $pid, Kafka $KAFKA_VERSION on 127.0.0.1:$KAFKA_PORT"
      return 0
    fi
  done
  die "not ready after ${KAFKA_START_TIMEOUT}s (see $LOGS/server.log)"
}

cmd_stop() {
  local pid i
  if ! pid=$(pid_alive); then
    rm -f "$PIDFILE"
    log "not running"
    return 0
  fi
  kill -TERM "$pid"
  for ((i = 0; i < KAFKA_STOP_TIMEOUT * 10; i++)); do
    if ! kill -0 "$pid" 2> /dev/null; then
      rm -f "$PIDFILE"
      log "stopped"
      return 0
    fi
    sleep 0.1
  done
  log "still running after ${KAFKA_STOP_TIMEOUT}s; SIGKILL"
  kill -KILL "$pid" 2> /dev/null || true
  rm -f "$PIDFILE"
}

cmd_status() {
  local pid
  if ! pid=$(pid_alive); then
    echo "kafka: not running"
    return 3
  fi
  local state=answers rc=0
  port_open "$KAFKA_PORT" || { state='does not answer'; rc=1; }
  echo "kafka: running  Kafka $(maven_jar_version "$LIBS" "$KAFKA_ARTIFACT")  pid $pid  127.0.0.1:$KAFKA_PORT $state" \
       " rss $(awk '/VmRSS/ { printf "%d MiB", $2 / 1024 }' "/proc/$pid/status")"
  return $rc
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  restart) cmd_stop; cmd_start ;;
  status) cmd_status ;;
  env) echo "export RBFLY_KAFKA=127.0.0.1:$KAFKA_PORT" ;;
  logs) tail -n "${2:-50}" "$LOGS/server.log" ;;
  install) cmd_install ;;
  reset) cmd_stop; rm -rf "$DATA" "$KAFKA_DIR/cluster.id" "$CONF_SUM"; log "data deleted" ;;
  *) usage ;;
esac
