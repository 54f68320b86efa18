"""
Updating the secret (password or OAuth 2 token) of a client's user on its
open connections (RabbitMQ 3.13+), with a user the test creates and whose
password it changes with rabbitmqctl.
"""

import asyncio
import os
import subprocess
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from rbfly.streams import FeatureNotSupported, streams_client
from rbfly.streams.backoff import Backoff
from rbfly.streams.error import AuthenticationFailure
from rbfly.testing import connect

from .conftest import read_back
from .proxy import Proxy

SCRIPT = os.environ.get('RBFLY_BROKERS_SCRIPT') or str(
    Path(__file__).resolve().parents[2] / 'scripts' / 'brokers.sh'
)
FAST = Backoff(initial=0.05, maximum=0.5)

async def ctl(*args: str) -> None:
    """rabbitmqctl of the 4.x broker."""
    await asyncio.to_thread(
        subprocess.run, [SCRIPT, 'ctl', '4', 'rabbitmqctl', '-q', *args],
        capture_output=True, text=True, check=True,
    )

@pytest.fixture
async def user(url4: str) -> AsyncIterator[str]:
    """A user with password ``first`` and all permissions on ``/``."""
    name = 'rbfly-secret-{}'.format(uuid.uuid4().hex[:8])
    await ctl('add_user', name, 'first')
    await ctl('set_permissions', '-p', '/', name, '.*', '.*', '.*')
    yield name
    await ctl('delete_user', name)

async def test_update_secret(url4: str, user: str, stream: str) -> None:
    """
    A refused secret raises AuthenticationFailure and changes nothing; an
    accepted one is used when the client connects again (the old password
    no longer works then). The publisher carries on: every message once.
    """
    p = urlsplit(url4)
    proxy = Proxy(p.hostname or 'localhost', p.port or 5553)
    await proxy.start()
    client = streams_client(
        'rabbitmq-stream://{}:first@127.0.0.1:{}/'.format(user, proxy.port), reconnect=FAST,
    )
    try:
        async with client:
            await client.create_stream(stream)
            protocol = await connect(client)
            async with client.publisher(stream, name='secret') as publisher:
                await publisher.send('before')
                await ctl('change_password', user, 'second')
                with pytest.raises(AuthenticationFailure):
                    await client.update_secret('wrong')
                assert protocol.is_open
                await client.update_secret('second')
                assert protocol.is_open
                assert 'second' not in repr(client)
                assert proxy.cut() == 1
                await publisher.send('after')  # connected again, with the new password
            assert proxy.connections == 2
            assert await read_back(client, stream, 2) == ['before', 'after']
            await client.delete_stream(stream)
    finally:
        await proxy.close()

async def test_update_secret_needs_313(url: str) -> None:
    """RabbitMQ 3.10 has no secret update: refused before anything is sent."""
    async with streams_client(url) as client:
        with pytest.raises(FeatureNotSupported, match=r'3\.13'):
            await client.update_secret('guest')
        assert await client.stream_exists('rbfly-no-such-stream') is False
        with pytest.raises(TypeError, match='secret'):
            await client.update_secret(b'guest')  # type: ignore[arg-type]
