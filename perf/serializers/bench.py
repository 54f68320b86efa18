"""
The cost of a serializer per message (:py:mod:`rbfly.streams.serializers`),
beside the plain path, without a broker and without an event loop (as
:py:mod:`perf.floor`): the client CPU a publisher and a subscription spend
on a message of an order, ``{'order': i, 'total': i * 10, 'currency':
'EUR'}``, handed over as it is (an AMQP map, encoded by rbfly's codec) or
through a serializer (the body a data section of JSON or msgpack bytes,
the content type in the properties).

Measured (client CPU µs per message, ``time.process_time``, the median of
``--rounds`` rounds of ``--count`` messages):

``publish-<case>``
    ``PublisherBatchFast.batch`` of each message (with a serializer: its
    encoding, at the publisher's entry point) and the Publish frames of
    batches of 1,000 (``PublishEncoder.encode``): what a publisher spends
    on a message before the socket
``consume-<case>``
    ``async for`` over a subscription's bodies (``Bodies``, compiled),
    the chunks of 1,000 messages decoded from their bytes
    (``decode_chunk``); with a serializer, through ``Decoded``: the
    content type checked, the body deserialized

``<case>`` is ``plain`` (no serializer: the path as it was),
``json`` (:py:class:`~rbfly.streams.serializers.JSONSerializer`) or
``msgpack`` (:py:class:`~rbfly.streams.serializers.MsgpackSerializer`)
or ``msgspec`` (:py:class:`~rbfly.streams.serializers.MsgspecSerializer`
of ``dict[str, Any]``, JSON); those two skipped without their package.

Example::

    python -m perf.serializers --json perf/results/serializers.json
"""

from __future__ import annotations

import argparse
import statistics
import time
import typing as tp
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence

from perf.common import cli
from perf.common.results import JsonDict, env_metadata, format_table, log

BATCH = 1_000


def timed(body: Callable[[int], tp.Any], count: int, rounds: int) -> JsonDict:
    """CPU µs per message of ``body(count)``, the median of the rounds."""
    values = []
    for _ in range(rounds):
        start = time.process_time()
        body(count)
        values.append((time.process_time() - start) / count * 1e6)
    return {'us_per_msg': statistics.median(values), 'rounds': values}


def drive(coro: Coroutine[tp.Any, tp.Any, None]) -> None:
    """Drive a coroutine that never suspends (no event loop involved)."""
    try:
        coro.send(None)
    except StopIteration:
        return
    coro.close()
    raise RuntimeError('the coroutine suspended')


def order(i: int) -> tp.Any:
    return {'order': i, 'total': i * 10, 'currency': 'EUR'}


def codec_of(case: str) -> tp.Any:
    """The codec of a case (``None``: plain)."""
    from rbfly.streams.serializers import (
        Codec,
        JSONSerializer,
        MsgpackSerializer,
        MsgspecSerializer,
    )

    if case == 'plain':
        return None
    if case == 'msgspec':
        return Codec(MsgspecSerializer(dict[str, tp.Any]))
    return Codec(JSONSerializer() if case == 'json' else MsgpackSerializer())


class _Host:
    """What a publisher asks of its client: its counters (nothing is sent)."""
    def __init__(self) -> None:
        from rbfly.streams.metrics import Counters

        self.counters = Counters()
        self.spin = 0.0


def publisher(case: str) -> Callable[[int], None]:
    from rbfly.streams.protocol._publish import PublishEncoder
    from rbfly.streams.publishers.awaited import PublisherBatchFast
    from rbfly.streams.publishers.options import PublisherOptions
    from rbfly.streams.publishers.serializing import serializing_class

    codec = codec_of(case)
    # a publisher given a serializer is of its class's serializing subclass
    cls = PublisherBatchFast if codec is None else serializing_class(PublisherBatchFast)
    pub = cls(
        tp.cast(tp.Any, _Host()), 'perf', 1, 'perf', 0,
        options=PublisherOptions(serializer=codec),
    )
    encoder = PublishEncoder(1 << 20)
    orders = [order(i) for i in range(BATCH)]

    def publish(count: int) -> None:
        batch = pub.batch
        data = pub._data  # the batch the publisher collects (flush would send it)
        pid = 1
        for _ in range(count // BATCH):
            for o in orders:
                batch(o)
            start = 0
            while start < BATCH:
                n, _ = encoder.encode(1, data, start, pid + start)
                start += n
            pid += BATCH
            data.clear()
    return publish


def chunk(case: str) -> bytes:
    """A chunk of :py:data:`BATCH` orders, as RabbitMQ stores it."""
    from rbfly.amqp import MessageCtx, encode_message
    from rbfly.testing.store import Entry, build_chunk

    codec = codec_of(case)
    entries = []
    for i in range(BATCH):
        msg = MessageCtx(order(i)) if codec is None else codec.message(order(i))
        data = encode_message(msg)
        entries.append(Entry(len(data).to_bytes(4, 'big') + data, 1))
    return build_chunk(entries, 0, 0).data


def consumer(case: str) -> Callable[[int], None]:
    from rbfly.streams.protocol._chunk import decode_chunk
    from rbfly.streams.subscriptions._bodies import Bodies
    from rbfly.streams.subscriptions.decoded import Decoded

    data = chunk(case)
    codec = codec_of(case)

    def consume(count: int) -> None:
        async def chunks() -> AsyncIterator[list[tp.Any]]:
            for _ in range(count // BATCH):
                yield decode_chunk(data, 0, True)[1]

        async def loop() -> None:
            bodies = Bodies(tp.cast(tp.Any, chunks()))
            iterator = bodies if codec is None else Decoded(bodies, codec, 'perf')
            async for body in iterator:
                assert tp.cast(tp.Any, body)['currency'] == 'EUR'
        drive(loop())
    return consume


def cases() -> dict[str, Callable[[], Callable[[int], tp.Any]]]:
    """The cases measured here (msgpack's only with the package)."""
    import importlib.util

    kinds = ['plain', 'json']
    for package in ('msgpack', 'msgspec'):
        if importlib.util.find_spec(package) is not None:
            kinds.append(package)
        else:
            log('serializers: no {} package, its cases are skipped'.format(package))
    found: dict[str, Callable[[], Callable[[int], tp.Any]]] = {}
    for kind in kinds:
        found['publish-' + kind] = lambda kind=kind: publisher(kind)  # type: ignore[misc]
    for kind in kinds:
        found['consume-' + kind] = lambda kind=kind: consumer(kind)  # type: ignore[misc]
    return found


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = cli.parser('serializers', 'The cost of serializers per message')
    parser.add_argument('--count', type=int, default=200_000)
    parser.add_argument('--rounds', type=int, default=5)
    cli.add_json(parser)
    args = parser.parse_args(argv)
    if args.count < BATCH or args.rounds < 1:
        parser.error('--count must be at least {}, --rounds positive'.format(BATCH))
    return args


def run_serializers(args: argparse.Namespace) -> cli.Outcome:
    results: dict[str, JsonDict] = {}
    count = args.count - args.count % BATCH
    for name, make in cases().items():
        log('serializers: {}'.format(name))
        results[name] = timed(make(), count, args.rounds)
    plain = {kind: results[kind + '-plain']['us_per_msg'] for kind in ('publish', 'consume')}
    rows = []
    for name, r in results.items():
        base = plain[name.split('-')[0]]
        rows.append([
            name, '{:.3f}'.format(r['us_per_msg']), '{:+.3f}'.format(r['us_per_msg'] - base),
            ' '.join('{:.3f}'.format(v) for v in r['rounds']),
        ])
    text = format_table(['case', 'CPU µs/msg (median)', 'beside plain', 'rounds'], rows)
    return cli.Outcome(text, cli.json_documents(args.json, lambda: {
        'benchmark': 'serializers', 'params': {'count': count, 'rounds': args.rounds},
        'env': env_metadata(), 'results': results,
    }))


BENCHMARK = cli.Benchmark(parse_args, run_serializers)
