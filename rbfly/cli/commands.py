"""
What each subcommand does, on rbfly's public API only: streams, super
streams, consumer groups, publishing lines of text or JSON, tailing, a
quick benchmark.

Each command is a coroutine of the client and the parsed arguments that
returns the exit status; errors propagate to :py:func:`rbfly.cli.main`,
which prints them on one line.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses as dtc
import json
import sys
import time
import typing as tp
import uuid
from collections.abc import Iterator

from ..amqp import AMQPProperties, MessageCtx, get_message_ctx
from ..streams import (
    FeatureNotSupported,
    MessageFilter,
    Offset,
    PublisherBatchFast,
    PublisherBinBatch,
    PublisherPipelined,
    StreamsClient,
)
from ..streams.offset import OffsetType
from .output import Progress, message_json, message_text, print_facts, print_table

FILTER_PROPERTY = 'filter'
"""Application property holding the filter value of ``publish --filter-value``."""

async def stream_create(client: StreamsClient, args: argparse.Namespace) -> int:
    await client.create_stream(
        args.name, max_age=args.max_age, max_length_bytes=args.max_length_bytes,
        max_segment_size_bytes=args.max_segment_size_bytes,
        initial_cluster_size=args.replicas, filter_size=args.filter_size,
    )
    return 0

async def stream_delete(client: StreamsClient, args: argparse.Namespace) -> int:
    await client.delete_stream(args.name, missing_ok=False)
    return 0

async def stream_info(client: StreamsClient, args: argparse.Namespace) -> int:
    info = await client.stream_metadata(args.name)
    facts: dict[str, tp.Any] = {
        'stream': info.stream,
        'leader': None if info.leader is None else '{}:{}'.format(*info.leader),
        'replicas': ' '.join('{}:{}'.format(*r) for r in info.replicas),
    }
    with contextlib.suppress(FeatureNotSupported):  # statistics: RabbitMQ 3.11+
        facts.update(await client.stream_stats(args.name))
    print_facts(facts, args.format)
    return 0

async def super_stream_create(client: StreamsClient, args: argparse.Namespace) -> int:
    keys = None if args.keys is None else [k for k in args.keys.split(',') if k]
    for name in await client.create_super_stream(
            args.name, args.partitions, binding_keys=keys, exist_ok=False):
        print(name)
    return 0

async def super_stream_delete(client: StreamsClient, args: argparse.Namespace) -> int:
    await client.delete_super_stream(args.name, missing_ok=False)
    return 0

async def super_stream_info(client: StreamsClient, args: argparse.Namespace) -> int:
    print_facts({
        'super stream': args.name,
        'partitions': ' '.join(await client.super_stream_partitions(args.name)),
    }, args.format)
    return 0

async def group_status(client: StreamsClient, args: argparse.Namespace) -> int:
    statuses = await client.group_status(
        args.name, stream=args.stream, super_stream=args.super_stream,
    )
    if args.format == 'json':
        print_table([dtc.asdict(s) for s in statuses], 'json')
        return 0

    def bound(value: int | None, exact: bool) -> int | str | None:
        # before RabbitMQ 4.3, the end is the first offset of the last
        # chunk: it and the lag are lower bounds (an empty stream's is 0)
        return value if value is None or exact else '{}+'.format(value)

    print_table([{
        'stream': s.stream, 'stored': s.stored, 'first': s.first,
        'end': bound(s.end, s.end_exact), 'lag': bound(s.lag, s.end_exact or s.end is None),
    } for s in statuses], 'text')
    return 0

async def group_reset(client: StreamsClient, args: argparse.Namespace) -> int:
    resets = await client.reset_group(
        args.name, args.to, stream=args.stream, super_stream=args.super_stream,
        force=args.force, dry_run=not args.force, watch=args.watch,
    )
    print_table([dtc.asdict(r) for r in resets], args.format)
    if not args.force:
        print('rbfly: error: nothing stored (no offset of group {!r} moved in {:g}s, but a'
              ' quiet consumer does not show): stop its consumers and give --force'.format(
                  args.name, args.watch), file=sys.stderr)
        return 1
    return 0

def _lines(args: argparse.Namespace) -> Iterator[bytes]:
    """The input's lines, without their line ends."""
    source = open(args.file, 'rb') if args.file else sys.stdin.buffer
    try:
        for line in source:
            yield line.rstrip(b'\r\n')
    finally:
        if args.file:
            source.close()

def _message(line: bytes, args: argparse.Namespace, number: int) -> tp.Any:
    """A line as a message: text, raw bytes, a JSON body or a JSON message."""
    if args.binary:
        return line
    text = line.decode('utf-8')
    if not args.json:
        body: tp.Any = text
        msg = MessageCtx(body)
    else:
        try:
            value = json.loads(text)
        except ValueError as ex:
            raise ValueError('line {}: not JSON: {}'.format(number, ex)) from None
        if not args.amqp:
            msg = MessageCtx(value)
        else:
            if not isinstance(value, dict) or 'body' not in value:
                raise ValueError('line {}: --amqp wants an object with a "body"'.format(number))
            props = value.get('properties') or {}
            try:
                properties = AMQPProperties(**props)
            except TypeError as ex:
                raise ValueError('line {}: properties: {}'.format(number, ex)) from None
            msg = MessageCtx(
                value['body'], properties=properties,
                app_properties=value.get('application_properties') or None,
            )
    if args.filter_value is not None:
        msg.app_properties = {**(msg.app_properties or {}), FILTER_PROPERTY: args.filter_value}
    return msg

async def publish(client: StreamsClient, args: argparse.Namespace) -> int:
    cls = PublisherBinBatch if args.binary else PublisherBatchFast
    options: dict[str, tp.Any] = {}
    if args.filter_value is not None:
        value = args.filter_value
        options['filter_extract'] = lambda m: value
    confirmed = 0
    progress = Progress('messages confirmed')
    async with client.publisher(args.name_, name=args.name, cls=cls, **options) as publisher:
        pending = 0
        for number, line in enumerate(_lines(args), 1):
            publisher.batch(_message(line, args, number))  # type: ignore[attr-defined]
            pending += 1
            if pending == args.batch:
                await publisher.flush()
                confirmed += pending
                pending = 0
                progress.update(confirmed)
        await publisher.flush()
        confirmed += pending
    progress.done()
    print('{} messages confirmed'.format(confirmed))
    return 0

async def tail(client: StreamsClient, args: argparse.Namespace) -> int:
    """
    Print a stream's messages: from ``--offset``, or the last ``-n COUNT``
    (``Offset.from_end``), up to the end as of now (on every broker: see
    ``stop_at_end``), or on with ``--follow``. An offset at or past the
    end says so, with the end, rather than waiting without a word.
    """
    def value(m: MessageCtx) -> str | None:
        return tp.cast(str | None, (m.app_properties or {}).get(FILTER_PROPERTY))

    offset = args.offset
    count = args.count
    if offset is None:
        offset = Offset.FIRST if count is None else Offset.from_end(count)
        count = None  # the last COUNT messages, whatever comes after with --follow
    to_end = not args.follow
    wanted = args.filter
    if offset.type == OffsetType.OFFSET and not await _before_end(client, args, offset):
        return 0
    # the broker filters chunks (RabbitMQ 3.13+); reading to the end, it
    # might skip the last chunk, so the messages are filtered here instead
    flt = None if wanted is None or to_end else MessageFilter(value, {wanted})
    show = message_json if args.format == 'json' else message_text
    n = 0
    messages = client.subscribe(
        args.name, offset=offset, filter=flt, amqp=not args.binary, stop_at_end=to_end,
    )
    async with contextlib.aclosing(messages):
        async for _ in messages:
            msg = get_message_ctx()
            if wanted is not None and value(msg) != wanted:
                continue
            print(show(msg), flush=args.follow)
            n += 1
            if n == count:
                break
    return 0

async def _before_end(client: StreamsClient, args: argparse.Namespace, offset: Offset) -> bool:
    """
    Whether a tail from an offset has messages to print (or waits for
    them, with ``--follow``): an offset at or past the stream's end says
    so on stderr, with the end.
    """
    end = await client.end_offset(args.name)
    start = tp.cast(int, offset.value)
    if end is not None and start < end:
        return True
    where = 'stream {!r} has no messages'.format(args.name) if end is None \
        else 'stream {!r} ends at offset {} (its last message is {})'.format(
            args.name, end, end - 1)
    if args.follow:
        print('rbfly: {}; waiting for messages from offset {}'.format(where, start),
              file=sys.stderr, flush=True)
        return True
    print('rbfly: {}; offset {} is past the end: nothing to print (--follow waits'
          ' for it)'.format(where, start), file=sys.stderr)
    return False

async def bench(client: StreamsClient, args: argparse.Namespace) -> int:
    stream = args.stream or 'rbfly-bench-{}'.format(uuid.uuid4().hex[:8])
    created = args.stream is None
    await client.create_stream(stream)
    body = b'x' * args.size
    count = args.count
    try:
        progress = Progress('messages')
        start = time.perf_counter()
        async with client.publisher(stream, cls=PublisherPipelined) as publisher:
            for i in range(1, count + 1):
                await publisher.send(body)
                progress.update(i)
        elapsed = time.perf_counter() - start
        progress.done()
        if args.what == 'publish':
            print('published {} messages of {} bytes in {:.2f}s: {:,.0f} msg/s'.format(
                count, args.size, elapsed, count / elapsed))
            return 0
        n = 0
        start = time.perf_counter()
        async for chunk in client.subscribe_chunks(stream, offset=Offset.FIRST):
            n += len(chunk)
            if n >= count:
                break
        elapsed = time.perf_counter() - start
        print('consumed {} messages of {} bytes in {:.2f}s: {:,.0f} msg/s'.format(
            n, args.size, elapsed, n / elapsed))
        return 0
    finally:
        if created:
            await client.delete_stream(stream)

__all__ = [
    'bench', 'group_reset', 'group_status', 'publish', 'stream_create', 'stream_delete',
    'stream_info', 'super_stream_create', 'super_stream_delete', 'super_stream_info', 'tail',
]
