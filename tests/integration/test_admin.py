"""
What the broker holds, read through its management plugin
(:py:mod:`rbfly.streams.admin`, ``rbfly ... list``), on RabbitMQ 3.10, 4.x
and 4.3: streams, super streams, consumer groups with their active
member, publishers and their sequences, offsets stored; and the errors of
a management API that is absent, refuses the credentials, or the user.

The management statistics lag behind the broker (5 s by default): each
check polls the API until it shows what the test made, within a deadline,
and fails with the last listing it saw.
"""

import asyncio
import contextlib
import json
import os
import socket
import ssl
import subprocess
import sys
import typing as tp
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest

from rbfly.streams import Offset, StreamsClient, streams_client
from rbfly.streams.admin import (
    PLUGINS,
    Admin,
    AdminAccessDenied,
    AdminAuthError,
    AdminNotFound,
    AdminNotSupported,
    AdminUnavailable,
    GroupSummary,
)

from .conftest import MANAGEMENT_PORTS, URL
from .proxy import Proxy

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 60.0
"""Seconds for the management API to show a change (its statistics come every 5 s)."""

T = tp.TypeVar('T')

async def until(what: str, read: Callable[[], Awaitable[T]], ok: Callable[[T], bool]) -> T:
    """
    What ``read`` gives once ``ok`` takes it; fails after
    :py:data:`DEADLINE` seconds with the last value read.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE
    while not ok(value := await read()):
        if loop.time() > deadline:
            pytest.fail('{}: not shown by the management API in {:g}s; last: {!r}'.format(
                what, DEADLINE, value))
        await asyncio.sleep(0.2)  # wall time: a poll of the API, whose statistics refresh every 5 s
    return value

def admin(url: str) -> Admin:
    return Admin.from_uri(url, port=MANAGEMENT_PORTS[url])

@pytest.fixture(params=['3.10', '4.x', '4.3'])
def broker(request: pytest.FixtureRequest) -> str:
    """Each broker's stream URL in turn."""
    name = {'3.10': 'url', '4.x': 'url4', '4.3': 'url43'}[request.param]
    return str(request.getfixturevalue(name))

@pytest.fixture(params=['4.x', '4.3'])
def broker4(request: pytest.FixtureRequest) -> str:
    """The stream URL of each broker with single active consumers (3.11+)."""
    return str(request.getfixturevalue('url4' if request.param == '4.x' else 'url43'))

@contextlib.asynccontextmanager
async def made(url: str, stream: str, **options: tp.Any) -> AsyncIterator[StreamsClient]:
    """A client of ``url`` with ``stream`` created, deleted at the end."""
    async with streams_client(url, **options) as client:
        await client.create_stream(stream, max_age='1h')
        try:
            yield client
        finally:
            await client.delete_stream(stream)

async def consume(client: StreamsClient, stream: str, group: str, single_active: bool) -> None:
    """A member of a group, consuming until cancelled."""
    async for _ in client.subscribe(
            stream, name=group, single_active=single_active, offset=Offset.FIRST):
        pass

@contextlib.asynccontextmanager
async def member(
        url: str, stream: str, group: str, client_name: str, single_active: bool = True,
) -> AsyncIterator[StreamsClient]:
    """A member of ``group`` on a connection of its own named ``client_name``."""
    async with streams_client(url, connection_name=client_name) as client:
        task = asyncio.create_task(consume(client, stream, group, single_active))
        try:
            yield client
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

def by_client(group: GroupSummary) -> dict[str | None, str]:
    return {m.client: m.status for m in group.members}

async def test_streams(broker: str, stream: str) -> None:
    """Test that a stream is listed with its leader, arguments and messages."""
    async with made(broker, stream) as client, admin(broker) as api:
        async with client.publisher(stream) as publisher:
            for body in ('a', 'b', 'c'):
                await publisher.send(body)
        # (4.x counts segments too, in its statistics: they may come a
        # collection after the messages)
        streams = await until('stream with 3 messages', api.streams, lambda ss: any(
            s.name == stream and (s.messages or 0) >= 3
            and (broker == URL or s.segments is not None) for s in ss))
        found = next(s for s in streams if s.name == stream)
        assert found.vhost == '/' and found.leader is not None and found.replicas == ()
        assert found.arguments['x-queue-type'] == 'stream' and 'x-max-age' in found.arguments
        assert (found.segments is None) == (broker == URL)  # 4.x counts segments

async def test_super_streams(broker4: str, super_stream: str) -> None:
    """Test that a super stream is listed with its partitions in order, and its keys."""
    async with streams_client(broker4) as client, admin(broker4) as api:
        await client.create_super_stream(super_stream, binding_keys=['eu', 'us', 'asia'])
        try:
            found = [s for s in await api.super_streams() if s.name == super_stream]
            streams = {s.name for s in await api.streams()}
        finally:
            await client.delete_super_stream(super_stream)
    names = tuple('{}-{}'.format(super_stream, k) for k in ('eu', 'us', 'asia'))
    assert len(found) == 1 and found[0].partitions == names
    assert found[0].keys == ('eu', 'us', 'asia') and found[0].vhost == '/'
    assert set(names) <= streams

async def test_group_active_member(broker4: str, stream: str) -> None:
    """
    Test that a single active consumer group's members are listed, the
    active one marked, the offset stored under its name; and that the
    other member is listed active once the first leaves.
    """
    group = 'billing-{}'.format(uuid.uuid4().hex[:6])

    async def groups() -> list[GroupSummary]:
        return await api.groups(stream)

    async with made(broker4, stream) as client, admin(broker4) as api:
        async with member(broker4, stream, group, 'member-a'):
            await until('member-a active', groups, lambda gs: [by_client(g) for g in gs] == [
                {'member-a': 'single_active'}])
            async with member(broker4, stream, group, 'member-b'):
                await client.commit_offset(stream, group, 7)
                found = await until('member-b waiting, offset 7 stored', groups, lambda gs: [
                    (by_client(g), g.stored) for g in gs] == [
                    ({'member-a': 'single_active', 'member-b': 'waiting'}, 7)])
                [g] = found
                assert (g.stream, g.name, g.super_stream) == (stream, group, None)
                assert [m.client for m in g.active] == ['member-a']
                assert all(m.single_active and m.name == group for m in g.members)
                assert {m.client for m in await api.consumers(stream)} == {'member-a', 'member-b'}
            await until('member-b gone', groups, lambda gs: [by_client(g) for g in gs] == [
                {'member-a': 'single_active'}])
        async with member(broker4, stream, group, 'member-b'):
            await until('member-b active alone', groups, lambda gs: [
                by_client(g) for g in gs] == [{'member-b': 'single_active'}])
        # with no member left, the name is listed for the offset stored under it
        await until('the group without members', groups, lambda gs: [
            (g.name, g.members, g.stored) for g in gs] == [(group, (), 7)])
        table = (await rbfly(broker4, 'group', 'list', '--stream', stream)).splitlines()
        assert table[1].split() == [stream, group, *['-'] * 7, '7']

async def test_super_stream_group(url4: str, super_stream: str) -> None:
    """
    Test that a super stream's group is listed on each partition, with one
    active member of the two on each.
    """
    group = 'invoicing'

    async def consume_super(client: StreamsClient) -> None:
        async for _ in client.subscribe_super_stream(
                super_stream, name=group, single_active=True, offset=Offset.FIRST):
            pass

    async with streams_client(url4) as client, admin(url4) as api, \
            streams_client(url4, connection_name='a') as a, \
            streams_client(url4, connection_name='b') as b:
        partitions = await client.create_super_stream(super_stream, 2)
        tasks = [asyncio.create_task(consume_super(c)) for c in (a, b)]
        try:
            found = await until('a and b on each partition, 1 active', lambda: api.groups(
                super_stream=super_stream), lambda gs: len(gs) == 2 and all(
                    {m.client for m in g.members} == {'a', 'b'} and len(g.active) == 1
                    for g in gs))
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await client.delete_super_stream(super_stream)
    assert [g.stream for g in found] == partitions
    assert {(g.name, g.super_stream) for g in found} == {(group, super_stream)}
    assert all(len(g.members) == 2 for g in found)

async def test_named_consumers_310(url: str, stream: str) -> None:
    """
    Test that on RabbitMQ 3.10, which has no single active consumer, the
    consumers sharing a name are listed as a group, each active, nothing
    stored known (no tracking endpoint).
    """
    async with made(url, stream), admin(url) as api:
        async with member(url, stream, 'g', 'one', single_active=False), \
                member(url, stream, 'g', 'two', single_active=False):
            [g] = await until('one and two, up', lambda: api.groups(stream), lambda gs: [
                by_client(g) for g in gs] == [{'one': 'up', 'two': 'up'}])
        assert len(g.active) == 2
        assert g.stored is None and not any(m.single_active for m in g.members)
        with pytest.raises(AdminNotSupported, match='no stream tracking'):
            await api.tracking(stream)

async def test_publishers(broker: str, stream: str) -> None:
    """
    Test that a named publisher is listed with its counts, its client's
    name and (RabbitMQ 4.x) the last publishing id stored for its name.
    """
    name = 'orders-{}'.format(uuid.uuid4().hex[:6])
    tracking = broker != URL
    async with made(broker, stream, connection_name='shop') as client, admin(broker) as api:
        async with client.publisher(stream, name=name) as publisher:
            for body in ('a', 'b', 'c'):
                await publisher.send(body)
            found = await until('publisher confirmed 3', lambda: api.publishers(stream),
                                lambda ps: [
                (p.reference, p.client, p.confirmed, p.sequence is not None) for p in ps
            ] == [(name, 'shop', 3, tracking)])
            sequence = await client.query_publisher_sequence(stream, name)
        assert [p.sequence for p in found] == [sequence if tracking else None]
        [p] = found
        assert (p.stream, p.client, p.published, p.errored) == (stream, 'shop', 3, 0)
        if tracking:
            assert (await api.tracking(stream)).writers == {name: sequence}

async def test_credentials_refused(broker: str) -> None:
    """Test that a wrong password is an error naming the URL and the user, not the password."""
    url = broker.replace('guest:guest@', 'guest:wrong-password@')
    async with Admin.from_uri(url, port=MANAGEMENT_PORTS[broker]) as api:
        with pytest.raises(AdminAuthError) as ex:
            await api.streams()
    text = str(ex.value)
    assert "user 'guest'" in text and 'wrong-password' not in text
    assert text.startswith('http://localhost:{}/api/queues/%2F'.format(MANAGEMENT_PORTS[broker]))

async def test_user_without_tag(url4: str) -> None:
    """Test that a user without a management tag is told to get one."""
    user = 'rbfly-admin-{}'.format(uuid.uuid4().hex[:6])
    base = 'http://localhost:{}/api/users/{}'.format(MANAGEMENT_PORTS[url4], user)
    async with httpx.AsyncClient(auth=('guest', 'guest')) as http:
        (await http.put(base, json={'password': 'pw', 'tags': ''})).raise_for_status()
        try:
            url = url4.replace('guest:guest@', '{}:pw@'.format(user))
            async with Admin.from_uri(url, port=MANAGEMENT_PORTS[url4]) as api:
                with pytest.raises(AdminAccessDenied, match='set_user_tags {} monitoring'.format(
                        user)):
                    await api.consumers()
        finally:
            (await http.delete(base)).raise_for_status()

def free_port() -> int:
    """A port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return int(s.getsockname()[1])

@pytest.mark.parametrize('port', ['nothing', 'stream'])
async def test_unavailable(url4: str, port: str) -> None:
    """
    Test that a port where nothing listens, or which is not the
    management API (the stream port), is an error naming the URL and the
    plugins to enable.
    """
    number = free_port() if port == 'nothing' else 5553
    async with Admin.from_uri(url4, port=number, timeout=10) as api:
        with pytest.raises(AdminUnavailable) as ex:
            await api.publishers()
    text = str(ex.value)
    assert text.startswith('http://localhost:{}/api/stream/publishers/%2F: no management API'
                           ' answers'.format(number))
    assert text.endswith(PLUGINS) and isinstance(ex.value, ConnectionError)

async def test_tracking_of_no_stream(url4: str, stream: str) -> None:
    """Test that the tracking of a stream that does not exist is AdminNotFound."""
    async with admin(url4) as api:
        with pytest.raises(AdminNotFound, match=stream):
            await api.tracking(stream)

@pytest.mark.parametrize('listing', ['streams', 'consumers', 'publishers'])
async def test_no_such_vhost(url4: str, listing: str) -> None:
    """
    Test that a virtual host that does not exist is named as such (its
    stream endpoints answer 404 as they do with the stream plugin off).
    """
    url = url4.rstrip('/') + '/no-such-vhost'
    async with Admin.from_uri(url, port=MANAGEMENT_PORTS[url4]) as api:
        with pytest.raises(AdminNotFound, match='api/vhosts/no-such-vhost: no such virtual host'):
            await getattr(api, listing)()

@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for localhost, and its key (PEM files)."""
    cert, key = tmp_path / 'cert.pem', tmp_path / 'key.pem'
    subprocess.run([
        'openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', str(key),
        '-out', str(cert), '-days', '1', '-subj', '/CN=localhost',
        '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ], check=True, capture_output=True, timeout=60)
    return cert, key

async def test_https(url4: str, stream: str, certificate: tuple[Path, Path]) -> None:
    """
    Test that the management API of a ``rabbitmq-stream+tls://`` URI is
    read over https, checked with the TLS context given: the broker's
    API behind a proxy ending TLS (its certificate self-signed), as
    ``management.ssl.port`` would serve it.
    """
    cert, key = certificate
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert, key)
    proxy = Proxy('localhost', MANAGEMENT_PORTS[url4], ssl=server)
    await proxy.start()
    uri = 'rabbitmq-stream+tls://guest:guest@localhost:5554/'
    try:
        async with made(url4, stream), Admin.from_uri(
                uri, port=proxy.port, ssl=ssl.create_default_context(cafile=cert)) as api:
            assert api.base_url == 'https://localhost:{}'.format(proxy.port)
            assert stream in {s.name for s in await api.streams()}
        async with Admin.from_uri(uri, port=proxy.port) as api:  # the system's CAs
            with pytest.raises(AdminUnavailable, match='CERTIFICATE_VERIFY_FAILED'):
                await api.streams()
    finally:
        await proxy.close()

async def run(url: str, *argv: str) -> tuple[int | None, str, str]:
    """Run the ``rbfly`` command against ``url``'s broker: its status, stdout, stderr."""
    env = {**os.environ, 'RBFLY_URL': url, 'RBFLY_MANAGEMENT_PORT': str(MANAGEMENT_PORTS[url]),
           'PYTHONPATH': str(ROOT)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, '-m', 'rbfly', *argv, env=env, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    return proc.returncode, out.decode(), err.decode()

async def rbfly(url: str, *argv: str) -> str:
    """Run the ``rbfly`` command against ``url``'s broker; its stdout, as it exits 0."""
    status, out, err = await run(url, *argv)
    assert status == 0, err
    return out

async def test_cli_errors(url4: str) -> None:
    """Test that a list command fails with one line naming the URL and the cause, status 1."""
    port = free_port()
    status, out, err = await run(url4, 'publisher', 'list', '--management-port', str(port))
    assert (status, out) == (1, '') and err.count('\n') == 1
    assert err.startswith('rbfly: error: http://localhost:{}/api/stream/publishers/%2F: no'
                          ' management API answers'.format(port))
    status, out, err = await run(url4, 'stream', 'list', '--url', url4.replace(':guest@', ':bad@'))
    assert (status, out) == (1, '') and err == (
        "rbfly: error: http://localhost:{}/api/queues/%2F: credentials of user 'guest' refused"
        ' (Not_Authorized)\n'.format(MANAGEMENT_PORTS[url4]))

async def test_cli(url43: str, stream: str) -> None:
    """Test that ``rbfly stream|group|publisher list`` print what the API gives."""
    group = 'cli-group'
    async with made(url43, stream, connection_name='cli-pub') as client, admin(url43) as api:
        async with client.publisher(stream, name='cli-pub') as publisher, \
                member(url43, stream, group, 'cli-a'), member(url43, stream, group, 'cli-b'):
            await publisher.send('x')
            await until('a group of cli-a and cli-b', lambda: api.groups(stream), lambda gs: (
                len(gs) == 1 and {m.client for m in gs[0].members} == {'cli-a', 'cli-b'}
                and len(gs[0].active) == 1))
            await until('the publisher cli-pub', lambda: api.publishers(stream), lambda ps: [
                p.client for p in ps] == ['cli-pub'])
            await until('the stream listed with its message', api.streams, lambda ss: any(
                s.name == stream and s.messages for s in ss))
            streams = (await rbfly(url43, 'stream', 'list')).splitlines()
            groups = [json.loads(line) for line in (await rbfly(
                url43, 'group', 'list', '--stream', stream, '--format', 'json')).splitlines()]
            table = (await rbfly(url43, 'groups', 'list', '--stream', stream)).splitlines()
            publishers = (await rbfly(url43, 'publishers', 'list', '--stream', stream)).splitlines()
    assert streams[0].split() == ['STREAM', 'MESSAGES', 'SEGMENTS', 'LEADER', 'REPLICAS']
    assert any(line.split()[0] == stream for line in streams[1:])
    [g] = groups
    assert (g['stream'], g['name']) == (stream, group) and len(g['members']) == 2
    assert [m['client'] for m in g['active']] in (['cli-a'], ['cli-b'])
    assert table[0].split()[:6] == ['STREAM', 'GROUP', 'ACTIVE', 'STATUS', 'CLIENT', 'CONNECTION']
    assert sorted(line.split()[2:5] for line in table[1:]) == sorted([
        ['yes', 'single_active', m['client']] if m in g['active']
        else ['no', 'waiting', m['client']] for m in g['members']])
    assert publishers[0].split()[:3] == ['STREAM', 'NAME', 'CLIENT']
    assert publishers[1].split()[:3] == [stream, 'cli-pub', 'cli-pub']
