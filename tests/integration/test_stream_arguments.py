"""
Every stream argument ``create_stream`` names, read back from the broker
(``rabbitmqctl list_queues``), their checks, and filtering's
``match_unfiltered`` with messages published without a filter value.
"""

import asyncio
import json
import os
import re
import socket
import subprocess
import typing as tp
from pathlib import Path

import pytest

from rbfly.amqp import MessageCtx
from rbfly.error import ChunkTooLarge
from rbfly.streams import (
    MessageFilter,
    Offset,
    PublisherBatchFast,
    StreamsClient,
    SubEntryBatch,
    streams_client,
)
from rbfly.testing import FakeBroker, own_connection
from rbfly.types import AMQPAppProperties

SCRIPT = os.environ.get('RBFLY_BROKERS_SCRIPT') or str(
    Path(__file__).resolve().parents[2] / 'scripts' / 'brokers.sh'
)

def arguments(broker: str, stream: str) -> dict[str, object]:
    """A stream's arguments as the broker keeps them (``x-`` prefix dropped)."""
    out = subprocess.run(
        [SCRIPT, 'ctl', broker, 'rabbitmqctl', '-q', 'list_queues', 'name', 'arguments'],
        capture_output=True, text=True, check=True,
    ).stdout
    for line in out.splitlines():
        name, _, args = line.partition('\t')
        if name == stream:
            # [{"x-max-age","1h"},{"x-initial-cluster-size",1}] -> a dict
            pairs = re.findall(r'\{"x-([^"]+)",("[^"]*"|[0-9]+)\}', args)
            return {k: json.loads(v) for k, v in pairs}
    raise AssertionError('no stream {} on broker {}'.format(stream, broker))

async def test_every_argument_read_back(url43: str, stream: str) -> None:
    client = streams_client(url43)
    async with client:
        await client.create_stream(
            stream, max_age='12h', max_length_bytes=10**9, max_segment_size_bytes=10**7,
            filter_size=32, leader_locator='client-local', initial_cluster_size=1,
            initial_offset=1000,
        )
        try:
            args = arguments('43', stream)
            assert args['max-age'] == '12h'
            assert args['max-length-bytes'] == 10**9
            assert args['stream-max-segment-size-bytes'] == 10**7
            assert args['stream-filter-size-bytes'] == 32
            assert args['queue-leader-locator'] == 'client-local'
            assert args['initial-cluster-size'] == 1
            # stream-initial-offset: newer brokers (rabbitmq-server PR
            # 17300); RabbitMQ 4.3 drops it, and the stream starts at 0
            assert 'stream-initial-offset' not in args
            async with client.publisher(stream) as publisher:
                await publisher.send(b'first')
            async for chunk in client.subscribe_chunks(stream, offset=Offset.FIRST, timeout=30):
                assert chunk[0].stream_offset == 0
                break
        finally:
            await client.delete_stream(stream)

@pytest.mark.parametrize('broker', ['310', '4', '43'])
async def test_initial_offset_dropped(
        broker: str, url: str, url4: str, url43: str, stream: str) -> None:
    """
    What doc/versions.rst says of ``initial_offset``: RabbitMQ 3.10, 4.0
    and 4.3 take the Create frame with ``stream-initial-offset`` (no
    error), keep no such argument, and the stream starts at offset 0.
    """
    client = streams_client({'310': url, '4': url4, '43': url43}[broker])
    async with client:
        await client.create_stream(stream, initial_offset=1000)
        try:
            assert 'stream-initial-offset' not in arguments(broker, stream)
            async with client.publisher(stream) as publisher:
                await publisher.send(b'first')
            async for chunk in client.subscribe_chunks(stream, offset=Offset.FIRST, timeout=30):
                assert chunk[0].stream_offset == 0
                break
        finally:
            await client.delete_stream(stream)

async def test_every_argument_sent() -> None:
    """
    Every argument ``create_stream`` names goes in the Create frame, by
    the broker's name: the fake broker keeps the arguments it got. RabbitMQ
    4.3 drops ``stream-initial-offset`` (the test above): here rbfly is
    shown to send it (``initial_offset=0`` too: a value, not a default).
    """
    async with FakeBroker() as broker:
        client = streams_client(broker.url)
        async with client:
            for stream, first in (('s-1000', 1000), ('s-0', 0), ('s-max', 2**62 - 1)):
                await client.create_stream(
                    stream, max_age='12h', max_length_bytes=10**9,
                    max_segment_size_bytes=10**7, filter_size=32,
                    leader_locator='client-local', initial_cluster_size=1,
                    initial_offset=first,
                )
                assert broker.store.streams[stream].arguments == {
                    'max-age': '12h',
                    'max-length-bytes': str(10**9),
                    'stream-max-segment-size-bytes': str(10**7),
                    'stream-filter-size-bytes': '32',
                    'queue-leader-locator': 'client-local',
                    'initial-cluster-size': '1',
                    'stream-initial-offset': str(first),
                }
            await client.create_stream('s-none')
            assert broker.store.streams['s-none'].arguments == {}

@pytest.mark.parametrize('options, match', [
    ({'max_length_bytes': 0}, 'max_length_bytes must be a whole number at least 1'),
    ({'max_segment_size_bytes': -5}, 'max_segment_size_bytes'),
    ({'initial_cluster_size': 1.5}, 'initial_cluster_size'),
    ({'filter_size': 15}, 'filter_size must be a whole number from 16 to 255'),
    ({'filter_size': 256}, 'filter_size'),
    ({'initial_offset': -1}, 'initial_offset must be a whole number from 0 to'),
    ({'initial_offset': 2**62}, 'initial_offset'),
    ({'max_age': '1 week'}, 'max_age must be a number and a unit'),
    ({'max_age': 3600}, 'max_age'),
    ({'leader_locator': 'nearest'}, 'leader_locator must be one of'),
])
async def test_bad_arguments(
        client310: StreamsClient, options: dict[str, object], match: str,
) -> None:
    """Refused before the broker sees them, naming the argument; the client goes on."""
    with pytest.raises(ValueError, match=match):
        await client310.create_stream('rbfly-never-created', **options)  # type: ignore[arg-type]
    assert not await client310.stream_exists('rbfly-never-created')

def colour(msg: MessageCtx) -> str | None:
    value = (msg.app_properties or {}).get('colour')
    return value if isinstance(value, str) else None

@pytest.mark.parametrize('unfiltered', [True, False])
async def test_match_unfiltered(client4: StreamsClient, stream: str, unfiltered: bool) -> None:
    """Messages without a filter value come with ``match_unfiltered`` only."""
    async with client4.publisher(stream, cls=PublisherBatchFast, filter_extract=colour) as pub:
        for i in range(90):
            kind = i % 3
            props: AMQPAppProperties = {} if kind == 2 else {'colour': ('red', 'green')[kind]}
            pub.batch(MessageCtx(i, app_properties=props))
            if i % 30 == 29:
                await pub.flush()
        pub.batch(MessageCtx('end', app_properties={'colour': 'green'}))
        await pub.flush()
    flt = MessageFilter(colour, {'green'}, match_unfiltered=unfiltered)
    received = []
    async for body in client4.subscribe(stream, offset=Offset.FIRST, filter=flt, timeout=30):
        if body == 'end':
            break
        received.append(body)
    expected = [i for i in range(90) if i % 3 == 1 or (unfiltered and i % 3 == 2)]
    assert received == expected

async def test_decompression_cap(url: str, stream: str) -> None:
    """
    A gzip sub-entry batch decompressing past the subscriber's cap ends its
    subscription with ChunkTooLarge naming the cap; the client goes on.
    """
    client = streams_client(url, max_chunk_uncompressed=100 * 1024)
    async with client:
        await client.create_stream(stream)
        try:
            async with client.publisher(stream) as publisher:
                await publisher.send(SubEntryBatch([b'\x00' * 2**20, b'end'], 'gzip'))
            with pytest.raises(ChunkTooLarge, match='102400 bytes') as info:
                async for _ in client.subscribe(stream, offset=Offset.FIRST, amqp=False):
                    pass
            assert info.value.limit == 100 * 1024
            async with client.publisher(stream) as publisher:
                await publisher.send(b'fine')
            async for body in client.subscribe(stream, offset=Offset.offset(2)):
                assert body == b'fine'
                break
        finally:
            await client.delete_stream(stream)

@pytest.mark.parametrize('options, error', [
    ({'crc_failure': 'ignore'}, "crc_failure must be 'fail' or 'skip'"),
    ({'max_chunk_uncompressed': 0}, 'max_chunk_uncompressed'),
])
def test_bad_limits(url: str, options: dict[str, tp.Any], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        streams_client(url, **options)

async def test_client_properties_and_buffers(url43: str) -> None:
    """Client properties reach the broker; the socket buffers are set on the connection."""
    client = streams_client(
        url43, client_properties={'team': 'billing', 'product': 'invoicer'},
        receive_buffer=256 * 1024, send_buffer=128 * 1024, connection_name='rbfly-props',
    )
    async with client:
        await client.stream_exists('rbfly-any')  # connected
        ctl = await asyncio.create_subprocess_exec(
            SCRIPT, 'ctl', '43', 'rabbitmqctl', '-q', 'list_stream_connections',
            'client_properties', stdout=asyncio.subprocess.PIPE,
        )
        out = (await ctl.communicate())[0].decode()
        assert ctl.returncode == 0
        ours = [line for line in out.splitlines() if 'rbfly-props' in line]
        assert len(ours) == 1
        assert '{<<"team">>,longstr,<<"billing">>}' in ours[0]
        assert '{<<"product">>,longstr,<<"invoicer">>}' in ours[0]  # over rbfly's own
        protocol = own_connection(client).protocol
        assert protocol is not None and protocol.transport is not None
        sock = protocol.transport.get_extra_info('socket')
        # Linux doubles the size asked for (its bookkeeping)
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) >= 256 * 1024
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) >= 128 * 1024

@pytest.mark.parametrize('options, error', [
    ({'client_properties': {'k': 1}}, 'client_properties must map'),
    ({'client_properties': {'': 'v'}}, 'client_properties must map'),
    ({'receive_buffer': 10}, 'receive_buffer'),
    ({'send_buffer': 2**31}, 'send_buffer'),
])
def test_bad_connection_options(url: str, options: dict[str, tp.Any], error: str) -> None:
    with pytest.raises((TypeError, ValueError), match=error):
        streams_client(url, **options)
