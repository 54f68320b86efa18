"""
The implementations of the publishing benchmark: how each one is run
(in the benchmark's process, or in a child process), and what it reports
about itself. Used by ``perf.publish``.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from perf.common import streams as _streams
from perf.common.child import baseline_python, run_child
from perf.common.errors import SkipImplementation, VerificationError
from perf.common.java import WARMUP_SECONDS
from perf.common.results import (
    CEILINGS,
    JsonDict,
    package_version,
)
from perf.common.scenarios import (
    Case,
)
from perf.common.streams import BASELINE, BASELINE_VERSION, broker_pid_args, rbfly_module_info
from perf.publish.java import JAVA_NAMED, PRODUCER_NAME, JavaPublishRunner
from perf.publish.publishers import (
    Admin,
    StreamAdmin,
    TopicAdmin,
    publish_aiokafka,
    publish_ceiling,
    publish_rbfly,
    publish_rstream,
    rbfly_class,
)

MODULE = 'perf.publish'
"""What a child process runs (:py:func:`perf.common.child.run_child`)."""
CHILD_TIMEOUT = 3600
CEILING, CEILING_POLLING = CEILINGS

#
# implementations
#

class Runner(Protocol):
    name: str
    admin: Admin

    def unsupported(self, case: Case) -> str | None:
        """Why a case cannot be run (``None``: it can)."""

    def info(self) -> JsonDict:
        """Version and details of the implementation."""

    async def run(self, case: Case, target: str) -> JsonDict:
        """Publish the messages of a case to a stream (topic); a run result."""


class LocalRunner:
    """An implementation running in this process."""

    def __init__(
            self, name: str, version: str | None, admin: Admin,
            publish: Callable[[str, Case], Any], api: dict[str, str],
            profile_dir: Path | None = None,
    ) -> None:
        self.name = name
        self.version = version
        self.admin = admin
        self._publish = publish
        self._api = api
        self._profile_dir = profile_dir
        self._profiles = 0

    def unsupported(self, case: Case) -> str | None:
        if self.name == 'rbfly':
            try:
                rbfly_class(case)
            except SkipImplementation as ex:
                return str(ex)
        if self.name == 'rbfly-subentry' and case.scenario == 'single':
            return 'a sub-entry batch of one message is a single message'
        if self.name == 'rbfly-spin' and case.scenario != 'single':
            return 'the spin pays off only when each confirmation is awaited'
        if self.name.startswith('rbfly-many') and case.scenario == 'single':
            return 'send_many sends many messages; single messages are send()'
        if self.name == 'rbfly-anonymous' and case.scenario == 'single':
            return 'single messages wait for the round trip, not the broker\'s tracking'
        if self.name == 'aiokafka' and case.fmt != 'amqp':
            return 'aiokafka sends msgpack messages; it is compared under --format amqp'
        return None

    def info(self) -> JsonDict:
        return {'version': self.version, 'process': 'parent', 'api': self._api}

    async def run(self, case: Case, target: str) -> JsonDict:
        if self._profile_dir is None:
            result: JsonDict = await self._publish(target, case)
            return result
        prof = cProfile.Profile()
        prof.enable()
        try:
            result = await self._publish(target, case)
        finally:
            prof.disable()
        self._profiles += 1
        path = self._profile_dir / 'publish-{}-{}-{}-{}.pstats'.format(
            case.scenario, case.fmt, self.name, self._profiles,
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        prof.dump_stats(path)
        result['profile'] = str(path)
        return result


class ChildRunner:
    """rbfly in a child process (RbFly 0.10's venv, or ``--isolate``)."""

    def __init__(
            self, name: str, python: Path, version: str, admin: Admin, url: str,
            loop: str, check_prefix: bool,
    ) -> None:
        self.name = name
        self.python = python
        self.version = version
        self.admin = admin
        self.url = url
        self.loop = loop
        self.check_prefix = check_prefix
        self._info: JsonDict = {}

    def unsupported(self, case: Case) -> str | None:
        if case.scenario == 'pipelined' and self.version == BASELINE_VERSION:
            return 'RbFly 0.10 has no pipelined publisher'
        if case.scenario == 'pipelined' and case.fmt == 'binary':
            return 'rbfly has no binary pipelined publisher'
        return None

    def info(self) -> JsonDict:
        return self._info

    async def run(self, case: Case, target: str) -> JsonDict:
        args = [
            '--impl', 'rbfly', '--url', self.url, '--loop', self.loop, *broker_pid_args(),
            '--scenario', case.scenario, '--format', case.fmt,
            '--count', str(case.count), '--stream', target,
        ]
        if case.window is not None:
            args.extend(['--window', str(case.window)])
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
                'version': doc['rbfly_version'],
                'process': 'child',
                'module_file': doc['rbfly_file'],
                'loop': doc['loop'],
                'env': doc['env'],
            }
        result: JsonDict = doc['result']
        return result


SPIN = 0.0005
"""Seconds ``rbfly-spin`` polls for the next confirmation or chunk (the former default)."""

RBFLY_API = {
    'single': 'Publisher.send (amqp), PublisherBin.send (binary)',
    'batch': 'PublisherBatchFast.batch x 100 + await flush() (amqp),'
             ' PublisherBinBatch (binary)',
    'pipelined': 'PublisherPipelined: await send(m) for each, await flush()',
}
RBFLY_ANONYMOUS_API = {
    'batch': 'publisher(dedup=False), PublisherBatchFast.batch x 100 + await flush()',
    'pipelined': 'publisher(dedup=False), PublisherPipelined: await send(m) for each,'
                 ' await flush()',
}

RBFLY_SPIN_API = {
    'single': 'streams_client(spin=0.0005): Publisher.send, polling the loop up to'
              ' 0.5 ms for each confirmation (busy-waiting: its own CPU cost)',
}

RBFLY_MANY_API = {
    'batch': 'Publisher.send_many(100 messages): one await, confirmed (amqp);'
             ' PublisherBin.send_many (binary)',
    'pipelined': 'PublisherPipelined: await send_many(1,000 messages) for each 1,000,'
                 ' await flush()',
}

RBFLY_MANY_ANONYMOUS_API = {
    scenario: 'publisher(dedup=False), ' + api for scenario, api in RBFLY_MANY_API.items()
}

RBFLY_SUBENTRY_API = {
    'batch': 'PublisherBatchFast(sub_entry_size=100): 100 x batch + await flush()'
             ' (one sub-entry batch, one confirmation)',
    'pipelined': 'PublisherPipelined(window=100): await send(SubEntryBatch(100 messages))'
                 ' for each 100, await flush()',
}
RSTREAM_API = {
    'single': 'Producer.send_wait(stream, AMQPMessage(value=m) | bytes)',
    'batch': 'Producer.send_batch(stream, 100 messages, on_publish_confirm=cb),'
             ' then wait until cb counted the batch',
    'pipelined': 'Producer.send(stream, m, on_publish_confirm=cb) for each,'
                 ' then wait until cb counted all',
}
def ceiling_api(waiting: str) -> dict[str, str]:
    return {
        'single': 'a Publish frame of one message, built before the timing; its'
                  ' PublishConfirm awaited, {} (perf/common/raw.py)'.format(waiting),
        'batch': 'a Publish frame of 100 messages, built before the timing; its'
                 ' PublishConfirm awaited, {} (perf/common/raw.py)'.format(waiting),
        'pipelined': 'Publish frames of 1,000 messages, built before the timing, at'
                     ' most 10,000 unconfirmed; confirmations awaited, {}'
                     ' (perf/common/raw.py)'.format(waiting),
    }
AIOKAFKA_API = {
    'single': "AIOKafkaProducer(acks='all').send_and_wait(topic, msgpack.packb(m))",
    'batch': 'create_batch() + 100 x append + await (await send_batch(...))',
    'pipelined': 'await send(topic, msgpack.packb(m)) for each, await flush()',
}


def make_runner(name: str, args: argparse.Namespace, admin: StreamAdmin) -> Runner:
    url = args.url
    if name == BASELINE:
        python = baseline_python()
        return ChildRunner(name, python, BASELINE_VERSION, admin, url, args.loop, True)
    if name == 'rbfly':
        version, _ = rbfly_module_info()
        if version is None:
            raise SkipImplementation('rbfly is not importable; pip install -e .')
        if args.isolate:
            return ChildRunner(
                name, Path(sys.executable), version, admin, url, args.loop, False,
            )
        runner = LocalRunner(
            name, version, admin, functools.partial(publish_rbfly, url), RBFLY_API,
            args.profile,
        )
        return runner
    variants = {
        'rbfly-anonymous': (False, True, None, RBFLY_ANONYMOUS_API),
        'rbfly-subentry': (True, False, None, RBFLY_SUBENTRY_API),
        'rbfly-spin': (False, False, SPIN, RBFLY_SPIN_API),
        'rbfly-many': (False, False, None, RBFLY_MANY_API),
        'rbfly-many-anonymous': (False, True, None, RBFLY_MANY_ANONYMOUS_API),
    }
    if name in variants:
        sub_entry, anonymous, spin, api = variants[name]
        version, _ = rbfly_module_info()
        if version is None:
            raise SkipImplementation('rbfly is not importable; pip install -e .')
        return LocalRunner(
            name, version, admin, functools.partial(
                publish_rbfly, url, sub_entry=sub_entry, anonymous=anonymous, spin=spin,
                many=name.startswith('rbfly-many'),
            ),
            api, args.profile,
        )
    if name == 'rstream':
        version = package_version('rstream')
        if version is None:
            raise SkipImplementation('rstream is not installed (pip install --group perf)')
        return LocalRunner(
            name, version, admin, functools.partial(publish_rstream, url), RSTREAM_API,
            args.profile,
        )
    if name == 'aiokafka':
        version = package_version('aiokafka')
        if version is None or package_version('msgpack') is None:
            raise SkipImplementation('aiokafka or msgpack is not installed')
        return LocalRunner(
            name, version, TopicAdmin(args.kafka),
            functools.partial(publish_aiokafka, args.kafka), AIOKAFKA_API, args.profile,
        )
    if name in ('java', JAVA_NAMED):
        return JavaPublishRunner(
            url, _streams.BROKER_PID, admin, warmup_seconds=0 if args.quick else WARMUP_SECONDS,
            via=getattr(args, 'via', None),
            producer_name=PRODUCER_NAME if name == JAVA_NAMED else None,
        )
    if name in CEILINGS:
        if not url.startswith('rabbitmq-stream:'):
            raise SkipImplementation('the ceiling publisher has no TLS')
        polling = name == CEILING_POLLING
        return LocalRunner(
            name, '-', admin, functools.partial(publish_ceiling, url, polling=polling),
            ceiling_api('polling' if polling else 'asleep'), args.profile,
        )
    raise ValueError(name)


