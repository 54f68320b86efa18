"""
The one command line of the benchmarks: ``python -m perf.publish`` runs
``perf/publish/__main__.py``, which hands the benchmark's
:py:class:`Benchmark` to :py:func:`main`::

    sys.exit(main(BENCHMARK))

A benchmark says how its arguments are read (``parse_args``), what a run
measures (``run``, which returns an :py:class:`Outcome`: the text to print
and the JSON documents to write) and, when it runs rbfly in a child
process (RbFly 0.10's venv, ``--isolate``), what a child measures
(``child``). :py:func:`main` does the rest the same way for all of them:
the child's side of a child run, a failure logged with its exit status
(:py:mod:`perf.common.errors`: 2 for a wrong result, 3 for something that
cannot run here), the tables to stdout, the JSON documents written, and
progress to stderr.

The options several benchmarks take are added by the ``add_*`` functions,
so they read and behave the same everywhere.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from perf.common.child import child_main
from perf.common.errors import BenchmarkError
from perf.common.results import JsonDict, env_metadata, log, write_json
from perf.common.streams import (
    LOOPS,
    Target,
    default_url,
    format_targets,
    locate_broker,
    loop_info,
    run_async,
)

URL_HELP = (
    'RabbitMQ Streams broker (default: $RBFLY_PERF_URL, $RBFLY_URL4, $RBFLY_URL'
    ' or %(default)s)'
)


@dataclass(frozen=True)
class Outcome:
    """
    What a benchmark's run hands to :py:func:`main`.

    :param text: The tables, printed to stdout.
    :param documents: JSON documents to write, by path (``--json``; none
        without it).
    :param status: The exit status.
    :param failure: Logged last, after the documents are written, when the
        run found something wrong (``status`` says how wrong).
    """

    text: str
    documents: Mapping[Path, JsonDict] = field(default_factory=dict)
    status: int = 0
    failure: str | None = None


ChildRun = Callable[[], Awaitable[JsonDict]]
"""One measurement of a child process, on its event loop."""


@dataclass(frozen=True)
class Benchmark:
    """
    A benchmark as :py:func:`main` runs it.

    :param parse_args: Reads the command line (``None``: ``sys.argv``).
    :param run: Runs the benchmark; raises :py:class:`BenchmarkError` when
        it cannot finish.
    :param child: With ``--child`` (:py:func:`add_child`), the measurement
        of a child process (:py:mod:`perf.common.child`); ``None`` for a
        benchmark without children.
    :param child_packages: The packages whose versions a child reports.
    """

    parse_args: Callable[[Sequence[str] | None], argparse.Namespace]
    run: Callable[[argparse.Namespace], Outcome]
    child: Callable[[argparse.Namespace], ChildRun] | None = None
    child_packages: tuple[str, ...] = ('rbfly', 'uvloop')


def main(benchmark: Benchmark, argv: Sequence[str] | None = None) -> int:
    """Run a benchmark from the command line; the exit status."""
    args = benchmark.parse_args(argv)
    try:
        if benchmark.child is not None and args.child:
            return child_main(args, benchmark.child(args), benchmark.child_packages)
        outcome = benchmark.run(args)
    except BenchmarkError as ex:
        log('error: {}'.format(ex))
        return ex.exit_code
    print(outcome.text)
    for path, doc in outcome.documents.items():
        log('results written to {}'.format(write_json(path, doc)))
    if outcome.failure:
        log(outcome.failure)
    return outcome.status


def json_documents(path: str | None, make: Callable[[], JsonDict]) -> dict[Path, JsonDict]:
    """The document ``make()`` to write to ``path`` (``--json``), if given."""
    return {Path(path): make()} if path else {}


def run_rounds(
        args: argparse.Namespace, kind: str,
        measure: Callable[[argparse.Namespace], Awaitable[JsonDict]],
        report: Callable[[JsonDict, int], str], targets: Callable[[JsonDict], list[Target]],
        params: JsonDict,
) -> Outcome:
    """
    A benchmark of implementations measured in interleaved rounds on the
    broker (the publishing and consuming benchmarks): ``measure(args)`` on
    ``args.loop`` returns the broker, the results and the load average; the
    text is ``report`` of the results, the project's ``targets`` checked
    against them and the load average; the document (``kind``) holds the
    ``params`` of the run, the environment, the results and the targets.
    """
    env = env_metadata()
    env['loop'] = loop_info(args.loop)
    locate_broker(args.url)
    doc = run_async(lambda: measure(args), args.loop)

    env['broker'] = doc.pop('broker')
    env['load_average'] = doc.pop('load_average')
    checks = targets(doc)
    text = '\n'.join([
        report(doc, args.rounds), '', format_targets(checks),
        'load average (1, 5, 15 min) before: {}, after: {}'.format(
            env['load_average']['before'], env['load_average']['after'],
        ),
    ])
    return Outcome(text, json_documents(args.json, lambda: {
        'benchmark': kind,
        'params': params,
        'env': env,
        'results': doc['results'],
        'targets': [t.as_json() for t in checks],
    }))


#
# the options several benchmarks take
#

def parser(
        name: str, description: str | None, epilog: str | None = None,
) -> argparse.ArgumentParser:
    """The parser of ``python -m perf.<name>``."""
    return argparse.ArgumentParser(
        prog='python -m perf.{}'.format(name), description=description, epilog=epilog,
    )


def add_url(parser: argparse.ArgumentParser, text: str = URL_HELP) -> None:
    parser.add_argument('--url', default=default_url(), help=text)


def add_loop(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--loop', choices=LOOPS, default='uvloop', help='event loop')


def add_json(
        parser: argparse.ArgumentParser,
        text: str = 'write results and environment to PATH',
) -> None:
    parser.add_argument('--json', metavar='PATH', help=text)


def add_child(parser: argparse.ArgumentParser) -> None:
    """
    The hidden options of a child run (:py:mod:`perf.common.child`): one
    run of rbfly to ``--stream``, its result written to ``--json``.
    """
    parser.add_argument('--child', action='store_true', help=argparse.SUPPRESS)
    parser.add_argument('--stream', help=argparse.SUPPRESS)
    parser.add_argument('--broker-pid', type=int, help=argparse.SUPPRESS)
