#!/usr/bin/env bash
# cli_pipeline.sh - the rbfly command line tool in a shell pipeline.
#
# Creates a stream, publishes a program's output to it, a message a line
# (`rbfly publish` prints how many messages the broker confirmed), reads
# the messages back as JSON lines with `rbfly tail`, checks with standard
# tools that every line arrived once and in order, and deletes the stream.
#
# Run it with the broker's URL in RBFLY_URL (default
# rabbitmq-stream://guest:guest@localhost:5552/) and, in PYTHON, a Python
# with rbfly installed (default python3):
#
#   RBFLY_URL=rabbitmq-stream://guest:guest@localhost:5552/ examples/cli_pipeline.sh
set -euo pipefail
PYTHON=${PYTHON:-python3}
export RBFLY_URL=${RBFLY_URL:-rabbitmq-stream://guest:guest@localhost:5552/}
COUNT=1000

rbfly() { "$PYTHON" -m rbfly "$@"; }
fail() { echo "failed: $*" >&2; exit 1; }
events() { seq 1 "$COUNT" | sed 's/^/event /'; }  # the program whose output is published

stream=rbfly-example-cli-$$-$RANDOM
work=$(mktemp -d)
cleanup() {
  rbfly stream delete "$stream" >/dev/null || echo "could not delete stream $stream" >&2
  rm -rf "$work"
}
rbfly stream create "$stream"
trap cleanup EXIT

# publish: stdin lines -> messages; the count of confirmed ones is printed
events | rbfly publish "$stream" | tee "$work/published"
grep -qw "$COUNT" "$work/published" || fail "rbfly publish did not report $COUNT confirmed"

# tail: the first COUNT messages from the start of the stream, a JSON
# document a line; the bodies are JSON strings, in the order read
rbfly tail "$stream" --offset first -n "$COUNT" --format json > "$work/tail"
[ "$(wc -l < "$work/tail")" -eq "$COUNT" ] || fail "rbfly tail printed $(wc -l < "$work/tail") lines"
grep -o '"event [0-9]*"' "$work/tail" | tr -d '"' > "$work/read"
events | diff -q - "$work/read" >/dev/null || fail "the lines read back differ from those published"

echo "ok: $COUNT lines piped through stream $stream, each read back once, in order"
