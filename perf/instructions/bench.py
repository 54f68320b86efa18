"""
``python -m perf.instructions``: :py:mod:`perf.instructions.callgrind`
run by the benchmarks' shared ``main()`` (see
:py:mod:`perf.instructions.measure` for what it counts and how).
"""

import argparse

from perf.common import cli
from perf.instructions import callgrind, measure

def run(args: argparse.Namespace) -> cli.Outcome:
    status, text, doc = callgrind.execute(args)
    documents = {args.json: doc} if args.json is not None and doc is not None else {}
    return cli.Outcome(text, documents, status)

BENCHMARK = cli.Benchmark(measure.parse_args, run)
