"""
Plot the JSON results of the RbFly benchmarks (``--json`` of
``perf.publish``, ``perf.consume``, ``perf.codec`` and of
anything writing the same schema, like ``perf.java_client``).

Files of the same benchmark kind are merged first (see ``perf.report.tables``), so
results of a separate run, e.g. the Java client's, appear next to the
Python clients.  Drawn per kind, into the output directory:

``publish.png``, ``consume.png``, ``codec.png``
    Rates in the style of the RbFly 0.10 performance report: one panel per
    scenario, one box per implementation showing the rates of all rounds,
    the median written above it.
``publish-latency.png``
    Latency percentiles (p50, p95, p99) of single message and batch
    publishing: the rates alone hide whether a client is slow on every
    message or only now and then.
``cpu.png``
    Client CPU time per message, per scenario and implementation: on a
    shared 2-core machine the rate also depends on what else runs, the CPU
    cost of a message much less.

Every figure names the broker, the event loop, the rounds and the date of
the runs it shows.

Examples::

    python -m perf.report.plot perf/results/publish.json     # -> perf/results/publish.png
    python -m perf.report.plot perf/results/*.json --format svg --output-dir doc/_static
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perf.common.results import JsonDict, log
from perf.report.tables import KINDS, caption, load_groups

COLOURS = {
    'rbfly': '#1f77b4',
    'rbfly-chunks': '#17becf',
    'rbfly-subentry': '#aec7e8',
    'rbfly-anonymous': '#9edae5',
    'rbfly-spin': '#c5b0d5',
    'rbfly-nopause': '#dbdb8d',
    'rbfly-linger1': '#393b79',
    'rbfly-0.10': '#7f7f7f',
    'rstream': '#ff7f0e',
    'aiokafka': '#2ca02c',
    'proton': '#9467bd',
    'java': '#d62728',
    'ceiling-polling': '#e7ba52',
}
OTHER_COLOUR = '#bcbd22'
CPU_WIDTH = 6   # inches per panel of cpu.png

Panel = tuple[str, list[tuple[str, list[float]]]]   # title, (label, rates of the rounds)
Series = tuple[str, list[float | None]]              # implementation, value per group


def _ok(impls: JsonDict) -> list[tuple[str, JsonDict]]:
    return [(n, r) for n, r in impls.items() if r.get('status') == 'ok']


def _publish_title(res: JsonDict) -> str:
    if res['scenario'] == 'batch':
        return 'batch of {} ({})'.format(res['batch'], res['format'])
    return '{} ({})'.format(res['scenario'], res['format'])


def publish_panels(doc: JsonDict) -> list[Panel]:
    return [
        (_publish_title(res), [(n, r['rates']) for n, r in _ok(res['implementations'])])
        for res in doc['results'].values()
    ]


def consume_panels(doc: JsonDict) -> list[Panel]:
    return [
        (_consume_title(variant, res),
         [(n, r['rates']) for n, r in _ok(res['implementations'])])
        for variant, res in doc['results'].items()
    ]


def _consume_title(variant: str, res: JsonDict) -> str:
    how = 'batch-published' if variant == 'batch' else variant
    return '{} stream, chunks of ~{:,.0f}'.format(how, res['chunk_mean'])


def codec_panels(doc: JsonDict) -> list[Panel]:
    return [
        ('AMQP 1.0 {}'.format(op),
         [(n, r[op]['rates']) for n, r in _ok(doc['results']) if op in r])
        for op in ('encode', 'decode')
    ]


PANELS = {
    'publish': publish_panels,
    'consume': consume_panels,
    'amqp-codec': codec_panels,
}


#
# figures
#

def _figure(panels: int, title: str, width: float = 4.2, height: float = 4.4) -> tuple[Any, Any]:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    # panels one above the other, each as wide as the documentation's
    # column (6.2 in at 120 dpi: 744 px, drawn about 1:1 in the report at
    # 1280 px), so that the legends read without enlarging the figure
    column = 6.2
    fig, axes = plt.subplots(
        panels, 1, figsize=(column, height * width / column * panels * 0.8 + 0.4),
        squeeze=False,
    )
    fig.suptitle(textwrap.fill(title, int(column * 17)), fontsize=8)
    return fig, axes[:, 0]


def _save(fig: Any, output: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    # bbox_inches: the legends stand right of the panels (legend_outside)
    fig.savefig(output, dpi=120, bbox_inches='tight')
    plt.close(fig)
    return output


def plot_rates(doc: JsonDict, output: Path) -> Path:
    """Box plot of the rates of the rounds, a panel per scenario."""
    panels = [p for p in PANELS[doc['benchmark']](doc) if p[1]]
    if not panels:
        raise ValueError('no results to plot')
    fig, axes = _figure(len(panels), caption(doc))
    # the codec rates span two orders of magnitude: a log scale keeps the
    # slow implementations visible
    log_scale = doc['benchmark'] == 'amqp-codec'
    for ax, (title, boxes) in zip(axes, panels, strict=True):
        _box_panel(ax, title, boxes, log_scale)
    return _save(fig, output)


def _box_panel(ax: Any, title: str, boxes: Sequence[tuple[str, list[float]]], log: bool) -> None:
    labels = [name for name, _ in boxes]
    data = [rates for _, rates in boxes]
    parts = ax.boxplot(
        data, patch_artist=True, widths=0.6, medianprops={'color': 'black', 'linewidth': 1.5},
    )
    # names as long as rbfly-anonymous overlap their neighbours unless slanted
    ax.set_xticks(
        range(1, len(labels) + 1), labels, rotation=35, ha='right', rotation_mode='anchor',
        fontsize=8,
    )
    for patch, name in zip(parts['boxes'], labels, strict=True):
        patch.set_facecolor(COLOURS.get(name, OTHER_COLOUR))
        patch.set_alpha(0.8)
    for i, rates in enumerate(data, start=1):
        ax.annotate(
            _short(statistics.median(rates)), (i, max(rates)), textcoords='offset points',
            xytext=(0, 4), ha='center', fontsize=8,
        )
    top = max(max(rates) for rates in data)
    if log:
        ax.set_yscale('log')
        ax.set_ylim(min(min(rates) for rates in data) / 2, top * 3)
    else:
        ax.set_ylim(0, top * 1.15)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel('implementation', fontsize=8)
    ax.set_ylabel('messages per second' + (' (log scale)' if log else ''))
    ax.grid(axis='y', alpha=0.3)
    ax.yaxis.set_major_formatter(_formatter())


def plot_latency(doc: JsonDict, output: Path) -> Path | None:
    """Grouped bars of the latency percentiles, a panel per scenario with latency."""
    panels = []
    for res in doc['results'].values():
        ok = [(n, r['latency']) for n, r in _ok(res['implementations']) if r.get('latency')]
        if not ok:
            continue
        unit = ok[0][1].get('unit', 'message')
        series: list[Series] = [
            (n, [lat.get(p) for p in ('p50_us', 'p95_us', 'p99_us')]) for n, lat in ok
        ]
        panels.append((_publish_title(res), unit, series))
    if not panels:
        return None
    names = sorted({n for _, _, series in panels for n, _ in series})
    fig, axes = _figure(len(panels), 'Publishing latency — ' + caption(doc, names), 5.2)
    for ax, (title, unit, series) in zip(axes, panels, strict=True):
        _bar_panel(
            ax, ['p50', 'p95', 'p99'], series, 'latency per {}, µs'.format(unit),
            '{}: latency per {}'.format(title, unit), 'percentile',
        )
    return _save(fig, output)


def plot_cpu(groups: dict[str, JsonDict], output: Path) -> Path | None:
    """Grouped bars of the client CPU time per message, a panel per benchmark."""
    panels = []
    for kind in ('publish', 'consume'):
        doc = groups.get(kind)
        if doc is None:
            continue
        scenarios = [
            _publish_title(res) if kind == 'publish' else _consume_title(key, res)
            for key, res in doc['results'].items()
        ]
        names: list[str] = []
        for res in doc['results'].values():
            names.extend(n for n, _ in _ok(res['implementations']) if n not in names)
        series: list[Series] = [
            (name, [
                _get(res['implementations'].get(name), 'cpu_us_per_msg')
                for res in doc['results'].values()
            ])
            for name in names
        ]
        series = [s for s in series if any(v is not None for v in s[1])]
        if series:
            title = '{}: client CPU\n{}'.format(
                'publishing' if kind == 'publish' else 'consuming',
                textwrap.fill(caption(doc, names), CPU_WIDTH * 15),
            )
            panels.append((title, scenarios, series))
    if not panels:
        return None
    fig, axes = _figure(len(panels), 'Client CPU time per message (time.process_time of'
                        ' the client process / messages; median of the rounds)', CPU_WIDTH, 4.8)
    for ax, (title, scenarios, series) in zip(axes, panels, strict=True):
        _bar_panel(ax, scenarios, series, 'client CPU µs per message', title, 'scenario')
    return _save(fig, output)


def _get(entry: JsonDict | None, key: str) -> float | None:
    if not entry or entry.get('status') != 'ok' or entry.get(key) is None:
        return None
    return float(entry[key])


def _bar_panel(
        ax: Any, groups: Sequence[str], series: Sequence[Series], ylabel: str, title: str,
        xlabel: str,
) -> None:
    """
    Bars of ``series`` (one colour per implementation) in ``groups``; a log
    scale when the values span more than 20x, else small ones would vanish.
    """
    values = [v for _, vs in series for v in vs if v is not None and v > 0]
    if not values:
        return
    width = 0.8 / len(series)
    crowded = len(series) > 4   # horizontal labels of neighbouring bars would overlap
    missing: list[float] = []   # no bar: say so rather than leave a gap
    for i, (name, vs) in enumerate(series):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        known = [(x, v) for x, v in zip(xs, vs, strict=True) if v is not None]
        missing.extend(x for x, v in zip(xs, vs, strict=True) if v is None)
        bars = ax.bar(
            [x for x, _ in known], [v for _, v in known], width * 0.92, label=name,
            color=COLOURS.get(name, OTHER_COLOUR), alpha=0.85,
        )
        ax.bar_label(
            bars, [_short(v) for _, v in known], fontsize=6.5, padding=1,
            rotation=90 if crowded else 0,
        )
    low, high = min(values), max(values)
    if high / low > 20:
        ax.set_yscale('log')
        ax.set_ylim(low / 2, high * 2)   # room for the bars' labels
        ax.yaxis.set_major_formatter(_formatter())
        ylabel += ' (log scale)'
    else:
        ax.set_ylim(0, high * 1.15)
    for x in missing:
        ax.text(x, ax.get_ylim()[0], 'n/a', ha='center', va='bottom', fontsize=6.5)
    ax.set_xticks(range(len(groups)), groups, fontsize=8)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=8)
    ax.grid(axis='y', alpha=0.3)
    legend_outside(ax, 7)


def legend_outside(ax: Any, fontsize: float) -> None:
    """
    The legend of ``ax`` right of it, not over its bars (inside, it hid
    the tallest bars and their labels).
    """
    ax.legend(fontsize=fontsize, loc='upper left', bbox_to_anchor=(1.01, 1.0),
              borderaxespad=0.0, frameon=False)


def _short(value: float) -> str:
    """About three significant digits: ``4.07k``, ``151k``, ``1.11M``, ``0.47``."""
    for scale, suffix in ((1e6, 'M'), (1e3, 'k'), (1, '')):
        if value >= scale:
            v = value / scale
            digits = max(0, 2 - math.floor(math.log10(v)))
            return '{:.{}f}{}'.format(v, digits, suffix)
    return '{:.2f}'.format(value)


def _tick(value: float) -> str:
    """Axis label without trailing zeros: ``500k``, ``1M``, ``2.5M``, ``0.5``."""
    for scale, suffix in ((1e6, 'M'), (1e3, 'k'), (1, '')):
        if value >= scale:
            return '{:g}{}'.format(value / scale, suffix)
    return '{:g}'.format(value)


def _formatter() -> Any:
    from matplotlib.ticker import FuncFormatter
    return FuncFormatter(lambda v, _: _tick(v) if v > 0 else '0')


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog='python -m perf.report.plot',
        description='Plot RbFly benchmark results (JSON); files of the same benchmark'
                    ' are merged',
    )
    parser.add_argument('json', nargs='+', type=Path, help='result files')
    parser.add_argument(
        '--format', default='png', choices=('png', 'svg', 'pdf'), help='image format',
    )
    parser.add_argument(
        '--output-dir', type=Path,
        help='directory of the images (default: the directory of the first JSON file)',
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    out_dir: Path = args.output_dir or args.json[0].parent
    try:
        groups = load_groups(args.json)
    except (OSError, ValueError, KeyError) as ex:
        log('plot: {}'.format(ex))
        return 1
    status = 0
    def path(name: str) -> Path:
        return out_dir / '{}.{}'.format(name, args.format)

    for kind, doc in groups.items():
        try:
            outputs: list[Path | None] = [plot_rates(doc, path(KINDS[kind]))]
            if kind == 'publish':
                outputs.append(plot_latency(doc, path('publish-latency')))
        except (ValueError, KeyError) as ex:
            log('plot: {}: {}'.format(kind, ex))
            status = 1
            continue
        for out in outputs:
            if out is not None:
                log('plot: {}'.format(out))
    try:
        cpu = plot_cpu(groups, path('cpu'))
    except (ValueError, KeyError) as ex:
        log('plot: cpu: {}'.format(ex))
        status = 1
    else:
        if cpu is not None:
            log('plot: {}'.format(cpu))
    return status


if __name__ == '__main__':
    sys.exit(main())
