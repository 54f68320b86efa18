"""
The ``rbfly`` command against the brokers: every subcommand, its output,
its exit status and its one-line errors; and a shell pipeline.
"""

import asyncio
import io
import json
import signal
import subprocess
import sys
import typing as tp
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from rbfly.cli import main
from rbfly.streams import Offset, PublisherBin, streams_client
from rbfly.streams.serializers import Codec, JSONSerializer, MsgpackSerializer

ROOT = Path(__file__).resolve().parents[2]

def run(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, url: str,
        *argv: str, stdin: bytes = b'',
) -> tuple[int, str, str]:
    """Run the command in this process; return its status, stdout, stderr."""
    monkeypatch.setattr(sys, 'stdin', io.TextIOWrapper(io.BytesIO(stdin)))
    status = main(['--url', url, *argv])
    out, err = capsys.readouterr()
    return status, out, err

@pytest.fixture
def name(url43: str) -> Iterator[str]:
    """A stream name; the stream is deleted at the end if it exists."""
    stream = 'rbfly-cli-{}'.format(uuid.uuid4().hex[:10])
    yield stream
    main(['--url', url43, 'stream', 'delete', stream])

def test_stream_publish_tail_delete(
        url43: str, name: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Create with retention, publish lines, tail them in both formats, inspect, delete."""
    status, _, err = run(capsys, monkeypatch, url43, 'stream', 'create', name,
                         '--max-age', '1h', '--max-length-bytes', '1GB',
                         '--max-segment-size-bytes', '50MB')
    assert (status, err) == (0, '')
    status, out, _ = run(capsys, monkeypatch, url43, 'publish', name, '--batch', '2',
                         stdin='one\ntwo\r\nthrée'.encode())
    assert (status, out) == (0, '3 messages confirmed\n')
    status, out, _ = run(capsys, monkeypatch, url43, 'tail', name)
    assert (status, out) == (0, 'one\ntwo\nthrée\n')
    status, out, _ = run(capsys, monkeypatch, url43, 'tail', name, '--offset', '1', '-n', '1',
                         '--format', 'json')
    record = json.loads(out)
    assert status == 0 and record['offset'] == 1 and record['body'] == 'two'
    assert record['timestamp'].startswith('20')
    status, out, _ = run(capsys, monkeypatch, url43, 'stream', 'info', name, '--format', 'json')
    info = json.loads(out)
    assert status == 0 and info['stream'] == name and info['committed_offset'] == 2
    assert info['leader'].endswith(':5556')
    status, _, _ = run(capsys, monkeypatch, url43, 'stream', 'delete', name)
    assert status == 0
    status, out, err = run(capsys, monkeypatch, url43, 'stream', 'delete', name)
    assert status == 1 and out == ''
    assert err.startswith('rbfly: error: ') and 'does not exist' in err and name in err
    assert err.count('\n') == 1

def test_publish_json_amqp_and_filter(
        url43: str, name: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
) -> None:
    """JSON bodies, messages with sections, filter values and a filtered tail."""
    run(capsys, monkeypatch, url43, 'stream', 'create', name)
    lines = [
        {'body': {'n': 1}, 'properties': {'subject': 's1'},
         'application_properties': {'k': 'v'}},
        {'body': [1, 2]},
    ]
    stdin = '\n'.join(json.dumps(x) for x in lines).encode()
    status, out, _ = run(capsys, monkeypatch, url43, 'publish', name, '--json', '--amqp',
                         '--filter-value', 'red', stdin=stdin)
    assert (status, out) == (0, '2 messages confirmed\n')
    run(capsys, monkeypatch, url43, 'publish', name, '--json', stdin=b'"plain"\n')
    status, out, _ = run(capsys, monkeypatch, url43, 'tail', name, '--format', 'json',
                         '--filter', 'red')
    records = [json.loads(line) for line in out.splitlines()]
    assert status == 0 and [r['body'] for r in records] == [{'n': 1}, [1, 2]]
    assert records[0]['properties'] == {'subject': 's1', 'content_type': 'application/json'}
    assert records[0]['application_properties'] == {'k': 'v', 'filter': 'red'}
    status, out, _ = run(capsys, monkeypatch, url43, 'tail', name, '--offset', 'last')
    assert (status, out) == (0, 'plain\n')
    status, _, err = run(capsys, monkeypatch, url43, 'publish', name, '--json',
                         stdin=b'{"broken": \n')
    assert status == 1 and 'line 1: not JSON' in err

async def _read(url: str, stream: str, count: int, **options: tp.Any) -> list[object]:
    """The first ``count`` objects of a stream, read with the client's options."""
    got: list[object] = []
    async with streams_client(url) as client:
        async with asyncio.timeout(30):
            async for obj in client.subscribe(stream, offset=Offset.FIRST, **options):
                got.append(obj)
                if len(got) == count:
                    break
    return got

def test_publish_serializers(
        url43: str, name: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
) -> None:
    """
    ``publish --json`` writes what a JSONSerializer subscription reads (the
    content type set; it had none, and every message was a
    ContentTypeMismatch); ``--serializer msgpack`` what a MsgpackSerializer
    one reads; ``--serializer amqp`` AMQP values, as --json did; and
    ``tail`` prints each body decoded by its content type.
    """
    run(capsys, monkeypatch, url43, 'stream', 'create', name)
    lines = b'{"order": 1, "total": 9.5}\n[1, "two"]\n'
    for options in (['--json'], ['--json', '--serializer', 'msgpack'],
                    ['--json', '--serializer', 'amqp']):
        status, out, _ = run(capsys, monkeypatch, url43, 'publish', name, *options,
                             stdin=lines)
        assert (status, out) == (0, '2 messages confirmed\n')
    objects: list[object] = [{'order': 1, 'total': 9.5}, [1, 'two']]
    got = asyncio.run(_read(url43, name, 6, serializer=JSONSerializer(), on_mismatch='raw'))
    assert got[:2] == objects
    got = asyncio.run(_read(url43, name, 4, serializer=MsgpackSerializer(), on_mismatch='raw'))
    assert got[2:4] == objects
    assert asyncio.run(_read(url43, name, 6))[4:] == objects  # AMQP values: no serializer

    status, out, err = run(capsys, monkeypatch, url43, 'tail', name)
    assert (status, err) == (0, '')
    assert out.splitlines() == ['{"order": 1, "total": 9.5}', '[1, "two"]'] * 3
    status, out, _ = run(capsys, monkeypatch, url43, 'tail', name, '--format', 'json')
    records = [json.loads(line) for line in out.splitlines()]
    assert [r['body'] for r in records] == objects * 3
    assert [r.get('properties', {}).get('content_type') for r in records] == [
        'application/json', 'application/json', 'application/msgpack', 'application/msgpack',
        None, None]
    # --no-decode: the bodies as they are
    status, out, _ = run(capsys, monkeypatch, url43, 'tail', name, '--no-decode', '-n', '4',
                         '--offset', '0')
    assert out.splitlines()[:2] == ['{"order":1,"total":9.5}', '[1,"two"]']
    assert out.splitlines()[2].startswith('\ufffd')  # MessagePack's bytes

def test_publish_content_type(
        url43: str, name: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
) -> None:
    """
    ``--content-type``: the lines' bytes with that content type; with
    --json, the serializer's bodies under another name. A body that is
    not what its content type says is printed as it is, with a note.
    """
    run(capsys, monkeypatch, url43, 'stream', 'create', name)
    status, _, _ = run(capsys, monkeypatch, url43, 'publish', name, '--content-type',
                       'text/csv', stdin=b'a,1\nb,2\n')
    assert status == 0
    status, _, _ = run(capsys, monkeypatch, url43, 'publish', name, '--json',
                       '--content-type', 'application/vnd.order+json', stdin=b'{"n": 1}\n')
    assert status == 0
    status, _, _ = run(capsys, monkeypatch, url43, 'publish', name, '--content-type',
                       'application/json', stdin=b'{"broken": \n')
    assert status == 0
    codec = Codec(JSONSerializer(), content_type='application/vnd.order+json',
                  on_mismatch='raw')
    assert asyncio.run(_read(url43, name, 3, serializer=codec)) == [b'a,1', b'b,2', {'n': 1}]
    status, out, err = run(capsys, monkeypatch, url43, 'tail', name, '--format', 'json')
    records = [json.loads(line) for line in out.splitlines()]
    assert [(r['body'], r['properties']['content_type']) for r in records] == [
        ('a,1', 'text/csv'), ('b,2', 'text/csv'), ({'n': 1}, 'application/vnd.order+json'),
        ('{"broken": ', 'application/json'),
    ]
    assert status == 0 and err.startswith('rbfly: message at offset 3: body not'
                                          ' application/json (')
    assert err.endswith('): printed as it is\n') and err.count('\n') == 1

def test_tail_library_serializers(
        url43: str, name: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``tail`` prints decoded what the library's serializers publish."""
    async def publish() -> None:
        async with streams_client(url43) as client:
            await client.create_stream(name)
            async with client.publisher(name, serializer=MsgpackSerializer()) as publisher:
                await publisher.send({'m': [1, 2]})
            async with client.publisher(name, serializer=JSONSerializer()) as publisher:
                await publisher.send({'j': 'ü'})

    asyncio.run(publish())
    status, out, err = run(capsys, monkeypatch, url43, 'tail', name)
    assert (status, out, err) == (0, '{"m": [1, 2]}\n{"j": "ü"}\n', '')

def test_binary(
        url43: str, name: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
) -> None:
    run(capsys, monkeypatch, url43, 'stream', 'create', name)
    status, out, _ = run(capsys, monkeypatch, url43, 'publish', name, '--binary',
                         stdin=b'\xff\x00raw\nok\n')
    assert (status, out) == (0, '2 messages confirmed\n')
    status, out, _ = run(capsys, monkeypatch, url43, 'tail', name, '--binary', '--format',
                         'json')
    bodies = [json.loads(line)['body'] for line in out.splitlines()]
    assert bodies == [{'base64': '/wByYXc='}, 'ok']

@pytest.mark.parametrize('action, expected', [
    ('skip', ['a', 'b']),
    ('raw', ['a', '\ufffdnot amqp', 'b']),  # bytes as UTF-8, bad ones replaced
])
def test_tail_on_decode_error(
        url43: str, name: str, action: str, expected: list[str],
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
) -> None:
    """
    A message published as raw bytes (a binary publisher) between AMQP
    ones: tail ends with the error naming its offset and the flags, and
    --on-decode-error skips it or prints its bytes, with a warning (on
    stderr, unless logging is configured; here pytest captures it).
    """
    async def publish() -> None:
        async with streams_client(url43) as client:
            await client.create_stream(name)
            async with client.publisher(name) as amqp, \
                    client.publisher(name, cls=PublisherBin) as raw:
                await amqp.send('a')
                await raw.send(b'\xffnot amqp')
                await amqp.send('b')

    asyncio.run(publish())
    status, out, err = run(capsys, monkeypatch, url43, 'tail', name)
    assert (status, out) == (1, 'a\n') and err.count('\n') == 1
    assert err.startswith(
        "rbfly: error: message at offset 1 of stream '{}' is not an AMQP 1.0 message".format(name))
    assert '--on-decode-error skip or raw' in err
    status, out, err = run(capsys, monkeypatch, url43, 'tail', name, '--on-decode-error', action)
    assert (status, out.splitlines()) == (0, expected)
    skipped = 'skipped' if action == 'skip' else 'handed out as bytes'
    assert err == ''
    warning = caplog.messages[-1]
    assert 'not AMQP 1.0 (the first at offset 1' in warning and warning.endswith(skipped)

def test_super_stream(
        url4: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = 'rbfly-cli-super-{}'.format(uuid.uuid4().hex[:8])
    try:
        status, out, _ = run(capsys, monkeypatch, url4, 'super-stream', 'create', name,
                             '--keys', 'eu,us')
        assert (status, out.split()) == (0, [name + '-eu', name + '-us'])
        status, out, _ = run(capsys, monkeypatch, url4, 'super-stream', 'info', name)
        assert status == 0 and 'partitions: {0}-eu {0}-us'.format(name) in out
        status, _, err = run(capsys, monkeypatch, url4, 'super-stream', 'create', name,
                             '--partitions', '2')
        assert status == 1 and 'already exists' in err
    finally:
        status, _, _ = run(capsys, monkeypatch, url4, 'super-stream', 'delete', name)
    assert status == 0

def test_group_status_reset(
        url43: str, name: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
) -> None:
    """
    A group's status table; a reset without --force a dry run (status 0,
    as --dry-run), then stored; JSON lines.
    """
    run(capsys, monkeypatch, url43, 'stream', 'create', name)
    run(capsys, monkeypatch, url43, 'publish', name, stdin=b'a\nb\nc\nd\ne\n')
    status, out, err = run(capsys, monkeypatch, url43, 'group', 'status', 'g', '--stream', name)
    assert (status, err) == (0, '')
    assert [line.split() for line in out.splitlines()] == [
        ['STREAM', 'STORED', 'FIRST', 'END', 'LAG', 'CAUGHT-UP'], [name, '-', '0', '4', '5', 'no'],
    ]
    for dry_run in ([], ['--dry-run']):
        status, out, err = run(capsys, monkeypatch, url43, 'group', 'reset', 'g', '--stream',
                               name, '--to', '2', '--watch', '0.2', *dry_run)
        assert status == 0 and err.count('\n') == 1
        assert err.startswith("rbfly: dry run, nothing stored (no offset of group 'g' moved")
        assert 'give --force to store these offsets' in err
        assert [line.split() for line in out.splitlines()] == [
            ['STREAM', 'BEFORE', 'STORED', 'RESUME'], [name, '-', '1', '2'],
        ]
    status, out, _ = run(capsys, monkeypatch, url43, 'group', 'status', 'g', '--stream', name)
    assert out.splitlines()[1].split()[1] == '-'  # nothing stored
    status, out, err = run(capsys, monkeypatch, url43, 'group', 'reset', 'g', '--stream', name,
                           '--to', '2', '--force', '--format', 'json')
    assert (status, err) == (0, '')
    assert json.loads(out) == {'stream': name, 'before': None, 'stored': 1, 'resume': 2}
    status, out, _ = run(capsys, monkeypatch, url43, 'group', 'status', 'g', '--stream', name,
                         '--format', 'json')
    # messages 2-4 (5 is the offset of the stored offset: no lag)
    assert json.loads(out) == {'stream': name, 'stored': 1, 'first': 0, 'end': 5, 'lag': 3,
                               'end_exact': True, 'caught_up': False}
    status, out, _ = run(capsys, monkeypatch, url43, 'tail', name, '--offset', '2', '-n', '1')
    assert out == 'c\n'
    status, out, err = run(capsys, monkeypatch, url43, 'group', 'status', 'g', '--stream',
                           name + '-missing')
    assert status == 1 and out == '' and err.count('\n') == 1 and 'does not exist' in err

def test_group_super_stream(
        url4: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """
    RabbitMQ 4.0: an end before 4.3 is the first offset of the last chunk,
    printed as a lower bound; a reset of each partition.
    """
    name = 'rbfly-cli-group-{}'.format(uuid.uuid4().hex[:8])
    try:
        run(capsys, monkeypatch, url4, 'super-stream', 'create', name, '--partitions', '2')
        run(capsys, monkeypatch, url4, 'publish', name + '-0', stdin=b'a\nb\nc\n')
        status, out, _ = run(capsys, monkeypatch, url4, 'group', 'status', 'g',
                             '--super-stream', name)
        # the end known is the first offset of the last chunk (of 1 to 3:
        # the broker may write the 3 messages as one chunk or more), a lower
        # bound; the lag counts the 3 messages, read from the last chunk
        rows = [line.split() for line in out.splitlines()]
        assert status == 0 and rows[0] == ['STREAM', 'STORED', 'FIRST', 'END', 'LAG', 'CAUGHT-UP']
        assert rows[2] == [name + '-1', '-', '-', '-', '0', 'yes']
        stream, stored, first, end, lag, caught_up = rows[1]
        assert (stream, stored, first, lag, caught_up) == (name + '-0', '-', '0', '3', 'no')
        assert end in ('0+', '1+', '2+')
        status, out, _ = run(capsys, monkeypatch, url4, 'group', 'reset', 'g',
                             '--super-stream', name, '--to', 'first', '--force')
        # stored "before offset 0" (2**64 - 1): -1, as the Java client shows it
        assert status == 0 and [line.split() for line in out.splitlines()] == [
            ['STREAM', 'BEFORE', 'STORED', 'RESUME'],
            [name + '-0', '-', '-1', '0'], [name + '-1', '-', '-1', '0'],
        ]
        status, out, _ = run(capsys, monkeypatch, url4, 'group', 'status', 'g',
                             '--super-stream', name, '--format', 'json')
        assert status == 0 and [json.loads(line)['stored'] for line in out.splitlines()] == [
            -1, -1]
        status, out, _ = run(capsys, monkeypatch, url4, 'group', 'reset', 'g',
                             '--super-stream', name, '--to', 'first', '--force',
                             '--format', 'json')
        assert status == 0 and [json.loads(line) for line in out.splitlines()] == [
            {'stream': name + '-0', 'before': -1, 'stored': -1, 'resume': 0},
            {'stream': name + '-1', 'before': -1, 'stored': -1, 'resume': 0},
        ]
        status, _, err = run(capsys, monkeypatch, url4, 'group', 'reset', 'g',
                             '--super-stream', name, '--to', '2026-01-01T00:00:00', '--force')
        assert status == 1 and 'to a time needs RabbitMQ 4.3' in err
    finally:
        run(capsys, monkeypatch, url4, 'super-stream', 'delete', name)

@pytest.mark.parametrize('what', ['publish', 'consume'])
def test_bench(
        url: str, what: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
) -> None:
    status, out, _ = run(capsys, monkeypatch, url, 'bench', what, '--count', '2000')
    assert status == 0 and out.startswith(what.replace('sh', 'shed').replace('me', 'med'))
    assert 'msg/s' in out
    # the consume figure leaves out the publishing before it, and says so
    assert ('(published first,' in out) == (what == 'consume')

def test_unreachable(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    status, out, err = run(capsys, monkeypatch, 'rabbitmq-stream://guest:guest@127.0.0.1:1/',
                           'stream', 'info', 'x')
    assert status == 1 and out == '' and err.count('\n') == 1
    assert err.startswith('rbfly: error: cannot connect to 127.0.0.1:1')

def test_shell_pipeline(url43: str, name: str) -> None:
    """``seq | rbfly publish`` then ``rbfly tail | wc -l``, as a user would write it."""
    rbfly = '{} -m rbfly --url {}'.format(sys.executable, url43)
    script = (
        'set -e; {r} stream create {s}; seq 1 500 | {r} publish {s} --batch 100;'
        ' {r} tail {s} --format json | wc -l; {r} tail {s} -n 3 --offset 497'
    ).format(r=rbfly, s=name)
    result = subprocess.run(['bash', '-c', script], capture_output=True, text=True, check=False,
                            cwd=ROOT)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split()
    assert lines[:4] == ['500', 'messages', 'confirmed', '500']
    assert lines[-3:] == ['498', '499', '500']

@pytest.mark.parametrize('broker', ['url', 'url43'])
def test_create_existing_stream(
        broker: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
) -> None:
    """
    A stream that exists with other arguments: the broker answers
    "precondition failed"; the CLI says what it means and what to do, and
    --exist-ok takes the stream as it is. Options follow the command too.
    """
    url = request.getfixturevalue(broker)
    name = 'rbfly-cli-{}'.format(uuid.uuid4().hex[:10])
    try:
        status, _, err = run(capsys, monkeypatch, url, 'stream', 'create', name,
                             '--max-age', '1h')
        assert (status, err) == (0, '')
        status, out, err = run(capsys, monkeypatch, url, 'stream', 'create', name,
                               '--max-age', '7d', '--url', url)
        assert status == 1 and out == '' and err.count('\n') == 1
        assert err.startswith(
            "rbfly: error: stream '{}' exists with other arguments than --max-age 7D".format(name))
        assert 'give --exist-ok' in err and 'rbfly stream delete {}'.format(name) in err
        assert 'Precondition' not in err
        status, out, err = run(capsys, monkeypatch, url, 'stream', 'create', name,
                               '--max-age', '7d', '--exist-ok')
        assert (status, out) == (0, '') and 'left as it is' in err
        # no arguments asked for: the stream that exists is the one wanted
        status, _, err = run(capsys, monkeypatch, url, 'stream', 'create', name)
        assert status == 0 and 'left as it is' in err
    finally:
        main(['--url', url, 'stream', 'delete', name])

def test_stream_info_310(
        url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RabbitMQ 3.10: what is known, and which broker gives the rest."""
    name = 'rbfly-cli-{}'.format(uuid.uuid4().hex[:10])
    try:
        run(capsys, monkeypatch, url, 'stream', 'create', name)
        status, out, _ = run(capsys, monkeypatch, url, 'stream', 'info', name)
        lines = out.splitlines()
        assert status == 0 and lines[:3] == [
            'stream: {}'.format(name), 'leader: localhost:5552', 'replicas: none',
        ]
        assert lines[3].startswith('first_chunk_id, committed_chunk_id: not given by RabbitMQ'
                                   ' 3.10.') and lines[3].endswith('needs RabbitMQ 3.11+')
        assert lines[-1].startswith('committed_offset: not given by RabbitMQ 3.10.')
        assert lines[-1].endswith('needs RabbitMQ 4.3+')
    finally:
        main(['--url', url, 'stream', 'delete', name])

def test_stream_info_43(
        url43: str, name: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RabbitMQ 4.3 gives every statistic: no note."""
    run(capsys, monkeypatch, url43, 'stream', 'create', name)
    status, out, _ = run(capsys, monkeypatch, url43, 'stream', 'info', name)
    assert status == 0 and 'committed_offset: -1' in out and 'needs' not in out

def test_publish_one_line_at_once(url43: str, name: str) -> None:
    """
    ``tail -f app.log | rbfly publish``: a line is published while stdin
    stays open (it used to wait for 1,000 lines or the end of the input).
    The tail waits for the line; the timeouts only stop a hang.
    """
    rbfly = [sys.executable, '-m', 'rbfly', '--url', url43]
    subprocess.run([*rbfly, 'stream', 'create', name], check=True, cwd=ROOT)
    publisher = subprocess.Popen([*rbfly, 'publish', name], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, cwd=ROOT)
    assert publisher.stdin is not None
    try:
        publisher.stdin.write(b'first\n')
        publisher.stdin.flush()
        # the first message, waited for (-n alone is the last message as of now)
        tail = subprocess.run([*rbfly, 'tail', name, '--offset', '0', '-n', '1', '--follow'],
                              capture_output=True, timeout=60, check=True, cwd=ROOT)
        assert tail.stdout == b'first\n'
        out, _ = publisher.communicate(b'second\n', timeout=60)
    finally:
        publisher.kill()
        publisher.wait()
    assert (publisher.returncode, out) == (0, b'2 messages confirmed\n')

def test_publish_interrupted(url43: str, name: str) -> None:
    """
    Ctrl-C while stdin stays open (``tail -f | rbfly publish``): status 130
    and a clean exit, not an abort on the lock of stdin that the reading
    thread held.
    """
    rbfly = [sys.executable, '-m', 'rbfly', '--url', url43]
    subprocess.run([*rbfly, 'stream', 'create', name], check=True, cwd=ROOT)
    # SIGINT's default action in the child, as a terminal's: a test run
    # started with SIGINT ignored (nohup, a shell's background job) passes
    # that on, and the publisher ignored the signal (3 hangs of 3 so); a
    # handler of this process is reset to the default in the child
    interrupt = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        publisher = subprocess.Popen([*rbfly, 'publish', name], stdin=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=ROOT)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if interrupt is None else interrupt)
    assert publisher.stdin is not None
    try:
        publisher.stdin.write(b'first\n')
        publisher.stdin.flush()
        # the first line published: the publisher runs and reads stdin (tail -n 1
        # stops at the end as of now, maybe before the line, and the signal
        # then came while Python was starting: a KeyboardInterrupt traceback)
        subprocess.run([*rbfly, 'tail', name, '--offset', '0', '--follow', '-n', '1'],
                       capture_output=True, timeout=60, check=True, cwd=ROOT)
        publisher.send_signal(signal.SIGINT)
        publisher.wait(timeout=60)  # stdin open: communicate() would close it
        assert publisher.stderr is not None
        err = publisher.stderr.read()
    finally:
        publisher.kill()
        publisher.wait()
    assert (publisher.returncode, err) == (130, b'')

def test_one_message(
        url43: str, name: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
) -> None:
    run(capsys, monkeypatch, url43, 'stream', 'create', name)
    status, out, _ = run(capsys, monkeypatch, url43, 'publish', name, stdin=b'one\n')
    assert (status, out) == (0, '1 message confirmed\n')

def test_super_stream_publish_tail(
        url4: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """
    A super stream named where a stream is expected: a hint instead of
    "does not exist"; publish --key and --key-field route each line.
    """
    name = 'rbfly-cli-super-{}'.format(uuid.uuid4().hex[:8])
    p0, p1 = name + '-eu', name + '-us'
    try:
        run(capsys, monkeypatch, url4, 'super-stream', 'create', name, '--keys', 'eu,us')
        status, out, err = run(capsys, monkeypatch, url4, 'publish', name, stdin=b'a\n')
        assert status == 1 and out == '' and err.count('\n') == 1
        assert "'{}' is a super stream (partitions: {} {})".format(name, p0, p1) in err
        assert 'give --key KEY' in err and '--key-field FIELD' in err
        status, _, err = run(capsys, monkeypatch, url4, 'tail', name, '-n', '1')
        assert status == 1 and 'e.g. rbfly tail {}'.format(p0) in err
        # key routing: the broker's bindings, eu and us
        status, out, _ = run(capsys, monkeypatch, url4, 'publish', name, '--key', 'us',
                             '--routing', 'key', stdin=b'a\nb\n')
        assert (status, out) == (0, '2 messages confirmed\n')
        lines = b'{"region": "eu", "n": 1}\n{"region": "us", "n": 2}\n'
        status, out, _ = run(capsys, monkeypatch, url4, 'publish', name, '--json',
                             '--key-field', 'region', '--routing', 'key', stdin=lines)
        assert (status, out) == (0, '2 messages confirmed\n')
        status, out, _ = run(capsys, monkeypatch, url4, 'tail', p1, '-n', '3')
        assert out.splitlines() == ['a', 'b', '{"region": "us", "n": 2}']
        status, out, _ = run(capsys, monkeypatch, url4, 'tail', p0, '-n', '1')
        assert out == '{"region": "eu", "n": 1}\n'
        status, _, err = run(capsys, monkeypatch, url4, 'publish', name, '--json',
                             '--key-field', 'region', stdin=b'{"n": 3}\n')
        assert status == 1 and "line 1: no 'region'" in err
        status, _, err = run(capsys, monkeypatch, url4, 'publish', p0, '--key', 'eu',
                             stdin=b'a\n')
        assert status == 1 and "'{}' is not a super stream".format(p0) in err
    finally:
        run(capsys, monkeypatch, url4, 'super-stream', 'delete', name)
