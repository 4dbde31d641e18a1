"""``qcrypto report``: saved results files joined into one table per algorithm and direction.

Each file (``--qcrypto-save``, from another machine or run) gives a row per
plugin, labelled ``MACHINE/PLUGIN``; a legend names each machine's file and
fingerprint and every field in which the files differ.  :func:`run` is the
command: it checks its options, loads the files, prints the joined tables in
the chosen layout with the legend as their notes, and has the plots written
by the :class:`.render.Plotter` it is given (``plot.PLOTTER``).  The tables of
a baseline (:func:`baseline_tables`) are made here too.  Nothing here imports
pytest.
"""

from __future__ import annotations

from pytest_qcrypto.measure import counting, cycles

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path, PurePath
from typing import Any

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.results import store as results
from pytest_qcrypto.measure.harness import KIB, Measurement, WorkerRecord
from pytest_qcrypto.output.layouts import LAYOUTS, Figures, markdown_legend  # noqa: F401 (re-export)
from pytest_qcrypto.output.render import Plotter, parse_output, write_files
from pytest_qcrypto.algorithms.settings import SettingsError
from pytest_qcrypto.output.tables import Cell, Table, assemble, grouped_cells

#: The exit codes of :func:`run` (pytest's: 0 ok, 1 a file not written, 4 a usage error).
OK, NOT_WRITTEN, USAGE_ERROR = 0, 1, 4


def run(files: Sequence[str], unit: str | None = None, fmt: str | None = None,
        plot: str | Sequence[str] | None = None, stdout: Any = None, verbose: bool = False,
        plotter: Plotter | None = None) -> int:
    """``qcrypto report``: print saved results joined into one table per algorithm.

    ``verbose`` puts qcrypto's ``executed N digests of size S bytes in T secs``
    block before each table (qcrypto layout only; cells saved without counts,
    schema 1, have no line).  ``plotter`` checks and writes the ``plot`` paths
    (``ValueError`` when there are any and no plotter).

    Returns 0, 4 for a bad option (a plot path whose directory is missing,
    for one) or an unreadable file (named on standard error), or 1 when the
    plot or the step summary still cannot be written after the tables.
    """
    out = stdout or sys.stdout
    try:
        output = parse_output(unit, fmt, plot, plotter=plotter)
        if output.plots and plotter is None:
            raise ValueError("qcrypto report: plots to write and no plotter: pass plot.PLOTTER")
        if output.plots and plotter is not None:
            for typed in [plot] if isinstance(plot, str) else plot or ():
                plotter.check_writable(typed)
        loaded = [results.load(Path(f)) for f in files]
        for f, doc in zip(files, loaded):
            if not doc.results:
                raise SettingsError(f"qcrypto report: {f}: no results (the run that wrote it "
                                    "measured nothing); leave it out or save a run that did")
    except (SettingsError, results.ResultsError) as exc:
        sys.stderr.write(f"ERROR: {exc}\n")
        return USAGE_ERROR
    tables, legend = joined_tables(loaded, [str(f) for f in files])
    if output.unit == "cpb":  # each file's cycles at its own saved rate, else this machine's
        try:
            tables, legend = with_cycle_rates(tables, legend, loaded, [str(f) for f in files])
        except SettingsError as exc:
            sys.stderr.write(f"ERROR: {exc}\n")
            return USAGE_ERROR
    lines = LAYOUTS[output.format].draw(Figures(tables, output.unit, verbose, notes=legend))
    out.write("".join(f"{line}\n" for line in lines))
    out.flush()
    problems, plotted = write_files(tables, output, text=lines, plotter=plotter)
    for problem in problems:
        sys.stderr.write(f"ERROR: {problem}\n")
    for path in plotted:
        sys.stderr.write(f"qcrypto: plot written to {path}\n")  # stdout: tables only
    return NOT_WRITTEN if problems else OK


def _measurement(r: Any) -> Measurement:
    """A saved result (``results.Result``) as a Measurement with the same median figure.

    A result without counts and rounds (schema 1) becomes one operation of its
    size in ``size / bytes_per_second`` seconds.
    """
    if r.count and r.rounds_s:
        count, rounds, figure_only = r.count, tuple(r.rounds_s), False
    else:
        per_iteration = catalog.OPERATIONS_PER_ITERATION.get(r.direction, 1)
        count, rounds, figure_only = 1, (per_iteration * (r.size or 1) / r.bytes_per_second,), True
    per_iteration = catalog.OPERATIONS_PER_ITERATION.get(r.direction, 1)
    workers = tuple(
        WorkerRecord(w.count, tuple(w.rounds_s), tuple(w.cpu_s),
                     tuple(w.count * per_iteration * r.size / s / KIB for s in w.rounds_s))  # 0: size-less
        for w in getattr(r, "workers", ())) if not figure_only else ()
    return Measurement(r.algorithm, r.plugin, r.size, r.direction, count, rounds,
                       tuple(r.cpu_s), r.canonical_plugin, r.operation, r.driver, r.hardware,
                       jobs=max(int(getattr(r, "jobs", 1) or 1), 1), workers=workers,
                       figure_only=figure_only, iv=getattr(r, "iv", ""),
                       threads=getattr(r, "threads", 1),
                       one_thread_bps=getattr(r, "one_thread_bytes_per_second", None),
                       counted=counting.from_record(r.instructions)
                       if getattr(r, "instructions", None) else None)


def machine_labels(names: Sequence[str]) -> list[str]:
    """Short row labels for results files: the file name without ``.json``, made unique."""
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
    grouped = grouped_cells((r.algorithm, row, r.size, r.direction, Cell(_measurement(r)))
                            for row, r in rows)
    return [assemble(name, direction, list(dict.fromkeys(row for row, _ in cells)), cells,
                     machines) for (name, direction), cells in grouped.items()]


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


def with_cycle_rates(tables: list[Table], legend: list[str], files: Sequence[Any],
                     names: Sequence[str]) -> tuple[list[Table], list[str]]:
    """``--qcrypto-unit=cpb`` of saved files: every cell converts at its file's saved cycle rate
    (``settings.cycle_rate``, :mod:`pytest_qcrypto.measure.cycles`), or at this machine's
    when the file has none, and the legend says which; ``SettingsError`` when neither is known."""
    rates: dict[str, Any] = {}
    for label, f in zip(machine_labels(names), files):
        rate = cycles.CycleRate.of(f.settings.get("cycle_rate"))
        where = "saved with the run"
        if rate is None:
            rate, where = cycles.reference(), "not saved with the run: this machine's"
        if rate is None:
            raise SettingsError(f"qcrypto report: {label}: no cycle rate saved with the run, and "
                                f"{cycles.problem()}")
        rates[label] = rate
        legend.append(f"cycles of {label} = seconds x {rate.label} ({where})")
    return [replace(t, cells={k: replace(c, measurement=replace(
        c.measurement, cycle_rate=rates[t.machines.get(k[0], next(iter(rates)))]))
        if c.measurement is not None else c for k, c in t.cells.items()})
        for t in tables], legend


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
