"""The regression gate's words for cells and figures: ``sha256 openssl 4096 B digest``,
``123.45`` (KiB/s) or ``5000.00`` (ops/s), ``-12.4%``.  Nothing here imports pytest."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from pytest_qcrypto.measure.harness import KIB, Measurement
from pytest_qcrypto.results import store as results
from pytest_qcrypto.results.store import Result

#: A try whose median round loses more than this share to its wait for a CPU says so in
#: messages, with its figure without the wait.
BUSY_SHARE = 0.05


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


def without_wait(m: Measurement, share: float | None) -> tuple[float, float]:
    """Bytes per second of the median and of the fastest round, the wait for a CPU taken out.

    ``share`` is the part of the try's time off the CPU that was a wait for a
    CPU (:class:`WaitMeter`).  Each round loses that share of its wall time
    beyond its CPU time; the rest (a plugin sleeping, a device working) stays.
    Without ``share`` or CPU times the figures are the measured ones.
    """
    rounds = results.without_wait(m.rounds_s, m.cpu_s, share)
    if rounds is None:
        return m.rate, fastest_round_bps(m)
    work = m.operations * (m.size or 1)
    return work / statistics.median(rounds), work / min(rounds)


def baseline_figures(r: Result) -> tuple[float, float]:
    """A baseline's judged figure and its slowest round's, its own wait for a CPU taken out.

    Both are scaled from the saved ``bytes_per_second`` (the figure of record);
    :func:`results.load` refuses a file in which they overflow.
    """
    return r.figures_without_wait()


def _waited(clock: float, judged: float) -> str:
    """The share of a figure's time by the clock that was a wait for a CPU, in words
    (``6%``, ``less than 1%``); empty when the two figures print alike in KiB/s."""
    if kib(clock) == kib(judged):
        return ""
    lost = 1 - clock / judged
    return f"{lost:.0%}" if lost >= 0.01 else "less than 1%"


def _correction_text(now: str, then: str) -> str:
    """How the judged change differs from the figures quoted (both by the clock): in words,
    so that each cell has one figure, the one the tables and ``qcrypto report`` show."""
    if now and then:
        return (f" without the time each waited for a CPU ({now} of it now, {then} of it in "
                "the baseline)")
    if then:
        return f" without the time the baseline waited for a CPU ({then} of it)"
    if now:
        return f" without the time this try waited for a CPU ({now} of it)"
    return ""


def _tries_text(tries: Sequence[Measurement], waits: Sequence[float | None], best: int,
                judged: bool = True) -> str:
    """``tries: A, B, C KiB/s (best B)``: each try by the clock, and which one counts.

    Against a baseline (``judged``) the best try is the fastest once its wait
    for a CPU is taken out (:func:`without_wait`), and "best" says so when that
    figure is not the listed one (the table shows the listed one).  A try that
    lost more than :data:`BUSY_SHARE` to that wait says so.
    """
    parts, u = [], tries[best].unit
    for m, w in zip(tries, waits):
        text = kib(m.rate, u)
        without = without_wait(m, w)[0]
        lost = 1 - m.rate / without
        if lost > BUSY_SHARE:
            text += f" (waited {lost:.0%} of it for a CPU: {kib(without, u)} without)"
        parts.append(text)
    kept = tries[best]
    clock, figure = kept.rate, without_wait(kept, waits[best])[0]
    ranks = [without_wait(t, w)[0] if judged else t.rate for t, w in zip(tries, waits)]
    which = f"{which_try(ranks, best)} {kib(clock, u)}"
    if judged and kib(clock, u) != kib(figure, u):
        which = (f"{which_try(ranks, best)} without its wait for a CPU: {kib(clock, u)} by the "
                 f"clock, judged as {kib(figure, u)}")
    return f"tries: {', '.join(parts)} {u} ({which})"


def which_try(ranks: Sequence[float], kept: int) -> str:
    """What the kept try is among the tries ranked by ``ranks``: ``fastest try`` (also of
    one), ``median try``, else ``try N``."""
    if ranks[kept] >= max(ranks):
        return "fastest try"
    if ranks[kept] in (statistics.median_low(ranks), statistics.median_high(ranks)):
        return "median try"
    return f"try {kept + 1}"
