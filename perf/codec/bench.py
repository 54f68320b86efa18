"""
AMQP 1.0 codec benchmark (section 3 of the RbFly 0.10 performance report).

One AMQP message, whose body (an amqp-value section) is::

    {'large-int': 2**31 - 1, 'small-list': [1, 2, 3], 'bin-string': b'abc'}

is encoded and decoded ``--count`` times per round with :py:mod:`timeit`;
the median of ``--rounds`` rounds is normalised to messages per second.

Implementations, measured side by side in one run:

``rbfly``
    Whatever ``rbfly`` is importable by the running interpreter (the new
    codec, once the work tree is installed, e.g. ``pip install -e .``).
``rbfly-0.10``
    RbFly 0.10.0 from the package registry.  It has the same package name, so
    it lives in its own venv (``perf/.venv-rbfly010``, created on first use);
    for every round this benchmark runs itself there (``python -m
    perf.codec --impl rbfly --rounds 1 --json FILE``, outside the work tree:
    :py:func:`perf.common.child.module_command`) and reads the timings from
    FILE.
``rstream``
    rstream's codec (vendored Azure pyamqp): ``bytes(AMQPMessage(value=...))``
    and ``amqp_decoder(data)``, the calls the rstream producer and consumer
    make.
``proton``
    Qpid Proton: ``Message(body=...).encode()`` and
    ``Message().decode(data)``.

Each implementation decodes the bytes produced by its own encoder.  Before
timing, the decoded body is checked against the input and the run stops if
it differs (exit status 2).  An implementation which cannot be imported (or
installed) is skipped with a line saying why.

Rounds are interleaved: round ``i`` times every implementation once, so
slow and fast periods of a shared machine hit all implementations alike.
Each timed batch is preceded by an untimed warm-up of ``count / 10`` calls.

Example::

    python -m perf.codec --json perf/results/codec.json
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import timeit
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from perf.codec.codecs import LOADERS, Case, make_body
from perf.common import cli
from perf.common.child import BASELINE_VENV, baseline_python, module_command
from perf.common.errors import BenchmarkError, SkipImplementation, VerificationError
from perf.common.results import (
    JsonDict,
    env_metadata,
    format_rate,
    format_ratio,
    format_table,
    log,
    ratio,
    read_json,
    timing_summary,
)
from perf.common.streams import BASELINE, BASELINE_VERSION

KIND = 'amqp-codec'
IMPLEMENTATIONS = ('rbfly', BASELINE, 'rstream', 'proton')
MODULE = 'perf.codec'
"""What a round of RbFly 0.10 runs, in its venv (:py:class:`BaselineRunner`)."""

BUFFER_SIZE = 1024
WARMUP_DIVISOR = 10   # untimed calls before each timed batch: count / 10


class SchedulingError(BenchmarkError):
    """An implementation failed after it was prepared successfully."""


class Runner(Protocol):
    """An implementation prepared for timing, one round at a time."""

    name: str

    def info(self) -> JsonDict:
        """Version, encoded size, API and other details of the codec."""

    def run_round(self, count: int) -> tuple[float, float]:
        """Time ``count`` encodes and ``count`` decodes; seconds of each."""


class LocalRunner:
    """Implementation importable by the running interpreter."""

    def __init__(self, case: Case) -> None:
        self.name = case.name
        self.case = case
        self._encode = timeit.Timer(case.encode, globals=case.namespace)
        self._decode = timeit.Timer(case.decode, globals=case.namespace)

    def info(self) -> JsonDict:
        case = self.case
        return {
            'version': case.version,
            'encoded_size': len(case.encoded),
            'encoded_hex': case.encoded.hex(),
            'api': case.api,
            'stmt': {'encode': case.encode, 'decode': case.decode},
            'details': case.details,
        }

    def run_round(self, count: int) -> tuple[float, float]:
        # a short untimed warm-up before each batch, also in a fresh process
        warmup = max(1, count // WARMUP_DIVISOR)
        self._encode.timeit(warmup)
        encode = self._encode.timeit(count)
        self._decode.timeit(warmup)
        decode = self._decode.timeit(count)
        return encode, decode


class BaselineRunner:
    """
    RbFly 0.10 in its own venv.

    Every round runs this benchmark once in the venv (``--impl rbfly
    --rounds 1``), so the rounds of all implementations can be interleaved.  Process
    start up is not part of the timings.
    """

    def __init__(self, python: Path) -> None:
        self.name = BASELINE
        self.python = python
        self._info: JsonDict = {}

    def _child(self, count: int) -> JsonDict:
        with tempfile.TemporaryDirectory(prefix='bench-codec-') as tmp:
            out = Path(tmp) / 'result.json'
            p = _run([
                *module_command(self.python, MODULE),
                '--impl', 'rbfly', '--no-baseline',
                '--count', str(count), '--rounds', '1', '--json', out,
            ], 3600)
            if p.returncode == VerificationError.exit_code:
                raise VerificationError(f'{BASELINE}: {p.stderr.strip()}')
            if not out.exists():
                raise SkipImplementation(
                    f'child run failed (exit {p.returncode}): {p.stderr.strip()[-1000:]}'
                )
            child = read_json(out)

        result: JsonDict = child['results']['rbfly']
        if result['status'] != 'ok':
            raise SkipImplementation(result['reason'])

        # make sure the child measured RbFly 0.10 from its venv, not a work tree
        prefix = Path(child['env']['python']['prefix']).resolve()
        module_file = Path(result['details']['module_file'] or '/').resolve()
        if result['version'] != BASELINE_VERSION or not module_file.is_relative_to(prefix):
            raise VerificationError(
                f'{BASELINE}: measured rbfly {result["version"]} from {module_file},'
                f' expected {BASELINE_VERSION} from {prefix}'
            )
        result['env'] = child['env']
        return result

    def prepare(self, count: int) -> None:
        """Run the child once (untimed here): verifies it, gets its info."""
        result = self._child(count)
        self._info = {
            k: v for k, v in result.items()
            if k not in ('status', 'encode', 'decode')
        }

    def info(self) -> JsonDict:
        return self._info

    def run_round(self, count: int) -> tuple[float, float]:
        try:
            result = self._child(count)
        except SkipImplementation as ex:
            raise SchedulingError(f'{BASELINE}: {ex}') from ex
        encode: float = result['encode']['times'][0]
        decode: float = result['decode']['times'][0]
        return encode, decode


def skipped(reason: str) -> JsonDict:
    return {'status': 'skipped', 'reason': reason}


def prepare_local(name: str) -> LocalRunner:
    """Load and verify an implementation importable by this interpreter."""
    try:
        case = LOADERS[name]()
    except SkipImplementation as ex:
        if name == 'rbfly':
            raise SkipImplementation(
                f'{ex}; install the work tree into this venv, e.g. pip install -e .'
            ) from ex
        raise
    log(f'{name} {case.version}: verified ({len(case.encoded)} bytes)')
    return LocalRunner(case)


def _run(cmd: Sequence[str | Path], timeout: float) -> subprocess.CompletedProcess[str]:
    # run outside the work tree, so the rbfly source tree cannot shadow
    # the installed package (perf.common.child.module_command)
    try:
        return subprocess.run(
            [str(c) for c in cmd],
            capture_output=True, text=True, timeout=timeout,
            cwd=tempfile.gettempdir(), check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as ex:
        raise SkipImplementation(f'cannot run {cmd[0]}: {ex}') from ex


def prepare_baseline(count: int) -> BaselineRunner:
    runner = BaselineRunner(baseline_python())
    runner.prepare(min(count, 100))
    log(f'{BASELINE} {BASELINE_VERSION}: verified in {BASELINE_VENV}')
    return runner


def run_rounds(
        runners: Sequence[Runner], count: int, rounds: int,
) -> dict[str, tuple[list[float], list[float]]]:
    """
    Time all implementations, interleaving their rounds.

    Round ``i`` runs every implementation once, starting with a different
    one in each round, so slow or fast periods of a shared machine affect
    all implementations alike.
    """
    times: dict[str, tuple[list[float], list[float]]] = {
        r.name: ([], []) for r in runners
    }
    for i in range(rounds if runners else 0):
        order = [*runners[i % len(runners):], *runners[:i % len(runners)]]
        for runner in order:
            enc, dec = runner.run_round(count)
            times[runner.name][0].append(enc)
            times[runner.name][1].append(dec)
        log(f'round {i + 1}/{rounds} done')
    return times


#
# report
#

def _median_rate(result: JsonDict, op: str) -> float | None:
    if result.get('status') != 'ok':
        return None
    value: float = result[op]['median_rate']
    return value


def _spread(result: JsonDict, op: str) -> str:
    """Spread of the rounds: (max - min) / median time."""
    if result.get('status') != 'ok':
        return '-'
    r = result[op]
    return f'{(r["max_time"] - r["min_time"]) / r["median_time"]:.0%}'


def report(results: dict[str, JsonDict], count: int, rounds: int) -> str:
    ok = [n for n in results if results[n]['status'] == 'ok']
    base = results.get(BASELINE, {})
    lines = [
        f'AMQP 1.0 codec: encode/decode of one message, {count:,} per round,'
        f' median of {rounds} rounds (messages/second)',
        '',
    ]
    has_base = base.get('status') == 'ok'
    headers = [
        'implementation', 'version', 'size', 'encode msg/s', 'spread',
        'decode msg/s', 'spread',
    ]
    if has_base:
        headers.extend([f'enc vs {BASELINE}', f'dec vs {BASELINE}'])
    rows = []
    for name in ok:
        r = results[name]
        enc, dec = _median_rate(r, 'encode'), _median_rate(r, 'decode')
        row = [
            name, str(r['version']), str(r['encoded_size']),
            format_rate(enc), _spread(r, 'encode'),
            format_rate(dec), _spread(r, 'decode'),
        ]
        if has_base:
            row.extend([
                format_ratio(ratio(enc, _median_rate(base, 'encode'))),
                format_ratio(ratio(dec, _median_rate(base, 'decode'))),
            ])
        rows.append(row)
    if rows:
        lines.append(format_table(headers, rows))
        lines.append('(size: encoded bytes; spread: (slowest - fastest round) / median round)')

    for name, r in results.items():
        if r['status'] != 'ok':
            lines.append(f'{name}: skipped: {r["reason"]}')

    # ratios of the rbfly codecs against each peer
    pairs = [
        (a, b) for a in ('rbfly', BASELINE) if a in ok for b in ok if b != a
        and not (a == BASELINE and b == 'rbfly')
    ]
    if pairs:
        lines.extend(['', 'ratios (encode, decode):'])
        width = max(len(f'{a} / {b}') for a, b in pairs)
        for a, b in pairs:
            enc = ratio(_median_rate(results[a], 'encode'), _median_rate(results[b], 'encode'))
            dec = ratio(_median_rate(results[a], 'decode'), _median_rate(results[b], 'decode'))
            lines.append(
                f'  {f"{a} / {b}":<{width}} = {format_ratio(enc):>6} encode,'
                f' {format_ratio(dec):>6} decode'
            )
    return '\n'.join(lines)


def environment_notes(results: dict[str, JsonDict], env: JsonDict) -> list[str]:
    notes = []
    base = results.get(BASELINE, {})
    if base.get('status') == 'ok':
        child_py = base['env']['python']['version']
        if child_py != env['python']['version']:
            notes.append(
                f'note: {BASELINE} ran on Python {child_py},'
                f' the others on {env["python"]["version"]}'
            )
    rb = results.get('rbfly', {})
    if rb.get('status') == 'ok' and rb['version'] == BASELINE_VERSION:
        notes.append(
            f'note: the importable rbfly is {BASELINE_VERSION}, the same as {BASELINE}'
        )
    return notes


def benchmark(names: Sequence[str], count: int, rounds: int) -> dict[str, JsonDict]:
    """Prepare, verify and time the implementations; results by name."""
    results: dict[str, JsonDict] = {}
    runners: list[Runner] = []
    for name in names:
        try:
            runner: Runner = (
                prepare_baseline(count) if name == BASELINE else prepare_local(name)
            )
        except SkipImplementation as ex:
            log(f'{name}: skipped: {ex}')
            results[name] = skipped(str(ex))
        else:
            runners.append(runner)
            results[name] = {}   # keep the order of the names

    times = run_rounds(runners, count, rounds)
    for runner in runners:
        enc, dec = times[runner.name]
        results[runner.name] = {
            'status': 'ok',
            **runner.info(),
            'encode': timing_summary(count, enc),
            'decode': timing_summary(count, dec),
        }
    return results


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = cli.parser(
        'codec', 'AMQP 1.0 codec benchmark: RbFly, RbFly 0.10, rstream, Qpid Proton',
    )
    parser.add_argument(
        '--count', type=int, default=None,
        help='messages encoded/decoded per round (default: 10,000; 1,000 with --quick)',
    )
    parser.add_argument(
        '--rounds', type=int, default=None,
        help='timing rounds; the median is reported (default: 5; 1 with --quick)',
    )
    parser.add_argument(
        '--quick', action='store_true',
        help='one round of 1,000: the script works (recorded in the results)',
    )
    parser.add_argument(
        '--impl', nargs='+', choices=IMPLEMENTATIONS, metavar='NAME',
        help=f'implementations to run, of {", ".join(IMPLEMENTATIONS)} (default: all)',
    )
    cli.add_json(
        parser,
        'write per-round timings, medians and environment to PATH'
        ' (perf/results/ is git-ignored)',
    )
    parser.add_argument(
        '--no-baseline', action='store_true',
        help=f'do not run {BASELINE} (no venv is created)',
    )
    args = parser.parse_args(argv)
    args.count = args.count or (1_000 if args.quick else 10_000)
    args.rounds = args.rounds or (1 if args.quick else 5)
    if args.count < 1 or args.rounds < 1:
        parser.error('--count and --rounds must be positive')
    if args.no_baseline and args.impl and BASELINE in args.impl:
        parser.error(f'--no-baseline conflicts with --impl {BASELINE}')
    return args


def run(args: argparse.Namespace) -> cli.Outcome:
    names = list(dict.fromkeys(args.impl or IMPLEMENTATIONS))
    if args.no_baseline and BASELINE in names:
        names.remove(BASELINE)

    env = env_metadata()
    results = benchmark(names, args.count, args.rounds)
    text = '\n'.join([report(results, args.count, args.rounds), *environment_notes(results, env)])
    documents = cli.json_documents(args.json, lambda: {
        'benchmark': KIND,
        'params': {
            'count': args.count,
            'rounds': args.rounds,
            'quick': args.quick,
            'body': repr(make_body()),
            'timer': 'timeit.Timer(stmt, globals=ns).timeit(count) per round',
            'warmup': max(1, args.count // WARMUP_DIVISOR),
            'schedule': 'rounds interleaved across implementations,'
                        ' rotating the start; rbfly-0.10 in a child process per round',
        },
        'env': env,
        'results': results,
    })
    if not any(r['status'] == 'ok' for r in results.values()):
        return cli.Outcome(text, documents, 1, 'error: no implementation could be run')
    return cli.Outcome(text, documents)


BENCHMARK = cli.Benchmark(parse_args, run)
