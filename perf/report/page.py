"""
The report page, ``doc/perf.rst``, rendered from its template
(``doc/perf/page.tmpl``) and the committed results
(``doc/perf/results/*.json``).

The template is reST with expressions in double braces: ``{{ ... }}``. An
expression is a small part of Python: calls of the helpers below, string
and number constants, lists, ``x.key`` and ``x['key']`` into a result, and
filters written ``value | filter`` or ``value | filter(argument)``::

    rbfly published {{ pub('publish', 'single/amqp', 'rbfly').median_rate | rate }} msg/s

Every value read from a result carries the names of the files it came
from (:py:class:`Num`, :py:class:`Text`), and so do the values the helpers
derive from them (a ratio, a minimum). A filter writes such a value and
refuses any other: a number typed into the template is an error, not a
figure. So every figure on the page has a result behind it, and
``tests/unit/test_perf_page.py`` checks what is left (the numbers that are
no figures: dates of the prose, versions, the parameters of a scenario)
against a list, each with its reason.

A figure from a result that was not measured on a clean work tree is
marked with a dagger (:py:data:`DIRTY_MARK`), and the page's list of
results says what was modified: such a result is to be measured again;
so is a quick run's (:py:data:`QUICK_MARK`).

``python -m perf.report.page`` writes the page; ``--check`` compares the
page on disk with what the results render and exits with 1 when they
differ.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from perf.common import ROOT
from perf.common.results import tree_clean
from perf.report import goals
from perf.report.page_helpers import Num, TemplateError, Text, install

TEMPLATE = ROOT / 'doc' / 'perf' / 'page.tmpl'
RESULTS = ROOT / 'doc' / 'perf' / 'results'
PAGE = ROOT / 'doc' / 'perf.rst'
DIRTY_MARK = '\N{DAGGER}'
"""Written after every figure of a result from a modified work tree."""
QUICK_MARK = '\N{DOUBLE DAGGER}'
"""Written after every figure of a quick run (``--quick``: a check, not a measurement)."""
MISSING = 'n/a'
EXPRESSION = re.compile(r'\{\{(.*?)\}\}', re.DOTALL)
MARK_OPEN, MARK_CLOSE = '\N{MATHEMATICAL LEFT WHITE SQUARE BRACKET}', \
    '\N{MATHEMATICAL RIGHT WHITE SQUARE BRACKET}'
"""Around every figure when rendered with ``mark=True`` (the tests')."""


def wrap(data: Any, name: str) -> Any:
    """The document ``data`` of result ``name`` with its leaves sourced."""
    if isinstance(data, dict):
        return {k: wrap(v, name) for k, v in data.items()}
    if isinstance(data, list):
        return [wrap(v, name) for v in data]
    if isinstance(data, bool) or data is None:
        return data
    if isinstance(data, (int, float)):
        return Num(data, (name,))
    if isinstance(data, str):
        return Text(data, (name,))
    raise TemplateError('{}: unexpected JSON value {!r}'.format(name, data))


def load_plain(path: Path) -> dict[str, Any]:
    """A result as JSON gives it (for the tables' renderers)."""
    with path.open(encoding='utf-8') as f:
        data: dict[str, Any] = json.load(f)
    return data


def load_results(directory: Path) -> dict[str, Any]:
    """The results by name (their file names without ``.json``)."""
    results = {}
    for path in sorted(directory.glob('*.json')):
        with path.open(encoding='utf-8') as f:
            results[path.stem] = wrap(json.load(f), path.stem)
    return results


#
# the renderer
#

class Page:
    """
    The page's renderer over one set of results.

    :param results: The results by name, as :py:func:`load_results` reads them.
    :param mark: Put every figure between :py:data:`MARK_OPEN` and
        :py:data:`MARK_CLOSE` (to tell the figures from the rest of the text).
    """

    def __init__(self, results: Mapping[str, Any], mark: bool = False) -> None:
        self.results = results
        self.mark = mark
        self.missing: list[str] = []
        self.dirty = {
            name: tree_clean(doc.get('env') or {}) is False
            for name, doc in results.items() if isinstance(doc, dict)
        }
        self.quick = {
            name: bool((doc.get('params') or {}).get('quick'))
            for name, doc in results.items() if isinstance(doc, dict)
        }
        self.helpers: dict[str, Callable[..., Any]] = {}
        self.filters: dict[str, Callable[..., str]] = {}
        install(self)
        goals.install(self)

    # figures

    def figure(self, value: Any, text: Callable[[Any], str]) -> str:
        """``value`` written by ``text``, marked as its sources ask."""
        if value is None:
            return MISSING
        if not isinstance(value, (Num, Text)):
            raise TemplateError(
                '{!r} is not read from a result: a figure must come from'
                ' doc/perf/results/'.format(value))
        out = text(value)
        if any(self.dirty.get(s) for s in value.sources):
            out += DIRTY_MARK
        if any(self.quick.get(s) for s in value.sources):
            out += QUICK_MARK
        return MARK_OPEN + out + MARK_CLOSE if self.mark else out

    def get(self, value: Any, *keys: Any) -> Any:
        """``value[k1][k2]...``; ``None`` (noted as missing) if absent."""
        where = []
        for key in keys:
            where.append(str(key))
            if isinstance(value, dict) and key in value:
                value = value[key]
            elif isinstance(value, list) and isinstance(key, int) \
                    and -len(value) <= key < len(value):
                value = value[key]
            else:
                self.missing.append('/'.join(where))
                return None
        return value

    # expressions

    def render(self, template: str) -> str:
        return EXPRESSION.sub(lambda m: self.expression(m.group(1)), template)

    def expression(self, source: str) -> str:
        try:
            tree = ast.parse(source.strip(), mode='eval')
        except SyntaxError as ex:
            raise TemplateError('{{{{{}}}}}: {}'.format(source, ex)) from ex
        value = self.evaluate(tree.body)
        if not isinstance(value, str) or isinstance(value, Text):
            raise TemplateError(
                '{{{{{}}}}} gives {!r}: write a value through a filter'.format(source, value))
        return value

    def evaluate(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float)):
            return node.value
        if isinstance(node, ast.Constant) and node.value is None:
            return None
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.evaluate(e) for e in node.elts]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not self.evaluate(node.operand)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
                and isinstance(node.operand, ast.Constant):
            return -node.operand.value  # type: ignore[operator]
        if isinstance(node, ast.Attribute):
            return self.get(self.evaluate(node.value), node.attr)
        if isinstance(node, ast.Subscript):
            return self.get(self.evaluate(node.value), self.evaluate(node.slice))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self.apply_filter(self.evaluate(node.left), node.right)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            if node.func.id == 'when' and len(node.args) == 2:
                # when(condition, text): text read only when the condition holds
                return self.evaluate(node.args[1]) if self.evaluate(node.args[0]) else ''
            helper = self.helpers.get(node.func.id)
            if helper is None:
                raise TemplateError('no helper {}()'.format(node.func.id))
            return helper(*(self.evaluate(a) for a in node.args))
        raise TemplateError('not understood in the template: {}'.format(ast.unparse(node)))

    def apply_filter(self, value: Any, node: ast.expr) -> str:
        args: list[Any] = []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            args = [self.evaluate(a) for a in node.args]
            node = node.func
        if not isinstance(node, ast.Name) or node.id not in self.filters:
            raise TemplateError('no filter {}'.format(ast.unparse(node)))
        return self.filters[node.id](value, *args)


def render_text(template: Path = TEMPLATE, results: Path = RESULTS, mark: bool = False) -> str:
    """The page rendered from ``template`` and the results in ``results``."""
    page = Page(load_results(results), mark=mark)
    return page.render(template.read_text(encoding='utf-8'))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog='python -m perf.report.page', description=__doc__.strip().splitlines()[0])
    parser.add_argument('--template', type=Path, default=TEMPLATE)
    parser.add_argument('--results', type=Path, default=RESULTS)
    parser.add_argument('--output', type=Path, default=PAGE)
    parser.add_argument('--check', action='store_true',
                        help='compare the page with what the results render; 1 if they differ')
    args = parser.parse_args(argv)
    page = Page(load_results(args.results))
    text = page.render(args.template.read_text(encoding='utf-8'))
    for where in sorted(set(page.missing)):
        print('page: not in the results: {}'.format(where), file=sys.stderr)
    if args.check:
        same = args.output.read_text(encoding='utf-8') == text
        print('page: {} {}'.format(args.output, 'as rendered' if same else 'differs from'
                                   ' what the results render (python -m perf.report.page)'),
              file=sys.stderr)
        return 0 if same else 1
    args.output.write_text(text, encoding='utf-8')
    print('page: {}'.format(args.output), file=sys.stderr)
    return 0




if __name__ == '__main__':
    sys.exit(main())
