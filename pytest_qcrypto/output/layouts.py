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
summary), ``csv`` and ``cryptotest`` (FreeBSD cryptotest's line per algorithm
and size, the layout of the ``cryptotest`` command).  Nothing here imports pytest.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby

from pytest_qcrypto.algorithms import cryptotest_names
from pytest_qcrypto.measure.harness import Measurement
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
    terminal's summary lines).
    """

    tables: Sequence[Table]
    unit: str = DEFAULT_UNIT
    verbose: bool = False
    changes: Mapping[tuple[str, str], Changes | Sequence[str]] = field(default_factory=dict)
    notes: Sequence[str] = ()
    gate_tables: GateTables | None = None

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


#: Every layout by name, in registration order; the first is the default.
LAYOUTS: dict[str, Layout] = {}


def layout(name: str, help: str = "", *, unit: str | None = None, unit_why: str = "",
           draws_changes: bool = False) -> Callable[[Callable[[Figures], list[str]]],
                                                    Callable[[Figures], list[str]]]:
    """Register the decorated function as the layout ``name`` (see :class:`Layout`).

    Raises ``ValueError`` for a name already registered or not a plain word.
    """
    if not name or not name.replace("-", "").isalnum() or name in LAYOUTS:
        raise ValueError(f"layout {name!r}: give a new name of letters, digits and '-'")

    def register(draw: Callable[[Figures], list[str]]) -> Callable[[Figures], list[str]]:
        LAYOUTS[name] = Layout(name, draw, help, unit, unit_why, draws_changes)
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


@layout("qcrypto", draws_changes=True)
def qcrypto_layout(figures: Figures) -> list[str]:
    """QNX qcrypto's tables (:func:`report`), each followed by its change grid."""
    lines: list[str] = []
    for i, table in enumerate(figures.tables):
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
                status, reason = status_reason(cell, t)
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


# -- cryptotest ----------------------------------------------------------------------------------

#: FreeBSD cryptotest's result line (tools/tools/crypto/cryptotest.c): seconds, operations,
#: name, size in bytes, bytes per second, and that in Mb/sec (x 8 / 1024 / 1024).
CRYPTOTEST_LINE = "%8.3f sec, %7d %6s crypts, %7d bytes, %8.0f byte/sec, %7.1f Mb/sec"


def crypt_line(seconds: float, operations: int, name: str, size: int) -> str:
    """cryptotest's line for ``operations`` operations of ``size`` bytes in ``seconds``
    (wall): byte/sec = operations x size / seconds, Mb/sec = byte/sec x 8 / 1024 / 1024
    (2^20 bits).  ``0.128886, 2048, "des", 8`` gives
    ``   0.129 sec,    2048    des crypts,       8 bytes,   127120 byte/sec,     1.0 Mb/sec``.
    A time of 0 (a clock that did not advance) gives ``inf``, never an exception."""
    rate = operations * size / seconds if seconds > 0 else math.inf
    return CRYPTOTEST_LINE % (seconds, operations, name, size, rate, rate * 8 / 1024 / 1024)


#: Why a measurement saved without counts and seconds (schema 1 results) has no line.
FIGURE_ONLY = "saved as a figure only (schema 1 results): no count or seconds to print"


def _median_round(rounds: Sequence[float]) -> int:
    """The index of the median round (the lower of the two middle ones when even)."""
    order = sorted(range(len(rounds)), key=rounds.__getitem__)
    return order[(len(order) - 1) // 2]


def freebsd_jobs_line(m: Measurement, name: str) -> str | None:
    """For a measurement of several processes (``-t N``, ``--qcrypto-jobs N``): the line
    FreeBSD's cryptotest would print, whose seconds are the processes' own times summed
    and whose operations are all of theirs (so its byte/sec is a per-process average);
    None for one process or without per-process records."""
    if m.jobs <= 1 or not m.workers:
        return None
    i = _median_round(m.rounds_s)
    per_iteration = m.operations / m.count if m.count else 1
    seconds = sum(w.rounds_s[i] for w in m.workers)
    ops = round(sum(w.count for w in m.workers) * per_iteration)
    return (crypt_line(seconds, ops, name, m.size)
            + f"  (FreeBSD's -t {m.jobs} arithmetic: the processes' times summed)")


def hexdump(data: bytes) -> list[str]:
    """cryptotest's hexdump: 16 bytes a line, ``0000: 01 02 ...``."""
    return [f"{off:04x}:" + "".join(f" {b:02x}" for b in data[off:off + 16])
            for off in range(0, len(data), 16)]


def cryptotest_verbose(m: Measurement) -> list[str]:
    """cryptotest's ``-v`` facts before a result: the device (the driver, else the plugin),
    the count (per process) and size, and the IV (ciphers); never the key."""
    lines = [f"device = {m.driver or m.plugin}",
             f"count = {m.count // max(m.jobs, 1)}, size = {m.size}"]
    if m.iv:
        lines += ["iv:", *hexdump(bytes.fromhex(m.iv))]
    return lines


def cryptotest_lines(tables: Sequence[Table], verbose: bool = False) -> list[str]:
    """One cryptotest line per measured (algorithm, plugin, size): algorithms in
    cryptotest's order (others after, as they come), then plugins, then sizes.

    Names are cryptotest's (``3des``, ``md5`` for HMAC-MD5) where it has one.  A table of
    several plugins (rows) puts ``plugin: NAME`` before each one's lines, since cryptotest's
    line has no place for it.  Skipped cells are left out (with ``verbose``, a line says why); a failed cell is a line with
    its reason.  ``verbose`` puts :func:`cryptotest_verbose` before each result and a
    calibration note after it.  Several processes: :func:`freebsd_jobs_line` under it.
    """
    lines: list[str] = []
    ordered = sorted(enumerate(tables), key=lambda it: (cryptotest_names.order(
        it[1].algorithm), it[0]))
    for _, t in ordered:
        if not t.sized:  # cryptotest's line is bytes per second: no place for ops/s
            lines.append(f"{t.algorithm}: no cryptotest line (no buffer size: its ops/s are "
                         "in --qcrypto-format=qcrypto or openssl)")
            continue
        name = cryptotest_names.display_name(t.algorithm)
        for p in t.plugins:
            said: set[str] = set()
            if len(t.plugins) > 1:
                lines.append(f"plugin: {p}")
            for s in t.sizes:
                cell = t.cells.get((p, s))
                m = cell.measurement if cell is not None else None
                if m is None or m.figure_only:
                    status, reason = _why(cell, t)
                    if status == FAILED:
                        lines.append(f"{name} {s} bytes in {p} failed: {reason}")
                    elif verbose and reason not in said:  # once, with the sizes it skips
                        said.add(reason)
                        lines.append(f"skipping {name} in {p} ({_sizes_of(t, p, reason)}): "
                                     f"{reason}")
                    continue
                if verbose:
                    lines += cryptotest_verbose(m)
                lines.append(crypt_line(m.median_s, m.operations, name, s))
                jobs = freebsd_jobs_line(m, name)
                lines += [jobs] if jobs else []
                if verbose and m.calibration_note:
                    lines.append(f"note: {m.calibration_note}")
    return lines


def _why(cell: Cell | None, t: Table) -> tuple[str, str]:
    """Why a cell has no cryptotest line: its status and reason (a figure-only one: skipped)."""
    if cell is not None and cell.measurement is not None and cell.measurement.figure_only:
        return SKIPPED, FIGURE_ONLY
    return status_reason(cell, t)


def _sizes_of(t: Table, plugin: str, reason: str) -> str:
    """``all sizes`` or ``size 8, 16``: where ``plugin``'s cells were skipped for ``reason``."""
    sizes = [str(s) for s in t.sizes if _why(t.cells.get((plugin, s)), t) == (SKIPPED, reason)]
    return "all sizes" if len(sizes) == len(t.sizes) else f"size {', '.join(sizes)}"


@layout("cryptotest", "(FreeBSD cryptotest's line per algorithm and size, Mb/sec = 2^20 "
        "bits; no --qcrypto-unit with it)", unit="MiB/s",
        unit_why="cryptotest's lines give byte/sec and Mb/sec (2^20 bits per second)")
def cryptotest_layout(figures: Figures) -> list[str]:
    return cryptotest_lines(figures.tables, figures.verbose) + plain_notes(figures)
