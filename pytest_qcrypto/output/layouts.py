"""The layouts of the results: each a registered function from figures to lines of text.

A layout receives a :class:`Figures` (the tables, the unit, the verbose flag,
the change grid of each table and the notes of a joined report) and returns
the lines to print.  Registering one is all it takes to add a
``--qcrypto-format`` choice (with its help text) and a ``qcrypto report``
format::

    @layout("tsv", "(tab-separated values)")
    def tsv(figures: Figures) -> list[str]:
        return ["\t".join(...) for table in figures.tables ...]

Built in, in this order (the first is the default): ``qcrypto`` (QNX
qcrypto's KiB/s tables, the verbose block and the change grids under them),
``openssl`` (the layout of ``openssl speed``), ``markdown`` (for a CI job
summary) and ``csv``; :mod:`.cryptotest_layout` adds ``cryptotest`` (FreeBSD
cryptotest's line per algorithm and size) and :mod:`.exports` the benchmark services'
JSON (:mod:`.render` imports both).  Nothing here imports pytest.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby

from pytest_qcrypto.output.ops_layouts import openssl_ops_lines
from pytest_qcrypto.output.markdown import (markdown_changes, markdown_gate, markdown_legend,
                                     markdown_lines)
from pytest_qcrypto.output.tables import (  # noqa: F401 (cell_text, header: for a layout added here)
    DEFAULT_UNIT, FAILED, MARKERS, SKIPPED, UNITS, Cell, Changes, GateTables, Table, cell_text,
    change_lines, header, notes, status_reason, table_lines, unit_of, verbose_block)


@dataclass(frozen=True)
class Figures:
    """What a layout draws.

    ``tables`` in order; ``unit`` a :data:`.tables.UNITS` name; ``verbose``
    asks for per-cell counts and seconds where the layout has them;
    ``changes`` maps a table's :attr:`~.tables.Table.key` to its change
    against a baseline (:class:`.tables.Changes`, or lines already drawn);
    ``notes`` are lines after all tables (the machines of a joined report);
    ``gate_tables`` the regression gate's outcome (None: not gating), which the
    ``markdown`` layout draws after the tables (the others leave it to the
    terminal's summary lines).  ``done`` is set while a run is still going (a
    layout that :attr:`~Layout.streams` then draws only what can no longer change):
    ``done(table, plugin, column)`` says whether that cell's test has finished.
    """

    tables: Sequence[Table]
    unit: str = DEFAULT_UNIT
    verbose: bool = False
    changes: Mapping[tuple[str, str], Changes | Sequence[str]] = field(default_factory=dict)
    notes: Sequence[str] = ()
    gate_tables: GateTables | None = None
    done: Callable[[Table, str, object], bool] | None = None

    def complete(self, table: Table) -> bool:
        """Every cell of ``table`` finished (always, once the run is over)."""
        return self.done is None or all(self.done(table, p, c) for p in table.plugins
                                        for c in table.columns)

    def changes_under(self, table: Table) -> list[str]:
        """The change grid of ``table`` as lines (none without a baseline)."""
        return change_lines(self.changes.get(table.key))


@dataclass(frozen=True)
class Layout:
    """A registered layout: its ``--qcrypto-format`` name, help and drawing function.

    ``help`` follows the name in ``--qcrypto-format``'s help (``(for a CI job
    summary)``).  ``unit`` fixes the unit (with ``unit_why``, said when
    ``--qcrypto-unit`` is given too).  ``draws_changes``: the layout puts the
    change grids under its tables; for the others they are shown on the
    terminal after all tables.
    """

    name: str
    draw: Callable[[Figures], list[str]]
    help: str = ""
    unit: str | None = None
    unit_why: str = ""
    draws_changes: bool = False
    streams: str = ""


#: Every layout by name, in registration order; the first is the default.
LAYOUTS: dict[str, Layout] = {}


def layout(name: str, help: str = "", *, unit: str | None = None, unit_why: str = "",
           draws_changes: bool = False, streams: str = "") -> Callable[[Callable[[Figures], list[str]]],
                                                    Callable[[Figures], list[str]]]:
    """Register the decorated function as the layout ``name`` (see :class:`Layout`).

    Raises ``ValueError`` for a name already registered or not a plain word.
    """
    if not name or not name.replace("-", "").isalnum() or name in LAYOUTS:
        raise ValueError(f"layout {name!r}: give a new name of letters, digits and '-'")

    def register(draw: Callable[[Figures], list[str]]) -> Callable[[Figures], list[str]]:
        LAYOUTS[name] = Layout(name, draw, help, unit, unit_why, draws_changes, streams)
        return draw

    return register


def plain_notes(figures: Figures) -> list[str]:
    """The notes after a blank line, as they are (none without notes)."""
    return [""] + list(figures.notes) if figures.notes else []


# -- qcrypto -------------------------------------------------------------------------------------

def report(tables: Sequence[Table], verbose: bool, unit: str = "KiB/s") -> list[str]:
    """Every table (each preceded by its verbose block when ``verbose``), blank-line separated."""
    lines: list[str] = []
    for table in tables:
        if verbose:
            lines.extend(verbose_block(table))
            lines.append("")
        lines.extend(table_lines(table, unit))
        lines.append("")
    return lines[:-1] if lines else lines


@layout("qcrypto", draws_changes=True, streams="tables")
def qcrypto_layout(figures: Figures) -> list[str]:
    """QNX qcrypto's tables (:func:`report`), each followed by its change grid; while the
    run goes on (:attr:`Figures.done`), the tables before the first one still measuring."""
    lines: list[str] = []
    for i, table in enumerate(figures.tables):
        if not figures.complete(table):
            return lines
        lines += (([""] if i else []) + report([table], figures.verbose, figures.unit)
                  + figures.changes_under(table))
    return lines + plain_notes(figures)


# -- openssl -------------------------------------------------------------------------------------


#: The sentence ``openssl speed`` prints above its table.
OPENSSL_SENTENCE = "The 'numbers' are in 1000s of bytes per second processed."


def _openssl_label(table: Table, plugin: str, with_plugin: bool) -> str:
    label = table.algorithm + (f"-{table.direction}" if table.direction in ("decrypt", "roundtrip")
                               else "")
    return f"{label}[{plugin}]" if with_plugin else label


def _openssl_cell(cell: Cell | None) -> str:
    """openssl speed's cell: 1000s of bytes with a ``k`` above 10000 bytes/s, else bytes."""
    if cell is None or cell.measurement is None:
        marker = MARKERS[SKIPPED] if cell is None else MARKERS.get(cell.status, "?")
        return f" {marker:>11} "
    bps = cell.measurement.bytes_per_second
    return f" {bps / 1000:11.2f}k" if bps > 10000 else f" {bps:11.2f} "


def openssl_lines(tables: Sequence[Table]) -> list[str]:
    """The layout of ``openssl speed``'s summary, in 1000s of bytes per second.

    Its sentence, then for each run of tables with the same sizes a ``type``
    line (``%7d bytes`` per size) and one row per algorithm and plugin: the
    label left-aligned in 13 columns (wider when a label needs it), each cell
    `` %11.2fk``.  Rows are labelled by algorithm (``-decrypt`` appended for
    decryption), with ``[plugin]`` when the tables hold more than one plugin.
    Marker notes, naming rows by these labels, follow each run of tables.
    """
    with_plugin = len({p for t in tables for p in t.plugins}) > 1
    lines = [OPENSSL_SENTENCE]
    for sizes, group in groupby(tables, key=lambda t: t.sizes):
        block = list(group)
        rows = [(_openssl_label(t, p, with_plugin), t, p) for t in block for p in t.plugins]
        label_w = max([13, *(len(label) + 1 for label, _, _ in rows)])
        lines.append("type".ljust(label_w - 1) + "".join(f"{s:7d} bytes" for s in sizes))
        for label, t, p in rows:
            lines.append(label.ljust(label_w)
                         + "".join(_openssl_cell(t.cells.get((p, s))) for s in sizes))
        for t in block:  # the notes name rows by their labels here
            labels = {p: _openssl_label(t, p, with_plugin) for p in t.plugins}
            lines.extend(notes(Table(t.algorithm, t.kind, t.direction, tuple(labels.values()),
                                     t.sizes, {(labels[p], s): c for (p, s), c in t.cells.items()
                                               if p in labels})))
    return lines


@layout("openssl", "(openssl speed's table, 1000s of bytes per second; no --qcrypto-unit "
        "with it)", unit="kB/s", unit_why="1000s of bytes per second, as openssl speed prints")
def openssl_layout(figures: Figures) -> list[str]:
    """The sized tables in 1000s of bytes per second, then the size-less ones (signatures,
    KEMs, KDFs...) in seconds per operation and operations per second, as openssl speed
    prints its public-key results after its symmetric ones (:mod:`.ops_layouts`)."""
    sized = [t for t in figures.tables if t.sized]
    ops = [t for t in figures.tables if not t.sized]
    lines = openssl_lines(sized) if sized or not ops else []
    return lines + openssl_ops_lines(ops) + plain_notes(figures)


# -- markdown ------------------------------------------------------------------------------------


@layout("markdown", "(for a CI job summary)", draws_changes=True)
def markdown_layout(figures: Figures) -> list[str]:
    """Each table as markdown (:func:`.markdown.markdown_lines`) with its change grid as a
    table under it, then the regression gate's tables, then the notes (a legend)."""
    lines: list[str] = []
    for i, t in enumerate(figures.tables):
        grid = markdown_changes(figures.changes.get(t.key))
        lines += ([""] if i else []) + markdown_lines([t], figures.unit) + (
            [""] + grid if grid else [])
    gate = markdown_gate(figures.gate_tables)
    lines += ([""] if lines and gate else []) + gate
    return lines + ([""] + markdown_legend(figures.notes) if figures.notes else [])


# -- csv -----------------------------------------------------------------------------------------

CSV_COLUMNS = ("algorithm", "direction", "plugin", "size", "unit", "value", "count",
               "seconds", "status", "reason", "jobs")


def _row_jobs(t: Table, plugin: str) -> str:
    """The processes that measured a row at once (``--qcrypto-jobs``): those of its first
    measured cell; empty when none of its cells was measured."""
    return next((str(c.measurement.jobs) for s in t.columns
                 if (c := t.cells.get((plugin, s))) is not None and c.measurement is not None), "")


def csv_lines(tables: Sequence[Table], unit: str = DEFAULT_UNIT) -> list[str]:
    """One header line, then one line per cell in table order.

    ``value`` is the cell in ``unit`` with two decimals, ``count`` the
    operations per round and ``seconds`` the median round's wall time; cells
    without a figure have ``status`` skipped or failed and their reason.
    ``jobs`` is the number of processes whose summed throughput the figure is
    (``--qcrypto-jobs``, 1 for one), for a cell without a figure its row's
    (empty when no cell of the row has one).  Tables joined across machines get
    a ``machine`` column before ``plugin``.
    """
    by_machine = any(t.machines for t in tables)
    columns = list(CSV_COLUMNS)
    if by_machine:
        columns.insert(columns.index("plugin"), "machine")
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(columns)
    for t in tables:
        for p in t.plugins:
            jobs = _row_jobs(t, p)
            for s in t.columns:  # a size-less table's columns: its operations, size 0
                cell = t.cells.get((p, s))
                m = cell.measurement if cell is not None else None
                status, reason = status_reason(cell, t, (p, s))
                shown = unit_of(t, unit)
                row: list[object] = [t.algorithm, t.direction or s, p, s if t.sized else 0, shown]
                if m is not None:
                    failed = cell is not None and cell.status == FAILED  # its test, after
                    row += [f"{UNITS[shown].of(m):.2f}", m.count, f"{m.median_s:.9f}",
                            FAILED if failed else "ok", cell.reason if failed else ""]
                else:
                    row += ["", "", "", status, reason]
                row.append(m.jobs if m is not None else jobs)
                if by_machine:  # the row label less its machine: the same for every cell
                    machine = t.machines.get(p, "")
                    row.insert(columns.index("machine"), machine)
                    row[columns.index("plugin")] = p.removeprefix(f"{machine}/")
                out.writerow(row)
    return buf.getvalue().splitlines()


@layout("csv")
def csv_layout(figures: Figures) -> list[str]:
    """One line per cell (:func:`csv_lines`); no notes: every line is a record."""
    return csv_lines(figures.tables, figures.unit)

