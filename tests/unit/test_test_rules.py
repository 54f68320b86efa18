"""
The rules of rbfly's tests, checked on their source (as flake8 plugins
check code, with :py:mod:`ast`), so that a test breaking one fails here
rather than on a loaded machine months later:

- no timed assertion: no ``assert`` on a clock's difference
  (``loop.time() - start < 1``); a test asserts what happened, a
  benchmark (``perf/``) measures how fast, and a hang is bounded by
  ``asyncio.timeout``;
- no sleep standing in for an event: an ``asyncio.sleep`` of 0.1 s or more
  in the integration and cluster tests says why time itself must pass
  with a comment ``# wall time: <why>`` on its line or just above it (a
  poll's interval, a timestamp a second old, nothing arriving meanwhile);
- a poll (a loop that sleeps until it may ``break`` or ``return``) ends
  loudly: a ``while`` loop in ``asyncio.timeout``, a loop asserting its
  deadline in its body, or one followed (or whose ``else`` ends) by
  ``raise``, ``assert`` or ``pytest.fail`` (a ``for`` loop in a timeout
  still falls through when its range runs out); it does not swallow
  every exception (``contextlib.suppress(Exception)``, ``except
  Exception: pass``), which hides the error that would explain a timeout.
"""

import ast
import io
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / 'tests'
SLEEP_DIRS = [TESTS / 'integration', TESTS / 'cluster']
CLOCKS = {'time', 'monotonic', 'perf_counter', 'monotonic_ns', 'perf_counter_ns'}
MARK = '# wall time:'
LONG_SLEEP = 0.1

def sources(*dirs: Path) -> Iterator[tuple[str, str]]:
    for d in dirs:
        for path in sorted(d.rglob('*.py')):
            yield str(path.relative_to(ROOT)), path.read_text()

def is_clock(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
        and node.func.attr in CLOCKS and not node.args

def timed_assertions(name: str, source: str) -> list[str]:
    """``assert`` statements comparing a clock's difference."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assert) and any(
                isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub)
                and (is_clock(n.left) or is_clock(n.right))
                for n in ast.walk(node.test)):
            found.append('{}:{}: {}'.format(name, node.lineno, ast.unparse(node)))
    return found

def is_sleep(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
        and node.func.attr == 'sleep' and isinstance(node.func.value, ast.Name) \
        and node.func.value.id == 'asyncio'

def comments(source: str) -> dict[int, str]:
    return {
        t.start[0]: t.string for t in tokenize.generate_tokens(io.StringIO(source).readline)
        if t.type == tokenize.COMMENT
    }

def unexplained_sleeps(name: str, source: str) -> list[str]:
    """``asyncio.sleep`` of a literal of 0.1 s or more without ``# wall time:``."""
    notes = comments(source)
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (is_sleep(node) and isinstance(node, ast.Call) and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, int | float)
                and node.args[0].value >= LONG_SLEEP):
            continue
        line = node.lineno
        marked = MARK in notes.get(line, '')
        above = line - 1
        while not marked and above > 0 and lines[above - 1].strip().startswith('#'):
            marked = MARK in lines[above - 1]
            above -= 1
        if not marked:
            found.append('{}:{}: {}'.format(name, line, lines[line - 1].strip()))
    return found

def own_nodes(loop: ast.For | ast.While) -> Iterator[ast.AST]:
    """The nodes of a loop's body, not those of loops or functions in it."""
    todo: list[ast.AST] = list(loop.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.For
                      | ast.AsyncFor | ast.While):
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))

def waits(node: ast.AST) -> bool:
    """A sleep of some time (``asyncio.sleep(0)`` only yields to other tasks)."""
    return is_sleep(node) and isinstance(node, ast.Call) and not (
        node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == 0)

def fails(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Raise | ast.Assert):
        return True
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
        and ast.unparse(stmt.value.func) == 'pytest.fail'

def swallows_all(node: ast.AST) -> bool:
    """``contextlib.suppress(Exception)`` or an ``except Exception`` (or bare) doing nothing."""
    if isinstance(node, ast.withitem):
        call = node.context_expr
        return isinstance(call, ast.Call) and ast.unparse(call.func).endswith('suppress') \
            and any(ast.unparse(a) in ('Exception', 'BaseException') for a in call.args)
    if isinstance(node, ast.ExceptHandler):
        broad = node.type is None or ast.unparse(node.type) in ('Exception', 'BaseException')
        return broad and all(isinstance(s, ast.Pass | ast.Continue) for s in node.body)
    return False

def quiet_polls(name: str, source: str) -> list[str]:
    """
    Polls (loops that sleep until a condition lets them ``break`` or
    ``return``) that may end without failing, or swallow every error.
    """
    tree = ast.parse(source)
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    found = []
    for loop in ast.walk(tree):
        if not isinstance(loop, ast.For | ast.While):
            continue
        body = list(own_nodes(loop))
        if not (any(waits(n) for n in body)
                and any(isinstance(n, ast.Break | ast.Return) for n in body)):
            continue
        where = '{}:{}'.format(name, loop.lineno)
        if any(swallows_all(n) for n in body):
            found.append('{}: a poll swallowing every exception'.format(where))
        if any(isinstance(n, ast.Assert | ast.Raise) for n in body) \
                or (loop.orelse and fails(loop.orelse[-1])) \
                or (isinstance(loop, ast.While) and in_timeout(loop, parents)):
            continue
        if isinstance(loop, ast.While) and isinstance(loop.test, ast.Constant) \
                and loop.test.value is True and not any(isinstance(n, ast.Break) for n in body):
            continue  # ends by its return only
        if not fails_after(loop, parents):
            found.append('{}: a poll that may end without failing'.format(where))
    return found

def fails_after(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """
    Whether the statement run after ``node`` fails: the next one in its
    block, or, at the end of a ``with`` block, the one after the ``with``.
    """
    parent = parents[node]
    for field in ('body', 'orelse', 'finalbody'):
        block = getattr(parent, field, [])
        if node in block:
            after = block[block.index(node) + 1:]
            if after:
                return fails(after[0])
            if isinstance(parent, ast.With | ast.AsyncWith) and parent in parents:
                return fails_after(parent, parents)
            return False
    return False

def in_timeout(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether ``node`` runs in ``async with asyncio.timeout(...)`` (or ``timeout_at``)."""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return False
        if isinstance(node, ast.AsyncWith) and any(
                isinstance(i.context_expr, ast.Call)
                and ast.unparse(i.context_expr.func) in ('asyncio.timeout', 'asyncio.timeout_at')
                for i in node.items):
            return True
    return False

def test_no_timed_assertion() -> None:
    found = [f for name, text in sources(TESTS) for f in timed_assertions(name, text)]
    assert found == [], 'timed assertions (assert what happened instead):\n' + '\n'.join(found)

def test_no_sleep_standing_in_for_an_event() -> None:
    found = [f for name, text in sources(*SLEEP_DIRS) for f in unexplained_sleeps(name, text)]
    assert found == [], (
        'sleeps of {} s or more without "{} <why>" (wait for the event instead):\n'.format(
            LONG_SLEEP, MARK) + '\n'.join(found))

def test_polls_end_loudly() -> None:
    found = [f for name, text in sources(*SLEEP_DIRS) for f in quiet_polls(name, text)]
    assert found == [], '\n'.join(found)

#
# the checks themselves, on made-up tests
#

@pytest.mark.parametrize(('source', 'count'), [
    ('assert loop.time() - start < 1\n', 1),
    ('assert time.monotonic() - t0 >= 0.3, "slow"\n', 1),
    ('assert time.monotonic() < deadline\n', 0),  # a poll's deadline
    ('assert a - b < 1\n', 0),
])
def test_timed_assertions_found(source: str, count: int) -> None:
    assert len(timed_assertions('t.py', source)) == count

@pytest.mark.parametrize(('source', 'count'), [
    ('await asyncio.sleep(0.5)  # the second is subscribed\n', 1),
    ('await asyncio.sleep(1)\n', 1),
    ('await asyncio.sleep(0.05)\n', 0),
    ('await asyncio.sleep(0)\n', 0),
    ('await asyncio.sleep(1.1)  # wall time: a second passes\n', 0),
    ('# wall time: nothing more arrives\n# meanwhile\nawait asyncio.sleep(0.5)\n', 0),
])
def test_unexplained_sleeps_found(source: str, count: int) -> None:
    assert len(unexplained_sleeps('t.py', 'async def f():\n    ' + source.replace(
        '\n', '\n    ').rstrip() + '\n')) == count

QUIET = '''
async def f():
    for _ in range(50):
        if await ready():
            break
        await asyncio.sleep(0.05)
    go_on()
'''
SUPPRESSING = '''
async def f():
    for _ in range(50):
        with contextlib.suppress(Exception):
            if await ready():
                return
        await asyncio.sleep(0.05)
    raise AssertionError('never ready')
'''
LOUD = [
    QUIET.replace('    go_on()', "    raise AssertionError('never ready')"),
    QUIET.replace('    go_on()', '    else:\n        pytest.fail("never ready")'),
    QUIET.replace('    go_on()', '    assert await ready()'),
    '''
async def f():
    async with asyncio.timeout(10):
        while not await ready():
            await asyncio.sleep(0.05)
''',
    '''
async def f():
    while not await ready():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
''',
]

def test_quiet_polls_found() -> None:
    assert quiet_polls('t.py', QUIET) == ['t.py:3: a poll that may end without failing']
    assert quiet_polls('t.py', SUPPRESSING) == ['t.py:3: a poll swallowing every exception']
    for source in LOUD:
        assert quiet_polls('t.py', source) == [], source
