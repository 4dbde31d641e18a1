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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_qcrypto.gate import (drift as gate_drift, paired as gate_paired, spread as gate_spread,
                                 stats as gate_stats)
from pytest_qcrypto.results import store as results
from pytest_qcrypto.measure import threads
from pytest_qcrypto.gate.stats import TestResult
from pytest_qcrypto.measure.harness import KIB, Measurement
from pytest_qcrypto.measure.reference import DEFAULT_PAUSE_S
from pytest_qcrypto.results.store import Result, ResultsFile
from pytest_qcrypto.gate.text import describe, fastest_round_bps, kib, pct, which_try  # noqa: F401
from pytest_qcrypto.gate.text import (BUSY_SHARE, _correction_text, _tries_text,  # noqa: F401
                                      _waited, baseline_figures, without_wait)
from pytest_qcrypto.gate.rules import (WILDCARD, Rule, Rules, marker_floors,  # noqa: F401 (gate.Rule)
                                  parse_kib_per_s, parse_pattern, parse_pause, parse_percent,
                                  parse_whole,
                                  cell_column)

DEFAULT_THRESHOLD = 10.0
DEFAULT_CONFIRM = 2
MAX_CONFIRM = 20
#: A change beyond this many times the baseline's figure is a suspicious speed-up (issue 14).
DEFAULT_MAX_SPEEDUP = 3.0

#: ``(algorithm, plugin, size, direction)``: a cell of the tables, plugin as typed.
CellKey = tuple[str, str, int, str]

# Verdict states, and the marker of each in the change table.
OK, NEW, REGRESSION, NOISE, BUSY, RECOVERED, NOT_JUDGED, GONE, CANNOT_TELL = (
    "ok", "no baseline", "regression", "within noise", "machine busy", "passed on a retry",
    "not judged", "missing", "cannot tell")
#: Rules without confirmation tries, with bands of their own (no median-test lines for them).
OWN_RULES = (gate_spread.RULE, gate_paired.RULE)
MARKS = {REGRESSION: "!", NOISE: "~", BUSY: "~", NOT_JUDGED: "?", CANNOT_TELL: "?"}
MARK_NOTES = {
    REGRESSION: "regression: slower than the threshold allows, on every try",
    NOISE: "slower than the threshold on every try, but not beyond the rounds' noise by the "
           f"{gate_stats.RULE} ({gate_stats.ALPHA:g} false-alarm rate) or only while other "
           "work kept the CPUs busy",
    NOT_JUDGED: "not judged: another machine (--qcrypto-require-same-machine), jobs or "
                "threads, or cannot tell on this machine (its noise band is wider than the "
                "threshold, or its peers moved with it)",
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
    #: the rule against the reference workload (:mod:`.drift`; None: a side lacks its times)
    drift: gate_drift.DriftTest | None = None
    #: one short line per failure (under about 200 characters), what the item fails with;
    #: ``failures`` hold the detail, for the summary
    headlines: list[str] = field(default_factory=list)

    @property
    def wait(self) -> float | None:
        """The wait share of the kept try."""
        return self.waits[self.tries.index(self.measurement)]

    @property
    def change(self) -> float | None:
        """The change judged, ``(figure - base_figure) / base_figure``, or relative to the
        reference workload when both sides have its times; None without baseline."""
        if self.drift is not None and self.baseline is not None:
            return -self.drift.slowdown
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
        if not (self.test and self.threshold):
            return None
        out = self.test.record(self.status, self.threshold.value)
        return {**out, **self.drift.record()} if self.drift is not None else out

    @property
    def noise_text(self) -> str:
        """Why a slowdown beyond the threshold passed as noise, in words."""
        if self.drift is not None:
            return f"{self.drift.text()}: its lower edge is within the threshold"
        return f"only {self.test.text()}" if self.test else "not judged by the test"

    @property
    def message(self) -> str:
        return "; ".join(self.failures)

    @property
    def short_message(self) -> str:
        """What the item fails with: the short lines (the detail is in the summary)."""
        short = self.headlines + self.failures[len(self.headlines):]
        return "; ".join(short) + (" (detail in the qcrypto summary)" if self.headlines else "")

    def fail(self, detail: str, short: str) -> None:
        """Add a failure: ``detail`` for the summary, ``short`` for the item."""
        self.headlines.append(short)
        self.failures.insert(len(self.headlines) - 1, detail)


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
    #: seconds to wait before each confirmation try (``--qcrypto-confirm-pause``)
    pause_s: float = 0.0
    #: the cell's peers measured in the same spread passes, with their baselines
    #: (:func:`pytest_qcrypto.gate.spread.peers_of`)
    peers: tuple[tuple[Measurement, Result], ...] = ()
    paired: gate_paired.Paired | None = None  # A/B rounds paired with the reference's

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
    last = (gate_drift.try_slowdown(tries[-1], waits[-1], c.baseline)
            if c.judged and c.baseline is not None else None)
    suspicious = c.regressed(figures[-1], base_bps) if last is None else \
        c.judged and last * 100 > (c.threshold.value if c.threshold else math.inf)
    spread = c.judged and c.baseline is not None and gate_spread.applies(tries[-1], c.baseline)
    paired = c.paired if c.judged and len(tries) == 1 else None  # its rounds, not a retry's
    if more and not spread and paired is None and len(tries) <= c.confirm and \
            (suspicious or c.below_floor(tries[-1])):  # spread rounds: no confirmation tries
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
        v.drift = gate_paired.paired_test(paired, c.threshold.value) if paired else \
            gate_spread.spread_test(tries[-1], c.baseline, c.threshold.value, c.peers) \
            if spread else gate_drift.drift_test(tries, waits, c.baseline, c.threshold.value)
    if v.drift is not None and not c.not_judged:
        _judge_drift(v, c, v.drift)
    else:
        _judge_baseline(v, c, figures)
    if c.below_floor(kept):
        assert c.floor is not None
        waited = _waited(kept.rate, v.figure)
        v.fail(
            f"below floor: {describe(kept)}: {kib(kept.rate, kept.unit)} {kept.unit}"
            + (f" (by the clock, as the table shows, although {waited} of it was a wait for "
               "a CPU)" if waited else "")
            + f", floor {c.floor.value:.2f} {kept.unit} ({c.floor.source}); {v.tries_text}",
            f"below floor: {describe(kept)}: {kib(kept.rate, kept.unit)} {kept.unit}, floor "
            f"{c.floor.value:.2f} {kept.unit}")
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
        v.fail(
            f"regression: {describe(kept)}: {kib(kept.rate, kept.unit)} {kept.unit} now, "
            f"baseline {kib(baseline.rate, kept.unit)} {kept.unit}, change {pct(v.change)}"
            f"{correction}, threshold {c.threshold.value:g}% ({c.threshold.source}); "
            f"{v.tries_text}; {rule}"
            + (f"; {test.noisy_text()}" if test.noisy(c.threshold.value) else ""),
            f"regression: {describe(kept)}: change {pct(v.change)}, threshold "
            f"{c.threshold.value:g}% ("
            + (f"median test, p = {test.p:.3g}" if test.decidable else "the figures alone")
            + f"); {kib(kept.rate, kept.unit)} {kept.unit} now, baseline "
            f"{kib(baseline.rate, kept.unit)}")
    elif c.regressed(kept.rate, baseline.rate):
        v.status = BUSY  # slower by the clock, not once the waits for a CPU are taken out
    elif any(c.regressed(f, v.base_figure) for f in figures):
        v.status = RECOVERED


def _judge_drift(v: Verdict, c: Criteria, d: gate_drift.DriftTest) -> None:
    """Set ``v.status`` by the rule against the reference workload (:mod:`.drift`); a
    regression adds its failure.  Cannot tell passes with its verdict recorded."""
    kept, baseline = v.measurement, c.baseline
    assert baseline is not None and c.threshold is not None
    status = d.status
    if status == gate_drift.PASS:
        beyond = any(s * 100 > c.threshold.value for s in d.try_slowdowns)
        v.status = RECOVERED if beyond else OK
    elif status == gate_drift.CANNOT_TELL:
        v.status = CANNOT_TELL
    elif status == gate_drift.NOISE:
        v.status = NOISE
    else:
        v.status = REGRESSION
        spread = d.rule.startswith(OWN_RULES)  # one measurement: no tries to list
        where = ("against its peers" if d.rule.endswith("against its peers") else
                 "in the slow phase" if d.rule.startswith(gate_spread.RULE) else
                 "in rounds paired with the reference target's" if spread else
                 "against the reference workload")
        v.fail(
            f"regression: {describe(kept)}: {kib(kept.rate, kept.unit)} {kept.unit} now, "
            f"baseline {kib(baseline.rate, kept.unit)} {kept.unit}, change {pct(v.change)} "
            f"{d.against} ({pct(v.clock_change)} by the clock), "
            f"threshold {c.threshold.value:g}% ({c.threshold.source}); "
            + ("" if spread else f"{v.tries_text}; ")
            + f"beyond the threshold by more than the noise band +-{d.band:.1%} "
            f"({d.baseline_rounds} rounds in the baseline, {d.rounds} now; {d.rule})",
            f"regression: {describe(kept)}: change {pct(v.change)} {where}, band "
            f"+-{d.band:.1%}, threshold {c.threshold.value:g}%; {kib(kept.rate, kept.unit)} "
            f"{kept.unit} now, baseline {kib(baseline.rate, kept.unit)}")


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
    confirm_pause: float = DEFAULT_PAUSE_S
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
    return Criteria(rules.confirm, base, threshold, floor, not_judged, rules.confirm_pause)
