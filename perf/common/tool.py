"""
The Java stream client's own perf tool (``StreamPerfTest``, bundled with
``com.rabbitmq:stream-client`` 0.13.0; ``scripts/java-perf.sh --official``)
as a runner of workloads: :py:func:`run_tool` runs it for a number of
seconds with the tool's own options and reads its steady state off the
line it prints a second, the way the client's authors read it.
``perf.official`` holds rbfly's Java harness against it,
``perf.workloads`` runs workloads with it.

The tool's options (0.13.0, ``scripts/java-perf.sh --official --help``;
long name, short one, default):

``--size``, ``-s`` (10)
    message body size in bytes (at least 8: the tool raises smaller ones
    to 8, the body holds a timestamp)
``--rate``, ``-r`` (-1: unlimited)
    the maximum rate of *each producer*, msg/s (a Guava ``RateLimiter``
    a producer); above 100 msg/s, or unlimited, the latency figures
    sample one message in 100, at or below they sample every message
``--producers``, ``-x`` (1); ``--consumers``, ``-y`` (1)
    how many producers and consumers; producer (consumer) ``i`` uses
    stream ``i % len(streams)``
``--streams``, ``-st`` (``stream``)
    the streams, separated by commas (the tool creates missing ones,
    20 GB max length by default: ``--max-length-bytes``); also
    ``--stream-count``, ``-sc``, which names them itself
``--producers-by-connection``, ``-pbc`` (1); ``--consumers-by-connection``,
``-cbc`` (1)
    producers (consumers) sharing a connection, 1 to 255
``--sub-entry-size``, ``-ses`` (1: none)
    messages a sub-entry batch; ``--compression``, ``-co``: ``none``
    (default), ``gzip``, ``snappy``, ``lz4``, ``zstd``, of the sub-entries
``--batch-size``, ``-bs`` (100); ``--batch-publishing-delay``, ``-bpd``
(100 ms); ``--confirms``, ``-c`` (10,000)
    the producer's batch, the period it flushes an unfull one at, and
    the unconfirmed messages it allows
``--offset``, ``-o`` (``next``)
    where consumers start: ``first``, ``last``, ``next``, an offset or
    an ISO 8601 time
``--codec``, ``-cc`` (``qpid``)
    ``qpid``: AMQP 1.0 messages, the body one data section; ``simple``:
    the bare body
``--confirm-latency``, ``-cl``
    also the publish-to-confirm latency (``confirm latency ...`` on the
    lines, parsed as ``confirm_latency_ms``)

The message body is ``--size`` bytes of zeros but for its first 8: the
publish time (``System.currentTimeMillis()``, big-endian), a new array a
message. Zeros and a timestamp compress about as well as anything can, so
``--compression`` with a big ``--size`` shrinks the tool's sub-entries far
more than real payloads would be.

The line of each second (printed only for seconds with messages
published or consumed, numbered by the tool's clock), and the summary
after ``--time`` seconds::

    3, published 913 msg/s, confirmed 913 msg/s, consumed 913 msg/s, \
latency median/75th/95th/99th 69/69/78/78 ms, chunk size 30
    Summary: published 998 msg/s, confirmed 998 msg/s, consumed 998 msg/s, \
latency 95th 96 ms, chunk size 30

The tool's latency is end to end: a consumer reads the publish time out of
the body and subtracts it from its clock when the message reaches its
handler (same JVM, same clock), in milliseconds (the granularity of the
timestamp), so it includes the time a message waits in the producer's
batch (until ``--batch-size`` messages or ``--batch-publishing-delay``),
the broker's write and replication, and the delivery. Its figures are
Micrometer's approximate percentiles of roughly the last second (a
decaying window of 1 s), rounded to whole ms; the line prints them even
without consumers (0 then). The summary's ``latency 95th`` is the same
window's at the end of the run, not the whole run's. Consuming a stream
filled before (``--offset first``), it is the age of the messages, not a
latency.
"""

from __future__ import annotations

import re
import statistics
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from perf.common.java import SCRIPT, java_uri
from perf.common.results import JsonDict
from perf.common.streams import process_cpu, redact_url, run_async

# "12, published 749643 msg/s, confirmed 749543 msg/s, consumed 0 msg/s, ..."
LINE = re.compile(
    r'^(\d+), published (\d+) msg/s, confirmed (\d+) msg/s, consumed (\d+) msg/s',
)
SUMMARY = re.compile(r'^Summary: published (\d+) msg/s, confirmed (\d+) msg/s, consumed (\d+)')
# "latency median/75th/95th/99th 1/3/4/6 ms", "confirm latency 95th 96 ms"
LATENCY = re.compile(
    r'(?:^|, )(?P<name>confirm latency|latency) (?P<labels>[\w.]+(?:/[\w.]+)*)'
    r' (?P<values>[\d.]+(?:/[\d.]+)*) ms',
)
# the tool's latency figures: run_tool()'s keys, and the column that says
# whether a second had any (without messages the tool prints zeros)
LATENCY_KEYS = {'latency': ('latency_ms', 'consumed'),
                'confirm latency': ('confirm_latency_ms', 'confirmed')}
# a fill publishes with these unless its extra arguments set them
FILL_DEFAULTS = ((('--producers', '-x'), '1'), (('--consumers', '-y'), '0'))
WATCHDOG_SECONDS = 300   # a run is killed this long after its --time


@dataclass(frozen=True)
class Report:
    """
    A line of the tool: the rates of a second (``second`` from 1) or of
    its summary (``second`` is ``None``), and its latency figures by name
    (``latency``, ``confirm latency``), each by percentile (``p50``, ...).
    """

    second: int | None
    published: int
    confirmed: int
    consumed: int
    latency: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def count(self, column: str) -> int:
        """The rate of a column: ``published``, ``confirmed``, ``consumed``."""
        value: int = getattr(self, column)
        return value


def percentile_key(label: str) -> str:
    """``p50`` for the tool's ``median``, ``p95`` for ``95th``, else as printed."""
    if label == 'median':
        return 'p50'
    if label.endswith('th') and label[:-2].replace('.', '', 1).isdigit():
        return 'p' + label[:-2]
    return label


def parse_latency(line: str) -> dict[str, dict[str, float]]:
    """
    The latency figures of a line of the tool by name, each by
    percentile: whichever the tool prints, so a version printing others
    (a ``min``) is read too.
    """
    found: dict[str, dict[str, float]] = {}
    for m in LATENCY.finditer(line):
        labels, values = m.group('labels').split('/'), m.group('values').split('/')
        if len(labels) == len(values):
            found[m.group('name')] = {
                percentile_key(k): float(v) for k, v in zip(labels, values, strict=True)
            }
    return found


def parse_line(line: str) -> Report | None:
    """A line of a second or the summary, or ``None`` for anything else."""
    m = LINE.match(line)
    if m:
        second, published, confirmed, consumed = (int(g) for g in m.groups())
        return Report(second, published, confirmed, consumed, parse_latency(line))
    m = SUMMARY.match(line)
    if m:
        published, confirmed, consumed = (int(g) for g in m.groups())
        return Report(None, published, confirmed, consumed, parse_latency(line))
    return None


def steady_span(per_second: Sequence[int], start: int, *, consuming: bool) -> tuple[int, int]:
    """
    The steady seconds of a run as indices of ``per_second``
    (``per_second[k]``: second ``k + 1``): from second ``start`` to the
    end, or every second when the run is shorter. Consuming, the stream
    ends: the seconds after the last one with messages, and that one (a
    partial second), do not count.
    """
    end = len(per_second)
    if consuming:
        busy = [i for i, v in enumerate(per_second) if v > 0]
        end = busy[-1] if len(busy) > 1 else min(1, end)
    return (start - 1 if start - 1 < end else 0), end


def steady_state(
        per_second: Sequence[int], cpu: Mapping[int, float], start: int, *, consuming: bool,
) -> JsonDict:
    """
    The tool's steady state from its per-second rates (``per_second[k]``:
    second ``k + 1``) and the JVM's CPU seconds when it printed the line of
    second ``k`` (``cpu[k]``): the mean rate of the steady seconds
    (:py:func:`steady_span`), its maximum, and the CPU per message from
    second ``start`` on.
    """
    low, end = steady_span(per_second, start, consuming=consuming)
    steady = per_second[low:end]
    first = start - 1
    cpu_us = None
    messages = sum(per_second[first:end])
    if first in cpu and end in cpu and messages:
        cpu_us = (cpu[end] - cpu[first]) / messages * 1e6
    return {
        'rate': sum(steady) / len(steady) if steady else 0.0,
        'seconds': [min(start, end), end],
        'max': max(steady, default=0),
        'cpu_us_per_msg': cpu_us,
    }


def steady_latency(reports: Sequence[Report], name: str) -> dict[str, float] | None:
    """
    The median over seconds of each percentile of the latency figures
    ``name`` of the tool, of the seconds with messages to measure (the
    tool prints zeros for the others), or ``None`` when there are none.
    """
    column = LATENCY_KEYS[name][1]
    figures = [r.latency[name] for r in reports if name in r.latency and r.count(column) > 0]
    if not figures:
        return None
    return {k: statistics.median(f[k] for f in figures if k in f) for k in figures[-1]}


def tool_result(
        reports: Sequence[Report], cpu: Mapping[int, float], start: int, *, consuming: bool,
        summary: Report | None = None,
) -> JsonDict:
    """
    A run's steady state from its lines (``reports``, one a second in
    order, their CPU seconds ``cpu`` by second): :py:func:`steady_state`
    of the confirmed rates, or consumed ones when ``consuming``, the mean
    published, confirmed and consumed rates over the same steady seconds,
    the steady latency figures, and the summary's.
    """
    column = 'consumed' if consuming else 'confirmed'
    per_second = [r.count(column) for r in reports]
    low, end = steady_span(per_second, start, consuming=consuming)
    steady = reports[low:end]
    result = steady_state(per_second, cpu, start, consuming=consuming)
    for name in ('published', 'confirmed', 'consumed'):
        result['{}_rate'.format(name)] = (
            sum(r.count(name) for r in steady) / len(steady) if steady else 0.0
        )
    for name, (key, needed) in LATENCY_KEYS.items():
        result[key] = steady_latency(steady, name)
        # the summary's is of the last second or so: none if it had nothing
        last_busy = bool(reports) and reports[-1].count(needed) > 0
        figures = summary.latency.get(name) if summary is not None else None
        result['summary_' + key] = dict(figures) if figures and last_busy else None
    result['summary_rate'] = summary.count(column) if summary is not None else None
    result['per_second'] = per_second
    return result


def tool_command(
        url: str, tool_args: Sequence[str], *, seconds: int, streams: Sequence[str],
) -> list[str]:
    """The command line of the tool publishing to or reading ``streams``."""
    return [
        str(SCRIPT), '--official', '--uris', java_uri(url), '--streams', ','.join(streams),
        '--time', str(seconds), *tool_args,
    ]


def run_tool(
        url: str, tool_args: Sequence[str], *, seconds: int, start: int, consuming: bool,
        streams: Sequence[str],
) -> JsonDict:
    """
    Run the official tool with ``tool_args`` (its options but ``--uris``,
    ``--streams`` and ``--time``) on ``streams`` for ``seconds``; its
    steady state from second ``start`` on (:py:func:`tool_result`): the
    mean rate (confirmed messages a second, or consumed ones when
    ``consuming``), its maximum, the mean ``published_rate``,
    ``confirmed_rate``, ``consumed_rate``, the JVM's CPU per message of
    that rate (``cpu_us_per_msg``; ``/proc/PID/stat`` sampled at each
    line), ``latency_ms`` (the tool's end-to-end latency, see the module's
    documentation: the median over the steady seconds of each percentile
    it prints, ``p50``, ``p75``, ``p95``, ``p99``; ``None`` without
    consumed messages), ``confirm_latency_ms`` (with ``--confirm-latency``),
    the summary's rate and latency (``summary_rate``,
    ``summary_latency_ms``), the rate of each second (``per_second``) and
    the command (the URL's password hidden).

    A tool still running ``WATCHDOG_SECONDS`` after ``seconds`` is killed;
    a tool that fails, or prints no line of a second, raises
    :py:class:`RuntimeError` with the end of its standard error.
    """
    if seconds < 1 or start < 1 or not streams:
        raise ValueError('seconds and start must be positive, streams not empty')
    cmd = tool_command(url, tool_args, seconds=seconds, streams=streams)
    shown = ' '.join(cmd[1:]).replace(java_uri(url), redact_url(url))   # no password
    reports: list[Report] = []
    cpu: dict[int, float] = {}
    summary = None
    errors = tempfile.TemporaryFile('w+')  # the tool's and Maven's complaints
    with errors, subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors, text=True,
    ) as proc:
        # a tool that hangs is killed (java-perf.sh execs the JVM)
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            proc.kill()

        watchdog = threading.Timer(seconds + WATCHDOG_SECONDS, kill)
        watchdog.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                report = parse_line(line)
                if report is None:
                    continue
                if report.second is None:
                    summary = report
                    continue
                reports.append(report)
                value = process_cpu(proc.pid)   # java-perf.sh execs the JVM
                if value is not None:
                    cpu[report.second] = value
            proc.wait()
        finally:
            watchdog.cancel()
        errors.seek(0)
        complaints = errors.read()[-2000:]
    if proc.returncode != 0 or not reports:
        raise RuntimeError('the official tool failed (exit {}{}): {}\n{}'.format(
            proc.returncode, ', killed by the watchdog' if killed.is_set() else '',
            shown, complaints,
        ))
    return {
        **tool_result(reports, cpu, start, consuming=consuming, summary=summary),
        'command': shown,
    }


def fill_stream(url: str, stream: str, seconds: int, extra_args: Sequence[str] = ()) -> JsonDict:
    """
    Publish to ``stream`` with the tool for ``seconds`` (one producer, no
    consumer, unless ``extra_args`` say otherwise; e.g. ``--size 1000``),
    for a run that reads it; the fill's :py:func:`run_tool` result.
    """
    given = {arg.split('=', 1)[0] for arg in extra_args}   # --producers=2 too
    defaults = [
        arg for names, value in FILL_DEFAULTS if not given & set(names)
        for arg in (names[0], value)
    ]
    return run_tool(
        url, [*defaults, *extra_args], seconds=seconds, start=1, consuming=False,
        streams=[stream],
    )


def delete_streams(url: str, streams: Sequence[str]) -> None:
    """
    Delete the streams a run used, missing ones too (the tool's own
    ``--delete-streams`` logs a shutdown race; a run that failed early may
    not have created them).
    """
    from rbfly.streams import streams_client

    async def delete() -> None:
        client = streams_client(url)
        async with client:
            for stream in streams:
                await client.delete_stream(stream)

    run_async(delete, 'asyncio')


def delete_stream(url: str, stream: str) -> None:
    """Delete a stream a run used (:py:func:`delete_streams`)."""
    delete_streams(url, [stream])
