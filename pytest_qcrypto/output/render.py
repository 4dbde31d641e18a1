"""Rendering results as text: qcrypto's verbose block and its KiB/s tables, in any layout.

The layout follows QNX's ``qcrypto speed``::

    Benchmarking 'sha256' digest on the following plugin(s): openssl, pycryptodome
    plugin: openssl
    executed 2097152 digests of size 16 bytes in 0.64 secs

    Benchmark results for 'sha256' digest (KiB/s):
    plugin           16         64      32768
    openssl    55381.58  154240.87  579293.17

The table model is :mod:`pytest_qcrypto.output.tables`; the layouts (``qcrypto``,
``openssl``, ``markdown``, ``csv``, and any other registered with
:func:`pytest_qcrypto.output.layouts.layout`) are :data:`FORMATS`, the choices of
``--qcrypto-format``.  Beside them: other units (:data:`UNITS`,
``--qcrypto-unit``).  :func:`write_summary` sends the chosen layout to the
terminal (or, with ``--qcrypto-bare``, to standard output alone), appends
markdown to ``$GITHUB_STEP_SUMMARY`` when that is set (the ``markdown`` layout:
with the change grids and the regression gate's tables when comparing), and has the plots
written by the :class:`Plotter` it is given (``plot.PLOTTER``: this module
never imports plot).  Nothing here imports pytest.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePath
from typing import Any

from pytest_qcrypto.output.layouts import (  # noqa: F401 (re-exported: the layouts' own helpers)
    CSV_COLUMNS, LAYOUTS, OPENSSL_SENTENCE, Figures, Layout, csv_lines, layout, markdown_layout,
    markdown_legend, markdown_lines, openssl_lines, report)
from pytest_qcrypto.output import cryptotest_layout  # noqa: F401 (registers cryptotest)
from pytest_qcrypto.output import exports  # noqa: F401 (registers bencher, github-action-benchmark)
from pytest_qcrypto.algorithms.settings import SettingsError
from pytest_qcrypto.output.tables import (  # noqa: F401 (re-exported: the table model)
    COUNTED_UNITS, CYCLES_PER_OP, DEFAULT_UNIT, FAILED, MARKERS, SKIPPED, UNITS, Cell, Changes,
    GateTables, SummaryTable, Table, Unit, change_lines, header, notes, table_lines,
    verbose_block)

#: ``--qcrypto-format`` choices: the registered layouts' names, a live view of
#: :data:`.layouts.LAYOUTS` (a layout registered later is a choice too).
FORMATS = LAYOUTS.keys()
#: The layout without ``--qcrypto-format``: QNX qcrypto's.
DEFAULT_FORMAT = "qcrypto"
#: Suffixes ``--qcrypto-plot`` can write.
PLOT_SUFFIXES = (".png", ".svg", ".html")


def format_lines(tables: Sequence[Table], fmt: str = DEFAULT_FORMAT, unit: str = DEFAULT_UNIT,
                 verbose: bool = False) -> list[str]:
    """The tables in the layout ``fmt`` (one of :data:`FORMATS`), without change grids or notes.

    Raises ``KeyError`` for a layout not registered (:func:`parse_output` checks it first).
    """
    return LAYOUTS[fmt].draw(Figures(tables, unit, verbose))


def format_help() -> str:
    """``--qcrypto-format``'s help: every layout with its help, the default said."""
    words = [" ".join(w for w in (name, "(default)" if name == DEFAULT_FORMAT else "", lay.help)
                      if w) for name, lay in LAYOUTS.items()]
    listed = ", ".join(words[:-1]) + f" or {words[-1]}" if len(words) > 1 else words[0]
    return f"layout of the results: {listed}."


def format_names(sep: str = ", ", last: str = " or ") -> str:
    """The layouts' names: ``qcrypto, openssl, markdown or csv``."""
    names = list(LAYOUTS)
    return sep.join(names[:-1]) + last + names[-1] if len(names) > 1 else names[0]


@dataclass(frozen=True)
class Plotter:
    """How plots are checked and written; ``plot.PLOTTER`` (render never imports plot).

    ``check(path)`` (a ``--qcrypto-plot`` path as typed) raises
    :class:`SettingsError` when it cannot be plotted (matplotlib missing);
    ``check_writable(path)`` the same when no file can be written there;
    ``write(paths, tables, unit, baseline, text, changes)`` writes every plot
    (``changes``: the gate's change grid per table key, to mark regressions)
    and returns the problems met (messages) and the paths written.
    """

    check: Callable[[str], None]
    check_writable: Callable[[str], None]
    write: Callable[[Sequence[str], Sequence[Table], str, Sequence[Table], Sequence[str],
                     Mapping[tuple[str, str], Any]], tuple[list[str], list[str]]]


# -- output options --------------------------------------------------------------

@dataclass(frozen=True)
class Output:
    """The checked output options of a run: unit, format, plot paths (absolute, each
    once; None is none), bare standard output, and the file the tables go to instead of
    the terminal (``--qcrypto-output``: absolute; None: the terminal)."""

    unit: str = DEFAULT_UNIT
    format: str = DEFAULT_FORMAT
    plots: tuple[str, ...] = ()
    bare: bool = False
    path: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "plots", tuple(self.plots or ()))


def unit_choices() -> list[str]:
    """The units ``--qcrypto-unit`` accepts: a counted table's units, and the cycles per
    operation of a size-less table under cpb, are not chosen."""
    return [u for u in UNITS if u not in COUNTED_UNITS and u != CYCLES_PER_OP]


def parse_output(unit: str | None = None, fmt: str | None = None,
                 plot: str | Sequence[str] | None = None, bare: bool = False,
                 plotter: Plotter | None = None, path: str | None = None) -> Output:
    """Check the output options; :class:`SettingsError` naming the valid choices.

    ``plot`` is one path or several (each checked: its suffix, then by
    ``plotter.check`` when given; one file given twice is written once).  ``path``
    (``--qcrypto-output``) must be a file that can be written, as ``--qcrypto-save``'s.
    """
    choices = unit_choices()
    if unit is not None and unit not in choices:
        same = [u for u in choices if u.lower() == unit.lower()]
        hint = (f"; units are case-sensitive (k = 1000, Ki = 1024, b = bit): "
                f"did you mean {same[0]}?" if same else ".")
        raise SettingsError(f"--qcrypto-unit: unknown unit {unit!r}{hint} "
                            f"Valid units: {', '.join(choices)}")
    if fmt is not None and fmt not in FORMATS:
        raise SettingsError(f"--qcrypto-format: unknown format {fmt!r}. "
                            f"Valid formats: {', '.join(FORMATS)}")
    fixed = LAYOUTS[fmt].unit if fmt is not None else None
    if fixed is not None:
        if unit is not None:
            raise SettingsError(
                f"--qcrypto-unit {unit} cannot be used with --qcrypto-format {fmt}, "
                f"whose unit is fixed: {LAYOUTS[fmt].unit_why}")
        unit = fixed
    paths = [plot] if isinstance(plot, str) else list(plot or ())
    for typed in paths:
        if PurePath(typed).suffix.lower() not in PLOT_SUFFIXES:
            raise SettingsError(f"--qcrypto-plot: {typed!r} must end in "
                                f"{', '.join(PLOT_SUFFIXES[:-1])} or {PLOT_SUFFIXES[-1]}")
        if plotter is not None:
            plotter.check(typed)
    # where the run started, like --junitxml
    plots = tuple(dict.fromkeys(os.path.abspath(typed) for typed in paths))
    if path is not None:
        from pytest_qcrypto.results import files

        problem = files.check_writable(Path(path)) if path else "no path given"
        if problem:
            raise SettingsError(f"--qcrypto-output: cannot write {path}: {problem}")
        path = os.path.abspath(path)
    return Output(unit or DEFAULT_UNIT, fmt or DEFAULT_FORMAT, plots, bool(bare), path)


def output_of(getoption: Callable[[str], Any], plotter: Plotter | None = None) -> Output:
    """:func:`parse_output` of a pytest config's options (``config.getoption``); an
    ``--qcrypto-output`` that is the file of ``--qcrypto-save`` or ``--qcrypto-compare``
    is refused: the tables would replace the results file or the baseline."""
    out = parse_output(getoption("qcrypto_unit"), getoption("qcrypto_format"),
                       getoption("qcrypto_plot"), getoption("qcrypto_bare"), plotter,
                       getoption("qcrypto_output"))
    for flag in ("save", "compare") if out.path else ():
        given = getoption(f"qcrypto_{flag}")
        for typed in [given] if isinstance(given, str) else given or ():
            if typed and os.path.realpath(typed) == os.path.realpath(out.path):
                raise SettingsError(f"--qcrypto-output and --qcrypto-{flag} both name {typed}: "
                                    "the tables would replace the results file; give the "
                                    "tables a file of their own")
    return out


def unwritten(output: Output, measured: bool, interrupted: bool) -> tuple[Output, list[str]]:
    """The files a run's summary leaves unwritten, and the lines that say so: nothing
    measured, no plot and no ``--qcrypto-output`` file (as ``--qcrypto-save``: no empty
    file); an interrupted run, no ``--qcrypto-output`` file, which would read as a whole
    run's (a bencher or CSV file has no place to say it is partial): its tables go where
    they would without the option, and the file is left as it was."""
    files = [*output.plots, *([output.path] if output.path else [])]
    if not measured and files:
        return replace(output, plots=(), path=None), [
            f"qcrypto: nothing was measured: {', '.join(files)} not written"]
    if interrupted and output.path:
        return replace(output, path=None), [
            f"qcrypto: interrupted: {output.path} not written (left as it was), as it would "
            "read as a whole run; the tables shown are what was measured"]
    return output, []


def write_summary(terminal: Any, tables: Sequence[Table], output: Output, verbose: bool,
                  after_table: Callable[[Table], Changes | Sequence[str] | None] | None = None,
                  baseline: Sequence[Table] = (), title: str = "qcrypto speed",
                  stdout: Any = None, plotter: Plotter | None = None,
                  gate_tables: GateTables | None = None,
                  shown: Sequence[str] = ()) -> list[str]:
    """Show the tables at the end of a run, and write the step summary and the plots.

    ``terminal`` is pytest's terminal reporter (``write_sep``, ``write_line``).
    ``after_table(table)`` gives the change grid of a table (the gate's change
    against a baseline: :class:`.tables.Changes`, or lines already drawn);
    layouts that draw it (``qcrypto``) put it under each table, for the others
    it follows all tables on the terminal.  With ``output.bare`` the formatted
    lines go to ``stdout`` (default ``sys.stdout``) without a separator, and
    only they do.  ``gate_tables`` is the regression gate's outcome (None: not
    gating), drawn by the ``markdown`` layout after the tables.  When
    ``$GITHUB_STEP_SUMMARY`` names a file, the ``markdown`` layout of it all
    (tables, change grids, the gate's tables) is appended to it, whatever the
    format.  With ``output.path`` the formatted lines are written to that file
    (atomically) instead, and a line on the terminal says so.  ``plotter`` writes
    ``output.plots`` (required
    when there are any: ``ValueError``); ``baseline`` tables (of a compared
    run) are drawn dashed.  A file that cannot be written is reported on the
    terminal, not raised; the problems are returned.  ``shown`` are the lines
    :func:`streamed` already wrote to standard output while the run went on: with
    ``output.bare`` only the lines after them are written (should they differ from the
    first lines now, a line says so and every line is written again).
    """
    chosen = LAYOUTS[output.format]
    changes = {t.key: c for t in tables if (c := after_table(t)) is not None} \
        if after_table else {}
    figures = Figures(tables, output.unit, verbose, changes, gate_tables=gate_tables)
    lines = chosen.draw(figures)
    side = [] if chosen.draws_changes else [x for t in tables for x in figures.changes_under(t)]
    written, unwritten = [], []
    if output.path:  # --qcrypto-output: the layout to its file, the rest on the terminal
        from pytest_qcrypto.results import files
        try:
            files.write_atomic(Path(output.path), "".join(f"{line}\n" for line in lines))
            written.append(f"qcrypto: tables written to {output.path}")
        except OSError as exc:  # files.NotARegularFile too
            unwritten.append(f"--qcrypto-output: cannot write {output.path}: "
                             f"{exc.strerror or exc}")
        lines = []
    if output.bare:
        if shown and list(lines[:len(shown)]) == list(shown):
            lines = lines[len(shown):]
        elif shown:  # (a bug: a streamed line changed) say why the tables come twice
            terminal.write_line("qcrypto: the results changed after they were shown; all of "
                                "them again, as they are now:")
        out = stdout or sys.stdout
        out.write("".join(f"{line}\n" for line in lines))
        out.flush()
    else:
        terminal.write_sep("=", title)
        side = lines + ([""] if lines and side else []) + side
    for line in side + written:
        terminal.write_line(line)
    problems, plotted = write_files(tables, output, baseline, plotter=plotter, figures=figures)
    problems[:0] = unwritten
    for problem in problems:
        terminal.write_line(f"ERROR: {problem}", red=True)
    for path in plotted:
        terminal.write_line(f"qcrypto: plot written to {path}")
    return problems


def streams(output: Output) -> str:
    """How :func:`streamed` writes for these output options: ``"tables"``, ``"lines"``
    (:attr:`.layouts.Layout.streams`) or ``""``, not at all."""
    return LAYOUTS[output.format].streams if output.bare and not output.path else ""


def streamed(tables: Sequence[Table], output: Output, verbose: bool,
             done: Callable[[Table, str, object], bool],
             after_table: Callable[[Table], Changes | Sequence[str] | None] | None = None
             ) -> list[str]:
    """While a run goes on: the first lines of what :func:`write_summary` will write to
    standard output, those that no cell still to run can change (``done(table, plugin,
    column)``: that cell's test finished); none for a layout that does not stream, or
    when the tables go to a file or to pytest's terminal (not ``output.bare``)."""
    chosen = LAYOUTS[output.format]
    if not streams(output):
        return []
    figures = Figures(tables, output.unit, verbose, done=done)
    changes = {}
    for table in tables if after_table and chosen.draws_changes else ():
        if not figures.complete(table):
            break  # (a streaming layout draws no table after it yet)
        if (grid := after_table(table)) is not None:
            changes[table.key] = grid
    return chosen.draw(replace(figures, changes=changes))


def write_files(tables: Sequence[Table], output: Output, baseline: Sequence[Table] = (),
                text: Sequence[str] | None = None, plotter: Plotter | None = None,
                figures: Figures | None = None) -> tuple[list[str], list[str]]:
    """Append to ``$GITHUB_STEP_SUMMARY`` and have ``plotter`` write every plot of
    ``output.plots``: the problems met and the plots written.

    The step summary is the ``markdown`` layout of ``figures`` (default: of the
    tables alone), less the notes: their change grids and the gate's tables when
    comparing.  ``text`` goes under the plots of an HTML page (default: the
    tables as printed).  Raises ``ValueError`` when there are plots to write and
    no ``plotter``.
    """
    problems: list[str] = []
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        shown = figures or Figures(tables, output.unit)
        markdown = markdown_layout(Figures(shown.tables, output.unit, False, shown.changes,
                                           gate_tables=shown.gate_tables))
        try:
            with open(summary, "a", encoding="utf-8") as f:
                f.write("".join(f"{line}\n" for line in markdown))
                f.write("\n")
        except OSError as exc:
            problems.append(f"cannot append to GITHUB_STEP_SUMMARY {summary}: {exc}")
    if not output.plots:
        return problems, []
    if plotter is None:
        raise ValueError("plots to write and no plotter: pass plot.PLOTTER")
    page = format_lines(tables, output.format, output.unit) if text is None else text
    changes = dict(figures.changes) if figures is not None else {}
    more, plotted = plotter.write(output.plots, tables, output.unit, baseline, page, changes)
    return problems + more, plotted
