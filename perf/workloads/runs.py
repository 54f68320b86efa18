"""
One run of the workloads of ``perf.workloads``: where its runs go
(streams and topics of their own), how each is recorded (a failure is a
finding, kept as the run's result), the processes of the peers it runs
(RbFly 0.10 in its venv, the Java client's tool and rbfly's Java harness),
and the text tables printed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from perf.common import streams as _streams
from perf.common.child import baseline_python, run_child
from perf.common.errors import SkipImplementation
from perf.common.results import JsonDict, format_table, log, read_json
from perf.common.streams import BASELINE_VERSION, broker_pid_args
from perf.workloads import parts as w

MODULE = 'perf.workloads'
"""What a child process of RbFly 0.10 runs (``--child-op``)."""
WORK_US = 50.0
"""CPU time the slow application spends on a message (``slow``)."""
TOOL_SECONDS = 20
TOOL_FROM = 6
CHILD_TIMEOUT = 1800
RUN_TIMEOUT = 900
"""Seconds a run may take (the longest, a Java tool run, takes about 30)."""


class Bench:
    """One run of the workloads: the broker, the options and the results."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.url: str = args.url
        self.kafka: str = args.kafka
        self.quick: bool = args.quick
        self.results: dict[str, dict[str, dict[str, JsonDict]]] = {}
        self._baseline: Path | None = None

    # -- where the runs go --

    async def stream(self, *parts: object, max_length_bytes: int | None = None) -> str:
        from rbfly.streams import streams_client
        name = 'rbfly-w-{}-{}'.format('-'.join(str(p) for p in parts), uuid.uuid4().hex[:6])
        client = streams_client(self.url)
        try:
            await client.create_stream(
                name, max_length_bytes=max_length_bytes,
                max_segment_size_bytes=None if max_length_bytes is None else 100_000_000,
            )
        finally:
            await client.disconnect()
        return name

    async def delete(self, *names: str) -> None:
        from rbfly.streams import streams_client
        client = streams_client(self.url)
        try:
            for name in names:
                await client.delete_stream(name)
        finally:
            await client.disconnect()

    async def topic(self, *parts: object) -> str:
        from aiokafka.admin import AIOKafkaAdminClient, NewTopic
        name = 'rbfly-w-{}-{}'.format('-'.join(str(p) for p in parts), uuid.uuid4().hex[:6])
        admin = AIOKafkaAdminClient(bootstrap_servers=self.kafka)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)])
        finally:
            await admin.close()
        return name

    async def delete_topics(self, *names: str) -> None:
        from aiokafka.admin import AIOKafkaAdminClient
        admin = AIOKafkaAdminClient(bootstrap_servers=self.kafka)
        await admin.start()
        try:
            await admin.delete_topics(list(names))
        finally:
            await admin.close()

    # -- recording --

    def record(self, workload: str, case: str, impl: str, result: JsonDict) -> None:
        self.results.setdefault(workload, {}).setdefault(case, {})[impl] = result
        log('{} {} {}: {}'.format(workload, case, impl, summary_line(result)))

    async def attempt(
            self, workload: str, case: str, impl: str,
            run: Callable[..., Awaitable[JsonDict]], *args: Any,
    ) -> None:
        """
        ``await run(*args)``, bounded by :py:data:`RUN_TIMEOUT`; a failure
        is recorded as the result (a peer that fails is a finding; a
        message lost would make a run wait, not report a figure).
        """
        try:
            result = await asyncio.wait_for(run(*args), RUN_TIMEOUT)
        except SkipImplementation as ex:
            self.record(workload, case, impl, {'status': 'skipped', 'reason': str(ex)})
            return
        except Exception as ex:   # noqa: BLE001 (a peer's failure is a finding)
            self.record(workload, case, impl, {
                'status': 'error', 'error': '{}: {}'.format(type(ex).__name__, ex)[:500],
            })
            return
        result['status'] = 'ok'
        self.record(workload, case, impl, result)

    # -- RbFly 0.10 --

    async def child(self, op: str, stream: str, size: int, count: int) -> JsonDict:
        if self._baseline is None:
            self._baseline = baseline_python()
        args = ['--child-op', op, '--url', self.url, '--stream', stream, *broker_pid_args(),
                '--size', str(size), '--count', str(count), '--loop', self.args.loop,
                '--work-us', str(WORK_US)]
        doc = await run_child(self._baseline, MODULE, args, CHILD_TIMEOUT, BASELINE_VERSION)
        result: JsonDict = doc['result']
        return result

    # -- the Java client: its tool, and rbfly's harness to read a given stream --

    async def harness_consume(self, stream: str, size: int, count: int) -> JsonDict:
        """
        The harness (``perf/java/StreamPerf.java``) reads ``count`` messages
        of ``stream``, after its JVM warm-up reading the first of them.
        """
        import subprocess
        import tempfile

        from perf.common.java import WARMUP_SECONDS, harness_args, java_missing, prepare
        reason = java_missing()
        if reason is not None:
            raise SkipImplementation(reason)
        await asyncio.to_thread(prepare)
        with tempfile.TemporaryDirectory(prefix='rbfly-workloads-') as tmp:
            out = Path(tmp) / 'java.json'
            cmd = harness_args(
                self.url, 'consume', 'amqp', count,
                warmup_seconds=0 if self.quick else WARMUP_SECONDS,
                broker_pid=_streams.BROKER_PID, stream=stream, json_out=out,
            )
            await asyncio.to_thread(
                subprocess.run, cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                check=True, timeout=CHILD_TIMEOUT,
            )
            doc = read_json(out)
        result: JsonDict = doc['runs'][0]
        result['size'] = size
        result['mb_per_s'] = result['rate'] * size / w.MB
        result['client'] = 'harness, stream-client {}'.format(doc['version'])
        return result

    # -- the Java client's tool --

    def tool(self, tool_args: Sequence[str], streams: Sequence[str], consuming: bool) -> JsonDict:
        from perf.common import tool as _tool
        seconds = 4 if self.quick else TOOL_SECONDS
        start = 2 if self.quick else (2 if consuming else TOOL_FROM)
        result = _tool.run_tool(
            self.url, tool_args, seconds=seconds, start=start, consuming=consuming,
            streams=streams,
        )
        return result

    async def java(
            self, tool_args: Sequence[str], streams: Sequence[str], consuming: bool = False,
    ) -> JsonDict:
        from perf.common.java import java_missing
        reason = java_missing()
        if reason is not None:
            raise SkipImplementation(reason)
        return await asyncio.to_thread(self.tool, tool_args, streams, consuming)


#
# the tables
#

def _f(value: Any, fmt: str = '{:,.0f}') -> str:
    return '-' if value is None else fmt.format(value)


def summary_line(result: JsonDict) -> str:
    if result.get('status') not in (None, 'ok'):
        return '{}: {}'.format(result['status'], result.get('reason') or result.get('error'))
    parts = ['{} msg/s'.format(_f(result.get('rate')))]
    if result.get('mb_per_s') is not None:
        parts.append('{:.1f} MB/s'.format(result['mb_per_s']))
    if result.get('cpu_us_per_msg') is not None:
        parts.append('CPU {:.2f} us/msg'.format(result['cpu_us_per_msg']))
    for key in ('confirm', 'end_to_end'):
        q = result.get(key)
        if q:
            parts.append('{} p50/p99/p99.9 {}/{}/{} us'.format(
                key, _f(q['p50_us']), _f(q['p99_us']), _f(q['p999_us'])))
    for key in ('confirm_latency_ms', 'latency_ms'):
        q = result.get(key)
        if q:
            parts.append('{} p50/p99 {}/{} ms'.format(key, q.get('p50'), q.get('p99')))
    if result.get('rss_max_mb') is not None:
        parts.append('RSS {:.0f}/{:.0f}/{:.0f} MB'.format(
            result['rss_start_mb'], result['rss_max_mb'], result['rss_final_mb']))
    if result.get('wire_bytes_per_msg') is not None:
        parts.append('{:.0f} B/msg on the wire'.format(result['wire_bytes_per_msg']))
    return ', '.join(parts)


def tables(results: dict[str, dict[str, dict[str, JsonDict]]]) -> str:
    out = []
    for workload, cases in results.items():
        rows = []
        for case, impls in cases.items():
            for impl, r in impls.items():
                rows.append([case, impl, summary_line(r)])
        out.append('## {}\n{}'.format(workload, format_table(
            ['case', 'client', 'figures'], rows, align=['<', '<', '<'],
        )))
    return '\n\n'.join(out)
