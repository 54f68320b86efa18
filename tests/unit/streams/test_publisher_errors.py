"""
A publisher's reaction to the broker's PublishError, without a broker: a
message rejected for good fails its waiter; one sent while the broker had
dropped the publisher (its stream's leader moved) is kept to be sent again
and the publisher is declared again.
"""

import asyncio
import typing as tp

from rbfly.streams import MessageRejected
from rbfly.streams.publisher import Publisher, _Confirmation

class Client:
    def __init__(self) -> None:
        self.unknown: list[object] = []

    def _publisher_unknown(self, publisher: object) -> None:
        self.unknown.append(publisher)

async def test_publish_errors() -> None:
    client = Client()
    publisher = Publisher(tp.cast(tp.Any, client), 'orders', 0, 'name', 0)
    loop = asyncio.get_running_loop()
    futures = [loop.create_future() for _ in range(2)]
    for pid, fut in zip((1, 2), futures, strict=True):
        publisher._unconfirmed[pid] = 'm{}'.format(pid)
        publisher._waiting[pid] = _Confirmation(fut, 1)

    publisher.on_error([(1, 0x12)])  # publisher does not exist
    assert publisher._unconfirmed == {1: 'm1', 2: 'm2'}
    assert not futures[0].done()
    assert client.unknown == [publisher]

    publisher.on_error([(2, 0x02)])  # stream does not exist: rejected
    assert publisher._unconfirmed == {1: 'm1'}
    assert isinstance(futures[1].exception(), MessageRejected)

    publisher.on_confirm([1])
    assert futures[0].result() is None
