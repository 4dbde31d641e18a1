"""The A/B gate's rule for interleaved rounds (issue 23): the paired ratios' geometric mean
and its interval decide; no confirmation tries.  Made-up ratios, never timed."""

import pytest

from pytest_qcrypto.gate import paired, verdicts as gate
from pytest_qcrypto.gate.verdicts import Criteria, Rule
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.results.store import Result

TEN = Rule(None, None, None, 10.0, "--qcrypto-threshold")


@pytest.mark.parametrize("point, low, high, status", [
    (0.80, 0.76, 0.84, gate.REGRESSION),   # the whole interval beyond 10% slower
    (0.97, 0.90, 1.05, gate.OK),           # within the threshold
    (0.85, 0.70, 1.03, gate.CANNOT_TELL),  # beyond it, but the band (+-21%) is wider
    (0.88, 0.85, 0.91, gate.NOISE),        # beyond it, not by the band (+-3.5%), a narrow band
])
def test_the_paired_interval_decides(point, low, high, status):
    rounds = (0.01,) * 7
    m = Measurement("sha256", "hashlib@new", 256, "digest", 1000, rounds, cpu_s=rounds,
                    canonical_plugin="hashlib@new")
    base = Result.from_measurement(m)
    p = paired.Paired(point, low, high, 7, "old")
    v = gate.judge([m], [None], Criteria(2, base, TEN, paired=p), more=True)
    assert v is not None and len(v.tries) == 1  # no confirmation try asked for
    assert v.status == status
    assert v.drift.rule == "paired rounds"
    assert v.drift.slowdown == pytest.approx(1 - point)
    assert v.drift.band == pytest.approx((high / low) ** 0.5 - 1)
