"""The ``instructions`` object of a counted result (``--qcrypto-measure=instructions``), read
as strictly as the rest of a results file: every field typed and in range, and the figure
recomputed from the two counts and totals it came from.

The object (written by :func:`pytest_qcrypto.results.model.counted_record`)::

    "instructions": {"per_operation": 12862.98, "per_unit": 50.246, "unit": "instructions/byte",
                     "method": "valgrind-cachegrind", "tool": "valgrind-3.19.0",
                     "counts": [2048, 4096], "totals": [697829284, 724172672],
                     "per_iteration": 1, "cpu_features": ["sse4_1", ...],
                     "host_cpu_features": [...], "hidden_cpu_features": ["sha_ni", ...]}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_qcrypto.results.check import _Checker, _is_int, _is_number

METHODS = ("valgrind-cachegrind", "perf_event")
UNITS = ("instructions/byte", "instructions/op")
#: Relative difference allowed between a stored figure and the one recomputed from its counts.
ROUNDING = 1e-9


def _flags(v: object) -> bool:
    return v is None or (isinstance(v, list) and all(isinstance(x, str) for x in v))


def _pair(v: object) -> bool:
    return isinstance(v, list) and len(v) == 2 and all(_is_int(x) and x >= 0 for x in v) \
        and v[0] < v[1]


def parse(r: Mapping[str, Any], where: str, size: int, check: _Checker) -> dict[str, Any] | None:
    """The checked ``instructions`` object of result ``r`` (``where``: ``results[3].``), or
    None when it has none (a timed result)."""
    raw = check.get(r, "instructions", where, "an object", lambda v: isinstance(v, dict), None)
    if raw is None:
        return None
    w, g = f"{where}instructions.", check.get
    positive = (lambda v: _is_number(v) and v > 0)
    out = {
        "per_operation": float(g(raw, "per_operation", w, "a positive number", positive)),
        "per_unit": float(g(raw, "per_unit", w, "a positive number", positive)),
        "unit": g(raw, "unit", w, " or ".join(UNITS), lambda v: v in UNITS),
        "method": g(raw, "method", w, " or ".join(METHODS), lambda v: v in METHODS),
        "tool": g(raw, "tool", w, "a string", lambda v: isinstance(v, str), ""),
        "counts": g(raw, "counts", w, "two growing whole numbers of iterations", _pair),
        "totals": g(raw, "totals", w, "two growing whole numbers of instructions", _pair),
        "per_iteration": g(raw, "per_iteration", w, "1 or 2", lambda v: v in (1, 2), 1),
        "cpu_features": g(raw, "cpu_features", w, "a list of strings or null", _flags, None),
        "host_cpu_features": g(raw, "host_cpu_features", w, "a list of strings or null",
                               _flags, None),
        "hidden_cpu_features": g(raw, "hidden_cpu_features", w, "a list of strings", _flags,
                                 []) or [],
    }
    want_unit = UNITS[0] if size > 0 else UNITS[1]
    if out["unit"] != want_unit:
        raise check.fail(f"{w}unit must be {want_unit} for a result of size {size}")
    (n1, n2), (t1, t2) = out["counts"], out["totals"]
    recomputed = (t2 - t1) / ((n2 - n1) * out["per_iteration"])
    for name, stored, expected in (("per_operation", out["per_operation"], recomputed),
                                   ("per_unit", out["per_unit"], recomputed / (size or 1))):
        if abs(stored - expected) > ROUNDING * expected:
            raise check.fail(f"{w}{name} is {stored:.6g}, but its counts and totals give "
                             f"{expected:.6g}")
    return out
