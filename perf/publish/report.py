"""
The text report of perf.publish: a table per scenario and the
project's speed targets checked against the medians of the run.
"""

from __future__ import annotations

from perf.common.results import (
    JsonDict,
    best_ceiling,
    format_rate,
    format_ratio,
    format_table,
    ok_rate,
    ratio,
)
from perf.common.scenarios import JAVA_SINGLE_RATE, TITLES
from perf.common.streams import (
    BASELINE,
    LEGEND,
    Target,
    format_share,
    spread,
)

# targets of the project (see README of perf/ and doc/perf.rst)
BATCH_RATIO = 1.5           # batches of 100, vs RbFly 0.10 (251k msg/s measured here)
PIPELINED_RATE = 700_000


def report(doc: JsonDict, rounds: int) -> str:
    lines = []
    for key, res in doc['results'].items():
        impls = res['implementations']
        title = TITLES[res['scenario']].format(batch=res['batch'])
        lines.append('{} ({}): {}, {:,} messages, median of {} rounds'.format(
            key, res['format'], title, res['count'], rounds,
        ))
        base = ok_rate(impls.get(BASELINE))
        peer = ok_rate(impls.get('rstream'))
        ceiling = best_ceiling(impls)
        headers = [
            'implementation', 'version', 'msg/s', 'spread', 'CPU us/msg', 'sys', 'broker us',
            'client', 'broker', 'machine', 'p50 us', 'p95 us', 'p99 us', 'vs ' + BASELINE,
            'vs rstream', 'of ceiling',
        ]
        shapes = [
            (key, label) for key, label in (('msg_per_frame', 'msg/frame'),
                                            ('msg_per_chunk', 'msg/chunk'))
            if any(r.get(key) is not None for r in impls.values())
        ]
        headers[7:7] = [label for _, label in shapes]
        rows = []
        for name, r in impls.items():
            if r['status'] != 'ok':
                continue
            lat = r.get('latency') or {}
            shape = [
                '-' if r.get(key) is None else '{:,.0f}'.format(r[key]) for key, _ in shapes
            ]
            rows.append([
                name, str(r['version']), format_rate(r['median_rate']), spread(r),
                '{:.2f}'.format(r['cpu_us_per_msg']), '{:.2f}'.format(r['sys_us_per_msg']),
                '-' if r.get('broker_us_per_msg') is None
                else '{:.2f}'.format(r['broker_us_per_msg']),
                *shape, format_share(r['cpu_share']),
                format_share(r.get('broker_cpu_share')), format_share(r.get('machine_busy')),
                _lat(lat, 'p50_us'), _lat(lat, 'p95_us'), _lat(lat, 'p99_us'),
                format_ratio(ratio(r['median_rate'], base)) if name != BASELINE else '',
                format_ratio(ratio(r['median_rate'], peer)) if name != 'rstream' else '',
                format_share(ratio(r['median_rate'], ceiling))
                if name != 'aiokafka' else '',
            ])
        if rows:
            lines.append(format_table(headers, rows))
        for name, r in impls.items():
            if r['status'] != 'ok':
                lines.append('{}: skipped: {}'.format(name, r['reason']))
        lines.append('')
    lines.append(
        LEGEND + '; broker us: the broker\'s CPU time a message; msg/frame: messages a'
        ' Publish frame (--frames), msg/chunk: a chunk of the stream (--chunks);'
        ' latency of each message (single) or batch (batch)'
    )
    return '\n'.join(lines)


def _lat(lat: JsonDict, key: str) -> str:
    value = lat.get(key)
    return '-' if value is None else '{:,.0f}'.format(value)


def targets(doc: JsonDict) -> list[Target]:
    res = doc['results']

    def impl(key: str, name: str) -> JsonDict | None:
        entry: JsonDict | None = res.get(key, {}).get('implementations', {}).get(name)
        return entry

    batch_ratio = ratio(ok_rate(impl('batch/amqp', 'rbfly')), ok_rate(impl('batch/amqp', BASELINE)))
    java_single = ok_rate(impl('single/amqp', 'java'))
    if java_single is not None:
        single_goal = java_single
        single_note = 'the Java stream client, median measured in this run'
    else:
        single_goal = JAVA_SINGLE_RATE
        single_note = 'official Java stream-perf-test tool; java not measured in this run'
    batch_note = 'same run'
    ceiling = best_ceiling(res.get('batch/amqp', {}).get('implementations', {}))
    base = ok_rate(impl('batch/amqp', BASELINE))
    rbfly = ok_rate(impl('batch/amqp', 'rbfly'))
    if batch_ratio is not None and batch_ratio < BATCH_RATIO and ceiling and base and rbfly \
            and BATCH_RATIO * base > ceiling:
        batch_note += "; the goal asks for {} msg/s, above the broker's ceiling of {} msg/s;" \
            ' measured {} of the ceiling'.format(
                format_rate(BATCH_RATIO * base), format_rate(ceiling),
                format_share(rbfly / ceiling),
            )
    pipelined = ok_rate(impl('pipelined/amqp', 'rbfly'))
    pipelined_ceiling = best_ceiling(res.get('pipelined/amqp', {}).get('implementations', {}))
    pipelined_note = ''
    if pipelined is not None and pipelined < PIPELINED_RATE and pipelined_ceiling \
            and pipelined_ceiling < PIPELINED_RATE:
        pipelined_note = "the broker's ceiling in this run: {} msg/s; measured {} of it".format(
            format_rate(pipelined_ceiling), format_share(pipelined / pipelined_ceiling),
        )
    return [
        Target(
            'single publish (AMQP), rbfly', single_goal, 'msg/s',
            ok_rate(impl('single/amqp', 'rbfly')), single_note,
        ),
        Target(
            'batches of 100 (AMQP), rbfly / ' + BASELINE, BATCH_RATIO, 'x', batch_ratio,
            batch_note,
        ),
        Target(
            'pipelined (AMQP), rbfly', PIPELINED_RATE, 'msg/s', pipelined, pipelined_note,
        ),
    ]


#
# command line
#
