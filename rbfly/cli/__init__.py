"""
``rbfly``: RabbitMQ Streams from the shell (``python -m rbfly``).

For people and shell scripts: create, inspect and delete streams and super
streams, see and reset consumer groups, publish lines of text or JSON,
print a stream's messages, check throughput. The broker comes from
``--url`` or ``RBFLY_URL``. Exit status 0 on success; on failure one line
on stderr naming the cause and status 1 (2 for a command line argparse
refuses, 130 on Ctrl-C); ``--debug`` shows the traceback too. See ``doc/cli.rst``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import ssl
import sys
import typing as tp
from collections.abc import Awaitable, Callable, Sequence

from ..error import RbFlyError
from ..streams import ConnectionLost, StreamsClient, streams_client
from ..streams.admin import DEFAULT_PORT as DEFAULT_MANAGEMENT_PORT
from ..streams.httpd import listen_address
from . import admin, commands, health, parse, serve

DEFAULT_URL = 'rabbitmq-stream://guest:guest@localhost:5552/'

Command: tp.TypeAlias = Callable[[StreamsClient, argparse.Namespace], Awaitable[int]]

def _arg(kind: Callable[[str], tp.Any]) -> Callable[[str], tp.Any]:
    """An argparse type whose ValueError message is shown as it is."""
    def convert(text: str) -> tp.Any:
        try:
            return kind(text)
        except ValueError as ex:
            raise argparse.ArgumentTypeError(str(ex)) from None
    convert.__name__ = kind.__name__
    return convert

def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ValueError('{!r}: give a whole number, at least 1'.format(text))
    return int(text)

def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1
    if not 0 < value < 3600:
        raise ValueError('{!r}: give seconds, more than 0 and less than 3600'.format(text))
    return value

def _linger(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 60:
        raise ValueError('{!r}: give seconds, from 0 to 60'.format(text))
    return value

def _filter_size(text: str) -> int:
    if not text.isdigit() or not 16 <= int(text) <= 255:
        raise ValueError('{!r}: give bytes, from 16 to 255'.format(text))
    return int(text)

def version() -> str:
    """The package's version, Python's, and whether the Cython extensions are built."""
    import importlib.machinery
    import importlib.util
    import platform

    import rbfly
    spec = importlib.util.find_spec('rbfly.amqp._message')
    origin = spec.origin if spec is not None else None
    built = bool(origin and origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)))
    return 'rbfly {} (Python {} {}; Cython extensions: {})'.format(
        rbfly.__version__, platform.python_version(), platform.python_implementation(),
        'compiled' if built else 'not built',
    )

class _Version(argparse.Action):
    """``--version``: the version is looked up when asked (importlib.metadata is slow)."""
    def __init__(self, option_strings: Sequence[str], dest: str, **kw: tp.Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser: argparse.ArgumentParser, *args: tp.Any) -> None:
        print(version())
        parser.exit()

def _global_options(p: argparse.ArgumentParser, top: bool) -> None:
    """
    The options of every command: on the top parser with their defaults;
    on each command's parser with none (``SUPPRESS``), so that one given
    after the command (``rbfly tail s --url ...``) replaces the top's and
    one not given leaves it.
    """
    def default(value: object) -> object:
        return value if top else argparse.SUPPRESS

    g = p.add_argument_group('connection options (before or after the command)')
    g.add_argument('--url', default=default(os.environ.get('RBFLY_URL', DEFAULT_URL)),
                   help='broker URI (default: $RBFLY_URL, else {})'.format(DEFAULT_URL))
    g.add_argument('--tls-ca', default=default(None),
                   help='CA certificates (PEM) for rabbitmq-stream+tls://')
    g.add_argument('--tls-cert', default=default(None), help='client certificate (PEM)')
    g.add_argument('--tls-key', default=default(None), help='client certificate key (PEM)')
    g.add_argument('--connect-timeout', type=_arg(_seconds), default=default(30.0),
                   metavar='SECONDS', help='seconds to wait for the broker (30)')
    g.add_argument('--debug', action='store_true', default=default(False),
                   help='log, and show tracebacks')

def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = argparse.ArgumentParser(
        prog='rbfly', description='RabbitMQ Streams from the shell.',
    )
    p.add_argument('--version', action=_Version,
                   help='print the version of rbfly, of Python and whether the Cython'
                        ' extensions are built, and exit')
    _global_options(p, top=True)
    common = argparse.ArgumentParser(add_help=False)
    _global_options(common, top=False)
    sub = p.add_subparsers(dest='group', required=True, metavar='COMMAND',
                           parser_class=_subparser(common))
    _streams(sub)
    _groups(sub)
    _publishers(sub)
    _messages(sub)
    c = _command(sub, 'health', health.health,
                 'whether the broker answers (and each --stream has a leader): exit status 0'
                 ' when it does, 1 when not, for a container\'s probe')
    c.add_argument('--stream', action='append', metavar='STREAM',
                   help='a stream that must exist and have a leader (again for more)')
    c.add_argument('--format', choices=('text', 'json'), default='text')
    return p

def _subparser(common: argparse.ArgumentParser) -> type[argparse.ArgumentParser]:
    """A command's parser class, taking the options of every command (``common``)."""
    class Parser(argparse.ArgumentParser):
        def __init__(self, **kw: tp.Any) -> None:
            super().__init__(**{**kw, 'parents': [*kw.get('parents', ()), common]})
    return Parser

def _command(parent: tp.Any, name: str, run: Command, text: str) -> argparse.ArgumentParser:
    c: argparse.ArgumentParser = parent.add_parser(name, help=text, description=text)
    c.set_defaults(run=run)
    return c

def _listing(parent: tp.Any, run: admin.AdminCommand, text: str) -> argparse.ArgumentParser:
    """A ``list`` command: it reads the management plugin's HTTP API, not the stream port."""
    c: argparse.ArgumentParser = parent.add_parser('list', help=text, description=text + (
        '; read from the management plugin\'s HTTP API on the --url host (its user, password,'
        ' virtual host), https for rabbitmq-stream+tls://'))
    c.set_defaults(admin_run=run)
    g = c.add_argument_group('management API options')
    g.add_argument('--management-port', type=_arg(admin.port),
                   default=os.environ.get('RBFLY_MANAGEMENT_PORT', str(DEFAULT_MANAGEMENT_PORT)),
                   metavar='PORT', help='the management plugin\'s port (default:'
                   ' $RBFLY_MANAGEMENT_PORT, else {})'.format(DEFAULT_MANAGEMENT_PORT))
    g.add_argument('--management-scheme', choices=('http', 'https'),
                   help='default: https for rabbitmq-stream+tls://, else http')
    c.add_argument('--format', choices=('text', 'json'), default='text')
    return c

def _streams(sub: tp.Any) -> None:
    """The stream and super-stream commands."""
    command = _command
    stream = sub.add_parser('stream', aliases=['streams'],
                            help='create, delete, inspect, list streams')
    ss = stream.add_subparsers(dest='action', required=True, metavar='ACTION')
    c = command(ss, 'create', commands.stream_create,
                'create a stream (nothing if it exists with the same arguments)')
    c.add_argument('name')
    c.add_argument('--exist-ok', action='store_true',
                   help='accept a stream that exists with other arguments, as it is')
    c.add_argument('--max-age', type=_arg(parse.duration), help='retention: 30s, 15m, 1h, 7d')
    c.add_argument('--max-length-bytes', type=_arg(parse.size), help='retention: 10GB, 1GiB')
    c.add_argument('--max-segment-size-bytes', type=_arg(parse.size), help='e.g. 500MB')
    c.add_argument('--replicas', type=_arg(_positive), help='members of the stream (a cluster)')
    c.add_argument('--filter-size', type=_arg(_filter_size),
                   help='Bloom filter bytes per chunk (16..255; RabbitMQ 3.13+)')
    c = command(ss, 'delete', commands.stream_delete, 'delete a stream')
    c.add_argument('name')
    c = command(ss, 'info', commands.stream_info, 'leader, replicas, offsets of a stream')
    c.add_argument('name')
    c.add_argument('--format', choices=('text', 'json'), default='text')
    _listing(ss, admin.stream_list, 'the streams of the virtual host: messages, segments, leader'
             ' and replicas')

    sup = sub.add_parser('super-stream', aliases=['super-streams'],
                         help='create, delete, inspect, list super streams')
    sa = sup.add_subparsers(dest='action', required=True, metavar='ACTION')
    c = command(sa, 'create', commands.super_stream_create,
                'create a super stream (RabbitMQ 3.13+); prints its partitions')
    c.add_argument('name')
    how = c.add_mutually_exclusive_group(required=True)
    how.add_argument('--partitions', type=_arg(_positive), help='number of partitions')
    how.add_argument('--keys', help='binding keys, comma-separated: a partition each')
    c = command(sa, 'delete', commands.super_stream_delete, 'delete a super stream')
    c.add_argument('name')
    c = command(sa, 'info', commands.super_stream_info, 'partitions of a super stream')
    c.add_argument('name')
    c.add_argument('--format', choices=('text', 'json'), default='text')
    _listing(sa, admin.super_stream_list, 'the super streams of the virtual host and their'
             ' partitions')

def _groups(sub: tp.Any) -> None:
    """The consumer group commands."""
    command = _command
    group = sub.add_parser('group', aliases=['groups'],
                           help='status, reset, members of consumer groups')
    ga = group.add_subparsers(dest='action', required=True, metavar='ACTION')
    c = command(ga, 'status', commands.group_status,
                'offset stored under a group name, end and lag of each stream or partition')
    _group_target(c, ('text', 'json', 'openmetrics'))
    c = command(ga, 'serve', serve.group_serve,
                'serve the lag of a group over HTTP until stopped: /metrics (OpenMetrics,'
                ' for Prometheus) and /lag.json (for KEDA\'s metrics-api scaler)')
    _group_target(c, ())
    c.add_argument('--listen', type=_arg(listen_address), default=listen_address(':9585'),
                   metavar='HOST:PORT', help='where to listen (:9585, every interface;'
                   ' port 0: any free port, printed on stderr)')
    c.add_argument('--interval', type=_arg(_seconds), default=15.0, metavar='SECONDS',
                   help='seconds between two readings of the lag (%(default)s)')
    c = command(ga, 'reset', commands.group_reset,
                'store where a group resumes on each stream or partition'
                ' (stop its consumers first)')
    _group_target(c)
    c.add_argument('--to', required=True, type=_arg(parse.offset),
                   help='first, last (the end), next (the same), an offset or an ISO 8601 time')
    how = c.add_mutually_exclusive_group()
    how.add_argument('--force', action='store_true',
                     help='store (without it: print what would be stored, store nothing)')
    how.add_argument('--dry-run', action='store_true',
                     help='print what would be stored, store nothing (the default, said:'
                          ' as kafka-consumer-groups --reset-offsets --dry-run)')
    c.add_argument('--watch', type=_arg(_seconds), default=1.0,
                   help='without --force: seconds to watch the offsets stored under NAME'
                        ' for a running consumer (%(default)s)')
    c = _listing(ga, admin.group_list, 'the consumer groups (consumers sharing a name) of each'
                 ' stream: each member, which one is active, the offset stored under the name')
    where = c.add_mutually_exclusive_group()
    where.add_argument('--stream', help='on this stream only')
    where.add_argument('--super-stream', help='on the partitions of this super stream only')

def _publishers(sub: tp.Any) -> None:
    """The publisher commands."""
    publisher = sub.add_parser('publisher', aliases=['publishers'], help='list publishers')
    pa = publisher.add_subparsers(dest='action', required=True, metavar='ACTION')
    c = _listing(pa, admin.publisher_list, 'the publishers of the virtual host: their counts'
                 ' and the last publishing id stored for each name')
    c.add_argument('--stream', help='of this stream only')

def _group_target(
        c: argparse.ArgumentParser, formats: tuple[str, ...] = ('text', 'json'),
) -> None:
    c.add_argument('name', metavar='NAME', help='the group: its consumers\' name')
    where = c.add_mutually_exclusive_group(required=True)
    where.add_argument('--stream', help='a stream')
    where.add_argument('--super-stream', help='each partition of a super stream')
    if formats:
        c.add_argument('--format', choices=formats, default='text')

def _messages(sub: tp.Any) -> None:
    """The publish, tail and bench commands."""
    command = _command
    c = command(sub, 'publish', commands.publish,
                'publish the lines of stdin (or --file), one message each')
    c.add_argument('name_', metavar='STREAM')
    c.add_argument('--file', help='read this file instead of stdin')
    kind = c.add_mutually_exclusive_group()
    kind.add_argument('--binary', action='store_true', help='raw bytes, no AMQP encoding')
    kind.add_argument('--json', action='store_true',
                      help='each line a JSON value, the body: written as JSON, content type'
                           ' application/json (read by JSONSerializer), unless --serializer')
    c.add_argument('--amqp', action='store_true',
                   help='with --json: {"body": ..., "properties": {...},'
                        ' "application_properties": {...}}')
    c.add_argument('--serializer', choices=SERIALIZERS,
                   help='how the body is written: json (the default with --json) or msgpack,'
                        ' serialized with its content type (read by JSONSerializer,'
                        ' MsgpackSerializer); amqp, in AMQP types (a map, a list) without'
                        ' a content type (read without a serializer)')
    c.add_argument('--content-type', metavar='TYPE',
                   help='the content type of every message: with --serializer or --json'
                        ' instead of the serializer\'s; else each line\'s bytes are the'
                        ' body, as they are (e.g. text/csv)')
    c.add_argument('--batch', type=_arg(_positive), default=1000,
                   help='messages per confirmed batch at most (%(default)s)')
    c.add_argument('--linger', type=_arg(_linger), default=0.1, metavar='SECONDS',
                   help='send the lines read within this time of the first one of a batch'
                        ' (%(default)s): tail -f | rbfly publish publishes each line at once')
    route = c.add_mutually_exclusive_group()
    route.add_argument('--key', help='super stream: the routing key of every line')
    route.add_argument('--key-field', metavar='FIELD',
                       help='super stream, with --json: the routing key is the value of FIELD'
                            ' (an application property, else a field of the body)')
    c.add_argument('--routing', choices=('hash', 'key'), default='hash',
                   help='super stream: hash of the key (as the other clients), or the'
                        ' bindings of the key (%(default)s)')
    c.add_argument('--name', help='publisher name, for deduplication')
    c.add_argument('--filter-value', help='filter value of every message (RabbitMQ 3.13+)')

    c = command(sub, 'tail', commands.tail, 'print the messages of a stream, one a line')
    c.add_argument('name')
    c.add_argument('--offset', type=_arg(parse.offset),
                   help='first, last, next, an offset or an ISO 8601 time (first; with -n:'
                        ' COUNT messages before the end)')
    c.add_argument('-n', '--count', type=_arg(_positive),
                   help='the last COUNT messages (with --offset: at most COUNT from there)')
    c.add_argument('--follow', action='store_true',
                   help='wait for new messages (else stop at the end as of now)')
    c.add_argument('--format', choices=('text', 'json'), default='text')
    c.add_argument('--binary', action='store_true', help='bodies are raw bytes, not AMQP')
    c.add_argument('--on-decode-error', choices=('raise', 'skip', 'raw'), default='raise',
                   help='a message that is not AMQP 1.0 (published as raw bytes): end with'
                        ' the error, skip it, or print its raw bytes (%(default)s)')
    c.add_argument('--filter', help='only messages published with this --filter-value')
    c.add_argument('--no-decode', action='store_true',
                   help='print bodies as they are (else a body of content type'
                        ' application/json, or application/msgpack with the msgpack'
                        ' package, is printed decoded)')

    c = command(sub, 'bench', commands.bench,
                'a quick throughput check: publish times publishing COUNT messages;'
                ' consume publishes them first (not timed), then times reading them')
    c.add_argument('what', choices=('publish', 'consume'))
    c.add_argument('--count', type=_arg(_positive), default=100_000)
    c.add_argument('--size', type=_arg(_positive), default=10, help='message bytes (10)')
    c.add_argument('--stream', help='stream to use (default: a new one, deleted after)')

SERIALIZERS = ('json', 'msgpack', 'amqp')
"""The bodies ``publish --serializer`` makes."""

def _publish_refused(args: argparse.Namespace) -> str | None:
    """Why the options of ``publish`` do not go together (``None``: they do)."""
    if getattr(args, 'run', None) is not commands.publish:
        return None
    if args.binary and (args.serializer or args.content_type):
        return '--binary publishes bytes without AMQP properties: no --serializer,' \
            ' no --content-type'
    if args.serializer == 'amqp' and args.content_type:
        return '--serializer amqp publishes AMQP values, which name no content type:' \
            ' no --content-type'
    return None

def _ssl(args: argparse.Namespace) -> ssl.SSLContext | None:
    if not (args.tls_ca or args.tls_cert):
        return None
    ctx = ssl.create_default_context(cafile=args.tls_ca)
    if args.tls_cert:
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
    return ctx

async def _run(args: argparse.Namespace) -> int:
    if (listing := getattr(args, 'admin_run', None)) is not None:
        async with admin.admin(args, _ssl(args)) as api:
            return tp.cast(int, await listing(api, args))
    client = streams_client(args.url, ssl=_ssl(args), connect_timeout=args.connect_timeout)
    async with client:
        run: Command = args.run
        return await run(client, args)

def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = parser().parse_args(argv)
    if getattr(args, 'offset', None) == 'first':
        args.offset = parse.offset('first')
    if getattr(args, 'amqp', False) and not args.json:
        print('rbfly: error: --amqp goes with --json', file=sys.stderr)
        return 2
    if getattr(args, 'key_field', None) is not None and not args.json:
        print('rbfly: error: --key-field goes with --json', file=sys.stderr)
        return 2
    if (refused := _publish_refused(args)) is not None:
        print('rbfly: error: {}'.format(refused), file=sys.stderr)
        return 2
    if args.debug:
        logging.basicConfig(level=logging.INFO)
    try:
        return asyncio.run(_run(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. | head: the reader is gone
        sys.stderr.close()
        return 0
    except (RbFlyError, OSError, ValueError, TimeoutError) as ex:
        if args.debug:
            raise
        text = str(ex) or type(ex).__name__
        if isinstance(ex, ConnectionLost) and 'timed out' in text:
            text += ' (a slow network? give --connect-timeout SECONDS)'
        print('rbfly: error: {}'.format(text), file=sys.stderr)
        return 1

__all__ = ['DEFAULT_URL', 'main', 'parser', 'version']
