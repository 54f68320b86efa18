"""What the command line takes: durations, sizes, offsets; and its refusals."""

import datetime as dt

import pytest

from rbfly.cli import main, parse
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
