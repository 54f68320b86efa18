"""
What the command line takes: durations, sizes, offsets, options before
or after the command; its refusals; --version; the errors of the
connection timeout; the lines ``publish`` reads as they come.
"""

import asyncio
import datetime as dt
import io
import os
import socket
import sys

import pytest

from rbfly.cli import main, parse, parser
from rbfly.cli.commands import flag_names
from rbfly.cli.lines import LineReader
from rbfly.cli.output import plural, shown_offset
from rbfly.streams import Offset

@pytest.mark.parametrize('text, expected', [
    ('30s', '30s'), ('15m', '15m'), ('1h', '1h'), ('7d', '7D'), ('7D', '7D'), ('6M', '6M'),
    ('1Y', '1Y'),
])
def test_duration(text: str, expected: str) -> None:
    assert parse.duration(text) == expected

@pytest.mark.parametrize('text', ['', '0s', '1', 'h', '1.5h', '-1h', '1w'])
def test_bad_duration(text: str) -> None:
    with pytest.raises(ValueError, match='duration'):
        parse.duration(text)

@pytest.mark.parametrize('text, expected', [
    ('1000', 1000), ('500MB', 500 * 10**6), ('10GB', 10 * 10**9), ('1GiB', 2**30),
    ('1.5KiB', 1536), ('2kB', 2000), ('7B', 7),
])
def test_size(text: str, expected: int) -> None:
    assert parse.size(text) == expected

@pytest.mark.parametrize('text', ['', '0', 'MB', '1.5', '10 XB', '-1GB', '0.1B'])
def test_bad_size(text: str) -> None:
    with pytest.raises(ValueError, match='size'):
        parse.size(text)

def test_offset() -> None:
    assert parse.offset('first') == Offset.FIRST
    assert parse.offset('LAST') == Offset.LAST
    assert parse.offset('next') == Offset.NEXT
    assert parse.offset('42') == Offset.offset(42)
    when = dt.datetime(2026, 11, 23, 10, tzinfo=dt.UTC).timestamp()
    assert parse.offset('2026-11-23T10:00:00') == Offset.timestamp(when)
    assert parse.offset('2026-11-23T11:00:00+01:00') == Offset.timestamp(when)
    with pytest.raises(ValueError, match='offset'):
        parse.offset('yesterday')

@pytest.mark.parametrize('argv, error', [
    (['stream', 'create', 's', '--max-age', '1w'], 'duration'),
    (['stream', 'create', 's', '--max-length-bytes', 'lots'], 'size'),
    (['tail', 's', '-n', '0'], 'at least 1'),
    (['tail', 's', '--on-decode-error', 'ignore'], "invalid choice: 'ignore'"),
    (['super-stream', 'create', 's'], 'one of the arguments'),
    (['publish', 's', '--binary', '--json'], 'not allowed with'),
    (['frobnicate'], 'invalid choice'),
    (['group', 'status', 'g'], 'one of the arguments --stream --super-stream is required'),
    (['group', 'status', 'g', '--stream', 's', '--super-stream', 'p'], 'not allowed with'),
    (['group', 'reset', 'g', '--stream', 's'], 'the following arguments are required: --to'),
    (['group', 'reset', 'g', '--stream', 's', '--to', 'yesterday'], "offset 'yesterday'"),
    (['group', 'reset', 'g', '--stream', 's', '--to', '-1'], "offset '-1'"),
    (['group', 'reset', 'g', '--stream', 's', '--to', 'first', '--watch', '0'],
     "'0': give seconds"),
    (['group', 'reset', 'g', '--stream', 's', '--to', 'first', '--watch', 'nan'],
     "'nan': give seconds"),
    (['group', 'reset', 'g', '--stream', 's', '--to', 'first', '--dry-run', '--force'],
     'argument --force: not allowed with argument --dry-run'),
    (['stream', 'create', 's', '--filter-size', '300'],
     "argument --filter-size: '300': give bytes, from 16 to 255"),
    (['stream', 'create', 's', '--filter-size', '15'], 'argument --filter-size'),
    (['publish', 's', '--linger', '-1'], "argument --linger: '-1': give seconds"),
    (['publish', 's', '--key', 'k', '--key-field', 'f'], 'not allowed with'),
    (['tail', 's', '--connect-timeout', '0'], "argument --connect-timeout: '0'"),
    (['publish', 's', '--serializer', 'yaml'], "invalid choice: 'yaml'"),
])
def test_usage_errors(argv: list[str], error: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A command line argparse refuses: status 2 and the reason, before any connection."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert error in capsys.readouterr().err

def test_amqp_needs_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(['publish', 's', '--amqp']) == 2
    assert '--amqp goes with --json' in capsys.readouterr().err

@pytest.mark.parametrize('argv, error', [
    (['--binary', '--serializer', 'json'], '--binary publishes bytes without AMQP properties'),
    (['--binary', '--content-type', 'text/csv'], 'no --serializer, no --content-type'),
    (['--json', '--serializer', 'amqp', '--content-type', 'x/y'],
     '--serializer amqp publishes AMQP values, which name no content type'),
])
def test_publish_serializer_refused(
        argv: list[str], error: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Options of publish that do not go together: status 2, before any connection."""
    assert main(['publish', 's', *argv]) == 2
    assert error in capsys.readouterr().err

def test_key_field_needs_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(['publish', 's', '--key-field', 'user']) == 2
    assert '--key-field goes with --json' in capsys.readouterr().err

def test_options_after_the_command() -> None:
    """The connection options go before the command or after it; after wins."""
    args = parser().parse_args(['--url', 'rabbitmq-stream://a/', 'tail', 's'])
    assert (args.url, args.debug, args.connect_timeout) == ('rabbitmq-stream://a/', False, 30)
    args = parser().parse_args([
        'stream', 'info', 's', '--url', 'rabbitmq-stream://b/', '--debug',
        '--connect-timeout', '2.5', '--tls-ca', 'ca.pem',
    ])
    assert (args.url, args.debug, args.connect_timeout, args.tls_ca) == (
        'rabbitmq-stream://b/', True, 2.5, 'ca.pem')
    args = parser().parse_args(['--url', 'rabbitmq-stream://a/', 'group', 'status', 'g',
                                '--stream', 's', '--url', 'rabbitmq-stream://c/'])
    assert args.url == 'rabbitmq-stream://c/'

def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    """``rbfly --version``: the package, Python, and whether the Cython code is compiled."""
    with pytest.raises(SystemExit) as info:
        main(['--version'])
    out = capsys.readouterr().out
    assert info.value.code == 0 and out.startswith('rbfly ')
    assert 'Python {}.{}.'.format(*sys.version_info[:2]) in out
    assert out.endswith('Cython extensions: compiled)\n')

def test_connect_timeout(capsys: pytest.CaptureFixture[str]) -> None:
    """A port that takes the connection and says nothing: the host, the port, the flag."""
    with socket.socket() as server:
        server.bind(('127.0.0.1', 0))
        server.listen()
        port = server.getsockname()[1]
        status = main(['stream', 'info', 'x', '--url',
                       'rabbitmq-stream://guest:guest@127.0.0.1:{}/'.format(port),
                       '--connect-timeout', '0.2'])
    err = capsys.readouterr().err
    assert status == 1 and err.count('\n') == 1
    assert err.startswith('rbfly: error: connecting to 127.0.0.1:{} timed out after 0.2s'.format(
        port))
    assert 'give --connect-timeout SECONDS' in err

def test_help_of_bench(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(['bench', '--help'])
    help_text = ' '.join(capsys.readouterr().out.split())
    assert 'consume publishes them first (not timed)' in help_text

def test_group_reset_dry_run() -> None:
    """``--dry-run`` says what the reset does without ``--force`` (it was refused)."""
    args = parser().parse_args(['group', 'reset', 'g', '--stream', 's', '--to', 'first',
                                '--dry-run'])
    assert (args.dry_run, args.force) == (True, False)

def test_shown_offset() -> None:
    """The offset stored before offset 0 is -1 (it was shown 18446744073709551615)."""
    assert [shown_offset(o) for o in (2**64 - 1, 0, 5, None)] == [-1, 0, 5, None]

def test_plural() -> None:
    assert [plural(n, 'message') for n in (0, 1, 2)] == [
        '0 messages', '1 message', '2 messages']

def test_flag_names() -> None:
    """A parameter of create_stream named in an error is the flag the user typed."""
    assert flag_names('filter_size must be a whole number from 16 to 255, got 9') == (
        '--filter-size must be a whole number from 16 to 255, got 9')
    assert flag_names('initial_cluster_size must be; max_age must') == (
        '--replicas must be; --max-age must')

async def test_lines_as_they_come() -> None:
    """
    A line is given as soon as it is read; a part of a line waits for its
    end (a read that times out loses nothing); the last line needs no end.
    """
    rfd, wfd = os.pipe()
    with io.FileIO(rfd, 'rb') as source, io.FileIO(wfd, 'wb') as sink:
        async with LineReader(io.BufferedReader(source)) as reader:
            sink.write(b'one\ntw')
            assert await reader.read() == [b'one']
            assert await reader.read(0.05) == []  # "tw" waits for its line end
            sink.write(b'o\r\nthree\nfour\n')
            lines: list[bytes] = []
            while len(lines) < 3:
                lines.extend(await reader.read() or [])
            assert lines == [b'two', b'three', b'four']
            sink.write(b'last')
            sink.close()
            rest: list[bytes] = []
            while (got := await reader.read()) is not None:
                rest.extend(got)
            assert rest == [b'last']
            assert await reader.read() is None

async def test_lines_of_a_big_input() -> None:
    """Many blocks through a small queue: every line, in order."""
    data = b''.join(b'%d\n' % i for i in range(100_000))
    async with LineReader(io.BytesIO(data), block=1000, queued=2) as reader:
        lines: list[bytes] = []
        while (got := await reader.read()) is not None:
            lines.extend(got)
    assert lines == [b'%d' % i for i in range(100_000)]

async def test_lines_reader_closed_while_waiting() -> None:
    """Leaving the reader while its thread waits on a full queue ends the thread."""
    async with LineReader(io.BytesIO(b'x\n' * 10_000), block=10, queued=1) as reader:
        assert await reader.read() == [b'x'] * 5
        thread = reader._thread
    await asyncio.to_thread(thread.join, 5)
    assert not thread.is_alive()
