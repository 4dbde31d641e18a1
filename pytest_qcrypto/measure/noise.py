"""Which figures are noisy, and the lines that say so under the tables.

:func:`noise` says when one measurement is noisy: its rounds stayed under half of
min-time (a stall during calibration) or under what the clock can honestly time, its
rounds spread more than 10%, or its CPU time is far below its wall time (the machine was
busy, or the work ran off the CPU on a hardware engine).  :func:`noise_lines` says it in
one line per kind of note (a count and one example), every cell with ``-v``: a run of
short rounds the user chose on purpose (``cryptotest -z 64``) is one line, not a hundred.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_qcrypto.measure.harness import Measurement

#: A figure whose slowest round is this much slower than its fastest is noisy.
MAX_SPREAD = 1.10
#: A figure whose CPU seconds are under this fraction of its wall seconds (per job) ran
#: beside other work, or off the CPU.
MIN_CPU_SHARE = 0.90


def cpu_clock_too_coarse(cpu_s: Sequence[float]) -> bool:
    """A round read 0 s of CPU time: the CPU-time clock is too coarse to time a round (a
    round always spends some), so its CPU time and its wait for a CPU are unknown."""
    return any(c <= 0 for c in cpu_s)


def noise(m: Measurement) -> list[str]:
    """Why the figure of ``m`` is noisy: rounds too short to trust (a stall during
    calibration, :data:`pytest_qcrypto.measure.harness.SHORT_ROUND`), a wide spread of rounds, CPU far
    below wall time.  Rounds spread over the run (:mod:`pytest_qcrypto.measure.spread`) sample
    the machine's phases on purpose: their spread is not noted."""
    return [text for _, text in noise_kinds(m)]


#: The kinds of :func:`noise_kinds`, in the order the summary gives them.
NOISE_KINDS = ("short rounds", "rounds spread", "CPU time under wall time")


def noise_kinds(m: Measurement) -> list[tuple[str, str]]:
    """:func:`noise` with the kind of each reason (one of :data:`NOISE_KINDS`)."""
    out = []
    note = m.calibration_note
    if note:
        out.append((NOISE_KINDS[0], note))
    if m.rounds_s and min(m.rounds_s) > 0 and m.spread > MAX_SPREAD and not m.spread_s:
        out.append((NOISE_KINDS[1], f"rounds spread {(m.spread - 1) * 100:.0f}% "
                                    f"({min(m.rounds_s):.3g} to {max(m.rounds_s):.3g} s)"))
    capacity = m.median_s * m.jobs
    if (m.cpu_s and capacity > 0 and m.median_cpu_s < capacity * MIN_CPU_SHARE
            and not cpu_clock_too_coarse(m.cpu_s)):  # (its own note: summary_lines)
        where = ("the work ran off the CPU (hardware)" if m.hardware
                 else "the machine was busy, or the work ran off the CPU")
        out.append((NOISE_KINDS[2], f"CPU time {m.median_cpu_s / capacity * 100:.0f}% of wall "
                                    f"time: {where}"))
    return out


def noise_lines(measurements: Sequence[Measurement], verbose: bool = False) -> list[str]:
    """The noisy figures under the tables: one line per kind of note with its count and its
    first cell as an example (``noisy figures, short rounds: 115 of 118 cells, e.g. 3des
    openssl 64 bytes: ...; -v lists every one``), a kind of one cell as that cell's line;
    ``verbose``: a heading and every noisy cell's line, as before."""
    noisy = [(m, why) for m in measurements if (why := noise_kinds(m))]
    if not noisy:
        return []
    total = len(measurements)
    if verbose:
        return [f"noisy figures (median round shown; {len(noisy)} of {total}):",
                *(f"  {_cell(m)}: {'; '.join(text for _, text in why)}" for m, why in noisy)]
    lines = []
    for kind in NOISE_KINDS:
        cells = [(m, text) for m, why in noisy for k, text in why if k == kind]
        if len(cells) == 1:
            lines.append(f"noisy figure, {kind}: {_cell(cells[0][0])}: {cells[0][1]}")
        elif cells:
            lines.append(f"noisy figures, {kind}: {len(cells)} of {total} cells, e.g. "
                         f"{_cell(cells[0][0])}: {cells[0][1]}; -v lists every one")
    return lines


def _cell(m: Measurement) -> str:
    return f"{m.algorithm} {m.plugin} {cell_name(m)}"


def cell_name(m: Measurement) -> str:
    """``4096 bytes``, or the operation of a size-less cell (``sign``)."""
    return f"{m.size} bytes" if m.sized else m.direction
