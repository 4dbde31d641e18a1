"""What the machine did to the figures: its state at the start, and which figures are noisy.

:func:`capture` reads the machine's state where Linux exposes it (load
average, CPU frequency governor, turbo / boost) in well under a millisecond;
saved results keep it beside the figures.  :func:`state_warnings` says, as
pyperf does, when that state makes every figure unreliable, and
:mod:`pytest_qcrypto.measure.noise` which figures are noisy.  :func:`summary_lines` is what the pytest
plugin prints under the tables.  :class:`WaitMeter` tells how much of a measurement's
time off the CPU was a wait for a CPU held by other work (Linux schedstat).
:func:`fingerprint` is what identifies the machine for comparing speed (saved with
results), :func:`machine_differences` what differs from a baseline's.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.measure.noise import (  # noqa: F401 (re-exported: were first here)
    MAX_SPREAD, MIN_CPU_SHARE, NOISE_KINDS, cell_name, cpu_clock_too_coarse, noise, noise_kinds,
    noise_lines)

#: With every CPU in use by the measurement, a load average above this is already contention.
LOAD_TOLERANCE = 0.5
#: Of the time the run's thread wanted a CPU, the share it may wait for one before the load
#: warning fires (Linux schedstat); under it, a high load average at the start was left by
#: work that had ended (the previous command's own load: the 1-minute average decays over
#: minutes), not work that competed with this run.
MAX_WAIT_SHARE = 0.05

_CPU_SYS = Path("/sys/devices/system/cpu")


@dataclass(frozen=True)
class MachineState:
    """The machine when measuring started; ``None`` where the system does not tell.

    ``load`` is the 1, 5 and 15-minute load average; ``cpus`` the CPUs this
    process may use; ``governors`` the distinct cpufreq governors of those
    CPUs and ``driver`` the cpufreq driver; ``turbo`` whether turbo / boost is
    on (Intel ``intel_pstate/no_turbo``, else ``cpufreq/boost``).
    """

    load: tuple[float, float, float] | None
    cpus: int
    governors: tuple[str, ...] | None
    driver: str | None
    turbo: bool | None
    #: this thread's seconds on a CPU and waiting for one at the start (:func:`schedstat`;
    #: not saved)
    schedstat: tuple[float, float] | None = field(default=None, compare=False)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready: ``{"load": [1m, 5m, 15m], "cpus": 2, "governors": [...], ...}``."""
        d = asdict(self)
        del d["schedstat"]
        d["load"] = list(self.load) if self.load else None
        d["governors"] = list(self.governors) if self.governors else None
        return d


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _cpus() -> list[int]:
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def _turbo(root: Path) -> bool | None:
    no_turbo = _read(root / "intel_pstate" / "no_turbo")
    if no_turbo in ("0", "1"):
        return no_turbo == "0"
    boost = _read(root / "cpufreq" / "boost")
    if boost in ("0", "1"):
        return boost == "1"
    return None


def capture(root: Path = _CPU_SYS) -> MachineState:
    """The machine's state now (``root`` is the sysfs CPU directory, for tests)."""
    try:
        load: tuple[float, float, float] | None = os.getloadavg()
    except (AttributeError, OSError):
        load = None
    cpus = _cpus()
    found = {_read(root / f"cpu{c}" / "cpufreq" / "scaling_governor") for c in cpus}
    governors = tuple(sorted(g for g in found if g)) or None
    driver = _read(root / f"cpu{cpus[0]}" / "cpufreq" / "scaling_driver") if cpus else None
    return MachineState(load, len(cpus), governors, driver, _turbo(root), schedstat())


def schedstat() -> tuple[float, float] | None:
    """Seconds this thread has run on a CPU, and has been runnable but waiting for one
    (``/proc/thread-self/schedstat``, Linux); None where the system does not tell."""
    try:
        with open("/proc/thread-self/schedstat", encoding="ascii") as f:
            on, wait = f.read().split()[:2]
        return int(on) / 1e9, int(wait) / 1e9
    except (OSError, ValueError):
        return None


def waited_share(start: tuple[float, float] | None,
                 now: tuple[float, float] | None) -> float | None:
    """Of the time this thread wanted a CPU between two :func:`schedstat` readings, the
    share it waited for one (0.0 to 1.0; None when unknown or it never wanted one)."""
    if start is None or now is None:
        return None
    ran, waited = now[0] - start[0], now[1] - start[1]
    return waited / (ran + waited) if ran + waited > 0 else None


#: The cpufreq governors that hold the clock rate: the highest, or one the user set.
FIXED_GOVERNORS = frozenset({"performance", "userspace"})


def state_warnings(state: MachineState, jobs: int = 1, threads: int = 1,
                   waited: float | None = None) -> list[str]:
    """Why ``state`` makes the figures of a run of ``jobs`` processes, or of ``threads``
    threads, unreliable (empty: it does not).

    Warns for any cpufreq governor but ``performance`` and ``userspace`` (a fixed frequency):
    ``powersave``, ``schedutil``, ``ondemand``, ``conservative`` make the clock rate follow
    the load, so short rounds run slower; the line names the governor and the driver.  And
    for a 1-minute load average above the CPUs the run leaves idle (``cpus`` less the jobs or
    threads, at least :data:`LOAD_TOLERANCE`); the warning counts threads as threads.  When
    the run measured in its own thread, ``waited`` is the share of its time wanting a CPU
    that it waited for one (:func:`waited_share`): the load warning then fires only when that
    is :data:`MAX_WAIT_SHARE` or more, and says it, so that a load left by the previous
    command does not count; for any share that high it fires whatever the load at the start.
    """
    out = []
    moving = [g for g in state.governors or () if g not in FIXED_GOVERNORS]
    if moving:
        driver = f" (driver {state.driver})" if state.driver else ""
        out.append(f"the CPU frequency governor is {', '.join(moving)}{driver}: the clock rate "
                   "follows the load; set it to performance for stable figures")
    busy, word = (threads, "thread") if threads > 1 else (jobs, "job")
    idle = max(state.cpus - busy, 0)
    if waited is not None:
        if waited >= MAX_WAIT_SHARE:
            load = f" (load average {state.load[0]:.2f} at the start)" if state.load else ""
            out.append(f"the measurements waited for a CPU {waited * 100:.0f}% of the time they "
                       f"wanted one{load}: other work competed with them")
    elif state.load is not None and state.load[0] > max(idle, LOAD_TOLERANCE):
        out.append(f"load average {state.load[0]:.2f} is above the {idle} idle CPU"
                   f"{'' if idle == 1 else 's'} this run leaves ({state.cpus} CPUs, {busy} "
                   f"{word}{'' if busy == 1 else 's'}): other work competes with the measurement")
    return out


def summary_lines(state: MachineState | None, measurements: Sequence[Measurement],
                  jobs: int = 1, verbose: bool = False, threads: int = 1,
                  own_thread: bool = False) -> list[str]:
    """Lines under the tables: noisy figures (:func:`noise_lines`), one machine-state
    warning, per-worker figures.

    ``verbose`` lists every noisy figure, and adds the machine's state and each worker's
    figures of multi-job measurements.  ``own_thread``: every measurement ran in this
    thread (one job, one thread, not isolated), so the share of its time it waited for a
    CPU since ``state`` was captured (:func:`waited_share`) decides the load warning.
    """
    lines = noise_lines(measurements, verbose)
    coarse = sum(cpu_clock_too_coarse(m.cpu_s) for m in measurements)
    if coarse:
        lines.append(f"CPU-time clock too coarse: it read 0 s for a round in {coarse} of "
                     f"{len(measurements)} cells; their CPU time is unknown, so no wait for a "
                     "CPU is taken out of them")
    if state is not None:
        waited = waited_share(state.schedstat, schedstat()) if own_thread else None
        if verbose:
            load = " ".join(f"{x:.2f}" for x in state.load) if state.load else "unknown"
            wait = "" if waited is None else f"; the run waited for a CPU {waited * 100:.1f}%"
            cpus = f"{state.cpus} CPU{'' if state.cpus == 1 else 's'}"
            lines.append(f"machine at start: load average {load}, {cpus}, governor "
                         f"{','.join(state.governors) if state.governors else 'not exposed'}, "
                         f"turbo {_on_off(state.turbo)}{wait}")
        warnings = state_warnings(state, jobs, threads, waited)
        if all(m.counted is not None for m in measurements):
            warnings = []  # a count is not moved by the load (measure/counting.py); nothing
            # measured, nothing the state could have moved
        if warnings:
            lines.append("WARNING: figures may be unreliable: " + "; ".join(warnings))
    if verbose:
        for m in measurements:
            lines.extend(worker_lines(m))
    return lines


def worker_lines(m: Measurement) -> list[str]:
    """For verbose output: each worker's KiB/s in each round, under the summed figure."""
    workers = m.workers
    if not workers:
        return []
    head = (f"{m.plugin} {m.algorithm} {cell_name(m)}: {m.figure:.2f} {m.unit} from "
            f"{len(workers)} {'threads' if m.threads > 1 else 'jobs'}")
    if not m.sized:  # ops/s: each worker's operations over its own round
        per = m.operations / m.count if m.count else 1
        return [head] + [
            f"  worker {i}: " + ", ".join(f"{w.count * per / s:.2f}" for s in w.rounds_s)
            + f" {m.unit}" for i, w in enumerate(workers, 1)]
    return [head] + [
        f"  {'thread' if m.threads > 1 else 'worker'} {i}: " + ", ".join(f"{rate:.2f}" for rate in w.kib_per_s) + " KiB/s"
        for i, w in enumerate(workers, 1)]


def _on_off(flag: bool | None) -> str:
    return "not exposed" if flag is None else ("on" if flag else "off")


# -- the machine fingerprint (saved with results, compared with a baseline's) ---------------

#: CPU flags that change crypto speed (``/proc/cpuinfo``), x86: AES-NI, carry-less
#: multiply (GHASH), SHA extensions, the vector units that OpenSSL's AES-GCM,
#: ChaCha20 and SHA code paths select at run time.
X86_CRYPTO_FLAGS = frozenset({
    "aes", "pclmulqdq", "vpclmulqdq", "vaes", "sha_ni", "ssse3", "sse4_1", "sse4_2", "avx",
    "avx2", "avx512f", "avx512bw", "avx512vl", "avx512ifma", "bmi2", "adx", "gfni"})
#: The same for Arm (the ``Features`` line): the ARMv8 crypto extensions and vector units.
ARM_CRYPTO_FLAGS = frozenset({
    "aes", "pmull", "sha1", "sha2", "sha3", "sha512", "sm3", "sm4", "asimd", "neon", "sve",
    "sve2"})


def _cpuinfo(text: str) -> dict[str, str]:
    """The first processor block of ``/proc/cpuinfo`` as a dict (keys lower case)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        if sep and key and key not in fields:
            fields[key] = value.strip()
    return fields


def fingerprint(cpuinfo: str | None = None) -> dict[str, Any]:
    """What identifies this machine for comparing speed, without volatile values.

    Keys: ``cpu_model`` (str), ``cpu_flags`` (sorted crypto-relevant flags,
    :data:`X86_CRYPTO_FLAGS` / :data:`ARM_CRYPTO_FLAGS`), ``architecture``,
    ``cores`` (logical CPUs), ``os``, ``kernel`` (release), ``libc``,
    ``python`` (implementation and version).  Current clock speed, BogoMIPS,
    the host name and load are left out: they change between identical runs.
    ``cpuinfo`` is the text of ``/proc/cpuinfo`` (read when None; absent
    outside Linux, where the model comes from :func:`platform.processor`).
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            cpuinfo = ""
    info = _cpuinfo(cpuinfo)
    model = info.get("model name") or info.get("hardware") or info.get("cpu model") or ""
    if not model and "cpu implementer" in info:  # Arm: implementer and part numbers
        model = f"implementer {info['cpu implementer']} part {info.get('cpu part', '?')}"
    model = " ".join(model.split()) or platform.processor() or "unknown"
    flags = set((info.get("flags") or "").split())
    crypto = (flags & X86_CRYPTO_FLAGS) | (set((info.get("features") or "").split())
                                           & ARM_CRYPTO_FLAGS)
    libc, libc_version = platform.libc_ver()
    return {
        "cpu_model": model,
        "cpu_flags": sorted(crypto),
        "architecture": platform.machine() or "unknown",
        "cores": os.cpu_count() or 0,
        "os": platform.system() or sys.platform,
        "kernel": platform.release(),
        "libc": f"{libc} {libc_version}".strip() or "unknown",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
    }


def machine_differences(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """One line per fingerprint field that differs: ``cores: 2 (baseline) vs 8 (now)``.

    CPU flags are listed as those only the baseline had and those only this
    machine has.  A field the baseline does not record is not a difference.
    """
    out: list[str] = []
    for key, now in current.items():
        if key not in baseline or baseline[key] == now:
            continue
        then = baseline[key]
        if key == "cpu_flags" and isinstance(then, list) and isinstance(now, list):
            gone = sorted(set(then) - set(now))
            new = sorted(set(now) - set(then))
            parts = ([f"baseline only: {' '.join(gone)}"] if gone else []) + \
                    ([f"this machine only: {' '.join(new)}"] if new else [])
            if parts:
                out.append(f"cpu_flags: {'; '.join(parts)}")
        else:
            out.append(f"{key}: {then!r} (baseline) vs {now!r} (now)")
    return out


# -- the wait for a CPU --------------------------------------------------------------------


def cpu_wait_s() -> float | None:
    """Seconds this thread has been runnable but waiting for a CPU (Linux schedstat).

    Other processes cause this wait; sleeping or waiting for a device do not.
    None where ``/proc/thread-self/schedstat`` does not exist.
    """
    try:
        with open("/proc/thread-self/schedstat", encoding="ascii") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


class WaitMeter:
    """Of the time this thread was off the CPU since :meth:`start`, the share that it was
    ready to run but waited for a CPU held by other processes.

    0.0: it slept, or waited for a device; 1.0: all of it was other work on the machine.
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter,
                 wait: Callable[[], float | None] = cpu_wait_s,
                 cpu: Callable[[], float] = time.thread_time) -> None:
        self.clock, self.wait, self.cpu = clock, wait, cpu
        self.start()

    def start(self) -> None:
        self._wait0, self._t0, self._cpu0 = self.wait(), self.clock(), self.cpu()

    def share(self) -> float | None:
        """0.0 to 1.0; None when the system does not tell."""
        t1, w1, c1 = self.clock(), self.wait(), self.cpu()
        if self._wait0 is None or w1 is None:
            return None
        off_cpu = (t1 - self._t0) - (c1 - self._cpu0)
        if off_cpu <= 1e-6:
            return 0.0
        return min(max((w1 - self._wait0) / off_cpu, 0.0), 1.0)


def metered(again: Callable[[], Measurement], clock: Callable[[], float] = time.perf_counter,
            wait: Callable[[], float | None] = cpu_wait_s,
            cpu: Callable[[], float] = time.thread_time) -> tuple[Measurement, float | None]:
    """Run one try; return it and the share of its time off the CPU that was a wait for one."""
    meter = WaitMeter(clock, wait, cpu)
    m = again()
    return m, meter.share()
