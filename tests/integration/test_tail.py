"""
``Offset.from_end(n)``, ``end_offset``, ``stop_at_end`` and ``rbfly tail``
on RabbitMQ 3.10, 4.0 and 4.3: each finds the end of a stream with what
its broker has (issue 33: tail worked on 4.3 only, and an offset past the
end waited without a word).
"""

import asyncio
import json
import subprocess
import sys
import typing as tp
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rbfly.streams import Offset, PublisherBatchFast, StreamsClient, streams_client
from rbfly.testing import connect

from .test_cli import run

ROOT = Path(__file__).resolve().parents[2]
WAIT = 30

@pytest.fixture(params=['3.10', '4.0', '4.3'])
def broker(request: pytest.FixtureRequest) -> str:
    """Each broker in turn: RabbitMQ 3.10, 4.0, 4.3."""
    fixture = {'3.10': 'url', '4.0': 'url4', '4.3': 'url43'}[request.param]
    return str(request.getfixturevalue(fixture))

@pytest.fixture
async def client(broker: str) -> AsyncIterator[StreamsClient]:
    async with streams_client(broker) as c:
        yield c

@pytest.fixture
async def stream(client: StreamsClient) -> AsyncIterator[str]:
    """A stream of 20 messages ("0" to "19") in chunks of 7, 7 and 6."""
    name = 'rbfly-tail-{}'.format(uuid.uuid4().hex[:10])
    await client.create_stream(name)
    async with client.publisher(name, cls=PublisherBatchFast) as publisher:
        for start, end in ((0, 7), (7, 14), (14, 20)):
            await publisher.send_many([str(i) for i in range(start, end)])
    try:
        yield name
    finally:
        await client.delete_stream(name)

async def bodies(client: StreamsClient, stream: str, offset: Offset) -> list[object]:
    async with asyncio.timeout(WAIT):
        return [b async for b in client.subscribe(stream, offset=offset, stop_at_end=True)]

async def test_from_end(client: StreamsClient, stream: str) -> None:
    """The last n messages, across chunks; more than the stream holds: all; 0: none."""
    assert await client.end_offset(stream) == 20
    assert await bodies(client, stream, Offset.from_end(3)) == ['17', '18', '19']
    assert await bodies(client, stream, Offset.from_end(9)) == [str(i) for i in range(11, 20)]
    assert await bodies(client, stream, Offset.from_end(100)) == [str(i) for i in range(20)]
    assert await bodies(client, stream, Offset.from_end(0)) == []

async def test_from_end_then_follow(client: StreamsClient, stream: str) -> None:
    """Without stop_at_end: the last n messages, then the new ones."""
    got: list[object] = []
    async with asyncio.timeout(WAIT):
        messages = client.subscribe(stream, offset=Offset.from_end(2))
        async for body in messages:
            got.append(body)
            if len(got) == 2:
                async with client.publisher(stream) as publisher:
                    await publisher.send('20')
            if len(got) == 3:
                break
    assert got == ['18', '19', '20']

async def test_stop_at_end(client: StreamsClient, stream: str) -> None:
    """Every broker: up to the end as of the call, from any start; past the end: nothing."""
    assert await bodies(client, stream, Offset.FIRST) == [str(i) for i in range(20)]
    assert await bodies(client, stream, Offset.offset(12)) == [str(i) for i in range(12, 20)]
    # (the last chunk: the broker may write a batch as more than one chunk)
    last = await bodies(client, stream, Offset.LAST)
    assert last and last == [str(i) for i in range(int(tp.cast(str, last[0])), 20)]
    assert await bodies(client, stream, Offset.NEXT) == []
    assert await bodies(client, stream, Offset.offset(20)) == []
    assert await bodies(client, stream, Offset.offset(99999999)) == []

async def test_empty_stream(client: StreamsClient) -> None:
    """No messages: no end, from_end and stop_at_end read nothing (3.10: after its wait)."""
    name = 'rbfly-tail-{}'.format(uuid.uuid4().hex[:10])
    await client.create_stream(name)
    try:
        assert await client.end_offset(name) is None
        assert await bodies(client, name, Offset.from_end(5)) == []
        assert await bodies(client, name, Offset.FIRST) == []
    finally:
        await client.delete_stream(name)

def test_bad_from_end() -> None:
    with pytest.raises(ValueError, match='count of messages'):
        Offset.from_end(-1)
    with pytest.raises(ValueError, match='count of messages'):
        Offset.from_end(True)
    assert str(Offset.from_end(5)) == 'offset=from_end(5)'

def test_tail_cli(
        broker: str, client: StreamsClient, stream: str,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """
    ``tail -n 3``: the last 3; ``tail``: everything, then it stops, on
    every broker; ``--offset`` with ``-n``: at most n from there; past the
    end: said on stderr, with the end, and nothing waits.
    """
    status, out, _ = run(capsys, monkeypatch, broker, 'tail', stream, '-n', '3')
    assert status == 0 and out.split() == ['17', '18', '19']
    status, out, _ = run(capsys, monkeypatch, broker, 'tail', stream)
    assert status == 0 and out.split() == [str(i) for i in range(20)]
    status, out, _ = run(capsys, monkeypatch, broker, 'tail', stream, '--offset', '5', '-n', '2')
    assert status == 0 and out.split() == ['5', '6']
    status, out, _ = run(capsys, monkeypatch, broker, 'tail', stream, '--offset', '18', '-n', '5')
    assert status == 0 and out.split() == ['18', '19']
    status, out, err = run(capsys, monkeypatch, broker, 'tail', stream,
                           '--offset', '99999999', '-n', '1')
    assert status == 0 and out == ''
    assert err == ("rbfly: stream '{}' ends at offset 20 (its last message is 19); offset"
                   ' 99999999 is past the end: nothing to print (--follow waits for it)\n'
                   .format(stream))

def test_tail_follow_past_end(broker: str, client: StreamsClient, stream: str) -> None:
    """``--follow`` from past the end says it waits, then prints what comes."""
    rbfly = [sys.executable, '-m', 'rbfly', '--url', broker]
    tail = subprocess.Popen(
        [*rbfly, 'tail', stream, '--offset', '20', '-n', '1', '--follow'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )
    try:
        assert tail.stderr is not None
        line = tail.stderr.readline()
        assert line == ("rbfly: stream '{}' ends at offset 20 (its last message is 19);"
                        ' waiting for messages from offset 20\n'.format(stream))
        subprocess.run([*rbfly, 'publish', stream], input='late\n', text=True, check=True,
                       capture_output=True, cwd=ROOT)
        out, _ = tail.communicate(timeout=WAIT)
    finally:
        tail.kill()
    assert tail.returncode == 0 and out == 'late\n'

def test_readme_pipeline(broker: str, stream: str) -> None:
    """The README's line, on the broker the docs install (3.10) too."""
    script = '{} -m rbfly --url {} tail {} --format json | head -n 3'.format(
        sys.executable, broker, stream)
    result = subprocess.run(['bash', '-o', 'pipefail', '-c', script], capture_output=True,
                            text=True, check=False, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert [json.loads(line)['body'] for line in result.stdout.splitlines()] == ['0', '1', '2']

async def test_from_end_resolved_and_reset(client: StreamsClient, stream: str) -> None:
    """
    ``resolve_offset`` (RabbitMQ 4.3+) and ``reset_group`` (every broker)
    take ``Offset.from_end`` as a subscription does: n messages before the end.
    """
    if (await connect(client)).broker_version >= (4, 3):
        assert await client.resolve_offset(stream, Offset.from_end(3)) == 17
        assert await client.resolve_offset(stream, Offset.from_end(100)) == 0
    [reset] = await client.reset_group('g', Offset.from_end(3), stream=stream, force=True)
    assert (reset.stored, reset.resume) == (16, 17)
    assert await bodies(client, stream, Offset.reference('g')) == ['17', '18', '19']
