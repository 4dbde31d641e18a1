"""``qcrypto history``'s judgement: the steps of every series and which of them fail.

:func:`analyse` finds the steps of each series of a :class:`.results.history.History`
(:func:`.steps.find`) and judges each cell by the gate's rules (:class:`.verdicts.GateRules`,
as ``qcrypto compare`` reads them: ``--qcrypto-threshold``, ini ``qcrypto_threshold``,
``qcrypto_thresholds`` and ``qcrypto_floors``): a cell whose latest step is a slowdown beyond
its threshold is a :data:`REGRESSION`; one whose latest level is below its floor is
:data:`BELOW_FLOOR`; either fails ``qcrypto history`` (exit 1).  :func:`lines` is the text
list of steps, each with the runs, commits and versions on either side; :func:`charts`, the
page's charts (:mod:`pytest_qcrypto.output.history_page`).  Plain Python: no pytest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_qcrypto.algorithms.catalog import plural
from pytest_qcrypto.gate import steps as step_finder
from pytest_qcrypto.gate.rules import Rule, cell_column, parse_pattern
from pytest_qcrypto.gate.verdicts import GateRules
from pytest_qcrypto.output.history_page import Chart
from pytest_qcrypto.results.history import History, Run, Series, version_changes

REGRESSION, BELOW_FLOOR, SPEEDUP, STEADY = "regression", "below floor", "speed-up", "steady"
#: The verdicts that fail the command.
FAILING = (REGRESSION, BELOW_FLOOR)


@dataclass(frozen=True)
class CellReport:
    """A series, its steps, the rules that judge it and the verdict (:data:`REGRESSION`,
    :data:`BELOW_FLOOR`, :data:`SPEEDUP`: the latest step is faster, :data:`STEADY`)."""

    series: Series
    steps: tuple[step_finder.Step, ...]
    threshold: Rule
    floor: Rule | None
    verdict: str

    @property
    def latest_level(self) -> float:
        """The level since the latest step (the whole series' without one), in its unit."""
        if self.steps:
            return self.steps[-1].after
        figures = sorted(p.figure for p in self.series.points)
        return figures[len(figures) // 2]


def patterns(texts: Sequence[str]) -> list[Rule]:
    """``-k`` patterns, ``ALGORITHM[:PLUGIN[:SIZE]]`` as in the gate's rules (``*`` a
    wildcard; comma lists allowed), as rules to match cells with; ``SettingsError`` naming a
    bad one."""
    out = []
    for text in texts:
        for part in str(text).split(","):
            if part.strip():
                alg, plugin, size = parse_pattern(part.strip(), f"-k {part.strip()}")
                out.append(Rule(alg, plugin, size, 0.0, part.strip()))
    return out


def _names(series: Series) -> list[str]:
    plugin = series.key[1]
    return [plugin, plugin.partition(":")[0]]


def _wanted(series: Series, wanted: Sequence[Rule]) -> bool:
    algorithm, _, size, direction = series.key[:4]
    return not wanted or any(r.matches(algorithm, _names(series),
                                       cell_column(size, direction)) for r in wanted)


def analyse(history: History, rules: GateRules, wanted: Sequence[Rule] = ()) -> list[CellReport]:
    """Every series of ``history`` that ``wanted`` matches (all when empty), with its steps
    and verdict (module doc), in the history's order."""
    out = []
    for series in history.series:
        if not _wanted(series, wanted):
            continue
        found = tuple(step_finder.find([p.figure for p in series.points],
                                       [p.log_se for p in series.points]))
        algorithm, _, size, direction = series.key[:4]
        column = cell_column(size, direction)
        threshold = rules.thresholds.pick(algorithm, _names(series), column) \
            or rules.default_threshold
        floor = rules.floors.pick(algorithm, _names(series), column)
        verdict = STEADY
        if found:
            verdict = REGRESSION if found[-1].change < -threshold.value / 100 else (
                SPEEDUP if found[-1].change > 0 else STEADY)
        report = CellReport(series, found, threshold, floor, verdict)
        if verdict != REGRESSION and floor is not None and report.latest_level < floor.value:
            report = CellReport(series, found, threshold, floor, BELOW_FLOOR)
        out.append(report)
    return out


def _run_text(history: History, run: Run) -> str:
    """``run 18 (2026-11-19T00:00:00Z, commit 4affb20c9e1d)``."""
    number = history.runs.index(run) + 1
    commit = f"commit {run.short}" if run.commit else f"file {run.name}"
    return f"run {number} ({run.created or 'no date'}, {commit})"


def step_sides(history: History, report: CellReport, step: step_finder.Step
               ) -> tuple[Run, Run]:
    """The runs on either side of ``step``: the last before it and the first after."""
    points = report.series.points
    return history.runs[points[step.index - 1].run], history.runs[points[step.index].run]


def step_lines(history: History, report: CellReport, step: step_finder.Step) -> list[str]:
    """One step: its change and levels, the runs on either side, what else changed."""
    s = report.series
    before, after = step_sides(history, report, step)
    latest = step is report.steps[-1]
    mark = (report.verdict.upper() if latest and report.verdict in FAILING else
            "speed-up" if step.change > 0 else "slowdown")
    lines = [f"{mark}: {s.label} on {s.machine_label}: {step.change * 100:+.1f}% "
             f"({step.before:.2f} -> {step.after:.2f} {s.unit}) between "
             f"{_run_text(history, before)} and {_run_text(history, after)}"]
    changed = version_changes(before, after, s.key[1])
    if changed:
        lines.append(f"    also changed: {'; '.join(changed)}")
    if latest and report.verdict == REGRESSION:
        lines.append(f"    beyond the threshold {report.threshold.value:g}% "
                     f"({report.threshold.source})")
    return lines


def lines(history: History, reports: Sequence[CellReport], folder: str) -> list[str]:
    """The text of ``qcrypto history``: what was read, every step, the verdict."""
    machines = len({r.series.machine for r in reports})
    span = (f" ({history.runs[0].created} to {history.runs[-1].created})"
            if history.runs else "")
    out = [f"qcrypto history: {plural(len(history.runs), 'run')} in {folder}{span}, "
           f"{plural(len(reports), 'cell')} on {plural(machines, 'machine')}"]
    with_steps = [r for r in reports if r.steps]
    if not with_steps:
        out.append("no steps: every cell kept its level")
    for report in with_steps:
        for step in report.steps:
            out += step_lines(history, report, step)
    for report in reports:
        if report.verdict == BELOW_FLOOR and report.floor is not None:
            out.append(f"BELOW FLOOR: {report.series.label} on {report.series.machine_label}: "
                       f"{report.latest_level:.2f} {report.series.unit} now, floor "
                       f"{report.floor.value:g} ({report.floor.source})")
    failing = [r for r in reports if r.verdict in FAILING]
    out.append(f"{len(failing)} of {len(reports)} cells fail: their latest step is a "
               "regression beyond the threshold or their level is below a floor" if failing
               else "no cell fails: no latest step is a regression beyond its threshold")
    return out


def charts(history: History, reports: Sequence[CellReport]) -> list[Chart]:
    """Each cell as the page draws it (:class:`.history_page.Chart`)."""
    out = []
    for report in reports:
        s = report.series
        runs = [history.runs[p.run] for p in s.points]
        points = tuple((f"run {p.run + 1}", run.short, run.created, p.figure, p.low, p.high)
                       for p, run in zip(s.points, runs))
        marks = []
        for step in report.steps:
            before, after = step_sides(history, report, step)
            marks.append((step.index, step.change, f"{before.short} -> {after.short}",
                          "; ".join(version_changes(before, after, s.key[1]))))
        previous = report.steps[-1].change if report.steps else None
        out.append(Chart(s.label, s.machine_label, s.unit, points, tuple(marks),
                         report.verdict, s.points[-1].figure, previous))
    return out
