#!/usr/bin/env bash
# perf-report.sh - run the benchmarks, draw the plots and build the report
# page (doc/perf.rst) with Sphinx.
#
# Usage: scripts/perf-report.sh [--quick] [--rounds N] [--no-kafka]
#   --quick     small counts, 1 round (a few minutes): checks the pipeline
#   --rounds N  rounds of the full run (default 5; the original report used 100)
#   --no-kafka  leave Kafka alone (neither started nor measured), e.g. on a
#               machine where a JVM of 512 MiB does not fit
# Results: perf/results/*.json; plots (perf/plot.py) and reST tables
# (perf/report.py, *.rst.inc): doc/perf/; HTML: doc/_build/html.
# perf/results/java-publish.json and java-consume.json (perf/bench_java.py,
# run separately) are merged into the plots and tables when they exist.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${RBFLY_VENV:-.venv}
quick=() rounds=5 kafka=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=(--quick); shift ;;
    --rounds) rounds=$2; shift 2 ;;
    --no-kafka) kafka=0; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

scripts/setup.sh perf,doc
scripts/brokers.sh start 310
eval "$(scripts/brokers.sh env)"
mkdir -p perf/results doc/perf
impls=(rbfly rbfly-0.10 rstream)
if [ "$kafka" = 1 ] && scripts/kafka.sh start >/dev/null 2>&1; then impls+=(aiokafka); fi
py="$VENV/bin/python"
codec_opts=(--rounds "$rounds"); [ ${#quick[@]} -gt 0 ] && codec_opts=(--count 1000 --rounds 1)
"$py" perf/bench_codec.py "${codec_opts[@]}" --json perf/results/codec.json | tee doc/perf/codec.txt
"$py" perf/bench_publish.py "${quick[@]}" --rounds "$rounds" --url "$RBFLY_URL" \
  --impl "${impls[@]}" --json perf/results/publish.json | tee doc/perf/publish.txt
"$py" perf/bench_consume.py "${quick[@]}" --rounds "$rounds" --url "$RBFLY_URL" \
  --json perf/results/consume.json | tee doc/perf/consume.txt
results=(perf/results/codec.json perf/results/publish.json perf/results/consume.json)
for extra in perf/results/java-publish.json perf/results/java-consume.json; do
  if [ -f "$extra" ]; then results+=("$extra"); echo "merging $extra" >&2; fi
done
rm -f doc/perf/*.png doc/perf/*.rst.inc   # no figure or table of an earlier run stays
"$py" perf/plot.py --output-dir doc/perf "${results[@]}"
"$py" perf/report.py --output-dir doc/perf "${results[@]}"
"$py" -m sphinx -q -b html doc doc/_build/html
echo "report: doc/_build/html/perf.html"
