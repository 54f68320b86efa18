"""
Who holds a publisher or a subscription: the one owner of those records.

A publisher or subscription is recorded twice:

- *held* by a connection manager (:py:class:`~rbfly.streams.aio.manager.ConnectionManager`),
  whose recovery declares it again after its connection is lost
  (:py:func:`hold`, :py:func:`let_go`);
- *attached* to an open connection under an id, where the connection
  routes confirmations and chunks to it (:py:func:`attach`,
  :py:func:`detach`).

These four functions (and :py:func:`reserve`, :py:func:`abandon` and
:py:func:`delete_stale` for ids whose declaration is under way or was
given up, or that the broker holds still) are the only code
that writes the records, on both sides: the manager's set and the item's
``owner`` field, the connection's id table and the item's
``protocol``/``ident`` fields. One exception: a connection that is lost
tells its items (``on_connection_lost``), and each clears its own
``protocol`` then (the dead connection's table goes with it).
"""

from __future__ import annotations

import contextlib
import logging
import typing as tp
from collections.abc import MutableSet

from ...error import RbFlyError
from ..error import StreamsError
from ..protocol.commands import CommandBase, Request
from .connection import ABANDONED

if tp.TYPE_CHECKING:
    from .connection import StreamsProtocol

logger = logging.getLogger('rbfly.streams.client')

Kind: tp.TypeAlias = tp.Literal['publishers', 'subscriptions']
Spawn: tp.TypeAlias = tp.Callable[[tp.Coroutine[tp.Any, tp.Any, None]], object]

MAX_IDS = 256
"""Publisher or subscription ids of one connection (the protocol's limit)."""

class Owner(tp.Protocol):
    """
    What holds publishers and subscriptions across connections, and
    declares them again after a loss: a connection manager
    (:py:class:`~rbfly.streams.aio.manager.ConnectionManager`), as the
    records see it.
    """
    @property
    def publishers(self) -> MutableSet[tp.Any]:
        """The publishers held."""

    @property
    def subscriptions(self) -> MutableSet[tp.Any]:
        """The subscriptions held."""

class Held(tp.Protocol):
    """
    A publisher or subscription, as the adapter sees it: the records'
    fields, the stream, and how to end it. The adapter knows nothing else
    of publishers and subscriptions (the layers above it define them); what
    a connection calls as frames arrive is
    :py:class:`~rbfly.streams.aio.connection.PublisherHandler` and
    :py:class:`~rbfly.streams.aio.connection.SubscriptionHandler`.
    """
    owner: Owner | None
    protocol: StreamsProtocol | None
    ident: int

    @property
    def stream(self) -> str:
        """The stream it sends to, or reads."""

    @property
    def kind(self) -> Kind:
        """Which of a connection's tables holds it."""

    def attached(self) -> None:
        """Called once attached to a connection."""

    def fail(self, error: Exception) -> None:
        """End it with an error (nobody restores it)."""

def _table(holder: Owner | StreamsProtocol, kind: Kind) -> tp.Any:
    return holder.publishers if kind == 'publishers' else holder.subscriptions

def hold(manager: Owner, item: Held) -> None:
    """A connection manager holds ``item`` from now on (it restores it after a loss)."""
    previous = item.owner
    if previous is not None and previous is not manager:
        _table(previous, item.kind).discard(item)
    _table(manager, item.kind).add(item)
    item.owner = manager

def let_go(item: Held) -> Owner | None:
    """No manager holds ``item`` any more; return the one that held it."""
    manager, item.owner = item.owner, None
    if manager is not None:
        _table(manager, item.kind).discard(item)
    return manager

def abandoned(protocol: StreamsProtocol, kind: Kind) -> int:
    """Ids of a connection kept taken until the broker answers their deletion."""
    return sum(1 for item in _table(protocol, kind).values() if item is ABANDONED)

def free_id(protocol: StreamsProtocol, kind: Kind) -> int:
    """
    The lowest id of a connection not taken by a publisher (or
    subscription).

    :raises RbFlyError: When all 256 are taken.
    """
    used = _table(protocol, kind)
    for i in range(MAX_IDS):
        if i not in used:
            return i
    raise RbFlyError('too many {} on one connection ({})'.format(kind, MAX_IDS))

def reserve(protocol: StreamsProtocol, item: Held) -> int:
    """
    Take a free id of a connection for ``item``, before asking the broker
    to declare it there (what comes for the id meanwhile goes to it).
    """
    ident = free_id(protocol, item.kind)
    _table(protocol, item.kind)[ident] = item
    return ident

def release_id(protocol: StreamsProtocol, item: Held, ident: int) -> None:
    """Free an id :py:func:`reserve` took, unless something else holds it now."""
    table = _table(protocol, item.kind)
    if table.get(ident) is item:
        del table[ident]

def attach(protocol: StreamsProtocol, item: Held, ident: int) -> None:
    """``item`` is declared on a connection under ``ident``."""
    _table(protocol, item.kind)[ident] = item
    item.protocol = protocol
    item.ident = ident
    item.attached()

def detach(item: Held) -> None:
    """``item`` is no longer declared on its connection (its id is free)."""
    protocol = item.protocol
    if protocol is not None:
        release_id(protocol, item, item.ident)
    item.protocol = None

H = tp.TypeVar('H', bound=Held)

def undeclare(item: H, drop: tp.Callable[[StreamsProtocol, H], None]) -> None:
    """
    No manager holds ``item`` any more, and it is dropped on its
    connection (``drop``: the request that deletes it there), or only
    detached from it when that is closed.
    """
    let_go(item)
    protocol = item.protocol
    if protocol is not None and protocol.is_open:
        drop(protocol, item)
    else:
        detach(item)

def abandon(
        protocol: StreamsProtocol, kind: Kind, ident: int, delete: Request[CommandBase],
        what: str, spawn: Spawn,
) -> None:
    """
    A declaration under ``ident`` was cancelled, timed out or ended, and
    the broker may still hold it: keep the id taken (what comes for it is
    dropped) until ``delete`` (the request deleting it) is answered, so
    that a later declaration never gets its messages.
    """
    if not protocol.is_open:
        return
    _table(protocol, kind)[ident] = ABANDONED
    spawn(_delete(protocol, kind, ident, delete, what))

async def delete_stale(
        protocol: StreamsProtocol, kind: Kind, ident: int, delete: Request[CommandBase],
        what: str,
) -> bool:
    """
    Delete what the broker still holds under a free ``ident`` of a
    connection (a publisher it did not forget, say), keeping the id taken
    until the broker answered, as :py:func:`abandon` does; false when the
    id is taken by something else (what the broker holds under it is
    that, not stale) or the connection is closed.
    """
    table = _table(protocol, kind)
    if not protocol.is_open or ident in table:
        return False
    table[ident] = ABANDONED
    await _delete(protocol, kind, ident, delete, what)
    return True

async def _delete(
        protocol: StreamsProtocol, kind: Kind, ident: int, delete: Request[CommandBase],
        what: str,
) -> None:
    """Send ``delete`` for an id held as abandoned; free the id once answered."""
    table = _table(protocol, kind)
    try:
        with contextlib.suppress(StreamsError):  # gone already, or the connection is
            await protocol.request(delete, what)
    finally:
        if table.get(ident) is ABANDONED:
            del table[ident]

__all__ = [
    'MAX_IDS', 'Held', 'Kind', 'Owner', 'abandon', 'abandoned', 'attach', 'delete_stale',
    'detach', 'free_id', 'hold', 'let_go', 'release_id', 'reserve', 'undeclare',
]
