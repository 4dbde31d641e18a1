"""The tries of one cell: measure, ask the regression gate, measure again while it asks.

:func:`retry` is the loop :func:`pytest_qcrypto.gate.verdicts.judge` decides on; the ``qcrypto``
fixture (:mod:`pytest_qcrypto.pytest_side.fixture`) runs it for every cell when the gate is on.
Plain Python: no pytest.
"""

from __future__ import annotations

from collections.abc import Callable

from pytest_qcrypto.gate import verdicts as gate
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.measure.machine import metered
from pytest_qcrypto.results.store import Result
from pytest_qcrypto.gate.rules import Rule

#: Runs one more try and returns it with the share of its time off the CPU that was a wait
#: for a CPU (:func:`pytest_qcrypto.measure.machine.metered`).
Meter = Callable[[Callable[[], Measurement]], "tuple[Measurement, float | None]"]


def retry(first: Measurement, again: Callable[[], Measurement] | None, c: gate.Criteria,
          first_wait: float | None = None, meter: Meter = metered) -> gate.Verdict:
    """The retry loop: ask :func:`gate.judge` about the tries so far, measure again (with
    ``meter(again)``) while it asks for another try; its verdict.  Without ``again``, the
    first try is the only one."""
    tries, waits = [first], [first_wait]
    while True:
        verdict = gate.judge(tries, waits, c, more=again is not None)
        if verdict is not None:
            return verdict
        assert again is not None
        m, w = meter(again)
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
