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
from typing import Any

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
    timeout_given: bool = False

    def settings(self) -> dict[str, Any]:
        """How the run measured, for the results file's ``settings``: nothing for a timed
        run (its min_time and rounds say it), else ``measure``, ``counted_by`` and the
        instruction threshold."""
        if self.measure == "time":
            return {}
        return {"measure": self.measure, "counted_by": self.method,
                "instructions_threshold_pct": self.threshold.value}

    def limit(self, timeout: float | None) -> float | None:
        """The time limit of a measurement: ``timeout`` (``--qcrypto-timeout``, or its default
        for a timed run); when counting and no ``--qcrypto-timeout`` was given, None: the
        counting process's own limit (:data:`counting.DEFAULT_CHILD_TIMEOUT`), since a cell
        under valgrind takes from 10 s to minutes on a busy machine."""
        return timeout if self.measure == "time" or self.timeout_given else None


def read(config: pytest.Config, jobs: int, threads: int, gate_options: Any = None) -> Counting:
    """The checked ``--qcrypto-measure`` (ini ``qcrypto_measure``) and
    ``--qcrypto-instructions-threshold``; ``SettingsError`` for a usage error, also for a
    ``--qcrypto-compare`` baseline measured the other way (``gate_options``: the run's
    :class:`~pytest_qcrypto.pytest_side.gate.GateOptions`, whose rules get the threshold)."""
    value, where = options.given(config, "qcrypto_measure")
    measure = counting.parse_measure(value, where) if value is not None else "time"
    value, where = options.given(config, "qcrypto_instructions_threshold")
    rule = counted_gate.threshold_rule() if value is None else \
        counted_gate.threshold_rule(gate.parse_percent(value, where), where)
    if gate_options is not None:
        gate_options.rules.instructions = rule  # the gate's heading names it
        base = getattr(gate_options, "baseline", None)
        if base is not None:
            why = counted_gate.mismatch(counted_gate.kind_of(base), measure,
                                        " and ".join(config.getoption("qcrypto_compare")),
                                        "this run is")
            if why:
                raise SettingsError(f"--qcrypto-compare: {why}")
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
    config.add_cleanup(counting.close)  # the run's counting process ends with the run
    return Counting(measure, rule, method,
                    options.given(config, "qcrypto_timeout")[0] is not None)


def judged_by_count(criteria: Callable[[Measurement], gate.Criteria] | None,
                    setting: Counting) -> Callable[[Measurement], gate.Criteria] | None:
    """``criteria`` with a counted measurement given the instruction threshold."""
    if criteria is None or setting.measure == "time":
        return criteria
    judge = criteria
    return lambda m: counted_gate.criteria(judge(m), setting.threshold) \
        if m.counted is not None else judge(m)
