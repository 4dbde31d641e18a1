"""Where the time of a crypto call goes: a per-call cost plus a per-byte cost.

For every (algorithm, plugin, direction) measured at :data:`MIN_SIZES` or more
buffer sizes, :func:`fit_all` fits

    seconds per operation = per_call_s + size (bytes) x per_byte_s

over the median rounds (the figures of the tables), and :func:`summary_lines`
says it in one line each, under the tables (``-v`` or ``--qcrypto-model``)::

    openssl sha256: 1.37 us per call + 0.52 ns per byte (1.92 GB/s for large buffers); hashlib is faster below 12 KiB

The fit is Huber-weighted least squares on *relative* residuals (each point's
residual over its own measured time), by iteratively reweighted least squares:
a relative fit lets a 16-byte cell weigh as much as a 32 KiB one, so the
line predicts every cell in proportion, and Huber's weights (k = 1.345 robust
standard deviations, the scale being the median absolute residual / 0.6745,
at least :data:`MIN_SCALE`) keep one disturbed cell from pulling the line.
Neither cost is allowed below zero: a negative one is set to zero and the
other fitted alone.  Standard library only.

Large-buffer throughput is 1 / per_byte_s in GB/s (10^9 bytes per second, as
``openssl speed``'s kB are 1000 bytes); sizes in the crossover are in bytes
or KiB (1024 bytes).  For a kernel or hardware plugin (its figures name a
``driver`` or say ``hardware``) or one whose CPU cost per byte is under
:data:`OFF_CPU_SHARE` of its wall cost (per job), the same fit of the CPU
seconds gives the CPU it costs: CPU seconds per GiB (2^30 bytes) processed.

A kernel plugin also times its interface's own cost, a null request
(:mod:`pytest_qcrypto.measure.interface_cost`: AF_ALG's ``ecb(cipher_null)``,
/dev/crypto's null cipher), and its lines say how much of the per-call cost that is::

    afalg sha256: 5.1 us per call, of which the interface (null request) 3.9 us, + 0.52 ns per byte (1.92 GB/s for large buffers)
    afalg interface: 3.9 us per call (null request: a 1-byte skcipher ecb(cipher_null) request (send + recv))

Plugins without one (the software plugins) get no such text.

Works on :class:`pytest_qcrypto.measure.harness.Measurement` and on saved
:class:`pytest_qcrypto.results.model.Result` alike (both have ``size``,
``bytes_per_second``, ``rounds_s``, ``cpu_s``).  The core: no pytest.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_qcrypto.algorithms import catalog

#: Sizes an (algorithm, plugin) needs to be fitted: two would fit any line exactly.
MIN_SIZES = 3
#: Huber's tuning constant, in robust standard deviations (95% efficiency for normal noise).
HUBER_K = 1.345
#: The least robust scale of relative residuals (1%): exact data must not divide by zero.
MIN_SCALE = 0.01
#: Reweighting passes (the fit settles in a few on seven sizes).
ITERATIONS = 20
#: A plugin that spends under this share of its wall seconds per byte as CPU seconds runs
#: off the CPU: well under pytest_qcrypto.measure.machine.MIN_CPU_SHARE (0.9, which flags a figure
#: noisy), since on a busy machine work on the CPU also gets only part of the wall time.
OFF_CPU_SHARE = 0.5
GIB = 1 << 30


@dataclass(frozen=True)
class Fit:
    """One fitted line: seconds per operation = ``per_call_s`` + size x ``per_byte_s``.

    ``sizes`` are the buffer sizes (bytes) it was fitted on; ``cpu_per_gib_s``
    is CPU seconds per GiB processed when the work ran off the CPU, else None.
    """

    algorithm: str
    plugin: str
    direction: str
    per_call_s: float
    per_byte_s: float
    sizes: tuple[int, ...]
    cpu_per_gib_s: float | None = None

    def seconds(self, size: int) -> float:
        """Predicted seconds per operation of ``size`` bytes."""
        return self.per_call_s + size * self.per_byte_s

    @property
    def large_bytes_per_s(self) -> float | None:
        """Throughput for large buffers, bytes per second (None: no per-byte cost fitted)."""
        return 1 / self.per_byte_s if self.per_byte_s > 0 else None

    def to_json(self) -> dict[str, Any]:
        doc = {"algorithm": self.algorithm, "plugin": self.plugin, "direction": self.direction,
               "per_call_s": self.per_call_s, "per_byte_s": self.per_byte_s,
               "sizes": list(self.sizes)}
        if self.cpu_per_gib_s is not None:
            doc["cpu_per_gib_s"] = self.cpu_per_gib_s
        return doc


@dataclass(frozen=True)
class InterfaceCost:
    """What one null request of ``plugin`` (the canonical name) cost: ``per_call_s`` seconds
    (the median round over its count), ``what`` says what one request is; ``per_call_s``
    None when it could not be timed, ``why_not`` saying why."""

    plugin: str
    what: str
    per_call_s: float | None
    why_not: str = ""


def fit_line(sizes: Sequence[float], seconds: Sequence[float],
             scale: Sequence[float] | None = None) -> tuple[float, float]:
    """(per-call seconds, per-byte seconds) of the Huber-weighted least-squares line through
    (size, seconds), residuals taken relative to ``scale`` (default ``seconds``; each > 0).

    Raises ValueError for fewer than two distinct sizes or a scale not above zero.
    """
    if len(set(sizes)) < 2 or len(sizes) != len(seconds):
        raise ValueError("a line needs two or more distinct sizes, each with a time")
    scale = list(scale if scale is not None else seconds)
    if min(scale) <= 0:
        raise ValueError("each time must be above zero")
    base = [1 / s ** 2 for s in scale]
    robust = [1.0] * len(sizes)
    a = b = 0.0
    for _ in range(ITERATIONS):
        a, b = _weighted(sizes, seconds, [w * r for w, r in zip(base, robust)])
        rel = [(y - a - b * x) / s for x, y, s in zip(sizes, seconds, scale)]
        sigma = max(statistics.median(abs(r) for r in rel) / 0.6745, MIN_SCALE)
        new = [min(1.0, HUBER_K * sigma / abs(r)) if r else 1.0 for r in rel]
        if max(abs(n - r) for n, r in zip(new, robust)) < 1e-9:
            break
        robust = new
    return a, b


def _weighted(xs: Sequence[float], ys: Sequence[float], ws: Sequence[float]
              ) -> tuple[float, float]:
    """Weighted least squares of y = a + b x with a, b >= 0 (one set to 0, the other refitted)."""
    sw = sum(ws)
    sx = sum(w * x for w, x in zip(ws, xs))
    sy = sum(w * y for w, y in zip(ws, ys))
    sxx = sum(w * x * x for w, x in zip(ws, xs))
    sxy = sum(w * x * y for w, x, y in zip(ws, xs, ys))
    det = sw * sxx - sx * sx
    b = (sw * sxy - sx * sy) / det if det > 0 else 0.0
    a = (sy - b * sx) / sw
    if b < 0:
        return max(sy / sw, 0.0), 0.0
    if a < 0:
        return 0.0, max(sxy / sxx, 0.0)
    return a, b


def _median_round(rounds: Sequence[float], cpu: Sequence[float]) -> tuple[float, float | None]:
    """Wall seconds of the median round and that round's CPU seconds (None: not recorded)."""
    order = sorted(range(len(rounds)), key=rounds.__getitem__)
    wall = statistics.median(rounds)
    return wall, (cpu[order[(len(order) - 1) // 2]] if len(cpu) == len(rounds) else None)


def fit_all(measured: Iterable[Any]) -> list[Fit]:
    """One :class:`Fit` per (algorithm, plugin as typed, direction) with :data:`MIN_SIZES`
    or more sizes, in first-seen order; the last figure of a size measured twice counts
    (as in the tables).  Figures without rounds or speed, and size-less cells (size 0), are
    left out."""
    groups: dict[tuple[str, str, str], dict[int, Any]] = {}
    for m in measured:
        if getattr(m, "figure_only", False) or not m.rounds_s or m.bytes_per_second <= 0 \
                or not m.size:  # a size-less cell (signature, KEM, KDF): no per-byte cost
            continue
        groups.setdefault((m.algorithm, m.plugin, m.direction), {})[m.size] = m
    fits = []
    for (alg, plugin, direction), by_size in groups.items():
        if len(by_size) < MIN_SIZES:
            continue
        sizes = sorted(by_size)
        wall = [s / by_size[s].bytes_per_second for s in sizes]  # seconds per operation
        a, b = fit_line(sizes, wall)
        fits.append(Fit(alg, plugin, direction, a, b, tuple(sizes),
                        _cpu_per_gib([by_size[s] for s in sizes], sizes, wall, b)))
    return fits


def _cpu_per_gib(ms: Sequence[Any], sizes: Sequence[int], wall: Sequence[float],
                 per_byte_s: float) -> float | None:
    """CPU seconds per GiB (the per-byte cost of the same fit of CPU seconds) of a kernel or
    hardware plugin (the figures name a ``driver`` or say ``hardware``), or of work whose
    CPU cost per byte is under :data:`OFF_CPU_SHARE` of its wall cost per byte; else None
    (also when no CPU seconds were recorded)."""
    cpu = []
    for m, w in zip(ms, wall):
        median, cpu_s = _median_round(m.rounds_s, m.cpu_s)
        if cpu_s is None or median <= 0:
            return None
        cpu.append(w * cpu_s / median)  # CPU seconds per operation, of all jobs
    cpu_per_byte = fit_line(sizes, cpu, wall)[1]
    kernel = any(getattr(m, "hardware", None) or getattr(m, "driver", None) for m in ms)
    jobs = max(getattr(m, "jobs", 1) for m in ms)
    off_cpu = cpu_per_byte < per_byte_s * jobs * OFF_CPU_SHARE
    return cpu_per_byte * GIB if kernel or off_cpu else None


def _time(seconds: float) -> str:
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= factor:
            return f"{seconds / factor:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def _bytes(size: float) -> str:
    if size < 1024:
        return f"{size:.0f} B"
    if size < 1024 ** 2:
        return f"{size / 1024:.3g} KiB"
    return f"{size / 1024 ** 2:.3g} MiB"


def crossover(fit: Fit, other: Fit) -> str:
    """Where ``other`` beats ``fit``: ``hashlib is faster below 12 KiB`` (or above, or at
    every size); empty when it never does (by the fitted lines)."""
    da, db = other.per_call_s - fit.per_call_s, other.per_byte_s - fit.per_byte_s
    if da >= 0 and db >= 0:
        return ""
    if da <= 0 and db <= 0:
        return f"{other.plugin} is faster at every size"
    size = -da / db  # where the two lines meet, bytes
    return f"{other.plugin} is faster {'below' if da < 0 else 'above'} {_bytes(size)}"


def line(fit: Fit, others: Sequence[Fit] = (), interface: InterfaceCost | None = None) -> str:
    """The summary line of one fit; ``others``: fits of the same algorithm and direction;
    ``interface``: the null request of its plugin, said beside the per-call cost."""
    alg = catalog.lookup(fit.algorithm)
    label = f"{fit.plugin} {fit.algorithm}"
    if alg is not None and fit.direction != alg.directions[0]:
        label += f" {fit.direction}"
    text = f"{label}: {_time(fit.per_call_s)} per call"
    null = interface.per_call_s if interface is not None else None
    if null is not None:
        text += (f", of which the interface (null request) {_time(null)}," if
                 null <= fit.per_call_s else
                 f" (the interface's null request alone: {_time(null)}, more than that),")
    text += f" + {fit.per_byte_s * 1e9:.3g} ns per byte"
    if fit.large_bytes_per_s is not None:
        text += f" ({fit.large_bytes_per_s / 1e9:.3g} GB/s for large buffers)"
    if fit.cpu_per_gib_s is not None:
        text += f"; CPU {fit.cpu_per_gib_s:.3g} s per GiB processed"
    beats = [c for o in others if (c := crossover(fit, o))]
    return text + "".join(f"; {c}" for c in beats)


def interface_line(cost: InterfaceCost) -> str:
    """``afalg interface: 3.9 us per call (null request: ...)``, or why it was not timed."""
    if cost.per_call_s is None:
        return f"{cost.plugin} interface: not timed ({cost.why_not})"
    return f"{cost.plugin} interface: {_time(cost.per_call_s)} per call (null request: {cost.what})"


def summary_lines(measured: Iterable[Any], explicit: bool = False,
                  interface: Mapping[str, InterfaceCost] | None = None) -> list[str]:
    """Lines under the tables: ``where the time goes`` then one line per fit, then one per
    interface timed (``interface``: by plugin as typed, see
    :func:`pytest_qcrypto.measure.interface_cost.of_run`).  With no fit, a line saying why
    when ``explicit`` (``--qcrypto-model``), else none (but the interfaces' lines)."""
    fits = fit_all(measured)
    interface = interface or {}
    costs = list({c.plugin: c for c in interface.values()}.values())
    out = ["where the time goes (time per operation = per call + size x per byte):"] if fits \
        else [f"qcrypto model: nothing was measured at {MIN_SIZES} or more sizes"] \
        if explicit else []
    for fit in fits:
        peers = [o for o in fits if o is not fit and (o.algorithm, o.direction)
                 == (fit.algorithm, fit.direction)]
        out.append("  " + line(fit, peers, interface.get(fit.plugin)))
    return out + [("  " if fits else "") + interface_line(c) for c in costs]
