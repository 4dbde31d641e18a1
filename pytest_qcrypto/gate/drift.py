"""The wall-clock gate's rule on a drifting machine: each round against the reference workload
timed next to it, a noise band per cell, and three verdicts.

Why: on a shared virtual machine the speed of unchanged code drifts in phases of a second
or two (measured on the development machine: 20 consecutive 30-ms rounds of sha256 at
256 B read 225 to 399 MB/s, with no CPU wait or steal time seen).  A cell's rounds are
taken within about 0.3 s, so its baseline and its run each sample one phase.

The rule (:func:`drift_test`), for a cell whose baseline and tries all carry reference
times (:mod:`pytest_qcrypto.measure.reference`):

* Each round's *relative rate* is its work (bytes, or operations) over its CPU seconds,
  times the CPU seconds of the reference workload timed next to it
  (:func:`pytest_qcrypto.measure.reference.adjacent`): the ratio of the reference's time
  to the round's, per byte.  Both are CPU times, so a wait for a CPU (preemption by other
  work) counts in neither; a machine 30% slower slows both and leaves the ratio alone; a
  cell 30% slower moves only the round.  (Measured under load 4 on the 2-CPU development
  machine, wall-clock ratios scattered 4 times as much as CPU-time ones.)
* The slowdown is ``1 - median(current relative rates) / median(baseline relative
  rates)``, over every round of every try; a try's own slowdown decides whether to try
  again (a pause first: :func:`pytest_qcrypto.measure.reference.spaced`).
* The *noise band* (a fraction, like the slowdown) is two standard errors of that log
  ratio: from the spread of the baseline's relative rates (``var_b`` over its ``n_b``
  rounds, all of one phase) and of the current ones.  With several tries (a pause apart)
  ``var_c`` is the variance of the tries' median log relative rates, the phase-to-phase
  noise that is left after the reference; the baseline is one more draw of it, so
  ``se^2 = var_b / n_b + var_c (1 / k + 1)`` for ``k`` tries.  With one try ``var_c`` is
  the variance between its rounds, ``se^2 = var_b / n_b + var_c / n_c``.  ``band =
  exp(2 se) - 1``.
* Verdicts: at most the threshold slower (over every try, or in the last try: the tries
  stop at the first that passes, as the gate's confirmation tries always did): *pass*.
  Beyond it with the band's lower edge too (``slowdown - band > threshold``, in log
  terms): *regression*, however wide the band.  Beyond it, not its edge, with a band wider
  than the threshold: *cannot tell on this machine* (not failed; counted apart; a run in
  which every judged cell is that fails); with a narrower band: *within noise* (not
  failed).

Assumptions: the reference workload slows down with the machine as the cell does (true
of a neighbour on the same core or memory bus, measured; not of a cell that waits for a
device or sleeps: a cell whose rounds spent under :data:`MIN_CPU_SHARE` of their time on
the CPU, waits for a CPU taken out, is judged by the clock alone), and tries separated
by a pause sample different phases.  What it cannot see: a slowdown that is time off the
CPU (a new sleep or lock wait) in a cell that is mostly on it.  Plain Python,
never measures, never imports pytest.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.measure.reference import adjacent
from pytest_qcrypto.results.model import Result, without_wait

RULE = "reference ratio"
#: A cell whose median round ran on the CPU for less than this share of its wall time (a
#: plugin that sleeps, a device, another process) is judged by the clock alone: the
#: reference workload measures the CPU, not them.
MIN_CPU_SHARE = 0.5
#: How many standard errors the band spans.
Z = 2.0
#: Verdicts of this rule (besides the gate's own ``regression`` and ``within noise``).
PASS, CANNOT_TELL, REGRESSION, NOISE = "pass", "cannot tell", "regression", "within noise"


def applies(baseline: Result) -> bool:
    """Whether ``baseline`` can be judged by this rule (reference times, on the CPU)."""
    return _baseline_rates(baseline) is not None


def relative_rates(rates: Sequence[float], reference_s: Sequence[float]) -> list[float] | None:
    """Each round's rate (bytes or operations per second) times the reference seconds next to
    it: work per reference workload, which a drift of the machine leaves alone.  None
    without a reference for every round."""
    refs = adjacent(reference_s, len(rates))
    if refs is None or not rates:
        return None
    return [r * ref for r, ref in zip(rates, refs)]


def on_the_cpu(rounds_s: Sequence[float], cpu_s: Sequence[float], share: float | None) -> bool:
    """Whether the rounds ran on this process's CPU for at least :data:`MIN_CPU_SHARE` of
    their wall time (the median round's), their wait for a CPU (``share`` of their time off
    it) taken out: the reference workload moves with such a cell."""
    if not rounds_s or len(cpu_s) != len(rounds_s):
        return False
    rounds = without_wait(rounds_s, cpu_s, share) or list(rounds_s)
    return statistics.median(cpu_s) >= MIN_CPU_SHARE * statistics.median(rounds)


def _try_rates(m: Measurement, share: float | None) -> list[float] | None:
    """A try's relative rates from each round's CPU seconds; None when it has no reference
    times or a CPU time the clock could not resolve.  Whether the cell runs on the CPU is
    the baseline's to say (:func:`applies`): a try on a busy machine may seem off the CPU
    when its wait for one was not all seen, and must not fall back to the clock for it.
    (``share`` is not used: CPU times have no wait for a CPU in them.)"""
    if len(m.cpu_s) != len(m.rounds_s) or not m.cpu_s or min(m.cpu_s) <= 0:
        return None
    work = m.operations * (m.size or 1)
    return relative_rates([work / c for c in m.cpu_s], m.reference_s)


def _baseline_rates(r: Result) -> list[float] | None:
    """The baseline's relative rates from each round's CPU seconds, scaled from its figure
    of record as the gate's other rules scale it (``bytes_per_second`` times its median
    round's seconds is the work of a round)."""
    if not r.reference_s or not on_the_cpu(r.rounds_s, r.cpu_s, r.cpu_wait_share) \
            or min(r.cpu_s) <= 0:
        return None
    work = r.bytes_per_second * statistics.median(r.rounds_s)
    return relative_rates([work / c for c in r.cpu_s], r.reference_s)


def _var(logs: Sequence[float]) -> float:
    return statistics.variance(logs) if len(logs) > 1 else 0.0


@dataclass(frozen=True)
class DriftTest:
    """The rule's figures for one cell: ``slowdown`` (fraction, every try), ``band`` (fraction),
    ``try_slowdowns`` (each try's), ``threshold_pct``; ``status`` one of :data:`PASS`,
    :data:`CANNOT_TELL`, :data:`REGRESSION`, :data:`NOISE`."""

    slowdown: float
    band: float
    try_slowdowns: tuple[float, ...]
    threshold_pct: float
    baseline_rounds: int
    rounds: int
    #: the rule's name, for messages (:data:`RULE`, or :data:`pytest_qcrypto.gate.spread.RULE`)
    rule: str = RULE
    #: what the slowdown is measured against, in words
    against: str = "relative to the reference workload"
    #: a verdict the rule set itself (:data:`CANNOT_TELL` when the cell moved with its
    #: peers: :mod:`pytest_qcrypto.gate.spread`), and why, in words; empty: from the figures
    forced: str = ""
    why: str = ""

    @property
    def status(self) -> str:
        if self.forced:
            return self.forced
        t = self.threshold_pct / 100
        if self.slowdown <= t or self.try_slowdowns[-1] <= t:  # the last try passed
            return PASS
        # the band's lower edge, in log terms, beyond the threshold's: slower, whatever the band
        lower = -math.log1p(-self.slowdown) - math.log1p(self.band)
        if lower > -math.log1p(-t):
            return REGRESSION
        return CANNOT_TELL if self.band > t else NOISE

    def text(self) -> str:
        """``slower by 23% +- 4% against the reference workload (3 rounds then, 9 now,
        reference ratio)``."""
        return (f"{self.slowdown:.1%} slower {self.against}, noise band "
                f"+-{self.band:.1%} ({self.baseline_rounds} rounds in the baseline, "
                f"{self.rounds} now; {self.rule})")

    def cannot_tell_text(self) -> str:
        """What a cannot-tell verdict says and what to do about it."""
        if self.why:
            return (f"cannot tell on this machine: {self.slowdown:.1%} slower {self.against}, "
                    f"but {self.why}: an A/B run of both versions in one job "
                    "(--qcrypto-target) or --qcrypto-measure=instructions can tell")
        return (f"cannot tell on this machine: {self.slowdown:.1%} slower {self.against}, "
                f"but the noise band is +-{self.band:.1%}, wider than the threshold "
                f"{self.threshold_pct:g}%: more --qcrypto-rounds, a quieter runner, "
                "--qcrypto-measure=instructions, or an A/B run of both versions in one job "
                "(--qcrypto-target)")

    def record(self) -> dict[str, object]:
        """Saved with the verdict: ``drift_slowdown``, ``drift_band``, ``drift_status``."""
        out = {"drift_rule": self.rule, "drift_slowdown": self.slowdown,
               "drift_band": self.band, "drift_status": self.status}
        return {**out, "drift_why": self.why} if self.why else out


def try_slowdown(m: Measurement, share: float | None, baseline: Result) -> float | None:
    """One try's slowdown relative to the reference, against ``baseline``'s; None when a
    side has no reference times."""
    base, now = _baseline_rates(baseline), _try_rates(m, share)
    if base is None or now is None:
        return None
    return 1 - statistics.median(now) / statistics.median(base)


def drift_test(tries: Sequence[Measurement], waits: Sequence[float | None], baseline: Result,
               threshold_pct: float) -> DriftTest | None:
    """The rule on every try so far against ``baseline``; None when the baseline or a try
    has no reference times (the gate then judges by the clock alone, as before)."""
    base = _baseline_rates(baseline)
    per_try = [_try_rates(t, w) for t, w in zip(tries, waits)]
    if base is None or any(p is None for p in per_try):
        return None
    now = [x for p in per_try if p for x in p]
    slow = 1 - statistics.median(now) / statistics.median(base)
    each = tuple(1 - statistics.median(p) / statistics.median(base) for p in per_try if p)
    base_logs = [math.log(x) for x in base]
    if len(per_try) > 1:  # tries a pause apart: what varies between phases
        cur_logs = [math.log(statistics.median(p)) for p in per_try if p]
        current = _var(cur_logs) * (1 / len(cur_logs) + 1)  # the baseline: one more phase
    else:
        current = _var([math.log(x) for x in now]) / len(now)
    se = math.sqrt(_var(base_logs) / len(base_logs) + current)
    band = math.expm1(Z * se)
    return DriftTest(slow, band, each, threshold_pct, len(base), len(now))
