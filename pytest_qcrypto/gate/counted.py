"""The regression gate for counted instructions (``--qcrypto-measure=instructions``).

A count does not move with the machine (:mod:`pytest_qcrypto.measure.counting`), so there is
no noise to test against and nothing to try again: a cell fails when one operation takes
more than the threshold more instructions than the baseline's,
``(now - baseline) / baseline > threshold``.  The threshold is the gate's own,
``--qcrypto-instructions-threshold`` (ini ``qcrypto_instructions_threshold``, default
:data:`DEFAULT_THRESHOLD` %); the per-cell ``qcrypto_thresholds`` and the floors (KiB/s) are
for times and do not apply.  A baseline that was timed is never compared with a count, nor
a count with a timed baseline (:func:`mismatch`).

Plain Python that never measures and never imports pytest.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pytest_qcrypto.gate import verdicts as gate
from pytest_qcrypto.gate.rules import Rule
from pytest_qcrypto.gate.text import describe
from pytest_qcrypto.measure.harness import Measurement

#: Percent more instructions per operation than the baseline that fails a cell.
DEFAULT_THRESHOLD = 1.0


def threshold_rule(value: float | None = None, source: str = "default") -> Rule:
    """The instruction threshold as a gate :class:`Rule` (percent)."""
    return Rule(None, None, None, DEFAULT_THRESHOLD if value is None else value, source)


def criteria(c: gate.Criteria, threshold: Rule) -> gate.Criteria:
    """``c`` for a counted cell: ``threshold`` instead of the time threshold, no floor (a
    floor is KiB/s), no further tries (a count does not change on a retry)."""
    return replace(c, threshold=threshold if c.threshold is not None else None, floor=None,
                   confirm=0)


def kind_of(results: Any) -> str:
    """``instructions`` when every result of a results file (or list) was counted, ``time``
    when none was, ``mixed`` otherwise."""
    rows = getattr(results, "results", results)
    counted = {getattr(r, "instructions", None) is not None for r in rows}
    return "mixed" if len(counted) > 1 else "instructions" if counted == {True} else "time"


def mismatch(base_kind: str, current_kind: str, base_name: str = "the baseline",
             current: str = "the current results were") -> str:
    """Why a run measured as ``current_kind`` cannot be judged against ``base_name`` of
    ``base_kind`` (empty: it can)."""
    if current_kind in (base_kind,):
        return ""
    words = {"time": "timed (--qcrypto-measure=time)",
             "instructions": "counted in instructions (--qcrypto-measure=instructions)",
             "mixed": "partly timed, partly counted in instructions"}
    return (f"cannot compare instruction counts with times: {base_name} was "
            f"{words[base_kind]}, {current} {words[current_kind]}; measure "
            "both the same way")


def more_instructions(v: gate.Verdict) -> float | None:
    """Percent more instructions an operation than the baseline's, from the two counts
    (None: ``v`` is not a counted verdict against a counted baseline)."""
    m, base = getattr(v, "measurement", None), getattr(v, "baseline", None)
    if getattr(m, "counted", None) is None or base is None or not getattr(base, "instructions",
                                                                            None):
        return None
    then = float(base.instructions["per_operation"])
    return (m.counted.per_operation - then) / then * 100


def heading(threshold: Rule) -> str:
    """What a counted run is judged by, for the gate's heading line."""
    return (f"instruction threshold {threshold.value:g}% more instructions an operation "
            f"({threshold.source}); counted, so no confirmation tries")


def judge(m: Measurement, c: gate.Criteria) -> gate.Verdict:
    """The verdict on counted measurement ``m`` against ``c`` (see :func:`criteria`)."""
    c = criteria(c, c.threshold) if c.threshold is not None else replace(c, floor=None)
    base = c.baseline
    base_rate = base.rate if base is not None else 0.0
    v = gate.Verdict(m, [m], [None], m.rate, base, base_rate, c.threshold, None,
                     not_judged=c.not_judged, tries_text="counted once")
    if base is None:
        v.status = gate.NEW
        return v
    if c.not_judged:
        v.status = gate.NOT_JUDGED
        return v
    if base.instructions is None:
        v.status = gate.NOT_JUDGED
        v.not_judged = mismatch("time", "instructions")
        v.failures.append(f"{describe(m)}: {v.not_judged}")
        return v
    now, then = m.counted.per_operation, float(base.instructions["per_operation"])
    more = (now - then) / then * 100
    if c.threshold is not None and more > c.threshold.value:
        v.status = gate.REGRESSION
        unit = "instructions/byte" if m.size else "instructions/op"
        v.failures.append(
            f"regression: {describe(m)}: {m.counted.per_unit(m.size):.4f} {unit} now "
            f"({now:.0f} an operation), baseline {then / (m.size or 1):.4f} "
            f"({then:.0f}), {more:+.2f}% instructions, threshold {c.threshold.value:g}% "
            f"({c.threshold.source}); counted by {m.counted.method}, so neither noise nor "
            "a retry applies")
    return v
