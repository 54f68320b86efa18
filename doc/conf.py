"""Sphinx configuration of the rbfly documentation."""

import sys
import tomllib
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # document this tree's rbfly (built in place)

def unbuilt_extensions(root: Path = ROOT) -> list[str]:
    """
    The Cython extensions (``MODULES`` of setup.py) that this tree's
    rbfly cannot import compiled: autodoc imports the tree, and each
    module importing one of them would be a warning of its own (165 in a
    fresh clone).
    """
    import ast
    import importlib
    import importlib.machinery

    tree = ast.parse((root / 'setup.py').read_text())
    modules: list[str] = next(
        ast.literal_eval(node.value) for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == 'MODULES' for t in node.targets)
    )
    missing = []
    for name in modules:
        try:
            origin = getattr(importlib.import_module(name), '__file__', None) or ''
        except ImportError:
            origin = ''
        if not (origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
                and Path(origin).resolve().is_relative_to(root)):
            missing.append(name)
    return missing

if _missing := unbuilt_extensions():
    from sphinx.errors import ConfigError
    raise ConfigError(
        'the Cython extensions of {} are not built ({}{}): run scripts/setup.sh doc, or'
        ' build the docs with scripts/docs.sh, which does'.format(
            ROOT, ', '.join(_missing[:3]), ', ...' if len(_missing) > 3 else ''),
    )

_meta = tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']
project = _meta['name']
author = _meta['authors'][0]['name']
release = _meta['version']
version = '.'.join(release.split('.')[:2])
copyright = '2026, {} (MIT licence)'.format(author)

extensions = ['sphinx.ext.autodoc', 'sphinx.ext.intersphinx']
autodoc_member_order = 'bysource'
autodoc_typehints = 'description'
autodoc_typehints_format = 'short'
autodoc_preserve_defaults = True
# the message types are unions of a dozen types; they read better by name
autodoc_type_aliases = {
    name: 'rbfly.types.' + name for name in (
        'AMQPBody', 'AMQPScalar', 'AMQPAnnotations', 'AMQPAppProperties', 'AMQPMessageId',
        'AMQPSequence', 'AMQPMap',
    )
}
# Furo: responsive (a column that grows with the window, code blocks that
# scroll rather than overflow, a light and a dark scheme); pinned in the
# `doc` extra and in scripts/docs.sh
html_theme = 'furo'
html_static_path = ['_static']
html_css_files = ['rbfly.css']
html_title = 'rbfly {}'.format(release)
exclude_patterns = ['_build']
nitpicky = True
# Internal names that the signatures of the public API mention; the
# reference leaves them out on purpose (see doc/architecture.rst)
nitpick_ignore = [
    ('py:class', name) for name in (
        'PublisherTrait', 'rbfly.streams.publishers.base.PublisherTrait', 'PublisherHost',
        'Counters', 'ConnectionInfo', 'StreamsProtocol', 'ConnectionManager', 'Meter',
        'Tracer', 'Span', 'TracerProvider', 'MeterProvider',  # OpenTelemetry's (optional)
        'CarrierPlace',  # rbfly.streams.semconv's literal of the places, spelt out in the text
        'rbfly.streams.decorator.F', 'rbfly.streams.client.T',
        'rbfly.streams.protocol._publish.PublishEncoder',
        'PublisherOptions', 'rbfly.streams.subscriptions.flow.Releasable', 'Activation', 'Resume',
        'OffsetTracker', 'Source', 'Handler', 'Key', 'DeadLetters',  # a read's parts
        'rbfly.streams.worker.T', 'signal.Signals', 'rbfly.streams.publishers.serializing.T',

        'LoopThread', 'Held', 'rbfly.streams.blocking.subscription.T',  # the blocking facade's
    )
] + [
    ('py:func', 'rbfly.streams.aio.records.attach'),
    ('py:mod', 'rbfly.streams.protocol.request_codec'),
    ('py:mod', 'rbfly.streams.protocol.response_codec'),
    ('py:mod', 'rbfly.streams.publishers._pipeline'),
    ('py:mod', 'rbfly.streams.parts.placement'),
    ('py:mod', 'rbfly.streams.subscriptions.credit'),
]
# the values of typing.Literal parameters ('post', 'basic')
nitpick_ignore_regex = [('py:class', r"'[a-z_]+'")]

# Intersphinx without the network: the Python names the reference links to,
# written as a small inventory (objects.inv format, version 2) when Sphinx
# starts; the links point to the Python documentation online.
PYTHON_DOCS = 'https://docs.python.org/3/'
PYTHON_NAMES = {
    'py:class': {
        'library/asyncio-eventloop.html#asyncio.AbstractEventLoop': ['asyncio.AbstractEventLoop'],
        'library/asyncio-task.html#asyncio.Task': ['asyncio.Task', '_asyncio.Task'],
        'library/asyncio-eventloop.html#asyncio.Server': [
            'asyncio.Server', 'asyncio.base_events.Server',
        ],
        'library/collections.abc.html#$': [
            'collections.abc.AsyncGenerator', 'collections.abc.AsyncIterator',
            'collections.abc.Awaitable', 'collections.abc.Callable',
            'collections.abc.Iterable', 'collections.abc.Iterator', 'collections.abc.Mapping',
            'collections.abc.Sequence',
        ],
        'library/contextlib.html#$': ['contextlib.AbstractAsyncContextManager'],
        'library/concurrent.futures.html#concurrent.futures.Future': [
            'concurrent.futures.Future', 'concurrent.futures._base.Future',
        ],
        'library/types.html#$': ['types.TracebackType'],
        'library/datetime.html#$': ['datetime.datetime', 'datetime.timedelta'],
        'library/ssl.html#ssl.SSLContext': ['ssl.SSLContext', '_ssl.SSLContext'],
        'library/uuid.html#uuid.UUID': ['uuid.UUID'],
        'library/functions.html#$': [
            'bool', 'bytearray', 'bytes', 'dict', 'float', 'int', 'list', 'memoryview',
            'object', 'set', 'str', 'tuple', 'type',
        ],
        'library/constants.html#None': ['None'],
        'library/typing.html#typing.$': [
            'typing.Any', 'typing.Awaitable', 'typing.Callable', 'typing.Iterable',
            'typing.Literal', 'typing.Mapping', 'typing.Self', 'typing.Sequence',
        ],
        'library/logging.html#logging.Logger': ['logging.Logger'],
    },
    'py:exception': {
        'library/exceptions.html#$': [
            'Exception', 'TimeoutError', 'ValueError', 'TypeError', 'ConnectionError',
            'OSError', 'KeyError', 'RuntimeError',
        ],
        'library/asyncio-exceptions.html#$': ['asyncio.CancelledError'],
    },
    'py:function': {
        'library/asyncio-task.html#$': [
            'asyncio.create_task', 'asyncio.wait_for', 'asyncio.run',
        ],
        'library/functions.html#$': ['len', 'hash'],
        'library/logging.html#$': ['logging.getLogger', 'logging.basicConfig'],
        'library/json.html#$': ['json.dumps'],
    },
    'py:module': {
        'library/$.html#module-$': [
            'asyncio', 'logging', 'ssl', 'uuid', 'datetime', 'atexit', 'json',
        ],
    },
}

def _python_inventory() -> str:
    """Write the inventory of PYTHON_NAMES; return its path."""
    lines = []
    for role, pages in PYTHON_NAMES.items():
        for uri, names in pages.items():
            for name in names:
                # '$' in a uri stands for the name (as in a real inventory)
                target = uri.replace('$', name)
                lines.append('{} {} 1 {} -\n'.format(name, role, target))
                if name.startswith('typing.'):  # `import typing as tp` in rbfly
                    lines.append('tp.{} {} 1 {} -\n'.format(name[7:], role, target))
    path = ROOT / 'doc' / '_build' / 'python-objects.inv'
    path.parent.mkdir(parents=True, exist_ok=True)
    head = (
        '# Sphinx inventory version 2\n# Project: Python\n# Version: 3\n'
        '# The remainder of this file is compressed using zlib.\n'
    )
    path.write_bytes(head.encode() + zlib.compress(''.join(lines).encode()))
    return str(path)

intersphinx_mapping = {'python': (PYTHON_DOCS, _python_inventory())}

# Sphinx writes an alias of autodoc_type_aliases that stands in a union
# (``AMQPBody | MessageCtx``) by its repr, "TypeAliasForwardRef('...')";
# its name alone is what a reader (and the cross-reference) needs.
from sphinx.util import inspect as _sphinx_inspect  # noqa: E402

_sphinx_inspect.TypeAliasForwardRef.__repr__ = lambda self: self.name  # type: ignore[method-assign]
