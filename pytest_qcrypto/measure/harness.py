"""The timing harness: qcrypto's doubling-count loop, usable without pytest.

Calibration: start with ``count = 1``; run ``count`` operations; while that
run took less than ``min_time`` seconds, double ``count`` and run again.  Once
a run takes at least 1/16 of ``min_time``, the count skips ahead to the count
that run predicts will take ``min_time`` x 1.15 (:mod:`pytest_qcrypto.measure.counts`):
not a power of two, whose rounds last 1.44 times ``min_time`` on average, time
that buys no accuracy and delays the result.  A run still under ``min_time`` is
a calibration run like any other, the count predicted again from it (always
larger: calibration ends).  The last calibration run is the first round (it
lasted at least ``min_time``, at the count the rounds use); the remaining
rounds run with the same count.  Each round records wall seconds
(``time.perf_counter_ns``) and process CPU seconds (``time.process_time_ns``); the garbage
collector is off inside the timed loops.  The figure reported is the median round; every
round is kept.

Calibration may start from a predicted count (``start``, see
:mod:`pytest_qcrypto.measure.calibration`); a first run of :data:`TOO_LONG` times ``min_time``
or more is then not a round, and the count is predicted again from its rate.

A stall during the last calibration run (the machine busy elsewhere, a page
fault storm) makes it reach ``min_time`` at a count far too small, and the
rounds that follow come out short.  When a round takes under
:data:`SHORT_ROUND` of ``min_time``, calibration starts again from the count
that round's rate predicts, and every round is timed again, at most
:data:`MAX_RECALIBRATIONS` times; rounds still that short are kept, with a note
(:attr:`Timing.note`) that makes the figure noisy
(:func:`pytest_qcrypto.measure.machine.noise`).  A later round between
:data:`SHORT_ROUND` and 1 times ``min_time`` (the machine got faster by more than
the margin after the first round) is kept as it is.

Rounds that settle (``settle``, :data:`SETTLE`; a run that neither saves nor compares and
leaves ``--qcrypto-rounds`` at its default): once the first ``rounds // 2 + 1`` rounds differ
by at most ``settle``, the rest are not timed.  The median of all ``rounds`` would lie
between the fastest and slowest of those, whatever the rest measured, so the figure moves
by at most ``settle`` (half of it with two rounds) and the third round of the default three
is spent only when the first two disagree.

A clock that does not advance (a frozen or mocked ``perf_counter_ns``) would
make the doubling run forever.  :func:`time_runner` times every calibration
run with an independent guard clock (``time.monotonic``) too, and raises
:class:`TimerError` as soon as one run took a quarter of a second by the guard
but under a tenth of that by the timer: well within a second of wall time
unless a single operation is slower than that.  As a second line, it also
stops once the guard has seen ``min_time * 10 + 1`` seconds of calibration.

A fixed count (``--qcrypto-count N``, FreeBSD cryptotest's ``count``):
:func:`time_count` runs exactly N iterations in every round, without
calibrating; rounds and the median apply as above.  A round shorter than
:data:`MIN_FIXED_ROUND_S` is timed, kept and noted (:attr:`Timing.note`: the
figure is noisy), never silently trusted.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_qcrypto.algorithms import settings
from pytest_qcrypto.backends.base import Runner
from pytest_qcrypto.measure import counts, limits
# What a timed cell is, made here (and still named here: most code imports it from here)
from pytest_qcrypto.measure.measurement import KIB, Measurement, WorkerRecord  # noqa: F401

#: Never count past this: 2**40 operations cannot finish in a human lifetime
#: (also the most ``--qcrypto-count`` takes).
MAX_COUNT = settings.MAX_COUNT
#: A first run at a predicted count this many times ``min_time`` or more is not kept: the
#: count is predicted again.  That costs the run and saves (rounds - 1) x (its length -
#: :data:`~pytest_qcrypto.measure.counts.MARGIN` x ``min_time``): at the default 3 rounds
#: it pays from 1.73 times on; 2 leaves room for a prediction a little high.
TOO_LONG = 2
#: A timed round shorter than this fraction of ``min_time`` means a stall chose the count.
SHORT_ROUND = 0.5
#: How many times the count is chosen again from a short round before short rounds are kept.
MAX_RECALIBRATIONS = 2
#: A calibration run this long by the guard clock (seconds), that the timer
#: saw as under a tenth of it, proves the timer broken.
GUARD_RUN_S = 0.25
#: A round of a fixed count shorter than this (seconds) is under what the clock and the
#: loop around it can honestly time: timer resolution, the calls that read the clocks and
#: the GC switch cost microseconds, a fraction of a percent only of a millisecond.
MIN_FIXED_ROUND_S = 1e-3
#: Rounds that differ by at most this fraction (slowest / fastest - 1) settle the figure
#: (see the module text): 2%, so that two rounds of the default three give a figure within
#: 1% of the median of three, under the 1.6% that ten best-of-5 runs of hashlib sha256 at
#: 16 B spread on the project's machine (../shared/reference/measurement.md).
SETTLE = 0.02


class TimerError(RuntimeError):
    """The timer did not advance while operations ran (frozen or mocked clock)."""


@dataclass(frozen=True)
class Timing:
    """What :func:`time_runner` found: the count and every round's wall and CPU seconds.

    ``recalibrations`` is how many times the count was chosen again after a
    short round; ``note`` says why the rounds are still too short to trust
    (empty: they are not).
    """

    count: int
    rounds_s: tuple[float, ...]
    cpu_s: tuple[float, ...]
    recalibrations: int = 0
    note: str = ""
    #: CPU seconds of the reference workload timed right after each round (empty: none)
    reference_s: tuple[float, ...] = ()
    #: calibration runs whose time was thrown away (those before the first round of the
    #: first calibration and of each recalibration)
    calibration_runs: int = 0


def timed(run: Runner, count: int, clock: Callable[[], int],
          cpu_clock: Callable[[], int]) -> tuple[int, int, int]:
    """Run ``count`` operations with the GC off: (start ns, end ns) by ``clock``, CPU ns.

    The start and end are kept (not only their difference) so that the
    timings of several processes can be laid on one time line (:mod:`pytest_qcrypto.measure.jobs`).
    """
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        c0 = cpu_clock()
        t0 = clock()
        run(count)
        t1 = clock()
        c1 = cpu_clock()
    finally:
        if gc_was_on:
            gc.enable()
    limits.rearm()  # the measured code may have turned off the timeout's alarm
    return t0, t1, c1 - c0


def short_rounds_note(walls_ns: Sequence[float], min_time: float, recalibrations: int) -> str:
    """``rounds of 2.35 ms, under half of min-time 0.1 s, after 2 recalibrations (a stall
    during calibration)``: why rounds under :data:`SHORT_ROUND` of ``min_time`` are kept."""
    short = sorted(w for w in walls_ns if w < min_time * 1e9 * SHORT_ROUND)
    low, high = f"{short[0] / 1e6:.3g}", f"{short[-1] / 1e6:.3g}"
    what = (f"a round of {low} ms" if len(short) == 1 else
            f"rounds of {low} ms" if low == high else f"rounds of {low} to {high} ms")
    return (f"{what}, under half of min-time {min_time:g} s, after {recalibrations} "
            f"recalibration{'' if recalibrations == 1 else 's'} (a stall during calibration)")


def time_runner(run: Runner, *, min_time: float = 0.1, rounds: int = 3,
                clock: Callable[[], int] | None = None,
                cpu_clock: Callable[[], int] | None = None,
                guard: Callable[[], float] | None = None,
                guard_limit: float | None = None,
                between: Callable[[], float] | None = None, start: int = 1,
                settle: float = 0.0) -> Timing:
    """Calibrate with the doubling-count loop from ``start`` operations, then time ``rounds``
    rounds (calibrating again from a round under :data:`SHORT_ROUND` of ``min_time``, up to
    :data:`MAX_RECALIBRATIONS` times).

    ``run(count)`` performs ``count`` operations.  ``min_time`` is in seconds,
    ``rounds`` >= 1.  ``clock`` and ``cpu_clock`` return nanoseconds (default
    ``time.perf_counter_ns`` and ``time.process_time_ns``, looked up at call
    time); ``guard`` returns seconds (default ``time.monotonic``).  Raises
    :class:`TimerError` if the clock stays still while the guard clock passes
    ``guard_limit`` seconds (default ``min_time * 10 + 1``), and ``ValueError``
    for a ``min_time`` or ``rounds`` outside the limits of the options (more than 0 and
    at most :data:`~pytest_qcrypto.algorithms.settings.MAX_MIN_TIME` seconds, 1 to
    :data:`~pytest_qcrypto.algorithms.settings.MAX_ROUNDS` rounds).  ``between()``, when
    given, runs right after each kept round and returns seconds (the reference workload,
    :mod:`pytest_qcrypto.measure.reference`): ``Timing.reference_s``.  ``start`` (1 to
    :data:`MAX_COUNT`; 1: no prediction) is the count of the first run; ``settle`` (a
    fraction, 0: every round is timed) lets the rounds settle (both: see the module text).
    """
    problem = settings.min_time_problem(min_time) or settings.rounds_problem(rounds) or (
        settings.count_problem(start) or "").replace("count", "start", 1)
    if problem:
        raise ValueError(problem)
    clock = clock or time.perf_counter_ns
    cpu_clock = cpu_clock or time.process_time_ns
    guard = guard or time.monotonic
    limit = guard_limit if guard_limit is not None else min_time * 10 + 1.0
    min_ns, clocks = min_time * 1e9, (clock, cpu_clock, guard)
    count, wall, cpu, thrown = _calibrate(run, start, min_time, clocks, limit)
    refs = [between()] if between is not None else []
    walls, cpus = _rounds(run, count, rounds - 1, clock, cpu_clock, [wall], [cpu], between, refs,
                          settle)
    recalibrations = 0
    while min(walls) < min_ns * SHORT_ROUND and recalibrations < MAX_RECALIBRATIONS \
            and count < MAX_COUNT:  # a stall chose the count: calibrate from a short round
        recalibrations += 1
        count, wall, cpu, more = _calibrate(
            run, counts.predicted_count(count, min(walls), min_ns), min_time, clocks, limit)
        thrown, refs = thrown + more, [between()] if between is not None else []
        walls, cpus = _rounds(run, count, rounds - 1, clock, cpu_clock, [wall], [cpu], between,
                              refs, settle)
    note = short_rounds_note(walls, min_time, recalibrations) \
        if min(walls) < min_ns * SHORT_ROUND else fixed_count_note(walls, "--qcrypto-min-time")
    return Timing(count, tuple(w / 1e9 for w in walls), tuple(c / 1e9 for c in cpus),
                  recalibrations, note, tuple(refs), thrown)


def _calibrate(run: Runner, start: int, min_time: float,
               clocks: tuple[Callable[[], int], Callable[[], int], Callable[[], float]],
               limit: float) -> tuple[int, int, int, int]:
    """Run from ``start`` operations until a run reaches ``min_time``: (its count, wall ns,
    CPU ns, the runs before it).  A first run of :data:`TOO_LONG` x ``min_time`` from a
    predicted ``start`` (more than 1) is not kept: the count is predicted again from it."""
    clock, cpu_clock, guard = clocks
    min_ns, started = min_time * 1e9, guard()
    count, timed_total, runs = start, 0, 0
    while True:
        g0 = guard()
        t0, t1, cpu = timed(run, count, clock, cpu_clock)
        ran = guard() - g0
        wall = t1 - t0
        timed_total, runs = timed_total + wall, runs + 1
        if wall >= min_ns * TOO_LONG and runs == 1 < start:  # predicted far too high
            count = counts.predicted_count(count, wall, min_ns)
            continue
        if wall >= min_ns:
            return count, wall, cpu, runs - 1
        waited = guard() - started
        if (ran >= GUARD_RUN_S and wall < ran * 1e9 / 10) or \
                (waited > limit and timed_total < waited * 1e9 / 10):
            raise TimerError(
                f"the timer did not advance: {count} operations took {wall / 1e9:.3g} s "
                f"by the timer but {ran:.3g} s by time.monotonic (is perf_counter_ns mocked?)")
        if count >= MAX_COUNT:
            raise TimerError(f"{count} operations still took under {min_time} s by the timer")
        count = counts.next_count(count, wall, min_ns)


def time_count(run: Runner, count: int, *, rounds: int = 3,
               clock: Callable[[], int] | None = None,
               cpu_clock: Callable[[], int] | None = None,
               between: Callable[[], float] | None = None, settle: float = 0.0) -> Timing:
    """Time ``rounds`` rounds of exactly ``count`` iterations each (``run(count)`` per
    round), without calibrating: ``--qcrypto-count``.

    Clocks, ``between`` and ``settle`` as in :func:`time_runner`.  A round under :data:`MIN_FIXED_ROUND_S` seconds
    gets a note (:func:`fixed_count_note`).  Raises ``ValueError`` for a ``count`` outside
    1 to :data:`MAX_COUNT` or ``rounds`` outside 1 to
    :data:`~pytest_qcrypto.algorithms.settings.MAX_ROUNDS`, and :class:`TimerError` when a round is not
    positive (a frozen clock).
    """
    problem = settings.count_problem(count) or settings.rounds_problem(rounds)
    if problem:
        raise ValueError(problem)
    refs: list[float] = []
    walls, cpus = _rounds(run, count, rounds, clock or time.perf_counter_ns,
                          cpu_clock or time.process_time_ns, between=between, refs=refs,
                          settle=settle)
    return Timing(count, tuple(w / 1e9 for w in walls), tuple(c / 1e9 for c in cpus),
                  note=fixed_count_note(walls), reference_s=tuple(refs))


def fixed_count_note(walls_ns: Sequence[float], option: str = "--qcrypto-count") -> str:
    """``a round of 0.21 ms is under the 1 ms the clock can honestly time: raise
    --qcrypto-count``, when a round (nanoseconds) is under :data:`MIN_FIXED_ROUND_S`;
    else empty."""
    limit_ns = MIN_FIXED_ROUND_S * 1e9
    short = sorted(w for w in walls_ns if w < limit_ns)
    if not short:
        return ""
    low, high = f"{short[0] / 1e6:.2g}", f"{short[-1] / 1e6:.2g}"
    what = (f"a round of {low} ms is" if len(short) == 1 else
            f"rounds of {low} ms are" if low == high else f"rounds of {low} to {high} ms are")
    return (f"{what} under the {MIN_FIXED_ROUND_S * 1e3:g} ms the clock can honestly time: "
            f"raise {option}")


def _rounds(run: Runner, count: int, rounds: int, clock: Callable[[], int],
            cpu_clock: Callable[[], int], walls: list[int] | None = None,
            cpus: list[int] | None = None, between: Callable[[], float] | None = None,
            refs: list[float] | None = None, settle: float = 0.0) -> tuple[list[int], list[int]]:
    """Time ``rounds`` more rounds of ``count`` operations after ``walls`` and ``cpus``
    (nanoseconds), appending ``between()`` after each to ``refs``, fewer once they settle
    (``settle`` > 0, see the module text); :class:`TimerError` when a round is not positive."""
    walls, cpus = list(walls or []), list(cpus or [])
    enough = (len(walls) + rounds) // 2 + 1
    for _ in range(rounds):
        if settle > 0 and len(walls) >= enough and max(walls) <= min(walls) * (1 + settle):
            break
        t0, t1, cpu = timed(run, count, clock, cpu_clock)
        walls.append(t1 - t0)
        cpus.append(cpu)
        if between is not None and refs is not None:
            refs.append(between())
    if min(walls) <= 0:
        raise TimerError(f"the timer went backwards or stood still during a round: {walls} ns")
    return walls, cpus
