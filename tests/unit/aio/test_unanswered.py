"""
A server that closes a connection without answering: the asyncio adapter
says only that (:py:class:`~rbfly.streams.aio.connection.Unanswered`);
:py:func:`~rbfly.streams.aio.connect.open_connection` says what this
process knows of the address: a broker that answered there before drops
connections (out of file descriptors, shutting down), or, when nothing
ever answered there, it may not be a stream port. No sockets (the fake
transport of ``_fakes``); ``tests/integration/test_hostile.py`` has both
through a client.
"""

from __future__ import annotations

import pytest

from rbfly.streams.aio.connect import Answers, unanswered
from rbfly.streams.aio.connection import Unanswered
from rbfly.streams.error import ConnectionLost
from rbfly.streams.protocol import PeerPropertiesResponse, encode

from ._fakes import OK, SERVER, connect

async def test_closed_before_a_word() -> None:
    """Nothing received: Unanswered, and no guess about the port (the adapter has no address)."""
    protocol, _ = connect()
    protocol.connection_lost(None)
    with pytest.raises(Unanswered, match=r'^the server closed the connection without answering$'):
        await protocol.opened

async def test_closed_after_an_answer() -> None:
    """PeerProperties answered: a handshake cut short, not Unanswered."""
    protocol, _ = connect()
    protocol.data_received(encode(PeerPropertiesResponse(1, OK, SERVER)))
    protocol.connection_lost(None)
    with pytest.raises(ConnectionLost, match='during the handshake') as info:
        await protocol.opened
    assert not isinstance(info.value, Unanswered)

async def test_closed_in_a_frame() -> None:
    """Part of a frame received: the server answered something; not Unanswered."""
    protocol, _ = connect()
    protocol.data_received(encode(PeerPropertiesResponse(1, OK, SERVER))[:7])
    protocol.connection_lost(None)
    with pytest.raises(ConnectionLost, match='in the middle of a frame') as info:
        await protocol.opened
    assert not isinstance(info.value, Unanswered)

@pytest.mark.parametrize(('port', 'named'), [
    (5552, None),
    (15672, "port 15672 is the management plugin's HTTP port of RabbitMQ"),
])
def test_never_answered_guesses_the_port(port: int, named: str | None) -> None:
    """Nothing ever answered at the address: it may not be a stream port (RabbitMQ's named)."""
    text = unanswered('localhost:{}'.format(port), port, None, 100.0)
    assert text.startswith('localhost:{}: the server closed the connection without answering'
                           ' (is it a RabbitMQ Streams port? the stream plugin listens on'
                           ' 5552)'.format(port))
    assert (named is None) == (';' not in text)
    assert named is None or text.endswith(named)

@pytest.mark.parametrize('port', [5552, 15672])
def test_answered_before_blames_the_broker(port: int) -> None:
    """
    A broker answered at the address before: the port is right; the error
    says which broker answered and when, and what drops connections so.
    """
    text = unanswered('localhost:{}'.format(port), port, (40.0, '3.10.8'), 52.4)
    assert text == (
        'localhost:{}: the server closed the connection without answering, though a broker'
        ' (RabbitMQ 3.10.8) answered on this address 12s before: the broker accepts'
        ' connections and drops them, as one out of file descriptors does (see its log;'
        ' RabbitMQ recommends a limit of at least 65536 open files) or one shutting'
        ' down'.format(port)
    )
    assert 'Streams port' not in text and 'management' not in text

def test_answers_by_address() -> None:
    answers = Answers()
    assert answers.last('localhost', 5552) is None
    answers.record('localhost', 5552, 1.0, '3.10.8')
    answers.record('localhost', 5553, 2.0, '4.0.5')
    answers.record('localhost', 5552, 3.0, '3.10.9')
    assert answers.last('localhost', 5552) == (3.0, '3.10.9')
    assert answers.last('localhost', 5553) == (2.0, '4.0.5')
    assert answers.last('127.0.0.1', 5552) is None
    answers.forget('localhost', 5552)
    answers.forget('localhost', 5552)   # (forgotten already: nothing to do)
    assert answers.last('localhost', 5552) is None
    assert answers.last('localhost', 5553) == (2.0, '4.0.5')

def test_answers_forget_the_oldest() -> None:
    """Past the limit the address answered longest ago is forgotten (an answer renews one)."""
    answers = Answers(limit=2)
    answers.record('a', 1, 1.0, 'v')
    answers.record('b', 1, 2.0, 'v')
    answers.record('a', 1, 3.0, 'v')
    answers.record('c', 1, 4.0, 'v')
    assert answers.last('b', 1) is None
    assert answers.last('a', 1) == (3.0, 'v')
    assert answers.last('c', 1) == (4.0, 'v')
