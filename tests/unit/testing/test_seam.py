"""
The test seam (:py:mod:`rbfly.testing.seam`) on a client that has not
connected; what it shows of a connected client is tested on the fake
broker (``tests/integration/test_fake_broker.py``). And a guard: no test
reads the client's private parts but through the seam.
"""

import re
from pathlib import Path

from rbfly.streams import StreamsClient, streams_client
from rbfly.streams.url import parse_uri
from rbfly.testing import (
    ConnectionView,
    client_options,
    current_broker,
    node_connections,
    own_connection,
    wait_background,
)

TESTS = Path(__file__).resolve().parents[2]

def test_not_connected() -> None:
    """Before its first call a client has no connection and holds nothing."""
    client = streams_client('rabbitmq-stream://guest:guest@localhost:5552/')
    assert own_connection(client) == ConnectionView(None, frozenset(), frozenset())
    assert node_connections(client) == {}

def test_current_broker_is_the_first_given() -> None:
    """Until a connection fails, the client's broker is the first of those given."""
    infos = [parse_uri('rabbitmq-stream://u:p@node-a:5552/'),
             parse_uri('rabbitmq-stream://u:p@node-b:5553/')]
    client = StreamsClient(infos)
    assert current_broker(client) == infos[0]
    assert (current_broker(client).host, current_broker(client).port) == ('node-a', 5552)

def test_client_options() -> None:
    """The options are the client's own, as its constructor kept them."""
    client = streams_client('rabbitmq-stream://localhost', credit=3, replicas_only=True)
    options = client_options(client)
    assert (options.credit, options.replicas_only) == (3, True)

async def test_wait_background_nothing_to_wait_for() -> None:
    """A client that did nothing has no background work: the wait ends at once."""
    client = streams_client('rabbitmq-stream://localhost')
    await wait_background(client)
    assert own_connection(client).protocol is None

PRIVATE = re.compile(r'(?<![\w.])(?!self\b)\w+\._(connections|credentials|options|tasks)\b')
"""A name's ``_connections`` (say) that is not its own (``self._tasks``)."""

def test_guard_finds_a_private_read() -> None:
    assert PRIVATE.search('    await client._connections.get()')
    assert PRIVATE.search('x = proxied._tasks.wait()')
    assert not PRIVATE.search('        self._tasks.add(task)')
    assert not PRIVATE.search('broker.drop_connections()')

def test_tests_use_the_seam() -> None:
    """
    No test reads a client's connections, credentials, options or tasks
    (the attributes of :py:class:`~rbfly.streams.StreamsClient`) but
    through :py:mod:`rbfly.testing.seam`, the one place that knows them.
    """
    found = [
        '{}:{}: {}'.format(path.relative_to(TESTS), n, line.strip())
        for path in sorted(TESTS.rglob('*.py'))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if PRIVATE.search(line) and path.name != Path(__file__).name
    ]
    assert not found, '\n'.join(found)
