"""
Retention overtaking a reader, against RabbitMQ 4.x (3.11+: the stream's
first offset; see :py:mod:`rbfly.streams.subscriptions.gaps`): a reader
holding its first chunk while a publisher writes enough for retention to
delete the segments past it, then reading on, is told of the offsets
removed (warned, raised, called back, as ``on_gap`` says), counted in
``messages_lost``, and no more than retention removed past it; a
subscription resumed after a lost connection at an offset retention
removed meanwhile is told so; a read to the end whose last chunk leaves
the gap, and a seek right after the gap, are told before they end or
move; and a consumer storing its offset after every few messages, whose
stores leave gaps the broker does not send, is told of nothing, with at
most one question a second.
"""

import asyncio
import itertools
import logging
import uuid
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest

from rbfly.streams import Offset, StreamsClient, get_message_ctx, streams_client
from rbfly.streams.error import OffsetOutOfRange
from rbfly.streams.parts.subscribing import GapAction
from rbfly.streams.subscriptions.chunks import Chunks
from rbfly.streams.subscriptions.gaps import CHECK_INTERVAL
from rbfly.streams.subscriptions.source import Subscriptions

from .conftest import FAST
from .proxy import Proxy

ROUNDS = 60
"""
Batches of 50 messages written past a held reader: about 66 kB in
segments of 2 kB, of which retention keeps about 20 kB.
"""

LAST = 'm{}'.format(50 * (ROUNDS + 1) - 1)
"""The body of the last message written."""

async def publish(client: StreamsClient, stream: str, start: int, count: int) -> None:
    async with client.publisher(stream) as publisher:
        await publisher.send_many(['m{}'.format(i) for i in range(start, start + count)])

async def first_offset(client: StreamsClient, stream: str) -> int:
    return (await client.stream_stats(stream))['first_chunk_id']

async def write_past(client: StreamsClient, stream: str) -> int:
    """
    Write the rounds; the stream's first offset once retention removed
    a thousand offsets or more.
    """
    for i in range(1, ROUNDS + 1):
        await publish(client, stream, i * 50, 50)
    async with asyncio.timeout(60):
        while (first := await first_offset(client, stream)) < 1000:  # noqa: ASYNC110
            await asyncio.sleep(0.2)  # wall time: retention runs in a process of its own
    return first

@pytest.fixture
async def small(url4: str) -> AsyncIterator[tuple[StreamsClient, str]]:
    """A client, and a stream of small segments and length retention."""
    client = streams_client(url4)
    stream = 'rbfly-overtaken-{}'.format(uuid.uuid4().hex[:8])
    try:
        await client.create_stream(stream, max_length_bytes=20_000, max_segment_size_bytes=2_000)
        yield client, stream
    finally:
        await client.delete_stream(stream)
        await client.disconnect()

def told_lost(records: list[logging.LogRecord]) -> list[int]:
    """
    The offsets lost each warning of retention overtaking a reader names
    (as it reads, or as at a resume: a broker reader stalled, see
    test_stalled_reader_subscribed_again).
    """
    return [
        int(m.split('removed up to ')[1].split()[0]) if 'before the subscription' in m
        else int(m.split(' offsets removed by retention')[0].rsplit(' ', 1)[1])
        for r in records
        if 'before the subscription read them' in (m := r.getMessage())
        or 'offsets removed by retention are lost' in m
    ]

def stalled_if_resumed(caplog: pytest.LogCaptureFixture, told: list[str]) -> bool:
    """
    A loss told as at a resume (``when``, of each told) only when the
    broker's reader stalled and the subscription was subscribed again (see
    test_stalled_reader_subscribed_again); else as read.
    """
    return all(w == 'read' for w in told) or 'subscribed again' in caplog.text

@pytest.mark.parametrize('on_gap', ['warn', 'raise', 'call'])
async def test_overtaken(
        small: tuple[StreamsClient, str], on_gap: str, caplog: pytest.LogCaptureFixture,
) -> None:
    """
    The reader holds its first chunk (a credit of 1, a buffer of a byte:
    the broker sends one more chunk at most) while retention removes the
    segments past it; the broker's reader then jumps to the first segment
    left, and the subscription is told of the offsets it skipped.
    """
    client, stream = small
    await publish(client, stream, 0, 50)
    told: list[OffsetOutOfRange] = []
    action: GapAction = told.append if on_gap == 'call' \
        else 'raise' if on_gap == 'raise' else 'warn'
    chunks = client.subscribe_chunks(
        stream, offset=Offset.FIRST, credit=1, buffer_bytes=1, timeout=30, on_gap=action,
    )
    try:
        with caplog.at_level(logging.WARNING, logger='rbfly.streams.client'):
            async with asyncio.timeout(120):
                chunk = await anext(chunks)
                position = chunk[-1].stream_offset + 1  # the reader holds here
                await write_past(client, stream)
                if on_gap == 'raise':
                    with pytest.raises(OffsetOutOfRange) as info:
                        while True:  # (until the check after the gap ends the read)
                            await anext(chunks)
                    told.append(info.value)
                else:
                    while chunk[-1].body != LAST:
                        chunk = await anext(chunks)
                    # (the check runs after the chunk past the gap is handed out)
                    while not client.metrics().messages_lost:  # noqa: ASYNC110 - a counter
                        await asyncio.sleep(0.01)
    finally:
        await chunks.aclose()
    lost = client.metrics().messages_lost
    # counted, and no more than retention removed past the reader
    assert 0 < lost <= await first_offset(client, stream) - position
    if on_gap == 'warn':
        told_ = told_lost(caplog.records)
        assert told_ and sum(told_) == lost
        assert stalled_if_resumed(caplog, [
            'resume' if 'offsets removed by retention' in r.getMessage() else 'read'
            for r in caplog.records
        ])
    else:
        assert told and all(g.offset >= position for g in told)
        assert stalled_if_resumed(caplog, [g.when for g in told])
        assert sum(g.lost for g in told) == lost

async def test_resume_removed(small: tuple[StreamsClient, str], url4: str) -> None:
    """
    The connection lost, and retention past the offset to resume at
    before the subscription is made again (its ``resume`` callback holds
    it meanwhile): told as at the start, and read on from the first chunk
    left.
    """
    client, stream = small
    p = urlsplit(url4)
    proxy = Proxy(p.hostname or 'localhost', p.port or 5553)
    await proxy.start()
    proxied = streams_client(
        'rabbitmq-stream://guest:guest@127.0.0.1:{}/'.format(proxy.port), reconnect=FAST,
    )
    asked = asyncio.Event()
    go = asyncio.Event()

    async def resume(s: str, offset: Offset) -> None:
        asked.set()
        await go.wait()

    told: list[OffsetOutOfRange] = []
    try:
        await publish(client, stream, 0, 50)
        chunks = proxied.subscribe_chunks(
            stream, offset=Offset.FIRST, credit=1, buffer_bytes=1, timeout=60, resume=resume,
            on_gap=told.append,
        )
        try:
            async with asyncio.timeout(120):
                chunk = await anext(chunks)
                position = chunk[-1].stream_offset + 1
                assert proxy.cut()
                await asked.wait()
                removed = await write_past(client, stream)
                go.set()
                while (chunk := await anext(chunks))[0].stream_offset < 50:
                    pass  # (received before the cut)
        finally:
            await chunks.aclose()
    finally:
        await proxied.disconnect()
        await proxy.close()
    gap = told[0]
    assert gap.when == 'resume' and position <= gap.offset <= 50 and gap.first >= removed
    assert chunk[0].stream_offset >= gap.first  # (the broker's first chunk left)
    assert proxied.metrics().messages_lost == sum(g.lost for g in told) >= gap.lost

async def test_stored_offsets_not_lost(
        client4: StreamsClient, stream: str, caplog: pytest.LogCaptureFixture,
) -> None:
    """
    A consumer storing its offset after every 5 messages, on a stream
    nobody writes to meanwhile: each store is a chunk of its own, which
    takes an offset and is not sent to subscriptions, so the reader sees a
    gap after each; the gaps are checked, at most once a second, and
    nothing is lost.
    """
    client = client4
    rounds = 20
    offsets: list[int] = []
    messages = client.subscribe(stream, offset=Offset.FIRST, on_gap='raise', timeout=30)
    loop = asyncio.get_running_loop()
    started = loop.time()

    def checks() -> int:
        return sum('gaps checked against its first offset' in r.getMessage()
                   for r in caplog.records)

    try:
        with caplog.at_level(logging.DEBUG, logger='rbfly.streams.subscriber'):
            async with asyncio.timeout(120):
                for i in range(rounds):
                    await publish(client, stream, i * 5, 5)
                    for _ in range(5):
                        await anext(messages)
                        offsets.append(get_message_ctx().stream_offset)
                    await client.commit_offset(stream, 'app', offsets[-1])
                while not checks():  # noqa: ASYNC110 - (the last one may be under way)
                    await asyncio.sleep(0.01)
            elapsed = loop.time() - started
            made = checks()
    finally:
        await messages.aclose()
    # the gaps: an offset after each store but the last
    assert [b - a for a, b in itertools.pairwise(offsets) if b - a != 1] == \
        [2] * (rounds - 1)
    assert client.metrics().messages_lost == 0
    # the rate limit's bound (not a speed: a slower run only raises it)
    assert 1 <= made <= 1 + elapsed / CHECK_INTERVAL

async def read_to_end(client: StreamsClient, stream: str, on_gap: GapAction) -> Chunks:
    """
    Write 500 messages, and read the stream to its end from the first,
    a chunk at a time (a credit of 1, a buffer of a byte).
    """
    for i in range(10):  # the end: at offset 500
        await publish(client, stream, i * 50, 50)
    return client.subscribe_chunks(
        stream, offset=Offset.FIRST, credit=1, buffer_bytes=1, timeout=30, stop_at_end=True,
        on_gap=on_gap,
    )

@pytest.mark.parametrize('on_gap', ['raise', 'call'])
async def test_bounded_read_ends_told(
        small: tuple[StreamsClient, str], on_gap: str, caplog: pytest.LogCaptureFixture,
) -> None:
    """
    A read to the end (``stop_at_end``) held at its first chunk while
    retention removes the segments up to past its end: the chunk after
    the jump is past the end, the last the read takes; the read does not
    end before the check of its gap answered, and tells it (raises
    instead of ending, or calls back before it ends).
    """
    client, stream = small
    told: list[OffsetOutOfRange] = []
    chunks = await read_to_end(client, stream, 'raise' if on_gap == 'raise' else told.append)
    try:
        async with asyncio.timeout(120):
            chunk = await anext(chunks)
            position = chunk[-1].stream_offset + 1
            assert await write_past(client, stream) > 500  # (past the end)
            if on_gap == 'raise':
                with pytest.raises(OffsetOutOfRange) as info:
                    async for chunk in chunks:
                        assert chunk[-1].stream_offset < 500
                told.append(info.value)
            else:
                async for chunk in chunks:
                    assert chunk[-1].stream_offset < 500
    finally:
        await chunks.aclose()
    lost = client.metrics().messages_lost  # (counted as the read ended: no wait)
    assert 0 < lost <= await first_offset(client, stream) - position
    assert told and all(g.offset >= position for g in told)
    assert stalled_if_resumed(caplog, [g.when for g in told])
    assert sum(g.lost for g in told) == lost

async def test_stalled_reader_subscribed_again(small: tuple[StreamsClient, str]) -> None:
    """
    A subscription whose broker reader stalled behind the stream's first
    offset (see :py:mod:`rbfly.streams.subscriptions.stalled`: a race of
    the broker's, about one read in 50 here) is subscribed again after
    its last chunk received: the broker's new reader starts at the first
    offset, the offsets removed are told as at a resume, and a read to
    the end ends. The race cannot be made to happen: the check is made
    on the held reader (the rule that picks a suspect is unit-tested).
    """
    client, stream = small
    told: list[OffsetOutOfRange] = []
    chunks = await read_to_end(client, stream, told.append)
    try:
        async with asyncio.timeout(120):
            chunk = await anext(chunks)
            first = await write_past(client, stream)
            source = chunks._progress._source
            assert isinstance(source, Subscriptions) and source._stalls is not None
            [sub] = source.subs
            received = sub.received_offset
            assert received is not None and received < first
            assert await source._stalls.check(sub)
            async for chunk in chunks:  # (what was received before, then the end)
                assert chunk[-1].stream_offset < received
    finally:
        await chunks.aclose()
    gap, *later = told
    assert (gap.when, gap.offset) == ('resume', received) and gap.first >= first
    assert gap.lost == gap.first - received
    # (retention going on meanwhile: what it removed after, told as read)
    assert all(g.when == 'read' and g.offset >= gap.first for g in later)
    assert sum(g.lost for g in told) == client.metrics().messages_lost

async def test_seek_after_the_gap(small: tuple[StreamsClient, str]) -> None:
    """
    A seek right after the chunk past the gap is taken (its check asked
    for, not answered): the seek waits for the check of the place it
    leaves, and the loss is raised at the next chunk asked for
    (``on_gap='raise'``), from the new place's subscription. (When the
    broker's reader stalled behind the first offset, the subscription was
    subscribed again, and the loss raised as at a resume before the
    chunk past the gap: nothing left to seek past.)
    """
    client, stream = small
    await publish(client, stream, 0, 50)
    chunks = client.subscribe_chunks(
        stream, offset=Offset.FIRST, credit=1, buffer_bytes=1, timeout=30, on_gap='raise',
    )
    when = 'read'
    try:
        async with asyncio.timeout(120):
            chunk = await anext(chunks)
            position = expected = chunk[-1].stream_offset + 1
            await write_past(client, stream)
            try:
                # (only messages in the stream: a chunk past the one expected is the gap)
                while (chunk := await anext(chunks))[0].stream_offset <= expected:
                    expected = chunk[-1].stream_offset + 1
            except OffsetOutOfRange as ex:  # (stalled, see test_stalled_reader_subscribed_again)
                gap, when = ex, 'resume'
            else:
                await chunks.seek(stream, Offset.LAST)
                with pytest.raises(OffsetOutOfRange) as info:
                    await anext(chunks)
                gap = info.value
    finally:
        await chunks.aclose()
    assert gap.when == when and gap.offset >= position and gap.lost > 0
    assert client.metrics().messages_lost == gap.lost

@pytest.mark.parametrize('on_gap', ['raise', 'call'])
async def test_activated_after_removed(small: tuple[StreamsClient, str], on_gap: str) -> None:
    """
    A single active consumer made active after an offset stored that
    retention removed: told as at a resume (``when='resume'``), and read
    from the first offset, counted once; with ``on_gap='raise'`` the read
    raises.
    """
    client, stream = small
    await publish(client, stream, 0, 50)
    first = await write_past(client, stream)
    # stored before the retention, the broker forgets it: stored after, as
    # by a consumer of the group that read slowly; into a segment with
    # room: a store that begins a segment is forgotten at once (the
    # snapshot of the offsets stored there keeps none below the first),
    # so a segment is filled (one message of more than 2 kB) and the next
    # begun (one small message)
    async with client.publisher(stream) as publisher:
        await publisher.send('x' * 2_500)
    await publish(client, stream, 5_000, 1)
    await client.commit_offset(stream, 'app', 10)
    told: list[OffsetOutOfRange] = []
    action: GapAction = 'raise' if on_gap == 'raise' else told.append
    messages = client.subscribe(
        stream, name='app', single_active=True, timeout=30, on_gap=action,
    )
    try:
        async with asyncio.timeout(60):
            if on_gap == 'raise':
                with pytest.raises(OffsetOutOfRange) as info:
                    await anext(messages)
                told.append(info.value)
            else:
                await anext(messages)
                assert get_message_ctx().stream_offset >= told[0].first
    finally:
        await messages.aclose()
    [gap] = told
    assert (gap.when, gap.offset) == ('resume', 11) and gap.first >= first
    assert gap.lost == gap.first - 11 == client.metrics().messages_lost
