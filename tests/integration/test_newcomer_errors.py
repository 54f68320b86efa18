"""
The errors a newcomer meets first, against real brokers: the client
pointed at another port of RabbitMQ, used after its ``async with`` block,
a message larger than the broker's frames.
"""

import logging
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from rbfly.error import MessageTooLarge
from rbfly.streams import StreamsClient, streams_client
from rbfly.streams.error import ClientClosed, ConnectionLost
from rbfly.testing import client_options

ROOT = Path(__file__).parents[2]

def at_port(url: str, port: int) -> str:
    p = urlsplit(url)
    return p._replace(netloc='{}@{}:{}'.format(
        p.netloc.rpartition('@')[0], p.hostname, port)).geturl()

@pytest.mark.parametrize('port, expected', [
    (5672, 'this is an AMQP 0-9-1 port'),
    (15672, 'HTTP'),
])
async def test_other_port_of_rabbitmq(
        url: str, port: int, expected: str, caplog: pytest.LogCaptureFixture,
) -> None:
    """
    The AMQP 0-9-1 port and the management plugin's are named, with the
    stream port; no TLS hint, and nothing logged (the error says it all).
    """
    client = streams_client(at_port(url, port))
    with caplog.at_level(logging.DEBUG, 'rbfly'), pytest.raises(ConnectionLost) as info:
        await client.create_stream('never')
    await client.disconnect()
    text = str(info.value)
    assert expected in text and '5552' in text
    assert 'TLS' not in text
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []

async def test_message_too_large_names_frame_size(client: StreamsClient, stream: str) -> None:
    """The error says the limit is the frame size negotiated with the broker, and its value."""
    asked = client_options(client).frame_max
    async with client.publisher(stream) as publisher:
        with pytest.raises(MessageTooLarge) as info:
            await publisher.send(b'x' * (asked + 1))
    text = str(info.value)
    found = re.search(r'at most (\d+) bytes \(the frame size negotiated with the broker', text)
    assert found is not None, text
    assert 0 < int(found.group(1)) <= asked  # the smaller of the broker's and the client's
    assert 'frame_max' in text

PROGRAM = '''
import asyncio, sys
from rbfly.streams import streams_client
from rbfly.streams.error import ClientClosed

async def main(url, stream):
    async with streams_client(url) as client:
        await client.create_stream(stream)
    try:
        await client.delete_stream(stream)
    except ClientClosed as ex:
        print('closed:', ex)
    else:
        print('reconnected')
    async with client:  # entered again: open again
        await client.delete_stream(stream)
    client = streams_client(url)
    await client.create_stream(stream)
    await client.disconnect()  # RbFly 0.10: usable after disconnect()
    await client.delete_stream(stream)
    await client.disconnect()

asyncio.run(main(sys.argv[1], sys.argv[2]))
'''

def test_use_after_async_with(any_url: str, stream: str) -> None:
    """
    Used after its ``async with`` block, a client raises ClientClosed and
    opens no connection: nothing leaks (warnings are errors); entered
    again, it works; after disconnect() it connects again, as in 0.10.
    """
    result = subprocess.run(
        [sys.executable, '-X', 'dev', '-W', 'error', '-c', textwrap.dedent(PROGRAM),
         any_url, stream],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith('closed: the client was closed at the end of its async'
                                    ' with block'), result.stdout
    assert 'Warning' not in result.stderr and 'unclosed' not in result.stderr, result.stderr

def test_client_closed_is_typed() -> None:
    """ClientClosed is a StreamsError and a RuntimeError, not a ConnectionLost (not retried)."""
    assert issubclass(ClientClosed, RuntimeError)
    assert not issubclass(ClientClosed, ConnectionLost)
