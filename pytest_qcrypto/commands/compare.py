"""``qcrypto compare BASE.json CURRENT.json``: gate a saved run against a saved baseline.

For a CI job after sharded runs (each saved with ``--qcrypto-save``): every result of
CURRENT is judged against the same cell of BASE by the rules of ``pytest
--qcrypto-compare`` -- :func:`pytest_qcrypto.gate.verdicts.criteria` and
:func:`pytest_qcrypto.gate.verdicts.judge`, the thresholds (``--qcrypto-threshold``, ini
``qcrypto_threshold`` and ``qcrypto_thresholds``), the floors (ini ``qcrypto_floors``),
the correction for the wait for a CPU that both files recorded, other ``jobs`` never
judged, and ``--qcrypto-require-same-machine`` (or its ini key) comparing the two
files' fingerprints and library versions.  Nothing is measured again, so there are no
confirmation tries: each cell is judged on its saved figure (the best try of its run),
and the output says so.  A ``floor=`` of a test's ``@pytest.mark.qcrypto`` is not in the
saved file and does not apply.

The ini file is the one a pytest run in this directory would read (``-c FILE``, ``-o
KEY=VALUE`` as pytest takes them): :func:`run` starts :func:`pytest.main` with a plugin
whose ``pytest_cmdline_main`` reads the gate's rules from pytest's configuration, with
the same messages, and judges instead of running tests.

Standard output gets the tables of CURRENT in the chosen layout (``--qcrypto-format``,
``--qcrypto-unit``), each with its change against BASE where the layout draws it;
standard error gets the rest, as with ``qcrypto speed``: the line saying nothing was
re-measured, the change grids of the other layouts, and the gate's summary.  When
``$GITHUB_STEP_SUMMARY`` names a file, the markdown tables are appended to it, as
``qcrypto report`` does (a file that cannot be written: exit 1).

Exit status: 1 when a cell regressed or fell below its floor, or when no cell of
CURRENT had an entry in BASE (:func:`pytest_qcrypto.gate.compare.nothing_judged`); 4 for a
bad file or option (one line on standard error); 0 otherwise.
"""

from __future__ import annotations

from pytest_qcrypto.measure import counting

import re
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.gate import compare, counted as counted_gate, spread as gate_spread, verdicts as gate
from pytest_qcrypto.pytest_side import counting as counting_side
from pytest_qcrypto.output import report
from pytest_qcrypto.results import store as results
from pytest_qcrypto.pytest_side.options import BOOL_INI
from pytest_qcrypto.gate.compare import Baselines
from pytest_qcrypto.gate.verdicts import CellKey, GateRules, Verdict
from pytest_qcrypto.pytest_side.gate import read_rules
from pytest_qcrypto.gate.summary import change_grid, speedup_failure, summary_lines, summary_tables
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.output.layouts import LAYOUTS, Figures
from pytest_qcrypto.output.render import Output, parse_output, write_files
from pytest_qcrypto.algorithms.settings import SettingsError, bool_problem, ini_source

OK, FAILED, USAGE_ERROR = 0, 1, 4
#: The words of the command in messages.
COMMAND = "qcrypto compare"
#: The line that says what was not done.
NOT_REMEASURED = ("qcrypto compare: nothing was re-measured: each cell of {current} is judged "
                  "on its saved figure against {base}, without confirmation tries")


def run(base: str, current: str, threshold: str | None = None,
        require_same_machine: bool = False, unit: str | None = None, fmt: str | None = None,
        pytest_args: Sequence[str] = (), stdout: Any = None) -> int:
    """``qcrypto compare``: judge the saved results ``current`` against the file ``base``.

    ``pytest_args`` go to pytest as they are (``-c FILE``, ``-o KEY=VALUE``): they choose
    the ini file whose ``qcrypto_*`` keys apply.  Returns the exit status (module doc).
    """
    args = ["-p", "no:cacheprovider", *pytest_args]
    if threshold is not None:
        args.append(f"--qcrypto-threshold={threshold}")
    if require_same_machine:
        args.append("--qcrypto-require-same-machine")
    command = _Command(base, current, unit, fmt, stdout)
    return int(pytest.main(args, plugins=[command]))


class _Command:
    """The pytest plugin of :func:`run`: once pytest has read the command line and the ini
    file, it judges the two files instead of running a session."""

    def __init__(self, base: str, current: str, unit: str | None, fmt: str | None,
                 stdout: Any) -> None:
        self.base, self.current, self.unit, self.fmt = base, current, unit, fmt
        self.stdout = stdout

    @pytest.hookimpl(tryfirst=True)
    def pytest_cmdline_main(self, config: pytest.Config) -> int:
        try:
            rules = _rules(config)
            output = parse_output(self.unit, self.fmt)
            base = _load(self.base, "BASE")
            current = _load(self.current, "CURRENT")
            why = counted_gate.mismatch(counted_gate.kind_of(base), counted_gate.kind_of(current),
                                        self.base)
            if why:
                raise SettingsError(why)
            rules.instructions = counting_side.read(config, 1, 1).threshold  # type: ignore
        except (SettingsError, results.ResultsError) as exc:
            sys.stderr.write(f"ERROR: {COMMAND}: {str(exc).removeprefix('--qcrypto-compare: ')}\n")
            return USAGE_ERROR
        figures, lines, notes, status = judge_files(rules, base, current, output, self.base,
                                                    self.current)
        out = self.stdout or sys.stdout
        out.write("".join(f"{line}\n" for line in lines))
        out.flush()
        # $GITHUB_STEP_SUMMARY, as qcrypto report: the tables, change grids and gate tables
        problems, _ = write_files(figures.tables, output, figures=figures)
        notes += [f"ERROR: {problem}" for problem in problems]
        sys.stderr.write("".join(f"{line}\n" for line in notes))
        return FAILED if problems else status


def _rules(config: pytest.Config) -> GateRules:
    """The gate's rules from pytest's configuration (:func:`.gate_plugin.read_rules`); an ini
    key of true or false with another value is a :class:`SettingsError` naming it."""
    for name in BOOL_INI:  # every true/false ini key of the option table
        try:
            config.getini(name)
        except (ValueError, TypeError, pytest.UsageError) as exc:
            where = ini_source(name, config.inipath, config.getoption("override_ini", None))
            found = re.search(r"invalid truth value ('.*')$", str(exc))
            raise SettingsError(bool_problem(where, found.group(1) if found else None)) from None
    rules = read_rules(config)
    rules.confirm = 0  # nothing is measured again
    return rules


def _load(typed: str, what: str) -> results.ResultsFile:
    """A results file that finished and has results (:class:`SettingsError` otherwise)."""
    doc = results.load(Path(typed))
    problem = compare.unusable(doc)
    if problem:
        raise SettingsError(f"{typed} ({what}): {problem}")
    return doc


def measurement(r: results.Result) -> Measurement:
    """A saved result as the :class:`Measurement` it records (jobs included); one without
    counts (schema 1) as one operation of its size in ``size / bytes_per_second`` seconds."""
    count, rounds, figure_only = r.count, tuple(r.rounds_s), False
    if not (count and rounds):
        per_iteration = catalog.OPERATIONS_PER_ITERATION.get(r.direction, 1)
        count, rounds, figure_only = 1, (per_iteration * (r.size or 1) / r.bytes_per_second,), True
    return Measurement(r.algorithm, r.plugin, r.size, r.direction, count, rounds,
                       tuple(r.cpu_s), r.canonical_plugin, r.operation, r.driver, r.hardware,
                       jobs=r.jobs, figure_only=figure_only, iv=r.iv, threads=r.threads,
                       counted=counting.from_record(r.instructions) if r.instructions else None,
                       reference_s=() if figure_only else tuple(r.reference_s),
                       spread_s=0.0 if figure_only else r.spread_s)


def verdicts_of(rules: GateRules, baselines: Baselines,
                current: results.ResultsFile) -> list[tuple[CellKey, Verdict]]:
    """Each result of ``current`` judged against ``baselines`` (cell with the plugin as saved)."""
    out = []
    pairs = [(measurement(r), baselines.for_test(r.key, r.test)) for r in current.results]
    spread = [(m, b) for m, b in pairs if b is not None and m.spread_s]  # for the peers
    for r, (m, base) in zip(current.results, pairs):
        canonical = r.canonical_plugin or r.plugin
        names = [r.plugin, canonical, r.plugin.partition(":")[0], canonical.partition(":")[0]]

        def differences(base: results.Result | None = base, r: results.Result = r) -> list[str]:
            assert base is not None
            return baselines.differences(base, r.plugin, r.canonical_plugin or r.plugin,
                                         lambda typed: _version(current, typed))

        c = gate.criteria(rules, m, names, base, None, differences)
        if m.spread_s and base is not None:  # the same algorithm and size, other plugins
            c = replace(c, peers=tuple(gate_spread.peers_of(m, [p for p in spread
                                                                if p[0] is not m])))
        if m.counted is not None:  # counted instructions: the instruction gate's own rule
            threshold = getattr(rules, "instructions", counted_gate.threshold_rule())
            verdict = counted_gate.judge(m, counted_gate.criteria(c, threshold))
        else:
            verdict = gate.judge([m], [r.cpu_wait_share], c, more=False)
        assert verdict is not None  # more=False: always a verdict
        suspicious = speedup_failure(verdict, rules)  # None unless qcrypto_strict
        if suspicious:
            verdict.failures.append(suspicious)
        out.append(((r.algorithm, r.plugin, r.size, r.direction), verdict))
    return out


def _version(doc: results.ResultsFile, typed: str) -> str | None:
    entry = doc.plugins.get(typed) or {}
    version = entry.get("version")
    return version if isinstance(version, str) else None


def judge_files(rules: GateRules, base: results.ResultsFile, current: results.ResultsFile,
                output: Output = Output(), base_name: str = "", current_name: str = ""
                ) -> tuple[Figures, list[str], list[str], int]:
    """What ``qcrypto compare`` shows and its exit status (0 or 1): the figures of
    ``current`` (its tables, their change grids and the gate's tables), their lines in the
    ``output`` layout (with their change grids when the layout draws them), for standard
    output, and the notes, for standard error, as ``qcrypto speed`` divides them: what was
    not re-measured, the change grids the layout does not draw, the gate's summary."""
    baselines = Baselines([base], now=current.machine)
    judged = verdicts_of(rules, baselines, current)
    cells: dict[CellKey, Verdict] = {}
    for key, v in judged:  # two tests of one cell: the failing verdict shows
        if key not in cells or v.failed or not cells[key].failed:
            cells[key] = v
    tables = report.saved_tables((r.plugin, r) for r in current.results)
    changes = {t.key: grid for t in tables
               if (grid := change_grid(baselines.label, t.algorithm, t.direction, t.plugins,
                                       t.columns, cells, {})) is not None}
    figures = Figures(tables, output.unit, False, changes,
                      gate_tables=summary_tables(rules, baselines, cells, {}))
    layout = LAYOUTS[output.format]
    notes = [NOT_REMEASURED.format(current=current_name or current.path,
                                   base=base_name or base.path)]
    if not layout.draws_changes:
        notes += [x for t in tables for x in figures.changes_under(t)]
    notes += summary_lines(
        rules, baselines, cells, {}, "", baselines.machine_differences(),
        lambda typed, canonical: baselines.library_difference(
            typed, canonical, lambda t: _version(current, t)))
    failed = any(v.failed for _, v in judged)
    nothing = (compare.nothing_judged(baselines, list(cells)) if not baselines.seen
               else compare.none_judged(cells))
    if nothing:
        notes.append(nothing)
        failed = True
    return figures, layout.draw(figures), notes, FAILED if failed else OK
