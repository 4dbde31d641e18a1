"""The formats continuous-benchmarking services read: two registered layouts.

``--qcrypto-format=bencher``: the Bencher Metric Format (BMF, bencher.dev/docs/reference/
bencher-metric-format): one JSON object whose keys are benchmark names, each an object of
measures, each measure an object with a ``value`` and, from the rounds, a ``lower_value``
and an ``upper_value`` (its slowest and fastest round's figure).  A measure per unit
(:data:`BENCHER_MEASURES`): ``kib-per-second`` for the cells with a buffer size (KiB/s,
1 KiB = 1024 bytes), Bencher's own ``throughput`` (operations per second) for those without;
counted instructions (``--qcrypto-measure=instructions``) as ``instructions-per-byte`` or
``instructions-per-operation``, without bounds.

``--qcrypto-format=github-action-benchmark``: the JSON list that github-action-benchmark's
``customBiggerIsBetter`` tool reads (its README, "Examples" of custom benchmarks): one object
per cell with ``name``, ``unit``, ``value``, and the optional ``range`` (a string: half the
distance between the slowest and fastest round's figure, ``"± 12.34"``) and ``extra`` (a
string shown in the chart's tooltip: rounds, operations, the median round's seconds).  Bigger
is better for every entry: KiB/s, and ops/s for the cells without a buffer size; counted
cells (fewer is better) are left out of it.

A benchmark's name is its cell, ``sha256 openssl 4096 B digest`` or ``ed25519 openssl
sign`` (a joined report's row label, ``MACHINE/PLUGIN``, in place of the plugin).  Skipped
and failed cells have no figure and are left out.  Both fix the unit (KiB/s, ops/s): a
``--qcrypto-unit`` beside them is a usage error.  Nothing here imports pytest.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator
from typing import Any

from pytest_qcrypto.algorithms.kinds import plural
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.output.layouts import Figures, layout
from pytest_qcrypto.output.tables import FAILED, UNITS, Table, unit_of

#: Bencher's measure (slug) of each unit a cell can be in.
BENCHER_MEASURES = {"KiB/s": "kib-per-second", "ops/s": "throughput",
                    "instructions/byte": "instructions-per-byte",
                    "instructions/op": "instructions-per-operation"}
#: Why these formats fix the unit (said when --qcrypto-unit is given too).
FIXED_UNIT = ("a continuous-benchmarking series keeps one unit: KiB/s, and ops/s for the "
              "cells without a buffer size")


def cell_name(table: Table, plugin: str, column: Any) -> str:
    """``sha256 openssl 4096 B digest``, or ``ed25519 openssl sign`` (size-less)."""
    if table.sized:
        return f"{table.algorithm} {plugin} {column} B {table.direction}"
    return f"{table.algorithm} {plugin} {column}"


def cells(figures: Figures) -> Iterator[tuple[str, str, Measurement]]:
    """``(name, unit, measurement)`` of every cell with a figure, in table order."""
    for t in figures.tables:
        unit = unit_of(t, figures.unit)
        for p in t.plugins:
            for column in t.columns:
                cell = t.cells.get((p, column))
                if cell is None or cell.measurement is None or cell.status == FAILED:
                    continue
                yield cell_name(t, p, column), unit, cell.measurement


def bounds(m: Measurement, unit: str) -> tuple[float, float] | None:
    """The figures of the slowest and fastest round in ``unit`` (None: one figure only, a
    counted cell, or a file saved without rounds)."""
    rounds = [r for r in m.rounds_s if r > 0]
    if m.counted is not None or m.figure_only or not rounds:
        return None
    value = UNITS[unit].of(m)
    median = statistics.median(m.rounds_s)
    per_round = [value * median / r for r in rounds]
    return min(per_round), max(per_round)


@layout("bencher", "(Bencher Metric Format JSON: a measure per unit, value, lower and upper "
        "values from the rounds; no --qcrypto-unit with it)", unit="KiB/s", unit_why=FIXED_UNIT)
def bencher_layout(figures: Figures) -> list[str]:
    """The cells as one BMF JSON object (module doc)."""
    doc: dict[str, dict[str, dict[str, float]]] = {}
    for name, unit, m in cells(figures):
        metric = {"value": UNITS[unit].of(m)}
        found = bounds(m, unit)
        if found is not None:
            metric["lower_value"], metric["upper_value"] = found
        doc.setdefault(name, {})[BENCHER_MEASURES[unit]] = metric
    return json.dumps(doc, indent=2).splitlines()


@layout("github-action-benchmark", "(customBiggerIsBetter JSON: name, unit, value, range, "
        "extra; no --qcrypto-unit with it)", unit="KiB/s", unit_why=FIXED_UNIT)
def github_action_benchmark_layout(figures: Figures) -> list[str]:
    """The timed cells as github-action-benchmark's custom JSON list (module doc)."""
    entries = []
    for name, unit, m in cells(figures):
        if not UNITS[unit].faster_is_higher:  # counted instructions: fewer is better
            continue
        entry: dict[str, Any] = {"name": name, "unit": unit, "value": UNITS[unit].of(m)}
        found = bounds(m, unit)
        if found is not None:
            entry["range"] = f"± {(found[1] - found[0]) / 2:.2f}"
            entry["extra"] = (f"{plural(len(m.rounds_s), 'round')} of "
                              f"{plural(m.count, 'iteration')}; median round {m.median_s:.6f} s; "
                              f"slowest round {found[0]:.2f}, fastest {found[1]:.2f} {unit}")
        entries.append(entry)
    return json.dumps(entries, indent=2).splitlines()
