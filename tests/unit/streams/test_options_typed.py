"""
Every public entry of the API that takes options by keyword types them:
its ``**options`` is a ``TypedDict`` unpacked (mypy --strict checks each
name and type, an editor completes them), never ``Any``; and a misspelt
option raises ``TypeError`` at the call, naming the closest one, as
Python does for a spelt-out keyword.

A new entry taking ``**options`` fails :py:func:`test_every_entry_listed`
until it has a row in :py:data:`ENTRIES`, which checks its suggestion.
"""

from __future__ import annotations

import asyncio
import inspect
import typing as tp
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rbfly.streams import StreamsClient, streams_client
from rbfly.streams.blocking.client import (
    BLOCKING_SUBSCRIBE_NAMES,
    BlockingClient,
    BlockingSubscribeArgs,
    blocking_client,
)
from rbfly.streams.consuming import SUBSCRIBE_NAMES, SubscribeArgs
from rbfly.streams.publishers.options import (
    PUBLISHER_NAMES,
    BasicPublisherArgs,
    PublisherArgs,
)

from .._mypy import mypy_errors

URL = 'rabbitmq-stream://guest:guest@localhost'

OWNERS: tp.Final = {'StreamsClient': StreamsClient, 'BlockingClient': BlockingClient}
FUNCTIONS: dict[str, Callable[..., object]] = {
    'streams_client': streams_client, 'blocking_client': blocking_client,
}

def entries() -> Iterator[tuple[str, Callable[..., object]]]:
    """The public methods of the clients, and the functions making them."""
    for owner, cls in OWNERS.items():
        for name, member in inspect.getmembers(cls, callable):
            if not name.startswith('_'):
                yield '{}.{}'.format(owner, name), member
    yield from FUNCTIONS.items()

def var_keywords(function: Callable[..., object]) -> list[inspect.Parameter]:
    """A function's ``**kwargs`` parameter, if any."""
    return [
        p for p in inspect.signature(function).parameters.values()
        if p.kind is inspect.Parameter.VAR_KEYWORD
    ]

def with_options() -> dict[str, Callable[..., object]]:
    """The entries taking ``**options``."""
    return {name: function for name, function in entries() if var_keywords(function)}

def test_every_entry_typed() -> None:
    """No ``**options: Any``: each is a TypedDict, unpacked."""
    untyped = []
    for name, function in with_options().items():
        param = var_keywords(function)[0]
        hint = tp.get_type_hints(function, include_extras=True).get(param.name)
        args = tp.get_args(hint)
        if tp.get_origin(hint) is not tp.Unpack or not tp.is_typeddict(args[0]):
            untyped.append('{}(**{}: {})'.format(name, param.name, hint))
    assert not untyped, untyped

def test_no_any_keyword() -> None:
    """No keyword parameter of the public API is typed ``Any`` either."""
    found = [
        '{}({})'.format(name, p)
        for name, function in entries()
        for p, hint in tp.get_type_hints(function, include_extras=True).items()
        if hint is tp.Any
    ]
    assert not found, found

Call = Callable[[StreamsClient, BlockingClient, dict[str, tp.Any]], object]

async def _handler(ctx: object) -> None:
    pass

def _process(method: str) -> Call:
    def call(client: StreamsClient, _: BlockingClient, kw: dict[str, tp.Any]) -> object:
        return asyncio.run(getattr(client, method)('s', _handler, **kw))
    return call

ENTRIES: dict[str, tuple[Call, str, str]] = {
    'StreamsClient.publisher': (
        lambda c, b, kw: c.publisher('s', **kw), 'confirm_timout', 'confirm_timeout'),
    'StreamsClient.super_stream_publisher': (
        lambda c, b, kw: c.super_stream_publisher('s', str, **kw), 'windw', 'window'),
    'StreamsClient.subscribe': (lambda c, b, kw: c.subscribe('s', **kw), 'ofset', 'offset'),
    'StreamsClient.subscribe_windows': (
        lambda c, b, kw: c.subscribe_windows('s', **kw), 'store_evry', 'store_every'),
    'StreamsClient.subscribe_chunks': (
        lambda c, b, kw: c.subscribe_chunks('s', **kw), 'filtr', 'filter'),
    'StreamsClient.subscribe_super_stream': (
        lambda c, b, kw: c.subscribe_super_stream('s', **kw), 'single_activ', 'single_active'),
    'StreamsClient.subscribe_super_stream_windows': (
        lambda c, b, kw: c.subscribe_super_stream_windows('s', **kw), 'nme', 'name'),
    'StreamsClient.subscribe_super_stream_chunks': (
        lambda c, b, kw: c.subscribe_super_stream_chunks('s', **kw), 'credt', 'credit'),
    'StreamsClient.process': (_process('process'), 'stop_at_nd', 'stop_at_end'),
    'StreamsClient.process_super_stream': (_process('process_super_stream'), 'flw', 'flow'),
    'StreamsClient.processor': (
        lambda c, b, kw: c.processor('s', _handler, **kw), 'timout', 'timeout'),
    'StreamsClient.super_stream_processor': (
        lambda c, b, kw: c.super_stream_processor('s', _handler, **kw), 'nam', 'name'),
    'BlockingClient.publisher': (lambda c, b, kw: b.publisher('s', **kw), 'dedupe', 'dedup'),
    'BlockingClient.super_stream_publisher': (
        lambda c, b, kw: b.super_stream_publisher('s', str, **kw), 'serialiser', 'serializer'),
    'BlockingClient.subscribe': (lambda c, b, kw: b.subscribe('s', **kw), 'amq', 'amqp'),
    'BlockingClient.subscribe_super_stream': (
        lambda c, b, kw: b.subscribe_super_stream('s', **kw), 'on_stat', 'on_state'),
    'streams_client': (lambda c, b, kw: streams_client(URL, **kw), 'hearbeat', 'heartbeat'),
    'blocking_client': (lambda c, b, kw: blocking_client(URL, **kw), 'credits', 'credit'),
}
"""Each entry taking options: a call of it, a misspelt option and the name suggested."""

def test_every_entry_listed() -> None:
    assert set(ENTRIES) == set(with_options())

@pytest.fixture(scope='module')
def clients() -> Iterator[tuple[StreamsClient, BlockingClient]]:
    """The clients, connecting to nothing (a misspelt option raises before)."""
    with blocking_client(URL) as blocking:
        yield streams_client(URL), blocking

@pytest.mark.parametrize('entry', sorted(ENTRIES))
def test_misspelt_option(entry: str, clients: tuple[StreamsClient, BlockingClient]) -> None:
    """The call raises TypeError naming the entry, the option and the closest name."""
    call, wrong, right = ENTRIES[entry]
    with pytest.raises(TypeError) as info:
        call(*clients, {wrong: 1})
    message = str(info.value)
    assert message.startswith('{}()'.format(entry)), message
    assert message.endswith("{!r}; did you mean {!r}?".format(wrong, right)), message

def test_publisher_names() -> None:
    """The options of every publisher class are among a publisher's options."""
    assert set(BasicPublisherArgs.__annotations__) < PUBLISHER_NAMES
    assert set(PublisherArgs.__annotations__) == PUBLISHER_NAMES

def test_blocking_subscribe_names() -> None:
    """
    A blocking subscription takes the async one's options, of the same
    types, but those it spells out.
    """
    assert BLOCKING_SUBSCRIBE_NAMES == SUBSCRIBE_NAMES - {'offset', 'timeout'}
    blocking = tp.get_type_hints(BlockingSubscribeArgs)
    shared = tp.get_type_hints(SubscribeArgs)
    assert blocking == {k: shared[k] for k in blocking}

@pytest.mark.parametrize('method', ['create_stream', 'create_super_stream'])
def test_blocking_spelt_out(method: str) -> None:
    """The blocking methods spelling options out take those of the async client's."""
    def keywords(function: Callable[..., object]) -> dict[str, object]:
        params = inspect.signature(function).parameters.values()
        return {p.name: (p.default, p.annotation) for p in params
                if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert keywords(getattr(BlockingClient, method)) == keywords(getattr(StreamsClient, method))

SNIPPET = '''
import typing as tp
from rbfly.streams import PublisherPipelined, streams_client
from rbfly.streams.blocking import blocking_client

async def main() -> None:
    client = streams_client('rabbitmq-stream://localhost')
    async with client.publisher('s', name='p', confirm_timeout=1.0) as p:
        tp.assert_type(p.name, str)
    async with client.publisher('s', cls=PublisherPipelined, window=10) as q:
        await q.send(b'x')
    async with client.super_stream_publisher('s', str, name='p', dedup=True) as s:
        await s.send(b'x')
    blocking = blocking_client('rabbitmq-stream://localhost', heartbeat=30)
    blocking.publisher('s', linger=0.1).close()
    client.publisher('s', confirm_timout=1.0)
    client.publisher('s', window=10)
    client.super_stream_publisher('s', str, dedup='no')
    blocking.publisher('s', enqueue_timeout='1')
    blocking.subscribe('s', store_every='10')
'''

def test_mypy_checks_options(tmp_path: Path) -> None:
    """
    mypy --strict refuses a misspelt publisher option, one of another
    publisher class, a wrongly typed one, and only those.
    """
    errors = mypy_errors(tmp_path, SNIPPET)
    lines = sorted({int(e.split(':')[1]) for e in errors})
    assert lines == [16, 17, 18, 19, 20], errors
