"""
A message that is not AMQP 1.0 (published as raw bytes) in a stream read
as AMQP, against real brokers: the error names the stream and the
message's offset; ``on_decode_error`` skips it or hands out its bytes,
and offset tracking goes on past it.
"""

import asyncio

import pytest

from rbfly.error import AMQPDecodeError, MessageDecodeError
from rbfly.streams import Offset, PublisherBin, StreamsClient, get_message_ctx

RAW = b'\xffnot amqp'

async def publish(client: StreamsClient, stream: str, *bodies: str | bytes) -> None:
    """Each body as a message of its own, AMQP for strings, raw for bytes."""
    async with client.publisher(stream) as amqp, \
            client.publisher(stream, cls=PublisherBin) as raw:
        for body in bodies:
            if isinstance(body, bytes):
                await raw.send(body)
            else:
                await amqp.send(body)

async def read(
        client: StreamsClient, stream: str, count: int, **options: object,
) -> list[tuple[int, object]]:
    received: list[tuple[int, object]] = []
    async with asyncio.timeout(30):
        async for body in client.subscribe(  # type: ignore[call-overload]
                stream, offset=Offset.FIRST, **options):
            received.append((get_message_ctx().stream_offset, body))
            if len(received) == count:
                break
    return received

async def test_error_names_stream_and_offset(client: StreamsClient, stream: str) -> None:
    """The subscription ends with the stream, the offset and the fix."""
    await publish(client, stream, 'a', RAW, 'b')
    received = []
    with pytest.raises(MessageDecodeError) as info:
        async with asyncio.timeout(30):
            async for body in client.subscribe(stream, offset=Offset.FIRST):
                received.append(body)
    assert received == ['a']
    error = info.value
    assert isinstance(error, AMQPDecodeError)
    assert (error.stream, error.stream_offset, error.offset) == (stream, 1, 0)
    assert 'offset 1 of stream {!r}'.format(stream) in str(error)
    assert 'amqp=False' in str(error)

@pytest.mark.parametrize('action, expected', [
    ('skip', [(0, 'a'), (2, 'b')]),
    ('raw', [(0, 'a'), (1, RAW), (2, 'b')]),
])
async def test_on_decode_error(
        client: StreamsClient, stream: str, action: str, expected: list[tuple[int, object]],
) -> None:
    """Skipped, or handed out as bytes, in order."""
    await publish(client, stream, 'a', RAW, 'b')
    assert await read(client, stream, len(expected), on_decode_error=action) == expected

async def test_skip_keeps_tracking(client: StreamsClient, stream: str) -> None:
    """
    Skipped messages count as offsets: the offset committed after one is
    the next message's, and the next subscription resumes after it.
    """
    await publish(client, stream, 'a', RAW, RAW, 'b')
    bodies = client.subscribe(stream, offset=Offset.reference('app'), name='app',
                              store_every=100, on_decode_error='skip')
    async with asyncio.timeout(30):
        assert await anext(bodies) == 'a'
        assert await anext(bodies) == 'b'
        await bodies.commit()
        assert await client.query_offset(stream, 'app') == 3
        await publish(client, stream, RAW, 'c')
        assert await anext(bodies) == 'c'
        # (the store wrote a tracking chunk: it takes an offset too)
        offset = get_message_ctx().stream_offset
        await bodies.commit()
        await bodies.aclose()
    assert await client.query_offset(stream, 'app') == offset
    await publish(client, stream, 'd')
    async with asyncio.timeout(30):
        async for body in client.subscribe(
                stream, offset=Offset.reference('app'), on_decode_error='skip'):
            assert body == 'd'
            break

async def test_bad_option(client: StreamsClient, stream: str) -> None:
    """An unknown action is refused before subscribing."""
    with pytest.raises(ValueError, match="on_decode_error must be one of 'raise'"):
        async for _ in client.subscribe(  # type: ignore[call-overload]
                stream, on_decode_error='ignore'):
            pass
