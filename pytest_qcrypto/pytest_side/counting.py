"""The pytest side of ``--qcrypto-measure=instructions`` (:mod:`pytest_qcrypto.measure.counting`).

:func:`read` checks the option before any test runs: counting needs valgrind or a PMU, and
one process doing the work (not ``--qcrypto-jobs``, ``--qcrypto-threads`` or
``--qcrypto-target``); each problem is a usage error (exit 4) that says why.
:func:`judged_by_count` gives a counted cell the instruction gate's criteria
(:mod:`pytest_qcrypto.gate.counted`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from pytest_qcrypto.algorithms.settings import SettingsError
from pytest_qcrypto.gate import counted as counted_gate, verdicts as gate
from pytest_qcrypto.gate.rules import Rule
from pytest_qcrypto.measure import counting
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.pytest_side import options


@dataclass(frozen=True)
class Counting:
    """The run's ``--qcrypto-measure`` and its instruction threshold (percent)."""

    measure: str = "time"
    threshold: Rule = counted_gate.threshold_rule()
    method: str = ""


def read(config: pytest.Config, jobs: int, threads: int) -> Counting:
    """The checked ``--qcrypto-measure`` (ini ``qcrypto_measure``) and
    ``--qcrypto-instructions-threshold``; ``SettingsError`` for a usage error."""
    value, where = options.given(config, "qcrypto_measure")
    measure = counting.parse_measure(value, where) if value is not None else "time"
    value, where = options.given(config, "qcrypto_instructions_threshold")
    rule = counted_gate.threshold_rule() if value is None else \
        counted_gate.threshold_rule(gate.parse_percent(value, where), where)
    if measure == "time":
        return Counting(measure, rule)
    if config.getoption("qcrypto_target", None):
        raise SettingsError("--qcrypto-measure=instructions: not with --qcrypto-target: a "
                            "target's work runs in another environment, out of reach of this "
                            "process's count")
    why = counting.refusal("", jobs, threads)
    if why:
        raise SettingsError(why)
    try:
        method = counting.method()
    except counting.CountingError as exc:
        raise SettingsError(f"--qcrypto-measure=instructions: {exc}") from None
    return Counting(measure, rule, method)


def judged_by_count(criteria: Callable[[Measurement], gate.Criteria] | None,
                    setting: Counting) -> Callable[[Measurement], gate.Criteria] | None:
    """``criteria`` with a counted measurement given the instruction threshold."""
    if criteria is None or setting.measure == "time":
        return criteria
    judge = criteria
    return lambda m: counted_gate.criteria(judge(m), setting.threshold) \
        if m.counted is not None else judge(m)
