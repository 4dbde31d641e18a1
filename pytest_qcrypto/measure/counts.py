"""The count a calibration run predicts: how many operations the next run should do.

The harness (:func:`pytest_qcrypto.measure.harness.time_runner`) doubles the count while a
run is too short to predict from (under :data:`SKIP_AHEAD` of ``min_time``): qcrypto's loop,
and it costs little.  From a longer run, or from the seconds per operation of other sizes
(:mod:`pytest_qcrypto.measure.calibration`), it asks for the count predicted to take
``min_time`` x :data:`MARGIN`: not the power of two above it, since with power-of-two counts
a round lasts 1 to 2 times ``min_time`` (1.44 times on average), and that overshoot buys no
accuracy (a round of at least ``min_time`` is all the design asks), only time to a result.
The stall guards of the harness, of :mod:`pytest_qcrypto.measure.jobs` and of
:mod:`pytest_qcrypto.measure.threads` predict from a short round by the same rule.

Counts here are iterations of the timed loop, 1 to :data:`MAX_COUNT`.  (Instructions are
counted by :mod:`pytest_qcrypto.measure.counting`, which this is not.)  Plain Python.
"""

from __future__ import annotations

import math

from pytest_qcrypto.algorithms import settings

#: Never count past this: 2**40 operations cannot finish in a human lifetime
#: (also the most ``--qcrypto-count`` takes).
MAX_COUNT = settings.MAX_COUNT
#: Calibration predicts from a run once it takes at least this fraction of ``min_time``;
#: shorter runs double the count.
SKIP_AHEAD = 1 / 16
#: A predicted count aims at ``min_time`` x this.  A prediction comes from a run of 1/16 to
#: 1/8 of ``min_time`` at the skip-ahead (6 to 12 ms at the default 0.1 s), or from other
#: sizes; when the next run goes faster than that run by more than 1 - 1/MARGIN (13% at
#: 1.15), it falls under ``min_time`` and calibration needs one more run, about
#: ``min_time`` long.  Each 0.05 of margin costs 0.05 x rounds x ``min_time`` in every cell
#: (0.15 ``min_time`` at the default 3 rounds), so more margin pays only while it spares
#: that run in more than about 15% of the cells.  1.15 covers the 10% by which rounds may
#: spread before the summary calls a figure noisy
#: (:data:`~pytest_qcrypto.measure.noise.MAX_SPREAD`), with room for the short run's timer
#: reads: a machine quiet enough for a trusted figure seldom needs the extra run.  More would not cover what does cause one on a busy machine: a time
#: slice of other work (milliseconds) inside the short run slows it by 30% or more.
#: Rounds last 1.15 times ``min_time`` on a steady machine, against 1.44 on average with
#: powers of two: about a fifth less time in the rounds.  (Not yet measured on a real run:
#: ``Timing.calibration_runs`` counts the extra runs.)
MARGIN = 1.15


def target_ns(min_ns: float) -> int:
    """The nanoseconds a predicted count aims at: ``min_ns`` x :data:`MARGIN`, to the ns."""
    return max(1, round(min_ns * MARGIN))


def predicted_count(count: int, wall_ns: float, min_ns: float) -> int:
    """The count that a run of ``count`` operations in ``wall_ns`` nanoseconds predicts will
    take ``min_ns`` x :data:`MARGIN`: ceil(count x target / wall), exact in whole
    nanoseconds, 1 to :data:`MAX_COUNT`.  A run that is not positive predicts nothing: then
    twice ``count``."""
    wall = math.floor(wall_ns)
    if wall <= 0:
        return min(count * 2, MAX_COUNT)
    return max(1, min(-(-count * target_ns(min_ns) // wall), MAX_COUNT))


def next_count(count: int, wall_ns: float, min_ns: float) -> int:
    """The count after a calibration run of ``count`` operations that took ``wall_ns``, under
    ``min_ns``: twice it below :data:`SKIP_AHEAD` of ``min_ns``, else
    :func:`predicted_count`; always more than ``count`` (at most :data:`MAX_COUNT`), so that
    calibration ends."""
    if wall_ns < min_ns * SKIP_AHEAD:
        return min(count * 2, MAX_COUNT)
    return min(max(count + 1, predicted_count(count, wall_ns, min_ns)), MAX_COUNT)


def count_for(seconds: float, min_time: float) -> int:
    """The count of operations of ``seconds`` each predicted to take ``min_time`` x
    :data:`MARGIN` (seconds), 1 to :data:`MAX_COUNT`; 1 for a ``seconds`` that is not a
    positive number.  A ratio within a part in 10**9 above a whole number is that number:
    float noise must not add an operation."""
    if not seconds > 0 or not math.isfinite(seconds):
        return 1
    ratio = min_time * MARGIN / seconds
    if not ratio < MAX_COUNT:
        return MAX_COUNT
    return max(1, math.ceil(ratio * (1 - 1e-9)))
