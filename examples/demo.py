"""
rbfly demo: create a stream, publish messages with confirmation, read them
back from the first offset and print what happened.

Usage: python examples/demo.py [URI] [--count N]
"""

import argparse
import asyncio
import time

from rbfly.streams import (
    Offset,
    PublisherBatchFast,
    get_message_ctx,
    streams_client,
)

STREAM = 'rbfly-demo'

async def demo(uri: str, count: int) -> None:
    client = streams_client(uri)
    async with client:
        await client.delete_stream(STREAM)
        await client.create_stream(STREAM, max_length_bytes=100 * 1024 * 1024)
        print('created stream {!r} on {}'.format(STREAM, client))

        async with client.publisher(STREAM) as publisher:
            for i in range(3):
                await publisher.send({'greeting': 'hello', 'number': i})
            print('sent 3 messages one by one, each confirmed by the broker')

        async with client.publisher(STREAM, cls=PublisherBatchFast) as batch:
            start = time.monotonic()
            for i in range(count):
                batch.batch('{:010d}'.format(i))
                if i % 100 == 99:
                    await batch.flush()
            await batch.flush()
            elapsed = time.monotonic() - start
            print('sent {} messages in batches of 100, confirmed: {:,.0f} msg/s'.format(
                count, count / elapsed
            ))

        total = count + 3
        received = 0
        start = time.monotonic()
        async for body in client.subscribe(STREAM, offset=Offset.FIRST, timeout=10):
            ctx = get_message_ctx()
            if received < 3 or received == total - 1:
                print('  offset {:>6}: {!r}'.format(ctx.stream_offset, body))
            elif received == 3:
                print('  ...')
            received += 1
            if received == total:
                break
        elapsed = time.monotonic() - start
        print('read back {} messages from the first offset: {:,.0f} msg/s'.format(
            received, received / elapsed
        ))
        await client.delete_stream(STREAM)
        print('deleted stream {!r}; all {} messages accounted for'.format(STREAM, received))

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('uri', nargs='?', default='rabbitmq-stream://guest:guest@localhost:5552/')
    parser.add_argument('--count', type=int, default=10000)
    args = parser.parse_args()
    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass
    asyncio.run(demo(args.uri, args.count))

if __name__ == '__main__':
    main()
