#!/usr/bin/env python3
"""
Instructions per message of rbfly's publishing and consuming paths,
counted by Callgrind: a deterministic figure, to show that a change of the
client costs nothing (or what it costs), where timings on a shared machine
spread by tens of percent.

Each scenario runs in a Python process under ``valgrind --tool=callgrind``
against the fake broker of :py:mod:`rbfly.testing` in a process of its
own, not traced. Only the scenario's loop is counted: the traced process
calls ``os.getppid()`` before the loop and ``os.getpgrp()`` after it, and
Callgrind dumps its counters as the C library's ``getppid`` and
``getpgrp`` are entered (``--dump-before``), so start-up, imports,
connecting, declaring and publishing the messages to be read are left
out. Each scenario runs with two message counts; its figure is the
difference of their instructions over the difference of the counts, which
cancels what the loop does once (the last confirmation, the first credit,
leaving the loop).

Scenarios (10-byte AMQP string messages, ``'{:010d}'.format(i)``, built
before the loop):

``send``
    :py:class:`~rbfly.streams.Publisher`, ``await send(m)`` for each
    message, a confirmation awaited each
``batch``
    :py:class:`~rbfly.streams.PublisherBatchFast`, 100 ``batch(m)`` then
    ``await flush()``
``pipelined``
    :py:class:`~rbfly.streams.PublisherPipelined`, ``await send(m)`` for
    each message, ``await flush()`` at the end; 3,000 and 9,000 messages,
    within its window (10,000)
``many``
    :py:class:`~rbfly.streams.PublisherPipelined`, ``await send_many(ms)``
    for each list of 1,000 messages (the lists made before the loop),
    ``await flush()`` at the end; 3,000 and 9,000 messages
``async-for``
    ``async for`` over ``client.subscribe(stream, offset=Offset.FIRST)``,
    of a stream of 1,000-message chunks
``chunks``
    ``async for`` over ``client.subscribe_chunks(...)``, the same stream

Why the broker runs in a process of its own (measured on 0cfd1c3, a
2-core machine shared with other work). In the client's process, its
instructions are counted too, and they are more than the client's:
``send`` counted 250k instructions a message, the client alone 117k.
Leaving the broker's out there (``--toggle-collect`` around its calls,
which takes private parts of the fake broker), three runs still spread
by 1.0% (``send``), most of it in how often Python's type attribute cache
missed: that depends on the process's memory layout, which depends on how
the work of the two ends interleaved. In a process of its own, untraced, the broker
answers at once while the client crawls under Valgrind, and the client's
runs repeat: three runs gave the same figure to 0.003% (``send``,
``batch``, ``async-for``, ``chunks``) and within 0.16% (``pipelined``:
how many confirmations one read brings at the final flush varies). The
pipelined publisher with a full window (20,000 and 60,000 messages)
spread by 0.9%: when the confirmations come decides which frames go in
one write; its counts stay within the window.

Runs are made the same: ``PYTHONHASHSEED=0``, a fixed environment, the
modules compiled first (``PYTHONPYCACHEPREFIX``) by a run of each scenario
without Valgrind (which also checks that they work), a client without
heartbeats (a timer that fired in some runs: Valgrind makes a run last a
minute) or ``read_pause`` (it depends on the chunks' age), publishers with
a name (not a random one). The checkout measured is staged at a fixed path
(:py:func:`perf.instructions.callgrind.stage`): run from paths of other
lengths, the same code counted up to 0.6% more or fewer instructions.

Even so, the same code counts up to 0.8% more or fewer instructions when
its objects lie elsewhere in memory (:py:data:`PADS`; on 0cfd1c3, five
layouts: ``send`` 116.7-117.5k, ``chunks`` 1,509-1,521), and any change
of the code moves them. A scenario's figure is therefore the mean of
``--layouts`` layouts (3 by default); a difference between two commits
of less than about half a percent is no difference.

The script imports rbfly's public API only (``rbfly.streams``,
``rbfly.testing``) and nothing of ``perf/``, so that it measures other
commits as they are (the driver, Valgrind's runs and the report, is
:py:mod:`perf.instructions.callgrind`, which the traced processes do
not import): ``--root`` names the checkout whose rbfly is
measured (its extensions built in place), by default the one holding the
script. Compare figures of one machine, Python and Valgrind, and of the
same script (its text is the traced process's too): run one copy of it
against both checkouts. A run of all scenarios in 3 layouts takes about
10 minutes.

``--otel`` instruments the client (:py:func:`rbfly.streams.otel.instrument`,
with the OpenTelemetry SDK's providers and nothing exported): the cost of
tracing each path, against the same scenarios without it (a client not
instrumented runs the code it ran before: its figures are those of the
commit before the instrumentation, within the noise said above).

Example::

    python -m perf.instructions --json /tmp/instructions.json
    python -m perf.instructions --root /path/to/other/checkout send batch
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import sys
import typing as tp
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path

JsonDict = dict[str, tp.Any]

ROOT = Path(__file__).resolve().parents[2]
"""The checkout holding this script: its rbfly is measured by default."""

CHUNK = 1_000
"""Messages of a chunk of the stream the consuming scenarios read."""

BATCH = 100
"""Messages of a batch of the ``batch`` scenario."""

MANY = 1_000
"""Messages of a list of the ``many`` scenario (as ``rbfly-many`` of ``perf.publish``)."""

STREAM = 'bench'

MARK_START = 'getppid'
MARK_STOP = 'getpgrp'
"""
The C functions Callgrind dumps its counters before (:py:func:`mark_start`,
:py:func:`mark_stop`).
"""

PADS = (0, 10, 100, 1_000, 3_000, 30, 300, 2_000)
"""
The layouts of the traced process's memory: before it imports rbfly, it
allocates this many objects (of 0-499 bytes, kept), so that the same code
runs with its objects at other addresses.
"""

CLIENT_OPTIONS: dict[str, tp.Any] = {'heartbeat': 0, 'read_pause': 0}
"""
Options of the client: no timer that fires in some runs only (heartbeat),
no pause that depends on the chunks' age (``read_pause``).
"""

Client = tp.Any  # rbfly.streams.StreamsClient of the checkout measured

def mark_start() -> None:
    """
    Callgrind dumps (and zeroes) its counters here: the loop starts.

    The objects made so far (the interpreter's, the modules', the
    messages) are collected and frozen first, out of the garbage
    collector's sight: a full collection traverses them all, and one
    falls into a loop's count, or not, by the allocations made before the
    loop. On two commits with the same code on the path of ``many``, a
    full collection in the count of 9,000 messages but not in that of
    3,000 made 690 instructions a message of 527 (Callgrind's breakdown:
    ``list_traverse`` and the collector under the frame reader's
    ``memoryview``). Collections of what the loop makes are counted.
    """
    gc.collect()
    gc.freeze()
    os.getppid()

def mark_stop() -> None:
    """Callgrind dumps its counters here: the loop has ended."""
    os.getpgrp()

def message(i: int) -> str:
    """Message ``i``: a 10-byte string, as the other benchmarks of ``perf/``."""
    return '{:010d}'.format(i)

#
# scenarios: each runs its loop between the two marks
#

async def publish_send(client: Client, messages: Sequence[str]) -> None:
    async with client.publisher(STREAM, name='bench') as publisher:
        send = publisher.send
        mark_start()
        for m in messages:
            await send(m)
        mark_stop()

async def publish_batch(client: Client, messages: Sequence[str]) -> None:
    from rbfly.streams import PublisherBatchFast

    async with client.publisher(STREAM, name='bench', cls=PublisherBatchFast) as publisher:
        batch = publisher.batch
        mark_start()
        for start in range(0, len(messages), BATCH):
            for m in messages[start:start + BATCH]:
                batch(m)
            await publisher.flush()
        mark_stop()

async def publish_pipelined(client: Client, messages: Sequence[str]) -> None:
    await _pipelined(client, 'send', messages)

async def publish_many(client: Client, messages: Sequence[str]) -> None:
    lists = [list(messages[i:i + MANY]) for i in range(0, len(messages), MANY)]
    await _pipelined(client, 'send_many', lists)

async def _pipelined(client: Client, method: str, items: Sequence[tp.Any]) -> None:
    """
    Await a pipelined publisher's ``method`` for each of ``items``, then
    its ``flush()``: the loop of ``pipelined`` (a message an item) and of
    ``many`` (a list an item), one loop so that their figures differ only
    by the method called.
    """
    from rbfly.streams import PublisherPipelined

    async with client.publisher(STREAM, name='bench', cls=PublisherPipelined) as publisher:
        send = getattr(publisher, method)
        mark_start()
        for item in items:
            await send(item)
        await publisher.flush()
        mark_stop()

async def prepare(client: Client, messages: Sequence[str]) -> None:
    """Publish the messages to be read, in chunks of :py:data:`CHUNK`."""
    from rbfly.streams import PublisherBatchFast

    async with client.publisher(STREAM, name='prepare', cls=PublisherBatchFast) as publisher:
        for start in range(0, len(messages), CHUNK):
            for m in messages[start:start + CHUNK]:
                publisher.batch(m)
            await publisher.flush()

async def consume_iter(client: Client, messages: Sequence[str]) -> None:
    from rbfly.streams import Offset

    await prepare(client, messages)
    count = len(messages)
    n = 0
    body = None
    async with contextlib.aclosing(client.subscribe(STREAM, offset=Offset.FIRST)) as bodies:
        mark_start()
        async for body in bodies:  # noqa: B007 - the last one is checked below
            n += 1
            if n == count:
                break
        mark_stop()
    check_last(body, messages)

async def consume_chunks(client: Client, messages: Sequence[str]) -> None:
    from rbfly.streams import Offset

    await prepare(client, messages)
    count = len(messages)
    n = 0
    chunk: tp.Any = [None]
    chunks = client.subscribe_chunks(STREAM, offset=Offset.FIRST)
    async with contextlib.aclosing(chunks):
        mark_start()
        async for chunk in chunks:
            n += len(chunk)
            if n >= count:
                break
        mark_stop()
    check_last(chunk[-1].body, messages)

def check_last(body: object, messages: Sequence[str]) -> None:
    if body != messages[-1]:
        raise RuntimeError('read {!r} last, expected {!r}'.format(body, messages[-1]))

@dataclass(frozen=True)
class Scenario:
    """
    :param run: The scenario, given a connected client and its messages.
    :param counts: The two message counts it runs with.
    :param what: What its loop does, for the report.
    """
    run: Callable[[Client, Sequence[str]], Awaitable[None]]
    counts: tuple[int, int]
    what: str

SCENARIOS: dict[str, Scenario] = {
    'send': Scenario(
        publish_send, (400, 1_200), 'Publisher: await send(m), a confirmation each',
    ),
    'batch': Scenario(
        publish_batch, (10_000, 30_000),
        'PublisherBatchFast: {} x batch(m), await flush()'.format(BATCH),
    ),
    'pipelined': Scenario(
        publish_pipelined, (3_000, 9_000), 'PublisherPipelined: await send(m), flush()',
    ),
    'many': Scenario(
        publish_many, (3_000, 9_000),
        'PublisherPipelined: await send_many(ms), {:,} a list, flush()'.format(MANY),
    ),
    'async-for': Scenario(
        consume_iter, (10_000, 30_000),
        'async for over subscribe() ({:,}-message chunks)'.format(CHUNK),
    ),
    'chunks': Scenario(
        consume_chunks, (20_000, 60_000),
        'async for over subscribe_chunks() ({:,}-message chunks)'.format(CHUNK),
    ),
}

#
# the processes: the client (traced), the broker, the dry run
#

def use_root(root: Path) -> None:
    """Import rbfly from ``root``; refuse any other rbfly."""
    sys.path.insert(0, str(root))
    import rbfly

    where = Path(rbfly.__file__).resolve().parent
    if where != (root / 'rbfly').resolve():
        raise RuntimeError('rbfly imported from {}, not from {}'.format(where, root))

def run_loop(main: Coroutine[tp.Any, tp.Any, None], loop: str) -> None:
    """Run ``main`` on the event loop named (``asyncio`` or ``uvloop``)."""
    factory: Callable[[], asyncio.AbstractEventLoop] | None = None
    if loop == 'uvloop':
        import uvloop

        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(main)

def instrument(client: Client) -> None:
    """
    Instrument a client (``--otel``): :py:func:`rbfly.streams.otel.instrument`
    with the OpenTelemetry SDK's tracer and meter providers, spans made,
    sampled and ended, and exported nowhere (no span processor, no metric
    reader): the client's cost of tracing, not an exporter's.
    """
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider

    from rbfly.streams.otel import instrument

    instrument(client, tracer_provider=TracerProvider(), meter_provider=MeterProvider())

async def run_client(url: str, name: str, count: int, otel: bool = False) -> None:
    """One scenario with ``count`` messages, against the broker at ``url``."""
    from rbfly.streams import streams_client

    messages = [message(i) for i in range(count)]
    client = streams_client(url, **CLIENT_OPTIONS)
    if otel:
        instrument(client)
    try:
        await client.create_stream(STREAM)
        await SCENARIOS[name].run(client, messages)
    finally:
        await client.disconnect()

async def serve() -> None:
    """The fake broker: print its URL, serve until stdin is closed."""
    from rbfly.testing import FakeBroker

    loop = asyncio.get_running_loop()
    async with FakeBroker() as broker:
        print(broker.url, flush=True)
        await loop.run_in_executor(None, sys.stdin.buffer.read)

async def dry_run(names: Sequence[str], count: int, otel: bool = False) -> None:
    """Each scenario once, with the fake broker in this process, no Valgrind."""
    from rbfly.testing import FakeBroker

    for name in names:
        async with FakeBroker() as broker:
            await run_client(broker.url, name, count, otel)
        log('{}: {:,} messages, ok'.format(name, count))

def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)

def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog='python -m perf.instructions',
        description='Instructions per message of rbfly publishing and consuming (Callgrind)',
    )
    parser.add_argument(
        'scenarios', nargs='*', metavar='SCENARIO',
        help='of {} (default: all)'.format(', '.join(SCENARIOS)),
    )
    parser.add_argument(
        '--repeat', type=int, default=1,
        help='runs of each scenario in each layout (they count the same: 1 is enough)',
    )
    parser.add_argument(
        '--counts', type=int, nargs=2, metavar=('N1', 'N2'),
        help="the two message counts, instead of each scenario's",
    )
    parser.add_argument('--json', type=Path, help='write the results here')
    parser.add_argument(
        '--root', type=Path, default=ROOT,
        help='checkout whose rbfly is measured (default: %(default)s)',
    )
    parser.add_argument('--loop', choices=('asyncio', 'uvloop'), default='asyncio')
    parser.add_argument('--valgrind', default='valgrind')
    parser.add_argument(
        '--otel', action='store_true',
        help='instrument the client (rbfly.streams.otel, the SDK, nothing exported)',
    )
    parser.add_argument('--keep', action='store_true', help='keep the Callgrind files')
    parser.add_argument(
        '--layouts', type=int, default=3, choices=range(1, len(PADS) + 1), metavar='K',
        help='memory layouts each scenario runs in, 1-{} (default: %(default)s)'.format(
            len(PADS)),
    )
    parser.add_argument('--layout-pad', type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument(
        '--dry-run', action='store_true',
        help='run each scenario once with few messages, no Valgrind, the broker in-process',
    )
    # the child processes
    parser.add_argument('--client', nargs=3, metavar=('URL', 'SCENARIO', 'COUNT'),
                        help=argparse.SUPPRESS)
    parser.add_argument('--serve', action='store_true', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    unknown = [s for s in args.scenarios if s not in SCENARIOS]
    if unknown:
        parser.error('unknown scenario: {}'.format(', '.join(unknown)))
    args.scenarios = args.scenarios or list(SCENARIOS)
    if args.repeat < 1:
        parser.error('--repeat must be at least 1')
    if args.counts and not 0 < args.counts[0] < args.counts[1]:
        parser.error('--counts must be two increasing positive counts')
    return args

def execute(args: argparse.Namespace) -> tuple[int, str, JsonDict | None]:
    """
    Run a child process as the arguments say (the traced client, the
    broker, or the dry run): the exit status, the text to print, and the
    results' document (``None``: a child has none). The measurement
    itself, Valgrind and the report, is :py:func:`perf.instructions.callgrind.execute`'s.
    """
    root = args.root.resolve()
    if args.client:
        pad = [bytes(i % 500) for i in range(args.layout_pad)]  # noqa: F841 - kept alive
        use_root(root)
        url, name, count = args.client
        run_loop(run_client(url, name, int(count), args.otel), args.loop)
        return 0, '', None
    if args.serve:
        use_root(root)
        run_loop(serve(), 'asyncio')
        return 0, '', None
    if args.dry_run:
        use_root(root)
        run_loop(dry_run(args.scenarios, CHUNK, args.otel), args.loop)
        return 0, '', None
    log('measure with python -m perf.instructions (this script runs its child processes)')
    return 2, '', None

def main(argv: Sequence[str] | None = None) -> int:
    """
    Run as a script: how the staged copy runs in the child processes
    (``python -m perf.instructions`` runs the driver,
    :py:func:`perf.instructions.callgrind.execute`, through the
    benchmarks' shared ``main()``).
    """
    args = parse_args(argv)
    status, text, doc = execute(args)
    if text:
        print(text)
    if args.json and doc is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=2) + '\n')
    return status

if __name__ == '__main__':
    sys.exit(main())
