"""The A/B gate's rule for interleaved rounds: the new side against the old, round by round.

With ``--qcrypto-interleave`` and ``--qcrypto-compare-target=NAME``, every cell is measured
on each target in one run, the targets' rounds taken in turn (:mod:`pytest_qcrypto.targets.pairs`),
so round ``r`` of the new side and round ``r`` of NAME's were measured moments apart, in the
same state of the machine.  Their ratio (the new throughput over the old) is what changed;
the machine's drift falls on both.  The rule judges the geometric mean of those paired
ratios and its 95% t-interval (computed by :func:`pytest_qcrypto.targets.pairs.paired_ratio`,
given here as :class:`Paired`), not the two sides' medians:

* slowdown = ``1 - ratio``; the noise band is the interval's half-width in log terms,
  ``exp((log high - log low) / 2) - 1``;
* verdicts as :class:`~pytest_qcrypto.gate.drift.DriftTest` gives them: at most the threshold
  slower: pass; beyond it by more than the band (the whole interval beyond it): regression;
  beyond it, not by the band, with a band wider than the threshold: cannot tell; else within
  noise.  No confirmation tries: the pairs are the confirmation.

Why (measured with ``benchmarks/ab_gate.py`` on the project's shared 2-CPU VM): the paired
ratios of unchanged code stayed within a few percent of 1 while the two sides' medians, taken
back to back, moved apart by more than the threshold.  Plain Python, no pytest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pytest_qcrypto.gate.drift import DriftTest

RULE = "paired rounds"


@dataclass(frozen=True)
class Paired:
    """The new side over the reference target, from ``rounds`` paired rounds: the geometric
    mean ``point`` and its 95% interval (``low``, ``high``), all ratios of throughput."""

    point: float
    low: float
    high: float
    rounds: int
    reference: str  # the reference target's name (``old``)


def paired_test(p: Paired, threshold_pct: float) -> DriftTest:
    """The rule's figures and verdict for one cell (see the module)."""
    band = math.expm1((math.log(p.high) - math.log(p.low)) / 2)
    slow = 1 - p.point
    return DriftTest(slow, band, (slow,), threshold_pct, p.rounds, p.rounds, rule=RULE,
                     against=f"against @{p.reference}'s rounds paired with them (geometric "
                             "mean of the paired ratios)")
