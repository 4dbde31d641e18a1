"""Rounds spread over the run: every cell of a run measured in turn, one round a pass.

Why: a shared virtual machine's speed drifts in phases of a second or two (a neighbour on
the same core or memory bus; measured on the project's 2-CPU development machine: rounds of
one unchanged cell alternate between a slow phase and bursts up to 1.8 times faster, with
no CPU wait or steal time to be seen).  A cell's rounds taken back to back (0.3 s at the
defaults) sample one phase; so do a baseline's, and the gate reads the difference of two
phases as a change of the code.  Here the cells take turns instead: after each cell's
calibration, pass ``p`` times one round of every cell, and the passes are paced so that a
cell's rounds span at least ``span_s`` seconds.  Each cell's rounds then sample the phases
of the whole run, and :mod:`pytest_qcrypto.gate.spread` judges them by their slow phase.

Measured there (5 cells, 230 passes in 40 s, and the same beside a spinning and a
memory-copying neighbour): the 25th percentile of a cell's round rates (CPU time) over 25
rounds about 0.5 s apart differed between the three runs by 3% (one standard deviation),
with no shift between conditions; the median of the same rounds by 6 to 9%, shifted 4% by
a neighbour; the median of 9 back-to-back rounds by 19 to 26%.

:func:`spread_rounds` is plain Python: runners in, :class:`~pytest_qcrypto.measure.harness.Timing`
out; clocks and ``sleep`` are injectable for tests.  No pytest.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pytest_qcrypto.algorithms.catalog import Direction
from pytest_qcrypto.backends.base import Workload
from pytest_qcrypto.measure import bench, harness
from pytest_qcrypto.measure.harness import Measurement

T = TypeVar("T")

#: Rounds of each cell when rounds are spread (``--qcrypto-rounds`` may ask for more): about
#: 25 samples of the machine's phases make the 25th percentile steady to about 3% (measured,
#: see the module text).
SPREAD_ROUNDS = 25
#: Seconds of one spread round at most (``--qcrypto-min-time`` when that is shorter): short
#: rounds make a pass over all cells quick, so that more passes fit in the run.
ROUND_S = 0.01
#: Seconds the rounds of a cell span at least: passes over few cells are paced (the run
#: sleeps between them) so that they still sample several phases of the drift.
MIN_SPAN_S = 8.0


@dataclass(frozen=True)
class Spread:
    """What a spread measurement is: ``rounds`` per cell, each of ``round_s`` seconds at
    least, spanning at least ``span_s`` seconds."""

    rounds: int = SPREAD_ROUNDS
    round_s: float = ROUND_S
    span_s: float = MIN_SPAN_S


@dataclass(frozen=True)
class SpreadTiming:
    """A cell's :class:`~pytest_qcrypto.measure.harness.Timing` and the seconds from its
    first round's start to its last round's end (``span_s``)."""

    timing: harness.Timing
    span_s: float


def spread_rounds(cells: Mapping[Hashable, Callable[[], harness.Runner]],
                  spread: Spread = Spread(), *,
                  clock: Callable[[], int] | None = None,
                  cpu_clock: Callable[[], int] | None = None,
                  monotonic: Callable[[], float] | None = None,
                  sleep: Callable[[float], None] | None = None,
                  failed: Callable[[Hashable, Exception], None] | None = None,
                  between: Callable[[], float] | None = None,
                  guard: Callable[[Callable[[], T]], T] | None = None,
                  interrupted: Callable[[dict[Hashable, SpreadTiming]], None] | None = None,
                  order: Sequence[Hashable] = (),
                  ) -> dict[Hashable, SpreadTiming]:
    """Each cell's rounds, taken in turn.  ``cells`` maps a key to a function that opens and
    checks the cell and returns its runner (``run(count)`` performs ``count`` operations).
    In the order of ``cells``, each is made and its count calibrated (the doubling loop of
    :func:`~pytest_qcrypto.measure.harness.time_runner` to ``spread.round_s`` seconds; that
    round is its first); then ``spread.rounds - 1`` passes take one round of every cell, in
    the order of ``order`` (keys of ``cells``; the cells it leaves out follow in their order).
    Pass ``p`` starts no earlier than ``p * span_s / (rounds - 1)`` seconds after the first
    pass (``sleep`` waits; default ``time.sleep``).  ``between()``, when given, runs after
    the calibrations and after each pass and returns seconds (the reference workload,
    :mod:`pytest_qcrypto.measure.reference`): one per round, the same for every cell, in
    each cell's ``Timing.reference_s``.

    ``guard(call)`` runs each making-and-calibrating and each round (default: as is; the
    pytest side bounds them by ``--qcrypto-timeout``).  A cell whose call raises an
    ``Exception`` is left out of the result and passed to ``failed(key, exc)`` (default:
    nothing); the others go on.  A ``BaseException`` (Ctrl-C, SIGTERM) first hands the cells
    measured so far, with the rounds they have, to ``interrupted`` and then propagates.
    ``clock`` and ``cpu_clock`` return nanoseconds (defaults ``time.perf_counter_ns`` and
    ``time.process_time_ns``), ``monotonic`` seconds (default ``time.monotonic``).
    """
    clock = clock or time.perf_counter_ns
    cpu_clock = cpu_clock or time.process_time_ns
    monotonic = monotonic or time.monotonic
    sleep = sleep or time.sleep
    run_guarded: Callable[[Callable[[], T]], T] = guard or (lambda call: call())
    live: dict[Hashable, harness.Runner] = {}
    counts: dict[Hashable, int] = {}
    walls: dict[Hashable, list[int]] = {}
    cpus: dict[Hashable, list[int]] = {}
    starts: dict[Hashable, float] = {}
    ends: dict[Hashable, float] = {}
    refs: list[float] = []

    def drop(key: Hashable, exc: Exception) -> None:
        live.pop(key, None)
        if failed is not None:
            failed(key, exc)

    def results() -> dict[Hashable, SpreadTiming]:
        out: dict[Hashable, SpreadTiming] = {}
        for key in live:
            if min(walls[key]) <= 0:
                if failed is not None:
                    failed(key, harness.TimerError("the timer went backwards or stood still "
                                                   f"during a round: {walls[key]} ns"))
                continue
            n = len(walls[key])
            timing = harness.Timing(counts[key], tuple(w / 1e9 for w in walls[key]),
                                    tuple(c / 1e9 for c in cpus[key]),
                                    reference_s=tuple(refs[:n]) if len(refs) >= n else ())
            out[key] = SpreadTiming(timing, max(ends[key] - starts[key], 0.0) if n > 1 else 0.0)
        return out

    def calibrate(make: Callable[[], harness.Runner]) -> tuple[harness.Runner, harness.Timing]:
        run = make()
        return run, harness.time_runner(run, min_time=spread.round_s, rounds=1, clock=clock,
                                        cpu_clock=cpu_clock, guard=monotonic)

    try:
        for key, make in cells.items():
            starts[key] = monotonic()
            try:
                run, t = run_guarded(lambda: calibrate(make))
            except Exception as exc:  # the cell fails alone, as its own item would
                drop(key, exc)
                continue
            ends[key] = monotonic()
            live[key], counts[key] = run, t.count
            walls[key], cpus[key] = [round(t.rounds_s[0] * 1e9)], [round(t.cpu_s[0] * 1e9)]
        if between is not None:
            refs.append(between())
        named = set(order)
        turns = [k for k in order if k in cells] + [k for k in cells if k not in named]
        passes = max(spread.rounds - 1, 0)
        began = monotonic()
        for p in range(1, passes + 1):
            due = began + (p - 1) * spread.span_s / max(passes, 1)
            if (wait := due - monotonic()) > 0:
                sleep(wait)
            for key in [k for k in turns if k in live]:
                run = live[key]
                try:
                    t0, t1, cpu = run_guarded(
                        lambda: harness.timed(run, counts[key], clock, cpu_clock))
                except Exception as exc:
                    drop(key, exc)
                    continue
                walls[key].append(t1 - t0)
                cpus[key].append(cpu)
                ends[key] = monotonic()
            if between is not None:
                refs.append(between())
    except BaseException:
        if interrupted is not None:
            keep = min((len(walls[k]) for k in live), default=0)
            for key in live:
                del walls[key][keep:], cpus[key][keep:]
            interrupted(results())
        raise
    return results()


def cell(ctx: bench.BenchContext, size: int, *, decrypt: bool = False,
         roundtrip: bool = False) -> tuple[Callable[[], harness.Runner],
                                           Callable[[SpreadTiming], Measurement]]:
    """One sized cell of an open ``ctx`` for :func:`spread_rounds`: a function that checks
    it (known answers and the round trip, as
    :meth:`~pytest_qcrypto.measure.bench.BenchContext.measure` checks them; their errors
    raised) and returns its runner, and ``finish(spread_timing)``, which makes the cell's
    :class:`~pytest_qcrypto.measure.harness.Measurement` (``spread_s`` set)."""
    made: list[tuple[Direction, int, Workload]] = []

    def make() -> harness.Runner:
        run, direction, real_size, work, _ = bench.prepare(ctx, size, bench._Way(decrypt,
                                                                                  roundtrip))
        made.append((direction, real_size, work))
        return run

    def finish(t: SpreadTiming) -> Measurement:
        direction, real_size, work = made[-1]
        return bench.measurement_of(ctx, t.timing, direction, real_size, work,
                                    spread_s=t.span_s)
    return make, finish
