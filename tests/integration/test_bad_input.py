"""
Bad input from the application, in one table: every public entry point
given a wrong type, an out-of-range value, a closed or foreign object, or
a name the broker refuses. Each case raises a typed error at the call,
whose message names the cause; then the same client publishes and reads a
message, to show it is still usable.

Plain argument errors are ``TypeError`` and ``ValueError`` (Python's
convention); broker refusals and state errors are rbfly's own
(:py:mod:`rbfly.streams.error`).

The cases run on RabbitMQ 3.10, but for those that need a feature of 3.11+
(filtering, super streams), which run on the 4.x broker (``broker='4'``).
Where a case found a confusing error (an ``AttributeError``, a type
comparison, an ``OverflowError``, an error at the first iteration or
send rather than at the call, a hang, a connection the broker closed),
the library was fixed and the case stays as its regression test.
"""

import asyncio
import contextlib
import math
import typing as tp
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import pytest

from rbfly.amqp import MessageCtx
from rbfly.error import AMQPEncodeError
from rbfly.streams import (
    CreditOnTake,
    FeatureNotSupported,
    MessageFilter,
    Offset,
    PublisherBatchFast,
    PublisherBatchLimit,
    PublisherBin,
    PublisherPipelined,
    StreamsClient,
    streams_client,
)
from rbfly.streams.error import (
    ConnectionLost,
    PreconditionFailed,
    PublisherError,
    StreamAlreadyExists,
    StreamDoesNotExist,
)

from .conftest import URL

Call: tp.TypeAlias = Callable[[StreamsClient, str], Awaitable[object]]
Any: tp.TypeAlias = tp.Any

def missing() -> str:
    return 'rbfly-missing-{}'.format(uuid.uuid4().hex[:8])

@dataclass(frozen=True)
class Case:
    """
    A bad call, the error it raises at the call, a regular expression its
    message matches, and the broker it needs (``'3.10'`` or ``'4'``).
    """
    call: Call
    error: type[BaseException]
    match: str
    broker: tp.Literal['3.10', '4'] = '3.10'

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

async def pipelined_after_context(client: StreamsClient, stream: str) -> None:
    """
    The pipelined publisher's send, a C path checking only the
    publisher's error: once it buffered the message of a closed
    publisher, never to send it (and its flush waited for ever).
    """
    async with client.publisher(stream, cls=PublisherPipelined) as pub:
        pass
    await pub.send('late')

async def batch_max_len(client: StreamsClient, stream: str, max_len: Any) -> None:
    async with client.publisher(stream, cls=PublisherBatchLimit) as pub:
        await pub.batch('x', max_len=max_len)

async def after_disconnect(client: StreamsClient, stream: str) -> None:
    """The client used after disconnect(): it connects again, and errors stay typed."""
    await client.disconnect()
    await client.create_stream(stream, exist_ok=False)

def bad(value: object) -> Any:
    """A value of the wrong type, past mypy."""
    return value

CASES: dict[str, Case] = {
    # the client and its options
    'url scheme': Case(lambda c, s: sync(lambda: streams_client('http://localhost/')),
                       ValueError, 'scheme'),
    'url port': Case(lambda c, s: sync(lambda: streams_client('rabbitmq-stream://h:99999/')),
                     ValueError, '(?i)port'),
    'unknown option': Case(lambda c, s: sync(lambda: streams_client(URL, colour='red')),  # type: ignore[call-arg]
                           TypeError, 'colour'),
    'connect_timeout negative': Case(
        lambda c, s: sync(lambda: streams_client(URL, connect_timeout=-1)),
        ValueError, 'connect_timeout'),
    'credit 0': Case(lambda c, s: sync(lambda: streams_client(URL, credit=0)),
                     ValueError, 'credit'),
    'heartbeat negative': Case(lambda c, s: sync(lambda: streams_client(URL, heartbeat=-5)),
                               ValueError, 'heartbeat'),
    'crc_failure': Case(lambda c, s: sync(lambda: streams_client(URL, crc_failure='maybe')),  # type: ignore[arg-type]
                        ValueError, 'crc_failure'),
    'buffer_bytes type': Case(lambda c, s: sync(lambda: streams_client(URL, buffer_bytes='1MB')),  # type: ignore[arg-type]
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

    # more of the client and its options
    'url type': Case(lambda c, s: sync(lambda: streams_client(bad(5552))), TypeError, 'uri'),
    'url list of bytes': Case(lambda c, s: sync(lambda: streams_client(bad([b'rabbitmq']))),
                              TypeError, 'uri'),
    'url port negative': Case(lambda c, s: sync(lambda: streams_client('rabbitmq-stream://h:-1/')),
                              ValueError, '(?i)port'),
    'request_timeout negative': Case(
        lambda c, s: sync(lambda: streams_client(URL, request_timeout=-0.5)),
        ValueError, 'request_timeout'),
    'frame_max type': Case(lambda c, s: sync(lambda: streams_client(URL, frame_max=bad('1M'))),
                           ValueError, 'frame_max'),
    'sasl_mechanism': Case(lambda c, s: sync(lambda: streams_client(URL, sasl_mechanism='MD5')),
                           ValueError, 'sasl_mechanism'),
    'on_connection not callable': Case(
        lambda c, s: sync(lambda: streams_client(URL, on_connection=bad(1))),
        TypeError, 'on_connection'),
    # more stream arguments; the broker closed the connection on a malformed max-age
    'arguments not a mapping': Case(lambda c, s: c.create_stream(missing(), arguments=bad('x')),
                                    TypeError, 'arguments'),
    'argument value type': Case(
        lambda c, s: c.create_stream(missing(), arguments=bad({'max-age': 7})),
        TypeError, 'arguments'),
    'max-age argument malformed': Case(
        lambda c, s: c.create_stream(missing(), arguments={'max-age': 'a week'}),
        ValueError, "'max-age'"),
    'max-length-bytes argument malformed': Case(
        lambda c, s: c.create_stream(missing(), arguments={'max-length-bytes': '1GB'}),
        ValueError, "'max-length-bytes'"),
    'max_length_bytes type': Case(
        lambda c, s: c.create_stream(missing(), max_length_bytes=bad(1.5)),
        ValueError, 'max_length_bytes'),
    'filter_size out of range': Case(lambda c, s: c.create_stream(missing(), filter_size=8),
                                     ValueError, 'filter_size'),
    'leader_locator unknown': Case(
        lambda c, s: c.create_stream(missing(), leader_locator='nearest'),
        ValueError, 'leader_locator'),
    'stream exists': Case(lambda c, s: c.create_stream(s, exist_ok=False),
                          StreamAlreadyExists, 'rbfly-test'),
    'metadata of a missing stream': Case(lambda c, s: c.stream_metadata(missing()),
                                         StreamDoesNotExist, 'rbfly-missing'),
    'client after disconnect': Case(after_disconnect, StreamAlreadyExists, 'rbfly-test'),
    # more publishers
    'publisher class not a class': Case(lambda c, s: publish(c, s, 'x', cls='Publisher'),
                                        TypeError, 'cls'),
    'dedup not a bool': Case(lambda c, s: publish(c, s, 'x', dedup='no'), TypeError, 'dedup'),
    'filter_extract not callable': Case(lambda c, s: publish(c, s, 'x', filter_extract='k'),
                                        TypeError, 'filter_extract'),
    'sub_entry_size type': Case(
        lambda c, s: publish(c, s, 'x', cls=PublisherBatchFast, sub_entry_size='5'),
        ValueError, 'sub_entry_size'),
    'window 0': Case(lambda c, s: publish(c, s, 'x', cls=PublisherPipelined, window=0),
                     ValueError, 'window'),
    'window of a Publisher': Case(lambda c, s: publish(c, s, 'x', window=10),
                                  ValueError, 'PublisherPipelined'),
    'window_bytes 0': Case(
        lambda c, s: publish(c, s, 'x', cls=PublisherPipelined, window_bytes=0),
        ValueError, 'window_bytes'),
    'window_bytes of a Publisher': Case(lambda c, s: publish(c, s, 'x', window_bytes=1 << 20),
                                        ValueError, 'PublisherPipelined'),
    'confirm_timeout negative': Case(lambda c, s: publish(c, s, 'x', confirm_timeout=-1),
                                     ValueError, 'confirm_timeout'),
    'body integer out of range': Case(lambda c, s: publish(c, s, 2 ** 70), AMQPEncodeError,
                                      'range'),
    'filter value type': Case(lambda c, s: publish(c, s, 'x', filter_extract=lambda m: bad(5)),
                              TypeError, 'filter value', broker='4'),
    'pipelined after its context': Case(pipelined_after_context, PublisherError, 'closed'),
    'batch max_len 0': Case(lambda c, s: batch_max_len(c, s, 0), ValueError, 'max_len'),
    'batch max_len type': Case(lambda c, s: batch_max_len(c, s, 'ten'), ValueError, 'max_len'),
    # more subscriptions
    'timestamp past int64': Case(
        lambda c, s: iterate(c.subscribe(s, offset=Offset.timestamp(1e30))),
        ValueError, 'timestamp'),
    'offset reference too long': Case(
        lambda c, s: iterate(c.subscribe(s, offset=Offset.reference('r' * 256))),
        ValueError, '255'),
    'filter values a str': Case(
        lambda c, s: iterate(c.subscribe(s, filter=MessageFilter(lambda m: None, bad('red')))),
        TypeError, 'values'),
    'filter extract not callable': Case(
        lambda c, s: iterate(c.subscribe(s, filter=MessageFilter(bad('key'), {'red'}))),
        TypeError, 'extract'),
    'flow type': Case(lambda c, s: iterate(c.subscribe(s, flow=bad(2))), TypeError, 'flow'),
    'flow with credit': Case(
        lambda c, s: iterate(c.subscribe(s, flow=CreditOnTake(), credit=4)),
        ValueError, 'credit'),
    'buffer_bytes 0': Case(lambda c, s: iterate(c.subscribe(s, buffer_bytes=0)),
                           ValueError, 'buffer_bytes'),
    'store_every without name': Case(lambda c, s: iterate(c.subscribe(s, store_every=10)),
                                     ValueError, 'name'),
    'resolve_offset type': Case(lambda c, s: c.resolve_offset(s, bad(5)), TypeError, 'offset'),
    # more super streams
    'super stream partitions type': Case(lambda c, s: c.create_super_stream(missing(), bad('3')),
                                         TypeError, 'partitions'),
    'super stream keys a str': Case(
        lambda c, s: c.create_super_stream(missing(), binding_keys=bad('abc')),
        TypeError, 'binding_keys'),
    'super stream argument malformed': Case(
        lambda c, s: c.create_super_stream(missing(), 2, arguments={'max-age': '-1D'}),
        ValueError, "'max-age'", broker='4'),
    'super stream on 3.10': Case(lambda c, s: c.create_super_stream(missing(), 2),
                                 FeatureNotSupported, '3.13'),
    'super stream missing': Case(lambda c, s: c.super_stream_partitions(missing()),
                                 StreamDoesNotExist, 'rbfly-missing', broker='4'),
    'super stream publisher routing': Case(
        lambda c, s: c.super_stream_publisher(missing(), str, routing=bad('round-robin'))
        .__aenter__(),
        ValueError, 'routing', broker='4'),
}

@contextlib.asynccontextmanager
async def connected(url: str, stream: str) -> AsyncIterator[StreamsClient]:
    """A client of a broker with the test's stream, deleted at the end."""
    async with streams_client(url) as client:
        await client.create_stream(stream)
        try:
            yield client
        finally:
            await client.delete_stream(stream)

@pytest.mark.parametrize('case', CASES)
async def test_bad_input(request: pytest.FixtureRequest, stream: str, case: str) -> None:
    """
    The typed error at the call, naming the cause; the client usable after
    it: it publishes a message and reads it back (from a stream of the
    test's own, created by the client fixture).
    """
    c = CASES[case]
    # the URL fixture of the case's broker (it skips when the 4.x one is absent)
    url = request.getfixturevalue('url' if c.broker == '3.10' else 'url4')
    async with connected(url, stream) as client, asyncio.timeout(20):
        with pytest.raises(c.error, match=c.match):
            await c.call(client, stream)
        async with client.publisher(stream) as pub:
            await pub.send('still usable')
        async for body in client.subscribe(stream, offset=Offset.FIRST):
            assert body == 'still usable'
            break

def test_table_size() -> None:
    """The table covers at least 40 cases of bad input (issue 16, item 5)."""
    assert len(CASES) >= 40
