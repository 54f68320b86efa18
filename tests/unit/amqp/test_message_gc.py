"""
Messages decoded from a chunk and the cyclic garbage collector: a message
that cannot be part of a reference cycle is left out of it (the collector
went through a chunk's messages again and again, half of the decoding
cost); one that could be, or becomes able to be, is tracked, and cycles
through it are collected.
"""

import gc
import struct
import typing as tp

from rbfly.amqp import MessageCtx, encode_amqp
from rbfly.streams.protocol._chunk import decode_chunk

def chunk_of(*messages: MessageCtx) -> bytes:
    """A chunk of one simple entry per message."""
    entries = []
    for m in messages:
        buffer = bytearray(1024)
        size = encode_amqp(buffer, m)
        entries.append(struct.pack('>I', size) + bytes(buffer[:size]))
    data = b''.join(entries)
    header = struct.pack('>BBHIqQQIIIB3x', 0x50, 0, len(entries), len(entries), 0, 1, 0,
                         0, len(data), 0, 0)
    return header + data

def decoded(*messages: MessageCtx) -> list[MessageCtx]:
    _, received = decode_chunk(chunk_of(*messages), stream='orders', check_crc=False)
    return list(received)

def test_atomic_messages_untracked() -> None:
    """Bodies that are not containers, no sections: left out."""
    received = decoded(MessageCtx(b'bytes'), MessageCtx('text'), MessageCtx(5),
                       MessageCtx(None))
    assert [gc.is_tracked(m) for m in received] == [False] * 4
    assert [m.body for m in received] == [b'bytes', 'text', 5, None]
    assert all(m.stream == 'orders' for m in received)

def test_containers_and_sections_tracked() -> None:
    """A container body, or any section: tracked."""
    received = decoded(
        MessageCtx([1, 2]), MessageCtx({'a': 1}), MessageCtx(b'x', app_properties={'k': 'v'}),
        MessageCtx(b'x', annotations={tp.cast(tp.Any, 'x-a'): 1}),
    )
    assert [gc.is_tracked(m) for m in received] == [True] * 4

def test_tracked_again_when_changed() -> None:
    """Setting the body or the stream, or taking a section, tracks it again."""
    for change in (
            lambda m: setattr(m, 'body', [m]),
            lambda m: setattr(m, 'stream', 'other'),
            lambda m: m.app_properties,
            lambda m: m.annotations,
            lambda m: m.delivery_annotations,
            lambda m: m.footer,
            lambda m: m.header,
            lambda m: m.properties,
            lambda m: setattr(m, 'app_properties', {}),
    ):
        [m] = decoded(MessageCtx(b'x'))
        assert not gc.is_tracked(m)
        change(m)
        assert gc.is_tracked(m)

ENDED: list[str] = []

class Witness:
    """Notes its own end."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __del__(self) -> None:
        ENDED.append(self.name)

def test_cycles_through_received_messages_collected() -> None:
    """A cycle an application makes through a received message is collected."""
    ENDED.clear()
    [a, b] = decoded(MessageCtx(b'a'), MessageCtx(b'b'))
    properties: dict[str, tp.Any] = a.app_properties  # an application's own objects too
    properties['self'] = a
    properties['witness'] = Witness('a')
    b.body = tp.cast(tp.Any, [b, Witness('b')])
    del a, b, properties
    gc.collect()
    assert sorted(ENDED) == ['a', 'b']

def test_untracked_messages_freed() -> None:
    """An untracked message is freed by its reference count, as any object."""
    received = decoded(*(MessageCtx(b'%d' % i) for i in range(100)))
    assert not any(gc.is_tracked(m) for m in received)
    del received
    gc.collect()
    again = decoded(MessageCtx(b'x'))  # the freelist's objects, reused
    assert again[0].body == b'x' and not gc.is_tracked(again[0])

def test_init_again_and_del() -> None:
    """
    ``__init__`` called again on a received message tracks it; deleting the
    body or the stream sets it to None, as with RbFly 0.10's attributes.
    """
    [m] = decoded(MessageCtx(b'x'))
    m.__init__([m])  # type: ignore[misc]
    assert gc.is_tracked(m) and m.body == [m]
    [m] = decoded(MessageCtx(b'x'))
    del m.body
    del m.stream
    assert m.body is None and m.stream is None
