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
from collections.abc import Callable, Sequence
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


class OpenLoop:
    """
    Figures of a run at a fixed offered load: message ``i`` is due at
    ``t0 + i / rate``; its latencies count from then (a client that falls
    behind is charged for the wait, not only for its own round trips).
    """

    def __init__(self, rate: float, count: int) -> None:
        self.rate = rate
        self.count = count
        self.interval = 1e9 / rate
        self.t0 = 0
        self.confirmed = [0] * count
        self.received = [0] * count
        self.last_sent = 0

    def due(self, i: int) -> int:
        return self.t0 + int(i * self.interval)

    async def run(self, send: Callable[[int], Any]) -> None:
        """Call ``await send(i)`` for each message at its due time (or as soon as it can)."""
        clock = time.perf_counter_ns
        count = self.count
        self.t0 = clock()
        i = 0
        while i < count:
            now = clock()
            ready = min(count, int((now - self.t0) / self.interval) + 1)
            while i < ready:
                await send(i)
                i += 1
            if i < count:
                delay = (self.due(i) - clock()) / 1e9
                if delay > 0:
                    await asyncio.sleep(delay)
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
            confirm=quantiles([c - self.due(i) for i, c in enumerate(self.confirmed)]),
            end_to_end=quantiles([
                r - self.due(i) for i, r in enumerate(self.received)
            ]) if end_to_end else None,
        )
