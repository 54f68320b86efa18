"""
Test support for applications using rbfly: an in-memory RabbitMQ Streams
broker, :py:class:`FakeBroker`, built on rbfly's sans-IO protocol core,
and a view inside a client for tests (:py:mod:`.seam`).

Unit tests of an application can publish, confirm, subscribe and store
offsets without a RabbitMQ server; the same behaviour tests run against
RabbitMQ and the fake broker in rbfly's own suite.

- :py:mod:`.store`: what the broker keeps (streams of chunks, publishers'
  sequences, offsets, super streams);
- :py:mod:`.core`: the sans-IO broker, frames in and frames out, and
  :py:mod:`.session`: one client connection of it (:py:mod:`.admin`
  answers its requests on the store; :py:mod:`.publish`
  reads the ``Publish`` frames it stores; :py:mod:`.config` is what the
  broker says of itself; :py:mod:`.groups`: its groups of single active
  consumers, as RabbitMQ 4.3 runs them);
- ``server``: :py:class:`FakeBroker`, the core on the event loop;
- :py:mod:`.seam`: a client's connections, what they hold, its broker
  and options, for a test to look at (the one place that reads the
  client's private parts).
"""

from .groups import GroupMember
from .seam import (
    ConnectionView,
    client_options,
    connect,
    current_broker,
    node_connections,
    own_connection,
    sasl_mechanism,
    wait_background,
)
from .server import FakeBroker
from .store import Store, StreamLog

__all__ = [
    'ConnectionView',
    'FakeBroker',
    'GroupMember',
    'Store',
    'StreamLog',
    'client_options',
    'connect',
    'current_broker',
    'node_connections',
    'own_connection',
    'sasl_mechanism',
    'wait_background',
]
