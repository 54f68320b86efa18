#!/usr/bin/env bash
# java-perf.sh - build and run rbfly's Java benchmark harness
# (perf/java/StreamPerf.java), which measures the official Java RabbitMQ
# stream client (com.rabbitmq:stream-client) with the workloads of
# perf/bench_publish.py and perf/bench_consume.py. Their implementation
# "java" runs it once per round (--rounds 1 --stream NAME), interleaved
# with the Python clients; perf/bench_java.py runs it on its own and writes
# results in their JSON schema.
#
# The client and its runtime dependencies (Netty, SLF4J, ...) plus the
# slf4j-simple binding are resolved with Maven from whatever repository its
# settings configure (Maven Central by default) into a generated POM's
# dependency copy under $JAVA_PERF_DIR; the harness is compiled with javac
# there. Everything is cached: a warm run only starts the JVM (the jars are
# resolved again only when the client version changes, the harness is
# compiled again only when its source or the client version changes).
# Needs Java 17+ (java, javac) and Maven; with root they are installed with
# apt-get when missing.
#
# Usage: scripts/java-perf.sh [HARNESS ARGS...]
#   scripts/java-perf.sh --scenario single --count 20000 --json-out /tmp/j.json
#   scripts/java-perf.sh --help        the harness's options
#   scripts/java-perf.sh --prepare     resolve and compile only; prints the classpath
#   scripts/java-perf.sh --version     the client version the harness runs with
#   scripts/java-perf.sh --interop ARGS  perf/java/Interop.java: publish or read
#                                      sub-entry batches for the interoperability tests
#
# Environment (defaults in brackets):
#   JAVA_PERF_DIR [perf/.java]   cache: Maven repository, jars, classes
#   STREAM_CLIENT_VERSION [1.11.0]  com.rabbitmq:stream-client release
#   JAVA_PERF_OPTS [-Xms1g -Xmx1g -XX:+UseG1GC]  JVM options of the harness
#   JAVA_PERF_LOG [warn]         slf4j-simple log level of the client
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
JAVA_PERF_DIR=${JAVA_PERF_DIR:-$ROOT/perf/.java}
STREAM_CLIENT_VERSION=${STREAM_CLIENT_VERSION:-1.11.0}
JAVA_PERF_OPTS=${JAVA_PERF_OPTS:--Xms1g -Xmx1g -XX:+UseG1GC}
JAVA_PERF_LOG=${JAVA_PERF_LOG:-warn}
DEPENDENCY_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1

SRC=$ROOT/perf/java/StreamPerf.java
SOURCES=("$SRC" "$ROOT/perf/java/Interop.java")
M2=$JAVA_PERF_DIR/m2                          # Maven's local repository (~/.m2 is left alone)
# (-c: with the compression libraries, the client's optional dependencies)
LIBS=$JAVA_PERF_DIR/lib-$STREAM_CLIENT_VERSION-c
# the compression libraries (optional dependencies of the client, which
# declares these versions in its POM) for sub-entry batches: rbfly's
# interoperability tests publish and read compressed batches with Java
COMPRESSION_JARS=(org.apache.commons:commons-compress:1.28.0 com.github.luben:zstd-jni:1.5.7-15
                  at.yawk.lz4:lz4-java:1.11.2 org.xerial.snappy:snappy-java:1.1.10.8)
STAMP=$LIBS/.complete

log() { printf '[java-perf %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

java_major() {
  java -XshowSettings:properties -version 2>&1 \
    | awk -F'= ' '/java.specification.version/ { split($2, v, "."); print v[1] }'
}

ensure_tools() {
  local missing=()
  if ! command -v javac > /dev/null || ! command -v java > /dev/null \
      || [ "$(java_major)" -lt 17 ]; then
    missing+=(openjdk-17-jdk-headless)
  fi
  command -v mvn > /dev/null || missing+=(maven)
  [ "${#missing[@]}" -gt 0 ] || return 0
  [ "$(id -u)" = 0 ] || die "install ${missing[*]} first (needs root)"
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -q -y install --no-install-recommends "${missing[@]}" > /dev/null ||
    { apt-get -q -y update > /dev/null &&
      apt-get -q -y install --no-install-recommends "${missing[@]}" > /dev/null; } ||
    die "apt-get install ${missing[*]} failed"
}

resolve_jars() {
  [ -f "$STAMP" ] && return 0
  ensure_tools
  local tmp=$LIBS.tmp t=$SECONDS slf4j
  rm -rf "$tmp"
  mkdir -p "$tmp"
  cat > "$JAVA_PERF_DIR/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>rbfly.perf</groupId>
  <artifactId>java-stream-client-classpath</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>com.rabbitmq</groupId>
      <artifactId>stream-client</artifactId>
      <version>$STREAM_CLIENT_VERSION</version>
    </dependency>
  </dependencies>
</project>
EOF
  log "resolving com.rabbitmq:stream-client:$STREAM_CLIENT_VERSION and its runtime dependencies"
  mvn -B -q -f "$JAVA_PERF_DIR/pom.xml" -Dmaven.repo.local="$M2" \
      "$DEPENDENCY_PLUGIN:copy-dependencies" -DincludeScope=runtime \
      -DoutputDirectory="$tmp" > "$JAVA_PERF_DIR/mvn.log" 2>&1 ||
    { tail -n 20 "$JAVA_PERF_DIR/mvn.log" >&2; die "mvn failed (see $JAVA_PERF_DIR/mvn.log)"; }
  # the client logs with SLF4J and has no binding: add slf4j-simple of the
  # same version as slf4j-api, so warnings and errors reach stderr
  slf4j=$(basename "$(find "$tmp" -name 'slf4j-api-*.jar' | head -n 1)" .jar)
  slf4j=${slf4j#slf4j-api-}
  [ -n "$slf4j" ] || die "no slf4j-api among the jars of stream-client $STREAM_CLIENT_VERSION"
  mvn -B -q -Dmaven.repo.local="$M2" "$DEPENDENCY_PLUGIN:copy" \
      -Dartifact="org.slf4j:slf4j-simple:$slf4j" -DoutputDirectory="$tmp" \
      >> "$JAVA_PERF_DIR/mvn.log" 2>&1 ||
    die "mvn failed adding slf4j-simple (see $JAVA_PERF_DIR/mvn.log)"
  for a in "${COMPRESSION_JARS[@]}"; do
    mvn -B -q -Dmaven.repo.local="$M2" "$DEPENDENCY_PLUGIN:copy" \
        -Dartifact="$a" -DoutputDirectory="$tmp" >> "$JAVA_PERF_DIR/mvn.log" 2>&1 ||
      die "mvn failed adding $a (see $JAVA_PERF_DIR/mvn.log)"
  done
  rm -rf "$LIBS"
  mv "$tmp" "$LIBS"
  touch "$STAMP"
  log "stream-client $STREAM_CLIENT_VERSION: $(find "$LIBS" -name '*.jar' | wc -l) jars," \
      "$(du -sh "$LIBS" | cut -f1) in $((SECONDS - t))s"
}

compile() {  # sets CLASSES
  local sum
  [ -f "$SRC" ] || die "$SRC is missing"
  sum=$( (cat "${SOURCES[@]}"; echo "$STREAM_CLIENT_VERSION") | md5sum | cut -c1-12)
  CLASSES=$JAVA_PERF_DIR/classes-$sum
  [ -f "$CLASSES/StreamPerf.class" ] && return 0
  ensure_tools
  log "compiling $(basename "$SRC") against stream-client $STREAM_CLIENT_VERSION"
  rm -rf "$JAVA_PERF_DIR"/classes-*
  mkdir -p "$CLASSES.tmp"
  javac -nowarn -Xlint:-deprecation -encoding UTF-8 --release 17 -cp "$LIBS/*" \
      -d "$CLASSES.tmp" "${SOURCES[@]}" || { rm -rf "$CLASSES.tmp"; die "javac failed"; }
  mv "$CLASSES.tmp" "$CLASSES"
}

mkdir -p "$JAVA_PERF_DIR"
resolve_jars
compile
CP="$CLASSES:$LIBS/*"
MAIN=StreamPerf
case "${1:-}" in
  --prepare) echo "$CP"; exit 0 ;;
  --version) echo "$STREAM_CLIENT_VERSION"; exit 0 ;;
  --interop) MAIN=Interop; shift ;;
esac
# shellcheck disable=SC2086  # JAVA_PERF_OPTS holds several options
exec java $JAVA_PERF_OPTS -Dorg.slf4j.simpleLogger.defaultLogLevel="$JAVA_PERF_LOG" \
     -Dorg.slf4j.simpleLogger.logFile=System.err \
     -Dstream.client.version="$STREAM_CLIENT_VERSION" \
     -cp "$CP" "$MAIN" "$@"
