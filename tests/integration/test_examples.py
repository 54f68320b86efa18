"""
The example programs of ``examples/``, each run as a user runs it: a
subprocess of this Python, with the broker's URL in its environment and
this checkout's rbfly first on its path. Each exits 0 and prints an
``ok:`` line once it checked its own result; the graceful shutdown
example is stopped with SIGTERM mid-way, twice, and the stream is checked
here.

The tests are plain functions (not asyncio ones): each runs once, not on
asyncio and on uvloop, as the examples choose their event loop themselves.
"""

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import typing as tp
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from rbfly.streams import Offset, streams_client

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

def _run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT,
        check=False,
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
                _env(RBFLY_URL=url, PYTHON=sys.executable))
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
