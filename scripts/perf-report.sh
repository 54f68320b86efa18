#!/usr/bin/env bash
# perf-report.sh - run the benchmarks from one clean commit, write their
# results to doc/perf/results/, and render the report (doc/perf.rst, its
# tables, plots, and the recovery table of doc/reliability.rst) from them.
#
# Usage: scripts/perf-report.sh [--quick] [--render] [--rounds N] [--no-kafka]
#                               [--only B,..] [--allow-dirty] [--no-html]
#   --quick       small counts, 1 round (a few minutes): checks the pipeline;
#                 its results say so (params.quick) and replace the committed
#                 ones in the work tree (git checkout doc/perf drops them)
#   --render      measure nothing: render the page, tables and plots from
#                 the committed results (doc/perf/results/*.json)
#   --rounds N    rounds of the full run (default 3: a median and a spread)
#   --no-kafka    leave Kafka alone (neither started nor measured), e.g. on a
#                 machine where a JVM of 512 MiB does not fit
#   --only B,..   run only these of codec, publish, consume, floor, workloads,
#                 concurrent, pipelined, official, handlers, recovery, scale,
#                 broker4, asyncio; the others keep their committed results
# broker4: the summary's scenarios on RabbitMQ 4.x beside 3.10: publishing,
# consuming and the workloads' sizes and fixed rates, each peer as on 3.10
# (publish-4.json, consume-4.json, workloads-4.json); asyncio: single
# messages and batches of 100 on asyncio's own loop, rbfly beside RbFly 0.10
# and rstream, and the bare ceiling client (publish-asyncio.json: the other runs
# use uvloop).
# pipelined: the pipelined publishers beside the Java client's, anonymous and
# named, on RabbitMQ 3.10 and 4.x (pipelined-310.json, pipelined-4.json: the
# verdict's quiet rows, and the page's own section); official: the Java
# client's perf tool against rbfly's Java harness (java-official.json).
#   --allow-dirty measure a work tree with uncommitted changes; every result
#                 records it (env.source.clean false) and the page marks each
#                 of its figures with a dagger, to be re-run
#   --no-html     skip the Sphinx build at the end
# Without --render the work tree must be clean (git status, tracked files):
# the page states one commit for its figures. Every benchmark writes the
# commit and whether the tree was clean into env.source of its JSON.
# Every benchmark (python -m perf.<name>, perf/<name>/) prints its progress
# on stderr. The Java stream client (implementation java:
# perf/java/StreamPerf.java, a JVM per round) is measured interleaved with
# the Python clients, in the same runs, when scripts/java-perf.sh --prepare
# succeeds (java, javac, mvn).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${RBFLY_VENV:-.venv}
quick=() rounds=3 kafka=1 render=0 dirty=0 html=1
only=codec,publish,consume,floor,workloads,concurrent,pipelined,official,handlers,recovery,scale,broker4,asyncio
while [ $# -gt 0 ]; do
  case "$1" in
    --only) only=$2; shift 2 ;;
    --quick) quick=(--quick); shift ;;
    --render) render=1; shift ;;
    --rounds) rounds=$2; shift 2 ;;
    --no-kafka) kafka=0; shift ;;
    --allow-dirty) dirty=1; shift ;;
    --no-html) html=0; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
py="$VENV/bin/python"
results=doc/perf/results

render_all() {
  rm -f doc/perf/*.png doc/perf/*.rst.inc   # no figure or table of an earlier run stays
  "$py" -m perf.report.plot --output-dir doc/perf \
    "$results/codec.json" "$results/publish.json" "$results/consume.json"
  "$py" -m perf.report --output-dir doc/perf \
    "$results/codec.json" "$results/publish.json" "$results/consume.json"
  "$py" -m perf.report.workloads --output-dir doc/perf "$results/workloads.json"
  "$py" -m perf.report.recovery --output-dir doc/perf "$results/recovery.json"
  "$py" -m perf.report.page
  if [ "$html" = 1 ]; then
    "$py" -m sphinx -q -b html doc doc/_build/html
    echo "report: doc/_build/html/perf.html"
  fi
}

if [ "$render" = 1 ]; then
  [ "$html" = 0 ] || scripts/setup.sh doc
  render_all
  exit 0
fi

if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  if [ "$dirty" = 0 ]; then
    echo "perf-report: the work tree has uncommitted changes; commit them (the report" >&2
    echo "states one commit for its figures), or pass --allow-dirty to mark every" >&2
    echo "figure of this run as measured on a modified tree:" >&2
    git status --short --untracked-files=no >&2
    exit 2
  fi
  echo "perf-report: measuring a modified tree: every figure of this run is marked" >&2
fi

scripts/setup.sh doc
scripts/brokers.sh start 310
case ",$only," in *,pipelined,*|*,broker4,*) scripts/brokers.sh start 4 ;; esac
eval "$(scripts/brokers.sh env)"
mkdir -p perf/results "$results" doc/perf
impls=(rbfly rbfly-anonymous rbfly-subentry rbfly-spin rbfly-0.10 rstream ceiling ceiling-polling)
consume_impls=(rbfly rbfly-chunks rbfly-spin rbfly-nopause rbfly-0.10 rstream ceiling ceiling-polling)
workload_impls=(rbfly rbfly-0.10 rstream java null)
runs() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
if { runs publish || runs workloads || runs broker4; } && [ "$kafka" = 1 ] \
    && scripts/kafka.sh start >/dev/null 2>&1; then
  impls+=(aiokafka); workload_impls+=(aiokafka)
fi
if scripts/java-perf.sh --prepare >/dev/null; then
  impls+=(java); consume_impls+=(java)
else
  echo "java: scripts/java-perf.sh --prepare failed; the Java client is not measured" >&2
fi
codec_opts=(--rounds "$rounds"); [ ${#quick[@]} -gt 0 ] && codec_opts=(--quick)
recovery_opts=(--rounds 3); [ ${#quick[@]} -gt 0 ] && recovery_opts=(--quick)
# each benchmark writes perf/results/B.json, copied to the committed
# results only once it has finished
run() {
  local b=$1; shift
  "$py" -m "perf.$b" "$@" --json "perf/results/$b.json" | tee "doc/perf/$b.txt"
  cp "perf/results/$b.json" "$results/$b.json"
}
runs codec && run codec "${codec_opts[@]}"
runs publish && run publish "${quick[@]}" --rounds "$rounds" --url "$RBFLY_URL" \
  --impl "${impls[@]}"
runs consume && run consume "${quick[@]}" --rounds "$rounds" --url "$RBFLY_URL" \
  --impl "${consume_impls[@]}"
# RabbitMQ 4.x beside 3.10: the verdict's scenarios, each peer as above
# (the variants of rbfly that only explain a 3.10 figure are left out)
if runs broker4; then
  impls4=(rbfly rbfly-anonymous rbfly-0.10 rstream ceiling)
  consume4=(rbfly rbfly-chunks rbfly-0.10 rstream ceiling)
  wl4=(rbfly rbfly-0.10 rstream java)
  case " ${impls[*]} " in *" java "*) impls4+=(java); consume4+=(java) ;; esac
  case " ${workload_impls[*]} " in *" aiokafka "*) wl4+=(aiokafka) ;; esac
  run4() {
    local b=$1; shift
    "$py" -m "perf.$b" "$@" --url "$RBFLY_URL4" --json "perf/results/$b-4.json" \
      | tee "doc/perf/$b-4.txt"
    cp "perf/results/$b-4.json" "$results/$b-4.json"
  }
  run4 publish "${quick[@]}" --rounds "$rounds" --impl "${impls4[@]}"
  run4 consume "${quick[@]}" --rounds "$rounds" --impl "${consume4[@]}"
  run4 workloads "${quick[@]}" --workloads sizes latency --impl "${wl4[@]}"
fi
# asyncio's own loop: awaited sends, where the loop's wake-ups are the cost
if runs asyncio; then
  "$py" -m perf.publish "${quick[@]}" --rounds "$rounds" --url "$RBFLY_URL" --loop asyncio \
    --scenario single batch --impl rbfly rbfly-0.10 rstream ceiling \
    --json perf/results/publish-asyncio.json | tee doc/perf/publish-asyncio.txt
  cp perf/results/publish-asyncio.json "$results/publish-asyncio.json"
fi
# the interpreter's floor per message (no broker)
runs floor && run floor "${quick[@]}"
runs workloads && run workloads "${quick[@]}" --url "$RBFLY_URL" --impl "${workload_impls[@]}"
# many tasks of one process, each awaiting its message's confirmation
runs concurrent && run concurrent "${quick[@]}" --rounds "$rounds" --url "$RBFLY_URL"
# the pipelined publishers on each broker, the stream's chunks counted
if runs pipelined; then
  for broker in 310 4; do
    url=$RBFLY_URL; [ "$broker" = 4 ] && url=$RBFLY_URL4
    "$py" -m perf.publish "${quick[@]}" --scenario pipelined --rounds "$rounds" --url "$url" \
      --impl rbfly rbfly-many rbfly-many-anonymous java java-named --chunks \
      --json "perf/results/pipelined-$broker.json" | tee "doc/perf/pipelined-$broker.txt"
    cp "perf/results/pipelined-$broker.json" "$results/pipelined-$broker.json"
  done
fi
# the Java client's own perf tool beside rbfly's Java harness; exits 1 when
# the harness falls more than 10% below the tool (its JSON says by how much)
if runs official; then
  "$py" -m perf.official "${quick[@]}" --url "$RBFLY_URL" --json perf/results/java-official.json \
    | tee doc/perf/java-official.txt \
    || echo "official: the harness fell below the tool; see doc/perf/java-official.txt" >&2
  cp perf/results/java-official.json "$results/java-official.json"
fi
# concurrent handlers (client.process) against a plain async for
runs handlers && run handlers "${quick[@]}" --url "$RBFLY_URL"
# rbfly through a proxy cutting every connection (doc/reliability.rst)
runs recovery && run recovery "${recovery_opts[@]}" --url "$RBFLY_URL"
# how cost grows with streams, subscriptions, partitions (RabbitMQ 4.x: super streams)
runs scale && run scale "${quick[@]}" --url "$RBFLY_URL4"
render_all
