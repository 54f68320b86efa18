"""
Test support for applications using rbfly: an in-memory RabbitMQ Streams
broker, :py:class:`FakeBroker`, built on rbfly's sans-IO protocol core.

Unit tests of an application can publish, confirm, subscribe and store
offsets without a RabbitMQ server; the same behaviour tests run against
RabbitMQ and the fake broker in rbfly's own suite.

- :py:mod:`.store`: what the broker keeps (streams of chunks, publishers'
  sequences, offsets, super streams);
- :py:mod:`.core`: the sans-IO broker, frames in and frames out, and
  :py:mod:`.session`: one client connection of it (:py:mod:`.publish`
  reads the ``Publish`` frames it stores);
- ``server``: :py:class:`FakeBroker`, the core on the event loop.
"""

from .server import FakeBroker
from .store import Store, StreamLog

__all__ = ['FakeBroker', 'Store', 'StreamLog']
