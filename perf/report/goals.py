"""
The goals the performance issues set, each checked against the results:
the template's ``goals()`` writes one row a goal and a broker (or loop)
with what was measured and whether it is met, or by how much it is
missed. A goal's figures come from the committed results like every other
figure of the page; a goal whose figures are missing says so.
"""

from __future__ import annotations

from typing import Any

from perf.report.page_helpers import MISSING_WORD, NAMES, Helpers, Num, Page

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
        for name in ('publish', 'publish-asyncio', 'publish-4'):
            rows.extend(self.awaited(name))
        for name in ('consume', 'consume-4'):
            rows.extend(self.reading(name))
        rows.extend(self.scale())
        notes: dict[str, str] = {}
        cells = []
        for row in rows:
            goal, where, measured, verdict, *why = row
            if verdict.startswith('missed') and why and why[0]:
                letter = notes.setdefault(why[0], chr(ord('a') + len(notes)))
                verdict += ' ({})'.format(letter)
            cells.append([goal, where, measured, verdict])
        table = self.h.table(['goal', 'where', 'measured', 'verdict'], cells)
        if not notes:
            return table
        legend = '\n'.join('| ({}) {}'.format(letter, why) for why, letter in notes.items())
        return table + '\n\nWhy a goal is missed, from the same run:\n\n' + legend

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
            self._fixed_why(name),
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

    def _fixed_why(self, name: str) -> str:
        """The fixed-rate runs are one run a broker: how far they differ from each other."""
        names = [n for n in ('workloads', 'workloads-4')
                 if self.h.has(n, 'results', 'latency', '10000', 'rbfly')
                 and self.h.has(n, 'results', 'latency', '10000', 'java')]
        if len(names) < 2:
            return ''
        figures = []
        for n in names:
            figures.append('{}: rbfly {} µs, the Java tool {} µs'.format(
                self._broker(n),
                self.f['us'](self.h.cpu_of(self.h.r(n, 'results', 'latency', '10000', 'rbfly'))),
                self.f['us'](self.h.cpu_of(self.h.r(n, 'results', 'latency', '10000', 'java')))))
        return ('the workloads are measured once on each broker, and the two runs differ'
                ' more than the clients do within one ({}): a miss this close is within'
                ' what one run tells').format('; '.join(figures))

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
                self._pace_why(name, scenario),
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
                self._awaited_why(name, scenario, cpu, ocpu, floor),
            ])
        return rows

    def _pace_why(self, name: str, scenario: str) -> str:
        """The pace of awaited sends: the sleeping ceiling client's, and who was busier."""
        if not self.h.has(name, 'results', scenario, 'implementations', 'ceiling'):
            return ''
        ceiling = self.h.pub(name, scenario, 'ceiling')
        mine = self.h.pub(name, scenario, 'rbfly') or {}
        old = self.h.pub(name, scenario, 'rbfly-0.10') or {}
        if self.h.rate_of(ceiling) is None or mine.get('cpu_share') is None \
                or old.get('cpu_share') is None:
            return ''
        polling = ''
        if self.h.has(name, 'results', scenario, 'implementations', 'ceiling-polling'):
            rate = self.h.rate_of(self.h.pub(name, scenario, 'ceiling-polling'))
            if rate is not None:
                polling = '; the same client polling, a busy core, {} msg/s'.format(
                    self.f['rate'](rate))
        return (
            'an awaited send waits for the broker and then for the wake-up: the bare ceiling'
            ' client, which does nothing but wait asleep, sent {c} msg/s{polling}; rbfly'
            ' used {mine} of a core, RbFly 0.10 {old}: a busier process is woken sooner'
            ' (rbfly\'s ``spin`` option polls, at the CPU it costs: `Client options measured`_)'
        ).format(c=self.f['rate'](self.h.rate_of(ceiling)), polling=polling,
                 mine=self.f['pct'](mine.get('cpu_share')), old=self.f['pct'](old.get('cpu_share')))

    def _awaited_why(self, name: str, scenario: str, cpu: Any, ocpu: Any, floor: Any) -> str:
        """Where the CPU of an awaited send goes: the round trip, and rbfly's own work."""
        if cpu is None or ocpu is None or floor is None:
            return ''
        share = self.h.pub(name, scenario, 'rbfly').get('sys_us_per_msg')
        goal = Num(ocpu / 1.5, _sources(ocpu))
        if goal < floor:
            reach = ', less than the round trip alone costs the bare client'
        else:
            reach = ': rbfly\'s own work would have to fall to {} µs'.format(
                self.f['us'](Num(goal - floor, _sources(goal, floor))))
        return (
            'an awaited send is a round trip, a write, a wake-up and a read a {what}, which the'
            ' bare ceiling client (its frames built before the timing, nothing else) pays too:'
            ' {floor} µs; rbfly spends {own} µs on top of it{sys}, RbFly 0.10 {oown} µs; 1.5x'
            ' RbFly 0.10\'s messages per CPU second would be {goal} µs a message{reach}'
        ).format(
            what='message' if scenario.startswith('single') else 'batch',
            floor=self.f['us'](floor),
            own=self.f['us'](Num(cpu - floor, _sources(cpu, floor))),
            sys=' (of rbfly\'s whole CPU a message, {} µs in the kernel)'.format(
                self.f['us'](share)) if share is not None else '',
            oown=self.f['us'](Num(ocpu - floor, _sources(ocpu, floor))),
            goal=self.f['us'](goal), reach=reach,
        )

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
                self._reading_why(name, peer),
            ])
        java = self.h.cpu_of(self.h.con(name, 'pipelined', 'java'))
        chunks = self.h.cpu_of(self.h.con(name, 'pipelined', 'rbfly-chunks'))
        plain = self.h.cpu_of(self.h.con(name, 'pipelined', 'rbfly'))
        rows.append([
            'big chunks, the chunk API: at most the Java client\'s CPU a message',
            where,
            'rbfly {} µs, the Java client {} µs'.format(self.f['us'](chunks), self.f['us'](java)),
            self._at_most(self.h.ratio(chunks, java), 1.0),
            self._floor_why(java, with_loop=False),
        ])
        rows.append([
            'big chunks, ``async for``: at most twice the Java client\'s CPU a message',
            where,
            'rbfly {} µs, the Java client {} µs'.format(self.f['us'](plain), self.f['us'](java)),
            self._at_most(self.h.ratio(plain, java), 2.0),
            self._floor_why(java, with_loop=True),
        ])
        return rows

    def _floor_why(self, java: Any, with_loop: bool) -> str:
        """The interpreter's floor under a message read (perf.floor), against the JVM's."""
        decode = self.h.r('floor', 'results', 'decode', 'us_per_msg') \
            if self.h.has('floor', 'results', 'decode', 'us_per_msg') else None
        loop = self.h.r('floor', 'results', 'async-for', 'us_per_msg') \
            if self.h.has('floor', 'results', 'async-for', 'us_per_msg') else None
        if decode is None or java is None or (with_loop and loop is None):
            return ''
        if not with_loop:
            return ('rbfly decodes each message of a chunk into Python objects in C: that'
                    ' alone, with no broker and no loop, costs {d} µs a message'
                    ' (``perf.floor``), against the Java client\'s whole {j} µs with its'
                    ' JIT').format(d=self.f['us'](decode), j=self.f['us'](java))
        return ('an ``async for`` hands out one Python object a message: the interpreter\'s'
                ' floor is {d} µs to decode it and {a} µs for the loop\'s turn'
                ' (``perf.floor``, no broker), {t} µs in all, against the Java client\'s'
                ' whole {j} µs').format(
                    d=self.f['us'](decode), a=self.f['us'](loop),
                    t=self.f['us'](Num(decode + loop, _sources(decode, loop))),
                    j=self.f['us'](java))

    def _reading_why(self, name: str, peer: str) -> str:
        """Who was busy while the small chunks were read: the client, the broker."""
        mine = self.h.con(name, 'batch', 'rbfly') or {}
        theirs = self.h.con(name, 'batch', peer) or {}
        if mine.get('cpu_share') is None or theirs.get('cpu_share') is None:
            return ''
        return (
            'reading small chunks, rbfly\'s process used {c} of a core and the broker {b};'
            ' with {peer}, {pc} and {pb}: neither rbfly nor the broker was busy all the time,'
            ' rbfly waited for chunks (its read pause and credit are the knobs: see `Client'
            ' options measured`_)'
        ).format(
            c=self.f['pct'](mine.get('cpu_share')), b=self.f['pct'](mine.get('broker_cpu_share')),
            peer=NAMES.get(peer, peer), pc=self.f['pct'](theirs.get('cpu_share')),
            pb=self.f['pct'](theirs.get('broker_cpu_share')),
        )

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
                    self._scale_why(dim, way),
                ])
        return rows

    def _scale_why(self, dim: str, way: str) -> str:
        """What grows with the streams or partitions: paid once each, over fewer messages."""
        n = self.h.r('scale', 'results', dim, -1, 'n')
        messages = self.h.r('scale', 'results', dim, -1, 'messages')
        if n is None or messages is None:
            return ''
        each = self.f['n'](Num(messages / n, _sources(messages, n)))
        one = 'partition' if dim == 'partitions' else 'stream'
        if way == 'read':
            return ('at the most {d}, each subscription reads {each} messages, and its'
                    ' opening and ending (the stream\'s members, where it ends, Subscribe'
                    ' and Unsubscribe: round trips) are paid over them').format(d=dim, each=each)
        return ('at the most {d}, each {one} gets {each} messages: what its publisher costs'
                ' once and a call (its declaration, its writes) is paid over fewer of them{x}'
                ).format(d=dim, one=one, each=each,
                         x=' (``send_many`` splits each list into a call a partition)'
                         if dim == 'partitions' else '')
