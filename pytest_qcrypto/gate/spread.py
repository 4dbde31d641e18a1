"""The wall-clock gate's rule for rounds spread over the run: the slow phase against the slow
phase, with a noise band from the rounds themselves.

When both the baseline and the current measurement of a cell took their rounds spread over
their runs (:mod:`pytest_qcrypto.measure.spread`: ``spread_s`` > 0, at least
:data:`MIN_ROUNDS` rounds), the rounds sample the machine's phases: a slow phase most of the
time and bursts up to 1.8 times faster when a neighbour on the same core pauses (measured on
the project's 2-CPU development machine).  The share of bursts changes from run to run, so
a median (or a mean) moves with it; the slow phase does not.  The rule:

* Each round's rate is its work (bytes, or operations) over its CPU seconds (a wait for a
  CPU counts in no round), or over its wall seconds for a cell that runs off the CPU (the
  baseline's median round on the CPU less than
  :data:`~pytest_qcrypto.gate.drift.MIN_CPU_SHARE` of its time: a device, a sleep).
* Each side's figure is the :data:`QUANTILE` quantile of its round rates (the slow
  phase's speed; interpolated as ``statistics.quantiles``' inclusive method), and the slowdown is ``1 -
  current / baseline``.  The reference workload is timed once a pass and saved
  (:mod:`pytest_qcrypto.measure.reference`) but not used: measured, its quartile moved by
  itself between runs and the ratio to it made false alarms (see :func:`spread_test`).
* The noise band is :data:`BAND_SD` standard deviation of that log ratio, estimated by
  resampling both sides' rounds (:data:`RESAMPLES` bootstrap draws, a fixed seed, so that a
  verdict is repeatable): ``band = exp(BAND_SD sd) - 1`` (see :data:`BAND_SD` for why one).
* Verdicts as :class:`~pytest_qcrypto.gate.drift.DriftTest` gives them: at most the
  threshold slower: pass; beyond it with the band's lower edge too: regression; beyond it,
  not its edge, with a band wider than the threshold: cannot tell on this machine; else
  within noise.  No confirmation tries: the spread rounds are the confirmation.
* Peers.  A machine state can last a whole run (measured with ``benchmarks/gate_drift.py``:
  in about 2 compares in 5, minutes after the baseline, unchanged sha256 cells read 25 to 38%
  slower at 4096 B and up and small buffers 10 to 35% faster, in every neighbour condition),
  and no spreading within a run can see it.  What moves with it is the same work: the same
  algorithm at the same buffer size in the run's other crypto plugins (the same instructions,
  SHA-NI or AES-NI, the same call pattern), measured in the same passes.  When a cell has
  such peers (:func:`peers_of`, spread on both sides), it is compared with them *pass by
  pass* (:func:`paired_change`): in each pass, the log of its rate less the median of its
  peers' in that pass (measured next to it, within a few hundredths of a second, so the phase
  cancels: :func:`pytest_qcrypto.pytest_side.spread.pass_order`), averaged over
  the passes, current less baseline, with a band from resampling each side's passes
  (measured with ``benchmarks/gate_drift.py``'s kept rounds, 2026-12-04: same-code failures
  0, 2 and 0 of 20 by neighbour, 20% slowdowns caught in 18 to 20 of 20 at 16 and 256 B,
  against 16 and 15 of 20 quiet for the slow phases' ratio; with the peers next to each
  other, 09:24: 0 of 20 in each condition, caught in 18 to 20 of 20 at 16 B and 20 of 20 at
  256 B); when the passes do not line up
  (a cell dropped), the slow phases' log ratio less the median of the peers', with a band
  resampled over every side.  Beyond the threshold that way is a regression; slower by its own figures, but not relative to its peers, is *cannot tell*
  (the machine moved, or something they share did: an A/B run or counted instructions can
  tell).  A cell with no peer of its own algorithm takes every cell of the run's other
  algorithms as its peers (not its own at other sizes: the same code) and is judged against
  *the most slowed* of them: a machine state does not move
  other work alike (measured on a quiet machine, 2026-12-04: in whole-run slow states AES-GCM,
  which only one plugin of the benchmark's matrix has, read 30 to 35% slower at every size
  while sha256 read 7 to 9% slower at 32 KiB and 30 to 45% at 16 B; against the median of
  its size, that was a false alarm in 12 of 60 compares; against the most slowed cell, in
  none).  A cell without other algorithms in the run is judged by its own figures.  A change that slows every
  plugin of an algorithm alike is therefore never a regression here, only cannot tell: on a
  machine whose speed moves by a third between runs that is what the clock can say.

Measured on that machine (rounds of 5 cells in turn, 25 rounds 0.5 s apart a side,
baselines from a quiet run, currents from quiet, spinning-neighbour and memory-neighbour
runs): the log ratio of the 25th percentiles had a standard deviation of 2.7 to 3.0% and a
mean within 0.7% of zero in every condition.  Plain Python, never measures, no pytest.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import replace

from pytest_qcrypto.gate.drift import CANNOT_TELL, REGRESSION, DriftTest, on_the_cpu
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.results.model import Result

RULE = "slow phase of spread rounds"
#: The quantile of the round rates each side is judged by: the slow phase (see the module).
QUANTILE = 0.25
#: The fewest rounds a side needs for this rule (fewer: the gate's other rules judge).
MIN_ROUNDS = 9
#: Bootstrap draws for the noise band, and their seed.
RESAMPLES, SEED = 400, 23
#: How many bootstrap standard deviations the band spans.  One: the bootstrap of a quartile of
#: 25 rounds overstates its error about twice (measured on the development machine under load
#: 3 to 4: in one compare the 21 unchanged cells' slowdowns had a standard deviation of 4.7%,
#: while their bootstrap standard deviations averaged 10.6%), so one of them is about two real
#: ones.
BAND_SD = 1.0


def quantile(rates: Sequence[float], q: float = QUANTILE) -> float:
    """The ``q`` quantile of ``rates``, interpolated between the two nearest order
    statistics at ``q * (n - 1)`` (what ``statistics.quantiles(..., method="inclusive")``
    gives at its cut points); a single rate is its own."""
    data = sorted(rates)
    j, frac = divmod(q * (len(data) - 1), 1.0)
    k = int(j)
    return data[k] if k + 1 >= len(data) else data[k] + (data[k + 1] - data[k]) * frac


def _rates(work: float, seconds: Sequence[float]) -> list[float] | None:
    if len(seconds) < MIN_ROUNDS or min(seconds) <= 0:
        return None
    return [work / s for s in seconds]


def baseline_rates(r: Result) -> tuple[list[float], bool] | None:
    """The baseline's round rates (work per round over each round's CPU seconds, or wall
    seconds off the CPU) and whether they are CPU rates; None when its rounds were not
    spread."""
    if not getattr(r, "spread_s", 0) or not r.rounds_s:
        return None
    work = r.bytes_per_second * statistics.median(r.rounds_s)  # the work of one round
    by_cpu = on_the_cpu(r.rounds_s, r.cpu_s, r.cpu_wait_share)
    rates = _rates(work, r.cpu_s if by_cpu else r.rounds_s)
    return (rates, by_cpu) if rates is not None else None


def current_rates(m: Measurement, by_cpu: bool) -> list[float] | None:
    """``m``'s round rates by the same clock as its baseline's; None unless spread."""
    if not getattr(m, "spread_s", 0):
        return None
    seconds = m.cpu_s if by_cpu else m.rounds_s
    if by_cpu and len(m.cpu_s) != len(m.rounds_s):
        return None
    return _rates(m.operations * (m.size or 1), seconds)


def _log_ratio(base: Sequence[float], now: Sequence[float]) -> float:
    """log of the current quantile over the baseline's."""
    return math.log(quantile(now)) - math.log(quantile(base))


def band(base: Sequence[float], now: Sequence[float], seed: int = SEED) -> float:
    """The noise band of the slowdown (:func:`_log_ratio`), a fraction: each side's rates
    resampled, :data:`RESAMPLES` times."""
    rng = random.Random(seed)

    def draw(xs: Sequence[float]) -> list[float]:
        return [xs[rng.randrange(len(xs))] for _ in xs]
    logs = [_log_ratio(draw(base), draw(now)) for _ in range(RESAMPLES)]
    return math.expm1(BAND_SD * statistics.stdev(logs))


def applies(m: Measurement, baseline: Result) -> bool:
    """Whether both sides took their rounds spread (enough of them, with CPU times)."""
    base = baseline_rates(baseline)
    return base is not None and current_rates(m, base[1]) is not None


Pair = tuple[Measurement, Result]


def peers_of(m: Measurement, candidates: Sequence[Pair]) -> list[Pair]:
    """The pairs (measured now, baseline) of ``candidates`` that are ``m``'s peers: the same
    algorithm, buffer size and direction in another crypto plugin (by canonical name); when
    there is none, every cell of the run's other algorithms (any plugin, kind or size; not
    its own algorithm in its own plugin at other sizes, which runs the same code and would
    hide a change of it), of which :func:`spread_test` takes the most slowed."""
    mine = m.canonical_plugin or m.plugin
    alg = m.algorithm.lower()
    others = [(p, b) for p, b in candidates
              if not (p.algorithm.lower() == alg and (p.canonical_plugin or p.plugin) == mine)]
    return [(p, b) for p, b in others if p.size == m.size and p.algorithm.lower() == alg
            and p.direction == m.direction] or others


def _sides(m: Measurement, baseline: Result) -> tuple[list[float], list[float], bool] | None:
    base = baseline_rates(baseline)
    if base is None:
        return None
    now = current_rates(m, base[1])
    return (base[0], now, base[1]) if now is not None else None


def _shift(pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
           worst: bool = False) -> float:
    """The peers' move: the median of their log ratios (current over baseline), or with
    ``worst`` the lowest (the most slowed peer)."""
    logs = [_log_ratio(b, n) for b, n in pairs]
    return min(logs) if worst else statistics.median(logs)


def _adjusted_band(own: tuple[Sequence[float], Sequence[float]],
                   pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
                   seed: int = SEED, worst: bool = False) -> float:
    """:func:`band` of the cell's log ratio less its peers' move (:func:`_shift`), every side
    resampled."""
    rng = random.Random(seed)

    def draw(xs: Sequence[float]) -> list[float]:
        return [xs[rng.randrange(len(xs))] for _ in xs]
    logs = [_log_ratio(draw(own[0]), draw(own[1]))
            - _shift([(draw(b), draw(n)) for b, n in pairs], worst) for _ in range(RESAMPLES)]
    return math.expm1(BAND_SD * statistics.stdev(logs))


def _pass_logs(own: Sequence[float], peers: Sequence[Sequence[float]]) -> list[float] | None:
    """Pass by pass, the log of the cell's rate less the median log rate of its peers in that
    pass (a spread run takes round ``i`` of every cell in pass ``i``); None unless every peer
    has as many rounds as the cell."""
    if any(len(p) != len(own) for p in peers):
        return None
    return [math.log(x) - statistics.median(math.log(p[i]) for p in peers)
            for i, x in enumerate(own)]


def paired_change(own: tuple[Sequence[float], Sequence[float]],
                  pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
                  seed: int = SEED) -> tuple[float, float] | None:
    """The cell's log change against its peers taken pass by pass: the mean of the current
    run's :func:`_pass_logs` less the baseline's; and its band (a fraction), the passes of
    each side resampled :data:`RESAMPLES` times.  None when the passes do not line up."""
    base = _pass_logs(own[0], [b for b, _ in pairs])
    now = _pass_logs(own[1], [n for _, n in pairs])
    if base is None or now is None:
        return None
    rng = random.Random(seed)
    logs = [statistics.fmean(rng.choices(now, k=len(now)))
            - statistics.fmean(rng.choices(base, k=len(base))) for _ in range(RESAMPLES)]
    return (statistics.fmean(now) - statistics.fmean(base),
            math.expm1(BAND_SD * statistics.stdev(logs)))


def spread_test(m: Measurement, baseline: Result, threshold_pct: float,
                peers: Sequence[Pair] = ()) -> DriftTest | None:
    """The rule on ``m`` against ``baseline``; None unless both took spread rounds.

    ``peers`` (:func:`peers_of`): the same algorithm and size in the run's other crypto
    plugins, measured in the same passes, with their baselines.  With at least one that
    took spread rounds on both sides and by the same clock, the cell is judged against them
    (see the module): a regression is a slowdown beyond the threshold *relative to the
    peers' median move*, and a slowdown by the cell's own figures that the peers share is
    *cannot tell* (the machine moved, or what they share did).
    """
    sides = _sides(m, baseline)
    if sides is None:
        return None
    base, now, by_cpu = sides
    # The reference workload's times are saved with the rounds but not used here: measured,
    # its quartile moved by itself between runs (about 23% in a fresh user's same-code
    # compare, which a ratio to it read as a 19% slowdown of cells 4% faster by the clock, and
    # against a plugin on a fake clock, 42%), and on quiet data it took no error out (2.8%
    # against 2.9%) while it widened the band (4.5% against 3.5%).
    rule = RULE if by_cpu else f"{RULE}, by the clock"
    own = -math.expm1(_log_ratio(base, now))
    raw = DriftTest(own, band(base, now), (own,), threshold_pct, len(base), len(now),
                    rule=rule, against=f"in the slow phase ({QUANTILE:.0%} quantile of the "
                                       "round rates)")
    pairs, used = [], []
    for p, b in peers:
        got = _sides(p, b)
        if got is not None and got[2] == by_cpu:
            pairs.append(got[:2])
            used.append(p)
    if not pairs:
        return raw
    own = all(p.algorithm.lower() == m.algorithm.lower() and p.size == m.size for p in used)
    shift = _shift(pairs, worst=not own)
    rel = -math.expm1(_log_ratio(base, now) - shift)
    if own:
        who = f"{m.algorithm}'s other plugins at this size"
        moved = f"{', '.join(p.plugin for p in used)} moved {math.expm1(shift):+.1%}"
    else:  # the most slowed of the run's other cells
        worst = used[min(range(len(pairs)), key=lambda i: _log_ratio(*pairs[i]))]
        who = "the run's other cells"
        moved = (f"the most slowed, {worst.algorithm} {worst.plugin} {worst.size} B, moved "
                 f"{math.expm1(shift):+.1%}")
    paired = paired_change((base, now), pairs) if own else None
    if paired is not None:  # the same passes: the machine's phases cancel pass by pass
        rel, width, how = -math.expm1(paired[0]), paired[1], "pass by pass"
    else:
        width, how = _adjusted_band((base, now), pairs, worst=not own), "in the slow phase"
    adjusted = DriftTest(rel, width, (rel,), threshold_pct, len(base), len(now),
                         rule=f"{rule}, against its peers", against=f"against {who} ({moved}), {how}")
    if adjusted.status == REGRESSION:
        return adjusted
    if raw.status == REGRESSION:  # slower by its own figures, but so are its peers
        return replace(raw, forced=CANNOT_TELL, rule=adjusted.rule,
                       why=f"{who} moved too ({moved}): the machine, or what they share")
    return adjusted if adjusted.status == CANNOT_TELL else raw
