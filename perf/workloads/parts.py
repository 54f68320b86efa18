"""
The workloads of ``perf.workloads``, one function per library and
workload: message sizes, many publishers and streams, latency under a
fixed offered load, a slow application, and sub-entry compression.

Each function does one run against a broker and returns its figures as a
JSON dict (``run_result`` of :py:mod:`perf.common.streams` plus what the workload adds).
The rbfly functions that RbFly 0.10 can run (sizes, slow) use only its
API, so the same code runs in its venv as a child process.

Messages carry their index in their first 10 bytes (``b'%010d'``), so a
consumer checks what it got and a latency is matched to its send.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from perf.common.errors import VerificationError
from perf.common.results import JsonDict
from perf.common.streams import Stopwatch, run_result

MB = 1_000_000


def body(i: int, size: int, filler: bytes) -> bytes:
    """Message ``i`` of ``size`` bytes: its index, then ``filler``."""
    return b'%010d' % i + filler[:size - 10]


def filler_of(size: int) -> bytes:
    """Bytes that follow a message's index (incompressible enough: a counter's digits)."""
    text = ''.join(str(k) for k in range(size // 2 + 16)).encode()
    return text[:max(0, size - 10)]


def index_of(data: Any) -> int:
    """The index in a message's first 10 bytes (bytes, or str of RbFly 0.10)."""
    head = data[:10]
    return int(head)


def quantiles(values_ns: Sequence[int]) -> JsonDict | None:
    """p50, p99, p99.9 and max of latencies in nanoseconds, in microseconds."""
    if not values_ns:
        return None
    data = sorted(values_ns)
    n = len(data)

    def rank(p: float) -> float:
        return data[min(n - 1, max(0, int(p / 100 * n + 0.5) - 1))] / 1000

    return {
        'count': n, 'p50_us': rank(50), 'p99_us': rank(99), 'p999_us': rank(99.9),
        'max_us': data[-1] / 1000,
    }


def written_bytes() -> int:
    """
    Bytes this process passed to ``write`` calls (``/proc/self/io``:
    wchar). uvloop writes to sockets with ``write``/``writev``; asyncio's
    loop with ``send``, which wchar does not count (see :py:func:`wire`).
    """
    with open('/proc/self/io', encoding='ascii') as f:
        for line in f:
            key, _, value = line.partition(':')
            if key == 'wchar':
                return int(value)
    raise OSError('no wchar in /proc/self/io')


class RssSampler:
    """
    The resident memory of this process every ``interval`` seconds, from a
    thread (an application busy in its own code still gets sampled at the
    interpreter's switch interval).
    """

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._page = os.sysconf('SC_PAGE_SIZE')

    def rss(self) -> int:
        with open('/proc/self/statm', encoding='ascii') as f:
            return int(f.read().split()[1]) * self._page

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.samples.append(self.rss())

    def __enter__(self) -> RssSampler:
        self.samples.append(self.rss())
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append(self.rss())

    def summary(self) -> JsonDict:
        return {
            'rss_start_mb': self.samples[0] / MB,
            'rss_max_mb': max(self.samples) / MB,
            'rss_final_mb': self.samples[-1] / MB,
            # what the run added: the process ran other workloads before
            'rss_growth_mb': (max(self.samples) - self.samples[0]) / MB,
            'rss_samples': len(self.samples),
        }


def busy(work_ns: int, clock: Callable[[], int] = time.perf_counter_ns) -> None:
    """An application's processing of a message: ``work_ns`` of CPU."""
    end = clock() + work_ns
    while clock() < end:
        pass


def sized_result(count: int, size: int, watch: Stopwatch, **extra: Any) -> JsonDict:
    result = run_result(count, watch, **extra)
    result['size'] = size
    result['mb_per_s'] = count * size / watch.seconds / MB if watch.seconds > 0 else None
    return result


class Tally:
    """
    What a consumer received: the count, and the last message, whose index
    must be the last one sent (what the Java harness checks too: reading
    each message's index would cost the Python clients alone). A warm-up
    message (``b'w...'``, sent to declare a publisher before a timing) is
    not counted.
    """

    def __init__(self, impl: str, count: int) -> None:
        self.impl = impl
        self.count = count
        self.n = 0
        self.last: Any = None

    def add(self, data: Any) -> bool:
        """Count a message; ``True`` when all arrived."""
        if data[:1] == b'w':
            return False
        self.n += 1
        self.last = data
        return self.n >= self.count

    def check(self) -> None:
        last = None if self.last is None else index_of(self.last)
        if self.n != self.count or last != self.count - 1:
            raise VerificationError('{}: received {} of {} messages, the last {}'.format(
                self.impl, self.n, self.count, last,
            ))


def _compression_result(
        count: int, bodies: Sequence[bytes], watch: Stopwatch, wrote: int, read: Stopwatch,
) -> JsonDict:
    raw = sum(len(b) for b in bodies)
    if wrote < count:
        raise VerificationError(
            '{} bytes counted for {} messages: /proc/self/io counts write() calls, which'
            ' uvloop makes and asyncio does not (run with --loop uvloop)'.format(wrote, count),
        )
    return run_result(
        count, watch,
        body_bytes=raw / count,
        wire_bytes_per_msg=wrote / count,
        wire_ratio=wrote / raw,
        read_rate=count / read.seconds if read.seconds > 0 else None,
        read_cpu_us_per_msg=read.cpu_seconds / count * 1e6,
    )


def json_bodies(count: int) -> list[bytes]:
    """Compressible JSON events of about 230 bytes, each with its index first."""
    countries = ('PL', 'DE', 'FR', 'GB', 'US')
    out = []
    for i in range(count):
        event = {
            'type': 'order.created',
            'customer': 'customer-{:04d}'.format(i % 997),
            'country': countries[i % 5],
            'amount': round((i % 10_000) * 1.37, 2),
            'currency': 'EUR',
            'items': [
                {'sku': 'SKU-{:05d}'.format((i * 7 + k) % 50_000), 'qty': 1 + (i + k) % 3}
                for k in range(3)
            ],
            'created': '2026-11-25T{:02d}:{:02d}:{:02d}Z'.format(i // 3600 % 24, i // 60 % 60,
                                                                 i % 60),
        }
        out.append(b'%010d' % i + json.dumps(event, separators=(',', ':')).encode())
    return out


TICK_NS = 1_000_000
"""
The open loop's shortest sleep, 1 ms: it sends what is due each tick, as a
rate limiter does. Sleeping until each message's due time (100 µs apart
at 10,000 msg/s) spun on uvloop, whose timers count whole milliseconds and
return a sleep under 1 ms at once (2,000 sleeps of 0.1 ms took 7 ms; 2.3 s
on asyncio's loop): the loop alone burned about 95 µs of CPU a message,
charged to every client it drove.
"""


class Pacer:
    """
    The schedule of a fixed rate, without a clock of its own (times are
    the caller's, in nanoseconds): message ``i`` is due at
    ``t0 + i / rate``; at each wake-up the caller sends every message due
    by then (:py:meth:`ready`) and sleeps :py:meth:`pause`, never less
    than a tick (at most 1,000 wake-ups a second, however high the rate).
    """

    def __init__(self, rate: float, count: int, tick_ns: int = TICK_NS) -> None:
        if rate <= 0 or tick_ns < TICK_NS:
            raise ValueError('a rate above 0 and a tick of at least {} ns, not {} and {}'.format(
                TICK_NS, rate, tick_ns,
            ))
        self.count = count
        self.interval = 1e9 / rate
        self.tick_ns = tick_ns
        self.t0 = 0

    def due(self, i: int) -> int:
        """When message ``i`` is due."""
        return self.t0 + int(i * self.interval)

    def ready(self, now: int) -> int:
        """How many messages are due by ``now`` (all those before the result)."""
        if now < self.t0:
            return 0
        return min(self.count, int((now - self.t0) / self.interval) + 1)

    def pause(self, now: int, sent: int) -> int:
        """
        Nanoseconds to sleep at ``now``, ``sent`` messages sent: until the
        next one is due, and at least a tick.
        """
        return max(self.tick_ns, self.due(sent) - now)


Clock = Callable[[], int]
Sleep = Callable[[float], Awaitable[None]]


class OpenLoop:
    """
    Figures of a run at a fixed offered load: message ``i`` is due at
    ``t0 + i / rate`` (:py:class:`Pacer`: sent in ticks of 1 ms); its
    latencies count from then (a client that falls behind is charged for
    the wait, not only for its own round trips).
    """

    def __init__(self, rate: float, count: int) -> None:
        self.rate = rate
        self.count = count
        self.pacer = Pacer(rate, count)
        self.confirmed = [0] * count
        self.received = [0] * count
        self.last_sent = 0
        self.sleeps = 0

    @property
    def t0(self) -> int:
        return self.pacer.t0

    @t0.setter
    def t0(self, value: int) -> None:
        self.pacer.t0 = value

    def due(self, i: int) -> int:
        return self.pacer.due(i)

    async def run(
            self, send: Callable[[int], Awaitable[Any]],
            clock: Clock = time.perf_counter_ns, sleep: Sleep = asyncio.sleep,
    ) -> None:
        """
        Call ``await send(i)`` for each message once it is due (or as soon
        as it can), sleeping between ticks; ``clock`` and ``sleep``: the
        loop's (a test passes its own).
        """
        pacer = self.pacer
        count = self.count
        pacer.t0 = clock()
        i = 0
        while True:
            ready = pacer.ready(clock())
            while i < ready:
                await send(i)
                i += 1
            if i >= count:
                break
            self.sleeps += 1
            await sleep(pacer.pause(clock(), i) / 1e9)
        self.last_sent = clock()

    def result(self, watch: Stopwatch, end_to_end: bool = True) -> JsonDict:
        missing = self.confirmed.count(0)
        lost = self.received.count(0) if end_to_end else 0
        if missing or lost:
            raise VerificationError('{} messages not confirmed, {} not received'.format(
                missing, lost,
            ))
        early = sum(1 for i, r in enumerate(self.received) if r < self.due(i))
        early += sum(1 for i, c in enumerate(self.confirmed) if c < self.due(i))
        if early:
            raise VerificationError('{} latencies before their message was due'.format(early))
        sent_for = (self.last_sent - self.t0) / 1e9
        return run_result(
            self.count, watch,
            offered=self.rate,
            achieved=self.count / sent_for if sent_for > 0 else None,
            sleeps_per_s=self.sleeps / sent_for if sent_for > 0 else None,
            confirm=quantiles([c - self.due(i) for i, c in enumerate(self.confirmed)]),
            end_to_end=quantiles([
                r - self.due(i) for i, r in enumerate(self.received)
            ]) if end_to_end else None,
        )


async def null_latency(rate: float, count: int) -> JsonDict:
    """
    The harness alone at a fixed rate, no client (impl ``null``): the open
    loop makes each message as the clients' runs do (``b'%010d' % i``) and
    hands it to a send that notes its confirmation and its delivery at
    once, the bookkeeping the clients' listeners do. Its CPU a message is
    part of every client's figure at the same rate.
    """
    loop = OpenLoop(rate, count)
    clock = time.perf_counter_ns
    confirmed, received = loop.confirmed, loop.received

    async def send(message: bytes) -> None:
        i = int(message[:10])
        confirmed[i] = received[i] = clock()

    watch = Stopwatch()
    watch.start()
    await loop.run(lambda i: send(b'%010d' % i))
    watch.stop()
    return loop.result(watch)
