"""
The code blocks of ``README.rst`` and ``doc/quickstart.rst``, run exactly
as written, in the order a reader meets them, against RabbitMQ 3.10 (the
broker ``doc/broker.rst`` installs) and 4.3; the complete programs of the
guide (``doc/usage.rst``) on RabbitMQ 4.3.

- A ``python`` block is a program: it runs as a file of its own, in a
  subprocess of this Python, with this checkout's rbfly first on its path,
  and exits 0. The one change made to it is the broker's URL: the docs'
  ``rabbitmq-stream://guest:guest@localhost:5552/`` becomes the URL of the
  broker under test (the same string, for RabbitMQ 3.10).
- A ``console`` block is shell commands, each after ``$``, run by bash
  with ``RBFLY_URL`` set to the broker under test and ``rbfly`` on the
  ``PATH`` (this checkout's); each exits 0, and prints what the block
  shows after it (``...`` matches anything), or nothing when it shows
  nothing.
- A block after a comment ``.. doc-test: skip, <why>`` is not run: the
  few that set up a machine, install rbfly, or run until Ctrl-C. The
  reason is part of the comment, so a reader of the source sees it.

A reader runs the docs on a fresh broker; so that this check can run again
and again, it deletes the streams the blocks create (found in them:
``create_stream('...')``, ``rbfly stream create ...``) before it runs them.

The checks without a broker (``test_..._static``) keep the blocks honest
too: every block of every page says its language (a literal block
``::`` must be Python, which shell commands are not, so that Sphinx does
not highlight a shell line as Python).
"""

import ast
import asyncio
import doctest
import os
import re
import subprocess
import sys
import typing as tp
from dataclasses import dataclass, replace
from pathlib import Path

import docutils.core
import docutils.nodes
import docutils.parsers.rst.roles
import docutils.utils
import pytest

from rbfly.streams import streams_client
from rbfly.streams.error import StreamDoesNotExist

from .conftest import MANAGEMENT_PORTS

ROOT = Path(__file__).resolve().parents[2]
DOC_URL = 'rabbitmq-stream://guest:guest@localhost:5552/'
PAGES = (ROOT / 'README.rst', ROOT / 'doc' / 'quickstart.rst')
"""The pages a newcomer runs, in the order they are read."""
TIMEOUT = 60  # seconds for one block; each takes about 1 s
SKIP = re.compile(r'doc-test:\s*skip\b,?\s*(?P<why>.*)', re.S)

@dataclass(frozen=True)
class Block:
    """A code block of a page."""
    page: str
    line: int
    language: str
    text: str
    skip: str | None  # why it is not run

    def __str__(self) -> str:
        return '{}:{} ({})'.format(self.page, self.line, self.language)

def _sphinx_role(
        name: str, rawtext: str, text: str, lineno: int, inliner: tp.Any,
        options: tp.Any = None, content: tp.Any = None,
) -> tuple[list[docutils.nodes.Node], list[docutils.nodes.system_message]]:
    """Sphinx's roles (``:doc:``, ``:py:func:``, ...) as plain text."""
    return [docutils.nodes.literal(rawtext, text)], []

for _role in ('doc', 'ref', 'py:func', 'py:class', 'py:meth', 'py:mod', 'py:exc',
              'py:attr', 'py:data', 'py:obj', 'func', 'class', 'meth', 'mod', 'exc'):
    docutils.parsers.rst.roles.register_local_role(_role, _sphinx_role)

def blocks(path: Path) -> list[Block]:
    """The literal and code blocks of an rst page, in order."""
    doctree = docutils.core.publish_doctree(
        path.read_text(), source_path=str(path),
        settings_overrides={
            'report_level': 5, 'halt_level': 5, 'file_insertion_enabled': False,
            'syntax_highlight': 'none',
        },
    )
    found = []
    skip = None
    for node in doctree.findall(
            lambda n: isinstance(n, docutils.nodes.comment | docutils.nodes.literal_block)):
        if isinstance(node, docutils.nodes.comment):
            if m := SKIP.match(node.astext().strip()):
                skip = ' '.join(m.group('why').split()) or 'no reason given'
            continue
        if isinstance(node.parent, docutils.nodes.system_message):
            continue  # a Sphinx directive docutils does not know, quoted
        classes = [c for c in node['classes'] if c != 'code']
        language = classes[0] if classes else 'python'  # Sphinx's default
        found.append(Block(
            str(path.relative_to(ROOT)), node.line or 0, language, node.astext(), skip,
        ))
        skip = None
    return found

def _commands(block: Block) -> list[tuple[str, list[str]]]:
    """The commands of a console block, each with the lines it prints."""
    commands: list[tuple[str, list[str]]] = []
    lines = iter(block.text.splitlines())
    for line in lines:
        if line.startswith(('$ ', '# ')):
            command = line[2:]
            while command.endswith('\\'):  # continued on the next line
                command = command[:-1] + next(lines).strip()
            commands.append((command, []))
        elif commands:
            commands[-1][1].append(line)
        else:
            raise AssertionError('{}: {!r} comes before any command'.format(block, line))
    return commands

def _env(url: str, bin_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(ROOT), env.get('PYTHONPATH')]))
    env['PATH'] = os.pathsep.join([str(bin_dir), env['PATH']])
    env['RBFLY_URL'] = url
    return env

def _rbfly_command(bin_dir: Path) -> None:
    """``rbfly`` as a user runs it: this checkout's, in this Python."""
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / 'rbfly'
    script.write_text('#!/bin/sh\nexec {} -m rbfly "$@"\n'.format(sys.executable))
    script.chmod(0o755)

def _streams_created(runnable: list[Block]) -> set[str]:
    names = set()
    for block in runnable:
        names.update(re.findall(r"create_stream\('([^']+)'", block.text))
        names.update(re.findall(r'rbfly stream create (\S+)', block.text))
    return names

def _super_streams_created(runnable: list[Block]) -> set[str]:
    names = set()
    for block in runnable:
        names.update(re.findall(r"create_super_stream\('([^']+)'", block.text))
        names.update(re.findall(r'rbfly super-stream create (\S+)', block.text))
    return names

async def _delete(url: str, streams: set[str], super_streams: tp.Iterable[str] = ()) -> None:
    async with streams_client(url) as client:
        for name in sorted(super_streams):
            await client.delete_super_stream(name, missing_ok=True)
        for name in sorted(streams):
            try:
                await client.delete_stream(name)
            except StreamDoesNotExist:
                pass

def _run_python(block: Block, url: str, env: dict[str, str], tmp: Path) -> None:
    source = tmp / 'block_{}.py'.format(block.line)
    source.write_text(block.text.replace(DOC_URL, url))
    done = subprocess.run(
        [sys.executable, str(source)], env=env, cwd=tmp, capture_output=True, text=True,
        timeout=TIMEOUT, check=False,
    )
    assert done.returncode == 0, '{}: exit status {}\n{}{}'.format(
        block, done.returncode, done.stdout, done.stderr)

def _run_console(block: Block, env: dict[str, str], tmp: Path) -> None:
    checker = doctest.OutputChecker()
    for command, shown in _commands(block):
        done = subprocess.run(
            ['bash', '-o', 'pipefail', '-c', command], env=env, cwd=tmp,
            capture_output=True, text=True, timeout=TIMEOUT, check=False,
        )
        assert done.returncode == 0, '{}: {}: exit status {}\n{}{}'.format(
            block, command, done.returncode, done.stdout, done.stderr)
        expected = ''.join(line + '\n' for line in shown)
        assert checker.check_output(expected, done.stdout, doctest.ELLIPSIS), \
            '{}: {} printed\n{}instead of\n{}'.format(block, command, done.stdout, expected)

def _run_pages(url: str, tmp: Path) -> None:
    runnable = [b for page in PAGES for b in blocks(page) if b.skip is None]
    assert runnable, 'no block to run'
    asyncio.run(_delete(url, _streams_created(runnable)))
    _rbfly_command(tmp / 'bin')
    env = _env(url, tmp / 'bin')
    for block in runnable:
        if block.language == 'python':
            _run_python(block, url, env, tmp)
        elif block.language == 'console':
            _run_console(block, env, tmp)
        else:
            pytest.fail('{}: cannot run a block of {}'.format(block, block.language))

def test_readme_and_quickstart_310(url: str, tmp_path: Path) -> None:
    """Every block, in order, on the broker the docs install."""
    _run_pages(url, tmp_path)

def test_readme_and_quickstart_43(url43: str, tmp_path: Path) -> None:
    """Every block, in order, on RabbitMQ 4.3."""
    _run_pages(url43, tmp_path)

def test_guide_programs_43(url43: str, tmp_path: Path) -> None:
    """
    The complete programs of the guide (its blocks starting with
    ``import``), in order, on RabbitMQ 4.3: the guide covers features of
    3.11 and 3.13 too. Its other blocks are parts of programs (they use a
    ``client`` they do not make), compiled by ``test_pages_blocks_static``.
    """
    programs = [b for b in blocks(ROOT / 'doc' / 'usage.rst') if _is_program(b)]
    assert len(programs) >= 5, [str(b) for b in programs]
    asyncio.run(_delete(url43, _streams_created(programs), _super_streams_created(programs)))
    env = _env(url43, tmp_path)
    for block in programs:
        _run_python(block, url43, env, tmp_path)

def _is_program(block: Block) -> bool:
    """Whether a block is a complete program: it imports, and connects to the docs' broker."""
    return block.language == 'python' and block.skip is None \
        and block.text.startswith(('import ', 'from ')) and DOC_URL in block.text

def _run_programs(page: Path, url: str, tmp: Path) -> None:
    """The complete programs of a page, in order."""
    programs = [b for b in blocks(page) if _is_program(b)]
    assert programs, 'no program in {}'.format(page)
    asyncio.run(_delete(url, _streams_created(programs)))
    env = _env(url, tmp)
    for block in programs:
        _run_python(block, url, env, tmp)

def test_blocking_page_310(url: str, tmp_path: Path) -> None:
    """
    The program of ``doc/blocking.rst`` ends when it printed the stream
    (it ended with a TimeoutError and its traceback), on the broker the
    docs install.
    """
    _run_programs(ROOT / 'doc' / 'blocking.rst', url, tmp_path)

def test_blocking_page_43(url43: str, tmp_path: Path) -> None:
    """The program of ``doc/blocking.rst`` on RabbitMQ 4.3."""
    _run_programs(ROOT / 'doc' / 'blocking.rst', url43, tmp_path)

def test_operating_page_43(url43: str, tmp_path: Path) -> None:
    """
    The blocks of ``doc/operating.rst``, in order, on RabbitMQ 4.3 (its
    consumer group needs 3.11+), with the broker's management port
    (``RBFLY_MANAGEMENT_PORT``; ``port=15672`` in a program).
    """
    runnable = [b for b in blocks(ROOT / 'doc' / 'operating.rst') if b.skip is None]
    assert {b.language for b in runnable} == {'python', 'console'}, [str(b) for b in runnable]
    asyncio.run(_delete(url43, _streams_created(runnable), _super_streams_created(runnable)))
    _rbfly_command(tmp_path / 'bin')
    env = _env(url43, tmp_path / 'bin')
    port = MANAGEMENT_PORTS[url43]
    env['RBFLY_MANAGEMENT_PORT'] = str(port)
    for block in runnable:
        if block.language == 'python':
            _run_python(replace(
                block, text=block.text.replace('port=15672', 'port={}'.format(port))),
                url43, env, tmp_path)
        else:
            _run_console(block, env, tmp_path)

def test_testing_page_snippet(tmp_path: Path) -> None:
    """
    The unit test of ``doc/testing.rst`` passes as a user's project runs
    it: pytest with pytest-asyncio in its default (strict) mode, not this
    project's ``asyncio_mode = "auto"``.
    """
    block = next(b for b in blocks(ROOT / 'doc' / 'testing.rst') if 'FakeBroker' in b.text)
    (tmp_path / 'test_app.py').write_text(block.text)
    (tmp_path / 'pytest.ini').write_text('[pytest]\n')
    done = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
         '-c', str(tmp_path / 'pytest.ini'), str(tmp_path / 'test_app.py')],
        env=_env(DOC_URL, tmp_path), cwd=tmp_path, capture_output=True, text=True,
        timeout=TIMEOUT, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert '1 passed' in done.stdout

def _all_pages() -> list[Path]:
    return [ROOT / 'README.rst', ROOT / 'examples' / 'README.rst',
            *sorted((ROOT / 'doc').glob('*.rst'))]

def test_pages_blocks_static() -> None:
    """
    Every block of every page states its language unless it is Python:
    a ``::`` block (Sphinx highlights it as Python) compiles as Python;
    a shell command belongs in a ``console`` block. The pages run by
    this module hold only blocks it can run (``python``, ``console``), or
    skip them with a reason.
    """
    wrong = []
    for page in _all_pages():
        for block in blocks(page):
            if block.language == 'python':
                try:
                    compile(block.text, str(block), 'exec', ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
                except SyntaxError as ex:
                    wrong.append('{}: not Python ({}): {}'.format(
                        block, ex.msg, block.text.splitlines()[0]))
            if page in PAGES and block.skip is None \
                    and block.language not in ('python', 'console'):
                wrong.append('{}: cannot be run'.format(block))
    assert not wrong, '\n'.join(wrong)

def _public_names() -> set[str]:
    """The names of rbfly's public modules, which a page's code imports to use."""
    import importlib
    modules = ('rbfly.streams', 'rbfly.amqp', 'rbfly.streams.serializers',
               'rbfly.streams.blocking', 'rbfly.testing', 'rbfly.types')
    return {name for m in modules for name in importlib.import_module(m).__all__}

def _bound(tree: ast.AST) -> set[str]:
    """The names a block binds: imports, assignments, definitions, parameters."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split('.')[0] for a in node.names)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names

def test_pages_names_imported_static() -> None:
    """
    A name of rbfly's API that a page's code uses is imported by that
    block or one before it on the page (``doc/serializers.rst`` used
    ``Codec(...)`` and imported it nowhere): a reader copying the blocks
    in order gets no NameError.
    """
    public = _public_names()
    wrong = []
    for page in _all_pages():
        bound: set[str] = set()
        for block in blocks(page):
            if block.language != 'python':
                continue
            tree = ast.parse(block.text, str(block))
            bound |= _bound(tree)
            used = {n.id for n in ast.walk(tree)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            if missing := sorted((used & public) - bound):
                wrong.append('{}: uses {} without importing it'.format(
                    block, ', '.join(missing)))
    assert not wrong, '\n'.join(wrong)

PROGRAMS_RUN = {
    'README.rst', 'doc/quickstart.rst', 'doc/usage.rst', 'doc/blocking.rst',
    'doc/operating.rst',
}
"""The pages whose complete programs the tests above run."""

PROGRAMS_NOT_RUN = {
    'doc/bodies.rst': 'a consumer that waits for order 9; tests/unit/test_doc_bodies.py'
                      ' type-checks it',
}
"""Pages whose programs are not run, and why."""

def test_pages_programs_run_static() -> None:
    """
    Every page showing a complete program (a block that imports and
    connects to the docs' broker) has it run by a test above, or says why
    not: doc/blocking.rst's ended with a TimeoutError, and no test ran it.
    """
    shown = {block.page for page in _all_pages() for block in blocks(page) if _is_program(block)}
    assert shown == PROGRAMS_RUN | set(PROGRAMS_NOT_RUN)

def test_pages_skips_few() -> None:
    """The blocks not run are few, and each says why."""
    skipped = [b for page in PAGES for b in blocks(page) if b.skip is not None]
    assert all(b.skip for b in skipped)
    assert len(skipped) <= 5, [str(b) for b in skipped]

def test_programs_typecheck(tmp_path: Path) -> None:
    """
    The programs a reader copies pass ``mypy --strict``: the README's,
    the quick start's and the guide's complete programs (the quick
    start's consumer indexed a body of the ``AMQPBody`` union once).
    """
    api = pytest.importorskip('mypy.api')
    pages = [*PAGES, ROOT / 'doc' / 'usage.rst', ROOT / 'doc' / 'operating.rst']
    programs = [
        b for page in pages for b in blocks(page)
        if b.language == 'python' and b.text.startswith('import ') and b.skip is None
    ]
    files = []
    for i, block in enumerate(programs):
        path = tmp_path / 'program_{}.py'.format(i)
        path.write_text(block.text)
        files.append(str(path))
    out, err, status = api.run([
        '--strict', '--python-version', '3.11', '--no-error-summary',
        '--cache-dir', str(tmp_path / '.mypy_cache'), *files,
    ])
    named = out
    for i, block in enumerate(programs):
        named = named.replace(files[i], str(block))
    assert status == 0, named + err

