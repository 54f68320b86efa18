"""
The filters and helpers of the report page's template
(:py:mod:`perf.report.page`): how a figure is written, the tables, the
verdict and the list of results.

A filter writes one figure (``rate``: ``5,122``; ``k``: ``254k``;
``us``: ``0.83``; ``pct``: ``64%``; ``x``: ``1.10x``; ...). A helper
reads results (``pub``, ``con``, ``wl``, ``r``), derives figures from
them (``ratio``, ``lo``, ``hi``, ``spread``, ``ceiling``), or writes
whole tables and sentences (``verdict``, ``verdict_sentences``,
``impl_table``, ``provenance``) through the same filters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from perf.common.results import tree_clean

class Page(Protocol):
    """What the helpers use of the renderer (:py:class:`perf.report.page.Page`)."""

    results: Any
    dirty: dict[str, bool]
    quick: dict[str, bool]
    helpers: dict[str, Callable[..., Any]]
    filters: dict[str, Callable[..., str]]

    def figure(self, value: Any, text: Callable[[Any], str]) -> str: ...

    def get(self, value: Any, *keys: Any) -> Any: ...

NAMES = {
    'rbfly': 'rbfly', 'rbfly-0.10': 'RbFly 0.10', 'rstream': 'rstream',
    'java': 'Java client', 'aiokafka': 'aiokafka', 'rbfly-linger1': 'rbfly with a 1 ms linger',
    'java-bpd1': 'the Java tool with 1 ms batches', 'null': 'the harness alone',
}
PEERS = ('rbfly-0.10', 'rstream', 'java', 'aiokafka')

VERDICT = (
    # (scenario, result, key, what is read: publish/consume results or workloads)
    ('single messages, each awaited', 'publish', 'single/amqp'),
    ('batches of 100, each awaited', 'publish', 'batch/amqp'),
    ('pipelined publishing', 'publish', 'pipelined/amqp'),
    ('pipelined, rbfly and Java alone', 'pipelined-310', 'pipelined/amqp'),
    ('reading 50-message chunks', 'consume', 'batch'),
    ('reading big chunks', 'consume', 'pipelined'),
    ('16 KiB messages published', 'workloads', 'sizes/16384/publish'),
    ('16 KiB messages read', 'workloads', 'sizes/16384/consume'),
    ('single messages, each awaited, on asyncio', 'publish-asyncio', 'single/amqp'),
    ('batches of 100, each awaited, on asyncio', 'publish-asyncio', 'batch/amqp'),
    ('single messages, each awaited', 'publish-4', 'single/amqp'),
    ('batches of 100, each awaited', 'publish-4', 'batch/amqp'),
    ('pipelined publishing', 'publish-4', 'pipelined/amqp'),
    ('pipelined, rbfly and Java alone', 'pipelined-4', 'pipelined/amqp'),
    ('reading 50-message chunks', 'consume-4', 'batch'),
    ('reading big chunks', 'consume-4', 'pipelined'),
    ('16 KiB messages published', 'workloads-4', 'sizes/16384/publish'),
    ('16 KiB messages read', 'workloads-4', 'sizes/16384/consume'),
)
"""The verdict's rows: each scenario on each broker its result was measured on."""

REPORT_RESULTS = (
    'codec', 'publish', 'consume', 'floor', 'workloads', 'concurrent', 'pipelined-310',
    'pipelined-4', 'java-official', 'handlers', 'recovery', 'scale', 'publish-4', 'consume-4',
    'workloads-4', 'publish-asyncio',
)
"""The results ``scripts/perf-report.sh`` makes (the others were made by hand)."""

WHY_ABSENT = {
    'consume': {
        'aiokafka': 'the consuming benchmark reads RabbitMQ streams only;'
                    ' aiokafka reads Kafka in the workloads',
    },
    'pipelined-310': 'the pipelined runs of each broker measure rbfly and the Java client only',
    'pipelined-4': 'the pipelined runs of each broker measure rbfly and the Java client only',
    'consume-4': {
        'aiokafka': 'the consuming benchmark reads RabbitMQ streams only;'
                    ' aiokafka reads Kafka in the workloads',
    },
    'publish-asyncio': 'the asyncio runs measure the Python clients of RabbitMQ streams only',
}


def install(page: Page) -> None:
    """Give ``page`` the template's filters and helpers."""
    def fig(text: Callable[[Any], str]) -> Callable[..., str]:
        return lambda value, *args: page.figure(value, lambda v: text(v, *args))

    page.filters.update({
        'rate': fig('{:,.0f}'.format),
        'n': fig('{:,.0f}'.format),
        'k': fig(_k),
        'us': fig(_us),
        'ms': fig(lambda v: _us(v / 1000)),
        'sms': fig(lambda v: _us(v * 1000)),
        'pct': fig('{:.0%}'.format),
        'kib': fig(lambda v: '{:,.1f}'.format(v / 1024)),
        'x': fig('{:.2f}x'.format),
        'f': fig(_fixed),
        'day': fig(lambda v: str(v)[:10]),
        'hm': fig(lambda v: str(v)[11:16] + ' UTC'),
        'commit': fig(lambda v: str(v)[:7]),
        'text': fig(str),
    })
    h = Helpers(page)
    page.helpers.update({
        name: getattr(h, name) for name in (
            'r', 'join', 'when', 'dirty', 'has', 'commits', 'one_commit', 'pub', 'con', 'wl',
            'ratio', 'lo', 'hi', 'spread', 'ceiling', 'pick', 'lt',
            'table', 'impl_table', 'provenance', 'dirty_results', 'quick_results',
            'verdict_brokers',
            'verdicts', 'verdict_sentences', 'rate_of', 'cpu_of', 'ranked', 'latencies',
        )
    })


def _fixed(v: float, decimals: int = 1) -> str:
    return '{:,.{}f}'.format(v, int(decimals))


def _k(v: float) -> str:
    if v >= 1e6:
        return '{:.2f}M'.format(v / 1e6)
    if v >= 1e4:
        return '{:.0f}k'.format(v / 1e3)
    if v >= 1e3:
        return '{:.1f}k'.format(v / 1e3)
    return '{:,.0f}'.format(v)


def _us(v: float) -> str:
    if v >= 100:
        return '{:,.0f}'.format(v)
    if v >= 10:
        return '{:.1f}'.format(v)
    return '{:.2f}'.format(v)


class Helpers:
    """The template's helpers over one page's results."""

    def __init__(self, page: Page) -> None:
        self.page = page

    # reading

    def join(self, *parts: str) -> str:
        """Written figures and words as one cell."""
        return ''.join(parts)

    def when(self, condition: object, text: str) -> str:
        """
        ``text`` if ``condition`` holds, else nothing: words that follow the
        results (the renderer evaluates ``text`` only when it is written).
        """
        return text if condition else ''

    def dirty(self, name: str) -> bool:
        """Whether result ``name`` was measured on a modified work tree."""
        return self.page.dirty.get(name, False)

    def has(self, name: str, *keys: Any) -> bool:
        """Whether result ``name`` holds ``keys`` (not noted as missing)."""
        where = self.page.results.get(name)
        for key in keys:
            if not isinstance(where, dict) or key not in where:
                return False
            where = where[key]
        return True

    def _commits(self) -> tuple[set[str], frozenset[str]]:
        found, names = set(), []
        for name in REPORT_RESULTS:
            env = self.page.results.get(name, {}).get('env') or {}
            source = env['source'] if isinstance(env.get('source'), dict) else {}
            commit = source.get('commit')
            found.add(str(commit) if commit else 'not recorded:' + name)
            names.append(name)
        return found, frozenset(names)

    def commits(self) -> Num:
        """How many commits the results of ``make perf-report`` come from."""
        found, names = self._commits()
        # a count of commits, not a measurement: no dagger of the results it counts
        return Num(len(found), [n for n in names
                                if not self.page.dirty.get(n) and not self.page.quick.get(n)])

    def one_commit(self) -> bool:
        return len(self._commits()[0]) == 1

    def r(self, name: str, *keys: Any) -> Any:
        return self.page.get(self.page.results, name, *keys)

    def pub(self, name: str, scenario: str, impl: str) -> Any:
        return self.r(name, 'results', scenario, 'implementations', impl)

    con = pub

    def wl(self, workload: str, case: str, impl: str) -> Any:
        return self.r('workloads', 'results', workload, case, impl)

    def entry(self, name: str, key: str, impl: str) -> Any:
        """An implementation's result in a verdict row (``None`` if not run)."""
        keys = key.split('/', 1) if name.startswith('workloads') else [key, 'implementations']
        where = self.page.results.get(name, {}).get('results', {})
        for k in keys:
            where = where.get(k, {}) if isinstance(where, dict) else {}
        return where.get(impl) if isinstance(where, dict) else None

    # deriving

    def ratio(self, a: Any, b: Any) -> Any:
        if a is None or b is None or not b:
            return None
        return Num(a / b, _sources(a, b))

    def lo(self, values: Sequence[Any] | None) -> Any:
        return min(values) if values else None

    def hi(self, values: Sequence[Any] | None) -> Any:
        return max(values) if values else None

    def spread(self, entry: Any) -> Any:
        """(fastest - slowest round) / median of an entry's rounds."""
        rates = (entry or {}).get('rates')
        rate = self.rate_of(entry)
        if not rates or not rate:
            return None
        return Num((max(rates) - min(rates)) / rate, _sources(*rates, rate))

    def ceiling(self, name: str, scenario: str) -> Any:
        """The better of the ceiling clients' medians in a scenario."""
        rates = [self.rate_of(self.pub(name, scenario, c)) for c in ('ceiling', 'ceiling-polling')]
        found = [r for r in rates if r]
        return max(found) if found else None

    def rate_of(self, entry: Any) -> Any:
        if not isinstance(entry, dict) or entry.get('status') not in (None, 'ok'):
            return None
        return entry.get('median_rate', entry.get('rate'))

    def cpu_of(self, entry: Any) -> Any:
        if not isinstance(entry, dict) or entry.get('status') not in (None, 'ok'):
            return None
        return entry.get('cpu_us_per_msg')

    def lt(self, a: Any, b: Any) -> bool:
        """``a < b`` of two figures (False when either is missing)."""
        return a is not None and b is not None and a < b

    def pick(self, a: Any, b: Any, more: str, less: str) -> str:
        """``more`` if ``a`` > ``b``, else ``less`` (words chosen by the figures)."""
        if a is None or b is None:
            return MISSING_WORD
        return more if a > b else less

    # writing

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
        """A reST simple table of cells already written."""
        widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows, strict=True)]
        rule = '  '.join('=' * w for w in widths)

        def line(cells: Sequence[str]) -> str:
            return '  '.join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()
        return '\n'.join([rule, line(headers), rule, *(line(r) for r in rows), rule])

    def impl_table(self, names: Sequence[str], scenario: str, impls: Sequence[str],
                   columns: Sequence[str]) -> str:
        """
        One row per implementation, one column group per result in
        ``names``; ``columns`` of ``rate``, ``spread``, ``cpu``, ``broker``
        (the broker's CPU µs a message), ``chunk`` (messages a chunk).
        """
        f = self.page.filters
        heads = {'rate': 'msg/s', 'spread': 'spread', 'cpu': 'CPU µs/msg',
                 'broker': 'broker µs/msg', 'chunk': 'msg/chunk'}
        cells: dict[str, Callable[[Any], str]] = {
            'rate': lambda e: f['rate'](self.rate_of(e)),
            'spread': lambda e: f['pct'](self.spread(e)),
            'cpu': lambda e: f['us'](self.cpu_of(e)),
            'broker': lambda e: f['us'](e.get('broker_us_per_msg') if e else None),
            'chunk': lambda e: f['n'](e.get('msg_per_chunk') if e else None),
        }
        headers = ['implementation']
        for name in names:
            version = self.r(name, 'env', 'broker', 'version')
            prefix = 'RabbitMQ {} '.format(f['text'](version)) if len(names) > 1 else ''
            headers.extend(prefix + heads[c] if i == 0 else heads[c]
                           for i, c in enumerate(columns))
        rows = []
        for impl in impls:
            row = [impl]
            for name in names:
                entry = self.pub(name, scenario, impl)
                row.extend(cells[c](entry) for c in columns)
            rows.append(row)
        return self.table(headers, rows)

    def provenance(self) -> str:
        """Every result: what it measured, when, where, from which tree."""
        f = self.page.filters
        rows = []
        for name, doc in self.page.results.items():
            env = doc.get('env') or {}
            broker = (env.get('broker') or {}).get('version') if isinstance(
                env.get('broker'), dict) else None
            source = env['source'] if isinstance(env.get('source'), dict) else {}
            commit = source.get('commit') or env.get('commit')
            clean = tree_clean(env)
            state = {True: 'clean', False: '**modified** ' + DIRTY_NOTE,
                     None: 'not recorded'}[clean]
            if clean is None and source.get('rbfly_changes') == []:
                state = '``rbfly/`` clean, the rest not recorded'
            if self.page.quick.get(name):
                state += '; a quick run ' + QUICK_NOTE
            rows.append([
                '``{}.json``'.format(name),
                'yes' if name in REPORT_RESULTS else 'no (by hand)',
                f['day'](env.get('date')) + ' ' + f['hm'](env.get('date')),
                'RabbitMQ ' + f['text'](broker) if broker else '-',
                f['commit'](commit) if commit else 'not recorded',
                state,
            ])
        return self.table(['result', 'regenerated', 'measured', 'broker', 'commit', 'tree'], rows)

    def dirty_results(self) -> str:
        names = [n for n, dirty in self.page.dirty.items() if dirty]
        return ', '.join('``{}.json``'.format(n) for n in names) or 'none'

    def quick_results(self) -> str:
        names = [n for n, quick in self.page.quick.items() if quick]
        return ', '.join('``{}.json``'.format(n) for n in names) or 'none'

    def ranked(self, workload: str, case: str, unit: str = 'k') -> str:
        """
        The clients of a workload's case, fastest first: their rate (``k``:
        msg/s; ``mb``: MB/s) and client CPU a message.
        """
        f = self.page.filters
        cases = self.r('workloads', 'results', workload, case) or {}
        found = [(self.rate_of(e), impl, e) for impl, e in cases.items() if self.rate_of(e)]
        parts = []
        for rate, impl, e in sorted(found, key=lambda t: -t[0]):
            value = f['k'](rate) + ' msg/s' if unit == 'k' else f['n'](e.get('mb_per_s')) + ' MB/s'
            cpu = self.cpu_of(e)
            parts.append('{} {}{}'.format(NAMES.get(impl, impl), value,
                                          ' ({} µs)'.format(f['us'](cpu)) if cpu else ''))
        return ', '.join(parts) or MISSING_WORD

    def latencies(self, case: str) -> str:
        """
        Each client's p50 and p99 latency at a fixed load: to the
        confirmation and to a live consumer (the Java tool's own figures:
        whole milliseconds, sampled).
        """
        f = self.page.filters
        parts = []
        for impl, e in (self.r('workloads', 'results', 'latency', case) or {}).items():
            if not isinstance(e, dict) or e.get('status') != 'ok':
                continue
            if isinstance(e.get('confirm'), dict) and isinstance(e.get('end_to_end'), dict):
                c, d = e['confirm'], e['end_to_end']
                parts.append('{} {} and {} ms confirmed, {} and {} ms delivered'.format(
                    NAMES.get(impl, impl), f['ms'](c.get('p50_us')), f['ms'](c.get('p99_us')),
                    f['ms'](d.get('p50_us')), f['ms'](d.get('p99_us'))))
            elif isinstance(e.get('latency_ms'), dict):
                c, d = e.get('confirm_latency_ms') or {}, e['latency_ms']
                parts.append('{} {} and {} ms confirmed, {} and {} ms delivered'.format(
                    NAMES.get(impl, impl) if impl != 'java' else 'the Java tool',
                    f['f'](c.get('p50'), 0), f['f'](c.get('p99'), 0),
                    f['f'](d.get('p50'), 0), f['f'](d.get('p99'), 0)))
        return '; '.join(parts) or MISSING_WORD

    # the verdict

    def verdicts(self) -> str:
        """The verdict on every broker of the results, each under its title."""
        f = self.page.filters
        out = []
        for broker in self.verdict_brokers():
            title = 'RabbitMQ ' + f['text'](broker)
            out.extend([title, '~' * len(title), '', self.verdict(broker), '',
                        self.verdict_sentences(broker), ''])
        return '\n'.join(out).rstrip()

    def verdict_brokers(self) -> list[Any]:
        versions = []
        for _, name, _ in VERDICT:
            if not self.has(name, 'env', 'broker', 'version'):
                continue   # a result not in the committed run: no row
            v = self.r(name, 'env', 'broker', 'version')
            if v is not None and v not in versions:
                versions.append(v)
        return versions

    def _rows(self, broker: Any) -> list[tuple[str, str, str]]:
        return [row for row in VERDICT if self.has(row[1], 'env', 'broker', 'version')
                and self.r(row[1], 'env', 'broker', 'version') == broker]

    def _why(self, name: str, key: str, impl: str, entry: Any) -> str:
        if isinstance(entry, dict) and entry.get('status') not in (None, 'ok'):
            return str(entry.get('reason') or entry.get('status'))
        why = WHY_ABSENT.get(name)
        if isinstance(why, dict):
            why = why.get(impl)
        if why:
            return str(why)
        return NOT_IN_RUN

    def verdict(self, broker: Any) -> str:
        """
        The scenarios measured on ``broker`` by peer: each peer's rate and
        CPU a message as ratios to rbfly's, and notes on the blanks.
        """
        f = self.page.filters
        notes: dict[str, str] = {}
        rows = []
        for scenario, name, key in self._rows(broker):
            base = self.entry(name, key, 'rbfly')
            row = [scenario, '{} msg/s, {} µs'.format(
                f['k'](self.rate_of(base)), f['us'](self.cpu_of(base)))]
            for peer in PEERS:
                entry = self.entry(name, key, peer)
                rate, cpu = self.rate_of(entry), self.cpu_of(entry)
                if rate is None:
                    why = self._why(name, key, peer, entry)
                    if why == NOT_IN_RUN:
                        why = '{} was {}'.format(NAMES[peer], why)
                    letter = notes.setdefault(why, chr(ord('a') + len(notes)))
                    row.append('\N{EN DASH} ({})'.format(letter))
                    continue
                row.append('{} / {}'.format(
                    f['x'](self.ratio(rate, self.rate_of(base))),
                    f['x'](self.ratio(cpu, self.cpu_of(base))) if cpu is not None else '-'))
            rows.append(row)
        table = self.table(['scenario', 'rbfly', *(NAMES[p] for p in PEERS)], rows)
        legend = '\n'.join('({}) {}.'.format(letter, why) for why, letter in notes.items())
        return table + '\n\n' + _line_block(legend)

    def verdict_sentences(self, broker: Any) -> str:
        """One sentence a scenario: rbfly, and the peer with the best rate."""
        f = self.page.filters
        lines = []
        for scenario, name, key in self._rows(broker):
            base = self.entry(name, key, 'rbfly')
            rate = self.rate_of(base)
            peers = [(self.rate_of(self.entry(name, key, p)), p) for p in PEERS]
            peers = [(r, p) for r, p in peers if r is not None]
            text = '- {}{}: rbfly {} msg/s at {} µs of CPU a message'.format(
                scenario[0].upper(), scenario[1:], f['k'](rate), f['us'](self.cpu_of(base)))
            if peers and rate is not None:
                best, peer = max(peers)
                cpu = self.cpu_of(self.entry(name, key, peer))
                text += '; the fastest peer, {}, {} at {} µs ({} rbfly\'s rate, {} its CPU)'.format(
                    'the Java client' if peer == 'java' else NAMES[peer], f['k'](best),
                    f['us'](cpu), f['x'](self.ratio(best, rate)),
                    f['x'](self.ratio(cpu, self.cpu_of(base))))
                text += ': rbfly is {}.'.format(
                    self.pick(rate, best, 'ahead', 'behind'))
            else:
                text += '.'
            lines.append(text)
        return '\n'.join(lines)


class TemplateError(Exception):
    """The template asks for something the renderer does not do."""


class Num(float):
    """A number read from the results (or derived from such numbers)."""

    sources: frozenset[str]

    def __new__(cls, value: float, sources: Iterable[str]) -> Num:
        num = super().__new__(cls, value)
        num.sources = frozenset(sources)
        return num


class Text(str):
    """A string read from the results (a date, a version, a commit)."""

    sources: frozenset[str]

    def __new__(cls, value: str, sources: Iterable[str]) -> Text:
        text = super().__new__(cls, value)
        text.sources = frozenset(sources)
        return text


Value = Num | Text


MISSING_WORD = '(not measured)'
NOT_IN_RUN = 'not in this run'
DIRTY_NOTE = '(its figures are marked \N{DAGGER}; to be re-run)'
QUICK_NOTE = '(its figures are marked \N{DOUBLE DAGGER}; to be re-run in full)'


def _sources(*values: Any) -> frozenset[str]:
    out: frozenset[str] = frozenset()
    for v in values:
        out |= getattr(v, 'sources', frozenset())
    return out


def _line_block(text: str) -> str:
    return '\n'.join('| ' + line for line in text.splitlines())
