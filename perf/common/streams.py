"""
Helpers shared by the broker benchmarks (``perf.publish``, ``perf.consume``,
``perf.concurrent``, ``perf.workloads``, ...):

- event loop selection (uvloop by default)
- broker URL, broker version, stream names
- CPU and wall clock measurement of one run, latency percentiles
- interleaved round scheduling and the target checks printed at the end

The RbFly 0.10 venv and the child processes run there are
:py:mod:`perf.common.child`'s. This module is also imported by a child
process in the RbFly 0.10 venv, so at import time it needs the standard
library only.
"""

from __future__ import annotations

import asyncio
import gc
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

from perf.common.errors import SkipImplementation
from perf.common.results import JsonDict, format_rate, format_ratio, log, median, package_version

T = TypeVar('T')

BASELINE = 'rbfly-0.10'
BASELINE_VERSION = '0.10.0'
DEFAULT_URL = 'rabbitmq-stream://guest:guest@localhost:5552/'
LOOPS = ('uvloop', 'asyncio')


def message(i: int) -> str:
    """
    Message ``i`` of a benchmark: a string of 10 digits, ``'{:010d}'.format(i)``
    (report sections 1, 2).

    Made the cheapest way: 79 ns a message on this machine, against 218 ns
    for ``str.format``, which parses its format string on every call (116 ns
    for ``'%010d' % i``): the Java harness writes the digits without
    ``String.format`` for the same reason (``perf/java/StreamPerf.java``,
    ``body``). Building the message is the harness's cost, not the
    client's, yet it runs on the client's thread and counts in its CPU a
    message.
    """
    return str(i).zfill(10)


def default_url() -> str:
    """
    Broker of the benchmarks: ``$RBFLY_PERF_URL``, else RabbitMQ 4.x
    (``$RBFLY_URL4``, as in the RbFly 0.10 report), else ``$RBFLY_URL``,
    else the local default port.
    """
    for name in ('RBFLY_PERF_URL', 'RBFLY_URL4', 'RBFLY_URL'):
        value = os.environ.get(name)
        if value:
            return value
    return DEFAULT_URL


def redact_url(url: str) -> str:
    """URL without its password, for logs and JSON."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ''
    if parts.port is not None:
        host = '{}:{}'.format(host, parts.port)
    netloc = '{}:***@{}'.format(parts.username or '', host)
    return urlunsplit(parts._replace(netloc=netloc))


@dataclass(frozen=True)
class Endpoint:
    """Host, port and credentials of a broker URL (for rstream)."""
    host: str
    port: int
    username: str
    password: str
    vhost: str


def endpoint(url: str, default_port: int = 5552) -> Endpoint:
    parts = urlsplit(url)
    vhost = unquote(parts.path[1:]) if len(parts.path) > 1 else '/'
    return Endpoint(
        host=parts.hostname or 'localhost',
        port=parts.port or default_port,
        username=unquote(parts.username or 'guest'),
        password=unquote(parts.password or 'guest'),
        vhost=vhost,
    )


def stream_name(*parts: str) -> str:
    """A fresh stream name, e.g. ``rbfly-perf-batch-amqp-rbfly-1a2b3c4d``."""
    return '-'.join(['rbfly-perf', *parts, uuid.uuid4().hex[:8]])


#
# event loop
#

def run_async(main: Callable[[], Awaitable[T]], loop: str) -> T:
    """Run a coroutine function on a new uvloop or asyncio event loop."""
    factory: Callable[[], asyncio.AbstractEventLoop] | None = None
    if loop == 'uvloop':
        try:
            import uvloop
        except ImportError as ex:
            raise SkipImplementation(
                'uvloop is not installed (pip install uvloop, or use --loop asyncio)'
            ) from ex
        factory = uvloop.new_event_loop

    async def wrapper() -> T:
        return await main()

    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(wrapper())


def loop_info(loop: str) -> JsonDict:
    info: JsonDict = {'name': loop}
    if loop == 'uvloop':
        try:
            import uvloop
        except ImportError:
            return info
        info['version'] = getattr(uvloop, '__version__', None)
    return info


#
# one measured run
#

def machine_ticks() -> tuple[int, int] | None:
    """Busy and total CPU ticks of the machine, all cores (``/proc/stat``)."""
    try:
        with open('/proc/stat', encoding='ascii') as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != 'cpu':
        return None
    ticks = [int(v) for v in fields[1:9]]   # user nice system idle iowait irq softirq steal
    idle = ticks[3] + ticks[4]
    return sum(ticks) - idle, sum(ticks)


def listening_pid(port: int) -> int | None:
    """
    Process listening on a local TCP port (Linux ``/proc``; the broker's
    CPU time is read from its ``/proc/PID/stat``), or ``None``.
    """
    inodes = set()
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        try:
            with open(table, encoding='ascii') as f:
                next(f)
                for line in f:
                    fields = line.split()
                    local, state, inode = fields[1], fields[3], fields[9]
                    if state == '0A' and int(local.rsplit(':', 1)[1], 16) == port:
                        inodes.add('socket:[{}]'.format(inode))
        except (OSError, StopIteration, IndexError, ValueError):
            continue
    if not inodes:
        return None
    for pid_dir in Path('/proc').iterdir():
        if not pid_dir.name.isdigit():
            continue
        try:
            for fd in (pid_dir / 'fd').iterdir():
                if os.readlink(fd) in inodes:
                    return int(pid_dir.name)
        except OSError:
            continue
    return None


def process_cpu(pid: int | None) -> float | None:
    """CPU seconds (user + system) used so far by a process, or ``None``."""
    if pid is None:
        return None
    try:
        with open('/proc/{}/stat'.format(pid), encoding='ascii') as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat.rsplit(')', 1)[1].split()   # the fields after the command name
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


class Stopwatch:
    """
    Wall clock and CPU time (of this process, all threads) of a run, how
    busy all the machine's cores were meanwhile (the broker, the client and
    anything else running), and the broker's CPU time when its process is
    known (:py:data:`BROKER_PID`).

    The garbage collector is run before starting, so the garbage of an
    earlier run is not collected during this one.
    """
    def __init__(self, broker_pid: int | None = None) -> None:
        self.broker_pid = broker_pid if broker_pid is not None else BROKER_PID
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        self.sys_seconds = 0.0   # the kernel's part of cpu_seconds (system calls)
        self.machine_busy: float | None = None
        self.broker_cpu_seconds: float | None = None
        self._wall = 0.0
        self._cpu = 0.0
        self._sys = 0.0
        self._ticks: tuple[int, int] | None = None
        self._broker: float | None = None

    def start(self) -> None:
        gc.collect()
        self._ticks = machine_ticks()
        self._broker = process_cpu(self.broker_pid)
        self._cpu = time.process_time()
        self._sys = os.times().system
        self._wall = time.perf_counter()

    def stop(self) -> None:
        self.seconds = time.perf_counter() - self._wall
        self.cpu_seconds = time.process_time() - self._cpu
        self.sys_seconds = os.times().system - self._sys
        broker = process_cpu(self.broker_pid)
        if broker is not None and self._broker is not None:
            self.broker_cpu_seconds = broker - self._broker
        ticks = machine_ticks()
        if ticks is not None and self._ticks is not None and ticks[1] > self._ticks[1]:
            self.machine_busy = (ticks[0] - self._ticks[0]) / (ticks[1] - self._ticks[1])


BROKER_PID: int | None = None
"""Process id of the broker, when it runs on this machine (see :py:func:`find_broker`)."""


def find_broker(url: str, default_port: int = 5552) -> int | None:
    """Find the local broker process of a URL and remember it for :py:class:`Stopwatch`."""
    global BROKER_PID   # noqa: PLW0603 (set once per process)
    ep = endpoint(url, default_port)
    BROKER_PID = None
    if ep.host in ('localhost', '127.0.0.1', '::1'):
        BROKER_PID = listening_pid(ep.port)
    return BROKER_PID


def locate_broker(url: str) -> int | None:
    """:py:func:`find_broker`, saying whether the broker's CPU time is measured."""
    pid = find_broker(url)
    log('broker process: {}'.format(pid or 'not found (broker CPU is not measured)'))
    return pid


def broker_pid_args() -> list[str]:
    """Command line arguments passing the broker process to a child."""
    return [] if BROKER_PID is None else ['--broker-pid', str(BROKER_PID)]


def percentiles(values_ns: Sequence[int]) -> JsonDict | None:
    """
    p50, p95, p99 and max of latencies in nanoseconds, in microseconds
    (nearest rank).
    """
    if not values_ns:
        return None
    data = sorted(values_ns)
    n = len(data)

    def rank(p: float) -> float:
        index = min(n - 1, max(0, int(p / 100 * n + 0.5) - 1))
        return data[index] / 1000

    return {
        'count': n,
        'p50_us': rank(50),
        'p95_us': rank(95),
        'p99_us': rank(99),
        'max_us': data[-1] / 1000,
        'mean_us': sum(data) / n / 1000,
    }


def run_result(
        count: int, watch: Stopwatch, latency: JsonDict | None = None, **extra: Any,
) -> JsonDict:
    """Result of one run, as passed between parent and child processes."""
    return {
        'count': count,
        'seconds': watch.seconds,
        'cpu_seconds': watch.cpu_seconds,
        'rate': count / watch.seconds if watch.seconds > 0 else None,
        'cpu_us_per_msg': watch.cpu_seconds / count * 1e6,
        'sys_us_per_msg': watch.sys_seconds / count * 1e6,
        'cpu_share': watch.cpu_seconds / watch.seconds if watch.seconds > 0 else None,
        'machine_busy': watch.machine_busy,
        'broker_cpu_share': (
            watch.broker_cpu_seconds / watch.seconds
            if watch.broker_cpu_seconds is not None and watch.seconds > 0 else None
        ),
        'latency': latency,
        **extra,
    }


def summarise(runs: Sequence[JsonDict]) -> JsonDict:
    """
    Median figures of the rounds of one implementation in one scenario.

    The median rate is the count over the median time; latency
    percentiles are the medians of each round's percentiles.
    """
    count = runs[0]['count']
    times = [r['seconds'] for r in runs]
    summary: JsonDict = {
        'rounds': len(runs),
        'count': count,
        'times': times,
        'rates': [r['rate'] for r in runs],
        'median_time': median(times),
        'median_rate': count / median(times),
        'min_time': min(times),
        'max_time': max(times),
        'cpu_us_per_msg': median([r['cpu_us_per_msg'] for r in runs]),
        'sys_us_per_msg': median([r.get('sys_us_per_msg', 0.0) for r in runs]),
        'cpu_share': median([r['cpu_share'] or 0.0 for r in runs]),
        'machine_busy': _median_or_none([r.get('machine_busy') for r in runs]),
        'broker_cpu_share': _median_or_none([r.get('broker_cpu_share') for r in runs]),
    }
    # the broker's CPU time a message (its share over the run's rate)
    broker = [
        r['broker_cpu_share'] * r['seconds'] / r['count'] * 1e6 for r in runs
        if r.get('broker_cpu_share') is not None and r['count']
    ]
    if broker:
        summary['broker_us_per_msg'] = median(broker)
    # the shape of the publishing, when counted (perf.publish --frames, --chunks)
    for key in ('msg_per_frame', 'msg_per_chunk'):
        shape = [r[key] for r in runs if r.get(key) is not None]
        if shape:
            summary[key] = median(shape)
    lat = [r['latency'] for r in runs if r.get('latency')]
    if lat:
        summary['latency'] = {
            key: median([x[key] for x in lat])
            for key in ('p50_us', 'p95_us', 'p99_us', 'max_us', 'mean_us')
        }
        summary['latency']['unit'] = lat[0].get('unit', 'message')
    return summary


def _median_or_none(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return median(known) if known else None


def format_share(value: float | None) -> str:
    return '-' if value is None else '{:.0%}'.format(value)


def run_line(result: JsonDict) -> str:
    """Progress line figures of a run."""
    return '{:>12} msg/s  CPU {:6.2f} us/msg ({:6.2f} sys)  client {:>4}  broker {:>4}' \
        '  machine {:>4}'.format(
        format_rate(result['rate']), result['cpu_us_per_msg'], result['sys_us_per_msg'],
        format_share(result['cpu_share']), format_share(result.get('broker_cpu_share')),
        format_share(result.get('machine_busy')),
    ) + ''.join(
        '  {} {:.0f}'.format(label, result[key])
        for key, label in (('msg_per_frame', 'msg/frame'), ('msg_per_chunk', 'msg/chunk'))
        if result.get(key) is not None
    )


LEGEND = (
    '(spread: (slowest - fastest round) / median round; CPU us/msg: client CPU time per'
    ' message (sys: its kernel part); client, broker: CPU time of the client, of the'
    ' broker process / elapsed time (100% = one core; a client near 100% is CPU bound,'
    ' far below it waits); machine:'
    ' busy share of all cores of the machine, anything running included)'
)


def spread(summary: JsonDict) -> str:
    """Spread of the rounds: (slowest - fastest) / median round time."""
    return '{:.0%}'.format((summary['max_time'] - summary['min_time']) / summary['median_time'])


def rotated(items: Sequence[T], i: int) -> list[T]:
    """Items starting with item ``i`` (mod length): round ``i``'s order."""
    if not items:
        return []
    k = i % len(items)
    return [*items[k:], *items[:k]]


def load_average() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None


#
# the broker
#

async def broker_info(url: str) -> JsonDict:
    """
    Version and other server properties of a RabbitMQ Streams broker,
    read with the rbfly importable by this interpreter.
    """
    from rbfly.streams import streams_client

    client = streams_client(url)
    async with client:
        await client.stream_exists('rbfly-perf-probe')  # connects
        props = client.server_properties
    return {
        'url': redact_url(url),
        'product': props.get('product'),
        'version': props.get('version'),
        'platform': props.get('platform'),
    }


def log_broker(broker: JsonDict) -> None:
    """Say which broker a benchmark runs against (:py:func:`broker_info`)."""
    log('broker: {} {} at {}'.format(broker['product'], broker['version'], broker['url']))


def rbfly_module_info() -> tuple[str | None, str | None]:
    """Version and package path of the importable rbfly."""
    try:
        import rbfly
    except ImportError:
        return None, None
    return package_version('rbfly'), getattr(rbfly, '__file__', None)


#
# targets
#

@dataclass(frozen=True)
class Target:
    """
    A performance target of the project and its measured value.

    :param what: What is measured, e.g. ``single publish (AMQP)``.
    :param goal: Threshold, in ``unit``.
    :param unit: ``msg/s`` (absolute rate) or ``x`` (ratio).
    :param value: Measured value (``None``: not measured in this run).
    :param note: Where the threshold comes from.
    """
    what: str
    goal: float
    unit: str
    value: float | None
    note: str = ''

    @property
    def met(self) -> bool | None:
        return None if self.value is None else self.value >= self.goal

    def as_json(self) -> JsonDict:
        return {
            'what': self.what, 'goal': self.goal, 'unit': self.unit,
            'value': self.value, 'met': self.met, 'note': self.note,
        }


def _fmt(value: float | None, unit: str) -> str:
    if unit == 'x':
        return format_ratio(value)
    return '-' if value is None else '{} {}'.format(format_rate(value), unit)


def format_targets(targets: Sequence[Target]) -> str:
    lines = ['targets:']
    for t in targets:
        status = {True: 'MET', False: 'NOT MET', None: 'not measured'}[t.met]
        line = '  {:<54} goal >= {:<14} measured {:<14} {}'.format(
            t.what, _fmt(t.goal, t.unit), _fmt(t.value, t.unit), status,
        )
        if t.note:
            line += '  ({})'.format(t.note)
        lines.append(line.rstrip())
    return '\n'.join(lines)

