"""The tries of one cell: measure, ask the regression gate, measure again while it asks.

:func:`retry` is the loop :func:`pytest_qcrypto.gate.verdicts.judge` decides on; the ``qcrypto``
fixture (:mod:`pytest_qcrypto.pytest_side.fixture`) runs it for every cell when the gate is on.
Plain Python: no pytest.
"""

from __future__ import annotations

from collections.abc import Callable

from pytest_qcrypto.gate import drift as gate_drift, verdicts as gate
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.measure.machine import metered
from pytest_qcrypto.measure.reference import spaced
from pytest_qcrypto.results.store import Result
from pytest_qcrypto.gate.rules import Rule

#: Runs one more try and returns it with the share of its time off the CPU that was a wait
#: for a CPU (:func:`pytest_qcrypto.measure.machine.metered`).
Meter = Callable[[Callable[[], Measurement]], "tuple[Measurement, float | None]"]


def retry(first: Measurement, again: Callable[[], Measurement] | None, c: gate.Criteria,
          first_wait: float | None = None, meter: Meter = metered) -> gate.Verdict:
    """The retry loop: ask :func:`gate.judge` about the tries so far, measure again (with
    ``meter(again)``, after a pause of ``c.pause_s`` seconds so that the try samples another
    phase of the machine's drift, when the baseline has reference times) while it asks for
    another try; its verdict.  Without
    ``again``, the first try is the only one."""
    tries, waits = [first], [first_wait]
    # the pause serves the rule against the reference workload: other cells retry at once
    pause = c.pause_s if c.judged and c.baseline and gate_drift.applies(c.baseline) else 0.0
    later = spaced(again, pause) if again is not None else None
    while True:
        verdict = gate.judge(tries, waits, c, more=again is not None)
        if verdict is not None:
            return verdict
        assert later is not None
        m, w = meter(later)
        tries.append(m)
        waits.append(w)


def judge_tries(first: Measurement, again: Callable[[], Measurement] | None, confirm: int,
                baseline: Result | None, threshold: Rule | None, floor: Rule | None,
                not_judged: str = "", first_wait: float | None = None,
                meter: Meter = metered) -> gate.Verdict:
    """Judge ``first``, measuring again (at most ``confirm`` more tries) while it fails:
    :func:`retry` with the :class:`gate.Criteria` of these arguments."""
    return retry(first, again, gate.Criteria(confirm, baseline, threshold, floor, not_judged),
                 first_wait, meter)
