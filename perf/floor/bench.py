"""
The floor of a Python client: what the interpreter costs per message
before a client does anything, against what rbfly costs in all.

The performance goals ask rbfly for a third of the Java client's CPU per
message when publishing, and for the Java client's messages per CPU-second
when reading with ``async for``. An application written in Python pays
some CPU per message whatever client it uses: building the message, an
``await`` of each ``send``, an iteration of ``async for``. This script
measures those floors, without a broker and without an event loop (the
awaits here complete at once, as rbfly's do while there is room in the
window or a decoded chunk in the buffer), and rbfly's own decoding of a
chunk, so the report can say which goals the interpreter alone rules out.

Measured (client CPU µs per message, ``time.process_time``, the median of
``--rounds`` rounds of ``--count`` messages):

``build``
    ``'{:010d}'.format(i)``: the message of the publishing benchmarks
``await``
    ``await send(m)`` of a coroutine that returns at once
``publish-floor``
    both: the loop of ``perf.publish``'s pipelined scenario with a
    ``send`` that does nothing
``async-for``
    an ``async for`` over an iterator whose ``__anext__`` is a coroutine
    that returns at once
``decode``
    rbfly's ``decode_chunk`` of a chunk of 3,500 AMQP messages (10-byte
    string bodies, as ``perf.consume``'s big chunks), per message
``decode-binary``
    the same, ``amqp=False``

Example::

    python -m perf.floor --json perf/results/floor.json
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from perf.common import cli
from perf.common.results import JsonDict, env_metadata, format_table, log

CHUNK_MESSAGES = 3_500


def timed(body: Callable[[int], Any], count: int, rounds: int) -> JsonDict:
    """CPU µs per message of ``body(count)``, the median of the rounds."""
    values = []
    for _ in range(rounds):
        start = time.process_time()
        body(count)
        values.append((time.process_time() - start) / count * 1e6)
    return {'us_per_msg': statistics.median(values), 'rounds': values}


def run(coro: Coroutine[Any, Any, None]) -> None:
    """Drive a coroutine that never suspends (no event loop involved)."""
    try:
        coro.send(None)
    except StopIteration:
        return
    coro.close()
    raise RuntimeError('the coroutine suspended')


def build(count: int) -> None:
    for i in range(count):
        '{:010d}'.format(i)


async def _noop(message: object) -> int:
    return 0


def awaits(count: int) -> None:
    async def loop() -> None:
        send = _noop
        for i in range(count):
            await send(i)
    run(loop())


def publish_floor(count: int) -> None:
    async def loop() -> None:
        send = _noop
        for i in range(count):
            await send('{:010d}'.format(i))
    run(loop())


class _CoroIterator:
    def __init__(self, count: int) -> None:
        self.left = count

    def __aiter__(self) -> _CoroIterator:
        return self

    async def __anext__(self) -> int:
        self.left -= 1
        if self.left < 0:
            raise StopAsyncIteration
        return self.left


def async_for(count: int) -> None:
    async def loop() -> None:
        async for _ in _CoroIterator(count):
            pass
    run(loop())


def chunk_data() -> bytes:
    """A chunk of :py:data:`CHUNK_MESSAGES` AMQP string messages, as RabbitMQ stores it."""
    from rbfly.amqp import MessageCtx, encode_message
    from rbfly.testing.store import Entry, build_chunk

    entries = []
    for i in range(CHUNK_MESSAGES):
        data = encode_message(MessageCtx('{:010d}'.format(i)))
        entries.append(Entry(len(data).to_bytes(4, 'big') + data, 1))
    return build_chunk(entries, 0, 0).data


def decoder(amqp: bool) -> Callable[[int], None]:
    from rbfly.streams.protocol._chunk import decode_chunk

    data = chunk_data()

    def decode(count: int) -> None:
        for _ in range(count // CHUNK_MESSAGES):
            decode_chunk(data, 0, amqp)
    return decode


CASES: dict[str, Callable[[], Callable[[int], Any]]] = {
    'build': lambda: build,
    'await': lambda: awaits,
    'publish-floor': lambda: publish_floor,
    'async-for': lambda: async_for,
    'decode': lambda: decoder(True),
    'decode-binary': lambda: decoder(False),
}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = cli.parser('floor', 'The Python floor per message, and rbfly\'s decoding')
    parser.add_argument('--count', type=int, default=None, help='default: 1,050,000')
    parser.add_argument('--rounds', type=int, default=None, help='default: 5')
    parser.add_argument('--quick', action='store_true',
                        help='one round of 35,000 messages: the script works (recorded)')
    cli.add_json(parser)
    args = parser.parse_args(argv)
    args.count = args.count or (35_000 if args.quick else 1_050_000)
    args.rounds = args.rounds or (1 if args.quick else 5)
    if args.count < CHUNK_MESSAGES or args.rounds < 1:
        parser.error('--count must be at least {}, --rounds positive'.format(CHUNK_MESSAGES))
    return args


def run_floor(args: argparse.Namespace) -> cli.Outcome:
    results: dict[str, JsonDict] = {}
    for name, make in CASES.items():
        log('floor: {}'.format(name))
        count = args.count - args.count % CHUNK_MESSAGES if name.startswith('decode') \
            else args.count
        results[name] = timed(make(), count, args.rounds)
    text = format_table(
        ['case', 'CPU µs/msg (median)', 'rounds'],
        [[name, '{:.3f}'.format(r['us_per_msg']),
          ' '.join('{:.3f}'.format(v) for v in r['rounds'])] for name, r in results.items()],
    )
    return cli.Outcome(text, cli.json_documents(args.json, lambda: {
        'benchmark': 'floor',
        'params': {'count': args.count, 'rounds': args.rounds, 'quick': args.quick},
        'env': env_metadata(), 'results': results,
    }))


BENCHMARK = cli.Benchmark(parse_args, run_floor)
