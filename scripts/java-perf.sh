#!/usr/bin/env bash
# java-perf.sh - build and run rbfly's Java benchmark harness
# (perf/java/StreamPerf.java), which measures the official Java RabbitMQ
# stream client (com.rabbitmq:stream-client) with the workloads of the
# publishing and consuming benchmarks (python -m perf.publish, perf.consume).
# Their implementation "java" runs it once per round (--rounds 1 --stream
# NAME), interleaved with the Python clients; python -m perf.java_client
# runs it on its own and writes results in their JSON schema.
#
# The client and its runtime dependencies (Netty, SLF4J, ...) plus the
# slf4j-simple binding are resolved with Maven from whatever repository its
# settings configure (Maven Central by default) into a generated POM's
# dependency copy under $JAVA_PERF_DIR; the harness is compiled with javac
# there. Everything is cached: a warm run only starts the JVM (the jars are
# resolved again only when the client version changes, the harness is
# compiled again only when its source or the client version changes). What
# was resolved and built is stamped in a file "versions" next to it: the jars
# (lib-VERSION-c/versions, scripts/lib/maven.sh) and the compiled harness
# (classes-SUM/versions: the stream-client it was compiled against, javac).
# Needs Java 17+ (java, javac) and Maven; with root they are installed with
# apt-get when missing.
#
# Usage: scripts/java-perf.sh [HARNESS ARGS...]
#   scripts/java-perf.sh --scenario single --count 20000 --json-out /tmp/j.json
#   scripts/java-perf.sh --help        the harness's options
#   scripts/java-perf.sh --prepare     resolve and compile only; prints the classpath
#   scripts/java-perf.sh --version     the client version the harness runs with
#                                      (the one it was compiled against)
#   scripts/java-perf.sh --interop ARGS  perf/java/Interop.java: publish or read
#                                      sub-entry batches for the interoperability tests
#   scripts/java-perf.sh --trace-interop ARGS  perf/java/TraceInterop.java: publish
#                                      or read a traced message (tracing interop tests)
#   scripts/java-perf.sh --official ARGS  the Java client's own perf tool,
#                                      StreamPerfTest, as bundled with stream-client
#                                      $OFFICIAL_VERSION (its --help for ARGS): the
#                                      reference the harness's figures are held against
#                                      (python -m perf.official runs it per scenario)
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
CLIENT_ARTIFACT=com.rabbitmq:stream-client

SRC=$ROOT/perf/java/StreamPerf.java
SOURCES=("$SRC" "$ROOT/perf/java/Interop.java" "$ROOT/perf/java/TraceInterop.java")
# the jars, in Maven's local repository $JAVA_PERF_DIR/m2 (~/.m2 is left alone)
# (-ct: with the compression libraries, the client's optional dependencies,
# and the tracing ones)
LIBS=$JAVA_PERF_DIR/lib-$STREAM_CLIENT_VERSION-ct
# the compression libraries (optional dependencies of the client, which
# declares these versions in its POM) for sub-entry batches: rbfly's
# interoperability tests publish and read compressed batches with Java
COMPRESSION_JARS=(org.apache.commons:commons-compress:1.28.0 com.github.luben:zstd-jni:1.5.7-15
                  at.yawk.lz4:lz4-java:1.11.2 org.xerial.snappy:snappy-java:1.1.10.8)
# Micrometer Observation bridged to OpenTelemetry (the client's optional
# tracing): rbfly's tracing interoperability tests (perf/java/TraceInterop.java);
# the SDK of the OpenTelemetry version the bridge depends on
TRACING_JARS=(io.micrometer:micrometer-tracing-bridge-otel:1.7.2
              io.opentelemetry:opentelemetry-sdk-trace:1.62.0)

# the Java client's own perf tool (StreamPerfTest, bundled with the client
# until 0.13; later versions ship it apart, as a jar the registry may not
# serve) and the optional dependencies of the client it needs
OFFICIAL_VERSION=0.13.0
OFFICIAL_JARS=(com.rabbitmq:stream-client:$OFFICIAL_VERSION info.picocli:picocli:4.7.5
               ch.qos.logback:logback-classic:1.2.12 io.dropwizard.metrics:metrics-core:4.2.20
               io.micrometer:micrometer-core:1.11.4
               io.micrometer:micrometer-registry-prometheus:1.11.4
               com.google.guava:guava:32.1.2-jre com.rabbitmq:amqp-client:5.19.0
               com.swiftmq:swiftmq-client:12.2.2)

LOG_TAG='java-perf'
# shellcheck source=lib/common.sh
. "$ROOT/scripts/lib/common.sh"
# shellcheck source=lib/maven.sh
. "$ROOT/scripts/lib/maven.sh"
# (the apt lock is scripts/brokers.sh's: one script installs at a time)
HOST_APT_LOCK=${BROKERS_DIR:-/var/cache/rbfly-brokers}/run/apt.lock
HOST_APT_LOG=$JAVA_PERF_DIR/apt.log

# add_slf4j_simple DIR: the client logs with SLF4J and has no binding: add
# slf4j-simple of the same version as slf4j-api, so warnings and errors reach
# stderr (maven_resolve's hook)
add_slf4j_simple() {
  local slf4j
  slf4j=$(basename "$(find "$1" -name 'slf4j-api-*.jar' | head -n 1)" .jar)
  slf4j=${slf4j#slf4j-api-}
  [ -n "$slf4j" ] || die "no slf4j-api among the jars of stream-client $STREAM_CLIENT_VERSION"
  maven_copy "org.slf4j:slf4j-simple:$slf4j"
}

resolve_jars() {
  local want=("$CLIENT_ARTIFACT:$STREAM_CLIENT_VERSION" "${COMPRESSION_JARS[@]}"
              "${TRACING_JARS[@]}")
  # jars resolved before the versions stamp (scripts/lib/maven.sh) existed
  if [ -f "$LIBS/.complete" ] && [ ! -f "$LIBS/versions" ]; then
    maven_stamp "$JAVA_PERF_DIR/m2" "$LIBS" "${want[@]}"
    rm -f "$LIBS/.complete"
  fi
  maven_resolve --java jdk --transitive --hook add_slf4j_simple "$JAVA_PERF_DIR" "$LIBS" \
      "${want[@]}"
}

# stamp_classes DIR [JAVAC-VERSION]: DIR/versions, what the harness in DIR
# was compiled against (the javac version is unknown for classes compiled
# before the stamp existed)
stamp_classes() {
  local client javac_version=${2:-}
  client=$(maven_jar_version "$LIBS" "$CLIENT_ARTIFACT")
  [ -n "$client" ] || die "no $CLIENT_ARTIFACT in $LIBS/versions"
  {
    echo "# compiled by scripts/java-perf.sh, $(date -Is)"
    printf 'source %s\n' "${SOURCES[@]#"$ROOT/"}"
    echo "client $CLIENT_ARTIFACT:$client"
    [ -z "$javac_version" ] || echo "javac $javac_version"
  } > "$1/versions"
}

compile() {  # sets CLASSES and CLIENT_VERSION (the client it was compiled against)
  local sum
  [ -f "$SRC" ] || die "$SRC is missing"
  sum=$( (cat "${SOURCES[@]}"; echo "$STREAM_CLIENT_VERSION") | md5sum | cut -c1-12)
  CLASSES=$JAVA_PERF_DIR/classes-$sum
  if [ ! -f "$CLASSES/StreamPerf.class" ]; then
    ensure_java_tools jdk
    log "compiling $(basename "$SRC") against stream-client $STREAM_CLIENT_VERSION"
    rm -rf "$JAVA_PERF_DIR"/classes-*
    mkdir -p "$CLASSES.tmp"
    javac -nowarn -Xlint:-deprecation -encoding UTF-8 --release 17 -cp "$LIBS/*" \
        -d "$CLASSES.tmp" "${SOURCES[@]}" || { rm -rf "$CLASSES.tmp"; die "javac failed"; }
    stamp_classes "$CLASSES.tmp" "$(javac -version 2>&1 | awk '{ print $2; exit }')"
    mv "$CLASSES.tmp" "$CLASSES"
  fi
  [ -f "$CLASSES/versions" ] || stamp_classes "$CLASSES"
  CLIENT_VERSION=$(sed -n "s/^client $CLIENT_ARTIFACT://p" "$CLASSES/versions")
  [ -n "$CLIENT_VERSION" ] || die "no client version in $CLASSES/versions"
}

# run_official ARGS: StreamPerfTest with its own defaults, logging warnings
# only (logback's default is every debug line on the console)
run_official() {
  local libs=$JAVA_PERF_DIR/official-$OFFICIAL_VERSION conf=$JAVA_PERF_DIR/official-conf
  maven_resolve --transitive "$JAVA_PERF_DIR" "$libs" "${OFFICIAL_JARS[@]}"
  mkdir -p "$conf"
  cat > "$conf/logback.xml" <<'EOF'
<configuration>
  <appender name="ERR" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{36} - %msg%n</pattern></encoder>
  </appender>
  <root level="warn"><appender-ref ref="ERR" /></root>
</configuration>
EOF
  # shellcheck disable=SC2086  # JAVA_PERF_OPTS holds several options
  exec java $JAVA_PERF_OPTS -cp "$conf:$libs/*" com.rabbitmq.stream.perf.StreamPerfTest "$@"
}

mkdir -p "$JAVA_PERF_DIR"
if [ "${1:-}" = --official ]; then shift; run_official "$@"; fi
resolve_jars
compile
CP="$CLASSES:$LIBS/*"
MAIN=StreamPerf
case "${1:-}" in
  --prepare) echo "$CP"; exit 0 ;;
  --version) echo "$CLIENT_VERSION"; exit 0 ;;
  --interop) MAIN=Interop; shift ;;
  --trace-interop) MAIN=TraceInterop; shift ;;
esac
# shellcheck disable=SC2086  # JAVA_PERF_OPTS holds several options
exec java $JAVA_PERF_OPTS -Dorg.slf4j.simpleLogger.defaultLogLevel="$JAVA_PERF_LOG" \
     -Dorg.slf4j.simpleLogger.logFile=System.err \
     -Dstream.client.version="$CLIENT_VERSION" \
     -cp "$CP" "$MAIN" "$@"
