"""What the regression gate says after the run: the change grid under each table, as data,
the summary lines (regressions, floors, suspicious speed-ups, differences, missing and new
cells) and the same as tables for a markdown summary (:func:`summary_tables`).

Plain Python: it reads the verdicts of :mod:`pytest_qcrypto.gate.verdicts`; it never measures and
never imports pytest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pytest_qcrypto.algorithms.catalog import plural
from pytest_qcrypto.output.tables import Changes, GateTables, SummaryTable
from pytest_qcrypto.gate import counted as counted_gate, spread as gate_spread
from pytest_qcrypto.gate.verdicts import (BUSY, CANNOT_TELL, MARK_NOTES, MARKS, NEW, NOISE, NOT_JUDGED, OK, RECOVERED,
                                 REGRESSION, BaselineIndex, CellKey, GateRules, Verdict,
                                 pct, describe, kib, which_try, without_wait)


#: The change grid's mark for a change taken against the cell's peers (:mod:`.spread`).
PEERS_MARK = "^"


def change_grid(baseline_path: object, algorithm: str, direction: str,
                plugins: Sequence[str], sizes: Sequence[Any],
                verdicts: Mapping[CellKey, Verdict],
                gone: Mapping[CellKey, str]) -> Changes | None:
    """The change grid of the table of (``algorithm``, ``direction``) with rows ``plugins``
    (as typed) and columns ``sizes``, as data that :func:`pytest_qcrypto.output.tables.change_lines`
    draws: per cell ``-12.4%`` (with a mark of :data:`~pytest_qcrypto.gate.verdicts.MARKS` when the
    verdict has one), ``new`` (no baseline cell), ``missing`` (a baseline cell skipped now) or
    ``-``, and the meaning of each mark used.  None when no cell has a verdict or is missing."""
    texts: dict[tuple[str, int], str] = {}
    used: set[str] = set()
    counted = False  # a counted cell shows percent more instructions, from its counts
    for p in plugins:
        for s in sizes:
            # a size-less table (direction empty) has a column per operation, cells of size 0
            cell = (algorithm, p, s, direction) if direction else (algorithm, p, 0, s)
            v = verdicts.get(cell)
            if v is not None and v.change is not None:
                mark = MARKS.get(v.status, "")
                if mark:
                    used.add(v.status)
                drift = getattr(v, "drift", None)
                if drift is not None and drift.rule.startswith(gate_spread.RULE):
                    used.add("spread")
                    if drift.rule.endswith("against its peers"):
                        used.add("peers")
                        mark = PEERS_MARK + mark
                more = counted_gate.more_instructions(v)
                counted = counted or more is not None
                texts[(p, s)] = f"{pct(v.change) if more is None else f'{more:+.2f}%'}{mark}"
            elif v is not None:
                texts[(p, s)] = "new"
            elif cell in gone:
                texts[(p, s)] = "missing"
            else:
                texts[(p, s)] = "-"
    if all(t == "-" for t in texts.values()):
        return None
    if BUSY in used:
        used.add(NOISE)
    if CANNOT_TELL in used:
        used.add(NOT_JUDGED)
    notes = tuple(f"{MARKS[s]} {MARK_NOTES[s]}" for s in (REGRESSION, NOISE, NOT_JUDGED)
                  if s in used)
    if "spread" in used:  # not the medians of the table above: say which figure
        notes += ("  changes of the slow phase of rounds spread over the run (the 25% quantile "
                  "of their rates), not of the figures above",)
    if "peers" in used:
        notes += (f"{PEERS_MARK} against the same algorithm's other plugins at that size (the "
                  "machine's move taken out)",)
    what = ("% more instructions an operation; positive = more work"
            if counted else "negative = slower")
    return Changes(f"Change against baseline {baseline_path} ({what}):",
                      tuple(plugins), tuple(sizes), texts, notes)


def _lines_per_group(keys: Iterable[CellKey], what: str) -> list[str]:
    """``  sha256 openssl digest, sizes 16, 64: WHAT`` per (algorithm, plugin, direction)."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for alg, plugin, size, direction in keys:
        groups.setdefault((alg, plugin, direction), []).append(size)
    return [f"  {alg} {plugin} {direction}" + (
            f", size{'s' if len(sizes) > 1 else ''} "
            f"{', '.join(str(s) for s in sorted(set(sizes)))}" if any(sizes) else ""
            ) + f": {what}"  # a size-less cell (size 0) is named by its operation alone
            for (alg, plugin, direction), sizes in groups.items()]


def _failure_lines(verdicts: Sequence[Verdict]) -> list[str]:
    """Confirmed regressions, then cells below their floor."""
    lines: list[str] = []
    failed = [v for v in verdicts if v.failed]
    regressions = [v for v in failed if v.status == REGRESSION]
    if regressions:
        lines.append(f"regressions ({len(regressions)}):")
        lines += [f"  {v.failures[0]}" for v in regressions]
    floors = [f for v in failed for f in v.failures if f.startswith("below floor")]
    if floors:
        lines.append(f"below floor ({len(floors)}):")
        lines += [f"  {f}" for f in floors]
    return lines


def _unused_lines(rules: GateRules, verdicts: Sequence[Verdict]) -> list[str]:
    """Without a baseline: the comparison options given that had no effect."""
    unused = [o for o in rules.compare_only if o != "--qcrypto-confirm"
              or not any(v.floor is not None for v in verdicts)]
    if not unused:
        return []
    return [f"qcrypto: {', '.join(unused)} had no effect: "
            f"{'it applies' if len(unused) == 1 else 'they apply'} only with "
            "--qcrypto-compare" + (" (or a floor)" if "--qcrypto-confirm" in unused else "")]


def _difference_lines(verdicts: Mapping[CellKey, Verdict], machine_differences: Sequence[str],
                      library_difference: Callable[[str, str], str]) -> list[str]:
    """How the machine, the libraries and the drivers differ from the baseline's."""
    lines = [f"machine differs from the baseline: {d}" for d in machine_differences]
    libs = {library_difference(p, v.measurement.canonical_plugin or p)
            for (_, p, _, _), v in verdicts.items() if v.baseline is not None}
    lines += [f"library differs from the baseline: {d}" for d in sorted(libs) if d]
    for v in verdicts.values():
        then, now = (v.baseline.driver if v.baseline else None), v.measurement.driver
        if v.baseline is not None and then != now:
            lines.append(f"driver changed: {describe(v.measurement)}: {then or 'unknown'} "
                         f"(baseline) vs {now or 'unknown'} (now)")
    return lines


def _status_lines(verdicts: Sequence[Verdict]) -> list[str]:
    """The verdicts that passed for a reason worth telling: not judged, noise, busy, retried."""
    reasons: dict[str, int] = {}
    for v in verdicts:
        if v.status == NOT_JUDGED:
            reasons[v.not_judged] = reasons.get(v.not_judged, 0) + 1
    lines = [f"not judged: {why}: {n} measurement{'s pass' if n > 1 else ' passes'} "
             "unjudged" for why, n in reasons.items()]
    lines += [f"within noise (not failed): {describe(v.measurement)}: change "
              f"{pct(v.change)} but {v.noise_text}"
              for v in verdicts if v.status == NOISE]
    lines += [f"machine busy (not failed): {describe(v.measurement)}: change "
              f"{pct(v.clock_change)} by the clock, {pct(v.change)} "
              f"without the time spent waiting for a CPU; {v.tries_text}"
              for v in verdicts if v.status == BUSY]
    lines += [f"passed on a retry: {describe(v.measurement)}: {v.tries_text}"
              for v in verdicts if v.status == RECOVERED]
    return lines + _drift_lines(verdicts)


def _drift_lines(verdicts: Sequence[Verdict]) -> list[str]:
    """The cells the gate cannot tell on this machine, and those judged by the clock alone
    because their baseline has no reference workload times (an older file)."""
    told = [v for v in verdicts if v.baseline is not None and not v.not_judged]
    unsure = [v for v in told if v.status == CANNOT_TELL and v.drift is not None]
    lines = []
    if unsure:
        lines.append(f"cannot tell on this machine (not failed): {len(unsure)} of "
                     f"{plural(len(told), 'judged cell')}:")
        lines += [f"  {describe(v.measurement)}: {v.drift.cannot_tell_text()}"
                  for v in unsure if v.drift is not None]
    old = [v for v in told if not v.baseline.reference_s  # type: ignore[union-attr]
           and not v.baseline.spread_s  # type: ignore[union-attr]  # (gate/spread.py)
           and v.measurement.counted is None]  # a count needs no reference workload
    if old:
        lines.append(f"judged by the clock alone: the baseline of {plural(len(old), 'cell')} "
                     "has no reference workload times (saved by an older version); save it "
                     "again so that the gate can tell a slower machine from slower code")
    return lines


def _cell_lines(rules: GateRules, baseline: BaselineIndex, verdicts: Mapping[CellKey, Verdict],
                gone: Mapping[CellKey, str], interrupted: bool = False) -> list[str]:
    """Baseline cells skipped now, cells without a baseline entry, baseline cells not run
    (not judged, when the run was ``interrupted``: a spread run may have measured them)."""
    lines: list[str] = []
    if gone:
        what = ("in the baseline, skipped now (allowed by --qcrypto-allow-missing)"
                if rules.allow_missing else "in the baseline, skipped now: failed")
        lines.append("missing cells:")
        lines += [f"  {a} {p} {d}{f', size {s}' if s else ''}: {what}: {r}"
                  for (a, p, s, d), r in gone.items()]
    new = [k for k, v in verdicts.items() if v.status == NEW]
    if new:
        lines.append("no baseline entry (not judged):")
        lines += _lines_per_group(new, "new")
    not_run = baseline.not_run()
    if not_run and interrupted:
        lines.append("in the baseline, not judged: the run was interrupted before their items:")
        lines += _lines_per_group(dict.fromkeys(not_run), "not judged")
    elif not_run:
        lines.append("in the baseline but not measured in this run:")
        lines += _lines_per_group(dict.fromkeys(not_run), "not run")
    return lines


def summary_lines(rules: GateRules, baseline: BaselineIndex | None,
                  verdicts: Mapping[CellKey, Verdict], gone: Mapping[CellKey, str],
                  saved: str, machine_differences: Sequence[str] = (),
                  library_difference: Callable[[str, str], str] = lambda typed, canon: "",
                  interrupted: bool = False) -> list[str]:
    """After the tables: regressions, floors, differences, missing and new cells, the file.

    ``verdicts`` per cell (plugin as typed), ``gone`` the baseline cells skipped
    now with the skip reason, ``saved`` the line about the results file (empty:
    none); ``library_difference(typed, canonical)`` says how a plugin's library
    differs from the baseline's (empty: it does not); ``interrupted``: the run was, so the
    baseline cells it did not judge are said to be not judged, not not run.
    """
    lines: list[str] = []
    every = list(verdicts.values())
    if baseline is not None:
        lines.append(f"Regression gate: {gate_heading(rules, baseline, every)}")
    lines += _failure_lines(every)
    if baseline is None:
        return lines + _unused_lines(rules, every) + ([saved] if saved else [])
    lines += _speedup_lines(rules, every)
    lines += _difference_lines(verdicts, machine_differences, library_difference)
    lines += _status_lines(every)
    failed = getattr(baseline, "failed", [])  # results of a test that failed (compare.py)
    if failed:
        lines.append("baseline cells whose test failed there (never used as a baseline):")
        lines += [f"  {describe(r)}: {r.test or 'its test'} {r.outcome}" for r in failed]
    lines += _cell_lines(rules, baseline, verdicts, gone, interrupted)
    return lines + ([saved] if saved else [])


def gate_heading(rules: GateRules, baseline: BaselineIndex,
                 verdicts: Iterable[Verdict] = ()) -> str:
    """``baseline base.json (3 results, created ...), threshold 10% unless an ini line says
    otherwise, 2 confirmation tries`` (``baselines a.json (...), b.json (...)`` for several
    joined files): what the run was judged against.  When every cell judged by a rule
    (``verdicts``) took its rounds spread over the run, it says so instead of the tries."""
    files = getattr(baseline, "files", None) or [baseline.file]  # several: joined
    named = ", ".join(f"{b.path} ({plural(len(b.results), 'result')}"
                      f"{', created ' + b.created if b.created else ''})" for b in files)
    tries = plural(rules.confirm, 'confirmation try', 'confirmation tries')
    ruled = [v.drift.rule for v in verdicts if v.drift is not None]
    if ruled and all(r.startswith(gate_spread.RULE) for r in ruled):
        tries = "rounds spread over the run, judged by their slow phase (no confirmation tries)"
    judged = (f"threshold {rules.default_threshold.value:g}% unless an ini line says "
              f"otherwise, {tries}")
    if counted_gate.kind_of([r for b in files for r in b.results]) == "instructions":
        judged = counted_gate.heading(getattr(rules, "instructions", None)
                                      or counted_gate.threshold_rule())
    return f"baseline{'s' if len(files) > 1 else ''} {named}, {judged}"


# -- suspicious speed-ups -------------------------------------------------------------------------

#: What a speed-up beyond the bound usually means.
SPEEDUP_WHY = "the baseline or the measurement is likely broken"


def speedup(v: Verdict, rules: GateRules) -> float | None:
    """How many times the baseline's figure ``v`` is (both without their waits for a CPU, as
    the change), when that is beyond ``rules.max_speedup``; None when it is not, or when
    ``v`` was not judged against a baseline."""
    if v.baseline is None or v.status == NOT_JUDGED or v.not_judged or v.base_figure <= 0:
        return None
    ratio = v.figure / v.base_figure
    return ratio if ratio > rules.max_speedup.value else None


def speedup_text(v: Verdict, ratio: float) -> str:
    """``sha256 fake 16 B digest: 10.00x the baseline (7812.50 KiB/s now, baseline 781.25
    KiB/s, change +900.0%)``: figures by the clock, the change as judged."""
    u = v.measurement.unit
    assert v.baseline is not None
    return (f"{describe(v.measurement)}: {ratio:.2f}x the baseline "
            f"({kib(v.measurement.rate, u)} {u} now, baseline "
            f"{kib(v.baseline.rate, u)} {u}, change {pct(v.change)})")


def speedup_failure(v: Verdict, rules: GateRules) -> str | None:
    """The message that fails ``v`` under ``rules.strict`` (``--qcrypto-strict``) when its
    speed-up is suspicious (:func:`speedup`); None when it is not or not strict."""
    ratio = speedup(v, rules)
    if ratio is None or not rules.strict:
        return None
    bound = rules.max_speedup
    return (f"suspicious speed-up: {speedup_text(v, ratio)}, beyond {bound.value:g}x "
            f"({bound.source}): {SPEEDUP_WHY} (failed by {rules.strict})")


def _speedup_title(rules: GateRules, n: int) -> str:
    bound = rules.max_speedup
    fate = (f"failed ({rules.strict})" if rules.strict
            else "not failed (--qcrypto-strict would fail them)")
    return (f"suspicious speed-ups ({n}), beyond {bound.value:g}x the baseline "
            f"({bound.source}): {SPEEDUP_WHY}; {fate}")


def _speedup_lines(rules: GateRules, verdicts: Sequence[Verdict]) -> list[str]:
    """The cells faster than ``rules.max_speedup`` times their baseline, one line each."""
    fast = [(v, r) for v in verdicts if (r := speedup(v, rules)) is not None]
    if not fast:
        return []
    return [f"{_speedup_title(rules, len(fast))}:"] + [f"  {speedup_text(v, r)}" for v, r in fast]


# -- the same as tables (a markdown summary) ------------------------------------------------------

#: The order of the verdict counts, worst first.
VERDICT_ORDER = ("regression", "below floor", "suspicious speed-up", "missing", CANNOT_TELL,
                 NOISE, BUSY, RECOVERED, OK, NOT_JUDGED, NEW, "in the baseline, not run")


def verdict_word(v: Verdict, rules: GateRules) -> str:
    """One word per measurement for the counts: ``regression``, ``below floor``,
    ``suspicious speed-up``, else its status (``ok``, ``within noise``, ...)."""
    if v.status == REGRESSION:
        return "regression"
    if any(f.startswith("below floor") for f in v.failures):
        return "below floor"
    if speedup(v, rules) is not None:
        return "suspicious speed-up"
    return v.status


def summary_tables(rules: GateRules, baseline: BaselineIndex | None,
                   verdicts: Mapping[CellKey, Verdict],
                   gone: Mapping[CellKey, str]) -> GateTables | None:
    """The gate's outcome as tables for a markdown summary (None when not comparing): the
    regressions, the cells below their floor, the suspicious speed-ups (those with rows),
    then how many cells got each verdict (:data:`VERDICT_ORDER`; the baseline's cells
    skipped now are ``missing``, those not attempted ``in the baseline, not run``).  Figures
    in KiB/s by the clock, as the tables show them; changes as judged, as the change grid."""
    if baseline is None:
        return None
    every = list(verdicts.values())
    tables: list[SummaryTable] = []
    regressions = [v for v in every if v.status == REGRESSION and v.failed]
    if regressions:
        tables.append(SummaryTable(
            f"Regressions ({len(regressions)})",
            ("cell", "now KiB/s", "baseline KiB/s", "change", "change computed from",
             "threshold", "tries"),
            tuple((describe(v.measurement), _fig(v.measurement, v.measurement.rate),
                   _fig(v.measurement, v.baseline.rate) if v.baseline else "",
                   pct(v.change), _change_from(v),
                   f"{v.threshold.value:g}%" if v.threshold else "",
                   _tries_shown(v)) for v in regressions), (1, 2, 3, 5)))
    floors = [v for v in every if v.floor is not None
              and any(f.startswith("below floor") for f in v.failures)]
    if floors:
        tables.append(SummaryTable(
            f"Below floor ({len(floors)})", ("cell", "now KiB/s", "floor KiB/s", "tries"),
            tuple((describe(v.measurement), _fig(v.measurement, v.measurement.rate),
                   f"{v.floor.value:.2f}" if v.floor else "", str(len(v.tries)))
                  for v in floors), (1, 2, 3)))
    fast = [(v, r) for v in every if (r := speedup(v, rules)) is not None]
    if fast:
        title = _speedup_title(rules, len(fast))
        tables.append(SummaryTable(
            title[0].upper() + title[1:],
            ("cell", "now KiB/s", "baseline KiB/s", "change", "change computed from",
             "speed-up"),
            tuple((describe(v.measurement), _fig(v.measurement, v.measurement.rate),
                   _fig(v.measurement, v.baseline.rate) if v.baseline else "", pct(v.change),
                   _change_from(v), f"{r:.2f}x") for v, r in fast), (1, 2, 3, 5)))
    counts = {w: 0 for w in VERDICT_ORDER}
    for v in every:
        word = verdict_word(v, rules)
        counts[word] = counts.get(word, 0) + 1
    counts["missing"] += len(gone)
    counts["in the baseline, not run"] += len(baseline.not_run())
    tables.append(SummaryTable("Verdicts", ("verdict", "cells"),
                               tuple((w, str(n)) for w, n in counts.items() if n), (1,)))
    return GateTables(gate_heading(rules, baseline, every), tuple(tables))


def _change_from(v: Verdict) -> str:
    """The figures the change of ``v`` is computed from: ``the figures shown`` (by the clock),
    or ``363636.36 vs 800000.00, the baseline without its wait for a CPU``."""
    m = v.measurement
    if v.baseline is None:
        return ""
    if v.drift is not None:  # a rule of its own: its figures are not the ones shown
        return f"{v.drift.against} ({v.drift.rule})"
    now = _fig(m, v.figure) != _fig(m, m.rate)
    then = _fig(m, v.base_figure) != _fig(m, v.baseline.rate)
    if not now and not then:
        return "the figures shown"
    which = ("each without its wait" if now and then else
             "now without its wait" if now else "the baseline without its wait")
    return f"{_fig(m, v.figure)} vs {_fig(m, v.base_figure)}, {which} for a CPU"


def _tries_shown(v: Verdict) -> str:
    """``fastest try of 3``: which try the figure now is (``1`` for a single try)."""
    if len(v.tries) == 1:
        return "1"
    judged = v.baseline is not None and not v.not_judged
    ranks = [without_wait(t, w)[0] if judged else t.rate for t, w in zip(v.tries, v.waits)]
    return f"{which_try(ranks, v.tries.index(v.measurement))} of {len(v.tries)}"


def _fig(m: Any, rate: float) -> str:
    """A figure for the gate's tables: ``123.45`` (KiB/s, the columns' unit), or
    ``5000.00 ops/s`` for a size-less cell."""
    return kib(rate, m.unit) + ("" if m.sized else f" {m.unit}")
