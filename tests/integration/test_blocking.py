"""
The blocking facade (:py:mod:`rbfly.streams.blocking`) against the real
brokers: the behaviour tests of the async API that apply to it
(``test_behaviour.py``: publish, confirm, deduplication, offsets, offset
specifications, typed errors, super streams), and what is its own: calls
from several threads, pipelined sends with futures and callbacks, bounded
waits on a broker that does not answer, a running event loop refused,
interpreter exit with clients left open.

The tests are plain functions: no event loop runs in the test's thread,
as in the scripts and WSGI applications the facade is for.
"""

import concurrent.futures
import os
import socket
import subprocess
import sys
import textwrap
import threading
import typing as tp
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from rbfly.amqp import MessageCtx
from rbfly.error import MessageTooLarge
from rbfly.streams import (
    ConfirmTimeout,
    ConnectionLost,
    CreditWhenProcessed,
    Offset,
    RequestTimeout,
    ResourceState,
    StateChange,
    Verdict,
)
from rbfly.streams.blocking import (
    BlockingCallInLoop,
    BlockingClient,
    BlockingSubscription,
    ClientClosed,
    Record,
    blocking_client,
)
from rbfly.streams.blocking.loop import LoopThread
from rbfly.streams.error import (
    NoOffset,
    PreconditionFailed,
    PublisherError,
    StreamAlreadyExists,
    StreamDoesNotExist,
)
from rbfly.streams.serializers import ContentTypeMismatch, JSONSerializer

from .proxy import Proxy

@pytest.fixture
def blocking(any_url: str, stream: str) -> Iterator[BlockingClient]:
    """A blocking client of each broker, with the test's stream created."""
    with blocking_client(any_url, timeout=30) as client:
        client.create_stream(stream)
        try:
            yield client
        finally:
            client.delete_stream(stream)

def read(
        client: BlockingClient, stream: str, count: int, offset: Offset = Offset.FIRST,
        **options: tp.Any,
) -> list[tuple[int, object]]:
    """``count`` messages with their offsets (each within 10 s)."""
    got: list[tuple[int, object]] = []
    if count == 0:
        return got
    with client.subscribe(stream, offset=offset, timeout=10, **options) as records:
        for record in records:
            got.append((record.offset, record.body))
            if len(got) == count:
                break
    return got

def test_publish_and_read_back(blocking: BlockingClient, stream: str) -> None:
    """Messages get consecutive offsets from 0, in the order sent, whichever way sent."""
    with blocking.publisher(stream) as pub:
        assert [pub.send('s{}'.format(i)) for i in range(3)] == [1, 2, 3]
        assert pub.send_batch(['b{}'.format(i) for i in range(3)]) == [4, 5, 6]
        futures = [pub.send_async('p{}'.format(i)) for i in range(3)]
        pub.flush()
        assert [f.result(0) for f in futures] == [7, 8, 9]
    got = read(blocking, stream, 9)
    assert got == list(enumerate(
        ['s0', 's1', 's2', 'b0', 'b1', 'b2', 'p0', 'p1', 'p2'],
    ))

def test_health(blocking: BlockingClient, stream: str) -> None:
    """The blocking client's health: its connection open, its publisher confirming."""
    with blocking.publisher(stream) as pub:
        pub.send('one')
        h = blocking.health()
        assert (h.verdict, h.ok) == (Verdict.HEALTHY, True), h
        assert h.connections[0].open and h.publishers[0].unconfirmed == 0
        assert h.publishers[0].stream == stream

def test_message_sections(blocking: BlockingClient, stream: str) -> None:
    """Application properties come back as sent, in the record's message."""
    with blocking.publisher(stream) as pub:
        pub.send(MessageCtx(b'bin', app_properties={'k': 'v', 'n': 3}))
    with blocking.subscribe(stream, offset=Offset.FIRST, timeout=10) as records:
        record = records.next()
    assert isinstance(record, Record)
    assert (record.stream, record.offset, record.body) == (stream, 0, b'bin')
    assert record.message.app_properties == {'k': 'v', 'n': 3}
    assert record.timestamp > 0

def test_deduplication(blocking: BlockingClient, stream: str) -> None:
    """A named publisher's ids at or below the last stored one are dropped."""
    with blocking.publisher(stream, name='dedup') as pub:
        pub.send_batch(['m0', 'm1', 'm2'])
    assert blocking.query_publisher_sequence(stream, 'dedup') == 3
    with blocking.publisher(stream, name='dedup') as pub:
        assert pub.send(MessageCtx('again', stream_publish_id=3)) == 3  # a duplicate
        assert pub.send('m3') == 4
    assert blocking.query_publisher_sequence(stream, 'dedup') == 4
    assert [b for _, b in read(blocking, stream, 4)] == ['m0', 'm1', 'm2', 'm3']
    assert blocking.query_publisher_sequence(stream, 'no-such-name') == 0

def test_two_publishers_of_one_name(blocking: BlockingClient, stream: str) -> None:
    """A name is held by one publisher of a stream at a time: the typed error."""
    with blocking.publisher(stream, name='one'):
        with pytest.raises(PreconditionFailed):
            blocking.publisher(stream, name='one')
    with blocking.publisher(stream, name='one') as pub:
        pub.send('x')
    assert blocking.query_publisher_sequence(stream, 'one') == 1

@pytest.mark.parametrize(('offset', 'expected'), [
    (Offset.FIRST, 0), (Offset.offset(7), 7), (Offset.offset(0), 0),
])
def test_offset_specs(
        blocking: BlockingClient, stream: str, offset: Offset, expected: int,
) -> None:
    """A subscription receives from the first message its offset names."""
    with blocking.publisher(stream) as pub:
        pub.send_batch(['a{}'.format(i) for i in range(5)])
        pub.send_batch(['b{}'.format(i) for i in range(5)])
    got = read(blocking, stream, 10 - expected, offset)
    assert [o for o, _ in got] == list(range(expected, 10))

def test_offset_last(blocking: BlockingClient, stream: str) -> None:
    """
    ``LAST`` starts at the first message of the last chunk, in the second
    batch: the broker may write a batch as more than one chunk (RabbitMQ
    4.0 wrote one of 5 as several), so the start is any of offsets 5 to 9.
    """
    with blocking.publisher(stream) as pub:
        pub.send_batch(['a{}'.format(i) for i in range(5)])
        pub.send_batch(['b{}'.format(i) for i in range(5)])
    got: list[int] = []
    with blocking.subscribe(stream, offset=Offset.LAST, timeout=10) as records:
        for record in records:
            got.append(record.offset)
            if record.offset >= 9:
                break
    assert 5 <= got[0] and got == list(range(got[0], 10))

def test_offset_next(blocking: BlockingClient, stream: str) -> None:
    """``NEXT`` waits for new messages; a wait that times out loses none."""
    opened = threading.Event()  # (the listener is called on the client's loop)

    def on_state(change: StateChange) -> None:
        if change.state is ResourceState.OPEN:
            opened.set()

    with blocking.publisher(stream) as pub:
        pub.send_batch(['old0', 'old1'])
        with blocking.subscribe(stream, offset=Offset.NEXT, on_state=on_state) as records:
            with pytest.raises(TimeoutError):
                records.next(timeout=0.5)
            # the broker takes NEXT as the end when it answers the Subscribe
            # (the first next() sent it; it may come after 0.5 s)
            assert opened.wait(30)
            pub.send_batch(['n0', 'n1'])
            got = [records.next(timeout=10) for _ in range(2)]
    assert [(r.offset, r.body) for r in got] == [(2, 'n0'), (3, 'n1')]

def test_stored_offsets(blocking: BlockingClient, stream: str) -> None:
    """An offset stored under a reference is read back; none stored is ``NoOffset``."""
    with pytest.raises(NoOffset):
        blocking.query_offset(stream, 'app')
    with blocking.publisher(stream) as pub:
        pub.send_batch(['a', 'b', 'c'])
    blocking.commit_offset(stream, 'app', 1)
    assert blocking.query_offset(stream, 'app') == 1
    got = read(blocking, stream, 1, Offset.reference('app'))
    assert got == [(2, 'c')]
    blocking.write_offset(stream, 'app', 2, wait=True)
    assert blocking.query_offset(stream, 'app') == 2

def test_flow_strategy(blocking: BlockingClient, stream: str) -> None:
    """A flow strategy counting processed chunks: credit released as records are taken."""
    with blocking.publisher(stream) as pub:
        for i in range(6):  # a chunk each, more than the credit
            pub.send(i)
    got = read(blocking, stream, 6, flow=CreditWhenProcessed(ratio=1.0, credit=2))
    assert got == [(i, i) for i in range(6)]

def test_subscription_commit(blocking: BlockingClient, stream: str) -> None:
    """A tracking subscription commits the offset of the last record taken."""
    with blocking.publisher(stream) as pub:
        pub.send_batch(['a', 'b', 'c'])
    with blocking.subscribe(stream, offset=Offset.FIRST, name='sub', store_every=1000,
                            timeout=10) as records:
        assert [records.next().body for _ in range(2)] == ['a', 'b']
        records.commit()
    assert blocking.query_offset(stream, 'sub') == 1

def taken_late(records: BlockingSubscription) -> None:
    """
    Wait until the take a ``next()`` gave up on completed (its record not
    collected: the subscription's pending future, private).
    """
    pending = records._pending
    assert pending is not None
    concurrent.futures.wait([pending], 10)
    assert pending.done()

def test_tracking_close_after_timeout(blocking: BlockingClient, stream: str) -> None:
    """
    A record that came after ``next()`` timed out was never returned:
    closing stores the offset of the last record returned, and a restart
    from the reference gets the late one.
    """
    with blocking.publisher(stream) as pub:
        pub.send('a')
        with blocking.subscribe(stream, offset=Offset.FIRST, name='app', store_every=1,
                                timeout=10) as records:
            assert records.next().offset == 0
            with pytest.raises(TimeoutError):
                records.next(timeout=1)
            pub.send('b')
            taken_late(records)
        pub.send('c')
    assert blocking.query_offset(stream, 'app') == 0
    # (the broker stores offsets in the stream: 'b' is not at offset 1)
    assert [b for _, b in read(blocking, stream, 2, Offset.reference('app'))] == ['b', 'c']

def test_tracking_commit_after_timeout(blocking: BlockingClient, stream: str) -> None:
    """
    ``commit()`` after a ``next()`` that timed out, its record come since:
    the offset of the last record returned is committed, and the late
    record is the next one returned.
    """
    with blocking.publisher(stream) as pub:
        pub.send('a')
        with blocking.subscribe(stream, offset=Offset.FIRST, name='app', store_every=1000,
                                timeout=10) as records:
            assert records.next().offset == 0
            with pytest.raises(TimeoutError):
                records.next(timeout=1)
            pub.send('b')
            taken_late(records)
            records.commit()
            assert blocking.query_offset(stream, 'app') == 0
            assert (records.next().offset, records._pending) == (1, None)
            records.commit()
            assert blocking.query_offset(stream, 'app') == 1

def test_end_offset(blocking: BlockingClient, stream: str) -> None:
    """The offset after a stream's last message: none while empty, then where the next goes."""
    assert blocking.end_offset(stream) is None
    with blocking.publisher(stream) as pub:
        pub.send_batch(['a', 'b', 'c'])
    assert blocking.end_offset(stream) == 3
    with pytest.raises(StreamDoesNotExist):
        blocking.end_offset('rbfly-missing-{}'.format(uuid.uuid4().hex[:8]))

def test_stream_errors(blocking: BlockingClient, stream: str) -> None:
    """The async API's typed errors, raised in the calling thread."""
    missing = 'rbfly-missing-{}'.format(uuid.uuid4().hex[:8])
    with pytest.raises(StreamAlreadyExists):
        blocking.create_stream(stream, exist_ok=False)
    with pytest.raises(StreamDoesNotExist):
        blocking.delete_stream(missing, missing_ok=False)
    with pytest.raises(StreamDoesNotExist):
        blocking.publisher(missing)
    with pytest.raises(StreamDoesNotExist):
        read(blocking, missing, 1)
    assert blocking.stream_exists(stream)
    assert not blocking.stream_exists(missing)
    assert blocking.stream_metadata(stream).leader is not None

def test_stop_at_end(url43: str, stream: str) -> None:
    """A bounded replay (RabbitMQ 4.3+) ends the iteration."""
    with blocking_client(url43, timeout=30) as client:
        client.create_stream(stream)
        try:
            with client.publisher(stream) as pub:
                pub.send_batch(['a', 'b', 'c'])
            with client.subscribe(stream, offset=Offset.FIRST, stop_at_end=True,
                                  timeout=10) as records:
                assert [r.body for r in records] == ['a', 'b', 'c']
            assert client.resolve_offset(stream, Offset.NEXT) == 3
        finally:
            client.delete_stream(stream)

def test_super_stream(url4: str) -> None:
    """Super stream admin, key routing, and each message on the partition of its key."""
    name = 'rbfly-super-{}'.format(uuid.uuid4().hex[:8])

    def region(msg: MessageCtx) -> str:
        return tp.cast(str, msg.app_properties['region'])

    with blocking_client(url4, timeout=30) as client:
        try:
            partitions = client.create_super_stream(name, binding_keys=['eu', 'us'])
            assert partitions == ['{}-eu'.format(name), '{}-us'.format(name)]
            assert client.super_stream_partitions(name) == partitions
            assert client.super_stream_exists(name)
            assert client.route(name, 'us') == [partitions[1]]
            with pytest.raises(StreamAlreadyExists):
                client.create_super_stream(name, binding_keys=['eu'], exist_ok=False)
            with client.super_stream_publisher(name, region, routing='key') as pub:
                pub.send(MessageCtx(0, app_properties={'region': 'eu'}))
                pub.send_batch([
                    MessageCtx(i, app_properties={'region': r})
                    for i, r in [(1, 'us'), (2, 'eu')]
                ])
            assert read(client, partitions[0], 2) == [(0, 0), (1, 2)]
            assert read(client, partitions[1], 1) == [(0, 1)]
            with client.subscribe_super_stream(name, offset=Offset.FIRST, timeout=10) as records:
                got = sorted((r.stream, r.offset, r.body) for r in [next(records)
                                                                    for _ in range(3)])
            assert got == [(partitions[0], 0, 0), (partitions[0], 1, 2), (partitions[1], 0, 1)]
        finally:
            client.delete_super_stream(name)
        assert not client.super_stream_exists(name)

def test_super_stream_sends_from_threads(url4: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """
    Two threads' sends to a super stream in one turn of the loop: each
    call waits for its own message and gets its own error (a message too
    large for a frame fails its sender only; the other is stored).
    """
    name = 'rbfly-super-{}'.format(uuid.uuid4().hex[:8])
    gate = threading.Event()
    with blocking_client(url4, timeout=30) as client:
        try:
            client.create_super_stream(name, 1)
            with client.super_stream_publisher(name, lambda _: 'key') as pub:
                pub.send('first')
                # the loop held until both calls are handed to it
                runner = client._runner
                submitted = threading.Semaphore(0)
                submit = runner.submit

                def counted(coro: tp.Any) -> tp.Any:
                    future = submit(coro)
                    submitted.release()
                    return future

                monkeypatch.setattr(runner, 'submit', counted)
                runner.call(gate.wait)
                with concurrent.futures.ThreadPoolExecutor(2) as pool:
                    small = pool.submit(pub.send, 'small')
                    huge = pool.submit(pub.send, b'x' * (2 << 20))
                    assert submitted.acquire(timeout=10) and submitted.acquire(timeout=10)
                    gate.set()
                    with pytest.raises(MessageTooLarge):
                        huge.result(30)
                    small.result(30)
                monkeypatch.undo()
            partition = client.super_stream_partitions(name)[0]
            assert read(client, partition, 2) == [(0, 'first'), (1, 'small')]
        finally:
            gate.set()
            client.delete_super_stream(name)

def test_threads(blocking: BlockingClient, stream: str) -> None:
    """
    Publishers, pipelined sends and admin calls from a pool of threads:
    every message is stored once, each future gets its own publishing id.
    """
    def admin(i: int) -> bool:
        other = '{}-t{}'.format(stream, i)
        blocking.create_stream(other)
        exists = blocking.stream_exists(other)
        blocking.delete_stream(other)
        return exists

    with blocking.publisher(stream) as pub, concurrent.futures.ThreadPoolExecutor(8) as pool:
        sent = list(pool.map(pub.send, ['s{}'.format(i) for i in range(100)]))
        futures = list(pool.map(pub.send_async, ['a{}'.format(i) for i in range(100)]))
        batches = list(pool.map(pub.send_batch, [['b{}-{}'.format(i, j) for j in range(10)]
                                                 for i in range(10)]))
        pub.flush()
        assert all(pool.map(admin, range(4)))
    ids = sent + [f.result(0) for f in futures] + [pid for b in batches for pid in b]
    assert sorted(ids) == list(range(1, 301))
    got = read(blocking, stream, 300)
    assert [o for o, _ in got] == list(range(300))
    assert len({b for _, b in got}) == 300

def test_send_async_callback(blocking: BlockingClient, stream: str) -> None:
    """A callback gets each settled future, on the client's loop thread."""
    settled: list[int] = []
    with blocking.publisher(stream) as pub:
        for i in range(5):
            pub.send_async(i, lambda f: settled.append(f.result()))
        pub.flush()
    assert sorted(settled) == [1, 2, 3, 4, 5]

def test_close_sends_what_was_accepted(blocking: BlockingClient, stream: str) -> None:
    """Closing a publisher right after send_async: every message accepted is confirmed."""
    pub = blocking.publisher(stream)
    futures = [pub.send_async(i) for i in range(500)]
    pub.close()
    assert [f.result(0) for f in futures] == list(range(1, 501))
    with pytest.raises(PublisherError):
        pub.send_async('late')
    assert [b for _, b in read(blocking, stream, 500)] == list(range(500))

def test_client_closed_first(any_url: str, stream: str) -> None:
    """A client closed before its publisher and subscription: they end with it, quietly."""
    client = blocking_client(any_url, timeout=30)
    try:
        client.create_stream(stream)
        pub = client.publisher(stream)
        futures = [pub.send_async(i) for i in range(100)]
        records = client.subscribe(stream, offset=Offset.FIRST, timeout=10)
        assert next(records).body == 0
    finally:
        with blocking_client(any_url) as other:
            client.close()
            other.delete_stream(stream)
    assert [f.result(0) for f in futures] == list(range(1, 101))
    with pytest.raises(ClientClosed):
        pub.send('late')
    pub.close()
    records.close()
    with pytest.raises(StopIteration):
        next(records)

def test_closed(any_url: str) -> None:
    """A closed client refuses calls; closing again does nothing."""
    client = blocking_client(any_url)
    client.close()
    client.close()
    assert client.closed
    with pytest.raises(ClientClosed):
        client.stream_exists('any')

async def test_running_loop(any_url: str) -> None:
    """From a running event loop, the facade refuses at once, naming the async API."""
    with pytest.raises(BlockingCallInLoop, match='use the async API'):
        blocking_client(any_url)

def test_running_loop_in_callback(blocking: BlockingClient, stream: str) -> None:
    """A blocking call from a callback on the client's own loop raises (no deadlock)."""
    with blocking.publisher(stream) as pub:
        future = pub.send_async('x', lambda f: blocking.stream_exists(stream))
        pub.flush()
        assert future.result(0) == 1
        errors: list[BaseException] = []

        def call(f: concurrent.futures.Future[int]) -> None:
            try:
                pub.send('y')
            except BlockingCallInLoop as ex:
                errors.append(ex)
        pub.send_async('z', call)
        pub.flush()
    assert len(errors) == 1

def test_serializer(blocking: BlockingClient, stream: str) -> None:
    """
    Objects sent with a serializer come back as objects; a message of
    another content type raises naming its stream and offset, or comes raw.
    """
    json = JSONSerializer()
    with blocking.publisher(stream, serializer=json) as pub:
        pub.send({'id': 1})
        pub.send_batch([[1, 2], 'text'])
    with blocking.publisher(stream) as plain:
        plain.send('plain')
    expected = [(0, {'id': 1}), (1, [1, 2]), (2, 'text'), (3, 'plain')]
    # a chunk at a time, decoded in this thread; and a message at a time
    # (with offset tracking), decoded on the loop
    assert read(blocking, stream, 4, serializer=json, on_mismatch='raw') == expected
    assert read(blocking, stream, 4, serializer=json, on_mismatch='raw', name='tracked',
                store_every=1000) == expected
    trackings: list[dict[str, tp.Any]] = [{}, {'name': 'tracked', 'store_every': 1000}]
    for tracking in trackings:
        with blocking.subscribe(stream, offset=Offset.offset(2), serializer=json,
                                timeout=10, **tracking) as records:
            assert records.next().body == 'text'
            with pytest.raises(ContentTypeMismatch) as info:
                records.next()
        assert (info.value.stream, info.value.offset) == (stream, 3)
        assert (info.value.expected, info.value.found) == ('application/json', None)

@pytest.fixture
def silent() -> Iterator[int]:
    """A port that accepts connections and never answers (a hung broker)."""
    with socket.socket() as server:
        server.bind(('127.0.0.1', 0))
        server.listen(8)
        yield server.getsockname()[1]

def test_dead_broker(silent: int) -> None:
    """A broker that never answers: the async API's typed error, not a hang."""
    client = blocking_client(
        'rabbitmq-stream://guest:guest@127.0.0.1:{}/'.format(silent), connect_timeout=0.5,
    )
    try:
        with pytest.raises(ConnectionLost, match='timed out'):
            client.stream_exists('any')
    finally:
        client.close()

@pytest.fixture
def proxy_loop() -> Iterator[LoopThread]:
    async def nothing() -> None:
        pass
    runner = LoopThread('proxy', nothing)
    yield runner
    runner.close(10)

def test_broker_stops_answering(any_url: str, stream: str, proxy_loop: LoopThread) -> None:
    """
    A broker that stops answering: requests raise RequestTimeout, a send
    ConfirmTimeout (the async API's errors), and the client closes.
    """
    p = urlsplit(any_url)
    proxy = Proxy(p.hostname or 'localhost', p.port or 5552)
    proxy_loop.run(proxy.start(), 10, 'proxy')
    url = 'rabbitmq-stream://guest:guest@127.0.0.1:{}/'.format(proxy.port)
    with blocking_client(url, timeout=1, request_timeout=0.5) as client:
        client.create_stream(stream)
        try:
            publisher = client.publisher(stream)
            publisher.send('before')
            proxy_loop.call(proxy.hold)
            with pytest.raises(ConfirmTimeout):
                publisher.send('held')
            with pytest.raises(RequestTimeout):
                client.stream_exists(stream)
            proxy_loop.call(proxy.release)
            publisher.close()
        finally:
            client.delete_stream(stream)
    proxy_loop.run(proxy.close(), 10, 'proxy')

def test_interpreter_exit(any_url: str, stream: str) -> None:
    """
    A script leaving a client, a publisher with messages in flight and
    subscriptions open exits cleanly: no hang, no ResourceWarning, no
    task destroyed pending.
    """
    script = textwrap.dedent('''
        import sys
        from rbfly.streams import Offset
        from rbfly.streams.blocking import blocking_client
        url, stream = sys.argv[1:]
        client = blocking_client(url, timeout=30)
        client.create_stream(stream)
        publisher = client.publisher(stream)
        publisher.send('first')
        for i in range(100):
            publisher.send_async(i)
        records = client.subscribe(stream, offset=Offset.FIRST, timeout=10)
        assert next(records).body == 'first'
        waiting = client.subscribe(stream, offset=Offset.NEXT, timeout=0.1)
        try:
            waiting.next()
        except TimeoutError:
            pass
        other = blocking_client(url)
        print('exiting', other.stream_exists(stream))
    ''')
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    try:
        result = subprocess.run(
            # ResourceWarning shown (unclosed loops, sockets, transports);
            # not -X dev, whose slow-callback reports a loaded machine makes
            [sys.executable, '-W', 'always::ResourceWarning', '-c', script, any_url, stream],
            capture_output=True, text=True, timeout=60, env=env, check=False,
        )
    finally:
        with blocking_client(any_url) as client:
            client.delete_stream(stream)
    assert result.returncode == 0, result.stderr
    assert result.stdout == 'exiting True\n'
    assert result.stderr == ''
