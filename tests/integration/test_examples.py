"""
The example programs of ``examples/``, each run as a user runs it: a
subprocess of this Python, with the broker's URL in its environment and
this checkout's rbfly first on its path. Each exits 0 and prints an
``ok:`` line once it checked its own result; the graceful shutdown
example is stopped with SIGTERM mid-way, twice, and the stream is checked
here; workers of the consumer group example, three processes joining and
leaving, process every message once between them.

The tests are plain functions (not asyncio ones): each runs once, not on
asyncio and on uvloop, as the examples choose their event loop themselves.
"""

import asyncio
import collections
import concurrent.futures
import contextlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import threading
import typing as tp
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest

from rbfly.streams import Offset, PublisherBatchFast, streams_client
from rbfly.streams.blocking import blocking_client

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / 'examples'
TIMEOUT = 30  # seconds; each example takes about 1 s

def _env(**values: str) -> dict[str, str]:
    """This environment, with ``values`` and this checkout's rbfly first."""
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(ROOT), env.get('PYTHONPATH')]))
    env.update(values)
    return env

def _required(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail('{} is not set (run: eval "$(scripts/brokers.sh env)")'.format(name))
    return value

def _run(
        command: list[str], env: dict[str, str], interpreters: int = 1,
) -> subprocess.CompletedProcess[str]:
    """
    Run a command, a hang ending it after :py:data:`TIMEOUT` seconds per
    Python interpreter it starts: an interpreter importing rbfly took 6
    to 8 s to start at a load of 17-20 on 2 cores, and the shell example's
    four took more than 30 s together once.
    """
    return subprocess.run(
        command, env=env, cwd=ROOT, capture_output=True, text=True,
        timeout=TIMEOUT * interpreters, check=False,
    )

def _example(name: str, **env: str) -> str:
    """Run an example; it exits 0 and its last line says ``ok:``; return its output."""
    done = _run([sys.executable, str(EXAMPLES / name)], _env(**env))
    assert done.returncode == 0, 'exit status {}\n{}{}'.format(
        done.returncode, done.stdout, done.stderr)
    lines = done.stdout.splitlines()
    assert lines and lines[-1].startswith('ok: '), done.stdout
    return done.stdout

def test_demo(url: str) -> None:
    """examples/demo.py, as scripts/demo.sh runs it (fewer messages)."""
    done = _run([sys.executable, str(EXAMPLES / 'demo.py'), url, '--count', '1000'], _env())
    assert done.returncode == 0, done.stderr
    assert 'all 1003 messages accounted for' in done.stdout

def test_publish_pipelined(url: str) -> None:
    out = _example('publish_pipelined.py', RBFLY_URL=url)
    assert 'ok: 20000 messages published, each confirmed once' in out

def test_bulk_sink(url: str) -> None:
    out = _example('bulk_sink.py', RBFLY_URL=url)
    assert 'second run: 7 windows; 10000 rows in all' in out

def test_blocking_script(url: str) -> None:
    """examples/blocking_wsgi.py as a plain script: the blocking client, no event loop."""
    stream = 'rbfly-example-{}'.format(uuid.uuid4().hex[:8])
    out = _example('blocking_wsgi.py', RBFLY_URL=url, RBFLY_STREAM=stream)
    assert 'ok: 100 orders published and read back, total 4950' in out

def test_blocking_wsgi(url: str) -> None:
    """
    The WSGI application of examples/blocking_wsgi.py served by wsgiref in
    a thread (a thread per request): orders posted from several threads at
    once are each confirmed once, and read back.
    """
    spec = importlib.util.spec_from_file_location('blocking_wsgi', EXAMPLES / 'blocking_wsgi.py')
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: tp.Any) -> None:
            pass

    stream = 'rbfly-example-{}'.format(uuid.uuid4().hex[:8])
    with blocking_client(url, timeout=30) as client:
        client.create_stream(stream)
        app = example.OrdersApp(client, stream)
        server = make_server('127.0.0.1', 0, app, server_class=example.ThreadingWSGIServer,
                             handler_class=Quiet)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        base = 'http://127.0.0.1:{}/orders'.format(server.server_port)

        def post(i: int) -> int:
            body = json.dumps({'order': i}).encode()
            with urllib.request.urlopen(base, body, timeout=TIMEOUT) as response:
                assert response.status == 201
                return int(json.load(response)['publishing_id'])

        try:
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                ids = list(pool.map(post, range(40)))
            assert sorted(ids) == list(range(1, 41))
            with urllib.request.urlopen(base + '?offset=0&count=40', timeout=TIMEOUT) as response:
                orders = json.load(response)
            assert [o['offset'] for o in orders] == list(range(40))
            assert sorted(o['order']['order'] for o in orders) == list(range(40))
            with pytest.raises(urllib.error.HTTPError) as info:
                urllib.request.urlopen(base, b'{not json', timeout=TIMEOUT)
            assert info.value.code == 400
            info.value.close()
        finally:
            server.shutdown()
            server.server_close()
            thread.join(TIMEOUT)
            app.close()
            client.delete_stream(stream)

def test_consume_resume(url: str) -> None:
    out = _example('consume_resume.py', RBFLY_URL=url)
    assert 'second run resumed at offset 60, invoice 60' in out

def test_fake_broker_unit_test() -> None:
    """An application's unit test on the fake broker: pytest passes it, no RabbitMQ."""
    result = _run(
        [sys.executable, '-m', 'pytest', '-q', '-s', '-p', 'no:cacheprovider',
         str(EXAMPLES / 'fake_broker_test.py')],
        _env(),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'ok: big orders forwarded once each' in result.stdout
    assert '1 passed' in result.stdout

def test_single_active(url4: str) -> None:
    out = _example('single_active.py', RBFLY_URL4=url4)
    assert out.splitlines()[:6] == [
        'A: active', 'A: read 30 messages, m0 to m29; stopped',
        'B: active', 'B: read 30 messages, m30 to m59; stopped',
        'A: active', 'A: read 30 messages, m60 to m89; stopped',
    ]

def test_single_active_needs_311(url: str) -> None:
    """On RabbitMQ 3.10 the example says what it needs, and fails."""
    done = _run([sys.executable, str(EXAMPLES / 'single_active.py')],
                _env(RBFLY_URL4='', RBFLY_URL=url))
    assert done.returncode == 1
    assert 'single active consumers need RabbitMQ 3.11 or later' in done.stderr

def test_super_stream_keys(url4: str) -> None:
    out = _example('super_stream_keys.py', RBFLY_URL4=url4)
    assert "for routing key 'mars'" in out

def test_super_stream_filter(url4: str, url43: str) -> None:
    """On RabbitMQ 4.0 and 4.3: the eu orders of every partition, and nothing else sent."""
    for url in (url4, url43):
        out = _example('super_stream_filter.py', RBFLY_URL4=url)
        assert out.splitlines()[-1] == \
            'ok: 30 eu orders of 90, from 3 partitions; the broker sent no other', out

def test_super_stream_filter_needs_313(url: str) -> None:
    """On RabbitMQ 3.10 the example says what it needs, and fails."""
    done = _run([sys.executable, str(EXAMPLES / 'super_stream_filter.py')],
                _env(RBFLY_URL4='', RBFLY_URL=url))
    assert done.returncode == 1
    assert 'filtering and creating super streams need RabbitMQ 3.13 or later' in done.stderr

def test_tls_password(url: str) -> None:
    """TLS to RabbitMQ 3.10, SASL PLAIN."""
    out = _example(
        'tls.py', RBFLY_TLS_URL=_required('RBFLY_TLS_URL'), RBFLY_TLS_CA=_required('RBFLY_TLS_CA'),
    )
    assert 'authenticated with PLAIN' in out

def test_tls_client_certificate(url4: str) -> None:
    """TLS to RabbitMQ 4.x with a client certificate and no user: SASL EXTERNAL."""
    p = urlsplit(_required('RBFLY_TLS_URL4'))
    out = _example(
        'tls.py',
        RBFLY_TLS_URL=urlunsplit((p.scheme, '{}:{}'.format(p.hostname, p.port), p.path, '', '')),
        RBFLY_TLS_CA=_required('RBFLY_TLS_CA'),
        RBFLY_TLS_CERT=_required('RBFLY_TLS_CERT'), RBFLY_TLS_KEY=_required('RBFLY_TLS_KEY'),
    )
    assert 'authenticated with EXTERNAL' in out

def test_cli_pipeline(url: str) -> None:
    done = _run(['bash', str(EXAMPLES / 'cli_pipeline.sh')],
                _env(RBFLY_URL=url, PYTHON=sys.executable), interpreters=4)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith('ok: 1000 lines piped'), done.stdout

#
# graceful shutdown
#

RESULT = re.compile(
    r'ok: published orders (\d+)-(\d+), all confirmed; consumed orders (\d+)-(\d+);'
    r' offset (\d+) stored',
)
STARTED = re.compile(r'consuming from order (\d+) \(offset (\d+)\)')

class Run(tp.NamedTuple):
    """What one run of the service reported."""
    published: tuple[int, int]
    consumed_from: tuple[int, int]  # order, offset
    consumed: tuple[int, int]
    stored: int

def _service(url: str, stream: str) -> Run:
    """
    Start the service, send it SIGTERM once it runs and half a second
    later (it publishes meanwhile), and return what it reported.
    """
    proc = subprocess.Popen(
        [sys.executable, str(EXAMPLES / 'graceful_shutdown.py'), '--stream', stream],
        env=_env(RBFLY_URL=url), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )
    killer = threading.Timer(TIMEOUT, proc.kill)  # never hang the suite
    killer.start()
    try:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith('running:'):
                break
        assert lines and lines[-1].startswith('running:'), ''.join(lines)
        threading.Event().wait(0.5)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate()
    finally:
        killer.cancel()
        if proc.poll() is None:  # an assertion failed before it was stopped
            proc.kill()
            proc.communicate()
    out = ''.join(lines) + out
    assert proc.returncode == 0, 'exit status {}\n{}{}'.format(proc.returncode, out, err)
    result = RESULT.search(out)
    started = STARTED.search(out)
    assert result is not None and started is not None, out
    n = [int(v) for v in result.groups()]
    return Run((n[0], n[1]), (int(started[1]), int(started[2])), (n[2], n[3]), n[4])

async def _stream(url: str, stream: str, count: int) -> tuple[list[object], int, int]:
    """
    The first ``count`` messages of the service's stream, its publisher's
    last publishing id and its consumer's stored offset.
    """
    async with streams_client(url) as client:
        bodies: list[object] = []
        async with asyncio.timeout(TIMEOUT):
            async for body in client.subscribe(stream, offset=Offset.FIRST):
                bodies.append(body)
                if len(bodies) == count:
                    break
        return (
            bodies,
            await client.query_publisher_sequence(stream, 'order-service'),
            await client.query_offset(stream, 'order-service'),
        )

async def _delete(url: str, stream: str) -> None:
    async with streams_client(url) as client:
        await client.delete_stream(stream)

def test_graceful_shutdown(url: str, stream: str) -> None:
    """
    Stopped by SIGTERM mid-way, the service had every order it reported
    published confirmed: the stream holds each once, in order, and nothing
    else was stored under its publisher's name; its consumer's offset is
    stored. Restarted, both continue where they stopped.
    """
    try:
        first = _service(url, stream)
        assert first.published[0] == 1
        assert first.consumed_from == (1, 0)
        assert first.published[1] > 1 and first.consumed[1] > 1
        orders, sequence, stored = asyncio.run(_stream(url, stream, first.published[1]))
        assert orders == [{'seq': n} for n in range(1, first.published[1] + 1)]
        assert sequence == first.published[1]
        assert stored == first.stored

        second = _service(url, stream)
        assert second.published[0] == first.published[1] + 1
        assert second.consumed_from[0] == first.consumed[1] + 1
        assert second.consumed_from[1] > first.stored
        orders, sequence, stored = asyncio.run(_stream(url, stream, second.published[1]))
        assert orders == [{'seq': n} for n in range(1, second.published[1] + 1)]
        assert sequence == second.published[1]
        assert stored == second.stored
    finally:
        asyncio.run(_delete(url, stream))

#
# consumer group
#

PROCESSED = re.compile(r'(\S+) (\d+) (\d+)')  # --log -: partition, offset, message
ACTIVE = re.compile(r'(active|inactive) on (\S+) \((?:stored offset (\d+)|no offset stored)\)')
SUMMARY = re.compile(r'(\S+): offsets (\d+)-(\d+), (\d+) messages')
PARTITIONS = 4

@pytest.fixture(params=['4.0', '4.3'])
def group_url(request: pytest.FixtureRequest) -> str:
    """RabbitMQ 4.0, then 4.3."""
    return str(request.getfixturevalue('url4' if request.param == '4.0' else 'url43'))

class Worker:
    """
    A consumer_group.py process (``--log -``), its output read as it
    comes: the partitions it is active on, the messages it processed.

    :param changed: Set on each line of any worker (and at their ends).
    """
    def __init__(self, label: str, proc: asyncio.subprocess.Process,
                 changed: asyncio.Event) -> None:
        self.label = label
        self.proc = proc
        self.lines: list[str] = []
        self.active: set[str] = set()
        self.stored: dict[str, int | None] = {}  # on activation, per partition
        self.processed: list[tuple[str, int, int]] = []  # partition, offset, message
        self._changed = changed
        self._out = asyncio.create_task(self._read())
        assert proc.stderr is not None
        self._err = asyncio.create_task(proc.stderr.read())

    @classmethod
    async def start(cls, label: str, url: str, super_stream: str,
                    changed: asyncio.Event) -> 'Worker':
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(EXAMPLES / 'consumer_group.py'), '--super-stream', super_stream,
            '--log', '-', env=_env(RBFLY_URL4=url), cwd=ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        return cls(label, proc, changed)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            async for raw in self.proc.stdout:
                line = raw.decode().rstrip('\n')
                self.lines.append(line)
                if m := PROCESSED.fullmatch(line):
                    self.processed.append((m[1], int(m[2]), int(m[3])))
                elif m := ACTIVE.fullmatch(line):
                    if m[1] == 'active':
                        self.active.add(m[2])
                        self.stored[m[2]] = None if m[3] is None else int(m[3])
                    else:
                        self.active.discard(m[2])
                self._changed.set()
        finally:
            self._changed.set()

    async def stop(self) -> str:
        """SIGTERM: it exits 0 and says ``ok:``; return its last line."""
        self.proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(TIMEOUT):
            await self._out
            err = (await self._err).decode()
            status = await self.proc.wait()
        out = '\n'.join(line for line in self.lines if not PROCESSED.fullmatch(line))
        assert status == 0, '{}: exit status {}\n{}\n{}'.format(self.label, status, out, err)
        # no warning: a commit failing, a hand-off timing out (a Credit
        # reaching the broker after it deactivated the subscription, a
        # partition moving, is refused with PRECONDITION_FAILED, and logged
        # at debug level: the broker keeps the credit)
        assert not err, '{}: {}'.format(self.label, err)
        assert self.lines[-1].startswith('ok: '), out
        return self.lines[-1]

    async def kill(self) -> None:
        """End it (a test failed before it stopped it)."""
        if self.proc.returncode is None:
            self.proc.kill()
        await self.proc.wait()
        await asyncio.wait([self._out, self._err])

    def summary(self) -> dict[str, tuple[int, int, int]]:
        """The summary it printed: first and last offset, count, per partition."""
        found = (SUMMARY.fullmatch(line) for line in self.lines)
        return {m[1]: (int(m[2]), int(m[3]), int(m[4])) for m in found if m}

async def _until(changed: asyncio.Event, what: str, condition: tp.Callable[[], bool]) -> None:
    """Wait until the workers' output makes ``condition`` true (at most ``TIMEOUT`` s)."""
    try:
        async with asyncio.timeout(TIMEOUT):
            while not condition():
                changed.clear()
                await changed.wait()
    except TimeoutError:
        raise AssertionError('not within {} s: {}'.format(TIMEOUT, what)) from None

def _balanced(workers: list[Worker], partitions: list[str]) -> bool:
    """Each partition active in one of the workers, and each has its share."""
    held = [p for w in workers for p in w.active]
    share = len(partitions) // len(workers)
    return sorted(held) == sorted(partitions) and all(
        len(w.active) in (share, share + 1) for w in workers)

async def _publish(url: str, super_stream: str, first: int, count: int | None,
                   stop: asyncio.Event) -> int:
    """
    Publish numbers from ``first`` to a super stream (hash routing of
    their text): ``count`` of them, or about 1,000 a second until
    ``stop`` is set; return the number after the last (each confirmed).
    """
    n = first
    async with streams_client(url) as client, client.super_stream_publisher(
            super_stream, str, cls=PublisherBatchFast) as publisher:
        while (n < first + count) if count is not None else not stop.is_set():
            for _ in range(10):
                publisher.batch(n)
                n += 1
            await publisher.flush()
            if count is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.01)
    return n

async def _consumer_group(url: str) -> None:
    super_stream = 'rbfly-example-group-{}'.format(uuid.uuid4().hex[:8])
    async with streams_client(url) as client:
        partitions = await client.create_super_stream(super_stream, PARTITIONS)
    changed = asyncio.Event()
    stop = asyncio.Event()
    workers: list[Worker] = []
    publisher: asyncio.Task[int] | None = None
    try:
        await _publish(url, super_stream, 0, 2000, stop)
        a = await Worker.start('A', url, super_stream, changed)
        workers.append(a)
        await _until(changed, 'A active on all partitions', lambda: a.active == set(partitions))
        publisher = asyncio.create_task(_publish(url, super_stream, 2000, None, stop))
        await _until(changed, 'A processing new messages',
                     lambda: any(n >= 2000 for *_, n in a.processed))

        # B joins (its subscriptions come after A's: the broker gives it
        # every other partition): A hands two over while it processes
        b = await Worker.start('B', url, super_stream, changed)
        workers.append(b)
        await _until(changed, 'A and B active on 2 partitions each',
                     lambda: _balanced([a, b], partitions))
        counts = len(a.processed), len(b.processed)
        await _until(changed, 'A and B processing', lambda: (
            len(a.processed) > counts[0] + 100 and len(b.processed) > counts[1] + 100))

        # A stops: its partitions go to B, which starts after A's last
        # message on each (A's iteration committed it on closing)
        held = set(a.active)
        from_b = len(b.lines)
        await a.stop()
        await _until(changed, 'B active on all partitions', lambda: b.active == set(partitions))
        moved = {m[2]: m[3] for line in b.lines[from_b:] if (m := ACTIVE.fullmatch(line))}
        last_a = {p: o for p, o, _ in a.processed}
        assert set(moved) == held
        assert {p: int(o) for p, o in moved.items()} == {p: last_a[p] for p in held}

        # C joins: B hands two over
        c = await Worker.start('C', url, super_stream, changed)
        workers.append(c)
        await _until(changed, 'B and C active on 2 partitions each',
                     lambda: _balanced([b, c], partitions))
        await _until(changed, 'C processing', lambda: len(c.processed) > 100)

        stop.set()
        total = await publisher
        await _until(changed, 'all {} messages processed'.format(total), lambda: (
            len({n for w in workers for *_, n in w.processed}) >= total))
        for w in (b, c):
            await w.stop()
    finally:
        stop.set()
        if publisher is not None:
            await asyncio.wait([publisher])
        for w in workers:
            await w.kill()
        async with streams_client(url) as client:
            await client.delete_super_stream(super_stream)

    # each message processed once, in order per partition
    numbers = sorted(n for w in workers for *_, n in w.processed)
    assert numbers == list(range(total)), 'lost or repeated: {}'.format(
        sorted(set(range(total)).symmetric_difference(numbers))[:20]
        or [n for n, k in collections.Counter(numbers).items() if k > 1][:20])
    for p in partitions:
        offsets = [o for w in workers for q, o, _ in w.processed if q == p]
        assert len(offsets) == len(set(offsets))
        for w in workers:
            mine = [o for q, o, _ in w.processed if q == p]
            assert mine == sorted(mine)
    for w in workers:
        assert w.processed, '{} processed nothing'.format(w.label)
        # what it printed at the end matches what it processed, no repeat skipped
        assert w.lines[-1] == 'ok: processed {} messages of {} partitions, 0 seen again' \
            ' skipped; offsets committed'.format(len(w.processed), len(w.summary()))
        for p, (first, last, count) in w.summary().items():
            mine = [o for q, o, _ in w.processed if q == p]
            assert (first, last, count) == (mine[0], mine[-1], len(mine))

def test_consumer_group_needs_311(url: str) -> None:
    """On RabbitMQ 3.10 a worker says what it needs, and fails."""
    done = _run([sys.executable, str(EXAMPLES / 'consumer_group.py'), '--seconds', '5'],
                _env(RBFLY_URL4='', RBFLY_URL=url))
    assert done.returncode == 1
    assert 'a consumer group needs RabbitMQ 3.11 or later' in done.stderr

def test_consumer_group(group_url: str) -> None:
    """
    Workers of examples/consumer_group.py as processes, reading a super
    stream of 4 partitions while a producer publishes: A alone, then B
    joining, A stopped by SIGTERM (its partitions move to B), C joining,
    B and C stopped: each exits 0, and every message was processed once,
    by one of them.
    """
    asyncio.run(_consumer_group(group_url))
