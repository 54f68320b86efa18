"""
Instrumenting a client: the factories its facade calls for publishers
(the publishing part's ``open``, behind ``publisher()``,
``super_stream_publisher()`` and the dead-letter publishers) and for what
its subscribe methods return (the reading side's ``bodies``, ``windows``,
``chunks`` and ``handlers``), and its offset commits, are replaced on
their instances by ones handing out traced objects; uninstrumenting
removes them, and the class's methods are seen again. Nothing of the
client changes otherwise: the publishing and consuming paths of a client
not instrumented run as they did, without a test per message.
"""

from __future__ import annotations

import typing as tp
from collections.abc import Callable

from ..semconv import Address
from ._consumers import TracedChunks, TracedMessages, TracedWindows, traced_handler
from ._publishers import traced_class
from ._telemetry import CLIENT, Telemetry

if tp.TYPE_CHECKING:
    from ..client import StreamsClient
    from ..publishers.base import PublisherTrait

# the methods replaced, by the object of the client holding them
PUBLISHING = ('open',)
CONSUMING = ('bodies', 'windows', 'chunks', 'handlers')
CLIENT_METHODS = ('write_offset', 'commit_offset')

def client_address(client: StreamsClient) -> Callable[[], Address]:
    """The broker a client's own connection is open to (``None``: not open)."""
    connections = client._connections

    def address() -> Address:
        protocol = connections.protocol
        return None if protocol is None else protocol.address

    return address

class Wiring:
    """
    The replaced factories of an instrumented client.

    :param client: The client.
    :param telemetry: The tracer and instruments.
    """
    def __init__(self, client: StreamsClient, telemetry: Telemetry) -> None:
        self._client = client
        self._telemetry = telemetry
        self._classes: dict[type[PublisherTrait], type[PublisherTrait]] = {}

    def install(self) -> None:
        client = self._client
        publishing = client._publishing
        consuming = client._consuming
        telemetry = self._telemetry
        traced = self.traced
        open_publisher = publishing.open

        def open(
                stream: str, name: str | None, filter_extract: tp.Any,
                cls: type[PublisherTrait], *args: tp.Any,
        ) -> tp.AsyncContextManager[PublisherTrait]:
            return open_publisher(stream, name, filter_extract, traced(cls), *args)

        bodies, windows, chunks, handlers = (
            consuming.bodies, consuming.windows, consuming.chunks, consuming.handlers)

        def traced_bodies(where: str, stream: str, *args: tp.Any) -> tp.Any:
            return TracedMessages(
                bodies(where, stream, *args), telemetry, stream, args[-1].get('name'))

        def traced_windows(where: str, stream: str, *args: tp.Any) -> tp.Any:
            return TracedWindows(
                windows(where, stream, *args), telemetry, stream, args[-1].get('name'))

        def traced_chunks(where: str, stream: str, *args: tp.Any) -> tp.Any:
            return TracedChunks(
                chunks(where, stream, *args), telemetry, stream, args[-1].get('name'))

        def traced_handlers(
                where: str, stream: str, super_stream: bool, handler: tp.Any, *args: tp.Any,
        ) -> tp.Any:
            handler = traced_handler(handler, telemetry, stream, args[-1].get('name'))
            return handlers(where, stream, super_stream, handler, *args)

        # (instance attributes: they hide the class's methods, on this client only)
        vars(publishing)['open'] = open
        vars(consuming).update(
            bodies=traced_bodies, windows=traced_windows, chunks=traced_chunks,
            handlers=traced_handlers,
        )
        for name in CLIENT_METHODS:
            vars(client)[name] = self._settle(getattr(client, name), name)

    def uninstall(self) -> None:
        client = self._client
        for obj, names in ((client._publishing, PUBLISHING),
                           (client._consuming, CONSUMING),
                           (client, CLIENT_METHODS)):
            for name in names:
                vars(obj).pop(name, None)

    def traced(self, cls: type[PublisherTrait]) -> type[PublisherTrait]:
        """The traced subclass of a publisher class (made once)."""
        found = self._classes.get(cls)
        if found is None:
            found = self._classes[cls] = traced_class(cls, self._telemetry)
        return found

    def _settle(
            self, method: Callable[..., tp.Awaitable[None]], name: str,
    ) -> Callable[..., tp.Awaitable[None]]:
        """An offset commit in a ``settle`` span (a client span)."""
        telemetry = self._telemetry
        address = telemetry.address

        async def settle(stream: str, reference: str, *args: tp.Any, **kw: tp.Any) -> None:
            with telemetry.operation(
                    'settle', name, stream, address(), CLIENT, group=reference):
                await method(stream, reference, *args, **kw)

        return settle

__all__ = ['Wiring', 'client_address']
