"""``--qcrypto-interleave``: rounds of several targets taken in turn, and their paired ratio.

For one cell, each target first calibrates its count alone (qcrypto's doubling loop,
:mod:`pytest_qcrypto.measure.harness`; that run is not kept), then the timed rounds alternate
between the targets, the order reversed every other round (A B, B A, A B ...), each
target at its own fixed count: drift in the machine (a neighbour's load, clock and
temperature changes) falls on every target alike.  Round ``r`` of each target forms a
pair with round ``r`` of the reference target.

The ratio shown (:class:`Ratio`) is the geometric mean of the paired ratios of
throughput (target over reference, each round's bytes per second, or operations per
second in a size-less cell) with a 95 %
confidence interval from Student's t on their logarithms: ``exp(mean ± t * sd /
sqrt(n))``, ``t`` the 0.975 quantile with ``n - 1`` degrees of freedom
(:data:`T975`, from the NIST/SEMATECH e-Handbook of Statistical Methods, table
1.3.6.7.2).  One round gives a ratio without an interval.  No pytest here.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from pytest_qcrypto.measure import limits
from pytest_qcrypto.measure.harness import Measurement

T = TypeVar("T")

#: The 0.975 quantile of Student's t by degrees of freedom (1-30, then 40, 60, 120).
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131,
        16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074,
        23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045,
        30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` >= 1 degrees of freedom; between
    tabulated values, that of the next smaller one (a slightly wider interval); 1.96 past
    120."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, not {df}")
    if df > 120:
        return 1.960
    return T975[max(k for k in T975 if k <= df)]


def round_order(names: Sequence[T], r: int) -> list[T]:
    """The order of round ``r`` (from 0): as given in even rounds, reversed in odd ones."""
    return list(names) if r % 2 == 0 else list(reversed(names))


def round_rates(m: Measurement) -> list[float]:
    """Each round's work per second in the cell's unit (:attr:`Measurement.rate`): bytes, or
    operations for a size-less cell (size 0: signatures, KEMs, KDFs)."""
    return [m.operations * (m.size or 1) / s if s > 0 else 0.0 for s in m.rounds_s]


@dataclass(frozen=True)
class Ratio:
    """Throughput of a target over the reference's: geometric mean of ``rounds`` paired
    rounds, and the 95 % t-interval (``low``, ``high``; None for one round)."""

    point: float
    low: float | None
    high: float | None
    rounds: int

    def text(self) -> str:
        """``0.93 [0.91, 0.95]``."""
        if self.low is None or self.high is None:
            return f"{self.point:.2f} [1 round]"
        return f"{self.point:.2f} [{self.low:.2f}, {self.high:.2f}]"


def paired_ratio(reference: Measurement, other: Measurement) -> Ratio:
    """``other`` over ``reference`` from their paired rounds (the first ``n`` of each, ``n``
    the fewer rounds), in the cell's unit of work (:func:`round_rates`); ``ValueError``
    saying why when either has no round, or a round with no work per second (a zero
    figure: no ratio)."""
    ref, oth = round_rates(reference), round_rates(other)
    n = min(len(ref), len(oth))
    if n == 0:
        raise ValueError("a paired ratio needs at least one round of each")
    for m, rates in ((reference, ref), (other, oth)):
        if not all(r > 0 for r in rates[:n]):
            raise ValueError(f"{m.plugin} has a round with a zero figure "
                             f"({m.count} operations of {m.size} bytes)")
    logs = [math.log(b / a) for a, b in zip(ref[:n], oth[:n])]
    mean = statistics.fmean(logs)
    if n == 1:
        return Ratio(math.exp(mean), None, None, 1)
    half = t975(n - 1) * statistics.stdev(logs) / math.sqrt(n)
    return Ratio(math.exp(mean), math.exp(mean - half), math.exp(mean + half), n)


def combined(rounds: Sequence[Measurement]) -> Measurement:
    """One measurement of single-round measurements at one count: every round kept."""
    first = rounds[0]
    return replace(first, rounds_s=tuple(s for m in rounds for s in m.rounds_s),
                   cpu_s=tuple(s for m in rounds for s in m.cpu_s),
                   workers=(), calibration_note="; ".join(
                       dict.fromkeys(m.calibration_note for m in rounds if m.calibration_note)))


#: Measures one round of a target: given a fixed count (None: calibrate), its Measurement.
OneRound = Callable[[int | None], Measurement]


def interleave(members: dict[str, OneRound], rounds: int, count: int | None = None
               ) -> dict[str, Measurement | BaseException]:
    """Each member's measurement of ``rounds`` interleaved rounds (see the module), or what
    it raised (an ``Exception``, or a ``limits.MeasurementTimeout``); a member that fails
    leaves the rest of the rounds to the others.  ``count``: every member's fixed count
    instead of calibrating."""
    out: dict[str, Measurement | BaseException] = {}
    counts: dict[str, int] = {}
    done: dict[str, list[Measurement]] = {}
    for name, one in members.items():
        try:
            counts[name] = count if count is not None else one(None).count
            done[name] = []
        except (Exception, limits.MeasurementTimeout) as exc:  # not Ctrl-C: the run stops
            out[name] = exc
    for r in range(rounds):
        for name in round_order([n for n in members if n in done], r):
            try:
                done[name].append(members[name](counts[name]))
            except (Exception, limits.MeasurementTimeout) as exc:
                out[name] = exc
                del done[name]
    for name, parts in done.items():
        out[name] = combined(parts)
    return {name: out[name] for name in members}
