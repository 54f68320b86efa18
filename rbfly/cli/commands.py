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
import asyncio
import contextlib
import dataclasses as dtc
import functools
import json
import re
import sys
import time
import typing as tp
import uuid
from collections.abc import Callable

from ..amqp import AMQPProperties, MessageCtx, get_message_ctx
from ..error import RbFlyError
from ..streams import (
    FeatureNotSupported,
    MessageFilter,
    Offset,
    PublisherBatchFast,
    PublisherBinBatch,
    PublisherPipelined,
    StreamsClient,
)
from ..streams.error import PreconditionFailed, StreamDoesNotExist
from ..streams.lag import openmetrics
from ..streams.offset import OffsetType
from ..streams.serializers import Codec, JSONSerializer, MsgpackSerializer, Serializer
from ..streams.types import PartitionStatus
from ..types import Symbol
from .lines import LineReader
from .output import (
    BodyDecoder,
    Progress,
    message_json,
    message_text,
    plural,
    print_facts,
    print_table,
    shown_offset,
)

FILTER_PROPERTY = 'filter'
"""Application property holding the filter value of ``publish --filter-value``."""

class CommandError(RbFlyError):
    """A command cannot do what it was asked; the message says what to do instead."""

STREAM_FLAGS = {
    'max_age': '--max-age', 'max_length_bytes': '--max-length-bytes',
    'max_segment_size_bytes': '--max-segment-size-bytes', 'initial_cluster_size': '--replicas',
    'filter_size': '--filter-size',
}
"""The flag of each ``create_stream`` parameter, for the errors."""

_PARAMETER = re.compile(r'\b({})\b'.format('|'.join(STREAM_FLAGS)))

def flag_names(text: str) -> str:
    """An error of :py:meth:`StreamsClient.create_stream`, naming flags, not parameters."""
    return _PARAMETER.sub(lambda m: STREAM_FLAGS[m.group(1)], text)

STATS_VERSIONS = (
    (('first_chunk_id', 'committed_chunk_id'), 'RabbitMQ 3.11+'),
    (('last_chunk_id',), 'a broker newer than 3.11 (4.0 has it)'),
    (('committed_offset',), 'RabbitMQ 4.3+'),
)
"""The statistics of ``stream info`` and the brokers that give them."""

async def stream_create(client: StreamsClient, args: argparse.Namespace) -> int:
    named = {
        'max_age': args.max_age, 'max_length_bytes': args.max_length_bytes,
        'max_segment_size_bytes': args.max_segment_size_bytes,
        'initial_cluster_size': args.replicas, 'filter_size': args.filter_size,
    }
    try:
        await client.create_stream(args.name, **named)
    except ValueError as ex:
        raise ValueError(flag_names(str(ex))) from None
    except PreconditionFailed:
        # the broker's answer to a stream that exists with other arguments
        # (it tells neither which nor their values)
        if not await client.stream_exists(args.name):
            raise
        given = ' '.join(
            '{} {}'.format(STREAM_FLAGS[k], v) for k, v in named.items() if v is not None
        ) or 'none'
        if args.exist_ok or given == 'none':
            print('rbfly: stream {!r} exists with other arguments{}: left as it is'.format(
                args.name, '' if given == 'none' else ' than ' + given), file=sys.stderr)
            return 0
        raise CommandError(
            'stream {0!r} exists with other arguments than {1} (the broker does not say'
            ' which): give --exist-ok to use it as it is, or delete it first'
            ' (rbfly stream delete {0}: its messages go with it)'.format(args.name, given),
        ) from None
    return 0

async def stream_delete(client: StreamsClient, args: argparse.Namespace) -> int:
    await client.delete_stream(args.name, missing_ok=False)
    return 0

async def stream_info(client: StreamsClient, args: argparse.Namespace) -> int:
    info = await client.stream_metadata(args.name)
    text = args.format == 'text'
    replicas = ' '.join('{}:{}'.format(*r) for r in info.replicas)
    facts: dict[str, tp.Any] = {
        'stream': info.stream,
        'leader': None if info.leader is None else '{}:{}'.format(*info.leader),
        # a stream of one member (a broker of one node) has no replicas
        'replicas': replicas or ('none' if text else ''),
    }
    stats: dict[str, int] = {}
    with contextlib.suppress(FeatureNotSupported):  # statistics: RabbitMQ 3.11+
        stats = await client.stream_stats(args.name)
    facts.update(stats)
    print_facts(facts, args.format)
    if text:
        version = client.server_properties.get('version', 'unknown')
        for fields, needs in STATS_VERSIONS:
            missing = [f for f in fields if f not in stats]
            if missing:
                print('{}: not given by RabbitMQ {}; needs {}'.format(
                    ', '.join(missing), version, needs))
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
        print_table([
            {**dtc.asdict(s), 'stored': shown_offset(s.stored)} for s in statuses
        ], 'json')
        return 0
    if args.format == 'openmetrics':
        print(openmetrics(args.name, statuses), end='')
        return 0

    def bound(value: int | None, exact: bool) -> int | str | None:
        # before RabbitMQ 4.3, the end is the first offset of the last
        # chunk: it and the lag are lower bounds (an empty stream's is 0)
        return value if value is None or exact else '{}+'.format(value)

    def caught_up(s: PartitionStatus) -> str:
        return '-' if s.caught_up is None else 'yes' if s.caught_up else 'no'

    print_table([{
        'stream': s.stream, 'stored': shown_offset(s.stored), 'first': s.first,
        'end': bound(s.end, s.end_exact),
        'lag': s.lag if s.caught_up is not None
        else bound(s.lag, s.end_exact or s.end is None),
        'caught-up': caught_up(s),
    } for s in statuses], 'text')
    return 0

async def group_reset(client: StreamsClient, args: argparse.Namespace) -> int:
    resets = await client.reset_group(
        args.name, args.to, stream=args.stream, super_stream=args.super_stream,
        force=args.force, dry_run=not args.force, watch=args.watch,
    )
    print_table([{
        'stream': r.stream, 'before': shown_offset(r.before), 'stored': shown_offset(r.stored),
        'resume': r.resume,
    } for r in resets], args.format)
    if not args.force:
        # a dry run did what it was asked: status 0 (kafka-consumer-groups
        # --reset-offsets without --execute prints the plan, exits 0)
        print('rbfly: dry run, nothing stored (no offset of group {!r} moved in {:g}s, but a'
              ' quiet consumer does not show): stop its consumers and give --force to store'
              ' these offsets'.format(args.name, args.watch), file=sys.stderr)
    return 0

async def _partitions(client: StreamsClient, name: str) -> list[str] | None:
    """
    The partitions of the super stream ``name``; ``None`` when there is no
    such super stream (or the broker is older than 3.11).
    """
    with contextlib.suppress(FeatureNotSupported, StreamDoesNotExist):
        if await client.super_stream_exists(name):
            return await client.super_stream_partitions(name)
    return None

def _key_field(msg: MessageCtx, field: str) -> str | None:
    """The routing key of ``publish --key-field``: an application property, else a body field."""
    value: object = (msg.app_properties or {}).get(field)
    if value is None and isinstance(msg.body, dict):
        value = msg.body.get(field)
    return None if value is None else str(value)

def _routing_key(args: argparse.Namespace) -> Callable[[tp.Any], str]:
    """The routing key of each message, ``publish --key`` or ``--key-field``."""
    key, field = args.key, args.key_field
    if key is not None:
        return lambda msg: tp.cast(str, key)
    return lambda msg: _key_field(msg, field) or ''

def _codec(args: argparse.Namespace) -> Codec | None:
    """
    The codec of ``publish --serializer json|msgpack`` (json is the
    default with ``--json``), with ``--content-type`` instead of the
    serializer's: what a subscription with the serializer reads.
    ``None``: no serializer (``--serializer amqp``, text lines).
    """
    name = args.serializer or ('json' if args.json else None)
    if name not in ('json', 'msgpack'):
        return None
    serializer: Serializer
    if name == 'json':
        serializer = JSONSerializer()
    else:
        try:
            serializer = MsgpackSerializer()
        except ImportError:
            raise CommandError('--serializer msgpack needs the msgpack package'
                               ' (pip install msgpack)') from None
    return Codec(serializer, content_type=args.content_type)

@functools.cache
def _typed(content_type: str) -> AMQPProperties:
    """The properties of the lines of ``publish --content-type`` (one object, shared)."""
    return AMQPProperties(content_type=Symbol(content_type))

def _message(line: bytes, args: argparse.Namespace, number: int) -> tp.Any:
    """
    A line as a message: text, raw bytes, the line's bytes with a content
    type, a JSON body or a JSON message (serialized by the publisher's
    codec, when it has one).
    """
    if args.binary:
        return line
    if args.content_type is not None and not args.json and args.serializer is None:
        msg = MessageCtx(line, properties=_typed(args.content_type))
        if args.filter_value is not None:
            msg.app_properties = {FILTER_PROPERTY: args.filter_value}
        return msg
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
    if args.key_field is not None and _key_field(msg, args.key_field) is None:
        raise ValueError('line {}: no {!r} in the body nor the application properties'
                         ' (--key-field)'.format(number, args.key_field))
    return msg

async def publish(client: StreamsClient, args: argparse.Namespace) -> int:
    cls = PublisherBinBatch if args.binary else PublisherBatchFast
    options: dict[str, tp.Any] = {}
    codec = _codec(args)
    if codec is not None:
        options['serializer'] = codec
    if args.filter_value is not None:
        value = args.filter_value
        options['filter_extract'] = lambda m: value
    progress = Progress('messages confirmed')
    with _source(args) as source:
        if args.key is not None or args.key_field is not None:
            if not await client.super_stream_exists(args.name_):
                raise CommandError('{!r} is not a super stream: --key and --key-field route'
                                   ' to the partitions of a super stream'.format(args.name_))
            async with client.super_stream_publisher(
                    args.name_, _routing_key(args), routing=args.routing, name=args.name,
                    cls=cls, **options) as publisher:
                confirmed = await _publish_lines(publisher, source, args, progress)
        else:
            try:
                async with client.publisher(
                        args.name_, name=args.name, cls=cls, **options) as publisher:
                    confirmed = await _publish_lines(publisher, source, args, progress)
            except StreamDoesNotExist:
                partitions = await _partitions(client, args.name_)
                if partitions is None:
                    raise
                raise CommandError(
                    '{!r} is a super stream (partitions: {}): give --key KEY (every line to'
                    ' the partition of KEY), or with --json --key-field FIELD (the value of'
                    ' FIELD in each line), or publish to a partition'.format(
                        args.name_, ' '.join(partitions)),
                ) from None
    progress.done()
    print('{} confirmed'.format(plural(confirmed, 'message')))
    return 0

def _source(args: argparse.Namespace) -> contextlib.AbstractContextManager[tp.BinaryIO]:
    """The input of ``publish``: ``--file`` (closed after), else stdin (left open)."""
    if args.file:
        return open(args.file, 'rb')
    return contextlib.nullcontext(sys.stdin.buffer)

async def _publish_lines(
        publisher: tp.Any, source: tp.BinaryIO, args: argparse.Namespace, progress: Progress,
) -> int:
    """
    Publish each line of ``source`` as it comes: the lines read together go
    as one batch, sent when ``--batch`` lines are collected, at the end of
    the input, or ``--linger`` seconds after the first line of the batch
    (``tail -f | rbfly publish`` publishes each line within that time).

    :return: The number of messages confirmed.
    """
    loop = asyncio.get_running_loop()
    confirmed = pending = number = 0
    deadline: float | None = None  # when the batch collected is sent at the latest

    async def flush() -> None:
        nonlocal confirmed, pending, deadline
        await publisher.flush()
        confirmed += pending
        pending = 0
        deadline = None
        progress.update(confirmed)

    async with LineReader(source) as reader:
        while True:
            timeout = None if deadline is None else max(0.0, deadline - loop.time())
            lines = await reader.read(timeout)
            if lines is None:
                break
            for line in lines:
                number += 1
                publisher.batch(_message(line, args, number))
                pending += 1
                if pending == args.batch:
                    await flush()
            if pending and deadline is None:
                deadline = loop.time() + args.linger
            if pending and (not lines or loop.time() >= deadline):  # type: ignore[operator]
                await flush()
    await flush()
    return confirmed

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
    decode = BodyDecoder(_note)
    n = 0
    try:
        messages = client.subscribe(
            args.name, offset=offset, filter=flt, amqp=not args.binary, stop_at_end=to_end,
            on_decode_error=args.on_decode_error,
        )
        async with contextlib.aclosing(messages):
            async for _ in messages:
                msg = get_message_ctx()
                if wanted is not None and value(msg) != wanted:
                    continue
                print(show(msg, msg.body if args.no_decode else decode(msg)),
                      flush=args.follow)
                n += 1
                if n == count:
                    break
    except StreamDoesNotExist:
        partitions = await _partitions(client, args.name)
        if not partitions:
            raise
        raise CommandError(
            '{!r} is a super stream: tail reads one partition at a time, e.g.'
            ' rbfly tail {} (partitions: {})'.format(
                args.name, partitions[0], ' '.join(partitions)),
        ) from None
    return 0

def _note(text: str) -> None:
    """A note of ``tail`` on stderr (stdout holds the messages)."""
    print('rbfly: {}'.format(text), file=sys.stderr, flush=True)

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
        elapsed = published = time.perf_counter() - start
        progress.done()
        if args.what == 'publish':
            print('published {} of {} bytes in {:.2f}s: {:,.0f} msg/s'.format(
                plural(count, 'message'), args.size, elapsed, count / elapsed))
            return 0
        n = 0
        start = time.perf_counter()
        async for chunk in client.subscribe_chunks(stream, offset=Offset.FIRST):
            n += len(chunk)
            if n >= count:
                break
        elapsed = time.perf_counter() - start
        print('consumed {} of {} bytes in {:.2f}s: {:,.0f} msg/s (published first,'
              ' {:.2f}s not counted)'.format(
                  plural(n, 'message'), args.size, elapsed, n / elapsed, published))
        return 0
    finally:
        if created:
            await client.delete_stream(stream)

__all__ = [
    'bench', 'group_reset', 'group_status', 'publish', 'stream_create', 'stream_delete',
    'stream_info', 'super_stream_create', 'super_stream_delete', 'super_stream_info', 'tail',
]
