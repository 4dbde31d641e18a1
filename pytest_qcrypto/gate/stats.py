"""The regression gate's decision rule: an exact one-sided median test with a stated
false-alarm rate.

The question: is this cell slower than the baseline by more than the threshold, or could
the rounds measured now have come from the baseline's own spread?  The data are per-round
throughputs (bytes per second), each round without its wait for a CPU: the baseline's
``n`` rounds and the ``m`` rounds of every try measured now.

The rule (:func:`median_test`): scale the baseline's rounds by ``1 - threshold`` (the
slowest figure the threshold allows), take their median round (for an even ``n`` the
slower of the two middle rounds: the ``k``-th slowest, ``k = (n + 1) // 2``), and count
``K``, the current rounds slower than it.  Under the null hypothesis (the cell is at most
the threshold slower: the current rounds, scaled back, are exchangeable with the
baseline's), every way of choosing which ``n`` of the ``n + m`` rounds are the baseline's
is equally likely, so the rank ``r`` of the reference among all rounds (from the slowest)
has the exact distribution ``P(r) = C(r-1, k-1) C(n+m-r, n-k) / C(n+m, n)`` and
``K = r - k``.  The p-value is ``P(K >= K observed)``; the cell is slower beyond the
threshold, at the false-alarm rate :data:`ALPHA`, when ``p <= ALPHA``.

Why a median test and not Mann-Whitney U: a rank-sum lets one wild baseline round (a
baseline with rounds ``[T/3, T/3, 10T]``) count against every current round and hide a 40%
slowdown; the median ignores up to ``k - 1`` slow baseline rounds.  Ties count as "not
slower", which only raises ``p``.

What this guarantees, and what it cannot see: with rounds independent and alike in
spread, a cell at most the threshold slower fails with probability at most ``ALPHA``
(exactly ``ALPHA`` or less at the threshold itself, far less for an unchanged cell).  It
cannot see a shift of the whole run (another machine state, a neighbour for the whole
run, CPU frequency): rounds of one run are not independent of its conditions.  With few
rounds no outcome reaches ``ALPHA`` (:func:`smallest_p`); the gate then judges by the
figures alone and says so (:func:`rounds_needed`).

Plain Python, the standard library only (no random draws: the same rounds give the same
verdict); never imports pytest.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_qcrypto.algorithms.catalog import plural
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.results.model import Result, without_wait

#: The rule's false-alarm rate per cell: the most often a cell whose true slowdown is at
#: most the threshold fails.  5%: the least a 3-round baseline can decide at (with one
#: slow round among its 3 and 9 rounds now, p = 10/220 = 0.045).
ALPHA = 0.05
#: The rule's name, as saved results and JUnit properties give it.
RULE = "median test"


def _reference_rank(n: int) -> int:
    """``k``: the baseline round the test compares with is its ``k``-th slowest."""
    return (n + 1) // 2


def p_value(below: int, n: int, m: int) -> float:
    """``P(K >= below)``: the chance that ``below`` or more of ``m`` current rounds fall
    below the reference of ``n`` baseline rounds when all ``n + m`` are exchangeable.

    Raises ValueError for ``n`` or ``m`` below 1 or ``below`` outside 0..m.
    """
    if n < 1 or m < 1 or not 0 <= below <= m:
        raise ValueError(f"p_value: need n, m >= 1 and 0 <= below <= m, not {below}, {n}, {m}")
    k = _reference_rank(n)
    total = math.comb(n + m, n)
    hits = sum(math.comb(k + j - 1, k - 1) * math.comb(n + m - k - j, n - k)
               for j in range(below, m + 1))
    return hits / total


def smallest_p(n: int, m: int) -> float:
    """The smallest p-value ``n`` baseline and ``m`` current rounds can give (every current
    round slower than the reference): above :data:`ALPHA`, the test cannot decide."""
    return p_value(m, n, m)


def rounds_needed(confirm: int, alpha: float = ALPHA, baseline_rounds: int | None = None) -> int:
    """The fewest ``--qcrypto-rounds`` with which a cell that regresses on every one of its
    ``1 + confirm`` tries can be decided at ``alpha``: the baseline saved with the same
    rounds (or with ``baseline_rounds``).  Does not depend on the threshold: it only moves
    the reference.  Raises ValueError when no count up to 1000 rounds suffices."""
    for r in range(1, 1001):
        n = baseline_rounds or r
        if smallest_p(n, r * (1 + confirm)) <= alpha:
            return r
    raise ValueError(f"no round count up to 1000 decides at {alpha} with {baseline_rounds} "
                     "baseline rounds")


def spread(rounds_s: Sequence[float]) -> float:
    """The slowest round over the fastest, less one (``0.5``: 50% slower); 0 for none."""
    return max(rounds_s) / min(rounds_s) - 1 if rounds_s else 0.0


@dataclass(frozen=True)
class TestResult:
    """The median test of one cell: ``below`` of ``rounds`` current rounds were slower than
    ``reference`` (bytes per second: the baseline's median round times ``1 - threshold``);
    ``p`` their p-value; ``baseline_rounds`` how many rounds the baseline had;
    ``baseline_spread`` its rounds' spread (:func:`spread`, waits for a CPU taken out)."""

    below: int
    rounds: int
    baseline_rounds: int
    reference: float
    p: float
    baseline_spread: float
    alpha: float = ALPHA

    @property
    def decidable(self) -> bool:
        """Some outcome of these round counts reaches ``alpha``."""
        return smallest_p(self.baseline_rounds, self.rounds) <= self.alpha

    @property
    def significant(self) -> bool:
        return self.p <= self.alpha

    def noisy(self, threshold_pct: float) -> bool:
        """The baseline's own rounds spread more than the threshold."""
        return self.baseline_spread * 100 > threshold_pct

    def text(self, without_wait: bool = False) -> str:
        """``9 of 9 rounds slower than the threshold allows against the baseline's median
        round (p = 0.045 <= 0.05, median test)``; ``without_wait``: say the rounds were
        judged without their waits for a CPU."""
        sign = "<=" if self.significant else ">"
        each = " (each without its wait for a CPU)" if without_wait else ""
        return (f"{self.below} of {self.rounds} rounds{each} slower than the threshold allows "
                f"against the baseline's median round (p = {self.p:.3g} {sign} "
                f"{self.alpha:g}, {RULE})")

    def undecidable_text(self) -> str:
        """Why the test could not decide: too few rounds."""
        return (f"too few rounds for the {RULE} ({self.rounds} now, {self.baseline_rounds} in "
                f"the baseline: p cannot go below "
                f"{smallest_p(self.baseline_rounds, self.rounds):.3g}, above its false-alarm "
                f"rate {self.alpha:g}): judged by the figures alone")

    def noisy_text(self) -> str:
        return f"baseline noisy: rounds spread {self.baseline_spread:.0%}, remeasure it"

    def record(self, status: str, threshold_pct: float) -> dict[str, object]:
        """The saved form (a result's ``verdict``) and the source of the JUnit properties."""
        return {"status": status, "rule": RULE, "p_value": self.p,
                "false_alarm_rate": self.alpha, "threshold_pct": threshold_pct,
                "rounds_below": self.below, "rounds": self.rounds,
                "baseline_rounds": self.baseline_rounds,
                "baseline_spread": self.baseline_spread,
                "decided_by": "test" if self.decidable else "figures"}


def median_test(current_bps: Sequence[float], baseline_bps: Sequence[float],
                threshold_pct: float, alpha: float = ALPHA,
                baseline_rounds_s: Sequence[float] = ()) -> TestResult:
    """The test of ``current_bps`` (every current round, bytes per second) against
    ``baseline_bps`` (the baseline's rounds, bytes per second) at ``threshold_pct``.

    ``baseline_rounds_s`` are the baseline's rounds in seconds for its spread (default:
    from ``baseline_bps``).  Raises ValueError when either list is empty.
    """
    if not current_bps or not baseline_bps:
        raise ValueError("median_test: needs rounds on both sides")
    n, m = len(baseline_bps), len(current_bps)
    allowed = sorted(b * (1 - threshold_pct / 100) for b in baseline_bps)
    reference = allowed[_reference_rank(n) - 1]
    below = sum(1 for c in current_bps if c < reference)
    seconds = baseline_rounds_s or [1 / b for b in baseline_bps]
    return TestResult(below, m, n, reference, p_value(below, n, m), spread(seconds), alpha)


# -- the rounds the test takes ----------------------------------------------------------------


def round_figures(m: Measurement, share: float | None) -> list[float]:
    """Bytes per second of every round of ``m``, its wait for a CPU (``share`` of its time
    off the CPU) taken out (:func:`without_wait`)."""
    rounds = without_wait(m.rounds_s, m.cpu_s, share) or list(m.rounds_s)
    work = m.operations * (m.size or 1)
    return [work / r for r in rounds]


def baseline_round_figures(r: Result) -> tuple[list[float], list[float]]:
    """A baseline's rounds: bytes per second of each (scaled from the saved figure of
    record, as :meth:`Result.figures_without_wait`) and their seconds, each without its wait
    for a CPU.  A result without rounds (schema 1) is one round of its figure."""
    if not r.rounds_s:
        return [r.bytes_per_second], []
    rounds = without_wait(r.rounds_s, r.cpu_s, r.cpu_wait_share) or list(r.rounds_s)
    median_raw = statistics.median(r.rounds_s)
    return [r.bytes_per_second * median_raw / s for s in rounds], rounds


def test_tries(tries: Sequence[Measurement], waits: Sequence[float | None], baseline: Result,
               threshold_pct: float) -> TestResult:
    """The median test of every round of every try (``waits``: each try's share of its time
    off the CPU that was a wait for one) against the rounds of ``baseline``."""
    now = [f for t, w in zip(tries, waits) for f in round_figures(t, w)]
    base, seconds = baseline_round_figures(baseline)
    return median_test(now, base, threshold_pct, baseline_rounds_s=seconds)


def summary_lines(judged: Sequence[tuple[str, TestResult, float, bool]], rounds: int | None,
                  confirm: int) -> list[str]:
    """The rule's lines under the tables.  ``judged``: per cell tested, its description,
    its test, its threshold (percent) and whether it failed as a regression; ``rounds`` the
    run's ``--qcrypto-rounds`` (None: unknown), ``confirm`` its confirmation tries.

    A run with fewer rounds than :func:`rounds_needed`, the regressions judged by the
    figures alone, and every baseline whose rounds spread more than its threshold.
    """
    if not judged:
        return []
    lines = []
    needed = rounds_needed(confirm)
    if rounds is not None and rounds < needed:
        lines.append(
            f"too few rounds for the gate's {RULE}: it needs --qcrypto-rounds={needed} or more "
            f"(with {plural(confirm, 'confirmation try', 'confirmation tries')} and a baseline "
            f"of as many rounds) to decide at its {ALPHA:g} false-alarm rate; this run has "
            f"{rounds}: a slowdown beyond the threshold fails by the figures alone")
    if rounds is not None and rounds >= needed:  # the run has enough: has each baseline?
        most = rounds * (1 + confirm)  # the rounds of every try a regression would get
        thin = sorted({t.baseline_rounds for _, t, _, _ in judged
                       if smallest_p(t.baseline_rounds, most) > ALPHA})
        if thin:
            lines.append(
                f"too few rounds in the baseline for the gate's {RULE}: a baseline of "
                f"{' or '.join(map(str, thin))} round{'' if thin == [1] else 's'} cannot reach "
                f"its {ALPHA:g} false-alarm rate even after "
                f"{plural(confirm, 'confirmation try', 'confirmation tries')}: a slowdown beyond "
                f"the threshold fails by the figures alone; save the baseline with "
                f"--qcrypto-rounds={needed} or more")
    alone = [cell for cell, test, _, failed in judged if failed and not test.decidable]
    if alone:
        lines.append(f"judged by the figures alone (too few rounds for the {RULE}): "
                     + ", ".join(alone))
    lines += [f"baseline noisy: {cell}: rounds spread {test.baseline_spread:.0%}, remeasure it"
              for cell, test, threshold, _ in judged if test.noisy(threshold)]
    return lines
