#!/usr/bin/env bash
# perf-report.sh - run the benchmarks, draw the plots and build the report
# page (doc/perf.rst) with Sphinx.
#
# Usage: scripts/perf-report.sh [--quick] [--rounds N] [--no-kafka] [--only B,..]
#   --quick     small counts, 1 round (a few minutes): checks the pipeline
#   --rounds N  rounds of the full run (default 5; the original report used 100)
#   --no-kafka  leave Kafka alone (neither started nor measured), e.g. on a
#               machine where a JVM of 512 MiB does not fit
#   --only B,.. run only these of codec, publish, consume, workloads,
#               concurrent; the others keep their committed results
#               (doc/perf/results/B.json)
# Results: perf/results/*.json; plots (python -m perf.report.plot) and reST
# tables (python -m perf.report, *.rst.inc): doc/perf/; the workloads users
# run (python -m perf.workloads: message sizes, many publishers, latency at
# a fixed load, a slow application, compression), one round of each case,
# their tables and a figure each (python -m perf.report.workloads); HTML:
# doc/_build/html. Every benchmark (python -m perf.<name>, perf/<name>/)
# prints its progress on stderr.
# The Java stream client (implementation java: perf/java/StreamPerf.java, a
# JVM per round) is measured interleaved with the Python clients, in the same
# runs, when scripts/java-perf.sh --prepare succeeds (java, javac, mvn; the
# client is resolved and the harness compiled, cached). Results of
# python -m perf.java_client (a separate run) are no longer merged: on this shared
# machine they are not comparable, and they would replace the interleaved
# java results in the tables.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${RBFLY_VENV:-.venv}
quick=() rounds=5 kafka=1 only=codec,publish,consume,workloads,concurrent
while [ $# -gt 0 ]; do
  case "$1" in
    --only) only=$2; shift 2 ;;
    --quick) quick=(--quick); shift ;;
    --rounds) rounds=$2; shift 2 ;;
    --no-kafka) kafka=0; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

scripts/setup.sh doc
scripts/brokers.sh start 310
eval "$(scripts/brokers.sh env)"
mkdir -p perf/results doc/perf
impls=(rbfly rbfly-anonymous rbfly-subentry rbfly-spin rbfly-0.10 rstream ceiling ceiling-polling)
consume_impls=(rbfly rbfly-chunks rbfly-spin rbfly-nopause rbfly-0.10 rstream ceiling ceiling-polling)
runs() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
for b in codec publish consume workloads concurrent; do
  if ! runs "$b"; then
    [ -f "doc/perf/results/$b.json" ] || { echo "no committed results of $b; run it" >&2; exit 2; }
    cp "doc/perf/results/$b.json" "perf/results/$b.json"
  fi
done
workload_impls=(rbfly rbfly-0.10 rstream java null)
if { runs publish || runs workloads; } && [ "$kafka" = 1 ] \
    && scripts/kafka.sh start >/dev/null 2>&1; then
  impls+=(aiokafka); workload_impls+=(aiokafka)
fi
if scripts/java-perf.sh --prepare >/dev/null; then
  impls+=(java); consume_impls+=(java)
else
  echo "java: scripts/java-perf.sh --prepare failed; the Java client is not measured" >&2
fi
py="$VENV/bin/python"
codec_opts=(--rounds "$rounds"); [ ${#quick[@]} -gt 0 ] && codec_opts=(--count 1000 --rounds 1)
if runs codec; then
  "$py" -m perf.codec "${codec_opts[@]}" --json perf/results/codec.json | tee doc/perf/codec.txt
fi
if runs publish; then
  "$py" -m perf.publish "${quick[@]}" --rounds "$rounds" --url "$RBFLY_URL" \
    --impl "${impls[@]}" --json perf/results/publish.json | tee doc/perf/publish.txt
fi
if runs consume; then
  "$py" -m perf.consume "${quick[@]}" --rounds "$rounds" --url "$RBFLY_URL" \
    --impl "${consume_impls[@]}" --json perf/results/consume.json | tee doc/perf/consume.txt
fi
# the interpreter's floor per message (seconds, no broker): what the CPU goals
# ask of a Python client, against rbfly's own decoding
"$py" -m perf.floor --json perf/results/floor.json | tee doc/perf/floor.txt
if runs workloads; then
  # the Java client by its own perf tool (skipped by the script when java is missing)
  "$py" -m perf.workloads "${quick[@]}" --url "$RBFLY_URL" --impl "${workload_impls[@]}" \
    --json perf/results/workloads.json | tee doc/perf/workloads.txt
fi
if runs concurrent; then
  # many tasks of one process, each awaiting its message's confirmation
  "$py" -m perf.concurrent "${quick[@]}" --rounds "$rounds" --url "$RBFLY_URL" \
    --json perf/results/concurrent.json | tee doc/perf/concurrent.txt
fi
results=(perf/results/codec.json perf/results/publish.json perf/results/consume.json)
rm -f doc/perf/*.png doc/perf/*.rst.inc   # no figure or table of an earlier run stays
mkdir -p doc/perf/results
cp "${results[@]}" perf/results/workloads.json perf/results/floor.json perf/results/concurrent.json \
  doc/perf/results/
"$py" -m perf.report.plot --output-dir doc/perf "${results[@]}"
"$py" -m perf.report --output-dir doc/perf "${results[@]}"
"$py" -m perf.report.workloads --output-dir doc/perf perf/results/workloads.json
"$py" -m sphinx -q -b html doc doc/_build/html
echo "report: doc/_build/html/perf.html"
