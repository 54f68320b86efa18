"""
A chunk bigger than 64 MiB, written and delivered by RabbitMQ 3.10 and 4.3.

RabbitMQ 3.10.8 wrote a chunk of 67 MB of 16 KiB messages published at
full speed (the workloads benchmark, 2026-11-25) and delivered it as one
Deliver frame; rbfly accepted frames of 64 MiB at most then, lost its
connection at that chunk and reconnected in a loop (commit 1cba02b; the
limit is now 1 GiB, ``DEFAULT_MAX_RECEIVED_FRAME_SIZE``). The fake broker's
test (``test_fake_broker.py``) builds such a chunk itself; this one has
RabbitMQ write it.

How a broker comes to write a chunk that big: a stream's writer (Osiris,
a ``gen_batch_server``) writes a chunk per batch of the writes waiting in
its mailbox; a batch is cut after ``batch_size`` writes, which starts at
32 and doubles while the batches come full (up to 8,192), and a chunk
holds a message, or a sub-entry batch, per write. A Publish frame is at
most the negotiated ``frame_max`` (1 MiB by default), so a chunk of more
than 64 MiB needs more than 64 writes in one batch, hence a writer slower
than its publishers: 8 publishers sending at once made chunks of 25 MB on
3.10 and 49 MB on 4.3 here (measured 2026-11-28), as much as the timing
allowed. The test makes the backlog certain instead: it suspends the
stream's writer (``sys:suspend``, through ``rabbitmqctl eval``), publishes
32 + 64 small messages and then 70 uncompressed sub-entry batches of 62
messages of 16 KiB (1 MB each, a Publish frame's worth), and the writer,
resumed once the 166 writes wait, writes the batches of 32 and 64 small
messages, then a chunk of the 70 sub-entry batches, 71 MB: measured
``[390, 752, 71116058]`` bytes on both brokers.
"""

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rbfly.streams import (
    Offset,
    PublisherPipelined,
    StreamsClient,
    SubEntryBatch,
    streams_client,
)

SCRIPT = os.environ.get('RBFLY_BROKERS_SCRIPT') or str(
    Path(__file__).resolve().parents[2] / 'scripts' / 'brokers.sh'
)

OLD_LIMIT = 64 * 1024 * 1024
"""The biggest frame rbfly accepted before commit 1cba02b."""

BODY = b'x' * 16_374
SMALL = 32 + 64
"""Small messages first: the writer's first two batches (of 32 and 64 writes)."""
BATCHES = 70
PER_BATCH = 62
"""Messages of 16 KiB in a sub-entry batch that fits a Publish frame of 1 MiB."""

@pytest.fixture(params=['3.10', '4.3'])
def broker(request: pytest.FixtureRequest) -> tuple[str, str]:
    """The name ``scripts/brokers.sh`` knows each broker by, and its URL."""
    if request.param == '3.10':
        return '310', str(request.getfixturevalue('url'))
    return '43', str(request.getfixturevalue('url43'))

@pytest.fixture
async def client(broker: tuple[str, str]) -> AsyncIterator[tuple[StreamsClient, str]]:
    """A client of the broker, with a stream of the test's own."""
    stream = 'rbfly-test-big-{}'.format(uuid.uuid4().hex[:12])
    c = streams_client(broker[1])
    await c.create_stream(stream)
    try:
        yield c, stream
    finally:
        await c.delete_stream(stream)
        await c.disconnect()

async def hold_writer(broker: str, stream: str, writes: int) -> None:
    """
    Suspend the writer of ``stream`` until ``writes`` writes wait in its
    mailbox (or 30 seconds passed: a failing test leaves no writer held);
    returns once it is suspended. A process on the broker resumes it.
    """
    expr = '''
        {{ok, P}} = rabbit_stream_manager:lookup_leader(<<"/">>, <<"{stream}">>),
        ok = sys:suspend(P),
        Wait = fun Wait(T) ->
            case erlang:process_info(P, message_queue_len) of
                {{message_queue_len, L}} when L < {writes}, T > 0 ->
                    timer:sleep(10), Wait(T - 10);
                _ -> ok
            end
        end,
        spawn(fun() -> Wait(30000), catch sys:resume(P) end),
        held.
    '''.format(stream=stream, writes=writes)
    ctl = await asyncio.create_subprocess_exec(
        SCRIPT, 'ctl', broker, 'rabbitmqctl', '-q', 'eval', expr,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await ctl.communicate()
    assert (ctl.returncode, out.strip()) == (0, b'held'), err.decode()

async def test_chunk_bigger_than_64_mib(
        broker: tuple[str, str], client: tuple[StreamsClient, str],
) -> None:
    """
    RabbitMQ writes a chunk of 71 MB; the client reads it, on the
    connection it read the chunks before it (no connection lost), and
    every message of the stream once, in order.
    """
    c, stream = client
    total = SMALL + BATCHES * PER_BATCH
    async with asyncio.timeout(60):
        # a window wide enough for every message: nothing is confirmed
        # while the writer is held
        async with c.publisher(
                stream, cls=PublisherPipelined, window=SMALL + BATCHES,
                window_bytes=2 * BATCHES * PER_BATCH * len(BODY)) as publisher:
            await hold_writer(broker[0], stream, SMALL + BATCHES)
            for i in range(SMALL):
                await publisher.send(b'%d' % i)
            for _ in range(BATCHES):
                await publisher.send(SubEntryBatch([BODY] * PER_BATCH))

        sizes: list[tuple[int, int]] = []  # bytes and messages of each chunk
        offsets: list[int] = []
        wrong: list[int] = []  # offsets of messages not as published
        read = c.metrics().chunk_bytes
        async for chunk in c.subscribe_chunks(stream, offset=Offset.FIRST):
            sizes.append((c.metrics().chunk_bytes - read, len(chunk)))
            read = c.metrics().chunk_bytes
            for m in chunk:
                offsets.append(m.stream_offset)
                if m.body != (b'%d' % m.stream_offset if m.stream_offset < SMALL else BODY):
                    wrong.append(m.stream_offset)
            if len(offsets) >= total:
                break

    biggest = max(sizes)
    assert biggest[0] > OLD_LIMIT, 'the broker wrote no chunk above 64 MiB: {}'.format(sizes)
    assert biggest[1] == BATCHES * PER_BATCH, sizes
    assert offsets == list(range(total))
    assert wrong == []
    metrics = c.metrics()
    assert (metrics.connections_lost, metrics.chunk_bytes) == (0, sum(s for s, _ in sizes))
