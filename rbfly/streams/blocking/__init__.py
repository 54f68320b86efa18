"""
A blocking facade of the client, for code that is not asyncio (scripts,
WSGI applications, Celery tasks, notebooks): :py:func:`blocking_client`
runs the async client on an event loop in a daemon thread of its own and
waits for each call (see :doc:`/blocking`).

- ``loop``: the loop thread, and the check
  that refuses a blocking call from a running event loop;
- ``client``: the client (stream and super
  stream admin, offsets);
- ``publisher``: its publishers (``send``
  waits for the confirmation; ``send_async`` returns a future);
- ``subscription``: its subscriptions
  (iterators of :py:class:`Record`).
"""

from .client import DEFAULT_TIMEOUT, BlockingClient, blocking_client
from .loop import BlockingCallInLoop, ClientClosed
from .publisher import BlockingPublisher, BlockingSuperStreamPublisher
from .subscription import BlockingSubscription, Record

__all__ = [
    'DEFAULT_TIMEOUT',
    'BlockingCallInLoop',
    'BlockingClient',
    'BlockingPublisher',
    'BlockingSubscription',
    'BlockingSuperStreamPublisher',
    'ClientClosed',
    'Record',
    'blocking_client',
]
