"""Where calibration starts: what the same algorithm and plugin showed at other sizes.

Every size of a cell used to calibrate from ``count = 1``.  A run measures the same
(plugin, algorithm, direction) at several buffer sizes, and the cost of one iteration is
close to a per-call cost plus a per-byte cost (:mod:`pytest_qcrypto.measure.cost_model`),
so the sizes measured first predict the others.  :class:`Calibrations` keeps the seconds
per iteration of every measurement it is told of (:meth:`Calibrations.learn`) and gives
the count a new size starts calibrating from (:meth:`Calibrations.start`): the count
predicted to take ``min_time`` x :data:`~pytest_qcrypto.measure.counts.MARGIN` (the rule of
:func:`pytest_qcrypto.measure.counts.count_for`, not a power of two), which the harness
(:func:`pytest_qcrypto.measure.harness.time_runner`, ``start``) times as its first run and
keeps as the first round when it reached ``min_time``.  A wrong prediction costs one run:
under ``min_time``, the harness predicts again from that run (or doubles on from it, when it
took under 1/16 of ``min_time``); twice ``min_time`` or more, it predicts the count again from
that run's rate.

The prediction of the seconds per iteration at ``size`` bytes:

- the size itself measured before: its figure;
- one other size ``s0`` measured (``t0`` seconds): ``t0 x max(1, size / s0)``, the most a
  per-call + per-byte cost can be (a plain rate above ``s0``, the same per-call cost below),
  so that the count errs low: a run under ``min_time`` costs less than one too long;
- two or more: the line (per-call + per-byte) through the two measured sizes nearest to
  ``size`` (one on each side when it lies between them); where that line gives no positive
  cost, the rule for one size from the nearest.

Measurements of several jobs or threads at once, and counted ones, teach nothing here: their
count is not one process's iterations.  Plain Python: no pytest.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from pytest_qcrypto.measure import counts


def key_of(plugin: str, algorithm: str, direction: str, checked: bool = False) -> Hashable:
    """What a prediction is kept under: the plugin as typed, the algorithm, the direction and
    whether each round trip is checked (``--qcrypto-check-roundtrip``: another loop)."""
    return (plugin, algorithm, str(direction), checked)


class Calibrations:
    """Seconds per iteration by cell (:func:`key_of`) and buffer size (bytes), as measured."""

    def __init__(self) -> None:
        self._seen: dict[Hashable, dict[int, float]] = {}

    def learn(self, m: Any, checked: bool = False) -> None:
        """Keep what :class:`~pytest_qcrypto.measure.harness.Measurement` ``m`` showed: its
        median round over its count.  Ignored for several jobs or threads, counted
        measurements and rounds that are not positive."""
        if m.jobs != 1 or m.threads != 1 or m.counted is not None or m.figure_only \
                or m.count < 1 or not m.rounds_s or min(m.rounds_s) <= 0:
            return
        key = key_of(m.plugin, m.algorithm, m.direction, checked)
        self._seen.setdefault(key, {})[m.size] = m.median_s / m.count

    def seconds(self, key: Hashable, size: int) -> float | None:
        """Predicted seconds per iteration at ``size`` bytes (see the module text); None when
        nothing of ``key`` was measured."""
        seen = self._seen.get(key)
        if not seen:
            return None
        if size in seen:
            return seen[size]
        nearest = sorted(seen, key=lambda s: (abs(s - size), s))
        s0 = nearest[0]
        bound = seen[s0] * max(1.0, size / s0) if s0 > 0 else seen[s0]
        if len(nearest) < 2:
            return bound
        below = [s for s in nearest if s < size]
        above = [s for s in nearest if s > size]
        a, b = (below[0], above[0]) if below and above else (nearest[0], nearest[1])
        per_byte = (seen[b] - seen[a]) / (b - a)
        per_call = seen[a] - a * per_byte
        line = per_call + size * per_byte
        return line if per_byte >= 0 and per_call >= 0 and line > 0 else bound

    def start(self, key: Hashable, size: int, min_time: float) -> int:
        """The count to start calibrating ``size`` bytes from: the count predicted to take
        ``min_time`` x :data:`~pytest_qcrypto.measure.counts.MARGIN` seconds
        (:func:`~pytest_qcrypto.measure.counts.count_for`), or 1 when nothing of ``key`` was
        measured."""
        seconds = self.seconds(key, size)
        return 1 if seconds is None else counts.count_for(seconds, min_time)
