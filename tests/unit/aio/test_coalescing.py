"""
Publish frames of the tasks that one read of confirmations woke go in one
write (:py:meth:`rbfly.streams.aio.connection.StreamsProtocol._coalesce`),
bounded by :py:data:`~rbfly.streams.aio.connection.COALESCE_MAX`; with the
fake transport of :py:mod:`._fakes`.
"""

from __future__ import annotations

import asyncio
import typing as tp

from rbfly.streams.aio.connection import COALESCE_MAX
from rbfly.streams.protocol import PublishConfirm, encode

from ._fakes import handshake

class Waking:
    """A publisher whose confirmations wake the task awaiting each message."""
    def __init__(self) -> None:
        self.waiting: dict[int, asyncio.Future[None]] = {}

    def wait(self, publishing_id: int) -> asyncio.Future[None]:
        fut = asyncio.get_running_loop().create_future()
        self.waiting[publishing_id] = fut
        return fut

    def on_confirm(self, publishing_ids: tp.Sequence[int]) -> None:
        for pid in publishing_ids:
            self.waiting.pop(pid).set_result(None)

    def on_error(self, errors: tp.Sequence[tuple[int, int]]) -> None:
        raise AssertionError(errors)

    def on_connection_lost(self, error: Exception) -> None:
        pass

async def test_frames_of_woken_tasks_coalesced() -> None:
    """
    The Publish frames that the tasks woken by one read of confirmations
    send go in one write, in the order the tasks sent them; a frame sent
    afterwards is written at once again.
    """
    protocol, transport = handshake()
    publisher = Waking()
    protocol.publishers[3] = publisher
    encoder = protocol.publish_encoder
    transport.writes = 0  # the handshake's

    async def sender(pid: int) -> None:
        await publisher.wait(pid)
        _, frame = encoder.encode(3, [b'm%d' % pid], 0, 100 + pid, False, None, None)
        protocol.send_frame(frame)

    tasks = [asyncio.ensure_future(sender(pid)) for pid in range(1, 6)]
    await asyncio.sleep(0)  # the tasks wait for their confirmations
    protocol.data_received(encode(PublishConfirm(3, [1, 2, 3, 4, 5])))
    assert transport.writes == 0
    await asyncio.gather(*tasks)
    await asyncio.sleep(0)
    assert transport.writes == 1
    sent = transport.sent()
    assert [[pid for pid, _ in c.messages] for c, _ in sent] == [  # type: ignore[attr-defined]
        [101], [102], [103], [104], [105],
    ]

    _, frame = encoder.encode(3, [b'm'], 0, 200, False, None, None)
    protocol.send_frame(frame)
    assert transport.writes == 2

async def test_frames_coalesced_across_confirmations_of_one_read() -> None:
    """Tasks woken by the second confirmation of a read, of another publisher, join the write."""
    protocol, transport = handshake()
    first, second = Waking(), Waking()
    protocol.publishers[3] = first
    protocol.publishers[4] = second
    encoder = protocol.publish_encoder
    transport.writes = 0  # the handshake's

    async def sender(publisher: Waking, ident: int, pid: int) -> None:
        await publisher.wait(pid)
        _, frame = encoder.encode(ident, [b'm'], 0, 100 + pid, False, None, None)
        protocol.send_frame(frame)

    tasks = [
        asyncio.ensure_future(sender(first, 3, 1)),
        asyncio.ensure_future(sender(second, 4, 2)),
    ]
    await asyncio.sleep(0)
    protocol.data_received(encode(PublishConfirm(3, [1])) + encode(PublishConfirm(4, [2])))
    await asyncio.gather(*tasks)
    await asyncio.sleep(0)
    assert transport.writes == 1
    assert [c.publisher_id for c, _ in transport.sent()] == [3, 4]  # type: ignore[attr-defined]

async def test_coalesced_frames_bounded() -> None:
    """
    Frames held for the write are written once they reach ``COALESCE_MAX``
    bytes, and a frame of that size goes alone, after those held: the
    transport's write buffer, and its high-water mark, see them.
    """
    protocol, transport = handshake()
    publisher = Waking()
    protocol.publishers[3] = publisher
    encoder = protocol.publish_encoder
    transport.writes = 0  # the handshake's
    big = b'x' * COALESCE_MAX
    small = b'y' * (COALESCE_MAX // 3)
    sizes: list[int] = []

    async def sender() -> None:
        await publisher.wait(1)
        for i, body in enumerate([small, small, big, small, small, small]):
            _, frame = encoder.encode(3, [body], 0, 10 + i, False, None, None)
            protocol.send_frame(frame)
            sizes.append(transport.writes)

    task = asyncio.ensure_future(sender())
    await asyncio.sleep(0)
    protocol.data_received(encode(PublishConfirm(3, [1])))
    await task
    # two small held; the big one: those two written, then it alone; then
    # three small: the third passes the bound, all three written
    assert sizes == [0, 0, 2, 2, 2, 3]
    await asyncio.sleep(0)
    assert transport.writes == 3
    sent = transport.sent()
    assert [len(c.messages[0][1]) for c, _ in sent] == [  # type: ignore[attr-defined]
        len(small), len(small), len(big), len(small), len(small), len(small),
    ]

async def test_coalesced_frames_not_written_after_loss() -> None:
    """Frames waiting for the write are dropped with a lost connection, not written after it."""
    protocol, transport = handshake()
    publisher = Waking()
    protocol.publishers[3] = publisher
    encoder = protocol.publish_encoder
    transport.writes = 0  # the handshake's

    async def sender() -> None:
        await publisher.wait(1)
        _, frame = encoder.encode(3, [b'm'], 0, 2, False, None, None)
        protocol.send_frame(frame)
        transport.abort()

    task = asyncio.ensure_future(sender())
    await asyncio.sleep(0)
    protocol.data_received(encode(PublishConfirm(3, [1])))
    await task
    await asyncio.sleep(0)
    assert transport.writes == 0
