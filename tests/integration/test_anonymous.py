"""
Anonymous publishers (``dedup=False``): declared without a name, so the
broker keeps no sequence for them and does not drop ids it stored already.
Every message is stored; one sent again may be stored twice.
"""

import typing as tp

import pytest

from rbfly.streams import (
    Publisher,
    PublisherBatchFast,
    PublisherPipelined,
    StreamsClient,
    stream_message_ctx,
)
from rbfly.streams.publishers.awaited import PublisherTrait

from .test_recovery import read_all

@pytest.mark.parametrize('cls', [Publisher, PublisherBatchFast, PublisherPipelined])
async def test_anonymous_publisher_stores_every_message(
        client: StreamsClient, stream: str, cls: type[PublisherTrait],
) -> None:
    """An anonymous publisher of each class stores its messages once, in order."""
    n = 1_000 if cls is not Publisher else 100
    p: tp.Any
    async with client.publisher(stream, cls=cls, dedup=False) as p:
        assert p.name == ''
        for i in range(n):
            if cls is PublisherBatchFast:
                p.batch(i)
            else:
                await p.send(i)
        if cls is not Publisher:
            await p.flush()
        assert p.message_id == n
    assert await read_all(client, stream, n) == list(range(n))

async def test_anonymous_publisher_does_not_deduplicate(
        client: StreamsClient, stream: str,
) -> None:
    """
    The same publishing ids sent twice by anonymous publishers are stored
    twice (a named publisher's second copy is dropped, see
    ``test_publish_ids``).
    """
    for _ in range(2):
        async with client.publisher(stream, cls=PublisherBatchFast, dedup=False) as p:
            for i in range(3):
                p.batch(stream_message_ctx('m{}'.format(i), publish_id=10 + i))
            await p.flush()
    assert await read_all(client, stream, 6) == ['m0', 'm1', 'm2'] * 2

async def test_anonymous_publisher_takes_no_name(client: StreamsClient, stream: str) -> None:
    """A name with ``dedup=False`` is refused before anything is declared."""
    with pytest.raises(ValueError, match="'app': a named publisher deduplicates"):
        async with client.publisher(stream, name='app', dedup=False):
            pytest.fail('declared')
    assert client.metrics().publishers == 0
