"""The regression gate's words for cells and figures: ``sha256 openssl 4096 B digest``,
``123.45`` (KiB/s) or ``5000.00`` (ops/s), ``-12.4%``.  Nothing here imports pytest."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from pytest_qcrypto.measure.harness import KIB, Measurement


def fastest_round_bps(m: Measurement) -> float:
    """The :attr:`~Measurement.rate` of the fastest round of ``m`` (bytes per second, every
    operation of a round trip; operations per second for a size-less cell)."""
    return m.operations * (m.size or 1) / min(m.rounds_s)


def kib(rate: float, unit: str = "KiB/s") -> str:
    """A rate (bytes per second) as KiB/s with two decimals; ``unit`` ``ops/s``: operations
    per second as they are."""
    return f"{rate / KIB:.2f}" if unit == "KiB/s" else f"{rate:.2f}"


def pct(fraction: float | None) -> str:
    """``-0.124`` -> ``-12.4%``."""
    return "n/a" if fraction is None else f"{fraction * 100:+.1f}%"


def describe(m: Measurement) -> str:
    """``sha256 openssl 4096 B digest``, ``ed25519 openssl sign``: a cell in words."""
    return f"{m.algorithm} {m.plugin} {m.size} B {m.direction}" if m.sized else \
        f"{m.algorithm} {m.plugin} {m.direction}"


def which_try(ranks: Sequence[float], kept: int) -> str:
    """What the kept try is among the tries ranked by ``ranks``: ``fastest try`` (also of
    one), ``median try``, else ``try N``."""
    if ranks[kept] >= max(ranks):
        return "fastest try"
    if ranks[kept] in (statistics.median_low(ranks), statistics.median_high(ranks)):
        return "median try"
    return f"try {kept + 1}"
