"""The reference workload: the machine's own speed, timed next to every round of a cell in a
run that saves or compares (what the gate judges, now or later; a run that does neither
leaves it out: ``Run.round_options``).

A shared virtual machine's speed drifts in phases of a second or two (a neighbour on the
same core or memory bus), invisible as CPU wait or steal time.  Rounds of one cell taken
back to back sample one phase, so a baseline and a run sample two phases and read the
difference as a change of the code.  A fixed computation that shares no code with the
crypto libraries under test, timed right after every round, moves with the machine and
not with the code: the gate judges each round's time over its adjacent reference time
(:mod:`pytest_qcrypto.gate.drift`).

The workload (:func:`workload`): ``zlib.crc32`` over a fixed 64 KiB buffer, 24 times,
then a pure-Python integer loop of 60,000 steps; about 5 ms of CPU on the project's 2-core
development machine (a few percent of a cell's default rounds).  It is timed by the process
CPU clock (``time.process_time_ns``), so a wait for a CPU does not count in it; a drift of
the machine does.  Measured there with a workload of the same size (60 alternating 20-ms
rounds of hashlib sha256 at 256 B, load 4 on 2 CPUs, CPU times): the rounds varied by 23%
(coefficient of variation), their ratios to the adjacent reference by 7.7%; by wall time,
29% and 28%: the wall clock also counts preemption, which hits the two at random.

Also :func:`spaced`: the confirmation tries of a suspicious cell wait a pause of the order
of the drift phase first, so that they sample other phases.  Plain Python, no pytest.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Sequence
from typing import TypeVar

#: The fixed buffer the workload checksums: 64 KiB, the same bytes in every run.
BUFFER = bytes(range(256)) * 256
#: ``zlib.crc32`` passes over :data:`BUFFER` and pure-Python loop steps per reference.
CRC_PASSES, LOOP_STEPS = 24, 60_000
#: Seconds a confirmation try waits before it measures (``--qcrypto-confirm-pause``
#: default): of the order of the drift phases measured on the development machine (1-2 s).
DEFAULT_PAUSE_S = 1.5

T = TypeVar("T")


def workload() -> int:
    """The fixed computation (a checksum, so that nothing is optimised away)."""
    crc = 0
    for _ in range(CRC_PASSES):
        crc = zlib.crc32(BUFFER, crc)
    x = crc & 0xFFFF
    for i in range(LOOP_STEPS):
        x = (x * 31 + i) & 0xFFFF
    return x


def reference_s(cpu_clock: Callable[[], int] | None = None) -> float:
    """CPU seconds of one :func:`workload` by ``cpu_clock`` (nanoseconds; default
    ``time.process_time_ns``); 0.0 when the clock could not resolve it (coarse clocks)."""
    clock = cpu_clock or time.process_time_ns
    c0 = clock()
    workload()
    return max(clock() - c0, 0) / 1e9


def adjacent(reference: Sequence[float], rounds: int) -> list[float] | None:
    """The reference time next to each of ``rounds`` rounds, seconds: ``reference[i]`` was
    timed right after round ``i``, so round 0 takes its following one and round ``i`` the
    mean of the ones before and after it.  None when they do not fit (another count, or a
    reference the clock could not resolve)."""
    if rounds < 1 or len(reference) != rounds or min(reference) <= 0:
        return None
    return [reference[0]] + [(reference[i - 1] + reference[i]) / 2 for i in range(1, rounds)]


def spaced(again: Callable[[], T], pause_s: float,
           sleep: Callable[[float], None] | None = None) -> Callable[[], T]:
    """``again`` after a pause of ``pause_s`` seconds (none for 0; ``sleep`` default
    ``time.sleep``, looked up at call time): a confirmation try that samples another phase
    of the machine's drift than the try before it."""
    if pause_s <= 0:
        return again

    def later() -> T:
        (sleep or time.sleep)(pause_s)
        return again()
    return later
