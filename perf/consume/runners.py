"""
The implementations of the consuming benchmark: how each one is run
(in the benchmark's process, or in a child process), and what it reports
about itself. Used by ``perf.consume``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol

from perf.common import streams as _streams
from perf.common.child import baseline_python, run_child
from perf.common.errors import SkipImplementation, VerificationError
from perf.common.java import WARMUP_SECONDS
from perf.common.results import (
    CEILINGS,
    JsonDict,
    package_version,
)
from perf.common.streams import BASELINE, BASELINE_VERSION, broker_pid_args, rbfly_module_info
from perf.consume.consumers import consume_ceiling, consume_rbfly, consume_rstream
from perf.consume.java import CONSUME_API as JAVA_API
from perf.consume.java import JavaConsumeRunner

MODULE = 'perf.consume'
"""What a child process runs (:py:func:`perf.common.child.run_child`)."""
CHILD_TIMEOUT = 3600
RUN_TIMEOUT = 600   # a run that stalls this long fails
CEILING, CEILING_POLLING = CEILINGS



class Runner(Protocol):
    name: str

    def info(self) -> JsonDict:
        """Version and details of the implementation."""

    async def run(self, stream: str, count: int) -> JsonDict:
        """Consume ``count`` messages of a stream from its first offset."""


class LocalRunner:
    def __init__(
            self, name: str, version: str | None,
            consume: Callable[[str, int], Awaitable[JsonDict]], api: str,
            profile_dir: Path | None,
    ) -> None:
        self.name = name
        self.version = version
        self._consume = consume
        self._api = api
        self._profile_dir = profile_dir
        self._profiles = 0

    def info(self) -> JsonDict:
        return {'version': self.version, 'process': 'parent', 'api': self._api}

    async def run(self, stream: str, count: int) -> JsonDict:
        if self._profile_dir is None:
            return await asyncio.wait_for(self._consume(stream, count), RUN_TIMEOUT)
        prof = cProfile.Profile()
        prof.enable()
        try:
            result = await asyncio.wait_for(self._consume(stream, count), RUN_TIMEOUT)
        finally:
            prof.disable()
        self._profiles += 1
        path = self._profile_dir / 'consume-{}-{}.pstats'.format(self.name, self._profiles)
        path.parent.mkdir(parents=True, exist_ok=True)
        prof.dump_stats(path)
        result['profile'] = str(path)
        return result


class ChildRunner:
    """rbfly in a child process (RbFly 0.10's venv, or ``--isolate``)."""

    def __init__(
            self, name: str, python: Path, version: str, url: str, loop: str,
            check_prefix: bool, chunks: bool,
    ) -> None:
        self.name = name
        self.python = python
        self.version = version
        self.url = url
        self.loop = loop
        self.check_prefix = check_prefix
        self.chunks = chunks
        self._info: JsonDict = {}

    def info(self) -> JsonDict:
        return self._info

    async def run(self, stream: str, count: int) -> JsonDict:
        args = [
            '--impl', 'rbfly-chunks' if self.chunks else 'rbfly',
            '--url', self.url, '--loop', self.loop, *broker_pid_args(),
            '--count', str(count), '--stream', stream,
        ]
        doc = await run_child(
            self.python, MODULE, args, CHILD_TIMEOUT,
            self.version if self.check_prefix else None,
        )
        if doc['rbfly_version'] != self.version:
            raise VerificationError('{}: child ran rbfly {}, expected {}'.format(
                self.name, doc['rbfly_version'], self.version,
            ))
        if not self._info:
            self._info = {
                'version': doc['rbfly_version'], 'process': 'child',
                'module_file': doc['rbfly_file'], 'loop': doc['loop'], 'env': doc['env'],
            }
        result: JsonDict = doc['result']
        return result


API = {
    'rbfly': 'async for body in client.subscribe(stream, offset=Offset.FIRST)',
    'rbfly-spin': 'streams_client(spin=0.0005): async for body in client.subscribe(...),'
                  ' polling the loop up to 0.5 ms for the next chunk (busy-waiting)',
    'rbfly-nopause': 'streams_client(read_pause=0): async for body in client.subscribe(...),'
                     ' reading at once, not pausing 1 ms after a read of history',
    'rbfly-chunks': 'async for chunk in client.subscribe_chunks(stream, offset=Offset.FIRST)',
    'rbfly-windows': 'async for window in client.subscribe_windows(stream,'
                     ' offset=Offset.FIRST, max_messages=1000)',
    BASELINE: 'async for body in client.subscribe(stream, offset=Offset.FIRST)',
    'rstream': 'Consumer.subscribe(stream, callback, decoder=amqp_decoder,'
               ' offset_specification=ConsumerOffsetSpecification(OffsetType.FIRST))',
    'java': JAVA_API,
    CEILING: 'a Deliver frame counter: no decoding, a credit per chunk, asleep, its reads'
             ' paused 1 ms after each (perf/consume/consumers.py)',
    CEILING_POLLING: 'the same counter polling the event loop, reading at once'
                     ' (perf/consume/consumers.py)',
}


def make_runner(name: str, args: argparse.Namespace) -> Runner:
    url = args.url
    if name == BASELINE:
        return ChildRunner(
            name, baseline_python(), BASELINE_VERSION, url, args.loop, True, False,
        )
    if name == 'rbfly-windows':
        version, _ = rbfly_module_info()
        if version is None:
            raise SkipImplementation('rbfly is not importable; pip install -e .')
        return LocalRunner(
            name, version, functools.partial(consume_rbfly, url, chunks=False, windows=True),
            API[name], args.profile,
        )
    if name in ('rbfly', 'rbfly-chunks'):
        version, _ = rbfly_module_info()
        if version is None:
            raise SkipImplementation('rbfly is not importable; pip install -e .')
        chunks = name == 'rbfly-chunks'
        if args.isolate:
            return ChildRunner(
                name, Path(sys.executable), version, url, args.loop, False, chunks,
            )
        return LocalRunner(
            name, version, functools.partial(consume_rbfly, url, chunks=chunks),
            API[name], args.profile,
        )
    if name in ('rbfly-spin', 'rbfly-nopause'):
        version, _ = rbfly_module_info()
        if version is None:
            raise SkipImplementation('rbfly is not importable; pip install -e .')
        consume = functools.partial(consume_rbfly, url, chunks=False, spin=0.0005) \
            if name == 'rbfly-spin' else \
            functools.partial(consume_rbfly, url, chunks=False, read_pause=0.0)
        return LocalRunner(name, version, consume, API[name], args.profile)
    if name == 'rstream':
        version = package_version('rstream')
        if version is None:
            raise SkipImplementation('rstream is not installed (pip install --group perf)')
        return LocalRunner(
            name, version, functools.partial(consume_rstream, url), API[name], args.profile,
        )
    if name == 'java':
        return JavaConsumeRunner(
            url, _streams.BROKER_PID, warmup_seconds=0 if args.quick else WARMUP_SECONDS,
        )
    if name in (CEILING, CEILING_POLLING):
        if not url.startswith('rabbitmq-stream:'):
            raise SkipImplementation('the ceiling consumer has no TLS')
        polling = name == CEILING_POLLING
        return LocalRunner(
            name, '-', functools.partial(consume_ceiling, url, polling=polling), API[name],
            args.profile,
        )
    raise ValueError(name)


