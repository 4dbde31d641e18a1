"""What the regression gate says after the run: the change grid under each table, as data,
and the summary lines (regressions, floors, differences, missing and new cells).

Plain Python: it reads the verdicts of :mod:`pytest_qcrypto.gate`; it never measures and
never imports pytest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from pytest_qcrypto.catalog import plural
from pytest_qcrypto.tables import Changes
from pytest_qcrypto.gate import (BUSY, MARK_NOTES, MARKS, NEW, NOISE, NOT_JUDGED, RECOVERED,
                                 REGRESSION, BaselineIndex, CellKey, GateRules, Verdict,
                                 pct, describe)


def change_grid(baseline_path: object, algorithm: str, direction: str,
                plugins: Sequence[str], sizes: Sequence[int],
                verdicts: Mapping[CellKey, Verdict],
                gone: Mapping[CellKey, str]) -> Changes | None:
    """The change grid of the table of (``algorithm``, ``direction``) with rows ``plugins``
    (as typed) and columns ``sizes``, as data that :func:`pytest_qcrypto.tables.change_lines`
    draws: per cell ``-12.4%`` (with a mark of :data:`~pytest_qcrypto.gate.MARKS` when the
    verdict has one), ``new`` (no baseline cell), ``missing`` (a baseline cell skipped now) or
    ``-``, and the meaning of each mark used.  None when no cell has a verdict or is missing."""
    texts: dict[tuple[str, int], str] = {}
    used: set[str] = set()
    for p in plugins:
        for s in sizes:
            cell = (algorithm, p, s, direction)
            v = verdicts.get(cell)
            if v is not None and v.change is not None:
                mark = MARKS.get(v.status, "")
                if mark:
                    used.add(v.status)
                texts[(p, s)] = f"{pct(v.change)}{mark}"
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
    notes = tuple(f"{MARKS[s]} {MARK_NOTES[s]}" for s in (REGRESSION, NOISE, NOT_JUDGED)
                  if s in used)
    return Changes(f"Change against baseline {baseline_path} (negative = slower):",
                      tuple(plugins), tuple(sizes), texts, notes)


def _lines_per_group(keys: Iterable[CellKey], what: str) -> list[str]:
    """``  sha256 openssl digest, sizes 16, 64: WHAT`` per (algorithm, plugin, direction)."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for alg, plugin, size, direction in keys:
        groups.setdefault((alg, plugin, direction), []).append(size)
    return [f"  {alg} {plugin} {direction}, size{'s' if len(sizes) > 1 else ''} "
            f"{', '.join(str(s) for s in sorted(set(sizes)))}: {what}"
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
    return lines


def _cell_lines(rules: GateRules, baseline: BaselineIndex, verdicts: Mapping[CellKey, Verdict],
                gone: Mapping[CellKey, str]) -> list[str]:
    """Baseline cells skipped now, cells without a baseline entry, baseline cells not run."""
    lines: list[str] = []
    if gone:
        what = ("in the baseline, skipped now (allowed by --qcrypto-allow-missing)"
                if rules.allow_missing else "in the baseline, skipped now: failed")
        lines.append("missing cells:")
        lines += [f"  {a} {p} {d}, size {s}: {what}: {r}" for (a, p, s, d), r in gone.items()]
    new = [k for k, v in verdicts.items() if v.status == NEW]
    if new:
        lines.append("no baseline entry (not judged):")
        lines += _lines_per_group(new, "new")
    not_run = baseline.not_run()
    if not_run:
        lines.append("in the baseline but not measured in this run:")
        lines += _lines_per_group(dict.fromkeys(not_run), "not run")
    return lines


def summary_lines(rules: GateRules, baseline: BaselineIndex | None,
                  verdicts: Mapping[CellKey, Verdict], gone: Mapping[CellKey, str],
                  saved: str, machine_differences: Sequence[str] = (),
                  library_difference: Callable[[str, str], str] = lambda typed, canon: ""
                  ) -> list[str]:
    """After the tables: regressions, floors, differences, missing and new cells, the file.

    ``verdicts`` per cell (plugin as typed), ``gone`` the baseline cells skipped
    now with the skip reason, ``saved`` the line about the results file (empty:
    none); ``library_difference(typed, canonical)`` says how a plugin's library
    differs from the baseline's (empty: it does not).
    """
    lines: list[str] = []
    every = list(verdicts.values())
    if baseline is not None:
        b = baseline.file
        lines.append(f"Regression gate: baseline {b.path} ({plural(len(b.results), 'result')}"
                     f"{', created ' + b.created if b.created else ''}), threshold "
                     f"{rules.default_threshold.value:g}% unless an ini line says "
                     f"otherwise, "
                     f"{plural(rules.confirm, 'confirmation try', 'confirmation tries')}")
    lines += _failure_lines(every)
    if baseline is None:
        return lines + _unused_lines(rules, every) + ([saved] if saved else [])
    lines += _difference_lines(verdicts, machine_differences, library_difference)
    lines += _status_lines(every)
    lines += _cell_lines(rules, baseline, verdicts, gone)
    return lines + ([saved] if saved else [])
