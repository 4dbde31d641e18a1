"""Plots of throughput against buffer size, for each table: PNG, SVG or one HTML page.

One panel per table (algorithm and direction); in each, one line per row of
the table (a plugin, or a machine and plugin in a joined report), the buffer
size on a log-2 axis in bytes, the cell's unit on a log-10 axis (so 16-byte
and 16-KiB figures, which differ a thousandfold, are both readable).  Each
point has an error bar from its fastest to its slowest round; a cell the
regression gate judged a regression is ringed in red.  Rows of a baseline (a
compared run) are drawn dashed in the colour of the same row.
The HTML page is self-contained: the plots as inline SVG (glyphs drawn as
paths, no fonts or scripts loaded) and the tables as text.

matplotlib is an optional dependency: ``pip install matplotlib`` (:data:`INSTALL_HINT`).
It is imported only when a plot is asked for; :func:`check_path` imports it
before anything is measured and says, with that command, when it is missing or
fails to import.
"""

from __future__ import annotations

import html
import importlib.util
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_qcrypto.results import files
from pytest_qcrypto.output.render import PLOT_SUFFIXES, UNITS, Changes, Plotter, Table
from pytest_qcrypto.output.tables import OPS_UNIT
from pytest_qcrypto.algorithms.settings import SettingsError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: What to install when matplotlib is missing: a command that works wherever the package came
#: from (a clone, a wheel; it is not on PyPI, so ``pytest-qcrypto[plot]`` would fail), the
#: plot extra being matplotlib alone (``tests/test_plot.py`` checks pyproject.toml).
INSTALL_HINT = "pip install matplotlib (or, from a clone, pip install '.[plot]')"
#: Inches per panel (width, height), and panels per row when there are more than two.
PANEL_SIZE = (6.4, 3.6)
COLUMNS = 2
#: The mark a regressed cell's text ends with in the gate's change grid (``gate.MARKS``).
REGRESSION_MARK = "!"
#: Colour of the ring around a regressed point.
REGRESSION_COLOUR = "red"


class PlotError(RuntimeError):
    """A plot cannot be made (matplotlib missing, nothing to draw)."""


def check_path(path: str) -> None:
    """Raise :class:`SettingsError` unless ``path`` has a known suffix and matplotlib imports
    (:func:`check_matplotlib`)."""
    suffix = Path(path).suffix.lower()
    if suffix not in PLOT_SUFFIXES:
        raise SettingsError(f"--qcrypto-plot: {path!r} must end in "
                            f"{', '.join(PLOT_SUFFIXES[:-1])} or {PLOT_SUFFIXES[-1]}")
    check_matplotlib()


def check_matplotlib() -> None:
    """Raise :class:`SettingsError` unless matplotlib is installed and imports, with the
    modules a plot uses (the figure, and the Agg and SVG backends that draw it).

    Called before anything is measured: an installed matplotlib that fails to
    import (a missing shared library, a broken install) is named with its own
    error, not found after the run.  No backend is selected (``matplotlib.use``
    is not called), so tests that use pyplot keep theirs.
    """
    if importlib.util.find_spec("matplotlib") is None:
        raise SettingsError(f"--qcrypto-plot needs matplotlib, which is not installed: "
                            f"{INSTALL_HINT}")
    try:
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.backends.backend_svg  # noqa: F401
        import matplotlib.figure  # noqa: F401
        import matplotlib.ticker  # noqa: F401
    except Exception as exc:  # ImportError, or whatever a broken install raises
        problem = f"{type(exc).__name__}: {exc}"
    else:
        return
    raise SettingsError(f"--qcrypto-plot needs matplotlib, which is installed but failed to "
                        f"import: {problem} (reinstall it: {INSTALL_HINT})")


def check_writable(path: str) -> None:
    """Raise :class:`SettingsError` unless a file can be written at ``path`` (as typed).

    Checked before a run starts, as for ``--qcrypto-save``
    (:func:`.files.check_writable`, which creates and removes a probe file):
    not an existing directory or other non-regular file, in a directory that
    exists (none is created: a mistyped one would be) and takes a new file.
    """
    problem = _file_as_directory(Path(path)) or files.check_writable(Path(path))
    if problem:
        raise SettingsError(f"--qcrypto-plot: cannot write {path}: {problem}")


def _file_as_directory(path: Path) -> str | None:
    """``/etc/hostname is a file, not a directory`` when an ancestor of ``path`` is not one."""
    for parent in path.absolute().parents:
        if parent.exists():
            return None if parent.is_dir() else f"{parent} is a file, not a directory"
    return None


def _axis_label(unit: str) -> str:
    if unit == "ns/op":
        return "time per operation (ns/op)"
    if unit == "ops/s":
        return "operations per second (ops/s)"
    return f"throughput ({UNITS[unit].label})"


def _title(table: Table) -> str:
    return table.algorithm + (f", {table.direction}" if table.direction in ("decrypt", "roundtrip")
                              else "")


def _points(table: Table, row: str, unit: str) -> tuple[list[int], list[float]]:
    """The measured sizes (bytes) of one row and their values in ``unit``."""
    xs: list[int] = []
    ys: list[float] = []
    for size in table.columns:  # sizes, or a size-less table's operations
        cell = table.cells.get((row, size))
        if cell is not None and cell.measurement is not None:
            xs.append(size)
            ys.append(UNITS[unit].of(cell.measurement))
    return xs, ys


def _spread(table: Table, row: str, unit: str) -> tuple[list[int], list[float], list[float]]:
    """The sizes (bytes) of one row's points with two or more real rounds, and the lowest and
    highest value in ``unit`` of their fastest and slowest round (a figure rebuilt from saved
    results without rounds, or one round, has no spread)."""
    xs: list[int] = []
    low: list[float] = []
    high: list[float] = []
    for size in table.columns:
        cell = table.cells.get((row, size))
        m = cell.measurement if cell is not None else None
        if m is None or m.figure_only or len(m.rounds_s) < 2:
            continue
        ends = [UNITS[unit].of(replace(m, rounds_s=(s,), cpu_s=()))
                for s in (min(m.rounds_s), max(m.rounds_s))]
        xs.append(size)
        low.append(min(ends))
        high.append(max(ends))
    return xs, low, high


def regressed(changes: Changes | Sequence[str] | None, row: str) -> set[int]:
    """The sizes (bytes) of ``row`` that the gate's change grid marks as regressions
    (``-12.4%!``); none for lines already drawn or no grid."""
    if not isinstance(changes, Changes):
        return set()
    return {size for (p, size), text in changes.texts.items()
            if p == row and text.endswith(REGRESSION_MARK)}


def gid(table: Table, row: str, baseline: bool = False, kind: str = "qcrypto") -> str:
    """The id of a line in the SVG: ``qcrypto-sha256-digest-openssl`` (``-baseline``); with
    ``kind`` ``spread`` its error bars, ``regression`` its regression marks."""
    text = f"{kind}-{table.algorithm}-{table.direction}-{row}" + ("-baseline" if baseline else "")
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)


def figure(tables: Sequence[Table], unit: str = "KiB/s",
           baseline: Sequence[Table] = (),
           changes: Mapping[tuple[str, str], Changes | Sequence[str]] | None = None) -> Figure:
    """A matplotlib figure (no pyplot state): one panel per table, one line per row.

    The value axis is logarithmic in every unit.  Each point of this run has an
    error bar (a vertical line, SVG group ``spread-...``) from its fastest to
    its slowest round; ``changes`` (a table's key to the gate's change grid, as
    :func:`pytest_qcrypto.output.render.write_files` passes) rings each regressed
    point in red (group ``regression-...``, legend "regression").

    Raises :class:`PlotError` when there is no table or matplotlib is missing.
    """
    if not tables:
        raise PlotError("no results to plot")
    try:
        from matplotlib.figure import Figure
        from matplotlib.ticker import NullLocator
    except ImportError as exc:
        raise PlotError(f"matplotlib is not installed ({exc}): {INSTALL_HINT}") from None

    columns = 1 if len(tables) <= 2 else COLUMNS
    rows = -(-len(tables) // columns)
    fig = Figure(figsize=(PANEL_SIZE[0] * columns, PANEL_SIZE[1] * rows), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    base = {(t.algorithm, t.direction): t for t in baseline}
    for ax, table in zip(axes, tables):
        if not table.sized:  # signatures, KEMs, KDFs: bars per operation, in ops/s
            bars(ax, table, base.get(table.key), (changes or {}).get(table.key))
            continue
        colours: dict[str, Any] = {}
        marked = False
        for row in table.plugins:
            xs, ys = _points(table, row, unit)
            if not xs:
                continue
            (line,) = ax.plot(xs, ys, marker="o", label=row, gid=gid(table, row))
            colours[row] = line.get_color()
            bx, low, high = _spread(table, row, unit)
            if bx:
                ax.vlines(bx, low, high, colors=colours[row], linewidth=1.5,
                          gid=gid(table, row, kind="spread"))
            worse = regressed((changes or {}).get(table.key), row)
            if worse:
                at = [(x, y) for x, y in zip(xs, ys) if x in worse]
                ax.plot([x for x, _ in at], [y for _, y in at], linestyle="none", marker="o",
                        markersize=13, markerfacecolor="none", markeredgewidth=2,
                        markeredgecolor=REGRESSION_COLOUR, zorder=3,
                        label="_nolegend_" if marked else "regression",
                        gid=gid(table, row, kind="regression"))
                marked = True
        old = base.get((table.algorithm, table.direction))
        for row in old.plugins if old is not None else ():
            xs, ys = _points(old, row, unit)
            if xs:
                ax.plot(xs, ys, linestyle="--", marker=".", color=colours.get(row),
                        label=f"{row} (baseline)", gid=gid(table, row, baseline=True))
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(table.sizes), [str(s) for s in table.sizes])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_yscale("log")  # figures span decades across sizes, in every unit
        ax.set_xlabel("buffer size (bytes)")
        ax.set_ylabel(_axis_label(unit))
        ax.set_title(_title(table))
        ax.grid(True, which="major", alpha=0.3)
        ax.grid(True, which="minor", axis="y", alpha=0.1)
        if ax.lines:
            ax.legend(fontsize="small")
        else:
            ax.text(0.5, 0.5, "nothing measured", ha="center", va="center",
                    transform=ax.transAxes)
    for ax in axes[len(tables):]:
        ax.set_visible(False)
    return fig


def bars(ax: Any, table: Table, old: Table | None,
         changes: Changes | Sequence[str] | None) -> None:
    """A size-less table as a bar chart on ``ax``: a group per operation, a bar per plugin
    (SVG id ``bar-ALGORITHM-OPERATION-PLUGIN``) in ops/s on a linear axis from zero, so that
    bar lengths compare (a log axis cut at its bottom made a 20% gap look 4x), each bar
    labelled with its figure so that a short one still reads; an error bar from its
    fastest to its slowest round (``spread-...``), a regressed bar edged in red, the
    baseline's figure as a dashed outline (``bar-...-baseline``)."""
    unit, ops = OPS_UNIT, list(table.operations)
    width = 0.8 / max(len(table.plugins), 1)
    for i, row in enumerate(table.plugins):
        xs, ys = _points(table, row, unit)
        at = [ops.index(x) - 0.4 + width * (i + 0.5) for x in xs]
        if not xs:
            continue
        worse = regressed(changes, row)
        drawn = ax.bar(at, ys, width, label=row)
        ax.bar_label(drawn, fmt="%.0f", fontsize="x-small", padding=2)
        colour = drawn.patches[0].get_facecolor()
        for rect, op in zip(drawn.patches, xs):
            rect.set_gid(re.sub(r"[^A-Za-z0-9_.-]", "_", f"bar-{table.algorithm}-{op}-{row}"))
            if op in worse:
                rect.set_edgecolor(REGRESSION_COLOUR)
                rect.set_linewidth(2)
        bx, low, high = _spread(table, row, unit)
        if bx:
            ax.vlines([at[xs.index(x)] for x in bx], low, high, colors="black", linewidth=1,
                      gid=gid(table, row, kind="spread"))
        before = old.cells if old is not None else {}
        for x, pos in zip(xs, at):
            cell = before.get((row, x))
            if cell is not None and cell.measurement is not None:
                ax.bar([pos], [UNITS[unit].of(cell.measurement)], width, fill=False,
                       linestyle="--", edgecolor=colour, gid=re.sub(
                           r"[^A-Za-z0-9_.-]", "_", f"bar-{table.algorithm}-{x}-{row}-baseline"))
    ax.set_xticks(range(len(ops)), ops)
    ax.set_ylim(bottom=0)
    ax.margins(y=0.12)  # room for the labels above the tallest bar
    ax.set_xlabel("operation")
    ax.set_ylabel(_axis_label(unit))
    ax.set_title(table.algorithm + (f" ({table.params})" if table.params else ""))
    ax.grid(True, which="major", axis="y", alpha=0.3)
    if ax.patches:
        ax.legend(fontsize="small")
    else:
        ax.text(0.5, 0.5, "nothing measured", ha="center", va="center", transform=ax.transAxes)


def svg_text(fig: Figure) -> str:
    """The figure as an SVG document."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


def html_page(fig: Figure, title: str = "qcrypto speed", text: Sequence[str] = ()) -> str:
    """A self-contained page: the figure as inline SVG, then ``text`` (the tables) preformatted."""
    svg = svg_text(fig)
    svg = svg[svg.index("<svg"):]  # drop the XML prolog and the DOCTYPE (it names a URL)
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    pre = f"<pre>{html.escape(chr(10).join(text))}</pre>\n" if text else ""
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title)}</title>\n"
            "<style>body{font-family:sans-serif;margin:1em}svg{max-width:100%;height:auto}"
            "</style>\n</head>\n<body>\n"
            f"<h1>{html.escape(title)}</h1>\n{svg}\n{pre}</body>\n</html>\n")


def write(path: str | Path, tables: Sequence[Table], unit: str = "KiB/s",
          baseline: Sequence[Table] = (), text: Sequence[str] = (),
          changes: Mapping[tuple[str, str], Changes | Sequence[str]] | None = None) -> Path:
    """Plot ``tables`` to ``path`` (.png, .svg or .html, by its suffix); the path written.

    The directory must exist.  ``text`` lines are shown under the plots of an
    HTML page; ``changes`` mark regressions (:func:`figure`).  The whole file is drawn in memory, then written atomically
    (:func:`pytest_qcrypto.results.files.write_atomic`): never a half-written plot.
    Raises :class:`PlotError` (no matplotlib, nothing to plot, unknown
    suffix) or ``OSError``.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in PLOT_SUFFIXES:
        raise PlotError(f"unknown plot suffix {suffix!r}: use {', '.join(PLOT_SUFFIXES)}")
    fig = figure(tables, unit, baseline, changes)
    if suffix == ".png":
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100)
        data = buf.getvalue()
    else:
        page = svg_text(fig) if suffix == ".svg" else html_page(fig, text=text)
        data = page.encode("utf-8")
    files.write_atomic(path, data)  # a reader sees the old plot or the whole new one
    return path


#: How a problem with the plot starts (:func:`write_plots`).
PLOT_PROBLEM = "qcrypto: could not write the plot"


def write_plots(paths: Iterable[str], tables: Sequence[Table], unit: str = "KiB/s",
                baseline: Sequence[Table] = (), text: Sequence[str] = (),
                changes: Mapping[tuple[str, str], Changes | Sequence[str]] | None = None
                ) -> tuple[list[str], list[str]]:
    """:func:`write` each of ``paths``: the problems met (one message per path that could
    not be written, as a failed ``--qcrypto-save`` says it) and the paths written."""
    problems: list[str] = []
    plotted: list[str] = []
    for path in paths:
        try:
            write(path, tables, unit, baseline, text=text, changes=changes)
        except files.NotARegularFile as exc:  # its text names the path already
            problems.append(f"{PLOT_PROBLEM}: {exc.strerror}")
        except (OSError, PlotError) as exc:
            problems.append(f"{PLOT_PROBLEM} to {path}: {getattr(exc, 'strerror', None) or exc}")
        else:
            plotted.append(path)
    return problems, plotted


#: What render and report are given to check and write plots (they never import this module).
PLOTTER = Plotter(check=check_path, check_writable=check_writable, write=write_plots)

