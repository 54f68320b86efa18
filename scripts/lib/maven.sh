# shellcheck shell=bash
# maven.sh - Java and the Maven resolver of scripts/kafka.sh (the Kafka
# broker's jars) and scripts/java-perf.sh (the Java stream client's jars)
# (sourced after lib/common.sh, never run).
#
# Maven resolves from whatever repository its settings configure (Maven
# Central by default); its local repository is a directory of the script's
# (~/.m2 is left alone). What was resolved is stamped in a file "versions"
# next to the jars:
#   # a comment: who resolved, when
#   requested G:A:V        one line per artifact asked for
#   jar G:A:V FILE         one line per jar in the directory
# (a jar not found in the local repository is "jar ? FILE").

DEPENDENCY_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1

java_major() {
  java -XshowSettings:properties -version 2>&1 \
    | awk -F'= ' '/java.specification.version/ { split($2, v, "."); print v[1] }'
}

# ensure_java_tools jre|jdk: java 17+ (jdk: and javac) and mvn; with root,
# what is missing is installed with apt-get
ensure_java_tools() {
  local missing=()
  if ! command -v java > /dev/null || { [ "$1" = jdk ] && ! command -v javac > /dev/null; } ||
     ! [ "$(java_major)" -ge 17 ] 2> /dev/null; then
    missing+=("openjdk-17-$1-headless")
  fi
  command -v mvn > /dev/null || missing+=(maven)
  [ "${#missing[@]}" -gt 0 ] || return 0
  host_apt_install "${missing[@]}"
}

# maven_resolved OUT G:A:V...: OUT/versions has every G:A:V as requested
maven_resolved() {
  local f=$1/versions g
  shift
  [ -f "$f" ] || return 1
  for g; do grep -qxF "requested $g" "$f" || return 1; done
}

# maven_jar_version OUT G:A: version of the jar G:A in OUT (OUT/versions)
maven_jar_version() {
  awk -v ga="$2" '$1 == "jar" && index($2, ga ":") == 1 { print substr($2, length(ga) + 2); exit }' \
    "$1/versions"
}

# maven_stamp M2 OUT G:A:V...: write OUT/versions for the jars in OUT (their
# coordinates are their paths in the local repository M2)
maven_stamp() {
  local m2=$1 out=$2
  shift 2
  {
    echo "# resolved with Maven by scripts/$(basename "$0") (scripts/lib/maven.sh), $(date -Is)"
    printf 'requested %s\n' "$@"
    # (a file name is ARTIFACT-VERSION[-CLASSIFIER].jar, in M2/GROUP/ARTIFACT/VERSION/)
    awk 'FNR == NR { want[$0] = 1; next }
         { n = split($0, p, "/"); f = p[n]
           if (!(f in want) || (f in done) || n < 4) next
           g = p[1]; for (i = 2; i <= n - 3; i++) g = g "." p[i]
           print "jar " g ":" p[n - 2] ":" p[n - 1], f; done[f] = 1 }
         END { for (f in want) if (!(f in done)) print "jar ?", f }' \
      <(find "$out" -maxdepth 1 -name '*.jar' -printf '%f\n') \
      <(find "$m2" -name '*.jar' -printf '%P\n' | sort) | sort -k1,1 -k2
  } > "$out/versions"
}

# maven_copy G:A:V: (in a HOOK of maven_resolve) copy the jar of G:A:V alone
# into the directory the resolver fills, $MAVEN_TMP
maven_copy() {
  mvn -B -q -f "$MAVEN_WORK/pom.xml" -Dmaven.repo.local="$MAVEN_WORK/m2" \
      "$DEPENDENCY_PLUGIN:copy" -Dartifact="$1" -DoutputDirectory="$MAVEN_TMP" \
      >> "$MAVEN_WORK/mvn.log" 2>&1 ||
    { tail -n 20 "$MAVEN_WORK/mvn.log" >&2; die "mvn failed adding $1 (see $MAVEN_WORK/mvn.log)"; }
}

# maven_resolve [--java jre|jdk] [--hook FN] WORK OUT G:A:V [G:A:V...]:
# the jars of the first artifact and its runtime dependencies, and of the
# further artifacts alone, in the directory OUT (flat: "OUT/*" is a
# classpath), stamped in OUT/versions; nothing is done when OUT/versions
# already has every G:A:V asked for. Maven's POM, local repository and
# output are WORK/pom.xml, WORK/m2 and WORK/mvn.log; the tools (--java: the
# JRE, default, or the JDK) are installed when missing. FN (a function of the
# script's) runs before the jars are put in place, to add more with maven_copy
# (e.g. the logging binding that matches the resolved API).
maven_resolve() {
  local java=jre hook="" transitive=0
  while :; do
    case "$1" in
      --java) java=$2; shift 2 ;;
      --hook) hook=$2; shift 2 ;;
      --transitive) transitive=1; shift ;;
      *) break ;;
    esac
  done
  local work=$1 out=$2 root=$3 gav=() g t=$SECONDS
  shift 2
  maven_resolved "$out" "$@" && return 0
  ensure_java_tools "$java"
  MAVEN_WORK=$work MAVEN_TMP=$out.tmp
  rm -rf "$MAVEN_TMP"
  mkdir -p "$MAVEN_TMP"
  IFS=: read -r -a gav <<< "$root"
  [ "${#gav[@]}" = 3 ] || die "maven_resolve: $root is not GROUP:ARTIFACT:VERSION"
  local deps="" d
  # the root, and with --transitive every artifact, with its dependencies
  for g in "$root" $([ "$transitive" = 0 ] || echo "${@:2}"); do
    IFS=: read -r -a d <<< "$g"
    [ "${#d[@]}" = 3 ] || die "maven_resolve: $g is not GROUP:ARTIFACT:VERSION"
    deps+="    <dependency><groupId>${d[0]}</groupId><artifactId>${d[1]}</artifactId>"
    deps+="<version>${d[2]}</version></dependency>"$'\n'
  done
  cat > "$work/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>rbfly.scripts</groupId>
  <artifactId>${gav[1]}-classpath</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
$deps  </dependencies>
</project>
EOF
  log "resolving $root and its runtime dependencies"
  mvn -B -q -f "$work/pom.xml" -Dmaven.repo.local="$work/m2" \
      "$DEPENDENCY_PLUGIN:copy-dependencies" -DincludeScope=runtime \
      -DoutputDirectory="$MAVEN_TMP" > "$work/mvn.log" 2>&1 ||
    { tail -n 20 "$work/mvn.log" >&2; die "mvn failed (see $work/mvn.log)"; }
  shift
  [ "$transitive" = 1 ] || for g; do maven_copy "$g"; done
  [ -z "$hook" ] || "$hook" "$MAVEN_TMP"
  maven_stamp "$work/m2" "$MAVEN_TMP" "$root" "$@"
  rm -rf "$out"
  mv "$MAVEN_TMP" "$out"
  log "$root: $(find "$out" -name '*.jar' | wc -l) jars, $(du -sh "$out" | cut -f1)" \
      "in $((SECONDS - t))s (versions: $out/versions)"
}
