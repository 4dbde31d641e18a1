"""The two clocks of every round, wall time and CPU time, and what their difference says.

Every timed round records wall seconds (``time.perf_counter_ns``) and the CPU seconds of the
measuring process, user plus system (``time.process_time_ns``; :mod:`.harness`).  The figure
is by wall time unless ``--qcrypto-clock=cpu`` asks for CPU time, as ``openssl speed`` reports
without ``-elapsed`` (its ``times()``-based user time).  :func:`on_clock` is the measurement
seen by the chosen clock; it changes what the tables show, never what is saved or judged: a
results file keeps both clocks' seconds per round (``rounds_s`` and ``cpu_s``) and the
regression gate judges by the wall clock.

Whatever the clock, a cell whose CPU time differs from its wall time by more than
:data:`DIFFERENCE` gets a note that says which way (:func:`difference_lines`):

* CPU time under wall time: the work went on off this process's CPU time (a kernel thread,
  an accelerator, a device) or the process waited for a CPU held by other work;
* CPU time over wall time: other threads of the process worked at the same time (the
  library's own threads).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from pytest_qcrypto.algorithms.settings import SettingsError
from pytest_qcrypto.measure.harness import MIN_FIXED_ROUND_S, Measurement

#: ``--qcrypto-clock`` choices: wall (default) and cpu.
CLOCKS = ("wall", "cpu")
#: CPU time and wall time of a cell differing by more than this share get a note: 10%.
DIFFERENCE = 0.10


def parse_clock(text: object, where: str = "--qcrypto-clock") -> str:
    """``wall`` or ``cpu`` (any case); :class:`SettingsError` naming both otherwise."""
    value = str(text).strip().lower()
    if value not in CLOCKS:
        raise SettingsError(f"{where}: {str(text).strip()[:40]!r} is not a clock; choose wall "
                            "(elapsed time, the default) or cpu (user+system CPU seconds of the "
                            "measuring process, as openssl speed without -elapsed)")
    return value


def cpu_usable(m: Measurement) -> bool:
    """Whether ``m``'s CPU seconds can stand for its rounds: one per round, all positive, of
    one process and one thread (with ``--qcrypto-jobs`` or ``--qcrypto-threads`` the process
    clock does not measure the work of the others), and timed (not counted)."""
    return (len(m.cpu_s) == len(m.rounds_s) > 0 and min(m.cpu_s) > 0 and m.jobs == 1
            and m.threads == 1 and m.counted is None and not m.figure_only)


def on_clock(m: Measurement, clock: str) -> Measurement:
    """``m`` with its rounds by ``clock``: for ``cpu``, its CPU seconds in place of wall
    seconds (so every unit, the verbose lines and the tables follow); ``m`` itself for
    ``wall`` or when its CPU seconds are not usable (:func:`cpu_usable`)."""
    if clock != "cpu" or not cpu_usable(m):
        return m
    return replace(m, rounds_s=tuple(m.cpu_s))


def cpu_share(m: Measurement) -> float | None:
    """CPU seconds over wall seconds of all of ``m``'s rounds (1.0: the same), or None when
    its CPU seconds are not usable."""
    if not cpu_usable(m):
        return None
    return sum(m.cpu_s) / sum(m.rounds_s)


def _cell(m: Measurement) -> str:
    where = f"{m.size} bytes" if m.size else m.direction
    return f"{m.algorithm} {m.plugin} {where}"  # as the noisy figures' note names a cell


def difference_lines(measurements: Iterable[Measurement],
                     limit: float = DIFFERENCE) -> list[str]:
    """One line per cell whose CPU time differs from its wall time by more than ``limit``
    (a share: 0.10 is 10%), saying which way; a heading first; none when no cell does.  Not
    for rounds under :data:`~pytest_qcrypto.measure.harness.MIN_FIXED_ROUND_S`: there the reads
    of the two clocks, which bracket each other, weigh (a round of 4 us read 52% more CPU than
    wall time with no other thread running) and the short rounds have their own note."""
    lines: list[str] = []
    for m in measurements:
        share = cpu_share(m)
        if share is None or abs(share - 1.0) <= limit or min(m.rounds_s) < MIN_FIXED_ROUND_S:
            continue
        if share < 1.0:
            lines.append(f"  {_cell(m)}: CPU time {(1 - share) * 100:.0f}% under wall time "
                         "(work off this CPU, as a kernel thread or an accelerator, or "
                         "waiting for a CPU)")
        else:
            lines.append(f"  {_cell(m)}: CPU time {(share - 1) * 100:.0f}% over wall time "
                         "(other threads of the process worked at the same time)")
    if not lines:
        return []
    return [f"qcrypto: CPU time and wall time differ by more than {limit * 100:g}% in "
            f"{len(lines)} cell{'' if len(lines) == 1 else 's'}:", *lines]


def clock_lines(clock: str, measurements: Sequence[Measurement]) -> list[str]:
    """The line under the tables that says they are by CPU time (none for wall time)."""
    if clock != "cpu" or not measurements:
        return []
    return ["qcrypto: figures by CPU time (--qcrypto-clock=cpu: user+system CPU seconds of the "
            "measuring process, as openssl speed without -elapsed); saved files keep both "
            "clocks and the gate judges wall time"]
