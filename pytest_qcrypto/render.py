"""Rendering results as text: qcrypto's verbose block and its KiB/s tables.

The layout follows QNX's ``qcrypto speed``::

    Benchmarking 'sha256' digest on the following plugin(s): openssl, pycryptodome
    plugin: openssl
    executed 2097152 digests of size 16 bytes in 0.64 secs

    Benchmark results for 'sha256' digest (KiB/s):
    plugin           16         64      32768
    openssl    55381.58  154240.87  579293.17

Cells are the median round's ``count * size / seconds / 1024`` with two
decimals.  The label column is one wider than the longest plugin name; every
number column is two wider than the widest cell of the table.  A cell that was
not measured shows a marker from :data:`MARKERS`, explained under the table.

Beside that layout: other units (:data:`UNITS`, ``--qcrypto-unit``) and other
formats (:data:`FORMATS`, ``--qcrypto-format``): ``openssl`` (the layout of
``openssl speed``), ``markdown`` (for a CI job summary) and ``csv``.
:func:`write_summary` sends the chosen format to the terminal (or, with
``--qcrypto-bare``, to standard output alone), appends markdown to
``$GITHUB_STEP_SUMMARY`` when that is set, and writes ``--qcrypto-plot``.
Nothing here imports pytest.
"""

from __future__ import annotations

import csv
import io
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from pytest_qcrypto.harness import Measurement
from pytest_qcrypto.settings import SettingsError

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
#: One operation is one buffer of the column's size.
UNITS: dict[str, Unit] = {u.name: u for u in (
    Unit("KiB/s", "KiB/s", lambda m: m.kib_per_s),
    Unit("MiB/s", "MiB/s", lambda m: m.bytes_per_second / (1024 * 1024)),
    Unit("kB/s", "kB/s, 1 kB = 1000 bytes", lambda m: m.bytes_per_second / 1000),
    Unit("MB/s", "MB/s, 1 MB = 1000000 bytes", lambda m: m.bytes_per_second / 1_000_000),
    Unit("ops/s", "ops/s", lambda m: m.count / m.median_s),
    Unit("ns/op", "ns/op", lambda m: m.median_s / m.count * 1e9, faster_is_higher=False),
)}
DEFAULT_UNIT = "KiB/s"
#: ``--qcrypto-format`` choices; the first is the default.
FORMATS = ("qcrypto", "openssl", "markdown", "csv")
#: Suffixes ``--qcrypto-plot`` can write.
PLOT_SUFFIXES = (".png", ".svg", ".html")


@dataclass(frozen=True)
class Cell:
    """One table cell: a measurement, or a skipped / failed marker with its reason."""

    measurement: Measurement | None = None
    status: str = ""
    reason: str = ""


@dataclass(frozen=True)
class Table:
    """The results of one algorithm in one direction: rows = plugins (as typed), columns = sizes."""

    algorithm: str
    kind: str  # "digest" or "cipher", the word of the header
    direction: str  # "digest", "encrypt" or "decrypt"
    plugins: tuple[str, ...]
    sizes: tuple[int, ...]
    cells: dict[tuple[str, int], Cell]
    #: Row label -> machine, for tables joined across machines (``qcrypto report``).
    machines: Mapping[str, str] = field(default_factory=dict)


def _verb(table: Table) -> str:
    return {"digest": "digests", "encrypt": "encryptions", "decrypt": "decryptions"}[table.direction]


def header(table: Table, unit: str = "KiB/s") -> str:
    """``Benchmark results for 'aes-128-cbc' cipher, decrypt (KiB/s):``."""
    how = ", decrypt" if table.direction == "decrypt" else ""
    return f"Benchmark results for '{table.algorithm}' {table.kind}{how} ({UNITS[unit].label}):"


def verbose_block(table: Table) -> list[str]:
    """qcrypto's ``-v`` lines: the plugin list, then per plugin one line per measured size."""
    lines = [f"Benchmarking '{table.algorithm}' {table.kind} on the following plugin(s): "
             f"{', '.join(table.plugins)}"]
    for plugin in table.plugins:
        lines.append(f"plugin: {plugin}")
        for size in table.sizes:
            cell = table.cells.get((plugin, size))
            if cell is not None and cell.measurement is not None \
                    and not cell.measurement.figure_only:
                m = cell.measurement
                lines.append(f"executed {m.count} {_verb(table)} of size {size} bytes "
                             f"in {m.median_s:.2f} secs")
    return lines


def _cell_text(cell: Cell | None, unit: str = "KiB/s") -> str:
    if cell is None:
        return MARKERS[SKIPPED]
    if cell.measurement is not None:
        return f"{UNITS[unit].of(cell.measurement):.2f}"
    return MARKERS.get(cell.status, "?")


def table_lines(table: Table, unit: str = "KiB/s") -> list[str]:
    """The header, the column line and one row per plugin, then the marker notes."""
    texts = {(p, s): _cell_text(table.cells.get((p, s)), unit) for p in table.plugins
             for s in table.sizes}
    label_w = max(len(p) for p in ("plugin", *table.plugins)) + 1
    cell_w = max(len(t) for t in (*texts.values(), *(str(s) for s in table.sizes))) + 2
    lines = [header(table, unit),
             "plugin".ljust(label_w) + "".join(str(s).rjust(cell_w) for s in table.sizes)]
    for p in table.plugins:
        lines.append(p.ljust(label_w) + "".join(texts[(p, s)].rjust(cell_w) for s in table.sizes))
    lines.extend(notes(table))
    return lines


def notes(table: Table) -> list[str]:
    """One line per distinct reason a cell has no figure, and the drivers of kernel rows."""
    out: list[str] = []
    seen: set[tuple[str, str, str]] = set()
    for p in table.plugins:
        for s in table.sizes:
            cell = table.cells.get((p, s))
            status = cell.status if cell is not None and cell.measurement is None else ""
            if cell is None:
                status, reason = _status_reason(cell, table)
            elif status:
                reason = cell.reason
            else:
                continue
            if (p, status, reason) in seen:
                continue
            seen.add((p, status, reason))
            sizes = [str(x) for x in table.sizes
                     if _status_reason(table.cells.get((p, x)), table) == (status, reason)]
            where = "all sizes" if len(sizes) == len(table.sizes) else f"size {', '.join(sizes)}"
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
        jobs = sorted({c.measurement.jobs for (q, _), c in table.cells.items()
                       if q == p and c.measurement is not None} - {1}, key=str)
        for n in jobs:
            out.append(f"  {p}: the summed throughput of {n} processes at once "
                       f"(--qcrypto-jobs {n})")
    return out


def _status_reason(cell: Cell | None, table: Table) -> tuple[str, str]:
    if cell is None:  # a joined report's rows come from files, not from this run
        return SKIPPED, ("not in this results file" if table.machines
                         else "not measured in this run")
    if cell.measurement is not None:
        return "", ""
    return cell.status, cell.reason


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


# -- other formats ---------------------------------------------------------------

#: The sentence ``openssl speed`` prints above its table.
OPENSSL_SENTENCE = "The 'numbers' are in 1000s of bytes per second processed."


def _openssl_label(table: Table, plugin: str, with_plugin: bool) -> str:
    label = table.algorithm + ("-decrypt" if table.direction == "decrypt" else "")
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


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def _md_note(note: str) -> str:
    """A note line as a list item, its marker (``-``, ``x``) in code so it is not a bullet."""
    marker, _, rest = note.strip().partition(" ")
    if marker in MARKERS.values():
        return f"`{marker}` {_md(rest)}"
    return _md(note.strip())


def markdown_lines(tables: Sequence[Table], unit: str = DEFAULT_UNIT) -> list[str]:
    """Each table as a GitHub-flavoured markdown heading, table and list of notes."""
    lines: list[str] = []
    for t in tables:
        lines += [f"### {header(t, unit).removesuffix(':')}", "",
                  "| plugin | " + " | ".join(str(s) for s in t.sizes) + " |",
                  "| :--- |" + " ---: |" * len(t.sizes)]
        for p in t.plugins:
            cells = [_cell_text(t.cells.get((p, s)), unit) for s in t.sizes]
            lines.append(f"| {_md(p)} | " + " | ".join(cells) + " |")
        extra = notes(t)
        if extra:
            lines.append("")
            lines.extend(f"- {_md_note(n)}" for n in extra)
        lines.append("")
    return lines[:-1]


CSV_COLUMNS = ("algorithm", "direction", "plugin", "size", "unit", "value", "count",
               "seconds", "status", "reason")


def csv_lines(tables: Sequence[Table], unit: str = DEFAULT_UNIT) -> list[str]:
    """One header line, then one line per cell in table order.

    ``value`` is the cell in ``unit`` with two decimals, ``count`` the
    operations per round and ``seconds`` the median round's wall time; cells
    without a figure have ``status`` skipped or failed and their reason.
    Tables joined across machines get a ``machine`` column before ``plugin``.
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
            for s in t.sizes:
                cell = t.cells.get((p, s))
                m = cell.measurement if cell is not None else None
                status, reason = _status_reason(cell, t)
                row: list[object] = [t.algorithm, t.direction, p, s, unit]
                if m is not None:
                    row += [f"{UNITS[unit].of(m):.2f}", m.count, f"{m.median_s:.9f}", "ok", ""]
                else:
                    row += ["", "", "", status, reason]
                if by_machine:  # the row label less its machine: the same for every cell
                    machine = t.machines.get(p, "")
                    row.insert(columns.index("machine"), machine)
                    row[columns.index("plugin")] = p.removeprefix(f"{machine}/")
                out.writerow(row)
    return buf.getvalue().splitlines()


def format_lines(tables: Sequence[Table], fmt: str = "qcrypto", unit: str = DEFAULT_UNIT,
                 verbose: bool = False) -> list[str]:
    """The tables in one of :data:`FORMATS`; only ``qcrypto`` has a verbose block."""
    if fmt == "openssl":
        return openssl_lines(tables)
    if fmt == "markdown":
        return markdown_lines(tables, unit)
    if fmt == "csv":
        return csv_lines(tables, unit)
    return report(tables, verbose, unit)


# -- output options --------------------------------------------------------------

@dataclass(frozen=True)
class Output:
    """The checked output options of a run: unit, format, plot paths (absolute, each
    once; None is none), bare standard output."""

    unit: str = DEFAULT_UNIT
    format: str = FORMATS[0]
    plots: tuple[str, ...] = ()
    bare: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "plots", tuple(self.plots or ()))


def parse_output(unit: str | None = None, fmt: str | None = None,
                 plot: str | Sequence[str] | None = None, bare: bool = False) -> Output:
    """Check the output options; :class:`SettingsError` naming the valid choices.

    ``plot`` is one path or several (each checked; one file given twice is
    written once).
    """
    if unit is not None and unit not in UNITS:
        same = [u for u in UNITS if u.lower() == unit.lower()]
        hint = (f"; units are case-sensitive (k = 1000, Ki = 1024, b = bit): "
                f"did you mean {same[0]}?" if same else ".")
        raise SettingsError(f"--qcrypto-unit: unknown unit {unit!r}{hint} "
                            f"Valid units: {', '.join(UNITS)}")
    if fmt is not None and fmt not in FORMATS:
        raise SettingsError(f"--qcrypto-format: unknown format {fmt!r}. "
                            f"Valid formats: {', '.join(FORMATS)}")
    if fmt == "openssl":
        if unit is not None:
            raise SettingsError(
                f"--qcrypto-unit {unit} cannot be used with --qcrypto-format openssl, "
                "whose unit is fixed: 1000s of bytes per second, as openssl speed prints")
        unit = "kB/s"
    paths = [plot] if isinstance(plot, str) else list(plot or ())
    if paths:
        from pytest_qcrypto import plot as plotting

        for path in paths:
            plotting.check_path(path)
    # where the run started, like --junitxml
    plots = tuple(dict.fromkeys(os.path.abspath(path) for path in paths))
    return Output(unit or DEFAULT_UNIT, fmt or FORMATS[0], plots, bool(bare))


def output_of(getoption: Callable[[str], Any]) -> Output:
    """:func:`parse_output` of a pytest config's options (``config.getoption``)."""
    return parse_output(getoption("qcrypto_unit"), getoption("qcrypto_format"),
                        getoption("qcrypto_plot"), getoption("qcrypto_bare"))


def write_summary(terminal: Any, tables: Sequence[Table], output: Output, verbose: bool,
                  after_table: Callable[[Table], list[str]] | None = None,
                  baseline: Sequence[Table] = (), title: str = "qcrypto speed",
                  stdout: Any = None) -> list[str]:
    """Show the tables at the end of a run, and write the step summary and the plot.

    ``terminal`` is pytest's terminal reporter (``write_sep``, ``write_line``).
    ``after_table(table)`` gives lines shown under a table in the qcrypto
    format (the gate's changes against a baseline); in the other formats they
    follow all tables on the terminal.  With ``output.bare`` the formatted
    lines go to ``stdout`` (default ``sys.stdout``) without a separator, and
    only they do.  When ``$GITHUB_STEP_SUMMARY`` names a file, the markdown
    tables are appended to it.  ``baseline`` tables (of a compared run) are
    drawn dashed in the plot.  A file that cannot be written is reported on
    the terminal, not raised; the problems are returned (see :func:`write_files`).
    """
    under = after_table or (lambda table: [])
    side: list[str] = []
    if output.format == "qcrypto":
        lines: list[str] = []
        for i, table in enumerate(tables):
            lines += ([""] if i else []) + report([table], verbose, output.unit) + under(table)
    else:
        lines = format_lines(tables, output.format, output.unit, verbose)
        side = [line for table in tables for line in under(table)]
    if output.bare:
        out = stdout or sys.stdout
        out.write("".join(f"{line}\n" for line in lines))
        out.flush()
    else:
        terminal.write_sep("=", title)
        side = lines + ([""] if lines and side else []) + side
    for line in side:
        terminal.write_line(line)
    problems, plotted = write_files(tables, output, baseline)
    for problem in problems:
        terminal.write_line(f"ERROR: {problem}", red=True)
    for path in plotted:
        terminal.write_line(f"qcrypto: plot written to {path}")
    return problems


#: How a problem with the plot starts (:func:`write_files`).
PLOT_PROBLEM = "qcrypto: could not write the plot"


def write_files(tables: Sequence[Table], output: Output, baseline: Sequence[Table] = (),
                text: Sequence[str] | None = None) -> tuple[list[str], list[str]]:
    """Append to ``$GITHUB_STEP_SUMMARY`` and write every plot of ``output.plots``: the
    problems met and the plots written.

    ``text`` goes under the plots of an HTML page (default: the tables as printed).
    """
    problems: list[str] = []
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as f:
                f.write("".join(f"{line}\n" for line in markdown_lines(tables, output.unit)))
                f.write("\n")
        except OSError as exc:
            problems.append(f"cannot append to GITHUB_STEP_SUMMARY {summary}: {exc}")
    plotted: list[str] = []
    if output.plots:
        from pytest_qcrypto import plot as plotting
        from pytest_qcrypto.results import NotARegularFile

        page = format_lines(tables, output.format, output.unit) if text is None else text
        for path in output.plots:
            try:
                plotting.write(path, tables, output.unit, baseline, text=page)
            except NotARegularFile as exc:  # its text names the path already
                problems.append(f"{PLOT_PROBLEM}: {exc.strerror}")
            except (OSError, plotting.PlotError) as exc:  # as a failed --qcrypto-save says it
                problems.append(f"{PLOT_PROBLEM} to {path}: "
                                f"{getattr(exc, 'strerror', None) or exc}")
            else:
                plotted.append(path)
    return problems, plotted



# -- one report across machines ---------------------------------------------------

def _measurement(r: Any) -> Measurement:
    """A saved result (``results.Result``) as a Measurement with the same median figure.

    A result without counts and rounds (schema 1) becomes one operation of its
    size in ``size / bytes_per_second`` seconds.
    """
    if r.count and r.rounds_s:
        count, rounds, figure_only = r.count, tuple(r.rounds_s), False
    else:
        count, rounds, figure_only = 1, (r.size / r.bytes_per_second,), True
    return Measurement(r.algorithm, r.plugin, r.size, r.direction, count, rounds,
                       tuple(r.cpu_s), r.canonical_plugin, r.operation, r.driver, r.hardware,
                       figure_only=figure_only)


def machine_labels(names: Sequence[str]) -> list[str]:
    """Short row labels for results files: the file name without ``.json``, made unique."""
    from pathlib import PurePath

    stems = [PurePath(n).name.removesuffix(".json") for n in names]
    labels: list[str] = []
    for i, (stem, name) in enumerate(zip(stems, names)):
        label = stem if stems.count(stem) == 1 else name
        labels.append(label if label not in labels else f"{label}#{i + 1}")
    return labels


def saved_tables(rows: Iterable[tuple[str, Any]],
                 machines: Mapping[str, str] | None = None) -> list[Table]:
    """Tables of saved results (``results.Result``), each given with its row label.

    One table per (algorithm, direction) in first-seen order, rows in
    first-seen order, the sizes all those measured.  ``machines`` maps row
    labels to machines (joined reports).
    """
    from pytest_qcrypto import catalog

    grouped: dict[tuple[str, str], dict[tuple[str, int], Cell]] = {}
    order: dict[tuple[str, str], list[str]] = {}
    for row, r in rows:
        key = (r.algorithm, r.direction)
        grouped.setdefault(key, {})[(row, r.size)] = Cell(_measurement(r))
        if row not in order.setdefault(key, []):
            order[key].append(row)
    tables = []
    for (name, direction), cells in grouped.items():
        alg = catalog.lookup(name)
        kind = alg.table_kind if alg is not None else (
            "digest" if direction == "digest" else "cipher")
        labels = tuple(order[(name, direction)])
        tables.append(Table(alg.name if alg else name, kind, direction, labels,
                            tuple(sorted({s for _, s in cells})), cells,
                            {r: machines[r] for r in labels if r in machines} if machines else {}))
    return tables


def baseline_tables(baseline: Any) -> list[Table]:
    """The tables of a baseline ``results.ResultsFile`` (rows: plugins as typed); [] for None."""
    if baseline is None:
        return []
    names = _row_names(baseline.results, jobs=False)
    return saved_tables((names[_plugin_of(r)], r) for r in baseline.results)


def joined_tables(files: Sequence[Any], names: Sequence[str]) -> tuple[list[Table], list[str]]:
    """Saved results files (``results.ResultsFile``) joined: tables and their legend.

    One table per (algorithm, direction); a row per machine and plugin,
    labelled ``MACHINE/PLUGIN`` where MACHINE is the file's label from
    :func:`machine_labels`.  The legend names each machine's file and
    fingerprint and every field in which the fingerprints, or the plugins'
    versions or per-algorithm implementations, differ.
    """
    labels = machine_labels(names)
    rows: list[tuple[str, Any]] = []
    machines: dict[str, str] = {}
    for label, f in zip(labels, files):
        plugins = _row_names(f.results)
        for r in f.results:
            rows.append((f"{label}/{plugins[_plugin_of(r)]}", r))
            machines[rows[-1][0]] = label
    return saved_tables(rows, machines), legend(files, labels)


def _plugin_of(r: Any) -> tuple[str, int]:
    """What a row of a saved result stands for: its canonical plugin and its jobs."""
    return r.canonical_plugin or r.plugin, r.jobs


def _row_names(saved: Iterable[Any], jobs: bool = True) -> dict[tuple[str, int], str]:
    """Row labels of one file's results, per :func:`_plugin_of`: the plugin as typed, or its
    canonical name when the file typed it in two ways (``pyca`` and ``openssl``: one
    plugin, one row); with ``jobs``, ``xN jobs`` after it when N processes measured at
    once, so a sum over processes never shares a row with one process's figure.
    """
    typed: dict[tuple[str, int], list[str]] = {}
    for r in saved:
        names = typed.setdefault(_plugin_of(r), [])
        if r.plugin not in names:
            names.append(r.plugin)
    return {(canonical, n): (names[0] if len(names) == 1 else canonical)
            + (f" x{n} jobs" if jobs and n != 1 else "")
            for (canonical, n), names in typed.items()}


def _describe_machine(m: Mapping[str, Any]) -> str:
    if not m:
        return "no fingerprint recorded"
    parts = [str(m.get("cpu_model", "unknown CPU")), str(m.get("architecture", "")),
             f"{m['cores']} cores" if "cores" in m else "",
             f"{m.get('os', '')} {m.get('kernel', '')}".strip(), str(m.get("libc", "")),
             str(m.get("python", ""))]
    return ", ".join(p for p in parts if p)


def _differences(values: Sequence[tuple[str, Any]], key: str) -> str | None:
    """``key: a=..., b=...`` when the recorded values differ, else None."""
    known = [(label, v) for label, v in values if v is not None]
    if len({repr(v) for _, v in known}) <= 1:
        return None
    if key == "cpu_flags" and all(isinstance(v, list) for _, v in known):
        common = set.intersection(*(set(v) for _, v in known))
        odd = sorted({flag for _, v in known for flag in v} - common)
        return f"{key}: " + ", ".join(
            f"{flag} ({' '.join(label for label, v in known if flag in v)})" for flag in odd)
    return f"{key}: " + ", ".join(f"{label}={v}" for label, v in known)


def _implementation_differences(plugin: str, files: Sequence[Any],
                                labels: Sequence[str]) -> list[str]:
    """``hashlib blake2b512, blake2s256: a=CPython's _blake2, b=OpenSSL 3.5.1``.

    The algorithms of ``plugin`` whose recorded implementation (the optional
    ``implementations`` of a ``plugins`` entry) differs between files, grouped
    by the same difference.  A file that does not record one is left out.
    """
    recorded = [(lb, (f.plugins.get(plugin) or {}).get("implementations") or {})
                for lb, f in zip(labels, files)]
    groups: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for name in dict.fromkeys(n for _, impl in recorded for n in impl):
        known = tuple((lb, impl[name]) for lb, impl in recorded if name in impl)
        if len({text for _, text in known}) > 1:
            groups.setdefault(known, []).append(name)
    return [f"{plugin} {', '.join(names)}: " + ", ".join(f"{lb}={text}" for lb, text in known)
            for known, names in groups.items()]


def legend(files: Sequence[Any], labels: Sequence[str]) -> list[str]:
    """The machines of a joined report, and every field that differs between them."""
    lines = ["machines:"]
    for label, f in zip(labels, files):
        where = str(f.path) if getattr(f, "path", None) else label
        state = "" if f.complete else " (incomplete run)"
        lines.append(f"  {label}: {where}{state}: {_describe_machine(f.machine)}")
    keys: list[str] = []
    for f in files:
        keys += [k for k in f.machine if k not in keys]
    diffs = [d for k in keys
             if (d := _differences([(lb, f.machine.get(k)) for lb, f in zip(labels, files)], k))]
    plugins: list[str] = []
    for f in files:
        plugins += [p for p in f.plugins if p not in plugins]
    for p in plugins:
        versions = [(lb, f.plugins[p].get("version")) if p in f.plugins else (lb, None)
                    for lb, f in zip(labels, files)]
        d = _differences(versions, f"{p} version")
        if d:
            diffs.append(d)
        diffs += _implementation_differences(p, files, labels)
    settings: list[str] = []
    for f in files:
        settings += [k for k in f.settings if k not in settings]
    diffs += [d for k in settings
              if (d := _differences([(lb, f.settings.get(k)) for lb, f in zip(labels, files)], k))]
    if len(files) > 1:
        if diffs:
            lines.append("differences:")
            lines.extend(f"  {d}" for d in diffs)
        else:
            lines.append("same fingerprint, plugin versions and settings on every machine")
    return lines


def markdown_legend(lines: Sequence[str]) -> list[str]:
    """The legend as markdown: its headings bold, its entries a list."""
    out: list[str] = []
    for line in lines:
        if line.startswith("  "):
            out.append(f"- {_md(line.strip())}")
        else:
            out += ["", f"**{_md(line.rstrip(':'))}**", ""]
    return out[1:] if out and out[0] == "" else out
