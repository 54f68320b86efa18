"""
The soak's workload: a publisher of each class sending ``RATE`` messages a
second in batches of ``BATCH``, a super stream publisher, and the
consumers (``async for``, the chunk API, a super stream) that note what
they see; the final read of a stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import typing as tp

from rbfly.error import RbFlyError
from rbfly.streams import (
    Offset,
    Publisher,
    PublisherBatchFast,
    PublisherBatchLimit,
    PublisherBin,
    PublisherBinBatch,
    PublisherPipelined,
    StreamsClient,
    get_message_ctx,
)
from soak.ledger import Ledger, Seen, Stats
from soak.pace import Pace

RATE = 400
"""Messages per second each publisher sends (bounded, so that the final read is quick)."""

BATCH = 40
"""Messages per batch or flush."""

#
# publishers
#
PUBLISHERS: list[tuple[str, type, bool]] = [
    ('single', Publisher, False),
    ('batch', PublisherBatchFast, False),
    ('limit', PublisherBatchLimit, False),
    ('pipelined', PublisherPipelined, False),
    ('bin', PublisherBin, True),
    ('binbatch', PublisherBinBatch, True),
]

def body(ledger: Ledger, seq: int) -> tp.Any:
    text = '{}:{}'.format(ledger.key, seq)
    return text.encode() if ledger.binary else text

async def publish(
        client: StreamsClient, cls: type, ledger: Ledger, stop: asyncio.Event, stats: Stats,
) -> None:
    """Send ``RATE`` messages a second until ``stop``; a failed call marks its messages."""
    publisher: tp.Any = client.publisher(ledger.stream, cls=cls, name='soak-' + ledger.key)
    async with publisher as p:
        pace = Pace(BATCH / RATE)
        while not stop.is_set():
            first = ledger.sent
            seqs = range(first, first + BATCH)
            ledger.sent += BATCH
            try:
                if cls in (Publisher, PublisherBin):
                    for i, seq in enumerate(seqs):
                        try:
                            await p.send(body(ledger, seq))
                        except RbFlyError:
                            for s in seqs[i:]:
                                ledger.failed.add(s)
                            raise
                elif cls is PublisherBatchLimit:
                    for seq in seqs:
                        await p.batch(body(ledger, seq), max_len=BATCH * 2)
                    await p.flush()
                elif cls is PublisherPipelined:
                    for seq in seqs:
                        await p.send(body(ledger, seq))
                    await p.flush()
                else:
                    for seq in seqs:
                        p.batch(body(ledger, seq))
                    await p.flush()
            except RbFlyError as ex:
                ledger.failures += 1
                stats.errors['{}: {}'.format(ledger.key, type(ex).__name__)] += 1
                for seq in seqs:
                    ledger.failed.add(seq)
            await pace.wait()
        if cls is PublisherPipelined:
            with contextlib.suppress(RbFlyError):
                await p.flush()

async def publish_super(
        client: StreamsClient, super_stream: str, ledger: Ledger, stop: asyncio.Event,
        stats: Stats,
) -> None:
    """A deduplicating super stream publisher, routing by hash of the sequence number."""
    def key(msg: tp.Any) -> str:
        return str(msg).rsplit(':', 1)[1]

    async with client.super_stream_publisher(
            super_stream, key, name='soak-super', cls=Publisher) as pub:
        pace = Pace(BATCH / RATE)
        while not stop.is_set():
            first = ledger.sent
            ledger.sent += BATCH
            for seq in range(first, first + BATCH):
                try:
                    await pub.send(body(ledger, seq))
                except RbFlyError as ex:
                    ledger.failures += 1
                    ledger.failed.add(seq)
                    stats.errors['super: {}'.format(type(ex).__name__)] += 1
            await pace.wait()

#
# consumers
#
async def consume(client: StreamsClient, stream: str, seen: Seen, binary: bool) -> None:
    async for msg in client.subscribe(stream, offset=Offset.FIRST, amqp=not binary):
        seen.see(stream, msg)

async def consume_chunks(client: StreamsClient, stream: str, seen: Seen) -> None:
    async for chunk in client.subscribe_chunks(stream, offset=Offset.FIRST):
        for msg in chunk:
            seen.see(stream, msg.body)

async def consume_super(client: StreamsClient, super_stream: str, seen: Seen) -> None:
    async for msg in client.subscribe_super_stream(super_stream, offset=Offset.FIRST):
        seen.see(get_message_ctx().stream or '', msg)

async def read_all(client: StreamsClient, stream: str, seen: Seen, binary: bool) -> None:
    """Read a stream from its start to its last committed chunk (RabbitMQ 3.11+)."""
    last = (await client.stream_stats(stream))['committed_chunk_id']
    if last < 0:
        return
    async with asyncio.timeout(120):
        async for chunk in client.subscribe_chunks(stream, offset=Offset.FIRST, amqp=not binary):
            for msg in chunk:
                seen.see(stream, msg.body)
            if chunk.first_offset >= last:
                break
