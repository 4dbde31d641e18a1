"""The regression gate's rules and verdicts: thresholds, floors, baselines, the decision to retry.

What a CI run gets from it:

* ``--qcrypto-save PATH`` writes every measurement (:mod:`pytest_qcrypto.results.store`).
* ``--qcrypto-compare PATH`` judges every measurement against the same
  (algorithm, plugin, size, direction) of a baseline file.  The *slowdown* is
  ``(baseline - current) / baseline`` of the median-round bytes per second; a
  slowdown above the threshold is a regression and fails that test item.  The
  summary shows the *change*, ``(current - baseline) / baseline``: ``-12.4%``
  is 12.4% slower.
* Thresholds: ``--qcrypto-threshold`` (default 10%), refined per cell by
  ``qcrypto_thresholds`` ini lines ``ALGORITHM[:PLUGIN[:SIZE]] = PCT``.
* Floors: a minimum KiB/s per cell, from ``qcrypto_floors`` ini lines
  (same patterns) or ``@pytest.mark.qcrypto(..., floor=KIB_PER_S)`` on a test,
  judged on the figure by the clock (the table's), waits for a CPU included.
* Noise: before an item fails it is measured again (``--qcrypto-confirm``,
  default 2 more tries).  It fails only if the best try still regresses beyond
  the threshold *and* the median test of every try's rounds (:mod:`.gate_stats`,
  5% false alarms) agrees; with too few rounds for that test, the figures decide.

Plain Python that never measures and never imports pytest: :func:`judge` (a verdict on
the tries so far, or None: measure again) and the baseline index.  Rule matching is
:mod:`.rules`, the summary :mod:`.gate_summary`, the retry loop :mod:`.fixture`'s,
the pytest side :mod:`.gate_plugin`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_qcrypto.gate import stats as gate_stats
from pytest_qcrypto.results import store as results
from pytest_qcrypto.measure import threads
from pytest_qcrypto.gate.stats import TestResult
from pytest_qcrypto.measure.harness import KIB, Measurement
from pytest_qcrypto.results.store import Result, ResultsFile
from pytest_qcrypto.gate.text import describe, fastest_round_bps, kib, pct, which_try  # noqa: F401
from pytest_qcrypto.gate.rules import (WILDCARD, Rule, Rules, marker_floors,  # noqa: F401 (gate.Rule)
                                  parse_kib_per_s, parse_pattern, parse_percent, parse_whole,
                                  cell_column)

DEFAULT_THRESHOLD = 10.0
#: A try whose median round loses more than this share to its wait for a CPU says so in
#: messages, with its figure without the wait.
BUSY_SHARE = 0.05
DEFAULT_CONFIRM = 2
MAX_CONFIRM = 20
#: A change beyond this many times the baseline's figure is a suspicious speed-up (issue 14).
DEFAULT_MAX_SPEEDUP = 3.0

#: ``(algorithm, plugin, size, direction)``: a cell of the tables, plugin as typed.
CellKey = tuple[str, str, int, str]

# Verdict states, and the marker of each in the change table.
OK, NEW, REGRESSION, NOISE, BUSY, RECOVERED, NOT_JUDGED, GONE = (
    "ok", "no baseline", "regression", "within noise", "machine busy", "passed on a retry",
    "not judged", "missing")
MARKS = {REGRESSION: "!", NOISE: "~", BUSY: "~", NOT_JUDGED: "?"}
MARK_NOTES = {
    REGRESSION: "regression: slower than the threshold allows, on every try",
    NOISE: "slower than the threshold on every try, but not beyond the rounds' noise by the "
           f"{gate_stats.RULE} ({gate_stats.ALPHA:g} false-alarm rate) or only while other "
           "work kept the CPUs busy",
    NOT_JUDGED: "not judged: another machine (--qcrypto-require-same-machine), jobs or threads",
}


# -- judging -----------------------------------------------------------------------------------


def change(current_bps: float, baseline_bps: float) -> float:
    """``(current - baseline) / baseline``: negative is slower."""
    return (current_bps - baseline_bps) / baseline_bps


def slowdown(current_bps: float, baseline_bps: float) -> float:
    """``(baseline - current) / baseline``: what a threshold limits."""
    return -change(current_bps, baseline_bps)


@dataclass
class Verdict:
    """What the gate decided about one recorded measurement.

    ``measurement`` is the best try (kept for tables and the saved file),
    ``tries`` every try in order and ``waits`` the share of each try's time
    spent waiting for a CPU (None: not known).  ``figure`` and ``base_figure``
    are the bytes per second judged against the baseline: the median rounds
    without those waits (a floor takes ``measurement.bytes_per_second``).
    ``failures`` are the one-line messages that fail the item (a confirmed
    regression, a floor).  ``test`` is the median test against the baseline
    (:mod:`pytest_qcrypto.gate.stats`; None: not judged against one).
    """

    measurement: Measurement
    tries: list[Measurement]
    waits: list[float | None]
    figure: float
    baseline: Result | None = None
    base_figure: float = 0.0
    threshold: Rule | None = None
    floor: Rule | None = None
    status: str = OK
    failures: list[str] = field(default_factory=list)
    not_judged: str = ""
    tries_text: str = ""
    test: TestResult | None = None

    @property
    def wait(self) -> float | None:
        """The wait share of the kept try."""
        return self.waits[self.tries.index(self.measurement)]

    @property
    def change(self) -> float | None:
        """The change judged, ``(figure - base_figure) / base_figure``; None without baseline."""
        return None if self.baseline is None else change(self.figure, self.base_figure)

    @property
    def clock_change(self) -> float | None:
        """The change of the measured figures, waits for a CPU included."""
        if self.baseline is None:
            return None
        return change(self.measurement.rate, self.baseline.rate)

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    @property
    def record(self) -> dict[str, Any] | None:
        """The verdict's statistic as saved with its result (None: not judged by the test)."""
        return self.test.record(self.status, self.threshold.value) if self.test and \
            self.threshold else None

    @property
    def noise_text(self) -> str:
        """Why a slowdown beyond the threshold passed as noise, in words."""
        return f"only {self.test.text()}" if self.test else "not judged by the test"

    @property
    def message(self) -> str:
        return "; ".join(self.failures)


def without_wait(m: Measurement, share: float | None) -> tuple[float, float]:
    """Bytes per second of the median and of the fastest round, the wait for a CPU taken out.

    ``share`` is the part of the try's time off the CPU that was a wait for a
    CPU (:class:`WaitMeter`).  Each round loses that share of its wall time
    beyond its CPU time; the rest (a plugin sleeping, a device working) stays.
    Without ``share`` or CPU times the figures are the measured ones.
    """
    rounds = results.without_wait(m.rounds_s, m.cpu_s, share)
    if rounds is None:
        return m.rate, fastest_round_bps(m)
    work = m.operations * (m.size or 1)
    return work / statistics.median(rounds), work / min(rounds)


def baseline_figures(r: Result) -> tuple[float, float]:
    """A baseline's judged figure and its slowest round's, its own wait for a CPU taken out.

    Both are scaled from the saved ``bytes_per_second`` (the figure of record);
    :func:`results.load` refuses a file in which they overflow.
    """
    return r.figures_without_wait()


def _waited(clock: float, judged: float) -> str:
    """The share of a figure's time by the clock that was a wait for a CPU, in words
    (``6%``, ``less than 1%``); empty when the two figures print alike in KiB/s."""
    if kib(clock) == kib(judged):
        return ""
    lost = 1 - clock / judged
    return f"{lost:.0%}" if lost >= 0.01 else "less than 1%"


def _correction_text(now: str, then: str) -> str:
    """How the judged change differs from the figures quoted (both by the clock): in words,
    so that each cell has one figure, the one the tables and ``qcrypto report`` show."""
    if now and then:
        return (f" without the time each waited for a CPU ({now} of it now, {then} of it in "
                "the baseline)")
    if then:
        return f" without the time the baseline waited for a CPU ({then} of it)"
    if now:
        return f" without the time this try waited for a CPU ({now} of it)"
    return ""


def _tries_text(tries: Sequence[Measurement], waits: Sequence[float | None], best: int,
                judged: bool = True) -> str:
    """``tries: A, B, C KiB/s (best B)``: each try by the clock, and which one counts.

    Against a baseline (``judged``) the best try is the fastest once its wait
    for a CPU is taken out (:func:`without_wait`), and "best" says so when that
    figure is not the listed one (the table shows the listed one).  A try that
    lost more than :data:`BUSY_SHARE` to that wait says so.
    """
    parts, u = [], tries[best].unit
    for m, w in zip(tries, waits):
        text = kib(m.rate, u)
        without = without_wait(m, w)[0]
        lost = 1 - m.rate / without
        if lost > BUSY_SHARE:
            text += f" (waited {lost:.0%} of it for a CPU: {kib(without, u)} without)"
        parts.append(text)
    kept = tries[best]
    clock, figure = kept.rate, without_wait(kept, waits[best])[0]
    ranks = [without_wait(t, w)[0] if judged else t.rate for t, w in zip(tries, waits)]
    which = f"{which_try(ranks, best)} {kib(clock, u)}"
    if judged and kib(clock, u) != kib(figure, u):
        which = (f"{which_try(ranks, best)} without its wait for a CPU: {kib(clock, u)} by the "
                 f"clock, judged as {kib(figure, u)}")
    return f"tries: {', '.join(parts)} {u} ({which})"



@dataclass(frozen=True)
class Criteria:
    """What one measurement is judged against.

    At most ``confirm`` more tries while it fails; the ``baseline`` cell and the
    ``threshold`` (None: not compared); the ``floor`` in KiB/s (None: no floor);
    ``not_judged``, a reason not to compare (then only the floor applies).
    """

    confirm: int = DEFAULT_CONFIRM
    baseline: Result | None = None
    threshold: Rule | None = None
    floor: Rule | None = None
    not_judged: str = ""

    @property
    def judged(self) -> bool:
        """Compared with the baseline (a baseline cell, a threshold, no reason not to)."""
        return self.baseline is not None and self.threshold is not None and not self.not_judged

    def regressed(self, bps: float, base_bps: float) -> bool:
        """Slower than ``base_bps`` (bytes per second) by more than the threshold allows."""
        limit = self.threshold.value if self.threshold is not None else math.inf
        return self.judged and slowdown(bps, base_bps) * 100 > limit

    def below_floor(self, m: Measurement) -> bool:
        """``m``'s figure (KiB/s, or ops/s for a size-less cell) is below the floor (in the
        same unit)."""
        return self.floor is not None and m.figure < self.floor.value


def judge(tries: Sequence[Measurement], waits: Sequence[float | None], c: Criteria,
          more: bool = True) -> Verdict | None:
    """The verdict on the tries of one cell so far, or None: measure it again.

    ``waits`` are the shares of each try's time off the CPU that the thread
    waited for a CPU held by other work (None: not known).  While ``more`` and
    fewer than ``1 + c.confirm`` tries were made, a last try that regresses or
    is below the floor asks for another.  Against the baseline, tries and
    baseline are judged without their waits (:func:`without_wait`); a sleeping
    or slower plugin does not wait for a CPU, so its slowdown stays whole.  A
    floor judges the figure by the clock (the one the table shows): it promises
    what was achieved.  The kept try is the fastest without its wait among the
    tries that keep the floor (among all, when none does); without a baseline,
    the fastest by the clock.  Messages quote each cell by the clock, the
    baseline as ``qcrypto report`` shows it, and say the wait correction in words.
    Failing the test is the caller's.
    """
    base_bps = baseline_figures(c.baseline)[0] if c.baseline is not None else 0.0
    figures = [without_wait(t, w)[0] for t, w in zip(tries, waits)]
    clocks = [t.rate for t in tries]
    if more and len(tries) <= c.confirm and (c.regressed(figures[-1], base_bps)
                                             or c.below_floor(tries[-1])):
        return None
    # a floor is a promise about what was achieved: it takes the figure by the clock, as
    # the table shows it, and the best try is one that keeps it (any try, when none does);
    # the figure without the wait for a CPU ranks the tries only against a baseline
    keeping = [i for i in range(len(tries)) if not c.below_floor(tries[i])]
    ranks = figures if c.judged else clocks
    best = max(keeping or range(len(tries)), key=ranks.__getitem__)
    kept = tries[best]
    v = Verdict(kept, list(tries), list(waits), figures[best], c.baseline, base_bps, c.threshold,
                c.floor, not_judged=c.not_judged,
                tries_text=_tries_text(tries, waits, best, c.judged))
    if c.judged and c.baseline is not None and c.threshold is not None:
        v.test = gate_stats.test_tries(tries, waits, c.baseline, c.threshold.value)
    _judge_baseline(v, c, figures)
    if c.below_floor(kept):
        assert c.floor is not None
        waited = _waited(kept.rate, v.figure)
        v.failures.append(
            f"below floor: {describe(kept)}: {kib(kept.rate, kept.unit)} {kept.unit}"
            + (f" (by the clock, as the table shows, although {waited} of it was a wait for "
               "a CPU)" if waited else "")
            + f", floor {c.floor.value:.2f} {kept.unit} ({c.floor.source}); {v.tries_text}")
    return v


def _judge_baseline(v: Verdict, c: Criteria, figures: Sequence[float]) -> None:
    """Set ``v.status`` against the baseline; a confirmed regression adds its failure.

    Beyond the threshold on every try, the median test (``v.test``) decides; with too few
    rounds for it to reach its false-alarm rate, the figures alone, and the message says so.
    """
    kept, baseline, test = v.measurement, c.baseline, v.test
    if baseline is None:
        v.status = NEW
    elif c.not_judged:
        v.status = NOT_JUDGED
    elif c.regressed(v.figure, v.base_figure):
        assert c.threshold is not None and test is not None
        if test.decidable and not test.significant:
            v.status = NOISE
            return
        v.status = REGRESSION
        correction = _correction_text(_waited(kept.rate, v.figure),
                                      _waited(baseline.rate, v.base_figure))
        rule = test.text(bool(correction)) if test.decidable else test.undecidable_text()
        v.failures.append(
            f"regression: {describe(kept)}: {kib(kept.rate, kept.unit)} {kept.unit} now, "
            f"baseline {kib(baseline.rate, kept.unit)} {kept.unit}, change {pct(v.change)}"
            f"{correction}, threshold {c.threshold.value:g}% ({c.threshold.source}); "
            f"{v.tries_text}; {rule}"
            + (f"; {test.noisy_text()}" if test.noisy(c.threshold.value) else ""))
    elif c.regressed(kept.rate, baseline.rate):
        v.status = BUSY  # slower by the clock, not once the waits for a CPU are taken out
    elif any(c.regressed(f, v.base_figure) for f in figures):
        v.status = RECOVERED


# -- the run's rules and baseline ------------------------------------------------------------


@dataclass
class GateRules:
    """The gate's settings for a run (read by :mod:`pytest_qcrypto.pytest_side.gate`).

    ``compare_only`` lists the options given on the command line that only a
    comparison (or a floor) uses, for the "had no effect" line.
    """

    default_threshold: Rule = field(default_factory=lambda: Rule(
        None, None, None, DEFAULT_THRESHOLD, "default"))
    thresholds: Rules = field(default_factory=Rules)
    floors: Rules = field(default_factory=Rules)
    confirm: int = DEFAULT_CONFIRM
    allow_missing: bool = False
    require_same_machine: bool = False
    compare_only: list[str] = field(default_factory=list)
    #: a speed-up beyond this factor is suspicious (:mod:`.gate_summary`); ``strict``: where
    #: failing such a cell was asked for (``--qcrypto-strict``; empty: it is a summary line)
    max_speedup: Rule = field(default_factory=lambda: Rule(
        None, None, None, DEFAULT_MAX_SPEEDUP, "default"))
    strict: str = ""


class BaselineIndex:
    """The cells of a baseline file by ``(algorithm, canonical plugin, size, direction)``,
    and which of them this run attempted (:attr:`seen`)."""

    def __init__(self, baseline: ResultsFile) -> None:
        self.file = baseline
        self.seen: set[tuple[str, str, int, str]] = set()
        self._index: dict[tuple[str, str, int, str], list[Result]] = {}
        for r in baseline.results:
            self._index.setdefault(r.key, []).append(r)

    def __contains__(self, key: tuple[str, str, int, str]) -> bool:
        return key in self._index

    def first(self, key: tuple[str, str, int, str]) -> Result:
        """The first baseline result of a cell in the index."""
        return self._index[key][0]

    def for_test(self, key: tuple[str, str, int, str], test: str | None) -> Result | None:
        """The cell as ``test`` measured it in the baseline, else as any test did; marks it seen."""
        found = self._index.get(key, [])
        if found:
            self.seen.add(key)
        for r in found:
            if r.test == test:
                return r
        return found[0] if found else None

    def not_run(self) -> list[CellKey]:
        """Baseline cells this run did not attempt, in the file's order (plugin: as saved)."""
        return [(r.algorithm, r.plugin, r.size, r.direction)
                for r in self.file.results if r.key not in self.seen]


def criteria(rules: GateRules, m: Measurement, names: Sequence[str], base: Result | None,
             marker: Rules | None, differences: Callable[[], list[str]]) -> Criteria:
    """What ``m`` is judged against: ``names`` are the names its plugin goes by (for rules),
    ``base`` its baseline cell, ``marker`` the floors of its test's marker; ``differences()``
    how this machine and library differ from the baseline's (only asked when it matters)."""
    threshold, not_judged = None, ""
    column = cell_column(m.size, m.direction)  # a size, or a size-less cell's operation
    if base is not None:
        threshold = rules.thresholds.pick(m.algorithm, names, column) or rules.default_threshold
        if (base.jobs, base.threads) != (m.jobs, m.threads):  # sums are not one's figure
            not_judged = threads.not_comparable(base, m)
        elif rules.require_same_machine:
            diffs = differences()
            if diffs:
                not_judged = f"different machine ({', '.join(diffs)})"
    floor = marker.pick(m.algorithm, names, column) if marker is not None else None
    floor = floor or rules.floors.pick(m.algorithm, names, column)
    return Criteria(rules.confirm, base, threshold, floor, not_judged)
