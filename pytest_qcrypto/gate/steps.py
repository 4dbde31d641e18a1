"""Steps in a series of figures: where a cell's speed changed and stayed changed.

The method, on the natural logarithms of the figures (a step is then a ratio, whatever the
cell's speed):

1. Each point's variance is its own spread (the standard error of its rounds' mean log,
   :attr:`pytest_qcrypto.results.history.Point.log_se`) squared, plus the series' run-to-run
   variance: a machine drifts between runs (other work, clock, cache state) by more than the
   rounds of one run show.  That is estimated from the differences of consecutive points,
   a difference holding two points' noise: the root mean square of all but the largest
   tenth of them (where steps and outliers are), scaled to a normal standard deviation
   (:data:`TRIMMED_RMS_TO_SD`); at least :data:`MIN_RELATIVE_NOISE`.
2. A Hampel filter (Hampel 1974; Pearson 2002, "Outliers in process modeling and
   identification") replaces a point further than :data:`HAMPEL_K` of its standard
   deviations from the median of the :data:`HAMPEL_WINDOW` points around it by that median:
   one or two noisy runs cannot make a step, a change that lasts three runs passes untouched.
3. The steps are the optimal partition into segments of constant level under a weighted
   least-squares cost, each point weighed by the inverse of its variance, with a penalty
   per step (:func:`penalty`: ``4 ln n``, a stricter Schwarz/BIC penalty so that a few
   hundred noisy cells raise no false step), each segment at least :data:`MIN_RUN` points
   long, found by binary segmentation (Scott and Knott 1974; Vostrikova 1981): the best
   single split of a segment is kept when it lowers the cost by more than the penalty, and
   each half is split again.  That is O(n log n) in pure Python, where an exact optimal
   partition (PELT, Killick, Fearnhead and Eckley 2012) keeps O(n) candidates in a series
   without change: minutes for a history of 1,000 runs x 300 cells.  This is airspeed
   velocity's approach (a piecewise-constant fit weighted by each point's uncertainty).

Plain Python: no pytest, nothing measured.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

#: The fewest points a level must hold to be one: a step needs a new level that lasts.
MIN_RUN = 3
#: The Hampel filter's window (points, centred) and its bound in standard deviations.
HAMPEL_WINDOW, HAMPEL_K = 5, 3.0
#: The smallest run-to-run noise assumed (relative: 0.2%): exact figures (a test's fake
#: clock, figures typed in) must not make any difference a step.
MIN_RELATIVE_NOISE = 0.002
#: The penalty of a step in units of ``ln n`` (:func:`penalty`).
PENALTY = 4.0
#: The differences left out of the noise's estimate: the largest one in this many.
TRIM_ONE_IN = 10
#: For a normal sample, the root mean square of the 90% of values nearest 0 is
#: ``sd * sqrt(1 - 2 z phi(z) / 0.9)`` with ``z = Phi^-1(0.95) = 1.6449``: times this, the sd.
TRIMMED_RMS_TO_SD = 1.2670


@dataclass(frozen=True)
class Step:
    """A change of level before point ``index`` (0-based, of at least 1): the level of the
    segment before it and after it (the figures' weighted geometric mean, in the series'
    unit) and ``change``, ``after / before - 1`` (-0.2: 20% slower for a throughput)."""

    index: int
    before: float
    after: float

    @property
    def change(self) -> float:
        return self.after / self.before - 1


def run_noise(logs: Sequence[float]) -> float:
    """The series' run-to-run standard deviation of log figures (module doc, step 1): the
    root mean square of the differences of consecutive points less the largest tenth (where
    steps and outliers are), times :data:`TRIMMED_RMS_TO_SD`, over ``sqrt(2)``."""
    diffs = sorted(abs(b - a) for a, b in zip(logs, logs[1:]))
    keep = diffs[:len(diffs) - len(diffs) // TRIM_ONE_IN] if len(diffs) >= 2 else []
    if not keep:
        return MIN_RELATIVE_NOISE
    rms = math.sqrt(sum(d * d for d in keep) / len(keep))
    return max(TRIMMED_RMS_TO_SD * rms / math.sqrt(2), MIN_RELATIVE_NOISE)


def hampel(logs: Sequence[float], sds: Sequence[float]) -> list[float]:
    """``logs`` with each point further than :data:`HAMPEL_K` of its own standard deviations
    (``sds``) from the median of its window replaced by that median (module doc, step 2)."""
    half = HAMPEL_WINDOW // 2
    out = []
    for i, y in enumerate(logs):
        centre = statistics.median(logs[max(0, i - half):i + half + 1])
        out.append(centre if abs(y - centre) > HAMPEL_K * sds[i] else y)
    return out


def penalty(n: int) -> float:
    """The cost of one more step in a series of ``n`` points: ``4 ln n`` (module doc).

    Simulated here (30 points of 2% normal run-to-run noise, 0.5% spread per point; 2,000
    series): 0.5% of noise-only series get a step (none of 200 of 300 points), none with
    one or two runs 30-40% slow, a 20% step is found at its run in 99.8%, a 5% one in 91%.
    """
    return PENALTY * math.log(max(n, 2))


def partition(ys: Sequence[float], weights: Sequence[float], beta: float,
              min_run: int = MIN_RUN) -> list[int]:
    """The starts of the segments after the first (0 < start < n) of ``ys`` (module doc,
    step 3): binary segmentation with segments of at least ``min_run`` points."""
    sw, swy, swyy = [0.0], [0.0], [0.0]
    for y, w in zip(ys, weights):
        sw.append(sw[-1] + w)
        swy.append(swy[-1] + w * y)
        swyy.append(swyy[-1] + w * y * y)

    def cost(a: int, b: int) -> float:  # points a..b-1 about their weighted mean
        s = swy[b] - swy[a]
        return (swyy[b] - swyy[a]) - s * s / (sw[b] - sw[a])

    starts: list[int] = []
    pending = [(0, len(ys))]
    while pending:
        a, b = pending.pop()
        if b - a < 2 * min_run:
            continue
        whole = cost(a, b)
        gain, split = max((whole - cost(a, s) - cost(s, b), s)
                          for s in range(a + min_run, b - min_run + 1))
        if gain > beta:
            starts.append(split)
            pending += [(a, split), (split, b)]
    return sorted(starts)


def find(figures: Sequence[float], log_ses: Sequence[float]) -> list[Step]:
    """The steps of a series of positive ``figures`` (oldest first), each with its own
    spread ``log_ses`` (standard errors of log figures), by the method of the module doc."""
    if len(figures) < 2 * MIN_RUN:
        return []
    logs = [math.log(f) for f in figures]
    noise = run_noise(logs)
    sds = [math.sqrt(se * se + noise * noise) for se in log_ses]
    ys = hampel(logs, sds)
    weights = [1 / (s * s) for s in sds]
    starts = partition(ys, weights, penalty(len(ys)))
    bounds = [0, *starts, len(ys)]
    levels = []
    for a, b in zip(bounds, bounds[1:]):
        w = sum(weights[a:b])
        levels.append(math.exp(sum(weights[i] * ys[i] for i in range(a, b)) / w))
    return [Step(s, levels[i], levels[i + 1]) for i, s in enumerate(starts)]
