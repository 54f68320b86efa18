#!/usr/bin/env bash
# fuzz.sh - coverage-guided fuzzing (atheris, libFuzzer) of every decoder
# of bytes from the network: the targets of fuzz/targets.py.
#
# Usage: scripts/fuzz.sh [--ci | --time SECONDS | --runs N] [--gcc-cov] [--record]
#                        [TARGET ...]
#
#   --time SECONDS  fuzz each target for SECONDS (default 60)
#   --runs N        run N inputs through each target
#   --ci            a short run: 3 s per target (under a minute for all),
#                   new inputs kept in a temporary folder
#   --gcc-cov       coverage of the Cython modules too: fuzz a copy of rbfly
#                   built by GCC with -fsanitize-coverage=trace-pc,trace-cmp
#                   (in fuzz/.build-cov, rebuilt when sources change; see
#                   fuzz/gcc_cov.c), about 5-10 times slower per input
#   --record        append each target's counts to the log of fuzz/RUNS.md,
#                   with the commit fuzzed (HEAD; refused when rbfly/ or
#                   fuzz/ differ from it) and the seconds the run took
#
# All the targets by default. Each one starts from its seeds
# (fuzz/corpus/TARGET), its regression inputs (fuzz/regressions/TARGET) and
# the inputs earlier runs kept (fuzz/.work/TARGET, not in git). Prints the
# inputs run and the executions per second of each target; exits non-zero
# on any finding, whose input is written to fuzz/findings/TARGET/ (to be
# fixed, then moved to fuzz/regressions/TARGET/, which
# tests/unit/test_fuzz_regressions.py replays).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${RBFLY_VENV:-.venv}
PY="$VENV/bin/python"

limit=(-max_total_time=60)
ci=0
record=0
gcc_cov=0
targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --time) limit=(-max_total_time="$2"); shift 2 ;;
    --runs) limit=(-runs="$2"); shift 2 ;;
    --ci) ci=1; limit=(-max_total_time=3); shift ;;
    --gcc-cov) gcc_cov=1; shift ;;
    --record) record=1; shift ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
"$PY" -c 'import atheris' 2>/dev/null \
  || { echo "fuzz.sh: atheris is not installed in $VENV (pip install --group fuzz)" >&2; exit 2; }
all=$("$PY" -c 'from fuzz.targets import TARGETS; print(" ".join(TARGETS))')
[ ${#targets[@]} -gt 0 ] || read -r -a targets <<<"$all"
for target in "${targets[@]}"; do
  [[ " $all " == *" $target "* ]] || { echo "fuzz.sh: no target $target ($all)" >&2; exit 2; }
done

# rbfly with its Cython modules instrumented for coverage, and the shim that
# hands their counters to libFuzzer (fuzz/run.py loads both)
build_gcc_cov() {
  local dir=fuzz/.build-cov
  CFLAGS="-fsanitize-coverage=trace-pc,trace-cmp" "$PY" setup.py -q build_ext \
    --build-lib "$dir" --build-temp "$dir/tmp" >/dev/null
  (cd rbfly && find . \( -name '*.py' -o -name py.typed \) -exec cp --parents {} "../$dir/rbfly/" \;)
  gcc -O2 -Wall -shared -fPIC -o "$dir/libgcccov.so" fuzz/gcc_cov.c
  export RBFLY_FUZZ_GCC_COV="$dir"
}
# the commit a recorded run fuzzed: the totals of fuzz/RUNS.md name it
# (tests/unit/test_fuzz_runs.py), so what was fuzzed must be that commit
if [ $record = 1 ]; then
  commit=$(git rev-parse --short=12 HEAD)
  if [ -n "$(git status --porcelain -- rbfly fuzz ':!fuzz/RUNS.md')" ]; then
    echo "fuzz.sh: --record needs rbfly/ and fuzz/ as committed (HEAD $commit); commit or stash:" >&2
    git status --short -- rbfly fuzz ':!fuzz/RUNS.md' >&2
    exit 2
  fi
fi
mode=python
if [ $gcc_cov = 1 ]; then build_gcc_cov; mode=python+gcc; fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
printf '%-14s %12s %10s %8s %8s  %s\n' target inputs execs/s new rss_mb result
for target in "${targets[@]}"; do
  if [ $ci = 1 ]; then work="$tmp/$target"; else work="fuzz/.work/$target"; fi
  findings="fuzz/findings/$target"
  mkdir -p "$work" "$findings" "fuzz/regressions/$target"
  log="$tmp/$target.log"
  # -timeout: a hang is a finding; -rss_limit_mb: so is memory out of
  # proportion to an input of at most -max_len bytes
  # inputs of at most 16 KiB; 2 KiB for the connection core and 4 KiB for
  # the frame reader, which run pure Python under atheris' instrumentation:
  # a cap for speed (their inputs had grown to 16 KiB and they ran 850 and
  # 1,400 a second); the handshake's frames are under 200 bytes, and a
  # length past a frame size limit or past the end of the input is reached
  # as well with 2 or 4 KiB
  case $target in core) max_len=2048 ;; frames) max_len=4096 ;; *) max_len=16384 ;; esac
  rc=0
  started=$SECONDS
  "$PY" -m fuzz.run "$target" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 \
    -max_len=$max_len -print_final_stats=1 -artifact_prefix="$findings/" \
    "$work" "fuzz/corpus/$target" "fuzz/regressions/$target" >"$log" 2>&1 || rc=$?
  seconds=$((SECONDS - started))
  stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
  inputs=$(stat number_of_executed_units)
  speed=$(stat average_exec_per_sec)
  result=ok
  if [ $rc != 0 ]; then
    result="FINDING (exit $rc): $(grep -o 'Test unit written to .*' "$log" | tail -1)"
    status=1
    grep -A30 -E 'Uncaught Python exception|ERROR: libFuzzer' "$log" | head -40 >&2 || true
  fi
  printf '%-14s %12s %10s %8s %8s  %s\n' "$target" "${inputs:-?}" "${speed:-?}" \
    "$(stat new_units_added)" "$(stat peak_rss_mb)" "$result"
  if [ $record = 1 ]; then
    printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$(date -u +%F)" "$target" "$mode" \
      "$commit" "$seconds" "${inputs:-?}" "${speed:-?}" "$result" >>fuzz/RUNS.md
  fi
done
exit $status
