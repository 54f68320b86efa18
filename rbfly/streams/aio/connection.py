"""
Asyncio adapter of the sans-IO connection core.

:py:class:`StreamsProtocol` binds a
:py:class:`~rbfly.streams.protocol.connection.ConnectionCore` to an asyncio
transport: received bytes go to the core, the core's events resolve request
futures or reach the publishers and subscriptions registered on the
connection, and the core's heartbeat timer runs on the event loop's clock.
Its parts: the requests waiting for their responses
(:py:mod:`~rbfly.streams.aio.pending`) and the pausing of reads while a
subscription catches up (:py:mod:`~rbfly.streams.aio.read_pause`).
"""

from __future__ import annotations

import asyncio
import logging
import typing as tp
from collections.abc import Callable, Mapping

from ...error import ProtocolError
from ..error import ConnectionLost, FeatureNotSupported, RequestTimeout
from ..protocol._publish import PublishEncoder
from ..protocol.base import OffsetSpec
from ..protocol.commands import (
    Command,
    CommandBase,
    CreditResponse,
    Deliver,
    DeliverV2,
    MetadataUpdate,
    PublishConfirm,
    PublishError,
    Request,
)
from ..protocol.connection import ConnectionCore, broker_version
from ..protocol.constants import ResponseCode
from ..protocol.states import (
    ConnectionClosed,
    ConsumerUpdateRequested,
    CoreState,
    HandshakeFailed,
    HeartbeatTimeout,
    Opened,
)
from .pending import PendingRequests
from .read_pause import ReadPause

# the connection's logger, as documented (doc/logging.rst), the module's name before it
# was renamed
logger = logging.getLogger('rbfly.streams.aio.protocol')

R = tp.TypeVar('R', bound=CommandBase)

COALESCE_MAX = 64 * 1024
"""
Bytes of Publish frames held for one write (see
:py:meth:`StreamsProtocol._coalesce`): past it they are written at once, so
the transport's write buffer and its high-water mark (``drain``,
``is_writable``) see them, and a big frame goes alone, not copied into a
joined one.
"""

class Unanswered(ConnectionLost):
    """
    The server closed the connection before answering anything, not a
    byte of the handshake. Whether the address is a stream port at all is
    for :py:func:`~rbfly.streams.aio.connect.open_connection` to say: it
    knows the address, and whether a broker answered there before.
    """

class PublisherHandler(tp.Protocol):
    """What the connection calls on a registered publisher."""
    def on_confirm(self, publishing_ids: tp.Sequence[int]) -> None: ...
    def on_error(self, errors: tp.Sequence[tuple[int, int]]) -> None: ...
    def on_connection_lost(self, error: Exception) -> None: ...

class SubscriptionHandler(tp.Protocol):
    """What the connection calls on a registered subscription."""
    def on_chunk(
        self, chunk: bytes | bytearray | memoryview, committed_chunk_id: int | None,
    ) -> None: ...
    def on_connection_lost(self, error: Exception) -> None: ...
    def on_consumer_update(
        self, protocol: StreamsProtocol, correlation_id: int, active: bool,
    ) -> None: ...

class Abandoned:
    """
    Holds the id of a publisher or subscription whose declaration was
    cancelled or timed out: the broker may still declare it, so the id is
    not used again until it is deleted; what comes for it is dropped.
    """
    def on_confirm(self, publishing_ids: tp.Sequence[int]) -> None:
        pass

    def on_error(self, errors: tp.Sequence[tuple[int, int]]) -> None:
        pass

    def on_connection_lost(self, error: Exception) -> None:
        pass

    def on_chunk(
        self, chunk: bytes | bytearray | memoryview, committed_chunk_id: int | None,
    ) -> None:
        pass

    def on_consumer_update(
        self, protocol: StreamsProtocol, correlation_id: int, active: bool,
    ) -> None:
        pass

ABANDONED = Abandoned()

class StreamsProtocol(asyncio.Protocol):
    """
    One connection to a broker.

    :param core: Sans-IO state of the connection.
    """
    def __init__(self, core: ConnectionCore) -> None:
        self.core = core
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.opened: asyncio.Future[Opened] = self.loop.create_future()
        self.closed: asyncio.Future[None] = self.loop.create_future()
        self.publishers: dict[int, PublisherHandler] = {}
        self.subscriptions: dict[int, SubscriptionHandler] = {}
        self.on_metadata_update: Callable[[MetadataUpdate], None] | None = None
        self.on_lost: Callable[[StreamsProtocol, Exception], None] | None = None
        self.server_properties: Mapping[str, str] = {}
        # the broker's version, from its peer properties once open
        self.broker_version: tuple[int, ...] = (0,)
        # the Open response's (advertised_host, advertised_port)
        self.connection_properties: Mapping[str, str] = {}
        # (host, port) connected to, as the client was told
        self.address: tuple[str, int] | None = None
        # seconds to wait for a response (None: no limit)
        self.request_timeout: float | None = None
        # requests waiting for their response
        self.requests = PendingRequests()
        self._timer: asyncio.TimerHandle | None = None
        self._writable = asyncio.Event()
        self._writable.set()
        self._error: Exception | None = None
        # reads paused after a read that brought history (read_pause)
        self.reads = ReadPause(self.loop)
        # Publish frames wait for one write at the end of the callbacks
        # that confirmations woke (see _coalesce): whether they wait, how
        # many bytes of them, and whether the read being handled woke any
        self._coalescing = False
        self._held = 0
        self._woken = False
        # the broker confirmed a message or delivered a chunk here: what
        # the client declared on the connection works (its manager paces
        # reconnections by it, see rbfly.streams.backoff.Pace)
        self.progressed = False

    #
    # asyncio.Protocol
    #

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = tp.cast(asyncio.Transport, transport)
        self.core.start(self.loop.time())
        self.flush()

    def data_received(self, data: bytes) -> None:
        try:
            events = self.core.receive_data(data, self.loop.time())
        except ProtocolError as ex:  # malformed frame: the stream is lost
            if not self.opened.done():
                # open_connection() raises it, naming the address: no log
                self.opened.set_exception(ex)
                self._abort(ex)
            else:
                logger.error('protocol error, dropping connection: %s', ex)
                # what waits on the connection gets ConnectionLost (and
                # the client reconnects), with the broker's error as cause
                lost = ConnectionLost('malformed data from the broker: {}'.format(ex))
                lost.__cause__ = ex
                self._abort(lost)
            return
        try:
            for event in events:
                self._dispatch(event)
        finally:
            if self._woken:
                self._woken = False
                self._coalescing = True
                self.loop.call_soon(self._end_coalescing)
        self.flush()
        if self.reads.history:
            self.reads.read_done(self.transport)

    @property
    def read_pause(self) -> float:
        """
        Seconds to stop reading after a read that brought a chunk of
        history (0: never; the client sets its option ``read_pause``; see
        :py:class:`~rbfly.streams.aio.read_pause.ReadPause`).
        """
        return self.reads.seconds

    @read_pause.setter
    def read_pause(self, seconds: float) -> None:
        self.reads.seconds = seconds

    def connection_lost(self, exc: Exception | None) -> None:
        step = self.core.state.value  # of the handshake, when not open yet
        partial = self.core.buffered  # bytes of a frame cut short
        self.core.connection_lost()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.reads.cancel()
        lost: type[ConnectionLost] = ConnectionLost
        if self.opened.done():
            what = 'connection to broker lost'
        elif step == 'peer-properties' and not partial:
            what = 'the server closed the connection without answering'
            lost = Unanswered
        elif step == 'peer-properties':
            what = 'the server closed the connection'
        else:
            what = 'connection to broker lost during the handshake ({})'.format(step)
        if partial:
            what += ' in the middle of a frame ({} bytes of it)'.format(partial)
        error = self._error or lost(what + (': {}'.format(exc) if exc else ''))
        self._error = error
        if not self.opened.done():
            self.opened.set_exception(error)
            self.opened.exception()  # the exception is retrieved by its waiter, if any
        self.requests.fail(error)
        for pub in list(self.publishers.values()):
            pub.on_connection_lost(error)
        for sub in list(self.subscriptions.values()):
            sub.on_connection_lost(error)
        self._writable.set()
        if not self.closed.done():
            self.closed.set_result(None)
        if self.on_lost is not None:
            self.on_lost(self, error)

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    #
    # sending
    #

    @property
    def is_open(self) -> bool:
        return self.core.state is CoreState.OPENED and self._error is None

    def check_open(self) -> None:
        """
        :raises ConnectionLost: When the connection cannot be used.
        """
        if self._error is not None:
            raise self._error
        if self.core.state is not CoreState.OPENED:
            raise ConnectionLost('connection is not open ({})'.format(self.core.state.value))

    def require(self, version: tuple[int, ...], feature: str) -> None:
        """
        :raises FeatureNotSupported: When the broker is older than
            ``version``, which ``feature`` needs.
        """
        if self.broker_version < version:
            raise FeatureNotSupported('{} needs RabbitMQ {} or later; the broker is {}'.format(
                feature, '.'.join(map(str, version)),
                self.server_properties.get('version', 'unknown'),
            ))

    @property
    def publish_encoder(self) -> PublishEncoder:
        """
        The connection's Publish frame encoder (frames fit its negotiated
        frame size).

        :raises ConnectionLost: Before the handshake set the frame size.
        """
        encoder = self.core.publish_encoder
        if encoder is None:
            raise ConnectionLost('connection is not open ({})'.format(self.core.state.value))
        return encoder

    def flush(self) -> None:
        self._held = 0
        data = self.core.data_to_send()
        if data and self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    @property
    def is_writable(self) -> bool:
        """
        Whether the transport's write buffer is below its high-water mark
        (or the connection is lost: nothing waits for a lost connection).
        """
        return self._writable.is_set()

    async def wait_writable(self) -> None:
        """
        Wait until the transport's write buffer drains below its low-water
        mark, or the connection is lost; unlike :py:meth:`drain`, it does
        not raise when the connection is lost (the pipelined publisher keeps
        its messages for the recovery).
        """
        await self._writable.wait()

    async def drain(self) -> None:
        """
        Wait until the transport's write buffer is below its high-water
        mark (publishers call it, so a fast producer cannot fill memory).
        """
        if not self._writable.is_set():
            await self._writable.wait()
        self.check_open()

    async def request(self, command: Request[R], context: str = '') -> R:
        """
        Send a request and wait for its response, of the class the request
        names (``command.RESPONSE``).

        :param context: What the request is about, for error messages.
        :raises rbfly.streams.error.ResponseError: When the response code
            is not OK.
        :raises rbfly.streams.protocol.errors.UnexpectedResponse: When the
            broker answers with a response of another class.
        :raises ConnectionLost: When the connection is lost first.
        :raises RequestTimeout: When no response came within
            ``request_timeout`` seconds.
        """
        self.check_open()
        correlation_id = self.core.request(command, self.loop.time())
        fut: asyncio.Future[R] = self.loop.create_future()
        self.requests.add(correlation_id, fut, context, command)
        self.flush()
        try:
            if self.request_timeout is None:
                return await fut
            try:
                async with asyncio.timeout(self.request_timeout):
                    return await fut
            except TimeoutError:
                # (only this deadline becomes TimeoutError here: an outer
                # timeout or a cancellation stays a CancelledError)
                raise RequestTimeout('no response to {} in {}s{}'.format(
                    type(command).__name__, self.request_timeout,
                    ' ({})'.format(context) if context else '',
                )) from None
        finally:
            # on cancellation the late response is ignored; the connection
            # stays usable
            self.requests.discard(correlation_id)

    def send(self, command: Command) -> None:
        """
        Send a command that has no response.
        """
        self.check_open()
        self.core.send(command, self.loop.time())
        self.flush()

    def send_frame(self, frame: bytes | memoryview) -> None:
        """
        Send an encoded frame (Publish): written at once, or with the
        others sent by the tasks a confirmation woke (see :py:meth:`_coalesce`).
        """
        self.check_open()
        if self._coalescing:
            held = self._held + len(frame)
            if held < COALESCE_MAX:
                self._held = held
                self.core.send_frame(frame, self.loop.time())
                return
            if len(frame) >= COALESCE_MAX:
                self.flush()  # those held, then this one alone
        self.core.send_frame(frame, self.loop.time())
        self.flush()

    def _coalesce(self, publisher: PublisherHandler, publishing_ids: tp.Sequence[int]) -> None:
        """
        A confirmation arrived for ``publisher``: the tasks it wakes run
        at the event loop's next turn, and each may send its next message
        at once. Their Publish frames wait in the core, and one write
        sends them all after them: :py:meth:`data_received` schedules it
        when all the read's confirmations are handed out, so after every
        wake-up they caused, in the same turn (no extra turn of the loop,
        no wait). A task that sends later, after awaiting something else,
        writes at once as before; frames held past :py:data:`COALESCE_MAX`
        bytes are written at once too.

        A write is a system call, and on a loopback connection it does the
        receiving side's work too. Measured (2 vCPUs, RabbitMQ 3.10, uvloop,
        50 tasks each awaiting the confirmation of one message at a time,
        20,000 10-byte messages): the write was 28 of the client's 52 us a
        message with one write a frame, and a confirmation wakes about 30
        of them at once.
        """
        publisher.on_confirm(publishing_ids)
        self._woken = True

    def _end_coalescing(self) -> None:
        self._coalescing = False
        self.flush()

    def answer_consumer_update(self, correlation_id: int, spec: OffsetSpec) -> None:
        """
        Answer the broker's ConsumerUpdate: the offset a single active
        consumer resumes from (``OffsetSpec.none()`` when deactivated).
        """
        self.check_open()
        self.core.answer_consumer_update(correlation_id, spec, self.loop.time())
        self.flush()

    async def close(self, timeout: float = 5) -> None:
        """
        Close the connection gracefully, or abort it after ``timeout``
        seconds.
        """
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        correlation_id = self.core.close(self.loop.time())
        if correlation_id is not None:
            self.flush()
            try:
                await asyncio.wait_for(asyncio.shield(self.closed), timeout)
            except TimeoutError:
                logger.warning('broker did not confirm close within %ss', timeout)
        if not transport.is_closing():
            transport.close()
        await asyncio.shield(self.closed)

    def abort(self, error: Exception) -> None:
        """Close the connection at once; pending requests fail with ``error``."""
        self._abort(error)

    def _abort(self, error: Exception) -> None:
        self._error = error
        if self.transport is not None:
            self.transport.abort()

    #
    # events
    #

    def _dispatch(self, event: object) -> None:  # noqa: C901, PLR0912, PLR0915
        t = type(event)
        if t is PublishConfirm:
            confirm = tp.cast(PublishConfirm, event)
            pub = self.publishers.get(confirm.publisher_id)
            if pub is not None:
                self.progressed = True
                self._coalesce(pub, confirm.publishing_ids)
        elif t is Deliver or t is DeliverV2:
            deliver = tp.cast(Deliver | DeliverV2, event)
            sub = self.subscriptions.get(deliver.subscription_id)
            if sub is not None:
                self.progressed = True
                committed = deliver.committed_chunk_id if t is DeliverV2 else None  # type: ignore[union-attr]
                chunk = deliver.chunk
                if self.reads.seconds:  # (no call a chunk when reads never pause)
                    self.reads.note(chunk)
                sub.on_chunk(chunk, committed)
            else:
                logger.debug('chunk for unknown subscription %d', deliver.subscription_id)
        elif t is PublishError:
            perr = tp.cast(PublishError, event)
            pub = self.publishers.get(perr.publisher_id)
            if pub is not None:
                pub.on_error([(e.publishing_id, e.code) for e in perr.errors])
        elif isinstance(event, Opened):
            self._opened(event)
        elif isinstance(event, HandshakeFailed):
            self._error = event.error
            if not self.opened.done():
                self.opened.set_exception(event.error)
            if self.transport is not None:
                self.transport.close()
        elif isinstance(event, ConnectionClosed):
            if event.by_broker:
                self._error = ConnectionLost('broker closed the connection: {} (code {})'.format(
                    event.reason, event.code
                ))
                self.flush()
            if self.transport is not None:
                self.transport.close()
        elif isinstance(event, HeartbeatTimeout):
            logger.warning('no data from broker for %.1fs, dropping connection', event.silence)
            self._abort(ConnectionLost('broker silent for {:.1f}s'.format(event.silence)))
        elif t is MetadataUpdate:
            if self.on_metadata_update is not None:
                self.on_metadata_update(tp.cast(MetadataUpdate, event))
        elif t is CreditResponse:
            cr = tp.cast(CreditResponse, event)
            # precondition failed: a single active consumer's credit sent
            # as the broker made it inactive (a routine race of a hand-off;
            # the broker keeps the credit for when it is active again); no
            # such subscription: credit sent as it ended (an id not held
            # by a subscription now: subscriptions ending in quick
            # succession logged a warning each)
            routine = cr.code == ResponseCode.PRECONDITION_FAILED or (
                cr.code == ResponseCode.SUBSCRIPTION_ID_DOES_NOT_EXIST
                and self.subscriptions.get(cr.subscription_id, ABANDONED) is ABANDONED)
            log = logger.debug if routine else logger.warning
            log('credit refused for subscription %d: code %d', cr.subscription_id, cr.code)
        elif t is ConsumerUpdateRequested:
            self._consumer_update(tp.cast(ConsumerUpdateRequested, event))
        else:
            self.requests.resolve(event)

    def _opened(self, event: Opened) -> None:
        self.server_properties = event.server_properties
        self.broker_version = broker_version(event.server_properties)
        self.connection_properties = event.connection_properties
        self._schedule_tick()
        if not self.opened.done():
            self.opened.set_result(event)

    def _consumer_update(self, update: ConsumerUpdateRequested) -> None:
        sub = self.subscriptions.get(update.subscription_id)
        if sub is not None:
            sub.on_consumer_update(self, update.correlation_id, update.active)
        elif self.is_open:  # unsubscribed meanwhile; the broker still wants an answer
            self.answer_consumer_update(update.correlation_id, OffsetSpec.none())
        # (closing: the broker removes the connection's consumers from their
        # groups; raising here would abort the transport)

    def _schedule_tick(self) -> None:
        when = self.core.next_tick()
        if when is not None:
            self._timer = self.loop.call_at(when, self._tick)

    def _tick(self) -> None:
        self._timer = None
        for event in self.core.tick(self.loop.time()):
            self._dispatch(event)
        self.flush()
        if self.core.state is CoreState.OPENED:
            self._schedule_tick()

__all__ = ['StreamsProtocol', 'Unanswered']
