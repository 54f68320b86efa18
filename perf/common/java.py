"""
The official Java RabbitMQ stream client as an implementation of the
publishing and consuming benchmarks (``java``: :py:class:`JavaRunner`,
the base of ``perf.publish.java`` and ``perf.consume.java``), and the
harness that ``perf.java_client`` runs on its own.

The measuring is done by rbfly's own harness, ``perf/java/StreamPerf.java``,
which ``scripts/java-perf.sh`` builds (resolving the client with Maven into
``perf/.java/``, cached) and runs in a JVM of its own.  The runners run
one JVM per round, the harness with ``--rounds 1 --stream NAME`` on the
stream the benchmark created (publishing) or published (consuming); the
harness warms the JVM up first (runs of :py:data:`WARMUP_PERCENT` of the
messages for :py:data:`WARMUP_SECONDS`, untimed, publishing to a fresh
stream of its own, or reading the first messages of the stream).
"""

from __future__ import annotations

import asyncio
import functools
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote, urlsplit

from perf.common import ROOT
from perf.common.errors import (
    EXIT_USAGE,
    EXIT_VERIFY,
    BenchmarkError,
    SkipImplementation,
    VerificationError,
)
from perf.common.results import JsonDict, log, read_json
from perf.common.scenarios import BATCH_SIZE
from perf.common.streams import endpoint

IMPL = 'java'
SCRIPT = ROOT / 'scripts' / 'java-perf.sh'
TIMEOUT = 3600
PREPARE_TIMEOUT = 1800   # first use: Maven resolves the client, javac compiles
WARMUP_PERCENT = 10      # JVM warm-up of every child of the runners: runs of 10%
WARMUP_SECONDS = 10.0    # of the messages, repeated for 10 s (0 with --quick)
TOOLS = ('java', 'javac', 'mvn')

WARMUP_NOTE = (
    'one JVM per round (scripts/java-perf.sh --rounds 1), warmed up first by untimed'
    ' runs of {}% of the messages for {:g} s ({}) so the JIT has compiled the hot paths;'
    ' then the timed run'
)


class HarnessError(BenchmarkError):
    """The Java harness failed (exit code, message)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.exit_code = code


def java_uri(url: str) -> str:
    """The broker URL as the Java client wants it (the vhost in the path, quoted)."""
    if urlsplit(url).scheme != 'rabbitmq-stream':
        raise HarnessError(EXIT_USAGE, 'the Java harness supports rabbitmq-stream:// URLs only')
    ep = endpoint(url)
    return 'rabbitmq-stream://{}:{}@{}:{}/{}'.format(
        quote(ep.username, safe=''), quote(ep.password, safe=''), ep.host, ep.port,
        quote(ep.vhost, safe=''),
    )


def harness_args(
        url: str, scenario: str, fmt: str, count: int, *, rounds: int = 1,
        warmup: int = WARMUP_PERCENT, warmup_seconds: float = WARMUP_SECONDS,
        batch: int = BATCH_SIZE, window: int | None = None,
        broker_pid: int | None = None, stream: str | None = None,
        json_out: Path | None = None, via: str | None = None, name: str | None = None,
) -> list[str]:
    """Command line of the harness (``scripts/java-perf.sh``) for one scenario."""
    cmd = [
        str(SCRIPT), '--uri', java_uri(url), '--scenario', scenario, '--format', fmt,
        '--count', str(count), '--batch', str(batch), '--rounds', str(rounds),
        '--warmup', str(warmup), '--warmup-seconds', str(warmup_seconds),
    ]
    if window is not None:
        cmd.extend(['--window', str(window)])
    if broker_pid is not None:
        cmd.extend(['--broker-pid', str(broker_pid)])
    if stream is not None:
        cmd.extend(['--stream', stream])
    if json_out is not None:
        cmd.extend(['--json-out', str(json_out)])
    if via is not None:
        cmd.extend(['--via', via])
    if name is not None:
        cmd.extend(['--name', name])
    return cmd


def java_missing() -> str | None:
    """Why the harness cannot run here (tools missing), or ``None``."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if not missing:
        return None
    return '{} not found; scripts/java-perf.sh --prepare installs them (as root)'.format(
        ', '.join(missing),
    )


def default_implementations(names: Sequence[str]) -> list[str]:
    """All the implementations ``names`` of a benchmark; java only when its tools are installed."""
    reason = java_missing()
    if reason is None:
        return list(names)
    log('java: not among the default implementations: {}'.format(reason))
    return [name for name in names if not name.startswith(IMPL)]


@functools.cache
def prepare() -> str:
    """
    Resolve and compile the harness (cached by ``java-perf.sh``); the
    client version.  Raises :py:exc:`SkipImplementation` when it cannot.
    """
    reason = java_missing()
    if reason is not None:
        raise SkipImplementation(reason)
    outputs = []
    for option in ('--prepare', '--version'):
        try:
            p = subprocess.run(
                [str(SCRIPT), option], capture_output=True, text=True,
                timeout=PREPARE_TIMEOUT, stdin=subprocess.DEVNULL, check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as ex:
            raise SkipImplementation('cannot run {} {}: {}'.format(SCRIPT, option, ex)) from ex
        if p.returncode != 0:
            raise SkipImplementation('{} {} failed (exit {}): {}'.format(
                SCRIPT.name, option, p.returncode, (p.stdout + p.stderr).strip()[-500:],
            ))
        outputs.append(p.stdout.strip())
    return outputs[-1]


async def run_round(
        url: str, scenario: str, fmt: str, count: int, stream: str, *,
        batch: int = BATCH_SIZE, window: int | None = None, broker_pid: int | None = None,
        warmup_seconds: float = WARMUP_SECONDS, via: str | None = None,
        name: str | None = None,
) -> JsonDict:
    """
    One round in a JVM of its own (warm-up, then one timed run of
    ``stream``); the harness's JSON document.  The harness's output is shown
    only when it fails: exit 2 (the messages were wrong) raises
    :py:exc:`VerificationError`, any other failure
    :py:exc:`SkipImplementation`, as a failed child of the Python benchmarks.
    """
    with tempfile.TemporaryDirectory(prefix='rbfly-java-') as tmp:
        out = Path(tmp) / 'java.json'
        cmd = harness_args(
            url, scenario, fmt, count, batch=batch, window=window, broker_pid=broker_pid,
            stream=stream, json_out=out, warmup_seconds=warmup_seconds, via=via, name=name,
        )
        try:
            proc = await asyncio.create_subprocess_exec(
                *cmd, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
        except OSError as ex:
            raise SkipImplementation('cannot run {}: {}'.format(SCRIPT, ex)) from ex
        try:
            output, _ = await asyncio.wait_for(proc.communicate(), TIMEOUT)
        except TimeoutError:
            proc.kill()   # java-perf.sh execs the JVM
            await proc.wait()
            raise
        text = output.decode(errors='replace').strip()
        if proc.returncode == EXIT_VERIFY:
            raise VerificationError('{} {}: {}'.format(IMPL, scenario, text[-2000:]))
        if proc.returncode != 0 or not out.exists():
            raise SkipImplementation('{} {} failed (exit {}): {}'.format(
                SCRIPT.name, scenario, proc.returncode, text[-2000:],
            ))
        return read_json(out)


def round_result(doc: JsonDict) -> JsonDict:
    """
    The run result of a one-round harness document: the keys of
    ``run_result()`` of :py:mod:`perf.common.streams`, plus ``jvm_warmup``: the messages
    and seconds of the JVM's untimed warm-up runs in all, how many runs,
    and the rate of the last one (the state the timed run started from).
    """
    run: JsonDict = dict(doc['runs'][0])
    for key in ('stream', 'publish_rate', 'chunks', 'chunk_mean', 'chunk_max'):
        run.pop(key, None)
    warm = doc.get('warmup')
    run['jvm_warmup'] = None if warm is None else {
        'count': warm['count'], 'seconds': warm['seconds'], 'rate': warm['rate'],
        'runs': warm.get('runs', 1),
    }
    return run


class JavaRunner:
    """The harness as an implementation of the Python benchmarks (one JVM a round)."""

    name = IMPL

    def __init__(
            self, url: str, broker_pid: int | None, *, warmup_seconds: float = WARMUP_SECONDS,
            via: str | None = None, producer_name: str | None = None,
    ) -> None:
        try:
            java_uri(url)
        except HarnessError as ex:
            raise SkipImplementation(str(ex)) from ex
        self.version = prepare()
        self.url = url
        self.broker_pid = broker_pid
        self.warmup_seconds = warmup_seconds
        # every connection of the harness to this HOST:PORT (a proxy counting frames)
        self.via = via
        # the producers named (deduplicating), or anonymous (the Java client's default)
        self.producer_name = producer_name
        self._info: JsonDict = {'version': self.version, 'process': 'child'}

    async def _round(
            self, scenario: str, fmt: str, count: int, stream: str, *,
            batch: int = BATCH_SIZE, window: int | None = None,
    ) -> JsonDict:
        doc = await run_round(
            self.url, scenario, fmt, count, stream, batch=batch, window=window,
            broker_pid=self.broker_pid, warmup_seconds=self.warmup_seconds, via=self.via,
            name=self.producer_name,
        )
        if doc['version'] != self.version:
            raise VerificationError('{}: the harness ran stream-client {}, expected {}'.format(
                IMPL, doc['version'], self.version,
            ))
        if 'java' not in self._info:
            self._info.update({
                'client': doc['client'], 'java': doc['java'],
                'warmup_percent': doc['warmup_percent'],
                'warmup_seconds': doc.get('warmup_seconds'),
            })
        return doc

    def info(self) -> JsonDict:
        return dict(self._info)
