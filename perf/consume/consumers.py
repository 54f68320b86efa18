"""
The consumers measured by perf.consume: rbfly (this version or RbFly
0.10, the same code running in the child process) and rstream read a
stream from its first offset and return the run's figures; the ceiling
consumer measures what the broker delivers to a client that decodes nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any

from perf.common.errors import VerificationError
from perf.common.raw import CeilingError, Counter, connect, poll
from perf.common.results import (
    JsonDict,
)
from perf.common.streams import Stopwatch, endpoint, message, run_result

class Received:
    """What a run received: count, last body and its offset (if known)."""

    def __init__(self) -> None:
        self.count = 0
        self.last: Any = None
        self.offset: int | None = None

    def check(self, impl: str, count: int) -> None:
        body = self.last
        if isinstance(body, bytes | bytearray | memoryview):
            body = bytes(body).decode()   # rstream decodes AMQP strings as bytes
        expected = message(count - 1)
        if self.count != count or body != expected or self.offset not in (None, count - 1):
            raise VerificationError(
                '{}: received {} messages, the last {!r} at offset {}; expected {}'
                ' messages, the last {!r} at offset {}'.format(
                    impl, self.count, self.last, self.offset, count, expected, count - 1,
                )
            )


#
# rbfly (this version or 0.10; the same code runs in the child process)
#

WINDOW = 1_000
"""Messages per window of ``rbfly-windows`` (``subscribe_windows(max_messages=...)``)."""

async def _read_windows(
        client: Any, stream: str, count: int, watch: Stopwatch, received: Received,
) -> int:
    """Read windows of :py:data:`WINDOW` messages; stop the watch at ``count``."""
    from rbfly.streams import Offset

    n = 0
    it = client.subscribe_windows(stream, offset=Offset.FIRST, max_messages=WINDOW)
    try:
        async for window in it:
            n += len(window)
            if n >= count:
                break
        watch.stop()
    finally:
        await it.aclose()
    last = window[-1]
    received.last, received.offset = last.body, last.stream_offset
    return n

async def consume_rbfly(
        url: str, stream: str, count: int, chunks: bool, spin: float | None = None,
        read_pause: float | None = None, windows: bool = False,
) -> JsonDict:
    """
    Read a stream with rbfly (``async for``, or the chunk API with
    ``chunks``); with ``spin``, the subscription polls for the next chunk
    that far (``streams_client(spin=...)``; rbfly's default is no spin);
    with ``read_pause``, the client's pause of its reads of history
    (``streams_client(read_pause=...)``; 0: reads at once); with
    ``windows``, windows of :py:data:`WINDOW` messages
    (``subscribe_windows``).
    """
    from rbfly.streams import Offset, get_message_ctx, streams_client

    # RbFly 0.10 clients are no context managers; it has neither option
    options: dict[str, Any] = {} if spin is None else {'spin': spin}
    if read_pause is not None:
        options['read_pause'] = read_pause
    client = streams_client(url, **options)
    watch = Stopwatch()
    received = Received()
    try:
        # connect before the timing (rbfly before its client parts:
        # _get_protocol; RbFly 0.10: get_protocol)
        lib: Any = client
        connections = getattr(lib, '_connections', None)
        connect: Any = connections.get if connections is not None \
            else getattr(lib, '_get_protocol', None) or lib.get_protocol
        await connect()
        n = 0
        watch.start()
        if windows:
            n = await _read_windows(client, stream, count, watch, received)
        elif chunks:
            it: Any = client.subscribe_chunks(stream, offset=Offset.FIRST)
            try:
                async for chunk in it:
                    n += len(chunk)
                    if n >= count:
                        break
                watch.stop()
            finally:
                await it.aclose()
            last = chunk[-1]
            received.last, received.offset = last.body, last.stream_offset
        else:
            it = client.subscribe(stream, offset=Offset.FIRST)
            try:
                body = None
                async for body in it:  # noqa: B007 (the last body is checked)
                    n += 1
                    if n >= count:
                        break
                watch.stop()
                received.last, received.offset = body, get_message_ctx().stream_offset
            finally:
                await it.aclose()
        received.count = n
    finally:
        await client.disconnect()
    received.check('rbfly', count)
    return run_result(count, watch)


#
# rstream
#

async def consume_rstream(url: str, stream: str, count: int) -> JsonDict:
    from rstream import Consumer, ConsumerOffsetSpecification, OffsetType, amqp_decoder

    ep = endpoint(url)
    watch = Stopwatch()
    received = Received()
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def on_message(msg: Any, ctx: Any) -> None:
        received.count += 1
        if received.count == count:
            received.last, received.offset = msg.value, ctx.offset
            done.set_result(None)

    consumer = Consumer(
        ep.host, ep.port, username=ep.username, password=ep.password, vhost=ep.vhost,
    )
    await consumer.start()
    try:
        watch.start()
        await consumer.subscribe(
            stream, on_message, decoder=amqp_decoder,
            offset_specification=ConsumerOffsetSpecification(OffsetType.FIRST, None),
        )
        await done
        watch.stop()
    finally:
        await consumer.close()
    received.check('rstream', count)
    return run_result(count, watch)


#
# the broker's ceiling: a consumer that decodes nothing
#

CEILING_PAUSE = 0.001
"""Seconds the sleeping ceiling consumer pauses its reads (rbfly's default ``read_pause``)."""


async def consume_ceiling(
        url: str, stream: str, count: int, credit: int = 64, polling: bool = False,
) -> JsonDict:
    """
    Read a stream with :py:class:`perf.common.raw.Counter` (frame lengths and record
    counts only, a credit per chunk): asleep while it waits, its reads
    paused for :py:data:`CEILING_PAUSE` after each, or, with ``polling``,
    polling the event loop (a busy core) and reading at once.
    """
    if not url.startswith('rabbitmq-stream:'):
        raise CeilingError('the ceiling consumer has no TLS')
    ep = endpoint(url)
    counter = Counter(ep, count, pause=0.0 if polling else CEILING_PAUSE)
    await connect(ep, counter)
    watch = Stopwatch()
    try:
        watch.start()
        counter.subscribe(stream, credit)
        if polling:
            await poll(counter.done)
        else:
            await counter.done
        watch.stop()
    finally:
        counter.close()
    if counter.received != count or counter.last_offset != count - 1:
        raise VerificationError(
            'ceiling: received {} records, the last at offset {}; expected {}, the last'
            ' at {}'.format(counter.received, counter.last_offset, count, count - 1)
        )
    return run_result(count, watch)
