"""
The listings of what the broker holds: ``stream list``, ``super-stream
list``, ``group list``, ``publisher list``. They read the management
plugin's HTTP API (:py:mod:`rbfly.streams.admin`), not the stream port:
the stream protocol has no such commands.

Each command is a coroutine of an :py:class:`~rbfly.streams.admin.Admin`
and the parsed arguments that returns the exit status, as those of
:py:mod:`rbfly.cli.commands` are of a client.
"""

from __future__ import annotations

import argparse
import dataclasses as dtc
import ssl
import typing as tp
from collections.abc import Awaitable, Callable

from ..streams.admin import Admin, ConsumerSummary
from .output import print_table

AdminCommand: tp.TypeAlias = Callable[[Admin, argparse.Namespace], Awaitable[int]]

def port(text: str) -> int:
    """``--management-port`` (and ``RBFLY_MANAGEMENT_PORT``): a TCP port."""
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError('management port {!r}: give a port number, 1 to 65535'.format(text))
    return int(text)

def admin(args: argparse.Namespace, context: ssl.SSLContext | None) -> Admin:
    """The management API of the broker of ``--url``."""
    return Admin.from_uri(
        args.url, port=args.management_port, scheme=args.management_scheme, ssl=context,
        timeout=args.connect_timeout,
    )

def _nodes(nodes: tp.Iterable[str]) -> str:
    return ' '.join(nodes)

async def stream_list(api: Admin, args: argparse.Namespace) -> int:
    streams = await api.streams()
    if args.format == 'json':
        print_table([dtc.asdict(s) for s in streams], 'json')
        return 0
    print_table([{
        'stream': s.name, 'messages': s.messages, 'segments': s.segments,
        'leader': s.leader, 'replicas': _nodes(s.replicas) or None,
    } for s in streams], 'text')
    return 0

async def super_stream_list(api: Admin, args: argparse.Namespace) -> int:
    supers = await api.super_streams()
    if args.format == 'json':
        print_table([dtc.asdict(s) for s in supers], 'json')
        return 0
    print_table([
        {'super stream': s.name, 'partitions': _nodes(s.partitions)} for s in supers
    ], 'text')
    return 0

async def group_list(api: Admin, args: argparse.Namespace) -> int:
    groups = await api.groups(args.stream, super_stream=args.super_stream)
    if args.format == 'json':
        print_table([{**dtc.asdict(g), 'active': [
            dtc.asdict(m) for m in g.active]} for g in groups], 'json')
        return 0
    print_table([
        {'stream': g.stream, 'group': g.name, **_member(m), 'stored': g.stored}
        for g in groups for m in (g.members or (None,))
    ], 'text')
    return 0

def _member(m: ConsumerSummary | None) -> dict[str, object]:
    """The columns of a group's member (``-`` for a group with none running)."""
    if m is None:
        return dict.fromkeys(('active', 'status', 'client', 'connection', 'id', 'offset', 'lag'))
    return {
        'active': 'yes' if m.active else 'no', 'status': m.status, 'client': m.client,
        'connection': m.connection, 'id': m.subscription_id, 'offset': m.offset,
        'lag': m.offset_lag,
    }

async def publisher_list(api: Admin, args: argparse.Namespace) -> int:
    publishers = await api.publishers(args.stream)
    if args.format == 'json':
        print_table([dtc.asdict(p) for p in publishers], 'json')
        return 0
    print_table([{
        'stream': p.stream, 'name': p.reference, 'client': p.client, 'connection': p.connection,
        'id': p.publisher_id, 'published': p.published, 'confirmed': p.confirmed,
        'errored': p.errored, 'sequence': p.sequence,
    } for p in publishers], 'text')
    return 0

__all__ = [
    'AdminCommand', 'admin', 'group_list', 'port', 'publisher_list', 'stream_list',
    'super_stream_list',
]
