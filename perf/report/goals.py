"""
The goals the performance issues set, each checked against the results:
the template's ``goals()`` writes one row a goal and a broker (or loop)
with what was measured and whether it is met, or by how much it is
missed. A goal's figures come from the committed results like every other
figure of the page; a goal whose figures are missing says so.
"""

from __future__ import annotations

from typing import Any

from perf.report.page_helpers import MISSING_WORD, Helpers, Num, Page

def install(page: Page) -> None:
    """Give the template of ``page`` the ``goals`` helper."""
    page.helpers['goals'] = Goals(Helpers(page)).table


def _sources(*values: Any) -> list[str]:
    return [s for v in values for s in getattr(v, 'sources', ())]


class Goals:
    """The goals' rows, read through the page's helpers."""

    def __init__(self, h: Helpers) -> None:
        self.h = h
        self.f = h.page.filters

    def table(self) -> str:
        rows: list[list[str]] = []
        for name in ('workloads', 'workloads-4'):
            rows.extend(self.fixed_rate(name))
        for name in ('publish', 'publish-asyncio'):
            rows.extend(self.awaited(name))
        for name in ('consume', 'consume-4'):
            rows.extend(self.reading(name))
        rows.extend(self.scale())
        return self.h.table(['goal', 'where', 'measured', 'verdict'], rows)

    # the verdict of one comparison

    def _at_most(self, value: Any, limit: Any) -> str:
        """Met when ``value`` <= ``limit``, else missed by the ratio."""
        if value is None or limit is None or not limit:
            return MISSING_WORD
        if value <= limit:
            return 'met'
        return 'missed: {} the goal'.format(self.f['x'](Num(value / limit, _sources(value, limit))))

    def _at_least(self, value: Any, floor: Any) -> str:
        """Met when ``value`` >= ``floor``, else missed by the ratio."""
        if value is None or floor is None or not floor:
            return MISSING_WORD
        if value >= floor:
            return 'met'
        return 'missed: {} the goal'.format(self.f['x'](Num(value / floor, _sources(value, floor))))

    def _broker(self, name: str) -> str:
        if not self.h.has(name, 'env', 'broker', 'version'):
            return 'RabbitMQ (version not recorded)'
        version = self.h.r(name, 'env', 'broker', 'version')
        return 'RabbitMQ ' + self.f['text'](version) if version is not None else MISSING_WORD

    # the goals

    def fixed_rate(self, name: str) -> list[list[str]]:
        """
        Issue 40, item 2: at 10,000 msg/s, rbfly's client CPU a message at
        or below the Java tool's, and its p99 latency to a live consumer at
        or below the Java tool's (whose figures are whole milliseconds).
        """
        if not self.h.has(name, 'results', 'latency', '10000'):
            return []
        rbfly = self.h.r(name, 'results', 'latency', '10000', 'rbfly')
        java = self.h.r(name, 'results', 'latency', '10000', 'java')
        rows = []
        where = '{}, {} msg/s'.format(self._broker(name), self.f['k'](
            self.h.r(name, 'results', 'latency', '10000', 'rbfly', 'offered')))
        cpu, jcpu = self.h.cpu_of(rbfly), self.h.cpu_of(java)
        harness = self.h.cpu_of(self.h.r(name, 'results', 'latency', '10000', 'null')) \
            if self.h.has(name, 'results', 'latency', '10000', 'null') else None
        rows.append([
            'CPU a message at a fixed rate, at most the Java tool\'s',
            where,
            'rbfly {} µs, Java tool {} µs{}'.format(
                self.f['us'](cpu), self.f['us'](jcpu),
                '; the harness alone {} µs'.format(self.f['us'](harness))
                if harness is not None else ''),
            self._at_most(cpu, jcpu),
        ])
        p99 = self.h.r(name, 'results', 'latency', '10000', 'rbfly', 'end_to_end', 'p99_us')
        jp99 = self.h.r(name, 'results', 'latency', '10000', 'java', 'latency_ms', 'p99')
        p99_ms = Num(p99 / 1000, _sources(p99)) if p99 is not None else None
        rows.append([
            'p99 latency to a consumer at a fixed rate, at most the Java tool\'s',
            where,
            'rbfly {} ms, Java tool {} ms'.format(self.f['f'](p99_ms, 1), self.f['f'](jp99, 0)),
            self._at_most(p99_ms, jp99),
        ])
        return rows

    def awaited(self, name: str) -> list[list[str]]:
        """
        Issue 40, item 3: awaited single messages and batches of 100, rbfly
        at least RbFly 0.10's rate and at most 1/1.5 of its CPU a message.
        """
        if name not in self.h.page.results:
            return []
        loop = self.h.r(name, 'params', 'loop')
        rows = []
        for scenario, what in (('single/amqp', 'single messages'), ('batch/amqp', 'batches')):
            rbfly = self.h.pub(name, scenario, 'rbfly')
            old = self.h.pub(name, scenario, 'rbfly-0.10')
            rate, orate = self.h.rate_of(rbfly), self.h.rate_of(old)
            cpu, ocpu = self.h.cpu_of(rbfly), self.h.cpu_of(old)
            where = '{}, {}, {}'.format(self._broker(name), self.f['text'](loop), what)
            rows.append([
                'awaited sends: RbFly 0.10\'s rate or more',
                where,
                'rbfly {} msg/s, RbFly 0.10 {}'.format(
                    self.f['rate'](rate), self.f['rate'](orate)),
                self._at_least(self.h.ratio(rate, orate), 1.0),
            ])
            floor = self.h.cpu_of(self.h.pub(name, scenario, 'ceiling')) if self.h.has(
                name, 'results', scenario, 'implementations', 'ceiling') else None
            rows.append([
                'awaited sends: 1.5x RbFly 0.10\'s messages per CPU second',
                where,
                'rbfly {} µs a message, RbFly 0.10 {} µs{}'.format(
                    self.f['us'](cpu), self.f['us'](ocpu),
                    '; the bare ceiling client {} µs'.format(self.f['us'](floor))
                    if floor is not None else ''),
                self._at_least(self.h.ratio(ocpu, cpu), 1.5),
            ])
        return rows

    def reading(self, name: str) -> list[list[str]]:
        """
        Issue 40, item 4: small chunks read at least at RbFly 0.10's and the
        Java client's rate; big chunks through the chunk API at or below the
        Java client's CPU a message, ``async for`` within twice it.
        """
        if name not in self.h.page.results:
            return []
        where = self._broker(name)
        rbfly = self.h.con(name, 'batch', 'rbfly')
        rate = self.h.rate_of(rbfly)
        rows = []
        for peer, label in (('rbfly-0.10', 'RbFly 0.10'), ('java', 'the Java client')):
            prate = self.h.rate_of(self.h.con(name, 'batch', peer))
            rows.append([
                'catching up on 50-message chunks at {}\'s rate or more'.format(label),
                where,
                'rbfly {} msg/s, {} {}'.format(self.f['k'](rate), label, self.f['k'](prate)),
                self._at_least(self.h.ratio(rate, prate), 1.0),
            ])
        java = self.h.cpu_of(self.h.con(name, 'pipelined', 'java'))
        chunks = self.h.cpu_of(self.h.con(name, 'pipelined', 'rbfly-chunks'))
        plain = self.h.cpu_of(self.h.con(name, 'pipelined', 'rbfly'))
        rows.append([
            'big chunks, the chunk API: at most the Java client\'s CPU a message',
            where,
            'rbfly {} µs, the Java client {} µs'.format(self.f['us'](chunks), self.f['us'](java)),
            self._at_most(self.h.ratio(chunks, java), 1.0),
        ])
        rows.append([
            'big chunks, ``async for``: at most twice the Java client\'s CPU a message',
            where,
            'rbfly {} µs, the Java client {} µs'.format(self.f['us'](plain), self.f['us'](java)),
            self._at_most(self.h.ratio(plain, java), 2.0),
        ])
        return rows

    def scale(self) -> list[list[str]]:
        """
        Issue 40, item 6: a flat cost a message from one stream to the
        most (taken as within 1.5x), publishing and reading.
        """
        if 'scale' not in self.h.page.results:
            return []
        rows = []
        for dim, label in (('streams', 'streams'), ('partitions', 'partitions')):
            for way in ('publish', 'read'):
                first = self.h.r('scale', 'results', dim, 0, way, 'cpu_us_per_msg')
                last = self.h.r('scale', 'results', dim, -1, way, 'cpu_us_per_msg')
                n = self.h.r('scale', 'results', dim, -1, 'n')
                rows.append([
                    'a flat cost a message ({}), within 1.5x'.format(
                        'publishing' if way == 'publish' else 'reading'),
                    '{}, from one to {} {}'.format(self._broker('scale'), self.f['n'](n), label),
                    '{} to {} µs'.format(self.f['us'](first), self.f['us'](last)),
                    self._at_most(self.h.ratio(last, first), 1.5),
                ])
        return rows
