"""
Bad input from the application, in one table: every public entry point
given a wrong type, an out-of-range value, a closed or foreign object, or
a name the broker refuses. Each case raises a typed error at the call,
whose message names the cause; then the same client publishes and reads a
message, to show it is still usable.

Plain argument errors are ``TypeError`` and ``ValueError`` (Python's
convention); broker refusals and state errors are rbfly's own
(:py:mod:`rbfly.streams.error`).
"""

import asyncio
import math
import typing as tp
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pytest

from rbfly.amqp import MessageCtx
from rbfly.error import AMQPEncodeError
from rbfly.streams import (
    FeatureNotSupported,
    MessageFilter,
    Offset,
    PublisherBatchFast,
    PublisherBin,
    StreamsClient,
    streams_client,
)
from rbfly.streams.error import (
    ConnectionLost,
    PreconditionFailed,
    PublisherError,
    StreamDoesNotExist,
)

from .conftest import URL

Call: tp.TypeAlias = Callable[[StreamsClient, str], Awaitable[object]]
Any: tp.TypeAlias = tp.Any

def missing() -> str:
    return 'rbfly-missing-{}'.format(uuid.uuid4().hex[:8])

@dataclass(frozen=True)
class Case:
    call: Call
    error: type[BaseException]
    match: str

async def sync(f: Callable[[], object]) -> object:
    return f()

async def iterate(it: Any) -> None:
    async with asyncio.timeout(5):
        async for _ in it:
            break

async def publish(client: StreamsClient, stream: str, message: Any, **options: Any) -> None:
    async with client.publisher(stream, **options) as pub:
        await pub.send(message)

async def used_after_context(client: StreamsClient, stream: str) -> None:
    async with client.publisher(stream) as pub:
        pass
    await pub.send('late')

async def foreign_publisher(client: StreamsClient, stream: str) -> None:
    other = streams_client(URL)
    try:
        async with other.publisher(stream) as pub:
            await other.disconnect()
            await pub.send('after its client disconnected')
    finally:
        await other.disconnect()

def bad(value: object) -> Any:
    """A value of the wrong type, past mypy."""
    return value

CASES: dict[str, Case] = {
    # the client and its options
    'url scheme': Case(lambda c, s: sync(lambda: streams_client('http://localhost/')),
                       ValueError, 'scheme'),
    'url port': Case(lambda c, s: sync(lambda: streams_client('rabbitmq-stream://h:99999/')),
                     ValueError, '(?i)port'),
    'unknown option': Case(lambda c, s: sync(lambda: streams_client(URL, colour='red')),
                           TypeError, 'colour'),
    'connect_timeout negative': Case(
        lambda c, s: sync(lambda: streams_client(URL, connect_timeout=-1)),
        ValueError, 'connect_timeout'),
    'credit 0': Case(lambda c, s: sync(lambda: streams_client(URL, credit=0)),
                     ValueError, 'credit'),
    'heartbeat negative': Case(lambda c, s: sync(lambda: streams_client(URL, heartbeat=-5)),
                               ValueError, 'heartbeat'),
    'crc_failure': Case(lambda c, s: sync(lambda: streams_client(URL, crc_failure='maybe')),
                        ValueError, 'crc_failure'),
    'buffer_bytes type': Case(lambda c, s: sync(lambda: streams_client(URL, buffer_bytes='1MB')),
                              ValueError, 'buffer_bytes'),
    # stream names and arguments
    'stream name empty': Case(lambda c, s: c.create_stream(''), ValueError, 'stream'),
    'stream name too long': Case(lambda c, s: c.create_stream('x' * 256), ValueError, '255'),
    'stream name type': Case(lambda c, s: c.create_stream(bad(5)), ValueError, 'stream name'),
    'stream name refused': Case(lambda c, s: c.create_stream('amq.rbfly'), PreconditionFailed,
                                'amq.rbfly'),
    'max_length_bytes negative': Case(
        lambda c, s: c.create_stream(missing(), max_length_bytes=-1),
        ValueError, 'max_length_bytes'),
    'max_age text': Case(lambda c, s: c.create_stream(missing(), max_age='forever'),
                         ValueError, 'max_age'),
    'max_age type': Case(lambda c, s: c.create_stream(missing(), max_age=bad(object())),
                         ValueError, 'max_age'),
    'delete missing': Case(lambda c, s: c.delete_stream(missing(), missing_ok=False),
                           StreamDoesNotExist, 'rbfly-missing'),
    'stats on 3.10': Case(lambda c, s: c.stream_stats(s), FeatureNotSupported, '3.11'),
    'resolve on 3.10': Case(lambda c, s: c.resolve_offset(s, Offset.FIRST),
                            FeatureNotSupported, '4.3'),
    # publishers
    'publisher on missing stream': Case(lambda c, s: publish(c, missing(), 'x'),
                                        StreamDoesNotExist, 'rbfly-missing'),
    'publisher class': Case(lambda c, s: publish(c, s, 'x', cls=int), TypeError, 'cls'),
    'publisher name type': Case(lambda c, s: publish(c, s, 'x', name=5), ValueError, 'name'),
    'publisher name too long': Case(lambda c, s: publish(c, s, 'x', name='n' * 256),
                                    ValueError, 'name'),
    'name without dedup': Case(lambda c, s: publish(c, s, 'x', name='n', dedup=False),
                               ValueError, 'dedup'),
    'sub_entry_size 0': Case(
        lambda c, s: publish(c, s, 'x', cls=PublisherBatchFast, sub_entry_size=0),
        ValueError, 'sub_entry_size'),
    'compression unknown': Case(
        lambda c, s: publish(c, s, 'x', cls=PublisherBatchFast, sub_entry_size=10,
                             compression='rar'),
        ValueError, 'rar'),
    'body object': Case(lambda c, s: publish(c, s, object()), AMQPEncodeError, 'object'),
    'body set': Case(lambda c, s: publish(c, s, {1, 2}), AMQPEncodeError, 'set'),
    'body in a map key': Case(lambda c, s: publish(c, s, {object(): 1}), AMQPEncodeError,
                              'object'),
    'app property value': Case(
        lambda c, s: publish(c, s, MessageCtx('x', app_properties={'k': bad(object())})),
        AMQPEncodeError, 'object'),
    'body too big': Case(lambda c, s: publish(c, s, b'x' * (2 * 1024 * 1024)),
                         ValueError, '(?i)frame'),
    'binary publisher given text': Case(lambda c, s: publish(c, s, 'text', cls=PublisherBin),
                                        TypeError, 'bytes'),
    'publisher after its context': Case(used_after_context, PublisherError, '(?i)closed'),
    'publisher of a disconnected client': Case(foreign_publisher, ConnectionLost,
                                               'disconnected'),
    'query_publisher_sequence empty name': Case(
        lambda c, s: c.query_publisher_sequence(s, ''), ValueError, 'name'),
    # subscriptions
    'offset type': Case(lambda c, s: iterate(c.subscribe(s, offset=bad(-1))),
                        TypeError, 'offset'),
    'offset negative': Case(lambda c, s: iterate(c.subscribe(s, offset=Offset.offset(-1))),
                            ValueError, 'offset'),
    'offset too big': Case(lambda c, s: iterate(c.subscribe(s, offset=Offset.offset(2 ** 64))),
                           ValueError, 'offset'),
    'timestamp type': Case(
        lambda c, s: iterate(c.subscribe(s, offset=Offset.timestamp(bad('now')))),
        ValueError, 'timestamp'),
    'timestamp nan': Case(
        lambda c, s: iterate(c.subscribe(s, offset=Offset.timestamp(math.nan))),
        ValueError, 'timestamp'),
    'subscribe missing stream': Case(lambda c, s: iterate(c.subscribe(missing())),
                                     StreamDoesNotExist, 'rbfly-missing'),
    'credit 0 on subscribe': Case(lambda c, s: iterate(c.subscribe(s, credit=0)),
                                  ValueError, 'credit'),
    'filter type': Case(lambda c, s: iterate(c.subscribe(s, filter=bad('red'))),
                        TypeError, 'filter'),
    'filter on 3.10': Case(
        lambda c, s: iterate(c.subscribe(s, filter=MessageFilter(lambda m: None, {'a'}))),
        FeatureNotSupported, '3.13'),
    'single active without name': Case(lambda c, s: iterate(c.subscribe(s, single_active=True)),
                                       ValueError, 'name'),
    'timeout negative': Case(lambda c, s: iterate(c.subscribe(s, timeout=-1)),
                             ValueError, 'timeout'),
    # offsets
    'reference empty': Case(lambda c, s: c.query_offset(s, ''), ValueError, 'reference'),
    'reference too long': Case(lambda c, s: c.query_offset(s, 'r' * 300), ValueError, '255'),
    'write_offset negative': Case(lambda c, s: c.write_offset(s, 'r', -5), ValueError, 'offset'),
    'write_offset type': Case(lambda c, s: c.write_offset(s, 'r', bad('five')),
                              TypeError, 'offset'),
    # super streams
    'super stream partitions 0': Case(lambda c, s: c.create_super_stream(missing(), 0),
                                      ValueError, 'partition'),
    'super stream nothing': Case(lambda c, s: c.create_super_stream(missing()),
                                 ValueError, 'partitions'),
    'super stream no keys': Case(lambda c, s: c.create_super_stream(missing(), binding_keys=[]),
                                 ValueError, 'binding keys'),
    'route key type': Case(lambda c, s: c.route(s, bad(5)), TypeError, 'routing_key'),
}

@pytest.mark.parametrize('case', CASES)
async def test_bad_input(client310: StreamsClient, stream: str, case: str) -> None:
    """The typed error at the call, naming the cause; the client usable after it."""
    c = CASES[case]
    async with asyncio.timeout(20):
        with pytest.raises(c.error, match=c.match):
            await c.call(client310, stream)
        async with client310.publisher(stream) as pub:
            await pub.send('still usable')
        async for body in client310.subscribe(stream, offset=Offset.FIRST):
            assert body == 'still usable'
            break
