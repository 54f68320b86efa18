"""
Bulk publishing and a bulk sink: ``send_many`` and windows of messages.

A producer hands the pipelined publisher lists of messages
(``send_many``): the list is buffered and sent in C, and the call waits
only while the publisher's window is full. A sink reads the stream in
windows (``subscribe_windows``: at most ``max_messages`` messages, or
what arrived within ``max_wait`` seconds) and inserts each window into a
SQLite table in one transaction. With automatic offset tracking, a window
counts as processed when the next one is asked for; the sink stops after
a few windows, and started again, it continues right after the last
window it processed: every row is inserted once.

The program creates a stream, publishes 10,000 messages, runs the sink
twice (stopping the first after 3 windows), checks the table, and deletes
the stream.

Run it against a broker with the stream plugin (RabbitMQ 3.9+)::

    RBFLY_URL=rabbitmq-stream://guest:guest@localhost:5552/ python bulk_sink.py
"""

import asyncio
import os
import sqlite3
import sys
import uuid

from rbfly.amqp import MessageCtx
from rbfly.streams import Offset, PublisherPipelined, StreamsClient, streams_client

URL = os.environ.get('RBFLY_URL', 'rabbitmq-stream://guest:guest@localhost:5552/')
COUNT = 10_000
NAME = 'bulk-sink'

def check(condition: bool, what: str) -> None:
    """Exit with an error unless the condition holds (kept under ``python -O``)."""
    if not condition:
        sys.exit('failed: {}'.format(what))

def row(message: MessageCtx) -> tuple[int, int]:
    """A message's row: its offset, and the number its body holds."""
    body = message.body
    n = body.get('n') if isinstance(body, dict) else None
    if not isinstance(n, int):  # narrows the body's type, for the reader and mypy
        raise TypeError('offset {}: not an order: {!r}'.format(message.stream_offset, body))
    return message.stream_offset, n

async def sink(client: StreamsClient, stream: str, db: sqlite3.Connection,
               windows: int | None) -> int:
    """
    Insert windows of messages into the table (``windows`` of them at most;
    ``None``: up to the end of the stream); return how many windows.
    """
    n = 0
    async with client.subscribe_windows(
            stream, offset=Offset.reference(NAME), name=NAME, store_every=1_000,
            max_messages=1_000, max_wait=0.5, stop_at_end=True) as messages:
        async for window in messages:
            with db:  # one transaction a window
                db.executemany('insert into orders (offset, n) values (?, ?)', map(row, window))
            n += 1
            if n == windows:
                break  # leaving the context: this window is processed, its offset stored
    return n

async def main() -> None:
    stream = 'rbfly-example-bulk-{}'.format(uuid.uuid4().hex[:8])
    db = sqlite3.connect(':memory:')
    db.execute('create table orders (offset integer primary key, n integer)')
    async with streams_client(URL) as client:
        await client.create_stream(stream)
        try:
            async with client.publisher(stream, cls=PublisherPipelined) as publisher:
                for start in range(0, COUNT, 500):
                    await publisher.send_many([{'n': i} for i in range(start, start + 500)])
            # leaving the context waited for every confirmation
            first = await sink(client, stream, db, windows=3)
            rows = db.execute('select count(*) from orders').fetchone()[0]
            print('first run: {} windows, {} rows'.format(first, rows))
            second = await sink(client, stream, db, windows=None)  # resumes
            rows = db.execute('select count(*), min(n), max(n) from orders').fetchone()
            print('second run: {} windows; {} rows in all'.format(second, rows[0]))
            # (a row inserted twice would have failed its primary key)
            check(rows == (COUNT, 0, COUNT - 1), 'each message inserted once: {}'.format(rows))
        finally:
            await client.delete_stream(stream)
    print('ok: {} messages sent in lists, inserted a window at a time, once each'.format(COUNT))

if __name__ == '__main__':
    asyncio.run(main())
