"""Cycles per byte and per operation (``--qcrypto-unit=cpb``), as SUPERCOP, eBACS and the
kernel's tcrypt quote crypto speed.

SUPERCOP's convention: the cycles one operation on an ``n``-byte message takes, divided by
``n`` (eBASH tables: cycles per byte at 8, 64, 576, 1536 and 4096 bytes and for long
messages); cycles per operation for the public-key kinds, with the CPU named beside them.
SUPERCOP reads a cycle counter around each call (``cpucycles()``: RDTSC, or the PMU).

qcrypto times rounds by the clock, so its cycles are seconds times a frequency, and it says
which (:class:`CycleRate`, :func:`reference`):

* with a PMU (``perf_event_open`` answers ``cycles:u``), the core's own cycles per CPU
  second, counted over a short busy loop (:func:`pmu_rate`): what the core ran at then;
* else the nominal frequency of the time-stamp counter, labelled *reference cycles*: the
  ``@ 2.40GHz`` of the CPU's model name (Intel's nominal and TSC frequency), or, with no
  cpufreq driver (most virtual machines), ``cpu MHz`` of ``/proc/cpuinfo``, which the kernel
  then fills from its TSC calibration (``tsc_khz``).  Reference cycles are SUPERCOP's RDTSC
  cycles: a core running above or below nominal does more or fewer real cycles in them.

A run's rate is saved in the results file's ``settings`` (``cycle_rate``: ``hz`` and
``source``), and ``qcrypto report FILE --qcrypto-unit=cpb`` converts with it.
"""

from __future__ import annotations

import functools
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

#: ``perf_event_attr.config`` of ``PERF_COUNT_HW_CPU_CYCLES`` (linux/perf_event.h).
HW_CPU_CYCLES = 0
#: Seconds of the busy loop over which the PMU's cycles per CPU second are counted.
PMU_LOOP_S = 0.05
_MODEL_GHZ = re.compile(r"@\s*([0-9]+(?:\.[0-9]+)?)\s*GHz", re.IGNORECASE)


@dataclass(frozen=True)
class CycleRate:
    """Cycles per second (``hz``) and where the figure comes from (``source``, one line)."""

    hz: float
    source: str

    @property
    def label(self) -> str:
        """``reference cycles at 2.445 GHz, ...``: the source line under a cpb table."""
        return f"{self.hz / 1e9:.4g} GHz: {self.source}"

    def as_dict(self) -> dict[str, Any]:
        return {"hz": self.hz, "source": self.source}

    @classmethod
    def of(cls, saved: Any) -> CycleRate | None:
        """The rate saved by :meth:`as_dict` (None when absent or not a positive ``hz``)."""
        if not isinstance(saved, Mapping):
            return None
        hz, source = saved.get("hz"), saved.get("source")
        if isinstance(hz, bool) or not isinstance(hz, (int, float)) or not 0 < hz < 1e12:
            return None
        return cls(float(hz), str(source or "saved with the results"))


def nominal_rate(cpuinfo: str, has_cpufreq: bool) -> CycleRate | None:
    """The TSC's nominal frequency from the text of ``/proc/cpuinfo``, or None.

    The ``@ X.XXGHz`` of the first ``model name``; else, when the machine has no cpufreq
    driver (``has_cpufreq`` false), the first ``cpu MHz`` (the kernel's TSC calibration then).
    """
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    found = _MODEL_GHZ.search(fields.get("model name", ""))
    if found:
        return CycleRate(float(found.group(1)) * 1e9, "reference cycles (the nominal TSC "
                         "frequency in the CPU's model name)")
    try:
        mhz = float(fields.get("cpu MHz", ""))
    except ValueError:
        return None
    if has_cpufreq or not mhz > 0:
        return None
    return CycleRate(mhz * 1e6, "reference cycles (the TSC frequency the kernel calibrated, "
                     "/proc/cpuinfo cpu MHz without a cpufreq driver)")


def pmu_rate(counter: Callable[[], Any], cpu_clock: Callable[[], int] = time.process_time_ns,
             loop_s: float = PMU_LOOP_S) -> CycleRate | None:
    """Core cycles per CPU second: ``cycles:u`` counted by ``counter()`` (a context manager
    whose ``value`` is the cycles counted, :class:`pytest_qcrypto.measure.perf_counter.Counter`)
    over a busy loop of ``loop_s`` CPU seconds; None when it counted nothing."""
    start = cpu_clock()
    with counter() as c:
        end = start + int(loop_s * 1e9)
        while cpu_clock() < end:
            pass
    spent = cpu_clock() - start
    if not c.value or spent <= 0:
        return None
    return CycleRate(c.value / (spent / 1e9), "core cycles (perf_event_open cycles:u per CPU "
                     f"second over a {loop_s * 1e3:g} ms busy loop)")


@functools.cache
def reference() -> CycleRate | None:
    """This machine's rate: the PMU's (:func:`pmu_rate`) when ``perf_event_open`` counts
    ``cycles:u``, else the TSC's nominal (:func:`nominal_rate`); None when neither is known."""
    from pytest_qcrypto.measure import perf_counter

    try:
        found = pmu_rate(lambda: perf_counter.Counter(HW_CPU_CYCLES))
    except OSError:
        found = None
    if found is not None:
        return found
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    return nominal_rate(text, os.path.isdir("/sys/devices/system/cpu/cpu0/cpufreq"))


def problem() -> str | None:
    """Why ``--qcrypto-unit=cpb`` cannot work here, or None."""
    if reference() is not None:
        return None
    return ("--qcrypto-unit=cpb: no cycle rate known on this machine: perf_event_open does not "
            "count cycles:u and /proc/cpuinfo gives no nominal TSC frequency; choose a unit "
            "of time (KiB/s, ns/op...)")


def per_operation(m: Any, rate: CycleRate | None = None) -> float:
    """Cycles of one operation of measurement ``m``: its median round's seconds over its
    operations, times the rate (``rate``, else ``m.cycle_rate``, else :func:`reference`)."""
    rate = rate or getattr(m, "cycle_rate", None) or reference()
    if rate is None:
        raise ValueError(problem())
    return m.median_s / m.operations * rate.hz


def per_byte(m: Any, rate: CycleRate | None = None) -> float:
    """Cycles per byte of ``m`` (SUPERCOP's figure): :func:`per_operation` over its size."""
    return per_operation(m, rate) / m.size
