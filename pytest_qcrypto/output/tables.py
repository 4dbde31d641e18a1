"""The table model: qcrypto's KiB/s tables as data, their notes, and the change grid.

A :class:`Table` is the results of one algorithm in one direction: a row per
plugin (as typed, or ``MACHINE/PLUGIN`` in a joined report), a column per
buffer size, a :class:`Cell` at each.  Cells are the median round's
``count * size / seconds / 1024`` (KiB/s) with two decimals, or another
:data:`UNITS` entry.  The label column is one wider than the longest plugin
name; every number column is two wider than the widest cell of the table.  A
cell that was not measured shows a marker from :data:`MARKERS`, explained
under the table (:func:`notes`).  :class:`Changes` is the grid drawn under a
table in compare mode (:func:`change_lines`); :class:`GateTables`, the regression gate's
outcome as small tables of text for a markdown summary.  The layouts that turn tables
into text are in :mod:`pytest_qcrypto.output.layouts`.  Nothing here imports pytest.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_qcrypto.algorithms import callable_names, catalog
from pytest_qcrypto.measure import cycles, gil
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.output import outliers

SKIPPED, FAILED = "skipped", "failed"
#: Short markers for cells without a figure.
MARKERS = {SKIPPED: "-", FAILED: "x"}


@dataclass(frozen=True)
class Unit:
    """A unit of table cells: its name, the header's wording, and the conversion.

    ``of(m)`` is the median round of a :class:`Measurement` in this unit.
    ``faster_is_higher`` is False for times per operation (``ns/op``).
    """

    name: str
    label: str
    of: Callable[[Measurement], float]
    faster_is_higher: bool = True


#: ``--qcrypto-unit`` choices.  KiB and MiB are 1024-based (qcrypto's unit);
#: kB and MB are 1000-based, as OpenSSL's "k", and their headers say so.
#: One operation is one buffer of the column's size (a round trip is two: an encryption and
#: a decryption, :attr:`Measurement.operations`).
UNITS: dict[str, Unit] = {u.name: u for u in (
    Unit("KiB/s", "KiB/s", lambda m: m.kib_per_s),
    Unit("MiB/s", "MiB/s", lambda m: m.bytes_per_second / (1024 * 1024)),
    Unit("kB/s", "kB/s, 1 kB = 1000 bytes", lambda m: m.bytes_per_second / 1000),
    Unit("MB/s", "MB/s, 1 MB = 1000000 bytes", lambda m: m.bytes_per_second / 1_000_000),
    Unit("ops/s", "ops/s", lambda m: m.operations / m.median_s),
    Unit("ns/op", "ns/op", lambda m: m.median_s / m.operations * 1e9, faster_is_higher=False),
    # --qcrypto-measure=instructions (pytest_qcrypto.measure.counting): never chosen by
    # --qcrypto-unit, a table of counted cells is always in one of these
    Unit("instructions/byte", "instructions per byte, counted; fewer is faster",
         lambda m: m.counted.per_unit(m.size), faster_is_higher=False),
    Unit("instructions/op", "instructions per operation, counted; fewer is faster",
         lambda m: m.counted.per_operation, faster_is_higher=False),
    # --qcrypto-unit=cpb (pytest_qcrypto.measure.cycles, SUPERCOP's convention); a size-less
    # table then in cycles per operation (never chosen by --qcrypto-unit itself)
    Unit("cpb", "cycles per byte; fewer is faster", cycles.per_byte, faster_is_higher=False),
    Unit("cycles/op", "cycles per operation; fewer is faster", cycles.per_operation,
         faster_is_higher=False),
)}
#: The units of counted tables, not choices of --qcrypto-unit.
COUNTED_UNITS = ("instructions/byte", "instructions/op")
#: The unit of a size-less table under ``--qcrypto-unit=cpb``, not a choice either.
CYCLES_PER_OP = "cycles/op"
DEFAULT_UNIT = "KiB/s"


@dataclass(frozen=True)
class Cell:
    """One table cell: a measurement, or a skipped / failed marker with its reason."""

    measurement: Measurement | None = None
    status: str = ""
    reason: str = ""


@dataclass(frozen=True)
class Table:
    """The results of one algorithm in one direction: rows = plugins (as typed), columns = sizes.

    A kind without a buffer size (signatures, KEMs, KDFs...: ``KindRules.sized`` False) has
    one table per algorithm instead: ``direction`` empty, ``sizes`` empty, a column per
    operation (:attr:`operations`, ``sign``, ``verify``), cells keyed (plugin, operation),
    figures in ops/s whatever the unit asked for (:func:`unit_of`); ``params`` is a KDF's
    parameters in words (``N=16384, r=8, p=1``).
    """

    algorithm: str
    kind: str  # "digest", "cipher", "AEAD"...: the word of the header (KindRules.table_word)
    direction: str  # a catalog Direction: "digest", "encrypt", "decrypt", "mac", "roundtrip"
    plugins: tuple[str, ...]
    sizes: tuple[int, ...]
    cells: dict[tuple[str, Any], Cell]
    #: Row label -> machine, for tables joined across machines (``qcrypto report``).
    machines: Mapping[str, str] = field(default_factory=dict)
    operations: tuple[str, ...] = ()
    params: str = ""
    #: (row, column) -> why the matrix has no such cell (:data:`NOT_DECLARED`), shown ``-``
    absent: Mapping[tuple[str, Any], str] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        """``(algorithm, direction)``: a run or a report has one table per key (direction
        empty for a size-less algorithm's one table)."""
        return self.algorithm, self.direction

    @property
    def sized(self) -> bool:
        """Whether its columns are buffer sizes (else operations)."""
        return not self.operations

    @property
    def columns(self) -> tuple[Any, ...]:
        """Its columns: the sizes (bytes), or the operations of a size-less table."""
        return self.sizes if self.sized else self.operations


#: The unit of every size-less table (``KindRules.unit`` of those kinds).
OPS_UNIT = catalog.RULES[catalog.Kind.SIGNATURE].unit


def unit_of(table: Table, unit: str) -> str:
    """The unit ``table`` is shown in: ``unit`` for a table of sizes, ops/s for one of
    operations (a KiB/s of a signature means nothing); a table of counted instructions
    (``--qcrypto-measure=instructions``) in instructions per byte, or per operation."""
    if any(c.measurement is not None and c.measurement.counted is not None
           for c in table.cells.values()):
        return COUNTED_UNITS[0] if table.sized else COUNTED_UNITS[1]
    return unit if table.sized else CYCLES_PER_OP if unit == "cpb" else OPS_UNIT


def slot(size: int, direction: str) -> tuple[str, Any]:
    """Where a cell (size in bytes, direction) sits: (the table's direction, its column).
    A size-less cell (size 0) is the column ``direction`` of its algorithm's one table."""
    return ("", direction) if size == 0 else (direction, size)


def assemble(algorithm: str, direction: str, rows: Sequence[str],
             cells: dict[tuple[str, Any], Cell],
             machines: Mapping[str, str] | None = None) -> Table:
    """The table of ``algorithm`` in ``direction`` (empty: its size-less table) with these
    rows and cells (keyed by :func:`slot`'s columns), its kind word and columns from the
    catalog (an algorithm not in it: a digest or cipher by its direction)."""
    alg = callable_names.lookup(algorithm)  # a catalog algorithm or a callable
    kind = alg.table_kind if alg is not None else next(  # the first kind of its direction
        (k.rules.table_word for k in catalog.KINDS if direction in k.rules.directions), "cipher")
    machines = {r: machines[r] for r in rows if r in machines} if machines else {}
    if direction or alg is None:
        return Table(alg.name if alg else algorithm, kind, direction, tuple(rows),
                     tuple(sorted({s for _, s in cells})), cells, machines)
    ops = [str(d) for d in alg.directions]
    present = {c for _, c in cells}
    return Table(alg.name, kind, "", tuple(rows), (), cells, machines,
                 tuple(o for o in ops if o in present), alg.params_text)


def grouped_cells(entries: Iterable[tuple[str, str, int, str, Cell]]
                  ) -> dict[tuple[str, str], dict[tuple[str, Any], Cell]]:
    """(algorithm, row, size, direction, cell) entries grouped by table key, in first-seen
    order (:func:`slot`)."""
    out: dict[tuple[str, str], dict[tuple[str, Any], Cell]] = {}
    for alg, row, size, direction, cell in entries:
        where, column = slot(size, direction)
        out.setdefault((alg, where), {})[(row, column)] = cell
    return out


def with_every_cell(tables: Sequence[Table], algorithms: Collection[str],
                    plugins: Sequence[str], sizes: Sequence[int],
                    operations: Collection[tuple[str, str, str]] = ()) -> list[Table]:
    """The tables, those of ``algorithms`` (a speed matrix's) with a row for each of
    ``plugins`` and a column for each of ``sizes`` (bytes), or each operation every plugin
    has, even where no cell was measured; a declared one (a signature's keygen) when the
    matrix has it, ``(algorithm, plugin, operation)`` in ``operations`` (``-`` elsewhere).

    A run that measured every cell changes nothing; an interrupted one shows the cells it
    did not reach as ``-`` (:func:`status_reason`: "not measured in this run") instead of
    leaving out their sizes and plugins.
    """
    out = []
    for t in tables:
        if t.algorithm in algorithms:
            rows = tuple(dict.fromkeys([*plugins, *t.plugins]))
            alg = catalog.lookup(t.algorithm)
            if t.sized:
                t = replace(t, plugins=rows, sizes=tuple(sorted({*t.sizes, *sizes})))
            else:  # a size-less table: its operations in the catalog's order
                want = {*t.operations, *(o for a, _, o in operations if a == t.algorithm)}
                ops = [str(d) for d in alg.directions if str(d) in want
                       or d not in alg.rules.declared] if alg is not None else []
                absent = {(p, o): NOT_DECLARED for p in plugins for o in ops if operations and
                          o in alg.rules.declared and (t.algorithm, p, o) not in operations}
                t = replace(t, plugins=rows, operations=tuple(dict.fromkeys(
                    [*ops, *t.operations])), absent=absent)
        out.append(t)
    return out


#: Why a plugin's row has no keygen cell of a signature (:attr:`Table.absent`).
NOT_DECLARED = "its plugin does not generate signature keys (generates_signature_keys)"
#: The directions a kind is measured in by default: a table header names any other.
DEFAULT_DIRECTIONS = frozenset(rules.directions[0] for rules in catalog.RULES.values())


def _verb(table: Table) -> str:
    """The noun of the verbose lines: ``digests``, ``decryptions``, ``round trips``."""
    return catalog.Direction(table.direction).verb


def direction_suffix(direction: str, separator: str = ", ") -> str:
    """``, decrypt`` or ``, roundtrip`` (with ``separator``) for a direction that is not its
    kind's default (``digest``, ``encrypt``, ``mac``: empty)."""
    return "" if direction in DEFAULT_DIRECTIONS else f"{separator}{direction}"


def header(table: Table, unit: str = "KiB/s") -> str:
    """``Benchmark results for 'aes-128-cbc' cipher, decrypt (KiB/s):``, ``... cipher,
    roundtrip (KiB/s):``, ``Benchmark results for 'ed25519' signature (ops/s):``."""
    how = direction_suffix(table.direction) if table.sized else ""
    label = UNITS[unit_of(table, unit)].label
    return f"Benchmark results for '{table.algorithm}' {table.kind}{how} ({label}):"


def params_line(table: Table) -> list[str]:
    """``parameters: N=16384, r=8, p=1`` under a KDF's header (none for other tables)."""
    return [f"parameters: {table.params}"] if table.params else []


#: The verbose line's note for a round of one operation: it already took min-time.
ONE_OPERATION = " (one operation per round: a single one already takes min-time)"


def verbose_block(table: Table) -> list[str]:
    """qcrypto's ``-v`` lines: the plugin list, then per plugin one line per measured size
    (``executed 2048 digests of size 16 bytes in 0.11 secs``), or per operation
    (``executed 512 signs in 0.10 secs``)."""
    lines = [f"Benchmarking '{table.algorithm}' {table.kind} on the following plugin(s): "
             f"{', '.join(table.plugins)}"]
    for plugin in table.plugins:
        lines.append(f"plugin: {plugin}")
        for column in table.columns:
            cell = table.cells.get((plugin, column))
            if cell is not None and cell.measurement is not None \
                    and not cell.measurement.figure_only:
                m = cell.measurement
                if table.sized:
                    lines.append(f"executed {m.count} {_verb(table)} of size {column} bytes "
                                 f"in {m.median_s:.2f} secs")
                else:
                    one = ONE_OPERATION if m.count == 1 and not m.calibration_note else ""
                    lines.append(f"executed {m.count} {catalog.Direction(column).verb} in "
                                 f"{m.median_s:.2f} secs{one}")
    return lines


def cell_text(cell: Cell | None, unit: str = "KiB/s") -> str:
    """A cell in ``unit`` with two decimals, or its marker."""
    if cell is None:
        return MARKERS[SKIPPED]
    if cell.measurement is not None:  # (a test that failed after measuring: marked so)
        return f"{UNITS[unit].of(cell.measurement):.2f}" + (
            f" ({FAILED})" if cell.status == FAILED else "")
    return MARKERS.get(cell.status, "?")


def table_lines(table: Table, unit: str = "KiB/s") -> list[str]:
    """The header, the column line and one row per plugin, then the marker notes; an
    outlier cell (:mod:`.outliers`) is marked ``?`` and said under the table."""
    shown = unit_of(table, unit)
    odd = outliers.outliers(table)
    texts = {(p, s): cell_text(table.cells.get((p, s)), shown)
             + (outliers.MARK if (p, s) in odd else "") for p in table.plugins
             for s in table.columns}
    return [header(table, unit), *params_line(table), *grid(table.plugins, table.columns, texts),
            *notes(table), *(outliers.note(p, s, why) for (p, s), why in odd.items())]


def grid(rows: Sequence[str], sizes: Sequence[Any],
         texts: Mapping[tuple[str, Any], str]) -> list[str]:
    """The column line and one line per row: labels left-aligned one wider than the longest
    (or ``plugin``), each column right-aligned two wider than its widest text or size."""
    label_w = max(len(p) for p in ("plugin", *rows)) + 1
    cell_w = max(len(t) for t in (*texts.values(), *(str(s) for s in sizes))) + 2
    lines = ["plugin".ljust(label_w) + "".join(str(s).rjust(cell_w) for s in sizes)]
    for p in rows:
        lines.append(p.ljust(label_w) + "".join(texts[(p, s)].rjust(cell_w) for s in sizes))
    return lines


def notes(table: Table) -> list[str]:
    """One line per distinct reason a cell has no figure, and the drivers of kernel rows."""
    out: list[str] = []
    seen: set[tuple[str, str, str]] = set()
    for p in table.plugins:
        for s in table.columns:
            cell = table.cells.get((p, s))
            status = cell.status if cell is not None and cell.measurement is None else ""
            if cell is not None and cell.measurement is not None and cell.status == FAILED:
                out.append(f"  {MARKERS[FAILED]} {p} ({where_in(table, [str(s)])}) "
                           f"{cell.reason} (its figure is kept, saved with the outcome, never "
                           "used as a baseline)")
                continue
            if cell is None:
                status, reason = status_reason(cell, table, (p, s))
            elif status:
                reason = cell.reason
            else:
                continue
            if (p, status, reason) in seen:
                continue
            seen.add((p, status, reason))
            sizes = [str(x) for x in table.columns
                     if status_reason(table.cells.get((p, x)), table, (p, x)) == (status, reason)]
            where = where_in(table, sizes)
            # a cell no test measured (or a file lacks) was not skipped: say only why it is empty
            said = f" {status}" if cell is not None else ""
            out.append(f"  {MARKERS[status]} {p} ({where}){said}: {reason}")
    for p in table.plugins:
        drivers = {(c.measurement.driver, c.measurement.hardware)
                   for (q, _), c in table.cells.items()
                   if q == p and c.measurement is not None and c.measurement.driver}
        for driver, hw in sorted(drivers, key=str):
            kind = "hardware" if hw else "software" if hw is False else "hardware: unknown"
            out.append(f"  {p}: driver {driver} ({kind})")
    for p in table.plugins:
        if p in table.machines:  # a joined report's row label says it already: xN jobs
            continue
        jobs = sorted({c.measurement.jobs for (q, _), c in table.cells.items()
                       if q == p and c.measurement is not None} - {1}, key=str)
        for n in jobs:
            out.append(f"  {p}: the summed throughput of {n} processes at once "
                       f"(--qcrypto-jobs {n})")
    return out + gil.table_notes(table)  # --qcrypto-threads: the scaling lines


def where_in(table: Table, columns: Sequence[str]) -> str:
    """``all sizes``, ``size 16, 64``; ``all operations``, ``verify``: which columns a note
    is about."""
    if len(columns) == len(table.columns):
        return "all sizes" if table.sized else "all operations"
    return f"size {', '.join(columns)}" if table.sized else ", ".join(columns)


def status_reason(cell: Cell | None, table: Table, where: tuple[str, Any] = ("", 0)
                  ) -> tuple[str, str]:
    if cell is None:  # a joined report's rows come from files, not from this run
        return SKIPPED, table.absent.get(where) or (
            "not in this results file" if table.machines else "not measured in this run")
    if cell.measurement is not None:
        return "", ""
    return cell.status, cell.reason


# -- the change grid (compare mode) --------------------------------------------------------------

#: The text of a cell of a :class:`Changes` grid that has nothing to say.
NO_CHANGE = "-"


@dataclass(frozen=True)
class Changes:
    """The change against a baseline of each cell of one table, as the gate judged it.

    ``title`` is the line above the grid (``Change against baseline base.json
    (negative = slower):``); ``texts`` maps (plugin as typed, size in bytes)
    to the cell's text (``-3.2%!``, ``new``, ``missing``, or :data:`NO_CHANGE`)
    for every row of ``plugins`` and column of ``sizes``; ``notes`` explain the
    marks used (``! regression: ...``), one line each.
    """

    title: str
    plugins: tuple[str, ...]
    sizes: tuple[int, ...]
    texts: Mapping[tuple[str, int], str]
    notes: tuple[str, ...] = ()


def change_lines(changes: Changes | Sequence[str] | None) -> list[str]:
    """The grid under a table: the title, the column line, a line per plugin, the notes
    (indented by two).  Nothing when no cell has a change to show (all :data:`NO_CHANGE`).

    Lines already drawn (a sequence of str) are returned as they are.
    """
    if changes is None:
        return []
    if not isinstance(changes, Changes):
        return list(changes)
    if all(t == NO_CHANGE for t in changes.texts.values()):
        return []
    return [changes.title, *grid(changes.plugins, changes.sizes, changes.texts),
            *(f"  {note}" for note in changes.notes)]



# -- the gate's outcome as tables (a markdown summary) -------------------------------------------


@dataclass(frozen=True)
class SummaryTable:
    """A small table of text: ``title`` (``Regressions (2)``), the ``columns``' names, the
    ``rows`` (each a cell per column) and which columns hold numbers (``numeric``, by index:
    right-aligned)."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[int, ...] = ()


@dataclass(frozen=True)
class GateTables:
    """The regression gate's outcome for a summary: ``heading``, one sentence (the baseline,
    the threshold, the tries), then ``tables`` (regressions, cells below their floor,
    suspicious speed-ups, the count of each verdict), those with rows only."""

    heading: str
    tables: tuple[SummaryTable, ...] = ()
