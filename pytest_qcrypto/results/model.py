"""The saved form of measurements: :class:`Result`, :class:`WorkerResult`, :class:`ResultsFile`.

The fields and their units are described with the file format in
:mod:`pytest_qcrypto.results.store`, which reads (checks, migrates) and writes them.
Nothing here imports pytest.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_qcrypto import __version__
from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.measure import limits, registry
from pytest_qcrypto.measure.harness import KIB, Measurement, WorkerRecord
from pytest_qcrypto.measure.machine import cpu_clock_too_coarse

FORMAT = "pytest-qcrypto results"
#: The most operations a result may record per round: 2**53, the largest whole number a
#: float holds exactly (the harness counts to 2**40 at most, times at most a few jobs).
MAX_COUNT = 2**53
#: The shortest round a result may record, seconds: the timers count nanoseconds.
MIN_ROUND_S = 1e-9
#: The longest: over 11 days, far past any --qcrypto-timeout; keeps sums of rounds finite.
MAX_ROUND_S = 1e6
#: The schema this version writes; :func:`load` reads 1 up to this one.
SCHEMA_VERSION = 2
#: Every direction a result may have: the catalog's (digest, encrypt, decrypt, mac, roundtrip).
DIRECTIONS = tuple(d.value for d in catalog.DIRECTIONS)

class ResultsError(ValueError):
    """A results file that cannot be used; ``str()`` names the file and the problem."""


@dataclass(frozen=True)
class WorkerResult:
    """One ``--qcrypto-jobs`` process's (or ``--qcrypto-threads`` thread's) part of a :class:`Result`.

    ``count`` operations in every round; ``rounds_s`` and ``cpu_s`` its wall
    and CPU seconds per round (its own start to end); ``bytes_per_second`` its
    count times the result's size over its median round (times 2 for a round trip:
    its iterations are two operations each).
    """

    count: int
    rounds_s: tuple[float, ...]
    cpu_s: tuple[float, ...]
    bytes_per_second: float

    @classmethod
    def from_record(cls, record: WorkerRecord, size: int, per_iteration: int = 1) -> WorkerResult:
        """From an entry of ``Measurement.workers`` (:func:`.jobs.worker_record`), whose
        iterations are ``per_iteration`` operations of ``size`` bytes each."""
        rounds = tuple(float(x) for x in record.rounds_s)
        return cls(count=int(record.count), rounds_s=rounds,
                   cpu_s=tuple(float(x) for x in record.cpu_s),
                   bytes_per_second=int(record.count) * per_iteration * size
                   / statistics.median(rounds))

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "rounds_s": list(self.rounds_s), "cpu_s": list(self.cpu_s),
                "bytes_per_second": self.bytes_per_second}


def without_wait(rounds_s: Sequence[float], cpu_s: Sequence[float],
                 share: float | None) -> list[float] | None:
    """Each round's seconds without its wait for a CPU, or None without ``share`` or CPU times.

    ``share`` is the part of the time off the CPU that was a wait for a CPU held by other
    work: each round loses that share of its wall time beyond its CPU time; the rest (a
    plugin sleeping, a device working) stays.  A round is at least its CPU time.  None too
    when the CPU clock could not time a round (:func:`.machine.cpu_clock_too_coarse`): the
    CPU time, and so the wait, is unknown.
    """
    if (not share or not rounds_s or len(cpu_s) != len(rounds_s)
            or cpu_clock_too_coarse(cpu_s)):
        return None
    return [w - share * max(w - c, 0.0) for w, c in zip(rounds_s, cpu_s)]


@dataclass(frozen=True)
class Result:
    """One saved measurement (a row of ``results``).  Seconds, bytes, bytes per second."""

    algorithm: str
    plugin: str
    size: int
    direction: str
    bytes_per_second: float
    count: int = 0
    rounds_s: tuple[float, ...] = ()
    cpu_s: tuple[float, ...] = ()
    canonical_plugin: str = ""
    operation: str = ""
    driver: str | None = None
    hardware: bool | None = None
    test: str | None = None
    tries: tuple[float, ...] = ()
    jobs: int = 1
    cpu_wait_share: float | None = None
    workers: tuple[WorkerResult, ...] = ()
    iv: str = ""
    verdict: Mapping[str, Any] | None = None
    threads: int = 1
    one_thread_bytes_per_second: float | None = None
    #: ``--qcrypto-measure=instructions``: how many instructions one operation took and how
    #: they were counted (:func:`counted_record`); None: a timed result
    instructions: Mapping[str, Any] | None = None
    #: CPU seconds of the reference workload timed right after each round (one per round of
    #: ``rounds_s``; empty: a file saved before they were, judged by the clock alone)
    reference_s: tuple[float, ...] = ()
    #: seconds its rounds spanned, taken in turn with the other cells of the run
    #: (:mod:`pytest_qcrypto.measure.spread`); 0.0: back to back (or saved before they were)
    spread_s: float = 0.0
    #: the outcome of the test that measured it, when not passed (``failed``: it failed or
    #: errored after measuring); such a result is never used as a baseline
    outcome: str = ""

    @classmethod
    def from_measurement(cls, m: Measurement, test: str | None = None,
                         tries: Iterable[Measurement] = (),
                         cpu_wait_share: float | None = None,
                         verdict: Mapping[str, Any] | None = None) -> Result:
        """The saved form of ``m``; ``tries`` are all tries when the gate re-measured,
        ``cpu_wait_share`` the share of its time off the CPU spent waiting for one,
        ``verdict`` the gate's decision and its statistic (:meth:`gate_stats.TestResult.record`)."""
        every = tuple(t.rate for t in tries)
        jobs = m.jobs
        per_iteration = catalog.OPERATIONS_PER_ITERATION.get(m.direction, 1)
        workers = tuple(WorkerResult.from_record(w, m.size or 1, per_iteration) for w in m.workers)
        return cls(algorithm=m.algorithm, plugin=m.plugin, size=m.size, direction=m.direction,
                   bytes_per_second=m.rate, count=m.count,
                   rounds_s=tuple(m.rounds_s), cpu_s=tuple(m.cpu_s),
                   canonical_plugin=m.canonical_plugin or m.plugin, operation=m.operation,
                   driver=m.driver, hardware=m.hardware, test=test,
                   tries=every if len(every) > 1 else (),
                   jobs=jobs if isinstance(jobs, int) and jobs > 0 else 1,
                   cpu_wait_share=cpu_wait_share, workers=workers, iv=m.iv,
                   verdict=dict(verdict) if verdict else None, threads=m.threads,
                   one_thread_bytes_per_second=m.one_thread_bps if m.threads > 1 else None,
                   instructions=counted_record(m.counted, m.size) if m.counted else None,
                   reference_s=tuple(getattr(m, "reference_s", ())),
                   spread_s=float(getattr(m, "spread_s", 0.0) or 0.0))

    @property
    def key(self) -> tuple[str, str, int, str]:
        """``(algorithm, canonical plugin, size, direction)``: what a baseline is matched on."""
        return self.algorithm, self.canonical_plugin or self.plugin, self.size, self.direction

    @property
    def kib_per_s(self) -> float:
        return self.bytes_per_second / KIB

    @property
    def sized(self) -> bool:
        """A cell with a buffer size; size 0: a size-less one (signature, KEM, KDF...), whose
        ``bytes_per_second`` holds operations per second (saved as ``ops_per_s``)."""
        return self.size > 0

    @property
    def rate(self) -> float:
        """Work per second: bytes, or operations for a size-less result (``Measurement.rate``)."""
        return self.bytes_per_second

    @property
    def unit(self) -> str:
        """``KiB/s``, or ``ops/s`` for a size-less result."""
        return "KiB/s" if self.sized else "ops/s"

    @property
    def figure(self) -> float:
        """The figure in :attr:`unit`, as the tables show it."""
        return self.kib_per_s if self.sized else self.bytes_per_second

    @property
    def slowest_round_bytes_per_second(self) -> float:
        """The figure of the slowest round, scaled from ``bytes_per_second`` by the rounds' spread.

        Equal to ``bytes_per_second`` when no rounds are recorded.
        """
        if not self.rounds_s:
            return self.bytes_per_second
        return self.bytes_per_second * (statistics.median(self.rounds_s) / max(self.rounds_s))

    def figures_without_wait(self) -> tuple[float, float]:
        """The judged figure and its slowest round's (bytes per second), this result's own
        wait for a CPU taken out (:func:`without_wait`); both are scaled from
        ``bytes_per_second``, the figure of record.  Without a ``cpu_wait_share`` or CPU
        times, ``bytes_per_second`` and :attr:`slowest_round_bytes_per_second`.

        :func:`load` refuses a file in which either is not finite.
        """
        rounds = without_wait(self.rounds_s, self.cpu_s, self.cpu_wait_share)
        if rounds is None:
            return self.bytes_per_second, self.slowest_round_bytes_per_second
        median_raw = statistics.median(self.rounds_s)
        return (self.bytes_per_second * (median_raw / statistics.median(rounds)),
                self.bytes_per_second * (median_raw / max(rounds)))

    def wait_problem(self) -> str | None:
        """Why the figures of this result without its wait for a CPU (the gate judges those)
        are not finite, or None: the correction divides by the rounds without their wait.
        (:func:`pytest_qcrypto.results.store.load` refuses such a file.)"""
        rounds = without_wait(self.rounds_s, self.cpu_s, self.cpu_wait_share)
        if rounds is None:
            return None
        what = (f"bytes_per_second {self.bytes_per_second:.6g} without the wait for a CPU "
                f"(cpu_wait_share {self.cpu_wait_share:g} of each round's time beyond its "
                "cpu_s)")
        if min(rounds) <= 0:
            return f"{what} would be infinite: a round is left with no time"
        if not all(math.isfinite(f) for f in self.figures_without_wait()):
            return f"{what} is beyond the float range"
        return None

    def _params(self) -> dict[str, Any]:
        """A KDF's parameters, ``{"params": {"n": 16384, "r": 8, "p": 1}}`` (else none)."""
        alg = catalog.lookup(self.algorithm)
        return {"params": dict(alg.params)} if alg is not None and alg.params else {}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "algorithm": self.algorithm, "plugin": self.plugin,
            "canonical_plugin": self.canonical_plugin or self.plugin, "size": self.size,
            "direction": self.direction, "operation": self.operation, "count": self.count,
            "rounds_s": list(self.rounds_s), "cpu_s": list(self.cpu_s),
            **({"bytes_per_second": self.bytes_per_second} if self.sized else
               {"ops_per_s": self.bytes_per_second, "unit": self.unit, **self._params()}),
            "jobs": self.jobs, "driver": self.driver,
            "hardware": self.hardware, "test": self.test,
            "cpu_wait_share": self.cpu_wait_share,
        }
        out["threads"] = self.threads
        if self.one_thread_bytes_per_second is not None:
            out["one_thread_bytes_per_second"] = self.one_thread_bytes_per_second
        if self.tries:
            out["tries"] = list(self.tries)
        if self.reference_s:
            out["reference_s"] = list(self.reference_s)
        if self.spread_s:
            out["spread_s"] = self.spread_s
        if self.workers:
            out["workers"] = [w.to_json() for w in self.workers]
        if self.iv:
            out["iv"] = self.iv
        if self.verdict:
            out["verdict"] = dict(self.verdict)
        if self.instructions is not None:
            out["instructions"] = dict(self.instructions)
        if self.outcome:
            out["outcome"] = self.outcome
        return out

    @property
    def per_operation(self) -> float | None:
        """Instructions of one operation (a counted result), else None."""
        return float(self.instructions["per_operation"]) if self.instructions else None


@dataclass
class ResultsFile:
    """A whole results file: where it was measured, with what, and every result."""

    results: list[Result]
    machine: dict[str, Any] = field(default_factory=dict)
    plugins: dict[str, dict[str, Any]] = field(default_factory=dict)
    complete: bool = True
    created: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION
    tool: dict[str, Any] = field(default_factory=dict)
    machine_state: dict[str, Any] | None = None
    path: Path | None = None
    #: the git commit of the tree measured and whether it had changes (source_tree.py)
    source: dict[str, Any] | None = None
    #: written, not read back: the run's cost-model fits (pytest_qcrypto.measure.cost_model.Fit)
    cost_model: list[dict[str, Any]] = field(default_factory=list)
    #: written, not read back: per ``--qcrypto-target`` name, its spec, version and machine
    targets: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        doc = {
            "format": FORMAT,
            "schema_version": SCHEMA_VERSION,
            "complete": self.complete,
            "created": self.created or now_utc(),
            "tool": self.tool or {"name": "pytest-qcrypto", "version": __version__},
            "settings": self.settings,
            "machine": self.machine,
            "plugins": self.plugins,
            "results": [r.to_json() for r in self.results],
        }
        if self.machine_state is not None:
            doc["machine_state"] = self.machine_state
        if self.cost_model:
            doc["cost_model"] = self.cost_model
        if self.source is not None:
            doc["source"] = self.source
        if self.targets:
            doc["targets"] = self.targets
        return doc

    def plugin_entry(self, canonical: str) -> dict[str, Any] | None:
        """The ``plugins`` entry of a plugin by canonical name (typed names differ by alias)."""
        for typed, entry in self.plugins.items():
            if entry.get("canonical", typed) == canonical:
                return entry
        return None


def counted_record(c: Any, size: int) -> dict[str, Any]:
    """The ``instructions`` object of a counted result (``c``: a
    :class:`pytest_qcrypto.measure.counting.Counted`): ``per_operation`` and ``per_unit``
    (per byte, or per operation for size 0) in instructions, ``unit``, ``method``
    (``valgrind-cachegrind`` or ``perf_event``), ``tool``, the two ``counts`` (iterations)
    and their ``totals`` (instructions), ``per_iteration`` (operations), the crypto CPU flags
    the counted run saw (``cpu_features``; null: unknown), the host's
    (``host_cpu_features``) and those it did not see (``hidden_cpu_features``)."""
    return {"per_operation": c.per_operation, "per_unit": c.per_unit(size),
            "unit": "instructions/byte" if size > 0 else "instructions/op",
            "method": c.method, "tool": c.tool, "counts": list(c.counts),
            "totals": list(c.totals), "per_iteration": c.per_iteration,
            "cpu_features": None if c.features is None else list(c.features),
            "host_cpu_features": None if c.host_features is None else list(c.host_features),
            "hidden_cpu_features": list(c.hidden_features)}


def now_utc() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def plugin_entries(typed_names: Iterable[str], resolve: Callable[[str], Any],
                   measurements: Iterable[Measurement | Result] = ()
                   ) -> dict[str, dict[str, Any]]:
    """The ``plugins`` section: per typed name, canonical name, library, version, drivers seen,
    and ``implementations``: for each algorithm measured, the plugin's
    ``implementation(algorithm)`` (``CPython's _blake2``), followed by
    ``: driver X`` when the measurements name the kernel drivers that did the work.

    ``resolve(typed)`` returns the registry's ``Selection``; a plugin whose
    version (or an implementation) cannot be read gets ``"unknown (reason)"``.
    """
    drivers: dict[str, set[str]] = {}
    measured: dict[str, dict[str, set[str]]] = {}
    for m in measurements:
        if m.driver:
            drivers.setdefault(m.plugin, set()).add(m.driver)
        seen = measured.setdefault(m.plugin, {}).setdefault(m.algorithm, set())
        if m.driver:
            seen.add(m.driver)
    out: dict[str, dict[str, Any]] = {}
    for typed in typed_names:
        if typed in out:
            continue
        sel = None
        canonical, library = typed, ""
        try:
            sel = resolve(typed)
            canonical, library = sel.canonical, str(sel.plugin.library or "")
            version = str(limits.call_bounded(sel.plugin.version, "version()",
                                              limits.QUERY_TIMEOUT))
        except limits.CallTimeout as exc:  # a hung version() must not hang the save
            version = f"unknown ({exc})"
        except Exception as exc:  # a third-party plugin's version() must not lose the results
            version = f"unknown ({type(exc).__name__}: {exc})"
        out[typed] = {"canonical": canonical, "library": library, "version": version,
                      "drivers": sorted(drivers.get(typed, ()))}
        if sel is not None and typed in measured:
            texts = registry.bounded_implementations(sel.plugin, measured[typed])
            out[typed]["implementations"] = {
                name: f"{texts[name]}: driver {', '.join(sorted(seen))}" if seen else texts[name]
                for name, seen in measured[typed].items()}
    return out
