"""``qcrypto history --html``: one self-contained HTML page of a history's series.

The page has no script at all and loads nothing: its style and every chart (inline SVG) are
in the file, and its Content-Security-Policy (``default-src 'none'``) forbids any script,
frame, font or request, so it opens from disk, from a CI artifact, in any browser.  An
overview table gives each cell's latest figure, its change at its latest step, its verdict
and a small trend line; then one ``<svg class="chart">`` per cell: each run's figure (the
median round's) with its spread (a bar from the slowest to the fastest round), the level of
each segment between steps, and each step as a dashed line labelled with the commits on
either side.  Hovering a point shows its run, commit, time and figures (SVG ``<title>``; up to
:data:`MAX_MARKERS` runs a chart).

Every string that comes from a results file (plugin and library names, versions, machine
names, commits, file names) is escaped (:func:`html.escape`, quotes included) before it is
written: nothing in a file can act in the page.  Nothing here imports pytest.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

#: The page's Content-Security-Policy: nothing but its own inline style.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
#: A chart's size in CSS pixels, and its margins (left, right, top, bottom).
WIDTH, HEIGHT = 760, 250
LEFT, RIGHT, TOP, BOTTOM = 90, 20, 30, 40
#: A chart of more runs than this draws no marker per run (no hover text): its points are
#: then one line and its spreads one path, so that a page of 300 cells of 1,000 runs stays
#: a few megabytes; the steps keep their labels.
MAX_MARKERS = 200
#: The trend line's size in the overview.
SPARK_W, SPARK_H = 120, 24
STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:20px}h2{font-size:16px;margin:28px 0 4px}
table{border-collapse:collapse}td,th{padding:3px 8px;border-bottom:1px solid #ddd;
text-align:left;vertical-align:middle}td.n{text-align:right;font-variant-numeric:tabular-nums}
.regression,.below-floor{color:#b00020;font-weight:bold}.speed-up{color:#1b7a1b}
.machine{color:#666;font-size:12px}svg text{font:11px system-ui,sans-serif;fill:#444}
.steps{margin:4px 0 0 0;padding-left:20px;font-size:13px}
"""


@dataclass(frozen=True)
class Chart:
    """One cell on the page.

    ``points``: per run, ``(run label, commit, created, figure, low, high)``, the figures in
    ``unit`` (KiB/s or ops/s): the median round's, the slowest and fastest round's.
    ``steps``: ``(index of the first point after it, change (-0.2: 20% slower), the commits
    on either side, what else changed)``.  ``verdict``: regression, below floor, speed-up
    or steady; ``latest``: the latest figure; ``change``: the latest step's (None: none).
    """

    title: str
    machine: str
    unit: str
    points: Sequence[tuple[str, str, str, float, float, float]]
    steps: Sequence[tuple[int, float, str, str]]
    verdict: str
    latest: float
    change: float | None


def esc(text: object) -> str:
    """Text from a file made inert in HTML: ``&``, ``<``, ``>`` and both quotes escaped."""
    return html.escape(str(text), quote=True)


def _scale(lo: float, hi: float, top: float, bottom: float):  # type: ignore[no-untyped-def]
    span = (hi - lo) or abs(hi) * 0.01 or 1.0
    return lambda v: bottom - (v - lo) / span * (bottom - top)


def sparkline(chart: Chart) -> str:
    """The overview's trend line: the figures, oldest left, scaled to their range."""
    figures = [p[3] for p in chart.points]
    y = _scale(min(figures), max(figures), 2, SPARK_H - 2)
    step = (SPARK_W - 4) / max(len(figures) - 1, 1)
    xy = " ".join(f"{2 + i * step:.1f},{y(f):.1f}" for i, f in enumerate(figures))
    return (f'<svg class="spark" width="{SPARK_W}" height="{SPARK_H}" role="img">'
            f'<polyline points="{xy}" fill="none" stroke="#3465a4" stroke-width="1.5"/></svg>')


def chart_svg(chart: Chart, number: int) -> str:
    """One cell's chart (module doc), ``class="chart"``."""
    pts = chart.points
    lo = min(p[4] for p in pts)
    hi = max(p[5] for p in pts)
    pad = (hi - lo) * 0.08 or hi * 0.01 or 1.0
    y = _scale(lo - pad, hi + pad, TOP, HEIGHT - BOTTOM)
    inner = WIDTH - LEFT - RIGHT
    dx = inner / max(len(pts) - 1, 1)
    x = [LEFT + (i * dx if len(pts) > 1 else inner / 2) for i in range(len(pts))]
    out = [f'<svg class="chart" id="chart-{number}" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{esc(chart.title)}">',
           f'<rect x="{LEFT}" y="{TOP}" width="{inner}" height="{HEIGHT - TOP - BOTTOM}" '
           'fill="#fafafa" stroke="#ccc"/>']
    for v in (lo, (lo + hi) / 2, hi):
        out.append(f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:,.2f}</text>')
    out.append(f'<text x="{LEFT}" y="{HEIGHT - BOTTOM + 16}">{esc(pts[0][0])}</text>')
    out.append(f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - BOTTOM + 16}" text-anchor="end">'
               f'{esc(pts[-1][0])}</text>')
    out.append(f'<text x="{LEFT}" y="{HEIGHT - 6}">{esc(chart.unit)}, median round; bars: '
               'slowest to fastest round</text>')
    bounds = [0, *[s[0] for s in chart.steps], len(pts)]
    for a, b in zip(bounds, bounds[1:]):  # each segment's level: its median figure
        level = sorted(p[3] for p in pts[a:b])[(b - a) // 2]
        out.append(f'<line x1="{x[a]:.1f}" x2="{x[b - 1]:.1f}" y1="{y(level):.1f}" '
                   f'y2="{y(level):.1f}" stroke="#e9b96e" stroke-width="3"/>')
    for index, change, commits, _ in chart.steps:
        sx = (x[index - 1] + x[index]) / 2
        colour = "#b00020" if change < 0 else "#1b7a1b"
        out.append(f'<line x1="{sx:.1f}" x2="{sx:.1f}" y1="{TOP}" y2="{HEIGHT - BOTTOM}" '
                   f'stroke="{colour}" stroke-dasharray="4 3"/>')
        out.append(f'<text x="{sx + 3:.1f}" y="{TOP - 6}" fill="{colour}">{change * 100:+.1f}% '
                   f'{esc(commits)}</text>')
    xy = " ".join(f"{x[i]:.1f},{y(p[3]):.1f}" for i, p in enumerate(pts))
    bars = "".join(f"M{x[i]:.1f} {y(p[4]):.1f}V{y(p[5]):.1f}" for i, p in enumerate(pts))
    out.append(f'<path d="{bars}" stroke="#729fcf" fill="none"/>')
    out.append(f'<polyline points="{xy}" fill="none" stroke="#3465a4" stroke-width="1"/>')
    if len(pts) <= MAX_MARKERS:
        for i, (label, commit, created, figure, low, high) in enumerate(pts):
            tip = (f"{label}, {commit}, {created}: {figure:,.2f} {chart.unit} (slowest round "
                   f"{low:,.2f}, fastest {high:,.2f})")
            out.append(f'<circle cx="{x[i]:.1f}" cy="{y(figure):.1f}" r="3" fill="#204a87">'
                       f'<title>{esc(tip)}</title></circle>')
    out.append("</svg>")
    return "".join(out)


def _verdict(chart: Chart) -> str:
    return f'<span class="{esc(chart.verdict.replace(" ", "-"))}">{esc(chart.verdict)}</span>'


def page(charts: Sequence[Chart], title: str, notes: Sequence[str] = ()) -> str:
    """The whole page (module doc); ``notes`` are lines shown under the title (files left
    out, runs read)."""
    rows = []
    for i, c in enumerate(charts):
        change = "" if c.change is None else f"{c.change * 100:+.1f}%"
        rows.append(f'<tr><td><a href="#cell-{i}">{esc(c.title)}</a>'
                    f'<div class="machine">{esc(c.machine)}</div></td>'
                    f'<td class="n">{c.latest:,.2f} {esc(c.unit)}</td><td class="n">{change}'
                    f'</td><td>{_verdict(c)}</td><td>{sparkline(c)}</td></tr>')
    sections = []
    for i, c in enumerate(charts):
        steps = "".join(
            f"<li>{change * 100:+.1f}% between {esc(commits)}"
            + (f"; also changed: {esc(also)}" if also else "") + "</li>"
            for _, change, commits, also in c.steps)
        sections.append(f'<section id="cell-{i}"><h2>{esc(c.title)} {_verdict(c)}</h2>'
                        f'<div class="machine">{esc(c.machine)}</div>{chart_svg(c, i)}'
                        + (f'<ul class="steps">{steps}</ul>' if steps else "") + "</section>")
    note_html = "".join(f"<p>{esc(n)}</p>" for n in notes)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>"
            f"<h1>{esc(title)}</h1>{note_html}"
            "<table><thead><tr><th>cell</th><th>latest</th><th>latest step</th>"
            "<th>verdict</th><th>trend</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>" + "".join(sections) + "</body></html>\n")
